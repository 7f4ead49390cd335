// SPDX-License-Identifier: Apache-2.0
// spmm_arg_backward (ABI 1.5): the gradients of spmm max/min through the forward's arg, where each
// C[i,f]'s gradient flows to the one entry that won it.
//  dvalues: rows of A over threads (blocks of whole rows, as spmm.rows); a row's entries belong to
//           its thread, which adds dC[i,f] * B[col(e),f] into dvalues[arg[i,f]] for f in order.
//  dB, three ways, chosen by the cost model of core/arg_backward_path.hpp
//  (SPARSEPORT_ARG_BACKWARD_DB=columns|gather|atomic
//  forces one where it applies: tests, tuning); columns and gather give the same bits:
//   columns: a scatter in A's row order with dB's columns split over threads in whole cache lines;
//           each thread zeroes its columns, then walks every row of A for them. No atomics, each
//           element summed in row order by one thread: the reference's order, the same bits for
//           any thread count; O(m F) work but only F / (a line) threads. Also every deterministic
//           call (SPARSEPORT_EXEC_DETERMINISTIC) without A^T.
//   gather: with A^T (at_rowptr/at_colind/at_perm), rows of A^T over threads; db[j,:] gathers, for
//           each entry t of row j (A's row i, position e), dC[i,f] * A.val[e] where arg[i,f] == e.
//           No atomics and the same order (so the same bits), every thread busy, but O(nnz F) work.
//   atomic: rows of A over threads with atomic adds (an order that varies from run to run).
// Every sum starts from +0 and adds in the reference's order, so double results match it bitwise.

#include "kernels/openmp/common.hpp"
#include "core/arg_backward_path.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

template <class I, class V>
struct Backward {
  int64_t m = 0, k = 0, F = 0, nnz = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const V* values = nullptr;  // null: a pattern, every value 1
  const V* b = nullptr;
  int64_t ldb = 0;
  const V* dc = nullptr;
  int64_t ldc = 0;
  const I* arg = nullptr;
  int64_t arg_ld = 0;

  V weight(int64_t e) const { return values != nullptr ? values[e] : V(1); }
};

// dvalues[e] = sum over the columns f that entry e won of dC[i,f] * B[col(e),f], in f order. arg
// entries outside row i are not this row's (the forward never writes one) and are skipped, so a
// thread writes only its own rows' entries.
template <class I, class V>
void dvalues(const Backward<I, V>& p, V* dv, int threads) {
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      if (e0 == e1) continue;
      std::fill(dv + e0, dv + e1, V(0));
      const I* ar = p.arg + i * p.arg_ld;
      const V* g = p.dc + i * p.ldc;
      for (int64_t f = 0; f < p.F; ++f) {
        const int64_t e = static_cast<int64_t>(ar[f]);
        if (e < e0 || e >= e1) continue;
        dv[e] += g[f] * p.b[static_cast<int64_t>(p.colind[e]) * p.ldb + f];
      }
    }
  });
}

// db[j,:] from row j of A^T: entry t is A's entry at_perm[t] in row at_colind[t], in A's row order.
// The select (not a multiply by a 0/1 mask) keeps db's bits where the entry did not win: no -0 to +0,
// no NaN from a dC element that went elsewhere.
template <class I, class V>
void db_gather(const Backward<I, V>& p, const I* at_rowptr, const I* at_colind, const I* at_perm, V* db, int64_t lddb,
               int threads) {
  parallel_row_blocks(threads, at_rowptr, p.k, p.nnz, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      V* d = db + j * lddb;
      fill_row(d, p.F, V(0));
      for (int64_t t = at_rowptr[j]; t < at_rowptr[j + 1]; ++t) {
        const I e = at_perm[t];
        const int64_t i = static_cast<int64_t>(at_colind[t]);
        const V w = p.weight(static_cast<int64_t>(e));
        const I* ar = p.arg + i * p.arg_ld;
        const V* g = p.dc + i * p.ldc;
        for (int64_t f = 0; f < p.F; ++f) d[f] = ar[f] == e ? d[f] + g[f] * w : d[f];
      }
    }
  });
}

// dB's columns cut into `parts` parts of `chunk` columns, a whole number of 64-byte lines each, so
// no two threads write one line of a row (when db's rows start on a line; otherwise at most the two
// lines at a part's edges are shared).
struct ColumnSplit {
  int64_t chunk = 0, parts = 0;
};

