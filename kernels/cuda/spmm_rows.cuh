// SPDX-License-Identifier: Apache-2.0
// The row-parallel spmm engine shared by row_warp, row_warp_vec4 and the regular rows of
// hub_split: a group of G lanes owns one row at a time; each lane owns VEC consecutive columns of a
// G * VEC wide tile of F, and F is walked tile by tile. Every lane reads the row's (column, value)
// pairs itself (a broadcast load), and U gathers are issued before the first is used, so U * VEC
// values per lane are in flight. spmm_rows_body also serves teams of several groups per row
// (S slices), which hub_split uses on small matrices.
// The staged path (the group reading G pairs coalesced and handing them round by shuffles,
// GE-SpMM's row caching) is gone with the two variants that alone used it, retired as never the
// fastest (plugins/cuda/README.md); spmm_rows_body keeps its STAGE parameter, always false, only
// because spmm_hub.cu names it. Tried again for hub_split's regular rows (H200, 2026-12-06): 1.005x
// the unstaged time geomean, up to 1.10x at F = 128; a staged batch still loads its pairs and then
// gathers B by them, so the chain of dependent loads a row walks, which binds, is as long as before.
// ARG (max/min of row_warp and row_warp_vec4, ABI 1.5): each lane also keeps, per column, the
// position of the entry whose product it holds, and writes it to arg. A lane walks its row's
// entries in storage order, so "the first of equal products, else the first NaN" is a compare with
// the current winner; no two lanes share a column, so no (value, position) pairs are combined.
// 16-bit values (ABI 1.7): V is the storage type of A's values, B and C, and every product, sum,
// max and min is carried in A = acc_t<V> (float for __half and __nv_bfloat16; V itself for float and
// double, whose code is unchanged); C is rounded once when it is stored. Vectors are 16 bytes:
// VEC = 4 floats or 8 16-bit values (sload / sstore, values16.cuh).
#pragma once

#include "kernels/cuda/values16.cuh"

namespace sparseport::cuda {

template <class I, class V>
struct SpmmParams {
  using A = acc_t<V>;  // the accumulator
  int64_t m = 0, F = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const V* val = nullptr;  // null: a pattern
  const V* b = nullptr;
  int64_t ldb = 0;
  V* c = nullptr;
  int64_t ldc = 0;
  Finish<A> fin{};
  // Rows with more entries are left to another kernel (hub_split's CTAs); INT64_MAX otherwise.
  int64_t skip_above = INT64_MAX;
  // Non-null: the row engine walks the rows order[0 .. norder - 1] instead of 0 .. m - 1
  // (hub_split's regular rows sorted by length within windows; see spmm_hub.cu).
  const I* order = nullptr;
  int64_t norder = 0;
  // The winning entry per output element (m x F, ld ldarg), for the kernels instantiated with ARG.
  I* arg = nullptr;
  int64_t ldarg = 0;
};

template <class I, class V>
SpmmParams<I, V> spmm_params(const sparseport_spmm_args& a) {
  SpmmParams<I, V> p;
  p.m = a.a.rows;
  p.F = a.b.cols;
  p.rowptr = static_cast<const I*>(a.a.rowptr);
  p.colind = static_cast<const I*>(a.a.colind);
  p.val = static_cast<const V*>(a.a.values);
  p.b = static_cast<const V*>(a.b.data);
  p.ldb = a.b.ld;
  p.c = static_cast<V*>(a.c.data);
  p.ldc = a.c.ld;
  p.fin = {static_cast<acc_t<V>>(a.alpha), static_cast<acc_t<V>>(a.beta), a.reduce == SPARSEPORT_REDUCE_MEAN};
  return p;
}

// Writes an empty row: beta * C, or 0.
template <class V, int G>
__device__ __forceinline__ void write_empty_row(V* crow, int64_t F, const Finish<acc_t<V>>& fin, int sub) {
  for (int64_t f = sub; f < F; f += G) st_acc(crow + f, fin.empty(ld_acc(crow + f)));
}

// Whether the product x of an entry that comes after the current winner (value cur at position
// pos; pos < 0: none yet) replaces it: the first entry always; never once a NaN won (the first NaN
// stays); a NaN always; otherwise only a strictly greater (max) or smaller (min) product, so the
// first of equal products stays (-0 and +0 are equal).
template <Red R, class V, class P>
__device__ __forceinline__ bool arg_replaces(V x, V cur, P pos) {
  if (pos < 0) return true;
  if (isnan(cur)) return false;
  if (isnan(x)) return true;
  if constexpr (R == Red::max)
    return x > cur;
  else
    return x < cur;
}

// acc (op)= w * b as arg_replaces decides, position e recorded with each replacement.
template <Red R, class I, class V, int VEC>
__device__ __forceinline__ void vaccumulate_arg(VecN<V, VEC>& acc, VecN<I, VEC>& pos, V w, const VecN<V, VEC>& b,
                                                I e) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    const V x = w * b.x[i];
    if (arg_replaces<R>(x, acc.x[i], pos.x[i])) {
      acc.x[i] = x;
      pos.x[i] = e;
    }
  }
}

