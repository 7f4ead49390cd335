// SPDX-License-Identifier: Apache-2.0
// spmm: C = alpha * reduce_j(A[i,j] * B[j,:]) + beta * C.
//  rows:       blocks of whole rows with about equal rows + nonzeros, handed to threads
//              dynamically; each row reduced in register tiles of F. A row is never split, so one
//              mega-row serialises on one thread.
//  merge_path: the same path of rows + nonzeros cut into equal pieces regardless of rows (merge
//              path); a row cut by a piece boundary leaves a raw partial per side, combined in
//              piece order afterwards and only then finished.
//  F = 1 (spmv): both fold a whole row in a scalar loop inlined into the row loop (rows_f1).
//  rows with arg (max/min, args.arg non-null; ABI 1.5): loops of their own, so the path above stays
//              as it was when no arg is asked for. Register tiles as above, each holding the fold
//              and the position of the entry that holds it per column: a strictly better product
//              or the first NaN replaces it, so the first of equal products stays (the reference's
//              rule). Selects on the comparison masks, no branches.
//  16-bit values (f16, bf16; SPARSEPORT_VARIANT_VALUES16): every path above with B, A's values
//              and C stored in 16 bits and reduced in float32 (Convert in common.hpp widens B's
//              rows in registers inside the tile loops), alpha, beta and mean applied in float32,
//              one rounding per stored value. float and double take the same code with plain loads.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

// The finishing step of a row, in the accumulator type A: c = alpha * r + beta * c with r = acc
// (sum, max, min) or acc / count (mean). beta == 0 never reads c, so NaN in C's old contents
// cannot leak in.
template <class A>
struct Finish {
  A alpha, beta;
  bool mean;

  A value(A acc, A count, A old) const {
    const A r = mean ? acc / count : acc;
    return beta != A(0) ? alpha * r + beta * old : alpha * r;
  }
};

// Finishes accumulators into a row of C stored as C::value_type (one rounding per value).
template <class C>
struct FinishSink {
  using A = typename C::accum_type;
  const Finish<A>& fin;
  typename C::value_type* c;
  A count;

  void vec(int64_t f, typename Simd<A>::Vec acc) {
    using S = Simd<A>;
    if (fin.mean) acc = acc / S::splat(count);
    typename S::Vec r = S::splat(fin.alpha) * acc;
    if (fin.beta != A(0)) r += S::splat(fin.beta) * C::load(c + f);
    C::store(c + f, r);
  }
  void scalar(int64_t f, A acc) { c[f] = C::narrow(fin.value(acc, count, C::widen(c[f]))); }
  // Columns [f, f + 2 * lanes) as C::load_pair leaves them (even, odd): finished as they are, C
  // read and written in the same order, so no shuffle back to column order.
  void vec_pair(int64_t f, typename Simd<A>::Vec even, typename Simd<A>::Vec odd)
    requires C::kPairs
  {
    using S = Simd<A>;
    if (fin.mean) {
      even = even / S::splat(count);
      odd = odd / S::splat(count);
    }
    const typename S::Vec alpha = S::splat(fin.alpha);
    typename S::Vec re = alpha * even, ro = alpha * odd;
    if (fin.beta != A(0)) {
      typename S::Vec ce, co;
      C::load_pair(c + f, ce, co);
      const typename S::Vec beta = S::splat(fin.beta);
      re += beta * ce;
      ro += beta * co;
    }
    C::store_pair(c + f, re, ro);
  }
};

// A row without entries reduces to 0 for every reduce: c = beta * c.
template <class C>
void finish_empty(const Finish<typename C::accum_type>& fin, typename C::value_type* c, int64_t F) {
  using V = typename C::value_type;
  if (fin.beta == typename C::accum_type(0))
    fill_row(c, F, V(0));
  else
    for (int64_t f = 0; f < F; ++f) c[f] = C::narrow(fin.beta * C::widen(c[f]));
}

template <class C>
void finish_buffer(const Finish<typename C::accum_type>& fin, const typename C::accum_type* acc,
                   typename C::value_type* c, int64_t F, typename C::accum_type count) {
  FinishSink<C> sink{fin, c, count};
  using S = Simd<typename C::accum_type>;
  int64_t f = 0;
  for (; f + S::kLanes <= F; f += S::kLanes) sink.vec(f, S::load(acc + f));
  for (; f < F; ++f) sink.scalar(f, acc[f]);
}

// C stored as Conv::value_type, reduced as Conv::accum_type.
template <class I, class Conv>
struct Problem {
  using C = Conv;
  using V = typename Conv::value_type;
  using A = typename Conv::accum_type;
  int64_t m, F, nnz, ldc;
  const I* rowptr;
  V* c;
  Finish<A> fin;
};

