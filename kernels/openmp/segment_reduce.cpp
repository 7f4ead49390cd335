// SPDX-License-Identifier: Apache-2.0
// Reductions of F-wide messages into output rows: segment_reduce (index sorted), scatter_reduce
// (any order) and, through reduce_messages, gather_scatter.
//  sorted_add:           the RFC's segment_sorted_add with F-wide carries: the messages are cut
//                        into equal parts (a few per thread), each run of equal indices is summed
//                        in registers and its output row written once at the run's end. Only a
//                        run that crosses a part boundary is combined atomically (at most two
//                        rows per part).
//  sorted_deterministic: no atomics. Runs are summed inside fixed blocks of messages whose size
//                        depends only on E; a run cut by a block boundary leaves raw pieces that
//                        are combined in block order afterwards. Same bits for any thread count.
//  scatter_atomic:       every element of every message is an atomic update (what compilers emit
//                        for a scatter); the baseline. Works for any index order.
//  sort_then_segment:    a stable parallel counting sort of the index, then each output row
//                        reduced by one thread in message order. For an unsorted index only; no
//                        atomics.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

template <class I, class V>
struct Seg {
  int64_t E, N, F, ldo;
  const I* dst;
  V* out;
  bool mean;

  V* row(int64_t r) const { return out + r * ldo; }
};

// The finished value of a non-empty row: the reduction, or for mean the sum over the count.
template <class V>
struct FinishSink {
  V* o;
  V count;
  bool mean;

  void vec(int64_t f, typename Simd<V>::Vec acc) {
    Simd<V>::store(o + f, mean ? acc / Simd<V>::splat(count) : acc);
  }
  void scalar(int64_t f, V acc) { o[f] = mean ? acc / count : acc; }
};

template <class I, class V>
void zero_rows(const Seg<I, V>& p, int64_t from, int64_t to) {
  for (int64_t r = from; r < to; ++r) fill_row(p.row(r), p.F, V(0));
}

template <class I, class V>
void finish_buffer(const Seg<I, V>& p, const V* acc, int64_t r, int64_t count) {
  FinishSink<V> sink{p.row(r), static_cast<V>(count), p.mean};
  using S = Simd<V>;
  int64_t f = 0;
  for (; f + S::kLanes <= p.F; f += S::kLanes) sink.vec(f, S::load(acc + f));
  for (; f < p.F; ++f) sink.scalar(f, acc[f]);
}

// The end of the run of index value dst[e] that contains e, searching [e, hi).
template <class I>
int64_t run_end(const I* dst, int64_t e, int64_t hi) {
  const I r = dst[e];
  int64_t x = e + 1;
  while (x < hi && dst[x] == r) ++x;
  return x;
}

// Output rows a part [e0, e1) of the messages is responsible for: (dst[e0-1], dst[e1-1]], the
// first part from row 0 and the last to row N-1. A row with messages belongs to the part where
// its run begins; an empty row to the part whose range covers it, which zeroes it.
template <class I, class V>
void owned_rows(const Seg<I, V>& p, int64_t e0, int64_t e1, bool last, int64_t& lo, int64_t& hi) {
  lo = e0 == 0 ? 0 : static_cast<int64_t>(p.dst[e0 - 1]) + 1;
  hi = last ? p.N : (e1 == 0 ? 0 : static_cast<int64_t>(p.dst[e1 - 1]) + 1);
  if (hi < lo) hi = lo;
}

// Whether the run at a part's first message began in an earlier part, and whether the run at
// its last message goes on into a later part.
template <class I, class V>
void crossings(const Seg<I, V>& p, int64_t e0, int64_t e1, bool& start_cross, bool& end_cross) {
  start_cross = e0 < e1 && e0 > 0 && p.dst[e0 - 1] == p.dst[e0];
  end_cross = e0 < e1 && e1 < p.E && p.dst[e1 - 1] == p.dst[e1];
}

