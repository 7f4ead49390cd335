// SPDX-License-Identifier: Apache-2.0
// What the 16-bit kernels share (ABI 1.7 f16/bf16): the CUDA storage types, their float32
// accumulator, and vectorised loads and stores that move 2, 4 or 8 values per lane (4, 8 or 16
// bytes) and convert to or from float32 in registers. Values are stored in 16 bits and every
// product and sum is float32; a result is rounded once, when it is stored.
// Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace sparseport::cuda {

template <class S>
inline constexpr bool is16_v = std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>;

// The accumulator of a storage type: float for the 16-bit ones, the type itself otherwise.
template <class S>
struct acc_of {
  using type = S;
};
template <>
struct acc_of<__half> {
  using type = float;
};
template <>
struct acc_of<__nv_bfloat16> {
  using type = float;
};
template <class S>
using acc_t = typename acc_of<S>::type;

__device__ __forceinline__ float widen(__half x) { return __half2float(x); }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }

// One rounding to nearest even (overflow to infinity, NaN stays NaN).
template <class S>
__device__ __forceinline__ S narrow(acc_t<S> x) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(x);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(x);
  else
    return x;
}

// A pair of 16-bit values <-> float2.
__device__ __forceinline__ float2 widen2(unsigned w, __half) { return __half22float2(*reinterpret_cast<__half2*>(&w)); }
__device__ __forceinline__ float2 widen2(unsigned w, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&w));
}
__device__ __forceinline__ unsigned narrow2(float a, float b, __half) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ unsigned narrow2(float a, float b, __nv_bfloat16) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&h);
}

// N 16-bit values (N = 1, 2, 4 or 8; p aligned to N * 2 bytes) as float32, through the read-only
// path: one 2-, 4-, 8- or 16-byte load.
template <class S, int N>
__device__ __forceinline__ void load16(const S* p, float (&out)[N]) {
  static_assert(is16_v<S> && (N == 1 || N == 2 || N == 4 || N == 8), "1, 2, 4 or 8 16-bit values");
  if constexpr (N == 1) {
    out[0] = widen(__ldg(p));
  } else if constexpr (N == 2) {
    const float2 f = widen2(__ldg(reinterpret_cast<const unsigned*>(p)), S{});
    out[0] = f.x, out[1] = f.y;
  } else if constexpr (N == 4) {
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
    const float2 a = widen2(w.x, S{}), b = widen2(w.y, S{});
    out[0] = a.x, out[1] = a.y, out[2] = b.x, out[3] = b.y;
  } else {
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(p));
    const unsigned ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = widen2(ws[i], S{});
      out[2 * i] = f.x, out[2 * i + 1] = f.y;
    }
  }
}

// Plain (coherent) load, for outputs read back (C with beta != 0).
template <class S, int N>
__device__ __forceinline__ void load16_rw(const S* p, float (&out)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = widen(p[i]);
}

// N float32 values rounded once into 16 bits, one store of N * 2 bytes.
template <class S, int N>
__device__ __forceinline__ void store16(S* p, const float (&v)[N]) {
  static_assert(is16_v<S> && (N == 1 || N == 2 || N == 4 || N == 8), "1, 2, 4 or 8 16-bit values");
  if constexpr (N == 1) {
    *p = narrow<S>(v[0]);
  } else if constexpr (N == 2) {
    *reinterpret_cast<unsigned*>(p) = narrow2(v[0], v[1], S{});
  } else if constexpr (N == 4) {
    *reinterpret_cast<uint2*>(p) = make_uint2(narrow2(v[0], v[1], S{}), narrow2(v[2], v[3], S{}));
  } else {
    *reinterpret_cast<uint4*>(p) = make_uint4(narrow2(v[0], v[1], S{}), narrow2(v[2], v[3], S{}),
                                              narrow2(v[4], v[5], S{}), narrow2(v[6], v[7], S{}));
  }
}

