// SPDX-License-Identifier: Apache-2.0
// What the openmp kernel files share: the ISA namespace, F-wide vectors, the reductions, the
// register-tiled row accumulator, and small parallel helpers (splits, merge-path search, scan).
//
// Rules for a kernel file: include every header first, then open SPARSEPORT_OPENMP_BEGIN_ISA and
// put all code in namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA. The AVX2 copy is compiled
// with `#pragma GCC target("avx2")` rather than -mavx2 so that std templates (defined before the
// pragma) keep the baseline ISA: the linker keeps one copy of each, and it must run on any x86-64.
// Only our own code, which lives in a namespace per ISA, is compiled for AVX2 (OpenMP's outlined
// region bodies inherit the target of the function they come from).
//
// The AVX2 copy is compiled with F16C enabled too, so that the F16C conversions of 16-bit half
// values (HalfF16C below) inline into the register-tiled loops: a target attribute on the
// conversion alone would leave a call per vector, as GCC does not inline a function with more ISA
// into one with less, and template code takes the target of its definition, not its use. Nothing
// but the half conversions emits F16C instructions (-ffp-contract=off, no _Float16), and those run
// only where __builtin_cpu_supports("f16c") said so (has_f16c); the copy still runs on any AVX2 CPU.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/openmp/kernels.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/half.hpp"
#include "sparseport/plugin_abi.h"

#if !defined(SPARSEPORT_OPENMP_ISA)
#error "kernels/openmp is compiled with SPARSEPORT_OPENMP_ISA set to generic or avx2 (see plugins/openmp)"
#endif

#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
#include <immintrin.h>
#define SPARSEPORT_OPENMP_BEGIN_ISA _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,f16c\")")
#define SPARSEPORT_OPENMP_END_ISA _Pragma("GCC pop_options")
#else
#define SPARSEPORT_OPENMP_BEGIN_ISA
#define SPARSEPORT_OPENMP_END_ISA
#endif

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {

// 256-bit vectors with AVX2. AVX-512 is not worth a third copy on the machines we measured: on the
// 2-core AMD EPYC (Zen 4) dev machine, /tmp experiments with spmm on band:1000000:16 at F=64 ran
// 25.3 ms with 32-byte vectors under -march=native and 34.1 ms with 64-byte ones, against 41 ms
// for the 16-byte baseline build.
#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif

// GCC/Clang vector extensions rather than `#pragma omp simd` over a float array: GCC 12 turned the
// array form into an unroll-and-jam with a scalar inner loop (band spmm at F=64: 150-270 ms
// against 25-41 ms for this form), and the vector form keeps a tile of accumulators in registers.
template <class V>
struct Simd {
  typedef V Vec __attribute__((vector_size(kVectorBytes)));
  static constexpr int kLanes = kVectorBytes / static_cast<int>(sizeof(V));

  static Vec load(const V* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);  // an unaligned vector load; rows need only V's alignment
    return v;
  }
  static void store(V* p, Vec v) { std::memcpy(p, &v, sizeof v); }
  static Vec splat(V x) { return Vec{} + x; }
  static V sum_lanes(Vec v) {
    V s = v[0];
    for (int k = 1; k < kLanes; ++k) s += v[k];
    return s;
  }
};

// ---- 16-bit values ------------------------------------------------------------------------------
//
// How values stored as V reach accumulators of type accum_type (accumulator_t<V>, half.hpp) and go
// back: whole vectors of Simd<accum_type>::kLanes values (load, store) and single values (widen,
// narrow). float and double are their own accumulators, plain loads and stores, so their kernels
// compile to what they were. The 16-bit types convert in registers: a row of B is read as 16-bit
// values and widened in the tile loop, never copied to float32 first.
template <class V>
struct Convert {
  using value_type = V;
  using accum_type = V;
  using Vec = typename Simd<V>::Vec;
  static constexpr bool kPairs = false;  // see Convert<bfloat16>
  static Vec load(const V* p) { return Simd<V>::load(p); }
  static void store(V* p, Vec v) { Simd<V>::store(p, v); }
  static V widen(V x) { return x; }
  static V narrow(V x) { return x; }
};

// std::bit_cast compiled with this copy's ISA: std templates keep the baseline's (see above), and
// one returning a 256-bit vector would change the ABI.
template <class To, class From>
inline To cast_bits(const From& x) {
  return __builtin_bit_cast(To, x);
}

