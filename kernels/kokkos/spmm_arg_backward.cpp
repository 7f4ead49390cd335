// SPDX-License-Identifier: Apache-2.0
// spmm_arg_backward (ABI 1.5): the gradients of spmm max/min through the forward's arg, where each
// C[i,f]'s gradient flows to the one entry that won it.
//  dvalues: a thread per row of A; it owns the row's entries and adds dC[i,f] * B[col(e),f] into
//           dvalues[arg[i,f]] for f in order. No atomics, the reference's order.
//  dB, three ways (pick_db chooses; columns and gather give the same bits):
//   gather:  with A^T (at_rowptr/at_colind/at_perm), a team thread per row j of A^T (vector lanes
//            across F on a device, the row's entries outside and F inside on a host), gathering for
//            each entry t (A's row i, position e) dC[i,f] * A.val[e] where arg[i,f] == e. No
//            atomics, terms in A's row order: deterministic on every space, but O(nnz F) work.
//   columns: a scatter in A's row order over blocks of dB's columns (a 64-byte line of them on a
//            host, one column per thread on a device): no atomics, the gather's order and bits, in
//            O(m F) work but parallel only over F. Deterministic calls without A^T take it.
//   atomic:  Kokkos::atomic_add over rows of A (the order varies on parallel spaces).
// Every sum starts from +0 and adds in the reference's order, so in double the deterministic paths
// match it bitwise.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/arg_backward_path.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
struct Backward {
  int64_t m = 0, k = 0, f = 0;
  const I* rp = nullptr;
  const I* ci = nullptr;
  const V* av = nullptr;  // null: a pattern, every value 1
  const V* b = nullptr;
  int64_t ldb = 0;
  const V* dc = nullptr;
  int64_t ldc = 0;
  const I* arg = nullptr;
  int64_t arg_ld = 0;
  V* db = nullptr;
  int64_t lddb = 0;
};

// The position arg[i, j] names when it is an entry of row i, else -1 (the forward never writes
// another row's entry; skipping one keeps every write inside the row's owner).
template <class I, class V>
KOKKOS_INLINE_FUNCTION int64_t won(const Backward<I, V>& p, int64_t i, int64_t j) {
  const int64_t e = static_cast<int64_t>(p.arg[i * p.arg_ld + j]);
  return e >= static_cast<int64_t>(p.rp[i]) && e < static_cast<int64_t>(p.rp[i + 1]) ? e : -1;
}

template <class I, class V>
void dvalues(const Backward<I, V>& p, V* dv) {
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm_arg_backward.dvalues", Range(0, p.m), KOKKOS_LAMBDA(const int64_t i) {
        for (int64_t e = static_cast<int64_t>(p.rp[i]); e < static_cast<int64_t>(p.rp[i + 1]); ++e) dv[e] = V(0);
        for (int64_t j = 0; j < p.f; ++j) {
          const int64_t e = won(p, i, j);
          if (e >= 0) dv[e] += p.dc[i * p.ldc + j] * p.b[static_cast<int64_t>(p.ci[e]) * p.ldb + j];
        }
      });
}

template <class I, class V>
void db_gather(const Backward<I, V>& p, const I* at_rp, const I* at_ci, const I* at_perm) {
  if constexpr (!kDeviceMemory) {
    // Dynamic: a column of A held by many rows (a hub of A^T) should not hold up its neighbours.
    using Dynamic = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<int64_t>>;
    Kokkos::parallel_for(
        "sparseport::kokkos::spmm_arg_backward.db_gather", Dynamic(0, p.k), KOKKOS_LAMBDA(const int64_t j) {
          V* d = p.db + j * p.lddb;
          for (int64_t jj = 0; jj < p.f; ++jj) d[jj] = V(0);
          for (int64_t t = static_cast<int64_t>(at_rp[j]); t < static_cast<int64_t>(at_rp[j + 1]); ++t) {
            const I e = at_perm[t];
            const int64_t i = static_cast<int64_t>(at_ci[t]);
            const V w = p.av != nullptr ? p.av[static_cast<int64_t>(e)] : V(1);
            const I* ar = p.arg + i * p.arg_ld;
            const V* g = p.dc + i * p.ldc;
            // A select, not a multiply by a 0/1 mask: d keeps its bits where e did not win.
            for (int64_t jj = 0; jj < p.f; ++jj) d[jj] = ar[jj] == e ? d[jj] + g[jj] * w : d[jj];
          }
        });
    return;
  }
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm_arg_backward.db_gather", row_blocks(p.k, p.f), KOKKOS_LAMBDA(const Member& team) {
        const int64_t r0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < p.k ? r0 + kRowsPerTeam : p.k;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int64_t j) {
          const int64_t t0 = static_cast<int64_t>(at_rp[j]), t1 = static_cast<int64_t>(at_rp[j + 1]);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.f), [&](const int64_t jj) {
            V acc = V(0);
            for (int64_t t = t0; t < t1; ++t) {
              const I e = at_perm[t];
              const int64_t i = static_cast<int64_t>(at_ci[t]);
              if (p.arg[i * p.arg_ld + jj] == e)
                acc += p.dc[i * p.ldc + jj] * (p.av != nullptr ? p.av[static_cast<int64_t>(e)] : V(1));
            }
            p.db[j * p.lddb + jj] = acc;
          });
        });
      });
}

