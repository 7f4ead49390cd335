// SPDX-License-Identifier: Apache-2.0
// What spmm.vector_rows and spmm.merge_path share: F <= kSmallFMaxF (16), one lane holding all F
// columns of its entries' products in FT registers (FT: the power of two >= F, 1 to 16), so lanes
// spread over a row's entries instead of over F. row_warp and row_warp_vec4 put lanes across F and
// leave most of them idle when F is narrow (row_warp: 31 of 32 at F = 1; row_warp_vec4: 3 of 4 at
// F = 4); SpMV and the few-vector SpMM of solvers are exactly that case.
//  - load_small: one row of B, FT values, as 8- or 16-byte vectors where F == FT and B allows it;
//  - fold_small: a product into the FT accumulators (explicit FMAs, as every spmm kernel);
//  - group_reduce_small: the FT partials of a group of G lanes combined by recursive halving: at
//    each step a lane keeps half of the columns it holds and takes its partner's half of them, so
//    the whole reduction costs FT - 1 shuffles (plus one per step beyond log2 FT lanes) where a
//    butterfly per column costs FT log2 G. The tree depends only on G: the same bits every run;
//  - write_small: a finished row into C (alpha, beta, mean).
// 16-bit values (ABI 1.7): V is the storage type; the FT registers, products and partials are
// acc_t<V> (float), a row of B read as 16-byte vectors of 8 values where F == FT >= 8 (else 4 or
// 2 values: the whole row), and C rounded once when written.
#pragma once

#include <type_traits>

#include "kernels/cuda/spmm_rows.cuh"

namespace sparseport::cuda {

// Gathers in flight per lane, U: enough loads to cover memory latency at F = 1 and 2 (8 entries),
// at most 32 gathered values in registers at larger F (U x FT), so a lane stays near 64 registers
// at FT = 16 (four 16-byte vectors per entry). A first choice, not yet tuned on a GPU.
template <int FT>
constexpr int kSmallInFlight = FT <= 2 ? 8 : (FT == 4 ? 4 : 2);

__host__ __device__ constexpr int log2_of(int x) { return x <= 1 ? 0 : 1 + log2_of(x / 2); }

// Elements per vector load of a row of B: 16 bytes, or the whole row when it is narrower.
template <class V, int FT>
constexpr int kSmallVector = FT < static_cast<int>(16 / sizeof(V)) ? FT : static_cast<int>(16 / sizeof(V));

// Host: whether the rows of B (ld, F) can be read as kSmallVector<V, FT> vectors: F == FT (no
// masked columns), and every row start aligned to the vector's size.
template <class V, int FT>
bool small_vector_rows(const void* data, int64_t ld, int64_t F) {
  constexpr int W = kSmallVector<V, FT>;
  return W > 1 && F == FT && ld % W == 0 && (reinterpret_cast<uintptr_t>(data) % (W * sizeof(V))) == 0;
}

// Calls f(std::integral_constant<int, FT>{}) with FT the power of two >= F (F <= kSmallFMaxF).
template <class F>
void dispatch_small_f(int64_t features, F&& f) {
  if (features <= 1)
    f(std::integral_constant<int, 1>{});
  else if (features <= 2)
    f(std::integral_constant<int, 2>{});
  else if (features <= 4)
    f(std::integral_constant<int, 4>{});
  else if (features <= 8)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, 16>{});
}

template <Red R, class V, int FT>
__device__ __forceinline__ void fill_identity(V (&acc)[FT]) {
#pragma unroll
  for (int j = 0; j < FT; ++j) acc[j] = red_identity<R, V>();
}

// Columns [0, FT) of the row of B at p; columns >= F read as 0 (never written back).
template <class V, int FT>
__device__ __forceinline__ void load_small(const V* __restrict__ p, int64_t F, bool vec, acc_t<V> (&out)[FT]) {
  constexpr int W = kSmallVector<V, FT>;
  if constexpr (W > 1) {
    if (vec) {
#pragma unroll
      for (int k = 0; k < FT; k += W) {
        const VecN<acc_t<V>, W> t = sload<V, W>(p + k);
#pragma unroll
        for (int i = 0; i < W; ++i) out[k + i] = t.x[i];
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < FT; ++k) out[k] = k < F ? widen(__ldg(p + k)) : acc_t<V>(0);
}

template <Red R, class V, int FT>
__device__ __forceinline__ void fold_small(V (&acc)[FT], V w, const V (&b)[FT]) {
#pragma unroll
  for (int j = 0; j < FT; ++j) acc[j] = red_step<R>(acc[j], w, b[j]);
}

// One halving step of group_reduce_small and the ones after it, H columns held so far.
template <Red R, class V, int FT, int H>
__device__ __forceinline__ void halve_small(V (&acc)[FT], int& step, int log2g, int sub, unsigned mask, int& first) {
  if constexpr (H > 1) {
    if (step < log2g) {
      const int o = 1 << step;
      const bool upper = (sub & o) != 0;
#pragma unroll
      for (int j = 0; j < H / 2; ++j) {
        const V send = upper ? acc[j] : acc[j + H / 2];
        const V keep = upper ? acc[j + H / 2] : acc[j];
        acc[j] = red_combine<R>(keep, __shfl_xor_sync(mask, send, o, 1 << log2g));
      }
      if (upper) first += H / 2;
      ++step;
      halve_small<R, V, FT, H / 2>(acc, step, log2g, sub, mask, first);
    }
  }
}

// Where a lane's share of a group's result is after group_reduce_small: acc[0, held) are the
// columns first .. first + held - 1. When the group is wider than FT, several lanes hold the same
// columns; only the `writer` among them writes.
struct SmallShare {
  int first = 0, held = 0;
  bool writer = true;
};

// Combines the FT partials of the 2^log2g lanes of a group (mask: the group's lanes; sub: the
// lane's place in it). Every lane of the group must call it.
template <Red R, class V, int FT>
__device__ __forceinline__ SmallShare group_reduce_small(V (&acc)[FT], int log2g, int sub, unsigned mask) {
  SmallShare share;
  int step = 0;
  halve_small<R, V, FT, FT>(acc, step, log2g, sub, mask, share.first);
  share.held = FT >> step;
  // More lanes than columns: every lane holds one column now; the rest of the steps add up the
  // lanes that hold the same one.
  for (; step < log2g; ++step) acc[0] = red_combine<R>(acc[0], __shfl_xor_sync(mask, acc[0], 1 << step, 1 << log2g));
  share.writer = (sub >> log2_of(FT)) == 0;
  return share;
}

// C[row, first + j] for j < held (and < F) from the reduction r of a row of `count` entries.
template <class V, int FT>
__device__ __forceinline__ void write_small(V* crow, int64_t F, const Finish<acc_t<V>>& fin,
                                            const acc_t<V> (&r)[FT], acc_t<V> count, const SmallShare& share) {
  using A = acc_t<V>;
#pragma unroll
  for (int j = 0; j < FT; ++j) {
    const int64_t f = share.first + j;
    if (j < share.held && f < F) st_acc(crow + f, fin.value(r[j], count, fin.beta != A(0) ? ld_acc(crow + f) : A(0)));
  }
}

}  // namespace sparseport::cuda