// One float vector's worth of 16-bit patterns, and the same lanes widened to 32 bits.
typedef uint16_t Bits16 __attribute__((vector_size(kVectorBytes / 2)));
typedef uint32_t Bits32 __attribute__((vector_size(kVectorBytes)));

// Zero-extends a vector's worth of 16-bit patterns to 32 bits, and keeps the low 16 bits of each
// lane (x < 2^16). With AVX2 by intrinsics: GCC 12 turns __builtin_convertvector's widening into
// two 128-bit vpmovzxwd, a shift and an insert instead of one 256-bit vpmovzxwd.
inline Bits32 load_bits16(const void* p) {
#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
  __m128i b;
  std::memcpy(&b, p, sizeof b);
  return cast_bits<Bits32>(_mm256_cvtepu16_epi32(b));
#else
  Bits16 b;
  std::memcpy(&b, p, sizeof b);
  return __builtin_convertvector(b, Bits32);
#endif
}
inline void store_bits16(void* p, Bits32 x) {
#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
  const __m256i v = cast_bits<__m256i>(x);
  const __m128i b = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
#else
  const Bits16 b = __builtin_convertvector(x, Bits16);
#endif
  std::memcpy(p, &b, sizeof b);
}

// bfloat16 is the upper half of a float: widening is a shift (vpmovzxwd, vpslld with AVX2);
// narrowing rounds to nearest even and keeps NaN a NaN (made quiet), as half.hpp does, lane by lane.
// Register tiles go two vectors' worth at a time (kPairs): one load of 2 * lanes values, whose
// 32-bit lanes each hold an even column (low half) and the next odd one (high half), so that a
// shift gives the even columns and a mask the odd ones (3 instructions per 16 values against 6
// for two vpmovzxwd + vpslld), and a sink with vec_pair finishes and stores them in that order
// (one blend instead of two packs and the shuffles back). Each column still sums its messages in
// order: the result is that of plain loads. On the 2-core dev machine (Zen 4), spmm.rows on
// er:1000000:3e-6 (3.0M entries) at F = 64, 2 threads, B and C 64-byte aligned, best of 20:
// float32 59-60 ms; bf16 with pair loads and a rounding per vector 47-52 ms, with pair stores
// too 41 ms (f16 through F16C: 43-46 ms). At the ~3 entries per row of that graph the rounding
// of C costs as much as the widening of B.
template <>
struct Convert<bfloat16> {
  using value_type = bfloat16;
  using accum_type = float;
  using Vec = Simd<float>::Vec;
  static constexpr bool kPairs = true;
  static Vec load(const bfloat16* p) { return cast_bits<Vec>(load_bits16(p) << 16); }
  static void load_pair(const bfloat16* p, Vec& even, Vec& odd) {
    Bits32 x;
    std::memcpy(&x, p, sizeof x);
    even = cast_bits<Vec>(x << 16);
    odd = cast_bits<Vec>(x & 0xffff0000u);
  }
  // (even columns, odd columns) of 2 * lanes columns -> (the first lanes columns, the next ones).
  static void interleave(Vec& even, Vec& odd) {
    constexpr int L = Simd<float>::kLanes;
    typedef int32_t Index __attribute__((vector_size(kVectorBytes)));
    Index lo, hi;
    for (int k = 0; k < L; ++k) {
      lo[k] = k / 2 + (k % 2) * L;
      hi[k] = L / 2 + k / 2 + (k % 2) * L;
    }
    const Vec a = __builtin_shuffle(even, odd, lo), b = __builtin_shuffle(even, odd, hi);
    even = a;
    odd = b;
  }
  // v rounded to bfloat16 (nearest even; a NaN stays a NaN, made quiet), in the upper 16 bits of
  // each lane, the lower 16 bits zero.
  static Bits32 round_high(Vec v) {
    const Bits32 x = cast_bits<Bits32>(v);
    const Bits32 rounded = x + 0x7fffu + ((x >> 16) & 1u);
    return ((v != v) ? x | 0x00400000u : rounded) & 0xffff0000u;
  }
  static void store(bfloat16* p, Vec v) { store_bits16(p, round_high(v) >> 16); }
  // The inverse of load_pair: even and odd columns rounded and stored as 2 * lanes values in order.
  static void store_pair(bfloat16* p, Vec even, Vec odd) {
    const Bits32 x = (round_high(even) >> 16) | round_high(odd);
    std::memcpy(static_cast<void*>(p), &x, sizeof x);
  }
  static float widen(bfloat16 x) { return x; }
  static bfloat16 narrow(float x) { return bfloat16(x); }
};

