// SPDX-License-Identifier: Apache-2.0
// csr_attention.fused on 16-bit values (ABI 1.7, SPARSEPORT_VARIANT_VALUES16): Q, K, V and out are
// f16 or bf16 in memory; the scores, the online softmax's statistics (running maximum m and sum l
// of exp(s - m)) and the weighted sum of the V rows are float32; out is rounded once, when stored.
//
// A group of G lanes per row (grid-stride over the rows), G = enough lanes to cover max(F, Fv)
// once, at least 4, at most 32:
//  - vector path (F % 8 == 0, Fv % 8 == 0, every leading dimension a multiple of 8 and Q, K, V,
//    out 16-byte aligned): 8 values a lane, one 16-byte load (uint4) per lane and row tile, G = 4
//    (max(F, Fv) <= 32), 8, 16 or 32; above 256 columns each lane holds NT = 2 or 4 tiles of
//    G * 8 columns (F, Fv <= 1024);
//  - scalar path (anything else): 1 value a lane, G = 4 to 32, NT = 1, 2, 4 or 8 tiles of G
//    columns (max(F, Fv) <= 256);
//  - wider rows (vector path above 1024 columns, scalar above 256): q is not held in registers but
//    read again tile by tile for each entry's dot product (L1 keeps it), and Fv is taken in passes
//    of NT tiles (4 vector, 8 scalar), each pass recomputing the scores (same code, same bits).
// q_i is held in float registers (the tiles below F; zero elsewhere). For each step of U entries
// of the row (steps_entries: the step's K and V loads in at most 32 registers, so U = 4, 2, 1 at
// NT = 1, 2, 4 for vectors and U = 4, 4, 4, 2 at NT = 1, 2, 4, 8 for single values): the entries'
// column indices were loaded by the step before; their K and V rows are loaded (16-byte loads kept
// in their 16-bit form until used, the V rows before the reduction, since they depend on the
// index only; rows and tiles past the row's end, F or Fv are not loaded but zero), the U partial dot
// products reduced over the group by interleaved xor shuffles (every lane ends with the same
// bits: a + b == b + a), then the online softmax takes the step: m' = max(m, s_u), acc and l
// rescaled by exp(m - m'), plus exp(s_u - m') * v_u. expf, not __expf, as the float kernels.
//
// Non-finite scores as the float kernels (attention_fused.cu's chunk_step): fmaxf ignores a NaN
// score for the maximum but its weight exp(NaN) is NaN, so the row is NaN; +inf gives
// exp(inf - inf) = NaN; -inf weighs 0 and the rescale factor is 1 when the maximum does not move,
// so exp(-inf - -inf) never enters; a row whose scores are all -inf ends with l = 0 and
// 0 * (1 / 0) = NaN. Empty rows get 0.
//
// Deterministic: no atomics; a row is computed by one group in storage order, its result depends
// on the row, F, Fv and the path (vector or scalar: alignment), never on the launch shape.
// Registers (ptxas 13.0, sm_90, no spills unless said): vectors 74-80 at NT = 1 and 2 (3 CTAs of
// 256 an SM), 126-128 at NT = 4, 103-110 wide; single values 40-58 at NT <= 2, 96 at NT = 4 (int64:
// 80 with 28 bytes spilled), 108-116 at NT = 8, 72-79 wide.
// Long rows stay with their group: a row of n entries is a chain of n / U steps of one group
// (correct, but a hub of 100k entries holds its group for its whole length; the float path's
// CTA items and merges are not carried over here).
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/values16.cuh"

SPARSEPORT_CUDA_MODULE(2)

namespace sparseport::cuda {
namespace {

template <class I, class S>
struct Attn16Params {
  int64_t m = 0, F = 0, Fv = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const S* q = nullptr;
  int64_t ldq = 0;
  const S* k = nullptr;
  int64_t ldk = 0;
  const S* v = nullptr;
  int64_t ldv = 0;
  S* out = nullptr;
  int64_t ldo = 0;
  float scale = 1.0f;
};

template <class I, class S>
Attn16Params<I, S> attn16_params(const sparseport_attention_args& a) {
  Attn16Params<I, S> p;
  p.m = a.a.rows;
  p.F = a.q.cols;
  p.Fv = a.v.cols;
  p.rowptr = static_cast<const I*>(a.a.rowptr);
  p.colind = static_cast<const I*>(a.a.colind);
  p.q = static_cast<const S*>(a.q.data);
  p.ldq = a.q.ld;
  p.k = static_cast<const S*>(a.k.data);
  p.ldk = a.k.ld;
  p.v = static_cast<const S*>(a.v.data);
  p.ldv = a.v.ld;
  p.out = static_cast<S*>(a.out.data);
  p.ldo = a.out.ld;
  p.scale = static_cast<float>(a.scale);  // the float32 kernel's scale, in the arithmetic type
  return p;
}

// Entries per step: their K and V loads (raw 16-bit: 4 registers a tile of 8 values, 1 of one
// value) take at most 32 registers a lane, and at most 4 entries.
template <int VEC, int NT>
__host__ __device__ constexpr int steps_entries() {
  constexpr int per_entry = 2 * NT * (VEC == 8 ? 4 : 1);
  constexpr int u = 32 / per_entry;
  return u > 4 ? 4 : (u < 1 ? 1 : u);
}

template <int N>
__device__ __forceinline__ void zero(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) x[i] = 0.0f;
}

// VEC 16-bit values at p (aligned to VEC * 2 bytes) as floats when `in`, else zeros.
template <class S, int VEC>
__device__ __forceinline__ void load_or_zero(bool in, const S* p, float (&x)[VEC]) {
  if (in)
    load16<S, VEC>(p, x);
  else
    zero(x);
}

// The gathered K and V rows stay in their 16-bit form (one uint4 of 8 values, or the 2 bytes of
// one) from their load to their use, which halves the registers their loads hold in flight.
template <int VEC>
using raw_t = std::conditional_t<VEC == 8, uint4, unsigned short>;

template <class S, int VEC>
__device__ __forceinline__ raw_t<VEC> load_raw(bool in, const S* p) {
  if constexpr (VEC == 8)
    return in ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0u, 0u, 0u, 0u);
  else
    return in ? __ldg(reinterpret_cast<const unsigned short*>(p)) : static_cast<unsigned short>(0);  // +0
}