template <Op R, class P, class Src>
void rows(const P& p, const Src& src, int threads) {
  using C = typename P::C;
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      typename P::V* c = p.c + i * p.ldc;
      if (e0 == e1) {
        finish_empty<C>(p.fin, c, p.F);
        continue;
      }
      FinishSink<C> sink{p.fin, c, static_cast<typename P::A>(e1 - e0)};
      reduce_rows<R>(src, e0, e1, p.F, sink);
    }
  });
}

// F = 1 (SpMV): one value per row, so the row loop is the whole kernel: the fold of a row's
// messages inlined into it, without the register tiles, the sink and their dispatch per row. On
// the 2-core dev machine, through a plan (no per-call index check), float, best of 15 calls: band:
// 1000000:16 6.5-6.7 -> 5.0-5.7 ms, er:200000:2e-5 1.7-1.8 -> 1.2-1.3 ms, rmat:18:16 3.7-3.8 ->
// 3.2-3.3 ms (a plain `omp parallel for` over the rows: 5.0-5.3, 1.0-1.2, 4.3-4.4 ms);
// merge_path's whole rows the same way: 6.5-6.7 -> 5.8-6.0, 1.7-1.8 -> 1.4-1.5, 3.7-3.8 -> 3.3-3.7.
template <Op R, class Src>
inline typename Src::accum_type fold_column(const Src& src, int64_t e0, int64_t e1) {
  using A = typename Src::accum_type;
  using C = typename Src::convert;
  A acc = identity<R, A>();
  for (int64_t e = e0; e < e1; ++e) {
    if constexpr (Src::weighted)
      acc = combine<R>(acc, src.weight(e) * C::widen(src.row(e)[0]));
    else
      acc = combine<R>(acc, C::widen(src.row(e)[0]));
  }
  return acc;
}

// *c = the finished fold of a whole row at F = 1 (rows_f1, merge_path's whole rows).
template <class P>
inline void finish_one(const P& p, typename P::V* c, typename P::A acc, int64_t count) {
  using C = typename P::C;
  *c = C::narrow(p.fin.value(acc, static_cast<typename P::A>(count), C::widen(*c)));
}

template <Op R, class P, class Src>
void rows_f1(const P& p, const Src& src, int threads) {
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      typename P::V* c = p.c + i * p.ldc;
      if (e0 == e1)
        finish_empty<typename P::C>(p.fin, c, 1);
      else
        finish_one(p, c, fold_column<R>(src, e0, e1), e1 - e0);
    }
  });
}

// Whether product x replaces acc in the fold of max (kMax) or min, as the reference folds: never
// once acc is NaN, always for the first NaN, else only when strictly better. Scalars give a bool,
// Simd vectors a lane mask (all ones where x replaces acc); bitwise & and |, no control flow.
template <bool kMax, class T>
inline auto replaces(T acc, T x) {
  if constexpr (kMax)
    return (acc == acc) & ((x != x) | (x > acc));
  else
    return (acc == acc) & ((x != x) | (x < acc));
}

// Columns [f0, f0 + NV * lanes) of one row with arg, in registers as tile_accumulate: NV vectors of
// the fold and NV of the winning position, relative to the row's first entry, in integer lanes as
// wide as the accumulator's (so a comparison's mask selects them directly; rows_arg keeps rows of
// 2^31 entries or more off this path for float and the 16-bit types).
template <bool kMax, int NV, class I, class Src>
inline void arg_tile(const Src& src, int64_t e0, int64_t e1, int64_t f0, FinishSink<typename Src::convert>& sink,
                     I* a) {
  using V = typename Src::value_type;
  using A = typename Src::accum_type;
  using C = typename Src::convert;
  using S = Simd<A>;
  using Vec = typename S::Vec;
  using Mask = decltype(Vec{} > Vec{});
  using Lane = std::remove_cv_t<std::remove_reference_t<decltype(Mask{}[0])>>;
  constexpr int L = S::kLanes;
  Vec acc[NV];
  Mask pos[NV];
  {
    const V* r = src.row(e0) + f0;
    const Vec w = S::splat(Src::weighted ? src.weight(e0) : A(1));
    for (int k = 0; k < NV; ++k) {
      acc[k] = Src::weighted ? w * C::load(r + k * L) : C::load(r + k * L);
      pos[k] = Mask{};
    }
  }
  for (int64_t e = e0 + 1; e < e1; ++e) {
    if constexpr (Src::picked) {
      if (e + kPrefetchDistance < src.n) __builtin_prefetch(src.row(e + kPrefetchDistance) + f0);
    }
    const V* r = src.row(e) + f0;
    const Vec w = S::splat(Src::weighted ? src.weight(e) : A(1));
    const Mask here = Mask{} + static_cast<Lane>(e - e0);
    for (int k = 0; k < NV; ++k) {
      const Vec x = Src::weighted ? w * C::load(r + k * L) : C::load(r + k * L);
      const Mask take = replaces<kMax>(acc[k], x);
      acc[k] = take ? x : acc[k];
      pos[k] = take ? here : pos[k];
    }
  }
  for (int k = 0; k < NV; ++k) {
    sink.vec(f0 + k * L, acc[k]);
    for (int l = 0; l < L; ++l) a[f0 + k * L + l] = static_cast<I>(e0 + static_cast<int64_t>(pos[k][l]));
  }
}