template <Op R, class I, class V, class Src>
void sorted_add(const Seg<I, V>& p, const Src& src, int threads) {
  // The messages are cut into a few parts per thread (equal message counts), handed out
  // dynamically: a gathered message costs more when its source row misses cache.
  struct Cross {
    int64_t row = -1, start = 0;  // the run this part begins and a later part finishes
  };
  const int64_t parts = block_count(p.E, threads);
  std::vector<Cross> cross(static_cast<size_t>(parts));
#pragma omp parallel num_threads(threads)
  {
    // A run leaving its part is combined atomically into its row by every part it touches; its
    // owner (the part where it begins) first sets the row to the identity.
#pragma omp for schedule(static)
    for (int64_t k = 0; k < parts; ++k) {
      const int64_t e0 = split_point(p.E, k, parts), e1 = split_point(p.E, k + 1, parts);
      bool start_cross, end_cross;
      crossings(p, e0, e1, start_cross, end_cross);
      Cross& c = cross[static_cast<size_t>(k)];
      c = Cross{};
      if (end_cross && !(start_cross && p.dst[e0] == p.dst[e1 - 1])) {
        c.row = p.dst[e1 - 1];
        c.start = std::lower_bound(p.dst + e0, p.dst + e1, p.dst[e1 - 1]) - p.dst;
        fill_row(p.row(c.row), p.F, identity<R, V>());
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < parts; ++k) {
      const int64_t e0 = split_point(p.E, k, parts), e1 = split_point(p.E, k + 1, parts);
      bool start_cross, end_cross;
      crossings(p, e0, e1, start_cross, end_cross);
      int64_t own_lo, own_hi;
      owned_rows(p, e0, e1, k == parts - 1, own_lo, own_hi);
      int64_t next_zero = own_lo;
      for (int64_t e = e0; e < e1;) {
        const int64_t r = p.dst[e], re = run_end(p.dst, e, e1);
        if (r >= next_zero) {
          zero_rows(p, next_zero, r);
          next_zero = r + 1;
        }
        if ((e == e0 && start_cross) || (re == e1 && end_cross)) {
          AtomicSink<R, V> sink{p.row(r)};
          reduce_rows<R>(src, e, re, p.F, sink);
        } else {
          FinishSink<V> sink{p.row(r), static_cast<V>(re - e), p.mean};
          reduce_rows<R>(src, e, re, p.F, sink);
        }
        e = re;
      }
      zero_rows(p, next_zero, own_hi);
    }
    // A crossing run's sum is complete only now; its owner divides it by the run's length.
    if (p.mean) {
#pragma omp for schedule(static)
      for (int64_t k = 0; k < parts; ++k) {
        const Cross& c = cross[static_cast<size_t>(k)];
        if (c.row < 0) continue;
        const int64_t end = std::upper_bound(p.dst + c.start, p.dst + p.E, static_cast<I>(c.row)) - p.dst;
        const V count = static_cast<V>(end - c.start);
        V* o = p.row(c.row);
        for (int64_t f = 0; f < p.F; ++f) o[f] /= count;
      }
    }
  }
}

template <Op R, class I, class V, class Src>
void sorted_deterministic(const Seg<I, V>& p, const Src& src, int threads) {
  struct Block {
    int64_t head_row = -1, head_end = 0;  // the end of a run begun in an earlier block
    bool through = false;                 // ... that also goes on past this block
    int64_t tail_row = -1, tail_start = 0;  // a run begun here that goes on past this block
  };
  const int64_t size = deterministic_block_size(p.E);
  const int64_t nb = std::max<int64_t>(1, (p.E + size - 1) / size);
  std::vector<Block> blocks(static_cast<size_t>(nb));
  std::unique_ptr<V[]> buf = scratch<V>(2 * nb * p.F);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t e0 = b * size, e1 = std::min(p.E, e0 + size);
    int64_t own_lo, own_hi;
    owned_rows(p, e0, e1, b == nb - 1, own_lo, own_hi);
    bool start_cross, end_cross;
    crossings(p, e0, e1, start_cross, end_cross);
    Block& blk = blocks[static_cast<size_t>(b)];
    V* head = buf.get() + 2 * b * p.F;
    V* tail = head + p.F;
    int64_t next_zero = own_lo;
    for (int64_t e = e0; e < e1;) {
      const int64_t r = p.dst[e], re = run_end(p.dst, e, e1);
      if (r >= next_zero) {
        zero_rows(p, next_zero, r);
        next_zero = r + 1;
      }
      const bool is_head = e == e0 && start_cross, is_tail = re == e1 && end_cross;
      if (is_head) {
        blk.head_row = r;
        blk.head_end = re;
        blk.through = is_tail;
        StoreSink<V> sink{head};
        reduce_rows<R>(src, e, re, p.F, sink);
      } else if (is_tail) {
        blk.tail_row = r;
        blk.tail_start = e;
        StoreSink<V> sink{tail};
        reduce_rows<R>(src, e, re, p.F, sink);
      } else {
        FinishSink<V> sink{p.row(r), static_cast<V>(re - e), p.mean};
        reduce_rows<R>(src, e, re, p.F, sink);
      }
      e = re;
    }
    zero_rows(p, next_zero, own_hi);
  }
  // Block order fixes the order the pieces of a run are combined in, whatever the thread count.
  std::vector<V> acc(static_cast<size_t>(p.F));
  int64_t run_start = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const Block& blk = blocks[static_cast<size_t>(b)];
    const V* head = buf.get() + 2 * b * p.F;
    if (blk.head_row >= 0) {
      combine_into<R>(acc.data(), head, p.F);
      if (!blk.through) finish_buffer(p, acc.data(), blk.head_row, blk.head_end - run_start);
    }
    if (blk.tail_row >= 0) {
      std::copy(head + p.F, head + 2 * p.F, acc.begin());
      run_start = blk.tail_start;
    }
  }
}

