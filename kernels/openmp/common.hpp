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
#include "sparseport/plugin_abi.h"

#if !defined(SPARSEPORT_OPENMP_ISA)
#error "kernels/openmp is compiled with SPARSEPORT_OPENMP_ISA set to generic or avx2 (see plugins/openmp)"
#endif

#if defined(SPARSEPORT_OPENMP_ISA_AVX2)
#define SPARSEPORT_OPENMP_BEGIN_ISA _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
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
// when kWeighted (a pattern or an unweighted message skips the multiply).
template <class V, class I, bool kPick, bool kWeighted>
struct Rows {
  using value_type = V;
  static constexpr bool weighted = kWeighted, picked = kPick;
  const V* base = nullptr;
  int64_t ld = 0;
  const I* pick = nullptr;
  const V* w = nullptr;
  int64_t n = 0;  // messages that exist: picked rows are prefetched only below n

  const V* row(int64_t e) const { return base + (kPick ? static_cast<int64_t>(pick[e]) : e) * ld; }
  V weight(int64_t e) const { return w[e]; }
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
                            typename Simd<typename Src::value_type>::Vec (&acc)[NV]) {
  using V = typename Src::value_type;
  using S = Simd<V>;
  for (int64_t e = e0; e < e1; ++e) {
    if constexpr (Src::picked) {
      if (e + kPrefetchDistance < src.n) __builtin_prefetch(src.row(e + kPrefetchDistance) + f0);
    }
    const V* r = src.row(e) + f0;
    if constexpr (Src::weighted) {
      const typename S::Vec w = S::splat(src.weight(e));
      for (int k = 0; k < NV; ++k) acc[k] = combine<R>(acc[k], w * S::load(r + k * S::kLanes));
    } else {
      for (int k = 0; k < NV; ++k) acc[k] = combine<R>(acc[k], S::load(r + k * S::kLanes));
    }
  }
}

// Reduces messages [e0, e1) of src over all F columns, one register tile at a time, and hands
// every finished piece to sink: sink.vec(f, vector) for whole vectors, then sink.scalar(f, value)
// for the last F % lanes columns. Each column is reduced in message order, so the result does not
// depend on the vector width.
template <Op R, class Src, class Sink>
inline void reduce_rows(const Src& src, int64_t e0, int64_t e1, int64_t F, Sink& sink) {
  using V = typename Src::value_type;
  using S = Simd<V>;
  using Vec = typename S::Vec;
  constexpr int L = S::kLanes;
  if (F == 1) {
    // One column (GCN norms, attention logits, F = 1 features): a plain scalar loop. The tiled
    // path below would pay its tile dispatch and a runtime-length tail loop per row or run.
    V acc = identity<R, V>();
    for (int64_t e = e0; e < e1; ++e) {
      if constexpr (Src::weighted)
        acc = combine<R>(acc, src.weight(e) * src.row(e)[0]);
      else
        acc = combine<R>(acc, src.row(e)[0]);
    }
    sink.scalar(0, acc);
    return;
  }
  int64_t f = 0;
  const auto tile = [&]<int NV>() {
    Vec acc[NV];
    for (int k = 0; k < NV; ++k) acc[k] = S::splat(identity<R, V>());
    tile_accumulate<R, NV>(src, e0, e1, f, acc);
    for (int k = 0; k < NV; ++k) sink.vec(f + k * L, acc[k]);
    f += NV * L;
  };
  while (f + 8 * L <= F) tile.template operator()<8>();
  if (f + 4 * L <= F) tile.template operator()<4>();
  if (f + 2 * L <= F) tile.template operator()<2>();
  if (f + L <= F) tile.template operator()<1>();
  if (f < F) {
    const int n = static_cast<int>(F - f);
    V acc[L];
    for (int k = 0; k < n; ++k) acc[k] = identity<R, V>();
    for (int64_t e = e0; e < e1; ++e) {
      const V* r = src.row(e) + f;
      if constexpr (Src::weighted) {
        const V w = src.weight(e);
        for (int k = 0; k < n; ++k) acc[k] = combine<R>(acc[k], w * r[k]);
      } else {
        for (int k = 0; k < n; ++k) acc[k] = combine<R>(acc[k], r[k]);
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
// then the last n % lanes products.
template <class V>
inline V dot(const V* x, const V* y, int64_t n) {
  using S = Simd<V>;
  constexpr int L = S::kLanes;
  typename S::Vec a0 = S::splat(V(0)), a1 = S::splat(V(0));
  int64_t f = 0;
  for (; f + 2 * L <= n; f += 2 * L) {
    a0 += S::load(x + f) * S::load(y + f);
    a1 += S::load(x + f + L) * S::load(y + f + L);
  }
  if (f + L <= n) {
    a0 += S::load(x + f) * S::load(y + f);
    f += L;
  }
  V s = S::sum_lanes(a0 + a1);
  for (; f < n; ++f) s += x[f] * y[f];
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
