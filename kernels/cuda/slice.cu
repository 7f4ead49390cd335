// SPDX-License-Identifier: Apache-2.0
// csr_slice_rows.device (two phases: row lengths and a scan into out.rowptr, then a warp per
// selected row copying its columns and values) and csr_slice_rows_dense.device (out zeroed, then
// a warp per selected row scattering its values; atomics, because repeated columns add up).
// Deterministic mode scatters without atomics in a fixed order (scatter_rows_det_kernel).
#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

template <class I>
__global__ void __launch_bounds__(kBlock) lengths_kernel(const I* rowptr, const I* rows, int64_t s, I* out_rowptr) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t <= s;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (t == s) {
      out_rowptr[s] = 0;  // the exclusive scan turns it into the total
    } else {
      const int64_t r = rows[t];
      out_rowptr[t] = rowptr[r + 1] - rowptr[r];
    }
  }
}

template <class I, class V>
__global__ void __launch_bounds__(kBlock) copy_rows_kernel(const I* rowptr, const I* colind, const V* val,
                                                           const I* rows, int64_t s, const I* out_rowptr, I* out_colind,
                                                           V* out_val) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t t = warp; t < s; t += nwarps) {
    const int64_t r = rows[t];
    const int64_t e0 = rowptr[r], n = rowptr[r + 1] - e0, d0 = out_rowptr[t];
    for (int64_t j = lane; j < n; j += 32) {
      out_colind[d0 + j] = colind[e0 + j];
      if (out_val != nullptr) out_val[d0 + j] = val[e0 + j];
    }
  }
}

template <class I, class V>
__global__ void __launch_bounds__(kBlock) scatter_rows_kernel(const I* rowptr, const I* colind, const V* val,
                                                              const I* rows, int64_t s, V* out, int64_t ldo) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t t = warp; t < s; t += nwarps) {
    const int64_t r = rows[t];
    V* orow = out + t * ldo;
    for (int64_t e = rowptr[r] + lane; e < rowptr[r + 1]; e += 32)
      atomicAdd(orow + static_cast<int64_t>(colind[e]), val != nullptr ? val[e] : V(1));
  }
}

// Deterministic mode: the warp owns output row t, so it needs no atomics, only a fixed order for
// repeated columns. The row's entries go in rounds of 32, one per lane; the lanes of a round that
// hold the same column (__match_any_sync) add their values in lane order, and the lowest of them
// adds that sum to the output. Rounds run in order (__syncwarp orders their memory accesses).
template <class I, class V>
__global__ void __launch_bounds__(kBlock) scatter_rows_det_kernel(const I* rowptr, const I* colind, const V* val,
                                                                  const I* rows, int64_t s, V* out, int64_t ldo) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t t = warp; t < s; t += nwarps) {
    const int64_t r = rows[t];
    V* orow = out + t * ldo;
    const int64_t e0 = rowptr[r], e1 = rowptr[r + 1];
    for (int64_t base = e0; base < e1; base += 32) {
      const int64_t e = base + lane;
      if (e < e1) {
        const unsigned active = e1 - base >= 32 ? 0xffffffffu : (1u << (e1 - base)) - 1u;
        const long long c = static_cast<long long>(colind[e]);
        const V x = val != nullptr ? val[e] : V(1);
        const unsigned same = __match_any_sync(active, c);
        V sum = V(0);
        bool first = true;
        for (unsigned rest = same; rest != 0; rest &= rest - 1) {
          const V y = __shfl_sync(same, x, __ffs(rest) - 1);
          sum = first ? y : sum + y;
          first = false;
        }
        if (lane == __ffs(same) - 1) orow[c] += sum;
      }
      __syncwarp();
    }
  }
}

}  // namespace

void csr_slice_rows(const State& s, const sparseport_slice_rows_args& a) {
  const int64_t n = a.rows.n;
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    I* out_rowptr = static_cast<I*>(a.out.rowptr);
    if (a.phase == 0) {
      lengths_kernel<I><<<blocks_for(n + 1), kBlock, 0, s.stream()>>>(static_cast<const I*>(a.a.rowptr),
                                                                      static_cast<const I*>(a.rows.data), n, out_rowptr);
      check_launch("csr_slice_rows (lengths)");
      exclusive_scan_inplace(s, out_rowptr, n + 1, a.a.index_type);
      return;
    }
    if (n == 0 || a.out.nnz == 0) return;
    copy_rows_kernel<I, V><<<blocks_for(n * 32), kBlock, 0, s.stream()>>>(
        static_cast<const I*>(a.a.rowptr), static_cast<const I*>(a.a.colind), static_cast<const V*>(a.a.values),
        static_cast<const I*>(a.rows.data), n, out_rowptr, static_cast<I*>(a.out.colind), static_cast<V*>(a.out.values));
    check_launch("csr_slice_rows (copy)");
  });
}

void csr_slice_rows_dense(const State& s, const sparseport_slice_rows_dense_args& a, bool deterministic) {
  dense_fill(s, a.out.data, a.out.rows, a.out.cols, a.out.ld, a.out.value_type, 0.0);
  if (a.rows.n == 0 || a.a.nnz == 0) return;
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    if (deterministic)
      scatter_rows_det_kernel<I, V><<<blocks_for(a.rows.n * 32), kBlock, 0, s.stream()>>>(
          static_cast<const I*>(a.a.rowptr), static_cast<const I*>(a.a.colind), static_cast<const V*>(a.a.values),
          static_cast<const I*>(a.rows.data), a.rows.n, static_cast<V*>(a.out.data), a.out.ld);
    else
      scatter_rows_kernel<I, V><<<blocks_for(a.rows.n * 32), kBlock, 0, s.stream()>>>(
          static_cast<const I*>(a.a.rowptr), static_cast<const I*>(a.a.colind), static_cast<const V*>(a.a.values),
          static_cast<const I*>(a.rows.data), a.rows.n, static_cast<V*>(a.out.data), a.out.ld);
  });
  check_launch("csr_slice_rows_dense");
}

}  // namespace sparseport::cuda