// The M gathered rows cc[0..M) at this lane's VEC columns: f, f + 1, ... in one 16-byte vector
// (or a scalar), or with STRIDED f, f + G, f + 2G, ... one value each (zero past F).
template <class I, class V, int VEC, int G, bool STRIDED, int M>
__device__ __forceinline__ void gather_rows(const SpmmParams<I, V>& p, const I (&cc)[M], int64_t f,
                                            VecN<acc_t<V>, VEC> (&bv)[M]) {
  if constexpr (STRIDED) {
#pragma unroll
    for (int u = 0; u < M; ++u) {
      const V* row = p.b + static_cast<int64_t>(cc[u]) * p.ldb;
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const int64_t fi = f + int64_t{G} * i;
        bv[u].x[i] = fi < p.F ? sload<V, 1>(row + fi).x[0] : acc_t<V>(0);
      }
    }
  } else {
#pragma unroll
    for (int u = 0; u < M; ++u) bv[u] = sload<V, VEC>(p.b + static_cast<int64_t>(cc[u]) * p.ldb + f);
  }
}

// A team of G * S lanes owns a row: S slices of G lanes, slice s taking the row's entries
// e0 + s, e0 + s + S, ... (strided, so the slices' colind reads stay coalesced), and the slices'
// partial results combined by shuffles before slice 0 writes. S > 1 serves small matrices, whose
// m * G lanes would leave most of the GPU idle while each group walks its row alone (a chain of
// deg / U dependent gathers). UU > 0 sets the gathers in flight per lane (U), else 8 for scalars
// and 4 for vectors. ARG: see the top of the file (p.arg is then non-null).
// MASKED (one slice, no ARG): the entries a row has left after its full batches of U go in batches
// of U / 2 whose loads are all issued (an index past the row's end reads the row's last entry
// again) and whose folds past the end are skipped, instead of one dependent round per entry. A
// row of 4 entries is then one round of gathers, not four; the folds keep the entries' order, so
// the bits are those of the one-at-a-time loop. hub_split's float and double kernels use it:
// 0.968x their time geomean over 6 graphs x F = 16-128, mdual 0.89-0.95x at F = 16-64 (H200,
// benchmarks/results/2026-12-06-h200-hub-masked-batches.md); 0.982x over the 18 shared matrices and
// 3 generated graphs x F = 16-128, 0.888-1.065 (H100, 2026-12-06-h100-masked-prefetch-minibatch.md).
// STRIDED (one slice, no ARG): a lane's VEC values are the columns f, f + G, f + 2G, ... (one
// scalar load each, coalesced across the group), so that a row of any width and alignment is
// walked once for up to G * VEC columns: without vectors, hub_split's lanes took 32 columns a pass
// and walked a row of F = 47 twice, each pass its own chain of gathers, and took 1.56-1.67x its
// F = 64 time (H100, benchmarks/results/2026-12-07-s38.md, section 4).
// Not kept, same runs: loading a group's next row number and bounds a turn ahead in a grid capped
// at 2 or 8 waves, so that the order -> rowptr loads leave each row's chain: 1.08x / 1.07x the time,
// up to 1.64x on rmat:20:16. The capped grid gives up the block scheduler's balancing of rows of
// unequal length, which the one-group-a-row grid had for free; the prefetch won nothing back.
template <Red R, class I, class V, int VEC, int G, bool STAGE, int S = 1, int UU = 0, bool ARG = false,
          bool MASKED = false, bool STRIDED = false>
