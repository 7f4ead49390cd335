// SPDX-License-Identifier: Apache-2.0
// csr_attention.unfused: three passes through an nnz-long score buffer, as a framework would run
// it: scores = sddmm(Q, K) (sddmm.nnz_balanced on A's pattern), a row softmax of scale * score
// in place, then out = spmm(P, V) (spmm.nnz_balanced, sum). The softmax gives a warp to each row
// of up to kLongRow entries and a whole CTA to each longer one.
//
// Deterministic mode: the scores (one dot product per entry, a fixed shuffle tree) and the softmax
// (a fixed reduction per row) have no atomics; the SpMM is spmm.hub_split's deterministic path
// instead of spmm.nnz_balanced, whose rows that cross a chunk are added with atomics.
#include <algorithm>

#include "kernels/cuda/attention.cuh"

SPARSEPORT_CUDA_MODULE(2)

namespace sparseport::cuda {
namespace {

constexpr int64_t kLongRow = 1024;

template <class V>
__device__ __forceinline__ V warp_max(V x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const V y = __shfl_xor_sync(0xffffffffu, x, o);
    x = y > x ? y : x;
  }
  return x;
}

template <class V>
__device__ __forceinline__ V warp_sum(V x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <class I, class V>
__global__ void __launch_bounds__(kBlock) softmax_rows(const I* rowptr, int64_t m, V* s, V scale) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t row = warp; row < m; row += nwarps) {
    const int64_t e0 = rowptr[row], e1 = rowptr[row + 1];
    if (e1 - e0 > kLongRow || e0 == e1) continue;
    V mx = red_identity<Red::max, V>();
    for (int64_t e = e0 + lane; e < e1; e += 32) mx = s[e] * scale > mx ? s[e] * scale : mx;
    mx = warp_max(mx);
    V sum = V(0);
    for (int64_t e = e0 + lane; e < e1; e += 32) sum += vexp(s[e] * scale - mx);
    sum = warp_sum(sum);
    for (int64_t e = e0 + lane; e < e1; e += 32) s[e] = vexp(s[e] * scale - mx) / sum;
  }
}

// Each CTA scans rows kBlock at a time and runs the softmax of every long one with all threads.
template <class I, class V>
__global__ void __launch_bounds__(kBlock) softmax_long_rows(const I* rowptr, int64_t m, V* s, V scale) {
  __shared__ V red[kBlock / 32];
  __shared__ int64_t longs[kBlock];
  __shared__ int nlong;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) / 32;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kBlock; base < m; base += static_cast<int64_t>(gridDim.x) * kBlock) {
    if (threadIdx.x == 0) nlong = 0;
    __syncthreads();
    const int64_t r = base + threadIdx.x;
    // The order of this list varies from run to run, but each listed row's softmax is computed
    // by the whole CTA on its own, the same way whichever comes first: the results do not depend
    // on it.
    if (r < m && rowptr[r + 1] - rowptr[r] > kLongRow) longs[atomicAdd(&nlong, 1)] = r;
    __syncthreads();
    const int n = nlong;
    for (int t = 0; t < n; ++t) {
      const int64_t row = longs[t];
      const int64_t e0 = rowptr[row], e1 = rowptr[row + 1];
      V mx = red_identity<Red::max, V>();
      for (int64_t e = e0 + threadIdx.x; e < e1; e += kBlock) mx = s[e] * scale > mx ? s[e] * scale : mx;
      mx = warp_max(mx);
      if (lane == 0) red[warp] = mx;
      __syncthreads();
      mx = red[0];
      for (int w = 1; w < kBlock / 32; ++w) mx = red[w] > mx ? red[w] : mx;
      __syncthreads();
      V sum = V(0);
      for (int64_t e = e0 + threadIdx.x; e < e1; e += kBlock) sum += vexp(s[e] * scale - mx);
      sum = warp_sum(sum);
      if (lane == 0) red[warp] = sum;
      __syncthreads();
      sum = V(0);
      for (int w = 0; w < kBlock / 32; ++w) sum += red[w];
      __syncthreads();
      for (int64_t e = e0 + threadIdx.x; e < e1; e += kBlock) s[e] = vexp(s[e] * scale - mx) / sum;
    }
    __syncthreads();
  }
}

// The row softmax of scale * s in place (m > 0): a warp per row of up to kLongRow entries, then a
// CTA per longer row. Each row is reduced in a fixed shape whatever the grid: deterministic.
template <class I, class V>
void row_softmax(const State& st, const I* rowptr, int64_t m, V* s, V scale, const char* what, const char* what_long) {
  softmax_rows<I, V><<<blocks_for(m * 32), kBlock, 0, st.stream()>>>(rowptr, m, s, scale);
  check_launch(what);
  const unsigned long_blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(m, kBlock), 4 * st.info().sms));
  softmax_long_rows<I, V><<<long_blocks, kBlock, 0, st.stream()>>>(rowptr, m, s, scale);
  check_launch(what_long);
}

}  // namespace

void csr_attention_unfused(const State& s, const sparseport_attention_args& a, bool deterministic) {
  dispatch_types(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const int64_t nnz = a.a.nnz;
    if (nnz == 0) {
      dense_fill(s, a.out.data, a.out.rows, a.out.cols, a.out.ld, a.out.value_type, 0.0);
      return;
    }
    Scratch scores(s, static_cast<size_t>(nnz) * sizeof(V));
    sparseport_csr pattern = a.a;
    pattern.values = nullptr;  // attention ignores A's values
    const sparseport_sddmm_args sd{pattern, a.q, a.k, {nnz, 1, 1, scores.get(), a.q.value_type}};
    if (a.q.cols == 0)
      dense_fill(s, scores.get(), nnz, 1, 1, a.q.value_type, 0.0);
    else
      sddmm_nnz_balanced(s, sd);
    row_softmax(s, static_cast<const I*>(a.a.rowptr), a.a.rows, scores.as<V>(), static_cast<V>(a.scale),
                "csr_attention.unfused (softmax)", "csr_attention.unfused (softmax of long rows)");
    sparseport_csr weighted = a.a;
    weighted.values = scores.get();
    const sparseport_spmm_args sp{weighted, a.v, a.out, SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0};
    if (deterministic)
      spmm_hub_split(s, sp, true);
    else
      spmm_nnz_balanced(s, sp);
  });
}

// ABI 1.6, csr_attention_backward's weights: the forward's softmax pass on its own, in place.
void csr_softmax(const State& s, const sparseport_csr_softmax_args& a) {
  if (a.a.nnz == 0) return;  // then no row has an entry (and A may have no rows: no empty grid)
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    row_softmax(s, static_cast<const I*>(a.a.rowptr), a.a.rows, static_cast<V*>(a.scores), static_cast<V>(a.scale),
                "csr_softmax", "csr_softmax (long rows)");
  });
}

}  // namespace sparseport::cuda