template <Op R, class I, class V, class Src>
void scatter_atomic(const Seg<I, V>& p, const Src& src, int threads) {
  // max, min and mean need to know which rows received nothing (they become 0).
  const bool counted = p.mean || R != Op::sum;
  std::unique_ptr<int64_t[]> count = scratch<int64_t>(counted ? p.N : 0);
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.N; ++r) {
      fill_row(p.row(r), p.F, identity<R, V>());
      if (counted) count[r] = 0;
    }
#pragma omp for schedule(static)
    for (int64_t e = 0; e < p.E; ++e) {
      V* o = p.row(p.dst[e]);
      const V* x = src.row(e);
      const V w = Src::weighted ? src.weight(e) : V(1);
      for (int64_t f = 0; f < p.F; ++f) {
        const V v = Src::weighted ? w * x[f] : x[f];
        if constexpr (R == Op::sum) {
#pragma omp atomic update
          o[f] += v;
        } else {
          atomic_combine<R>(o + f, v);
        }
      }
      if (counted) {
#pragma omp atomic update
        count[p.dst[e]] += 1;
      }
    }
    if (counted) {
#pragma omp for schedule(static)
      for (int64_t r = 0; r < p.N; ++r) {
        V* o = p.row(r);
        if (count[r] == 0)
          fill_row(o, p.F, V(0));
        else if (p.mean)
          for (int64_t f = 0; f < p.F; ++f) o[f] /= static_cast<V>(count[r]);
      }
    }
  }
}

template <Op R, class I, class V, class Src>
void sort_then_segment(const Seg<I, V>& p, const Src& src, int threads) {
  // Stable counting sort: per-thread histograms over contiguous message ranges, turned into
  // per-(row, thread) offsets, so each row lists its messages in their original order.
  const int64_t N = p.N, E = p.E;
  std::unique_ptr<int64_t[]> hist = scratch<int64_t>(int64_t{threads} * N);
  std::unique_ptr<int64_t[]> rowptr = scratch<int64_t>(N + 1);
  std::unique_ptr<int64_t[]> perm = scratch<int64_t>(E);
  int team = threads;
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    if (t == 0) team = nt;
    int64_t* h = hist.get() + t * N;
    std::fill(h, h + N, int64_t{0});
    const int64_t e0 = split_point(E, t, nt), e1 = split_point(E, t + 1, nt);
    for (int64_t e = e0; e < e1; ++e) ++h[p.dst[e]];
  }
  rowptr[0] = 0;
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    int64_t total = 0;
    for (int t = 0; t < team; ++t) total += hist[t * N + r];
    rowptr[r + 1] = total;
  }
  inclusive_scan(rowptr.get() + 1, N, team);
