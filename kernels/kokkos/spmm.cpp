// SPDX-License-Identifier: Apache-2.0
// spmm.team_rows: a TeamPolicy over blocks of rows, a team thread per row, vector lanes across F.
// Each lane walks the row for its columns of C, so on a GPU the lanes of a row read one row of B
// together (coalesced), and on a host space the lane loop is the vectorisable inner loop.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "src/core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

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
