// SPDX-License-Identifier: Apache-2.0
// csr_attention.onepass: a team thread per row, one pass over the row with an online softmax (the
// running maximum rescales what was summed so far), so no nnz-long score buffer is needed. Each
// score is a vector reduction across F; the weighted V rows are summed by vector lanes across Fv
// directly in the output row, which the op overwrites anyway. Host spaces: blocks of whole rows
// balanced on rows + nonzeros, scores in batches of 32 as dots in vector registers with K and V
// rows prefetched, one rescale per batch that raises the maximum, V rows summed by plain loops.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Host spaces: entries scored per online-softmax batch (the openmp plugin's onepass: a rescale of
// the output row only when a batch raises the maximum), and how far ahead a K row is prefetched
// (the openmp plugin's kPrefetchDistance: gathered rows, out of order execution alone does not
// reach the next row's loads across the dot, the exps and the V sum).
constexpr int kBatch = 32;
constexpr int64_t kPrefetch = 16;

// Prefetches the first min(n values, 256 bytes) of a row, a cache line at a time (host only).
template <class V>
inline void prefetch_row(const V* p, int64_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = n * static_cast<int64_t>(sizeof(V)) < 256 ? n * static_cast<int64_t>(sizeof(V)) : 256;
  for (int64_t x = 0; x < bytes; x += 64) __builtin_prefetch(c + x);
}

template <class I, class V>
void onepass(const sparseport_attention_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* q = detail::as<V>(args.q.data);
  const V* k = detail::as<V>(args.k.data);
  const V* v = detail::as<V>(args.v.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t m = args.a.rows, f = args.q.cols, fv = args.out.cols;
  const int64_t ldq = args.q.ld, ldk = args.k.ld, ldv = args.v.ld, ldo = args.out.ld;
  const V scale = static_cast<V>(args.scale);
  if constexpr (!kDeviceMemory) {
    // Host spaces (common.hpp says why not the team shape there): blocks of whole rows of about
    // equal rows + nonzeros. Scores a batch of kBatch entries at a time, each a dot in vector
    // registers (host_dot), with the K row kPrefetch entries ahead and the batch's V rows
    // prefetched; the output row is rescaled once per batch that raises the maximum (not once
    // per entry), and the batch's weighted V rows are added by plain, vectorisable loops.
    const int64_t nnz = args.a.nnz, total = m + nnz, blocks = host_block_count(total);
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_attention.onepass", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
          const int64_t r0 = host_row_at(rp, m, host_split(total, b, blocks));
          const int64_t r1 = host_row_at(rp, m, host_split(total, b + 1, blocks));
          V w[kBatch];
          for (int64_t i = r0; i < r1; ++i) {
            V* oi = out + i * ldo;
            const V* qi = q + i * ldq;
            const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
            for (int64_t j = 0; j < fv; ++j) oi[j] = V(0);
            V top = V(0), z = V(0);
            for (int64_t e0 = begin; e0 < end; e0 += kBatch) {
              const int nb = static_cast<int>(end - e0 < kBatch ? end - e0 : kBatch);
              V bmx = V(0);
              for (int t = 0; t < nb; ++t) {
                const int64_t e = e0 + t;
                if (e + kPrefetch < nnz) prefetch_row(k + static_cast<int64_t>(ci[e + kPrefetch]) * ldk, f);
                const int64_t col = static_cast<int64_t>(ci[e]);
                prefetch_row(v + col * ldv, fv);
                w[t] = scale * host_dot(qi, k + col * ldk, f);
                // The first score sets the maximum; a NaN never raises it (and spreads through exp).
                bmx = t == 0 || w[t] > bmx ? w[t] : bmx;
              }
              if (e0 == begin) {
                top = bmx;
              } else if (bmx > top) {
                const V c = exp_of(top - bmx);
                z = z * c;
                for (int64_t j = 0; j < fv; ++j) oi[j] = oi[j] * c;
                top = bmx;
              }
              for (int t = 0; t < nb; ++t) {
                w[t] = exp_of(w[t] - top);
                z = z + w[t];
              }
              for (int t = 0; t < nb; ++t) {
                const V* vj = v + static_cast<int64_t>(ci[e0 + t]) * ldv;
                const V pt = w[t];
                for (int64_t j = 0; j < fv; ++j) oi[j] = oi[j] + pt * vj[j];
              }
            }
            if (end > begin)
              for (int64_t j = 0; j < fv; ++j) oi[j] = oi[j] / z;
          }
        });
    Kokkos::fence();
    return;
  }
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_attention.onepass", row_blocks(m, fv > f ? fv : f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < m ? r0 + kRowsPerTeam : m;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
          V* oi = out + i * ldo;
          const V* qi = q + i * ldq;
          const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, fv), [&](const int64_t j) { oi[j] = V(0); });
          V top = V(0), z = V(0);
          for (int64_t e = begin; e < end; ++e) {
            const int64_t col = static_cast<int64_t>(ci[e]);
            const V* kj = k + col * ldk;
            V dot = V(0);
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(t, f), [&](const int64_t x, V& s) { s += qi[x] * kj[x]; }, dot);
            const V s = scale * dot;
            // The first score sets the maximum; later ones rescale what was summed when they raise it.
            const V next = e == begin || s > top ? s : top;
            const V rescale = e == begin ? V(0) : exp_of(top - next);
            const V p = exp_of(s - next);
            z = z * rescale + p;
            top = next;
            const V* vj = v + col * ldv;
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, fv),
                                 [&](const int64_t j) { oi[j] = oi[j] * rescale + p * vj[j]; });
          }
          if (end > begin)
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, fv), [&](const int64_t j) { oi[j] = oi[j] / z; });
        });
      });
  Kokkos::fence();
}

}  // namespace

void csr_attention(const sparseport_attention_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { onepass<I, V>(args); });
}

}  // namespace sparseport::kokkos