template <class V>
ColumnSplit column_split(int64_t F, int threads) {
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(V));
  const int64_t per_thread = (F + threads - 1) / threads;
  const int64_t chunk = std::max<int64_t>(kLine, (per_thread + kLine - 1) / kLine * kLine);
  return {chunk, (F + chunk - 1) / chunk};
}

// The scatter in A's row order, a part of dB's columns per thread: each zeroes its columns of dB,
// then walks every row of A for them. Every element is summed by one thread in row order, so the
// bits are the gather's, for any thread count; the work is O(m F) where the gather's is O(nnz F).
template <class I, class V>
void db_columns(const Backward<I, V>& p, V* db, int64_t lddb, ColumnSplit split) {
#pragma omp parallel for num_threads(static_cast<int>(split.parts)) schedule(static, 1)
  for (int64_t q = 0; q < split.parts; ++q) {
    const int64_t f0 = q * split.chunk, f1 = std::min(p.F, f0 + split.chunk);
    for (int64_t j = 0; j < p.k; ++j) std::fill(db + j * lddb + f0, db + j * lddb + f1, V(0));
    for (int64_t i = 0; i < p.m; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      if (e0 == e1) continue;
      const I* ar = p.arg + i * p.arg_ld;
      const V* g = p.dc + i * p.ldc;
      for (int64_t f = f0; f < f1; ++f) {
        const int64_t e = static_cast<int64_t>(ar[f]);
        if (e < e0 || e >= e1) continue;
        db[static_cast<int64_t>(p.colind[e]) * lddb + f] += g[f] * p.weight(e);
      }
    }
  }
}

// The scatter with rows of A over threads and atomic adds (the order varies from run to run).
template <class I, class V>
void db_atomic(const Backward<I, V>& p, V* db, int64_t lddb, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j = 0; j < p.k; ++j) fill_row(db + j * lddb, p.F, V(0));
  parallel_row_blocks(threads, p.rowptr, p.m, p.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = p.rowptr[i], e1 = p.rowptr[i + 1];
      if (e0 == e1) continue;
      const I* ar = p.arg + i * p.arg_ld;
      const V* g = p.dc + i * p.ldc;
      for (int64_t f = 0; f < p.F; ++f) {
        const int64_t e = static_cast<int64_t>(ar[f]);
        if (e < e0 || e >= e1) continue;
        std::atomic_ref<V>(db[static_cast<int64_t>(p.colind[e]) * lddb + f])
            .fetch_add(g[f] * p.weight(e), std::memory_order_relaxed);
      }
    }
  });
}

template <class I, class V>
void run(const sparseport_spmm_arg_backward_args& args, int threads, bool deterministic) {
  Backward<I, V> p;
  p.m = args.a.rows, p.k = args.a.cols, p.F = args.dc.cols, p.nnz = args.a.nnz;
  p.rowptr = detail::as<I>(args.a.rowptr);
  p.colind = detail::as<I>(args.a.colind);
  p.values = detail::as<V>(args.a.values);
  p.b = detail::as<V>(args.b.data), p.ldb = args.b.ld;
  p.dc = detail::as<V>(args.dc.data), p.ldc = args.dc.ld;
  p.arg = detail::as<I>(args.arg), p.arg_ld = args.arg_ld;
  if (args.dvalues.data != nullptr) dvalues(p, detail::as_mut<V>(args.dvalues.data), threads);
  if (args.db.data == nullptr) return;
  V* db = detail::as_mut<V>(args.db.data);
  if (p.F == 0) return;  // dB has no columns
  const bool have_at = args.at_rowptr != nullptr && args.at_colind != nullptr && args.at_perm != nullptr;
  const ColumnSplit split = column_split<V>(p.F, threads);
  switch (detail::pick_arg_db_path("openmp", p.m, p.nnz, threads, static_cast<double>(split.parts), have_at,
                                    deterministic)) {
    case detail::ArgDbPath::columns: return db_columns(p, db, args.db.ld, split);
    case detail::ArgDbPath::gather:
      return db_gather(p, detail::as<I>(args.at_rowptr), detail::as<I>(args.at_colind), detail::as<I>(args.at_perm),
                       db, args.db.ld, threads);
    case detail::ArgDbPath::atomic: return db_atomic(p, db, args.db.ld, threads);
  }
}

}  // namespace

void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, int threads, bool deterministic) {
  detail::dispatch(args.a.index_type, args.dc.value_type,
                   [&]<class I, class V>() { run<I, V>(args, threads, deterministic); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