// IEEE half without F16C (the baseline copy, or a CPU without it). Loads widen in registers: the
// exponent and mantissa moved into a float's place and multiplied by 2^112 rebias the exponent
// (15 -> 127) and scale subnormals exactly; infinity and NaN then get the all-ones exponent.
// Stores (one per output value) round lane by lane with half.hpp's conversion.
template <>
struct Convert<half> {
  using value_type = half;
  using accum_type = float;
  using Vec = Simd<float>::Vec;
  static constexpr bool kPairs = false;
  static Vec load(const half* p) {
    const Bits32 h = load_bits16(p);
    const Bits32 x = (h & 0x7fffu) << 13;
    const Bits32 r = cast_bits<Bits32>(cast_bits<Vec>(x) * 0x1p112f);
    return cast_bits<Vec>((x >= (0x7c00u << 13) ? r | 0x7f800000u : r) | ((h & 0x8000u) << 16));
  }
  static void store(half* p, Vec v) {
    for (int k = 0; k < Simd<float>::kLanes; ++k) p[k] = half(v[k]);
  }
  static float widen(half x) { return x; }
  static half narrow(float x) { return half(x); }
};

#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
// IEEE half with F16C (vcvtph2ps / vcvtps2ph, round to nearest even): the AVX2 copy's choice where
// the CPU has F16C (dispatch_values16). Same values as Convert<half>; a NaN keeps its payload.
struct HalfF16C : Convert<half> {
  static_assert(Simd<float>::kLanes == 8, "F16C converts 8 floats at a time");
  static Vec load(const half* p) {
    __m128i h;
    std::memcpy(&h, p, sizeof h);
    return cast_bits<Vec>(_mm256_cvtph_ps(h));
  }
  static void store(half* p, Vec v) {
    const __m128i h = _mm256_cvtps_ph(cast_bits<__m256>(v), _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(static_cast<void*>(p), &h, sizeof h);
  }
  static float widen(half x) { return _cvtsh_ss(x.bits); }
  static half narrow(float x) { return half::from_bits(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT)); }
};

inline bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("f16c");
  return yes;
}
#endif

// Calls f.template operator()<I, V, C>() for the run-time index and value types, C the Convert of
// V (for half: HalfF16C where this copy has it and the CPU supports F16C). For the kernels of
// variants flagged SPARSEPORT_VARIANT_VALUES16; detail::dispatch (float or double) for the others.
template <class F>
decltype(auto) dispatch_values16(int32_t index_type, int32_t value_type, F&& f) {
  const auto with_index = [&]<class V, class C>() -> decltype(auto) {
    if (index_type == SPARSEPORT_I64) return f.template operator()<int64_t, V, C>();
    return f.template operator()<int32_t, V, C>();
  };
  switch (value_type) {
    case SPARSEPORT_F64: return with_index.template operator()<double, Convert<double>>();
    case SPARSEPORT_BF16: return with_index.template operator()<bfloat16, Convert<bfloat16>>();
    case SPARSEPORT_F16:
#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
      if (has_f16c()) return with_index.template operator()<half, HalfF16C>();
#endif
      return with_index.template operator()<half, Convert<half>>();
    default: return with_index.template operator()<float, Convert<float>>();
  }
}

// The reduction carried by the accumulators; mean carries a sum and divides at the end.
enum class Op { sum, max, min };

inline Op op_of(int32_t reduce) {
  if (reduce == SPARSEPORT_REDUCE_MAX) return Op::max;
  if (reduce == SPARSEPORT_REDUCE_MIN) return Op::min;
  return Op::sum;
}

template <Op R, class T>
inline T combine(T a, T b) {
  if constexpr (R == Op::sum)
    return a + b;
  else if constexpr (R == Op::max)
    return a > b ? a : b;
  else
    return a < b ? a : b;
}

template <Op R, class V>
constexpr V identity() {
  if constexpr (R == Op::sum)
    return V(0);
  else if constexpr (R == Op::max)
    return -std::numeric_limits<V>::infinity();
  else
    return std::numeric_limits<V>::infinity();
}

// Calls f.template operator()<R>() for the op's reduction.
template <class F>
decltype(auto) with_op(int32_t reduce, F&& f) {
  switch (op_of(reduce)) {
    case Op::max: return f.template operator()<Op::max>();
    case Op::min: return f.template operator()<Op::min>();
    default: return f.template operator()<Op::sum>();
  }
}