// Columns [f0, f1) of one row with arg, a column at a time per entry (F's tail after the tiles, and
// F = 1): blocks of kArgCols values and positions in L1 while the row's entries stream by.
constexpr int64_t kArgCols = 64;

template <bool kMax, class I, class Src>
void arg_columns(const Src& src, int64_t e0, int64_t e1, int64_t f0, int64_t f1,
                 const Finish<typename Src::accum_type>& fin, typename Src::value_type* c, I* a) {
  using V = typename Src::value_type;
  using A = typename Src::accum_type;
  using C = typename Src::convert;
  A acc[kArgCols];
  I pos[kArgCols];
  for (int64_t b0 = f0; b0 < f1; b0 += kArgCols) {
    const int64_t w = std::min(kArgCols, f1 - b0);
    {
      const V* r = src.row(e0) + b0;
      const A s = Src::weighted ? src.weight(e0) : A(1);
      for (int64_t f = 0; f < w; ++f) {
        acc[f] = Src::weighted ? s * C::widen(r[f]) : C::widen(r[f]);
        pos[f] = static_cast<I>(e0);
      }
    }
    for (int64_t e = e0 + 1; e < e1; ++e) {
      const V* r = src.row(e) + b0;
      const A s = Src::weighted ? src.weight(e) : A(1);
      const I here = static_cast<I>(e);
      for (int64_t f = 0; f < w; ++f) {
        const A x = Src::weighted ? s * C::widen(r[f]) : C::widen(r[f]);
        const bool take = replaces<kMax>(acc[f], x);
        acc[f] = take ? x : acc[f];
        pos[f] = take ? here : pos[f];
      }
    }
    for (int64_t f = 0; f < w; ++f) {
      c[b0 + f] = C::narrow(fin.value(acc[f], A(1), C::widen(c[b0 + f])));
      a[b0 + f] = pos[f];
    }
  }
}

template <bool kMax, class I, class P, class Src>
void rows_arg(const P& p, const Src& src, I* arg, int64_t arg_ld, int threads) {
  using A = typename P::A;
  constexpr int L = Simd<A>::kLanes;
  // arg_tile's lanes hold positions within a row in integers as wide as A.
  constexpr int64_t kMaxTileDegree =
      sizeof(A) == 4 ? int64_t{std::numeric_limits<int32_t>::max()} : std::numeric_limits<int64_t>::max();
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      typename P::V* c = p.c + i * p.ldc;
      I* a = arg + i * arg_ld;
      if (e0 == e1) {
        finish_empty<typename P::C>(p.fin, c, p.F);
        std::fill(a, a + p.F, I(-1));
        continue;
      }
      int64_t f = 0;
      if (e1 - e0 <= kMaxTileDegree) {
        FinishSink<typename P::C> sink{p.fin, c, A(1)};
        const auto tile = [&]<int NV>() {
          arg_tile<kMax, NV>(src, e0, e1, f, sink, a);
          f += NV * L;
        };
        while (f + 4 * L <= p.F) tile.template operator()<4>();
        if (f + 2 * L <= p.F) tile.template operator()<2>();
        if (f + L <= p.F) tile.template operator()<1>();
      }
      if (f < p.F) arg_columns<kMax>(src, e0, e1, f, p.F, p.fin, c, a);
    }
  });
}

// What one piece of merge_path leaves for the fix-up: a head (the end of a row begun in an earlier
// piece) and a tail (the start, or a middle part, of a row it does not finish).
struct Carries {
  int64_t head_row = -1, tail_row = -1;
  bool head_has_data = false;   // false: the piece only consumed the row's end
  bool tail_continues = false;  // the tail row began in an earlier piece too (a middle part)
};

