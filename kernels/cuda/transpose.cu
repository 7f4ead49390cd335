// SPDX-License-Identifier: Apache-2.0
// csr_transpose.device: a stable sort of the entries by column. Column counts (atomics) scanned
// into out.rowptr; the pairs (column, entry number) radix-sorted, which keeps A's row order within
// each column; then each output entry takes its source row (from an expanded row index) and value.
// The sorted entry numbers are the permutation (perm, ABI 1.5): sorted straight into perm when
// the caller asks for it.
#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

template <class I>
__device__ __forceinline__ void add_one(I* p);
template <>
__device__ __forceinline__ void add_one<int32_t>(int32_t* p) {
  atomicAdd(p, 1);
}
template <>
__device__ __forceinline__ void add_one<int64_t>(int64_t* p) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), 1ull);
}

template <class I>
__global__ void __launch_bounds__(kBlock) count_kernel(const I* colind, int64_t nnz, I* counts, I* iota) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nnz;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    add_one(counts + colind[e]);
    iota[e] = static_cast<I>(e);
  }
}

template <class I>
__global__ void __launch_bounds__(kBlock) expand_rows_kernel(const I* rowptr, int64_t m, I* rowid) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t r = warp; r < m; r += nwarps)
    for (int64_t e = rowptr[r] + lane; e < rowptr[r + 1]; e += 32) rowid[e] = static_cast<I>(r);
}

template <class I, class V>
__global__ void __launch_bounds__(kBlock) gather_kernel(const I* order, const I* rowid, const V* val, int64_t nnz,
                                                        I* out_colind, V* out_val) {
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < nnz;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = order[p];
    out_colind[p] = rowid[e];
    if (out_val != nullptr) out_val[p] = val[e];
  }
}

int bits_for(int64_t k) {  // bits that hold every value below k
  int b = 1;
  while (b < 63 && (int64_t{1} << b) < k) ++b;
  return b;
}

}  // namespace

void csr_transpose(const State& s, const sparseport_transpose_args& a) {
  const int64_t m = a.a.rows, k = a.a.cols, nnz = a.a.nnz;
  const size_t isz = a.a.index_type == SPARSEPORT_I64 ? 8 : 4;
  check(cudaMemsetAsync(a.out.rowptr, 0, static_cast<size_t>(k + 1) * isz, s.stream()), "cudaMemsetAsync (rowptr)");
  if (nnz == 0) return;
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    I* out_rowptr = static_cast<I*>(a.out.rowptr);
    const I* colind = static_cast<const I*>(a.a.colind);
    Scratch iota(s, static_cast<size_t>(nnz) * sizeof(I)), keys(s, static_cast<size_t>(nnz) * sizeof(I)),
        order_scratch(s, a.perm != nullptr ? 0 : static_cast<size_t>(nnz) * sizeof(I)),
        rowid(s, static_cast<size_t>(nnz) * sizeof(I));
    I* order = a.perm != nullptr ? static_cast<I*>(a.perm) : order_scratch.as<I>();
    count_kernel<I><<<blocks_for(nnz), kBlock, 0, s.stream()>>>(colind, nnz, out_rowptr, iota.as<I>());
    check_launch("csr_transpose (count)");
    exclusive_scan_inplace(s, out_rowptr, k + 1, a.a.index_type);
    sort_pairs(s, colind, keys.get(), iota.get(), order, nnz, bits_for(k), a.a.index_type);
    expand_rows_kernel<I><<<blocks_for(m * 32), kBlock, 0, s.stream()>>>(static_cast<const I*>(a.a.rowptr), m,
                                                                         rowid.as<I>());
    check_launch("csr_transpose (row ids)");
    gather_kernel<I, V><<<blocks_for(nnz), kBlock, 0, s.stream()>>>(order, rowid.as<I>(),
                                                                    static_cast<const V*>(a.a.values), nnz,
                                                                    static_cast<I*>(a.out.colind),
                                                                    static_cast<V*>(a.out.values));
    check_launch("csr_transpose (gather)");
  });
}

}  // namespace sparseport::cuda