// F-wide source rows. Message e is the row `base + (kPick ? pick[e] : e) * ld`, scaled by w[e]
// when kWeighted (a pattern or an unweighted message skips the multiply). Values are stored as V
// and reduced as C::accum_type (V itself for float and double).
template <class V, class I, bool kPick, bool kWeighted, class C = Convert<V>>
struct Rows {
  using value_type = V;
  using convert = C;
  using accum_type = typename C::accum_type;
  static constexpr bool weighted = kWeighted, picked = kPick;
  const V* base = nullptr;
  int64_t ld = 0;
  const I* pick = nullptr;
  const V* w = nullptr;
  int64_t n = 0;  // messages that exist: picked rows are prefetched only below n

  const V* row(int64_t e) const { return base + (kPick ? static_cast<int64_t>(pick[e]) : e) * ld; }
  accum_type weight(int64_t e) const { return C::widen(w[e]); }
};

// Picked rows are prefetched this many messages ahead, one cache line each (the hardware's
// adjacent-line and stream prefetchers bring the rest of the row). On the 2-core dev machine at
// F=64 this took spmm on er:200000:2e-5 from ~19-20 ms to ~14-15 ms and on rmat:18:16 from ~39 ms
// to ~27 ms; on band:1000000:16, where B rows are already cached, it costs ~7%. Distances 8 and
// 16 were within noise of each other; prefetching all 4 lines of a 256-byte tile was slower on
// band (load-port pressure) and no faster elsewhere.
inline constexpr int64_t kPrefetchDistance = 16;

// Calls f.template operator()<kWeighted>() with kWeighted = (weights != nullptr).
template <class F>
decltype(auto) with_weights(const void* weights, F&& f) {
  if (weights != nullptr) return f.template operator()<true>();
  return f.template operator()<false>();
}

// Reduces messages [e0, e1) of src into NV vectors of columns [f0, f0 + NV * lanes). NV is a
// compile-time tile so the accumulators stay in registers (8 x 256-bit = 64 floats at most).
template <Op R, int NV, class Src>
inline void tile_accumulate(const Src& src, int64_t e0, int64_t e1, int64_t f0,
                            typename Simd<typename Src::accum_type>::Vec (&acc)[NV]) {
  using C = typename Src::convert;
  using S = Simd<typename Src::accum_type>;
  for (int64_t e = e0; e < e1; ++e) {
    if constexpr (Src::picked) {
      if (e + kPrefetchDistance < src.n) __builtin_prefetch(src.row(e + kPrefetchDistance) + f0);
    }
    const typename Src::value_type* r = src.row(e) + f0;
    if constexpr (C::kPairs && NV % 2 == 0) {
      // Pairs of vectors in the order of C::load_pair (reduce_rows puts them back in order).
      const typename S::Vec w = S::splat(Src::weighted ? src.weight(e) : typename Src::accum_type(1));
      for (int k = 0; k < NV; k += 2) {
        typename S::Vec x0, x1;
        C::load_pair(r + k * S::kLanes, x0, x1);
        acc[k] = combine<R>(acc[k], Src::weighted ? w * x0 : x0);
        acc[k + 1] = combine<R>(acc[k + 1], Src::weighted ? w * x1 : x1);
      }
    } else if constexpr (Src::weighted) {
      const typename S::Vec w = S::splat(src.weight(e));
      for (int k = 0; k < NV; ++k) acc[k] = combine<R>(acc[k], w * C::load(r + k * S::kLanes));
    } else {
      for (int k = 0; k < NV; ++k) acc[k] = combine<R>(acc[k], C::load(r + k * S::kLanes));
    }
  }
}