template <Op R, class P, class Src>
void merge_path(const P& p, const Src& src, int threads) {
  using C = typename P::C;
  using A = typename P::A;  // the carries stay in the accumulator type until finished
  const int64_t F = p.F, total = p.m + p.nnz;
  const int64_t pieces = block_count(total, threads);
  std::vector<Carries> carries(static_cast<size_t>(pieces));
  std::unique_ptr<A[]> buf = scratch<A>(2 * pieces * F);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t k = 0; k < pieces; ++k) {
    const PathPoint a = merge_path_search(split_point(total, k, pieces), p.rowptr, p.m, p.nnz);
    const PathPoint b = merge_path_search(split_point(total, k + 1, pieces), p.rowptr, p.m, p.nnz);
    Carries& mine = carries[static_cast<size_t>(k)];
    A* head = buf.get() + 2 * k * F;
    A* tail = head + F;
    // Rows a.row .. b.row-1 end inside this piece of the path.
    for (int64_t i = a.row; i < b.row; ++i) {
      const int64_t start = p.rowptr[i], end = p.rowptr[i + 1];
      if (start < a.nz) {
        mine.head_row = i;
        mine.head_has_data = end > a.nz;
        if (mine.head_has_data) {
          StoreSink<A> sink{head};
          reduce_rows<R>(src, a.nz, end, F, sink);
        }
        continue;
      }
      typename P::V* c = p.c + i * p.ldc;
      if (start == end) {
        finish_empty<C>(p.fin, c, F);
        continue;
      }
      if (F == 1) {  // as rows_f1
        finish_one(p, c, fold_column<R>(src, start, end), end - start);
        continue;
      }
      FinishSink<C> sink{p.fin, c, static_cast<A>(end - start)};
      reduce_rows<R>(src, start, end, F, sink);
    }
    if (b.row < p.m) {
      const int64_t from = std::max<int64_t>(p.rowptr[b.row], a.nz);
      if (b.nz > from) {
        mine.tail_row = b.row;
        mine.tail_continues = p.rowptr[b.row] < a.nz;
        StoreSink<A> sink{tail};
        reduce_rows<R>(src, from, b.nz, F, sink);
      }
    }
  }
  // Fix-up in piece order, so the parts of a row combine in nonzero order.
  std::vector<A> acc(static_cast<size_t>(F));
  for (int64_t k = 0; k < pieces; ++k) {
    const Carries& pc = carries[static_cast<size_t>(k)];
    const A* head = buf.get() + 2 * k * F;
    if (pc.head_row >= 0) {
      if (pc.head_has_data) combine_into<R>(acc.data(), head, F);
      const int64_t i = pc.head_row;
      finish_buffer<C>(p.fin, acc.data(), p.c + i * p.ldc, F, static_cast<A>(p.rowptr[i + 1] - p.rowptr[i]));
    }
    if (pc.tail_row >= 0) {
      if (pc.tail_continues)
        combine_into<R>(acc.data(), head + F, F);
      else
        std::copy(head + F, head + 2 * F, acc.begin());
    }
  }
}

template <class I, class V, class C>
void run(const sparseport_spmm_args& args, SpmmVariant variant, int threads) {
  using A = typename C::accum_type;
  const Problem<I, C> p{args.a.rows,
                        args.b.cols,
                        args.a.nnz,
                        args.c.ld,
                        detail::as<I>(args.a.rowptr),
                        detail::as_mut<V>(args.c.data),
                        {static_cast<A>(args.alpha), static_cast<A>(args.beta), args.reduce == SPARSEPORT_REDUCE_MEAN}};
  with_weights(args.a.values, [&]<bool kWeighted>() {
    const Rows<V, I, true, kWeighted, C> src{detail::as<V>(args.b.data), args.b.ld, detail::as<I>(args.a.colind),
                                             detail::as<V>(args.a.values), args.a.nnz};
    // Only spmm.rows records arg (SPARSEPORT_VARIANT_RECORDS_ARG), and only max/min have one.
    const Op op = op_of(args.reduce);
    if (variant == SpmmVariant::rows && args.arg != nullptr && op != Op::sum) {
      I* arg = detail::as_mut<I>(args.arg);
      if (op == Op::max)
        rows_arg<true>(p, src, arg, args.arg_ld, threads);
      else
        rows_arg<false>(p, src, arg, args.arg_ld, threads);
      return;
    }
    with_op(args.reduce, [&]<Op R>() {
      if (variant == SpmmVariant::merge_path)
        merge_path<R>(p, src, threads);
      else if (p.F == 1)
        rows_f1<R>(p, src, threads);
      else
        rows<R>(p, src, threads);
    });
  });
}

}  // namespace

// spmm.rows and spmm.merge_path are flagged SPARSEPORT_VARIANT_VALUES16: f16 and bf16 come here.
void spmm(const sparseport_spmm_args& args, SpmmVariant variant, int threads) {
  dispatch_values16(args.a.index_type, args.a.value_type,
                    [&]<class I, class V, class C>() { run<I, V, C>(args, variant, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