__device__ __forceinline__ void spmm_rows_body(const SpmmParams<I, V>& p, int64_t group, int64_t ngroups) {
  static_assert(!STAGE, "the staged path is gone (see the top of the file)");
  static_assert(!STRIDED || (S == 1 && !ARG), "strided columns: one slice, no arg");
  static_assert(!MASKED || (S == 1 && !ARG), "masked batches serve one slice summing or reducing without arg");
  static_assert(G * S <= 32, "a team fits in a warp");
  static_assert(!ARG || (R != Red::sum && S == 1),
                "arg is recorded for max and min by lanes that walk a whole row themselves");
  constexpr int U = UU > 0 ? UU : (VEC == 1 ? 8 : 4);
  constexpr int T = G * S;
  using A = acc_t<V>;
  const int t = static_cast<int>(threadIdx.x) & (T - 1);
  const int sub = t & (G - 1), slice = t / G;
  const unsigned team_mask = group_mask<T>();
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const int64_t nwork = p.order != nullptr ? p.norder : p.m;
  for (int64_t k = group; k < nwork; k += ngroups) {
    const int64_t row = p.order != nullptr ? static_cast<int64_t>(p.order[k]) : k;
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    if (e1 - e0 > p.skip_above) continue;
    V* crow = p.c + row * p.ldc;
    if (e0 == e1) {
      if (slice == 0) write_empty_row<V, G>(crow, p.F, p.fin, sub);
      if constexpr (ARG)
        for (int64_t f = sub; f < p.F; f += G) p.arg[row * p.ldarg + f] = I(-1);
      continue;
    }
    const A count = static_cast<A>(e1 - e0);
    for (int64_t f0 = 0; f0 < p.F; f0 += int64_t{G} * VEC) {
      const int64_t f = f0 + int64_t{sub} * (STRIDED ? 1 : VEC);
      const bool active = f < p.F;  // unstrided VEC > 1 only when F % VEC == 0
      VecN<A, VEC> acc;
      vfill(acc, red_identity<R, A>());
      [[maybe_unused]] VecN<I, VEC> pos;
      if constexpr (ARG) vfill(pos, I(-1));
      if (active) {
        int64_t e = e0 + slice;
        for (; e + int64_t{U - 1} * S < e1; e += int64_t{U} * S) {
          I cc[U];
          A w[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            cc[u] = colind[e + u * S];
            w[u] = val != nullptr ? widen(val[e + u * S]) : A(1);
          }
          VecN<A, VEC> bv[U];
          gather_rows<I, V, VEC, G, STRIDED>(p, cc, f, bv);
          if constexpr (ARG) {
#pragma unroll
            for (int u = 0; u < U; ++u) vaccumulate_arg<R>(acc, pos, w[u], bv[u], static_cast<I>(e + u));
          } else {
#pragma unroll
            for (int u = 0; u < U; ++u) vaccumulate<R>(acc, w[u], bv[u]);
          }
        }
        if constexpr (MASKED) {
          constexpr int M = U / 2;
          for (; e < e1; e += M) {
            I cc[M];
            A w[M];
#pragma unroll
            for (int u = 0; u < M; ++u) {
              const int64_t eu = e + u < e1 ? e + u : e1 - 1;
              cc[u] = colind[eu];
              w[u] = val != nullptr ? widen(val[eu]) : A(1);
            }
            VecN<A, VEC> bv[M];
            gather_rows<I, V, VEC, G, STRIDED>(p, cc, f, bv);
#pragma unroll
            for (int u = 0; u < M; ++u)
              if (e + u < e1) vaccumulate<R>(acc, w[u], bv[u]);
          }
        }
        for (; e < e1; e += S) {
          const I cc[1] = {colind[e]};
          const A w = val != nullptr ? widen(val[e]) : A(1);
          VecN<A, VEC> bv[1];
          gather_rows<I, V, VEC, G, STRIDED>(p, cc, f, bv);
          if constexpr (ARG)
            vaccumulate_arg<R>(acc, pos, w, bv[0], static_cast<I>(e));
          else
            vaccumulate<R>(acc, w, bv[0]);
        }
      }
      if constexpr (S > 1) {
        // Every lane of the team takes part (inactive lanes carry the identity).
#pragma unroll
        for (int o = G; o < T; o *= 2)
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc.x[i] = red_combine<R>(acc.x[i], __shfl_xor_sync(team_mask, acc.x[i], o, T));
        if (slice != 0) continue;
      }
      if constexpr (STRIDED) {
        if (active)
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            const int64_t fi = f + int64_t{G} * i;
            if (fi < p.F)
              st_acc(crow + fi, p.fin.value(acc.x[i], count, p.fin.beta != A(0) ? ld_acc(crow + fi) : A(0)));
          }
      } else if (active) {
        VecN<A, VEC> out;
        if (p.fin.beta != A(0)) {
          const VecN<A, VEC> old = sload_rw<V, VEC>(crow + f);
#pragma unroll
          for (int i = 0; i < VEC; ++i) out.x[i] = p.fin.value(acc.x[i], count, old.x[i]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) out.x[i] = p.fin.value(acc.x[i], count, A(0));
        }
        sstore<V, VEC>(crow + f, out);
        if constexpr (ARG) {
          I* arow = p.arg + row * p.ldarg + f;
#pragma unroll
          for (int i = 0; i < VEC; ++i) arow[i] = pos.x[i];
        }
      }
    }
  }
}