template <class S, int VEC>
__device__ __forceinline__ void widen_raw(const raw_t<VEC>& r, float (&x)[VEC]) {
  if constexpr (VEC == 8) {
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = widen2(w[i], S{});
      x[2 * i] = f.x, x[2 * i + 1] = f.y;
    }
  } else if constexpr (std::is_same_v<S, __half>) {
    x[0] = __half2float(__ushort_as_half(r));
  } else {
    x[0] = __bfloat162float(__ushort_as_bfloat16(r));
  }
}

// One row per group of G lanes. Tiles are G * VEC columns wide; lane `sub` owns columns
// t * G * VEC + sub * VEC .. + VEC - 1 of tile t. Not WIDE: NT tiles cover max(F, Fv), q lives in
// registers and there is one pass over Fv. WIDE: q and K are read tile by tile for each dot
// product, and Fv is taken NT tiles per pass.
template <class I, class S, int VEC, int G, int NT, bool WIDE>
__global__ void __launch_bounds__(kBlock) attention16_kernel(Attn16Params<I, S> p) {
  static_assert(G >= 4 && G <= 32 && (G & (G - 1)) == 0, "a group of 4 to 32 lanes within a warp");
  static_assert(VEC == 1 || VEC == 8, "one value or one 16-byte vector a lane");
  constexpr int U = steps_entries<VEC, NT>();
  constexpr int QT = WIDE ? 1 : NT;  // tiles of q and K held in registers (none used when WIDE)
  constexpr int64_t W = int64_t{G} * VEC;
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned mask = group_mask<G>();
  const int64_t group = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const int64_t ngroups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  const int64_t own = int64_t{sub} * VEC;
  const float neg_inf = red_identity<Red::max, float>();
  for (int64_t row = group; row < p.m; row += ngroups) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    S* orow = p.out + row * p.ldo;
    if (e0 >= e1) {
      for (int64_t f = sub; f < p.Fv; f += G) orow[f] = narrow<S>(0.0f);
      continue;
    }
    const S* qrow = p.q + row * p.ldq;
    [[maybe_unused]] float qr[QT][VEC];
#pragma unroll
    for (int t = 0; t < QT; ++t) {
      if constexpr (WIDE)
        zero(qr[t]);
      else
        load_or_zero<S, VEC>(own + t * W < p.F, qrow + own + t * W, qr[t]);
    }
    // Not WIDE: NT * W >= Fv, one pass.
    for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += NT * W) {
      float run_max = neg_inf, run_sum = 0.0f;
      float acc[NT][VEC];
#pragma unroll
      for (int t = 0; t < NT; ++t) zero(acc[t]);
      I next[U];
#pragma unroll
      for (int u = 0; u < U; ++u) next[u] = e0 + u < e1 ? __ldg(p.colind + e0 + u) : I(0);
#pragma unroll 1
      for (int64_t e = e0; e < e1; e += U) {
        bool ok[U];
        const S* krow[U];
        const S* vrow[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          ok[u] = e + u < e1;  // the same in every lane of the group
          krow[u] = p.k + static_cast<int64_t>(next[u]) * p.ldk;
          vrow[u] = p.v + static_cast<int64_t>(next[u]) * p.ldv + fv0;
        }
        // Every load of the step goes out before anything waits on one, K first.
        [[maybe_unused]] raw_t<VEC> kt[QT][U];
        if constexpr (!WIDE) {
#pragma unroll
          for (int t = 0; t < QT; ++t)
#pragma unroll
            for (int u = 0; u < U; ++u) kt[t][u] = load_raw<S, VEC>(ok[u] && own + t * W < p.F, krow[u] + own + t * W);
        }
        raw_t<VEC> vt[NT][U];
#pragma unroll
        for (int t = 0; t < NT; ++t)
#pragma unroll
          for (int u = 0; u < U; ++u)
            vt[t][u] = load_raw<S, VEC>(ok[u] && fv0 + own + t * W < p.Fv, vrow[u] + own + t * W);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t en = e + U + u;
          next[u] = en < e1 ? __ldg(p.colind + en) : I(0);
        }
        float s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) s[u] = 0.0f;
        if constexpr (!WIDE) {
#pragma unroll
          for (int u = 0; u < U; ++u)
#pragma unroll
            for (int t = 0; t < QT; ++t) {
              float kv[VEC];
              widen_raw<S, VEC>(kt[t][u], kv);
#pragma unroll
              for (int i = 0; i < VEC; ++i) s[u] = fma_of(qr[t][i], kv[i], s[u]);
            }
        } else {
#pragma unroll 1
          for (int64_t f = own; f < p.F; f += W) {
            float qv[VEC];
            load16<S, VEC>(qrow + f, qv);
            float kv[U][VEC];
#pragma unroll
            for (int u = 0; u < U; ++u) load_or_zero<S, VEC>(ok[u], krow[u] + f, kv[u]);
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
              for (int i = 0; i < VEC; ++i) s[u] = fma_of(qv[i], kv[u][i], s[u]);
          }
        }
        // The U reductions interleaved, so that their shuffle latencies overlap.
