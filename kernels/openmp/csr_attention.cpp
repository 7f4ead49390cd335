// SPDX-License-Identifier: Apache-2.0
// csr_attention: out[i,:] = sum_j softmax_j(scale * q_i . k_j) * v_j over the columns j of row i.
//  unfused: three parallel passes over an nnz-long score buffer: scores (nonzeros split evenly, as
//           sddmm), a softmax per row, then the weighted sum of V rows per row (as spmm.rows).
//  onepass: one pass per row with an online softmax (running max m and sum l): scores are taken a
//           batch at a time, the accumulator is rescaled only when the batch raises m, and the
//           batch's V rows are summed in register tiles. No nnz-long buffer, one visit per entry.
// Both keep a row on one thread in the V pass, so a mega-row serialises there. unfused is the
// default: on the 2-core dev machine (rmat:16:16, F=64, 2 threads, interleaved medians on a quiet
// machine) it ran 16.5 ms against 19.9 ms for onepass, single-threaded ~35 ms against ~58 ms. perf
// puts onepass's time in stalls on the K-row gathers of its scoring loop: the exp calls and the
// per-batch V sum between batches leave out-of-order execution less to overlap than pass 1's
// uninterrupted run of dots. onepass stays for its lack of an nnz-long buffer.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

// Entries per online-softmax batch: enough that a rescale of the F-wide accumulator is rare and
// the V tile of a batch stays in registers, small enough to live on the stack.
constexpr int kBatch = 32;

template <class I, class V>
struct Attention {
  int64_t m, nnz, F, Fv, ldq, ldk, ldv, ldo;
  const I* rowptr;
  const I* colind;
  const V *q, *k, *v;
  V* out;
  V scale;

  explicit Attention(const sparseport_attention_args& a)
      : m(a.a.rows),
        nnz(a.a.nnz),
        F(a.q.cols),
        Fv(a.v.cols),
        ldq(a.q.ld),
        ldk(a.k.ld),
        ldv(a.v.ld),
        ldo(a.out.ld),
        rowptr(detail::as<I>(a.a.rowptr)),
        colind(detail::as<I>(a.a.colind)),
        q(detail::as<V>(a.q.data)),
        k(detail::as<V>(a.k.data)),
        v(detail::as<V>(a.v.data)),
        out(detail::as_mut<V>(a.out.data)),
        scale(static_cast<V>(a.scale)) {}

  // The score of entry e of row i; prefetches the K row a few entries ahead (random gathers).
  V score(int64_t i, int64_t e) const {
    if (e + kPrefetchDistance < nnz) prefetch_row(k + static_cast<int64_t>(colind[e + kPrefetchDistance]) * ldk, F);
    return scale * dot(q + i * ldq, k + static_cast<int64_t>(colind[e]) * ldk, F);
  }
};

template <class V>
struct AddSink {
  V* acc;
  void vec(int64_t f, typename Simd<V>::Vec x) { Simd<V>::store(acc + f, Simd<V>::load(acc + f) + x); }
  void scalar(int64_t f, V x) { acc[f] += x; }
};

template <class V>
struct StoreScaledSink {
  V* o;
  V s;
  void vec(int64_t f, typename Simd<V>::Vec x) { Simd<V>::store(o + f, x * Simd<V>::splat(s)); }
  void scalar(int64_t f, V x) { o[f] = x * s; }
};

template <class I, class V>
void unfused(const Attention<I, V>& p, int threads) {
  std::unique_ptr<V[]> prob = scratch<V>(p.nnz);
  // Pass 1, the scores (an SDDMM): nonzeros split evenly, every score its own output.
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t z0 = split_point(p.nnz, t, nt), z1 = split_point(p.nnz, t + 1, nt);
    if (z0 < z1) {
      int64_t e = z0;
      for (int64_t i = row_of(z0, p.rowptr, p.m); e < z1; ++i)
        for (const int64_t end = std::min<int64_t>(p.rowptr[i + 1], z1); e < end; ++e) prob[e] = p.score(i, e);
    }
  }
  // Pass 2, a softmax per row.
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      if (e0 == e1) continue;
      V mx = prob[e0];
      for (int64_t e = e0 + 1; e < e1; ++e) mx = std::max(mx, prob[e]);
      V sum = 0;
      for (int64_t e = e0; e < e1; ++e) sum += (prob[e] = std::exp(prob[e] - mx));
      const V inv = V(1) / sum;
      for (int64_t e = e0; e < e1; ++e) prob[e] *= inv;
    }
  });
  // Pass 3, the weighted sum of V rows (an SpMM).
  const Rows<V, I, true, true> src{p.v, p.ldv, p.colind, prob.get(), p.nnz};
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      V* o = p.out + i * p.ldo;
      if (e0 == e1) {
        fill_row(o, p.Fv, V(0));
        continue;
      }
      StoreSink<V> sink{o};
      reduce_rows<Op::sum>(src, e0, e1, p.Fv, sink);
    }
  });
}

template <class I, class V>
void onepass(const Attention<I, V>& p, int threads) {
  // One accumulator row per thread, padded to a cache line so threads never share one.
  const int64_t stride = (p.Fv + 15) / 16 * 16;
  std::unique_ptr<V[]> accs = scratch<V>(stride * threads);
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    V* acc = accs.get() + stride * omp_get_thread_num();
    V s[kBatch];
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      V* o = p.out + i * p.ldo;
      if (e0 == e1) {
        fill_row(o, p.Fv, V(0));
        continue;
      }
      fill_row(acc, p.Fv, V(0));
      V mx = -std::numeric_limits<V>::infinity(), l = 0;
      for (int64_t e = e0; e < e1; e += kBatch) {
        const int nb = static_cast<int>(std::min<int64_t>(kBatch, e1 - e));
        V bmx = -std::numeric_limits<V>::infinity();
        // The batch's V rows are fetched while its scores are computed, ready for the sum below.
        for (int b = 0; b < nb; ++b) {
          prefetch_row(p.v + static_cast<int64_t>(p.colind[e + b]) * p.ldv, p.Fv);
          bmx = std::max(bmx, s[b] = p.score(i, e + b));
        }
        if (bmx > mx) {
          if (e > e0) {
            const V c = std::exp(mx - bmx);
            l *= c;
            for (int64_t f = 0; f < p.Fv; ++f) acc[f] *= c;
          }
          mx = bmx;
        }
        for (int b = 0; b < nb; ++b) l += (s[b] = std::exp(s[b] - mx));
        const Rows<V, I, true, true> batch{p.v, p.ldv, p.colind + e, s, nb};
        AddSink<V> sink{acc};
        reduce_rows<Op::sum>(batch, 0, nb, p.Fv, sink);
      }
      StoreScaledSink<V> out{o, V(1) / l};
      using S = Simd<V>;
      int64_t f = 0;
      for (; f + S::kLanes <= p.Fv; f += S::kLanes) out.vec(f, S::load(acc + f));
      for (; f < p.Fv; ++f) out.scalar(f, acc[f]);
    }
  });
}

}  // namespace

void csr_attention(const sparseport_attention_args& args, AttentionVariant variant, int threads) {
  detail::dispatch(args.a.index_type, args.q.value_type, [&]<class I, class V>() {
    const Attention<I, V> p(args);
    if (variant == AttentionVariant::onepass)
      onepass(p, threads);
    else
      unfused(p, threads);
  });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
