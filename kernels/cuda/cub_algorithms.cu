// SPDX-License-Identifier: Apache-2.0
// The two CUB algorithms the structural ops need, behind plain functions: CUB's headers take
// ~15 s to compile, so only this file includes them (DEPENDENCIES.md).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "kernels/cuda/common.cuh"

namespace sparseport::cuda {

void exclusive_scan_inplace(const State& s, void* data, int64_t n_plus_1, int32_t index_type) {
  if (n_plus_1 <= 0) return;
  dispatch_index(index_type, [&](auto i) {
    using I = decltype(i);
    I* d = static_cast<I*>(data);
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