// Reduces messages [e0, e1) of src over all F columns, one register tile at a time, and hands
// every finished piece to sink: sink.vec(f, vector) for whole vectors, then sink.scalar(f, value)
// for the last F % lanes columns, both in Src::accum_type. Each column is reduced in message
// order, so the result does not depend on the vector width.
template <Op R, class Src, class Sink>
inline void reduce_rows(const Src& src, int64_t e0, int64_t e1, int64_t F, Sink& sink) {
  using V = typename Src::value_type;
  using A = typename Src::accum_type;
  using C = typename Src::convert;
  using S = Simd<A>;
  using Vec = typename S::Vec;
  constexpr int L = S::kLanes;
  if (F == 1) {
    // One column (GCN norms, attention logits, F = 1 features): a plain scalar loop. The tiled
    // path below would pay its tile dispatch and a runtime-length tail loop per row or run.
    A acc = identity<R, A>();
    for (int64_t e = e0; e < e1; ++e) {
      if constexpr (Src::weighted)
        acc = combine<R>(acc, src.weight(e) * C::widen(src.row(e)[0]));
      else
        acc = combine<R>(acc, C::widen(src.row(e)[0]));
    }
    sink.scalar(0, acc);
    return;
  }
  int64_t f = 0;
  const auto tile = [&]<int NV>() {
    Vec acc[NV];
    for (int k = 0; k < NV; ++k) acc[k] = S::splat(identity<R, A>());
    tile_accumulate<R, NV>(src, e0, e1, f, acc);
    if constexpr (C::kPairs && NV % 2 == 0) {
      // A sink that stores pairs takes them as they are; else back in column order.
      if constexpr (requires { sink.vec_pair(f, acc[0], acc[1]); }) {
        for (int k = 0; k < NV; k += 2) sink.vec_pair(f + k * L, acc[k], acc[k + 1]);
      } else {
        for (int k = 0; k < NV; k += 2) C::interleave(acc[k], acc[k + 1]);
        for (int k = 0; k < NV; ++k) sink.vec(f + k * L, acc[k]);
      }
    } else {
      for (int k = 0; k < NV; ++k) sink.vec(f + k * L, acc[k]);
    }
    f += NV * L;
  };
  while (f + 8 * L <= F) tile.template operator()<8>();
  if (f + 4 * L <= F) tile.template operator()<4>();
  if (f + 2 * L <= F) tile.template operator()<2>();
  if (f + L <= F) tile.template operator()<1>();
  if (f < F) {
    const int n = static_cast<int>(F - f);
    A acc[L];
    for (int k = 0; k < n; ++k) acc[k] = identity<R, A>();
    for (int64_t e = e0; e < e1; ++e) {
      const V* r = src.row(e) + f;
      if constexpr (Src::weighted) {
        const A w = src.weight(e);
        for (int k = 0; k < n; ++k) acc[k] = combine<R>(acc[k], w * C::widen(r[k]));
      } else {
        for (int k = 0; k < n; ++k) acc[k] = combine<R>(acc[k], C::widen(r[k]));
      }
    }
    for (int k = 0; k < n; ++k) sink.scalar(f + k, acc[k]);
  }
}

// Stores raw accumulators (no finishing) into a row buffer: carries and boundary pieces.
template <class V>
struct StoreSink {
  V* out;
  void vec(int64_t f, typename Simd<V>::Vec v) { Simd<V>::store(out + f, v); }
  void scalar(int64_t f, V v) { out[f] = v; }
};

