// SPDX-License-Identifier: Apache-2.0
// csr_attention.onepass: a team thread per row, one pass over the row with an online softmax (the
// running maximum rescales what was summed so far), so no nnz-long score buffer is needed. Each
// score is a vector reduction across F; the weighted V rows are summed by vector lanes across Fv
// directly in the output row, which the op overwrites anyway. Host spaces: blocks of whole rows
// balanced on rows + nonzeros, scores as dots in vector registers, V rows summed by plain loops.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

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
    // equal rows + nonzeros; the same online softmax, each score a dot in vector registers
    // (host_dot) and the output row updated by a plain, vectorisable loop over Fv.
    const int64_t nnz = args.a.nnz, total = m + nnz, blocks = host_block_count(total);
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_attention.onepass", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
          const int64_t r0 = host_row_at(rp, m, host_split(total, b, blocks));
          const int64_t r1 = host_row_at(rp, m, host_split(total, b + 1, blocks));
          for (int64_t i = r0; i < r1; ++i) {
            V* oi = out + i * ldo;
            const V* qi = q + i * ldq;
            const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
            for (int64_t j = 0; j < fv; ++j) oi[j] = V(0);
            V top = V(0), z = V(0);
            for (int64_t e = begin; e < end; ++e) {
              const int64_t col = static_cast<int64_t>(ci[e]);
              const V s = scale * host_dot(qi, k + col * ldk, f);
              const V next = e == begin || s > top ? s : top;
              const V rescale = e == begin ? V(0) : exp_of(top - next);
              const V p = exp_of(s - next);
              z = z * rescale + p;
              top = next;
              const V* vj = v + col * ldv;
              for (int64_t j = 0; j < fv; ++j) oi[j] = oi[j] * rescale + p * vj[j];
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
