// SPDX-License-Identifier: Apache-2.0
// sddmm.team_rows: a team thread per row of A, and for each of its nonzeros a vector reduction of
// the dot product across F. X's row is reused for the whole row (cache on a host, L1 on a GPU).
// Host spaces: blocks of equal nonzero counts, dots in vector registers.
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
  if constexpr (!kDeviceMemory) {
    // Host spaces (common.hpp says why not the team shape there): blocks of equal nonzero counts
    // (every output is its own, so a row may be shared and a hub row is not one thread's), each
    // dot in vector registers (host_dot); X's row stays in cache along its row's nonzeros.
    const int64_t nnz = args.a.nnz, blocks = host_block_count(nnz);
    Kokkos::parallel_for(
        "sparseport::kokkos::sddmm.team_rows", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
          const int64_t z0 = host_split(nnz, b, blocks), z1 = host_split(nnz, b + 1, blocks);
          if (z0 >= z1) return;
          // The last row whose start is <= z0 holds z0 (empty rows before it share its start).
          int64_t e = z0;
          for (int64_t i = lower_bound(rp, m + 1, z0 + 1) - 1; e < z1; ++i) {
            const V* xi = x + i * ldx;
            const int64_t end = static_cast<int64_t>(rp[i + 1]) < z1 ? static_cast<int64_t>(rp[i + 1]) : z1;
            for (; e < end; ++e) {
              const V dot = host_dot(xi, y + static_cast<int64_t>(ci[e]) * ldy, f);
              out[e * ldo] = (av != nullptr ? av[e] : V(1)) * dot;
            }
          }
        });
    Kokkos::fence();
    return;
  }
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