#pragma unroll
        for (int o = G / 2; o > 0; o /= 2)
#pragma unroll
          for (int u = 0; u < U; ++u) s[u] += __shfl_xor_sync(mask, s[u], o, G);
        float mx = run_max;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] *= p.scale;
          if (ok[u]) mx = fmaxf(mx, s[u]);  // a NaN score loses here; its weight below is NaN
        }
        // 1 when the maximum stays (also -inf to -inf, and +inf to +inf): no exp(-inf - -inf).
        const float corr = run_max == mx ? 1.0f : expf(run_max - mx);
        float pr[U];
        run_sum *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          pr[u] = ok[u] && s[u] != neg_inf ? expf(s[u] - mx) : 0.0f;
          run_sum += pr[u];
        }
        run_max = mx;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[t][i] *= corr;
#pragma unroll
          for (int u = 0; u < U; ++u) {
            float vv[VEC];
            widen_raw<S, VEC>(vt[t][u], vv);
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc[t][i] = fma_of(pr[u], vv[i], acc[t][i]);  // entries past the row: 0 * 0
          }
        }
      }
      const float inv = 1.0f / run_sum;  // all -inf: 1 / 0, and 0 * inf = NaN
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int64_t col = fv0 + own + t * W;
        if (col >= p.Fv) continue;  // vector path: col % 8 == 0 and Fv % 8 == 0, so the whole vector is in
        float o[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i) o[i] = acc[t][i] * inv;
        store16<S, VEC>(orow + col, o);
      }
    }
  }
}

template <class I, class S, int VEC, int G, int NT, bool WIDE = false>
void launch16(const State& s, const Attn16Params<I, S>& p) {
  attention16_kernel<I, S, VEC, G, NT, WIDE><<<blocks_for(p.m * G), kBlock, 0, s.stream()>>>(p);
}

// The group and tiles for VEC values a lane; NTMAX tiles at most before the WIDE kernel.
template <int VEC, int NTMAX>
void launch_shape(const State& s, const sparseport_attention_args& a) {
  const int64_t wide = std::max(a.q.cols, a.v.cols);
  const int G = vecw_group(wide, VEC, 4);
  const int64_t tiles = ceil_div(wide, int64_t{G} * VEC);  // 1 unless G == 32
  dispatch_types16(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using S = decltype(v);
    const Attn16Params<I, S> p = attn16_params<I, S>(a);
    if (G == 4)
      launch16<I, S, VEC, 4, 1>(s, p);
    else if (G == 8)
      launch16<I, S, VEC, 8, 1>(s, p);
    else if (G == 16)
      launch16<I, S, VEC, 16, 1>(s, p);
    else if (tiles <= 1)
      launch16<I, S, VEC, 32, 1>(s, p);
    else if (tiles <= 2)
      launch16<I, S, VEC, 32, 2>(s, p);
    else if (tiles <= 4)
      launch16<I, S, VEC, 32, 4>(s, p);
    else if (tiles <= NTMAX && NTMAX == 8)
      launch16<I, S, VEC, 32, NTMAX>(s, p);
    else
      launch16<I, S, VEC, 32, NTMAX, true>(s, p);
  });
  check_launch("csr_attention.fused (16-bit values)");
}

}  // namespace

void csr_attention_fused16(const State& s, const sparseport_attention_args& a) {
  const bool vec8 = vec16_rows(a.q.data, a.q.ld, a.q.cols, 2) && vec16_rows(a.k.data, a.k.ld, a.k.cols, 2) &&
                    vec16_rows(a.v.data, a.v.ld, a.v.cols, 2) && vec16_rows(a.out.data, a.out.ld, a.out.cols, 2);
  if (vec8)
    launch_shape<8, 4>(s, a);
  else
    launch_shape<1, 8>(s, a);
}

}  // namespace sparseport::cuda
