// SPDX-License-Identifier: Apache-2.0
// spmm: C = alpha * reduce_j(A[i,j] * B[j,:]) + beta * C.
//  rows:       blocks of whole rows with about equal rows + nonzeros, handed to threads
//              dynamically; each row reduced in register tiles of F. A row is never split, so one
//              mega-row serialises on one thread.
//  merge_path: the same path of rows + nonzeros cut into equal pieces regardless of rows (merge
//              path); a row cut by a piece boundary leaves a raw partial per side, combined in
//              piece order afterwards and only then finished.
#include "kernels/openmp/common.hpp"
#include "src/core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

// The finishing step of a row: c = alpha * r + beta * c with r = acc (sum, max, min) or
// acc / count (mean). beta == 0 never reads c, so NaN in C's old contents cannot leak in.
template <class V>
struct Finish {
  V alpha, beta;
  bool mean;

  V value(V acc, V count, V old) const {
    const V r = mean ? acc / count : acc;
    return beta != V(0) ? alpha * r + beta * old : alpha * r;
  }
};

template <class V>
struct FinishSink {
  const Finish<V>& fin;
  V* c;
  V count;

  void vec(int64_t f, typename Simd<V>::Vec acc) {
    using S = Simd<V>;
    if (fin.mean) acc = acc / S::splat(count);
    typename S::Vec r = S::splat(fin.alpha) * acc;
    if (fin.beta != V(0)) r += S::splat(fin.beta) * S::load(c + f);
    S::store(c + f, r);
  }
  void scalar(int64_t f, V acc) { c[f] = fin.value(acc, count, c[f]); }
};

// A row without entries reduces to 0 for every reduce: c = beta * c.
template <class V>
void finish_empty(const Finish<V>& fin, V* c, int64_t F) {
  if (fin.beta == V(0))
    fill_row(c, F, V(0));
  else
    for (int64_t f = 0; f < F; ++f) c[f] = fin.beta * c[f];
}

template <class V>
void finish_buffer(const Finish<V>& fin, const V* acc, V* c, int64_t F, V count) {
  FinishSink<V> sink{fin, c, count};
  using S = Simd<V>;
  int64_t f = 0;
  for (; f + S::kLanes <= F; f += S::kLanes) sink.vec(f, S::load(acc + f));
  for (; f < F; ++f) sink.scalar(f, acc[f]);
}

template <class I, class V>
struct Problem {
  int64_t m, F, nnz, ldc;
  const I* rowptr;
  V* c;
  Finish<V> fin;
};

template <Op R, class I, class V, class Src>
void rows(const Problem<I, V>& p, const Src& src, int threads) {
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      V* c = p.c + i * p.ldc;
      if (e0 == e1) {
        finish_empty(p.fin, c, p.F);
        continue;
      }
      FinishSink<V> sink{p.fin, c, static_cast<V>(e1 - e0)};
      reduce_rows<R>(src, e0, e1, p.F, sink);
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

template <Op R, class I, class V, class Src>
void merge_path(const Problem<I, V>& p, const Src& src, int threads) {
  const int64_t F = p.F, total = p.m + p.nnz;
  const int64_t pieces = block_count(total, threads);
  std::vector<Carries> carries(static_cast<size_t>(pieces));
  std::unique_ptr<V[]> buf = scratch<V>(2 * pieces * F);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t k = 0; k < pieces; ++k) {
    const PathPoint a = merge_path_search(split_point(total, k, pieces), p.rowptr, p.m, p.nnz);
    const PathPoint b = merge_path_search(split_point(total, k + 1, pieces), p.rowptr, p.m, p.nnz);
    Carries& mine = carries[static_cast<size_t>(k)];
    V* head = buf.get() + 2 * k * F;
    V* tail = head + F;
    // Rows a.row .. b.row-1 end inside this piece of the path.
    for (int64_t i = a.row; i < b.row; ++i) {
      const int64_t start = p.rowptr[i], end = p.rowptr[i + 1];
      if (start < a.nz) {
        mine.head_row = i;
        mine.head_has_data = end > a.nz;
        if (mine.head_has_data) {
          StoreSink<V> sink{head};
          reduce_rows<R>(src, a.nz, end, F, sink);
        }
        continue;
      }
      V* c = p.c + i * p.ldc;
      if (start == end) {
        finish_empty(p.fin, c, F);
        continue;
      }
      FinishSink<V> sink{p.fin, c, static_cast<V>(end - start)};
      reduce_rows<R>(src, start, end, F, sink);
    }
    if (b.row < p.m) {
      const int64_t from = std::max<int64_t>(p.rowptr[b.row], a.nz);
      if (b.nz > from) {
        mine.tail_row = b.row;
        mine.tail_continues = p.rowptr[b.row] < a.nz;
        StoreSink<V> sink{tail};
        reduce_rows<R>(src, from, b.nz, F, sink);
      }
    }
  }
  // Fix-up in piece order, so the parts of a row combine in nonzero order.
  std::vector<V> acc(static_cast<size_t>(F));
  for (int64_t k = 0; k < pieces; ++k) {
    const Carries& pc = carries[static_cast<size_t>(k)];
    const V* head = buf.get() + 2 * k * F;
    if (pc.head_row >= 0) {
      if (pc.head_has_data) combine_into<R>(acc.data(), head, F);
      const int64_t i = pc.head_row;
      finish_buffer(p.fin, acc.data(), p.c + i * p.ldc, F, static_cast<V>(p.rowptr[i + 1] - p.rowptr[i]));
    }
    if (pc.tail_row >= 0) {
      if (pc.tail_continues)
        combine_into<R>(acc.data(), head + F, F);
      else
        std::copy(head + F, head + 2 * F, acc.begin());
    }
  }
}

template <class I, class V>
void run(const sparseport_spmm_args& args, SpmmVariant variant, int threads) {
  const Problem<I, V> p{args.a.rows,
                        args.b.cols,
                        args.a.nnz,
                        args.c.ld,
                        detail::as<I>(args.a.rowptr),
                        detail::as_mut<V>(args.c.data),
                        {static_cast<V>(args.alpha), static_cast<V>(args.beta), args.reduce == SPARSEPORT_REDUCE_MEAN}};
  with_weights(args.a.values, [&]<bool kWeighted>() {
    const Rows<V, I, true, kWeighted> src{detail::as<V>(args.b.data), args.b.ld, detail::as<I>(args.a.colind),
                                          detail::as<V>(args.a.values), args.a.nnz};
    with_op(args.reduce, [&]<Op R>() {
      if (variant == SpmmVariant::merge_path)
        merge_path<R>(p, src, threads);
      else
        rows<R>(p, src, threads);
    });
  });
}

}  // namespace

void spmm(const sparseport_spmm_args& args, SpmmVariant variant, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type,
                   [&]<class I, class V>() { run<I, V>(args, variant, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