template <Red R, class I, class V, int VEC, int G, bool ARG = false>
__global__ void __launch_bounds__(kBlock) spmm_rows_kernel(SpmmParams<I, V> p) {
  const int64_t group = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const int64_t ngroups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  spmm_rows_body<R, I, V, VEC, G, false, 1, 0, ARG>(p, group, ngroups);
}

// RECORDS: the variant records arg (SPARSEPORT_VARIANT_RECORDS_ARG); its kernels with ARG are then
// instantiated too, and run only for max and min with a non-null a.arg. The value types follow
// VEC (dispatch_types_vec): VEC == 1 all four, VEC == 8 the 16-bit ones, VEC == 4 float and double.
template <int VEC, int G, bool RECORDS = false>
void launch_spmm_rows(const State& s, const sparseport_spmm_args& a, const char* name) {
  dispatch_types_vec<VEC>(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    SpmmParams<I, V> p = spmm_params<I, V>(a);
    dispatch_reduce(a.reduce, [&](auto r) {
      constexpr Red R = decltype(r)::value;
      if constexpr (RECORDS && R != Red::sum) {
        if (a.arg != nullptr) {
          p.arg = static_cast<I*>(a.arg);
          p.ldarg = a.arg_ld;
          spmm_rows_kernel<R, I, V, VEC, G, true><<<blocks_for(p.m * G), kBlock, 0, s.stream()>>>(p);
          return;
        }
      }
      spmm_rows_kernel<R, I, V, VEC, G><<<blocks_for(p.m * G), kBlock, 0, s.stream()>>>(p);
    });
  });
  check_launch(name);
}

}  // namespace sparseport::cuda
