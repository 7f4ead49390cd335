// SPDX-License-Identifier: Apache-2.0
// sddmm.team_rows: a team thread per row of A, and for each of its nonzeros a vector reduction of
// the dot product across F. X's row is reused for the whole row (cache on a host, L1 on a GPU).
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
void team_rows(const sparseport_sddmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* x = detail::as<V>(args.x.data);
  const V* y = detail::as<V>(args.y.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t m = args.a.rows, f = args.x.cols, ldx = args.x.ld, ldy = args.y.ld, ldo = args.out.ld;
  Kokkos::parallel_for(
      "sparseport::kokkos::sddmm.team_rows", row_blocks(m, f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < m ? r0 + kRowsPerTeam : m;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
          const V* xi = x + i * ldx;
          for (int64_t e = static_cast<int64_t>(rp[i]); e < static_cast<int64_t>(rp[i + 1]); ++e) {
            const V* yj = y + static_cast<int64_t>(ci[e]) * ldy;
            V dot = V(0);
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(t, f), [&](const int64_t k, V& s) { s += xi[k] * yj[k]; }, dot);
            Kokkos::single(Kokkos::PerThread(t), [&]() { out[e * ldo] = (av != nullptr ? av[e] : V(1)) * dot; });
          }
        });
      });
  Kokkos::fence();
}

}  // namespace

void sddmm(const sparseport_sddmm_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