// Calls f(__half{}) or f(__nv_bfloat16{}) for a 16-bit value type tag.
template <class F>
void dispatch_value16(int32_t value_type, F&& f) {
  if (value_type == SPARSEPORT_BF16)
    f(__nv_bfloat16{});
  else
    f(__half{});
}

// Calls f(I{}, S{}) for every value type: float, double, __half, __nv_bfloat16.
template <class F>
void dispatch_types_all(int32_t index_type, int32_t value_type, F&& f) {
  dispatch_index(index_type, [&](auto i) {
    switch (value_type) {
      case SPARSEPORT_F64: return f(i, double{});
      case SPARSEPORT_F16: return f(i, __half{});
      case SPARSEPORT_BF16: return f(i, __nv_bfloat16{});
      default: return f(i, float{});
    }
  });
}

// ---- storage-type vectors (S stored, acc_t<S> computed): the templates that take S and A apart ----

inline bool is16_tag(int32_t value_type) { return value_type == SPARSEPORT_F16 || value_type == SPARSEPORT_BF16; }

// Values per 16-byte vector of a storage type: 4 floats, 2 doubles, 8 halves.
template <class S>
inline constexpr int kVec16 = static_cast<int>(16 / sizeof(S));

// One stored value as the accumulator type (read-only path / plain).
template <class S>
__device__ __forceinline__ acc_t<S> ldg_acc(const S* p) {
  return widen(__ldg(p));
}
template <class S>
__device__ __forceinline__ acc_t<S> ld_acc(const S* p) {
  return widen(*p);
}
// An accumulator value rounded once into a stored value.
template <class S>
__device__ __forceinline__ void st_acc(S* p, acc_t<S> v) {
  *p = narrow<S>(v);
}

// N stored values at p as N accumulator values, through the read-only path: vload for float and
// double (unchanged), one load16 of N * 2 bytes for 16-bit values.
template <class S, int N>
__device__ __forceinline__ VecN<acc_t<S>, N> sload(const S* p) {
  if constexpr (is16_v<S>) {
    VecN<float, N> r;
    load16<S, N>(p, r.x);
    return r;
  } else {
    return vload<S, N>(p);
  }
}

// N stored values kept as loaded (16-bit values: N / 2 words of pairs), widened only where they are
// used. A kernel that holds many loads in flight before using them (sddmm: U entries x CPL vectors
// of X and Y) needs half the registers of widened floats this way, so its 16-bit build keeps the
// float32 build's occupancy: widened at the load, sddmm.nnz_balanced's 16-bit kernels took 176-194
// registers a lane against 80-128 in float32 (ptxas, sm_90), half the resident warps, and ran at
// 0.55-0.75x of float32 at F >= 64; packed, 77-126 registers and 1.23x float32 (1.54x on inputs of
// 500k entries or more) (H200, benchmarks/results/2026-11-26-h200-issue21.md, sessions 12 and 13).
template <class S, int N, class = void>
struct Packed {  // float, double, and single 16-bit values: as stored
  VecN<S, N> v;
};
template <class S, int N>
struct Packed<S, N, std::enable_if_t<is16_v<S> && (N >= 2)>> {
  unsigned w[N / 2];
};

// N stored values at p through the read-only path, one load of N values (p aligned to it).
template <class S, int N>
__device__ __forceinline__ Packed<S, N> pload(const S* p) {
  Packed<S, N> r;
  if constexpr (!is16_v<S>) {
    r.v = vload<S, N>(p);
  } else if constexpr (N == 1) {
    r.v.x[0] = __ldg(p);
  } else if constexpr (N == 2) {
    r.w[0] = __ldg(reinterpret_cast<const unsigned*>(p));
  } else if constexpr (N == 4) {
    const uint2 q = __ldg(reinterpret_cast<const uint2*>(p));
    r.w[0] = q.x, r.w[1] = q.y;
  } else {
    static_assert(N == 8, "1, 2, 4 or 8 16-bit values");
    const uint4 q = __ldg(reinterpret_cast<const uint4*>(p));
    r.w[0] = q.x, r.w[1] = q.y, r.w[2] = q.z, r.w[3] = q.w;
  }
  return r;
}

