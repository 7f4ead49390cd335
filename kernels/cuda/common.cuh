// SPDX-License-Identifier: Apache-2.0
// What the CUDA kernel files share: reductions, F-wide vectors of 1, 2 or 4 values per lane,
// group shuffles, atomic combines, the finishing step of spmm, and the host-side type dispatch.
// Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cuda/preload.hpp"
#include "backends/cuda/runtime.hpp"
#include "kernels/cuda/kernels.hpp"
#include "core/plugin_support.hpp"

// Registers this .cu file's module for the preload (backends/cuda/preload.hpp): one line in every
// kernel file, at namespace scope after its includes. ORDER: 0 the spmm variants (a decision times
// several), 1 sddmm, 2 attention, 3 the rest. The empty kernel is this file's own, so that asking
// for its attributes loads this module and no other.
#define SPARSEPORT_CUDA_MODULE(ORDER)                                                       \
  namespace {                                                                               \
  __global__ void sparseport_module_anchor() {}                                             \
  [[maybe_unused]] const ::sparseport::cuda::ModuleAnchor sparseport_module_registered{     \
      __FILE__, ORDER, reinterpret_cast<const void*>(&sparseport_module_anchor)};           \
  }

namespace sparseport::cuda {

// The reduction carried by accumulators; mean carries a sum and divides when it finishes.
enum class Red { sum, max, min };

template <Red R>
struct RedTag {
  static constexpr Red value = R;
};

__device__ __forceinline__ void infinity_of(float& x) { x = __int_as_float(0x7f800000); }
__device__ __forceinline__ void infinity_of(double& x) { x = __longlong_as_double(0x7ff0000000000000LL); }

template <Red R, class V>
__device__ __forceinline__ V red_identity() {
  V inf;
  infinity_of(inf);
  if constexpr (R == Red::sum)
    return V(0);
  else if constexpr (R == Red::max)
    return -inf;
  else
    return inf;
}

template <Red R, class V>
__device__ __forceinline__ V red_combine(V a, V b) {
  if constexpr (R == Red::sum)
    return a + b;
  else if constexpr (R == Red::max)
    return a > b ? a : b;
  else
    return a < b ? a : b;
}

template <class V, int N>
struct VecN {
  V x[N];
};

template <class V, int N>
__device__ __forceinline__ void vfill(VecN<V, N>& v, V s) {
#pragma unroll
  for (int i = 0; i < N; ++i) v.x[i] = s;
}

// Read-only loads through the non-coherent path (the gathered rows of B, X, Y, K, V).
template <class V, int N>
__device__ __forceinline__ VecN<V, N> vload(const V* p) {
  VecN<V, N> r;
  if constexpr (N == 1) {
    r.x[0] = __ldg(p);
  } else if constexpr (std::is_same_v<V, float> && N == 2) {
    const float2 t = __ldg(reinterpret_cast<const float2*>(p));
    r.x[0] = t.x;
    r.x[1] = t.y;
  } else if constexpr (std::is_same_v<V, float> && N == 4) {
    const float4 t = __ldg(reinterpret_cast<const float4*>(p));
    r.x[0] = t.x;
    r.x[1] = t.y;
    r.x[2] = t.z;
    r.x[3] = t.w;
  } else {
    static_assert(std::is_same_v<V, double> && N % 2 == 0, "double vectors come in pairs");
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const double2 t = __ldg(reinterpret_cast<const double2*>(p + i));
      r.x[i] = t.x;
      r.x[i + 1] = t.y;
    }
  }
  return r;
}

// Plain (coherent) loads and stores, for outputs that are read back (C with beta != 0).
template <class V, int N>
__device__ __forceinline__ VecN<V, N> vload_rw(const V* p) {
  VecN<V, N> r;
  if constexpr (N == 1) {
    r.x[0] = *p;
  } else if constexpr (std::is_same_v<V, float> && N == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    r.x[0] = t.x;
    r.x[1] = t.y;
    r.x[2] = t.z;
    r.x[3] = t.w;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) r.x[i] = p[i];
  }
  return r;
}

template <class V, int N>
__device__ __forceinline__ void vstore(V* p, const VecN<V, N>& v) {
  if constexpr (N == 1) {
    *p = v.x[0];
  } else if constexpr (std::is_same_v<V, float> && N == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v.x[0], v.x[1], v.x[2], v.x[3]);
  } else if constexpr (std::is_same_v<V, double> && N % 2 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 2) *reinterpret_cast<double2*>(p + i) = make_double2(v.x[i], v.x[i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = v.x[i];
  }
}

// One step of a reduction: acc (op) w * b. A sum is an explicit fused multiply-add (what nvcc's
// default contraction made of it anyway), so that every kernel that sums a row in the same order
// gets the same bits whichever way the compiler would have contracted it: deterministic mode
// relies on a regular row of spmm.hub_split and a one-block hub row agreeing bit for bit.
__device__ __forceinline__ float fma_of(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_of(double a, double b, double c) { return __fma_rn(a, b, c); }

template <Red R, class V>
__device__ __forceinline__ V red_step(V acc, V w, V b) {
  if constexpr (R == Red::sum)
    return fma_of(w, b, acc);
  else
    return red_combine<R>(acc, w * b);
}

// acc = acc (op) w * b, element by element.
template <Red R, class V, int N>
__device__ __forceinline__ void vaccumulate(VecN<V, N>& acc, V w, const VecN<V, N>& b) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc.x[i] = red_step<R>(acc.x[i], w, b.x[i]);
}

