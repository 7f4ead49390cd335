// SPDX-License-Identifier: Apache-2.0
// The two CUB algorithms the structural ops need, behind plain functions: CUB's headers take
// ~15 s to compile, so only this file includes them (DEPENDENCIES.md).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <limits>
#include <string>

#include "kernels/cuda/common.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

// The sum of n int32 counts in 64 bits: a warp sum per grid-stride pass, one atomic per warp.
__global__ void __launch_bounds__(kBlock) sum_i32_kernel(const int32_t* d, int64_t n, unsigned long long* total) {
  long long acc = 0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x)
    acc += d[t];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicAdd(total, static_cast<unsigned long long>(acc));
}

// Phase 0 of a structural op: the int32 counts about to be scanned into a rowptr must sum to at
// most INT32_MAX, or the scan would wrap around. Checked before the scan writes anything.
void check_scan_total_fits(const State& s, const int32_t* d, int64_t n) {
  Scratch total(s, sizeof(unsigned long long));
  check(cudaMemsetAsync(total.get(), 0, sizeof(unsigned long long), s.stream()), "cudaMemsetAsync (scan total)");
  sum_i32_kernel<<<blocks_for(n), kBlock, 0, s.stream()>>>(d, n, total.as<unsigned long long>());
  check_launch("sum_i32 (scan total)");
  unsigned long long host = 0;
  check(cudaMemcpyAsync(&host, total.get(), sizeof host, cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (scan total)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (scan total)");
  const auto sum = static_cast<long long>(host);
  if (sum > std::numeric_limits<int32_t>::max())
    throw InvalidArgument("the result would hold " + std::to_string(sum) +
                          " entries in all, more than int32 indices can address (at most " +
                          std::to_string(std::numeric_limits<int32_t>::max()) + "); use int64 indices");
}

}  // namespace

void exclusive_scan_inplace(const State& s, void* data, int64_t n_plus_1, int32_t index_type) {
  if (n_plus_1 <= 0) return;
  dispatch_index(index_type, [&](auto i) {
    using I = decltype(i);
    I* d = static_cast<I*>(data);
    if constexpr (sizeof(I) == 4) check_scan_total_fits(s, d, n_plus_1);
    const size_t bytes = static_cast<size_t>(n_plus_1) * sizeof(I);
    Scratch out(s, bytes);
    size_t temp_bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, d, out.as<I>(), n_plus_1, s.stream()),
          "cub::DeviceScan::ExclusiveSum (size)");
    Scratch temp(s, temp_bytes);
    check(cub::DeviceScan::ExclusiveSum(temp.get(), temp_bytes, d, out.as<I>(), n_plus_1, s.stream()),
          "cub::DeviceScan::ExclusiveSum");
    check(cudaMemcpyAsync(d, out.get(), bytes, cudaMemcpyDeviceToDevice, s.stream()), "cudaMemcpyAsync (scan result)");
  });
}

void sort_pairs(const State& s, const void* keys_in, void* keys_out, const void* vals_in, void* vals_out, int64_t n,
                int bits, int32_t index_type) {
  if (n <= 0) return;
  dispatch_index(index_type, [&](auto i) {
    using I = decltype(i);
    using K = std::make_unsigned_t<I>;  // keys are non-negative, so their unsigned bits sort alike
    const K* kin = static_cast<const K*>(keys_in);
    K* kout = static_cast<K*>(keys_out);
    const I* vin = static_cast<const I*>(vals_in);
    I* vout = static_cast<I*>(vals_out);
    const int end_bit = bits < 1 ? 1 : bits;
    size_t temp_bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, kin, kout, vin, vout, n, 0, end_bit, s.stream()),
          "cub::DeviceRadixSort::SortPairs (size)");
    Scratch temp(s, temp_bytes);
    check(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, kin, kout, vin, vout, n, 0, end_bit, s.stream()),
          "cub::DeviceRadixSort::SortPairs");
  });
}

}  // namespace sparseport::cuda