// acc + sum_i a[i] * b[i] in the accumulator type, i in order (the sum the widened loop makes),
// each pair of 16-bit values widened just before its products.
template <class S, int N>
__device__ __forceinline__ acc_t<S> dot_acc(acc_t<S> acc, const Packed<S, N>& a, const Packed<S, N>& b) {
  if constexpr (is16_v<S> && N >= 2) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float2 x = widen2(a.w[i], S{}), y = widen2(b.w[i], S{});
      acc += x.x * y.x;
      acc += x.y * y.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) acc += widen(a.v.x[i]) * widen(b.v.x[i]);
  }
  return acc;
}

// Plain (coherent) loads, for outputs read back (C with beta != 0).
template <class S, int N>
__device__ __forceinline__ VecN<acc_t<S>, N> sload_rw(const S* p) {
  if constexpr (is16_v<S>) {
    VecN<float, N> r;
    if constexpr (N == 1 || N == 2 || N == 4 || N == 8) {
      // One coherent load of N * 2 bytes (p aligned to it, as for sstore).
      if constexpr (N == 1) {
        r.x[0] = widen(*p);
      } else if constexpr (N == 2) {
        const float2 f = widen2(*reinterpret_cast<const unsigned*>(p), S{});
        r.x[0] = f.x, r.x[1] = f.y;
      } else if constexpr (N == 4) {
        const uint2 w = *reinterpret_cast<const uint2*>(p);
        const float2 a = widen2(w.x, S{}), b = widen2(w.y, S{});
        r.x[0] = a.x, r.x[1] = a.y, r.x[2] = b.x, r.x[3] = b.y;
      } else {
        const uint4 w = *reinterpret_cast<const uint4*>(p);
        const unsigned ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 f = widen2(ws[i], S{});
          r.x[2 * i] = f.x, r.x[2 * i + 1] = f.y;
        }
      }
    } else {
      load16_rw<S, N>(p, r.x);
    }
    return r;
  } else {
    return vload_rw<S, N>(p);
  }
}

// N accumulator values rounded once into N stored values (one store of N * 2 bytes for 16 bits).
template <class S, int N>
__device__ __forceinline__ void sstore(S* p, const VecN<acc_t<S>, N>& v) {
  if constexpr (is16_v<S>)
    store16<S, N>(p, v.x);
  else
    vstore<S, N>(p, v);
}

// Calls f(I{}, S{}) for the 16-bit value types only (__half for F16, __nv_bfloat16 for BF16).
template <class F>
void dispatch_types16(int32_t index_type, int32_t value_type, F&& f) {
  dispatch_index(index_type, [&](auto i) { dispatch_value16(value_type, [&](auto v) { f(i, v); }); });
}

// The types a kernel of VEC values per lane serves, S being the storage type: VEC == 1 every type
// (dispatch_types_all); VEC == 8 (16 bytes of 16-bit values) the 16-bit types; otherwise float and
// double (dispatch_types: 16 bytes of floats, or pairs of doubles).
template <int VEC, class F>
void dispatch_types_vec(int32_t index_type, int32_t value_type, F&& f) {
  if constexpr (VEC == 1)
    dispatch_types_all(index_type, value_type, f);
  else if constexpr (VEC == 8)
    dispatch_types16(index_type, value_type, f);
  else
    dispatch_types(index_type, value_type, f);
}

// The value type tag of an accumulator scratch array (partials kept in acc_t<S>).
template <class S>
inline constexpr int32_t kAccTag = std::is_same_v<acc_t<S>, double> ? SPARSEPORT_F64 : SPARSEPORT_F32;

// Group width for vectors of W values along F: enough lanes to cover F once, at least min_group,
// at most 32 (vec4_group for W = 4).
inline int vecw_group(int64_t F, int W, int min_group) {
  int g = min_group;
  while (g < 32 && int64_t{g} * W < F) g *= 2;
  return g;
}

}  // namespace sparseport::cuda
