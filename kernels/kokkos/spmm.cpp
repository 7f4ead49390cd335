// SPDX-License-Identifier: Apache-2.0
// spmm.team_rows: a TeamPolicy over blocks of rows, a team thread per row.
// On a device space, vector lanes across F: each lane walks the row for its columns of C, so the
// lanes of a row read one row of B together (coalesced).
// On a host space (one vector lane) that order would read the row's indices and values once per
// column of C and stride through B by ldb: on Kokkos-OpenMP it ran at 0.06-0.35x the openmp
// plugin. There the row's entries are the outer loop and a block of up to kHostCols columns the
// inner, vectorisable one: each entry is read once per block and B along its rows. The order of
// the additions within a row (entry by entry) is the same in both, so are the results.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "src/core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Columns of C per block on a host space: 64 accumulators (256 or 512 bytes) stay in registers or
// L1 while the row's entries stream by.
constexpr int64_t kHostCols = 64;

template <Op op, class I, class V>
void team_rows_op(const sparseport_spmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* b = detail::as<V>(args.b.data);
  V* c = detail::as_mut<V>(args.c.data);
  const int64_t m = args.a.rows, f = args.c.cols, ldb = args.b.ld, ldc = args.c.ld;
  const V alpha = static_cast<V>(args.alpha), beta = static_cast<V>(args.beta);
  // beta == 0 must not read C: 0 * NaN would leak a NaN (or garbage) C into the result.
  const bool read_c = args.beta != 0.0;
  const bool mean = args.reduce == SPARSEPORT_REDUCE_MEAN;
  if constexpr (!kDeviceMemory) {
    Kokkos::parallel_for(
        "sparseport::kokkos::spmm.team_rows", row_blocks(m, f), KOKKOS_LAMBDA(const Member& t) {
          const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
          const int64_t r1 = r0 + kRowsPerTeam < m ? r0 + kRowsPerTeam : m;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
            const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
            V* crow = c + i * ldc;
            for (int64_t j0 = 0; j0 < f; j0 += kHostCols) {
              const int64_t w = f - j0 < kHostCols ? f - j0 : kHostCols;
              V acc[kHostCols];
              for (int64_t jj = 0; jj < w; ++jj) acc[jj] = V(0);
              for (int64_t e = begin; e < end; ++e) {
                const V a = av != nullptr ? av[e] : V(1);
                const V* brow = b + static_cast<int64_t>(ci[e]) * ldb + j0;
                if (e == begin) {
                  for (int64_t jj = 0; jj < w; ++jj) acc[jj] = a * brow[jj];
                } else {
                  for (int64_t jj = 0; jj < w; ++jj) acc[jj] = fold<op>(acc[jj], a * brow[jj]);
                }
              }
              if (mean && end > begin)
                for (int64_t jj = 0; jj < w; ++jj) acc[jj] = acc[jj] / static_cast<V>(end - begin);
              for (int64_t jj = 0; jj < w; ++jj)
                crow[j0 + jj] = read_c ? alpha * acc[jj] + beta * crow[j0 + jj] : alpha * acc[jj];
            }
          });
        });
    return;
  }
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm.team_rows", row_blocks(m, f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < m ? r0 + kRowsPerTeam : m;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
          const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, f), [&](const int64_t j) {
            V acc = V(0);
            for (int64_t e = begin; e < end; ++e) {
              const V x = (av != nullptr ? av[e] : V(1)) * b[static_cast<int64_t>(ci[e]) * ldb + j];
              acc = e == begin ? x : fold<op>(acc, x);
            }
            if (end == begin) acc = V(0);
            else if (mean) acc = acc / static_cast<V>(end - begin);
            V* cij = c + i * ldc + j;
            *cij = read_c ? alpha * acc + beta * *cij : alpha * acc;
          });
        });
      });
}

// The reduce as a template argument through named templates (nvcc rejects KOKKOS_LAMBDA inside a
// generic lambda); mean runs as sum and divides at the end.
template <class I, class V>
void team_rows(const sparseport_spmm_args& args) {
  if (args.reduce == SPARSEPORT_REDUCE_MAX)
    team_rows_op<Op::max, I, V>(args);
  else if (args.reduce == SPARSEPORT_REDUCE_MIN)
    team_rows_op<Op::min, I, V>(args);
  else
    team_rows_op<Op::sum, I, V>(args);
  Kokkos::fence();
}

}  // namespace

void spmm_team_rows(const sparseport_spmm_args& args) {
  detail::dispatch(args.a.index_type, args.c.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
