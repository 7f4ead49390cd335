// SPDX-License-Identifier: Apache-2.0
// The sddmm parameters, and the row engine of sddmm.row_warp and sddmm.vec4: out[e] = A.val[e] *
// dot(X[row(e), :], Y[col(e), :]), a warp per row, a group of G lanes (VEC values each along F)
// per dot product reduced with shuffles, the warp's groups striding over the row's entries, each
// group with U dot products in flight. sddmm.nnz_balanced has its own kernel (entries, not rows).
// 16-bit values (ABI 1.7): V is the storage type of A's values, X, Y and out; the products and the
// dot products are acc_t<V> (float), 16-byte vectors hold 8 values (VEC = 8), and out is rounded
// once when stored.
#pragma once

#include "kernels/cuda/values16.cuh"

namespace sparseport::cuda {

template <class I, class V>
struct SddmmParams {
  int64_t m = 0, nnz = 0, F = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const V* val = nullptr;
  const V* x = nullptr;
  int64_t ldx = 0;
  const V* y = nullptr;
  int64_t ldy = 0;
  V* out = nullptr;
  int64_t ldo = 0;
};

template <class I, class V>
SddmmParams<I, V> sddmm_params(const sparseport_sddmm_args& a) {
  SddmmParams<I, V> p;
  p.m = a.a.rows;
  p.nnz = a.a.nnz;
  p.F = a.x.cols;
  p.rowptr = static_cast<const I*>(a.a.rowptr);
  p.colind = static_cast<const I*>(a.a.colind);
  p.val = static_cast<const V*>(a.a.values);
  p.x = static_cast<const V*>(a.x.data);
  p.ldx = a.x.ld;
  p.y = static_cast<const V*>(a.y.data);
  p.ldy = a.y.ld;
  p.out = static_cast<V*>(a.out.data);
  p.ldo = a.out.ld;
  return p;
}

// dot[u] += X[r[u], :] . Y[c[u], :] over this lane's VEC columns of every tile of G * VEC, the U
// entries' loads issued before the first product (entries with !ok[u] load nothing).
template <class I, class V, int VEC, int G, int U>
__device__ __forceinline__ void sddmm_walk_dots(const SddmmParams<I, V>& p, const int64_t (&r)[U],
                                                const int64_t (&c)[U], const bool (&ok)[U], int sub,
                                                acc_t<V> (&dot)[U]) {
  for (int64_t f = int64_t{sub} * VEC; f < p.F; f += int64_t{G} * VEC) {
    Packed<V, VEC> xv[U], yv[U];  // as stored: widened in dot_acc (values16.cuh says why)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (ok[u]) {
        xv[u] = pload<V, VEC>(p.x + r[u] * p.ldx + f);
        yv[u] = pload<V, VEC>(p.y + c[u] * p.ldy + f);
      }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (ok[u]) dot[u] = dot_acc<V, VEC>(dot[u], xv[u], yv[u]);
  }
}

// Sums each group's partial dot products and writes out[e] = val[e] * dot for the entries
// e = first + u * stride with ok[u]. Every lane of a group shares its entries' ok, so the group's
// shuffles are all taken.
template <class I, class V, int G, int U>
__device__ __forceinline__ void sddmm_store(const SddmmParams<I, V>& p, int64_t first, int64_t stride,
                                            const bool (&ok)[U], int sub, unsigned mask, acc_t<V> (&dot)[U]) {
  using A = acc_t<V>;
#pragma unroll
  for (int u = 0; u < U; ++u) dot[u] = group_sum<G>(dot[u], mask);
  if (sub != 0) return;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t e = first + int64_t{u} * stride;
    if (ok[u]) st_acc(p.out + e * p.ldo, (p.val != nullptr ? widen(p.val[e]) : A(1)) * dot[u]);
  }
}

// Entries z0 + grp, z0 + grp + NG, ... below z1; `row` is the row of the group's first entry (or
// an earlier one) and is walked forward.
template <class I, class V, int VEC, int G>
__device__ __forceinline__ void sddmm_span(const SddmmParams<I, V>& p, int64_t z0, int64_t z1, int64_t row) {
  constexpr int NG = 32 / G;
  constexpr int U = 2;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int sub = lane & (G - 1), grp = lane / G;
  const unsigned mask = group_mask<G>();
  int64_t re = p.rowptr[row + 1];
  for (int64_t e = z0 + grp; e < z1; e += int64_t{NG} * U) {
    int64_t r[U], c[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t eu = e + int64_t{u} * NG;
      ok[u] = eu < z1;
      c[u] = 0;
      if (ok[u]) {
        while (eu >= re) {
          ++row;
          re = p.rowptr[row + 1];
        }
        c[u] = p.colind[eu];
      }
      r[u] = row;
    }
    acc_t<V> dot[U];
#pragma unroll
    for (int u = 0; u < U; ++u) dot[u] = acc_t<V>(0);
    sddmm_walk_dots<I, V, VEC, G, U>(p, r, c, ok, sub, dot);
    sddmm_store<I, V, G, U>(p, e, NG, ok, sub, mask, dot);
  }
}

template <class I, class V, int VEC, int G>
__global__ void __launch_bounds__(kBlock) sddmm_rows_kernel(SddmmParams<I, V> p) {
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t row = warp; row < p.m; row += nwarps) sddmm_span<I, V, VEC, G>(p, p.rowptr[row], p.rowptr[row + 1], row);
}

// The value types follow VEC (dispatch_types_vec): 1 all four, 8 the 16-bit ones, 4 float and double.
template <int VEC, int G>
void launch_sddmm_rows(const State& s, const sparseport_sddmm_args& a, const char* name) {
  dispatch_types_vec<VEC>(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    sddmm_rows_kernel<I, V, VEC, G><<<blocks_for(a.a.rows * 32), kBlock, 0, s.stream()>>>(sddmm_params<I, V>(a));
  });
  check_launch(name);
}

}  // namespace sparseport::cuda