// The scatter in A's row order over blocks of dB's columns: a work item zeroes its columns of dB,
// then walks every row of A for them. No atomics, every element summed in row order by one thread:
// the gather's order and bits. Host spaces: blocks of a 64-byte line (a thread reads whole lines of
// arg and dC); device spaces: one column per thread (neighbouring threads read neighbouring columns).
template <class I, class V>
void db_columns(const Backward<I, V>& p, int64_t width) {
  const int64_t blocks = (p.f + width - 1) / width;
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm_arg_backward.db_columns", Range(0, blocks), KOKKOS_LAMBDA(const int64_t q) {
        const int64_t f0 = q * width, f1 = f0 + width < p.f ? f0 + width : p.f;
        for (int64_t j = 0; j < p.k; ++j)
          for (int64_t jj = f0; jj < f1; ++jj) p.db[j * p.lddb + jj] = V(0);
        for (int64_t i = 0; i < p.m; ++i)
          for (int64_t jj = f0; jj < f1; ++jj) {
            const int64_t e = won(p, i, jj);
            if (e < 0) continue;
            const V w = p.av != nullptr ? p.av[e] : V(1);
            p.db[static_cast<int64_t>(p.ci[e]) * p.lddb + jj] += p.dc[i * p.ldc + jj] * w;
          }
      });
}

// The scatter over rows of A with Kokkos::atomic_add (the order varies on parallel spaces).
template <class I, class V>
void db_atomic(const Backward<I, V>& p) {
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm_arg_backward.db_zero", row_blocks(p.k, p.f), KOKKOS_LAMBDA(const Member& team) {
        const int64_t r0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < p.k ? r0 + kRowsPerTeam : p.k;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int64_t j) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.f), [&](const int64_t jj) { p.db[j * p.lddb + jj] = V(0); });
        });
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm_arg_backward.db_scatter", row_blocks(p.m, p.f), KOKKOS_LAMBDA(const Member& team) {
        const int64_t r0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < p.m ? r0 + kRowsPerTeam : p.m;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int64_t i) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, p.f), [&](const int64_t jj) {
            const int64_t e = won(p, i, jj);
            if (e < 0) return;
            const V w = p.av != nullptr ? p.av[e] : V(1);
            Kokkos::atomic_add(p.db + static_cast<int64_t>(p.ci[e]) * p.lddb + jj, p.dc[i * p.ldc + jj] * w);
          });
        });
      });
}

// Which dB path. Device spaces: the gather with A^T, else the column scatter when deterministic,
// else the atomic one (not measured against each other yet). Host spaces: the openmp plugin's cost
// model (core/arg_backward_path.hpp), with the space's concurrency as the threads.
inline detail::ArgDbPath pick_db(int64_t m, int64_t nnz, int64_t blocks, bool have_at, bool deterministic) {
  using detail::ArgDbPath;
  const char* forced = std::getenv("SPARSEPORT_ARG_BACKWARD_DB");
  if (kDeviceMemory && (forced == nullptr || *forced == '\0'))
    return have_at ? ArgDbPath::gather : deterministic ? ArgDbPath::columns : ArgDbPath::atomic;
  const int64_t threads = std::max<int64_t>(1, ExecSpace().concurrency());
  return detail::pick_arg_db_path("kokkos", m, nnz, static_cast<double>(threads),
                                  static_cast<double>(std::min<int64_t>(blocks, threads)), have_at, deterministic);
}

template <class I, class V>
void run(const sparseport_spmm_arg_backward_args& args, bool deterministic) {
  Backward<I, V> p;
  p.m = args.a.rows, p.k = args.a.cols, p.f = args.dc.cols;
  p.rp = detail::as<I>(args.a.rowptr);
  p.ci = detail::as<I>(args.a.colind);
  p.av = detail::as<V>(args.a.values);
  p.b = detail::as<V>(args.b.data), p.ldb = args.b.ld;
  p.dc = detail::as<V>(args.dc.data), p.ldc = args.dc.ld;
  p.arg = detail::as<I>(args.arg), p.arg_ld = args.arg_ld;
  p.db = detail::as_mut<V>(args.db.data), p.lddb = args.db.ld;
  if (args.dvalues.data != nullptr) dvalues(p, detail::as_mut<V>(args.dvalues.data));
  if (p.db != nullptr && p.k > 0 && p.f > 0) {
    const bool have_at = args.at_rowptr != nullptr && args.at_colind != nullptr && args.at_perm != nullptr;
    const int64_t width = kDeviceMemory ? 1 : std::max<int64_t>(1, 64 / static_cast<int64_t>(sizeof(V)));
    switch (pick_db(p.m, args.a.nnz, (p.f + width - 1) / width, have_at, deterministic)) {
      case detail::ArgDbPath::columns: db_columns(p, width); break;
      case detail::ArgDbPath::gather:
        db_gather(p, detail::as<I>(args.at_rowptr), detail::as<I>(args.at_colind), detail::as<I>(args.at_perm));
        break;
      case detail::ArgDbPath::atomic: db_atomic(p); break;
    }
  }
  end_op();
}

}  // namespace

void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, bool deterministic) {
  detail::dispatch(args.a.index_type, args.dc.value_type, [&]<class I, class V>() { run<I, V>(args, deterministic); });
}

}  // namespace sparseport::kokkos