#pragma omp parallel for num_threads(team) schedule(static)
  for (int64_t r = 0; r < N; ++r) {
    int64_t at = rowptr[r];
    for (int t = 0; t < team; ++t) {
      const int64_t c = hist[t * N + r];
      hist[t * N + r] = at;
      at += c;
    }
  }
  // The same team size and static split as the histogram pass, so each thread revisits its range.
#pragma omp parallel num_threads(team)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    if (nt == team) {
      int64_t* h = hist.get() + t * N;
      const int64_t e0 = split_point(E, t, nt), e1 = split_point(E, t + 1, nt);
      for (int64_t e = e0; e < e1; ++e) perm[h[p.dst[e]]++] = e;
    } else if (t == 0) {
      // A smaller team than before (the runtime may give fewer threads): redo the ranges serially.
      for (int u = 0; u < team; ++u) {
        int64_t* h = hist.get() + u * N;
        const int64_t e0 = split_point(E, u, team), e1 = split_point(E, u + 1, team);
        for (int64_t e = e0; e < e1; ++e) perm[h[p.dst[e]]++] = e;
      }
    }
  }
  static_assert(!Src::weighted, "sort_then_segment reads unweighted messages");
  const Rows<V, int64_t, true, false> sorted{src.base, src.ld, perm.get(), nullptr, E};
  parallel_row_blocks(threads, rowptr.get(), N, E, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = rowptr[r], e = rowptr[r + 1];
      if (b == e) {
        fill_row(p.row(r), p.F, V(0));
        continue;
      }
      FinishSink<V> sink{p.row(r), static_cast<V>(e - b), p.mean};
      reduce_rows<R>(sorted, b, e, p.F, sink);
    }
  });
}

template <Op R, class I, class V, class Src>
void run_variant(const Seg<I, V>& p, const Src& src, SegmentVariant v, int threads) {
  switch (v) {
    case SegmentVariant::sorted_add: return sorted_add<R>(p, src, threads);
    case SegmentVariant::sorted_deterministic: return sorted_deterministic<R>(p, src, threads);
    case SegmentVariant::scatter_atomic: return scatter_atomic<R>(p, src, threads);
    case SegmentVariant::sort_then_segment: break;
  }
  throw Unsupported("sparseport openmp: variant sort_then_segment applies to scatter_reduce only "
                    "(gather_scatter's index is sorted already)");
}

template <class I, class V>
void run(const Messages& m, SegmentVariant v, int threads) {
  const Seg<I, V> p{m.count,        m.out_rows, m.features, m.out_ld, detail::as<I>(m.dst), detail::as_mut<V>(m.out),
                    m.reduce == SPARSEPORT_REDUCE_MEAN};
  with_op(m.reduce, [&]<Op R>() {
    // Without a pick list the messages are read in order (an empty gather also lands here).
    if (m.pick == nullptr && m.w == nullptr) {
      const Rows<V, I, false, false> src{detail::as<V>(m.rows), m.ld, nullptr, nullptr, m.count};
      if (v == SegmentVariant::sort_then_segment)
        sort_then_segment<R>(p, src, threads);
      else
        run_variant<R>(p, src, v, threads);
      return;
    }
    with_weights(m.w, [&]<bool kWeighted>() {
      const Rows<V, I, true, kWeighted> src{detail::as<V>(m.rows), m.ld, detail::as<I>(m.pick), detail::as<V>(m.w),
                                            m.count};
      run_variant<R>(p, src, v, threads);
    });
  });
}

}  // namespace

void reduce_messages(const Messages& m, SegmentVariant v, int threads) {
  detail::dispatch(m.index_type, m.value_type, [&]<class I, class V>() { run<I, V>(m, v, threads); });
}

void segment_reduce(const sparseport_segment_args& args, SegmentVariant v, int threads) {
  Messages m;
  m.count = args.index.n;
  m.features = args.src.cols;
  m.dst = args.index.data;
  m.rows = args.src.data;
  m.ld = args.src.ld;
  m.out = args.out.data;
  m.out_rows = args.out.rows;
  m.out_ld = args.out.ld;
  m.index_type = args.index.index_type;
  m.value_type = args.src.value_type;
  m.reduce = args.reduce;
  reduce_messages(m, v, threads);
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