// Combines raw accumulators atomically into a shared row: where a run crosses a thread boundary.
template <Op R, class V>
inline void atomic_combine(V* p, V v) {
  std::atomic_ref<V> a(*p);
  if constexpr (R == Op::sum) {
    a.fetch_add(v, std::memory_order_relaxed);
  } else {
    V cur = a.load(std::memory_order_relaxed);
    while (combine<R>(cur, v) != cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
}

template <Op R, class V>
struct AtomicSink {
  V* out;
  void vec(int64_t f, typename Simd<V>::Vec v) {
    for (int k = 0; k < Simd<V>::kLanes; ++k) atomic_combine<R>(out + f + k, v[k]);
  }
  void scalar(int64_t f, V v) { atomic_combine<R>(out + f, v); }
};

// combine(a, b) over n values, in place into a.
template <Op R, class V>
inline void combine_into(V* a, const V* b, int64_t n) {
  using S = Simd<V>;
  int64_t f = 0;
  for (; f + S::kLanes <= n; f += S::kLanes) S::store(a + f, combine<R>(S::load(a + f), S::load(b + f)));
  for (; f < n; ++f) a[f] = combine<R>(a[f], b[f]);
}

template <class V>
inline void fill_row(V* a, int64_t n, V value) {
  std::fill(a, a + n, value);
}

// Prefetches the first `bytes` of a row (at most 4 cache lines). For gathers that sit between
// other work (scores, exp) where out-of-order execution cannot reach the next row's loads itself.
template <class V>
inline void prefetch_row(const V* p, int64_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = std::min<int64_t>(n * static_cast<int64_t>(sizeof(V)), 256);
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b);
}

// dot(x, y) over n values: two vector accumulators (to hide the add latency), then the lanes,
// then the last n % lanes products; values stored as V, products and sums in C::accum_type.
template <class V, class C = Convert<V>>
inline typename C::accum_type dot(const V* x, const V* y, int64_t n) {
  using A = typename C::accum_type;
  using S = Simd<A>;
  constexpr int L = S::kLanes;
  typename S::Vec a0 = S::splat(A(0)), a1 = S::splat(A(0));
  int64_t f = 0;
  for (; f + 2 * L <= n; f += 2 * L) {
    a0 += C::load(x + f) * C::load(y + f);
    a1 += C::load(x + f + L) * C::load(y + f + L);
  }
  if (f + L <= n) {
    a0 += C::load(x + f) * C::load(y + f);
    f += L;
  }
  A s = S::sum_lanes(a0 + a1);
  for (; f < n; ++f) s += C::widen(x[f]) * C::widen(y[f]);
  return s;
}

// ---- partitions --------------------------------------------------------------------------------

// Where part p of `parts` equal parts of [0, n) begins; never overflows for n < 2^62.
inline int64_t split_point(int64_t n, int64_t p, int64_t parts) {
  return n / parts * p + n % parts * p / parts;
}

// The merge-path coordinate at diagonal d of the merge of CSR row ends (rowptr[1..m]) with the
// nonzero indices 0..nnz-1: `row` row ends and `nz` nonzeros come before the diagonal
// (Merrill & Garland, SC'16). Splitting rows + nnz evenly gives each thread the same work however
// the nonzeros are spread over rows.
struct PathPoint {
  int64_t row, nz;
};
template <class I>
inline PathPoint merge_path_search(int64_t d, const I* rowptr, int64_t m, int64_t nnz) {
  int64_t lo = std::max<int64_t>(0, d - nnz), hi = std::min<int64_t>(d, m);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(rowptr[mid + 1]) <= d - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {lo, d - lo};
}

// The row holding nonzero e: the last row whose rowptr is <= e (rows may be empty).
template <class I>
inline int64_t row_of(int64_t e, const I* rowptr, int64_t m) {
  return std::upper_bound(rowptr, rowptr + m + 1, static_cast<I>(e)) - rowptr - 1;
}

// Work is cut into about this many blocks per thread, handed out dynamically: equal work by count
// is not equal time when some rows hit cache and others miss (rmat), and spare blocks let the
// faster thread take more. Blocks stay contiguous, so hardware prefetch streams stay long.
inline constexpr int64_t kBlocksPerThread = 16;
// ... and into no block smaller than this many items (rows + nonzeros, or messages).
inline constexpr int64_t kMinBlock = 4096;

inline int64_t block_count(int64_t work, int threads) {
  return std::clamp<int64_t>(work / kMinBlock, threads, int64_t{threads} * kBlocksPerThread);
}

// Runs body(first_row, end_row) over blocks of whole rows of about equal rows + nonzeros, in
// parallel with dynamic scheduling. A row longer than a block is never split: its block grows.
template <class I, class Body>
inline void parallel_row_blocks(int threads, const I* rowptr, int64_t m, int64_t nnz, const Body& body) {
  const int64_t total = m + nnz, blocks = block_count(total, threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = merge_path_search(split_point(total, b, blocks), rowptr, m, nnz).row;
    const int64_t r1 = merge_path_search(split_point(total, b + 1, blocks), rowptr, m, nnz).row;
    if (r0 < r1) body(r0, r1);
  }
}

// In-place inclusive prefix sum of a[0..n) on up to `threads` threads (chunk sums, then offsets).
template <class T>
inline void inclusive_scan(T* a, int64_t n, int threads) {
  if (threads <= 1 || n < 4096) {
    for (int64_t i = 1; i < n; ++i) a[i] += a[i - 1];
    return;
  }
  std::vector<T> offset(static_cast<size_t>(threads) + 1, T(0));
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t b = split_point(n, t, nt), e = split_point(n, t + 1, nt);
    for (int64_t i = b + 1; i < e; ++i) a[i] += a[i - 1];
    offset[static_cast<size_t>(t) + 1] = e > b ? a[e - 1] : T(0);
#pragma omp barrier
#pragma omp single
    for (int k = 1; k <= nt; ++k) offset[static_cast<size_t>(k)] += offset[static_cast<size_t>(k) - 1];
    const T add = offset[static_cast<size_t>(t)];
    if (add != T(0))
      for (int64_t i = b; i < e; ++i) a[i] += add;
  }
}

// Scratch memory that is not value-initialised (a serial zero fill would cost as much as a kernel).
template <class T>
std::unique_ptr<T[]> scratch(int64_t n) {
  return std::make_unique_for_overwrite<T[]>(static_cast<size_t>(n > 0 ? n : 1));
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
