// SPDX-License-Identifier: Apache-2.0
// csr_induced_subgraph.device: a vertex map (old id -> new id or -1) built on the device in both
// phases; phase 0 counts each selected row's kept entries (a warp per row) and scans them into
// out.rowptr; phase 1 writes them relabelled, in A's order, with a ballot and a prefix count per
// 32 entries (a stable compaction).
#include <algorithm>

#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

template <class I>
__global__ void __launch_bounds__(kBlock) map_kernel(const I* vertices, int64_t s, I* vmap) {
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < s;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x)
    vmap[vertices[t]] = static_cast<I>(t);
}

template <class I, class V>
__global__ void __launch_bounds__(kBlock) induced_kernel(const I* rowptr, const I* colind, const V* val,
                                                         const I* vertices, int64_t s, const I* vmap, int phase,
                                                         I* out_rowptr, I* out_colind, V* out_val) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t t = warp; t < s; t += nwarps) {
    const int64_t r = vertices[t], e0 = rowptr[r], e1 = rowptr[r + 1];
    int64_t kept = 0;
    const int64_t d0 = phase == 1 ? static_cast<int64_t>(out_rowptr[t]) : 0;
    for (int64_t base = e0; base < e1; base += 32) {
      const int64_t e = base + lane;
      I nc = -1;
      if (e < e1) nc = vmap[colind[e]];
      const unsigned keep = __ballot_sync(0xffffffffu, nc >= 0);
      if (phase == 1 && nc >= 0) {
        const int64_t d = d0 + kept + __popc(keep & ((1u << lane) - 1u));
        out_colind[d] = nc;
        if (out_val != nullptr) out_val[d] = val[e];
      }
      kept += __popc(keep);
    }
    if (phase == 0 && lane == 0) out_rowptr[t] = static_cast<I>(kept);
  }
  if (phase == 0 && blockIdx.x == 0 && threadIdx.x == 0) out_rowptr[s] = 0;  // the scan makes it the total
}

}  // namespace

void csr_induced_subgraph(const State& s, const sparseport_induced_subgraph_args& a) {
  const int64_t n = a.vertices.n;
  if (a.phase == 1 && (n == 0 || a.out.nnz == 0)) return;
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const I* vertices = static_cast<const I*>(a.vertices.data);
    Scratch vmap(s, static_cast<size_t>(a.a.rows) * sizeof(I));
    check(cudaMemsetAsync(vmap.get(), 0xff, static_cast<size_t>(a.a.rows) * sizeof(I), s.stream()),
          "cudaMemsetAsync (vertex map)");  // all bits set: -1 in either index type
    if (n > 0) {
      map_kernel<I><<<blocks_for(n), kBlock, 0, s.stream()>>>(vertices, n, vmap.as<I>());
      check_launch("csr_induced_subgraph (vertex map)");
    }
    induced_kernel<I, V><<<blocks_for(std::max<int64_t>(n, 1) * 32), kBlock, 0, s.stream()>>>(
        static_cast<const I*>(a.a.rowptr), static_cast<const I*>(a.a.colind), static_cast<const V*>(a.a.values),
        vertices, n, vmap.as<I>(), a.phase, static_cast<I*>(a.out.rowptr), static_cast<I*>(a.out.colind),
        static_cast<V*>(a.out.values));
    check_launch("csr_induced_subgraph");
    if (a.phase == 0) exclusive_scan_inplace(s, a.out.rowptr, n + 1, a.a.index_type);
  });
}

}  // namespace sparseport::cuda