// Lanes [base, base + G) of the warp, where base is this lane's group start.
template <int G>
__device__ __forceinline__ unsigned group_mask() {
  if constexpr (G == 32) {
    return 0xffffffffu;
  } else {
    const unsigned lane = threadIdx.x & 31u;
    return ((1u << G) - 1u) << (lane & ~unsigned(G - 1));
  }
}

// Sum over the G lanes of a group; every lane of the group gets the result.
template <int G, class V>
__device__ __forceinline__ V group_sum(V v, unsigned mask) {
#pragma unroll
  for (int o = G / 2; o > 0; o /= 2) v += __shfl_xor_sync(mask, v, o, G);
  return v;
}

// Atomic combines into global memory. max/min are compare-and-swap loops on the bit pattern.
template <Red R, class V>
__device__ __forceinline__ void atomic_combine(V* p, V v) {
  if constexpr (R == Red::sum) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<V, float>) {
    int* a = reinterpret_cast<int*>(p);
    int old = *a;
    while (true) {
      const float cur = __int_as_float(old);
      if (!(red_combine<R>(cur, v) != cur)) break;  // v does not improve on cur
      const int seen = atomicCAS(a, old, __float_as_int(v));
      if (seen == old) break;
      old = seen;
    }
  } else {
    unsigned long long* a = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *a;
    while (true) {
      const double cur = __longlong_as_double(static_cast<long long>(old));
      if (!(red_combine<R>(cur, v) != cur)) break;
      const unsigned long long seen = atomicCAS(a, old, static_cast<unsigned long long>(__double_as_longlong(v)));
      if (seen == old) break;
      old = seen;
    }
  }
}

// out = alpha * r + beta * old, with r = acc / count for mean. beta == 0 never reads old, so NaN
// in C's previous contents cannot leak in.
template <class V>
struct Finish {
  V alpha, beta;
  bool mean;

  __device__ __forceinline__ V value(V acc, V count, V old) const {
    const V r = mean ? acc / count : acc;
    return beta != V(0) ? alpha * r + beta * old : alpha * r;
  }
  __device__ __forceinline__ V empty(V old) const { return beta != V(0) ? beta * old : V(0); }
};

// Exponentials in the value type (expf for float), not the fast approximations.
__device__ __forceinline__ float vexp(float x) { return expf(x); }
__device__ __forceinline__ double vexp(double x) { return exp(x); }

// First index r in [0, n] with rowptr[r + 1] > z, i.e. the row holding nonzero z (empty rows
// before it skipped); rowptr has n + 1 entries and z < rowptr[n].
template <class I>
__device__ __forceinline__ int64_t row_of(const I* rowptr, int64_t n, int64_t z) {
  int64_t lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(rowptr[mid]) <= z)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// ---- host side ---------------------------------------------------------------------------------

constexpr int kBlock = 256;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `threads` threads of kBlock, capped where grid-stride loops take over.
inline unsigned blocks_for(int64_t threads) {
  const int64_t b = ceil_div(threads, kBlock);
  constexpr int64_t kMax = 2147483647;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMax ? kMax : b));
}

// Calls f(I{}, V{}) for the run-time index and value types (float and double; 16-bit values,
// which values16.cuh dispatches, are refused: plugin_support.hpp says why).
template <class F>
void dispatch_types(int32_t index_type, int32_t value_type, F&& f) {
  detail::refuse_values16(value_type);
  if (index_type == SPARSEPORT_I64) {
    if (value_type == SPARSEPORT_F64)
      f(int64_t{}, double{});
    else
      f(int64_t{}, float{});
  } else {
    if (value_type == SPARSEPORT_F64)
      f(int32_t{}, double{});
    else
      f(int32_t{}, float{});
  }
}

template <class F>
void dispatch_value(int32_t value_type, F&& f) {
  detail::refuse_values16(value_type);
  if (value_type == SPARSEPORT_F64)
    f(double{});
  else
    f(float{});
}

template <class F>
void dispatch_index(int32_t index_type, F&& f) {
  if (index_type == SPARSEPORT_I64)
    f(int64_t{});
  else
    f(int32_t{});
}

// Calls f(RedTag<R>{}) for the reduction; mean runs as sum.
template <class F>
void dispatch_reduce(int32_t reduce, F&& f) {
  if (reduce == SPARSEPORT_REDUCE_MAX)
    f(RedTag<Red::max>{});
  else if (reduce == SPARSEPORT_REDUCE_MIN)
    f(RedTag<Red::min>{});
  else
    f(RedTag<Red::sum>{});
}

// Group width for vectors of 4 along F: enough lanes to cover F once, at least kMin, at most 32.
inline int vec4_group(int64_t F, int min_group) {
  int g = min_group;
  while (g < 32 && int64_t{g} * 4 < F) g *= 2;
  return g;
}

}  // namespace sparseport::cuda
