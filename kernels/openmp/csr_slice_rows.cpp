// SPDX-License-Identifier: Apache-2.0
// csr_slice_rows (two phases: row lengths and a parallel scan, then a parallel copy of each
// selected row) and csr_slice_rows_dense (each selected row zeroed and scattered by one thread,
// so the dense row is still in cache when its entries land).
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

// Selected rows per dynamic chunk: rows differ in length, and a chunk of 64 keeps the scheduling
// cost small against copying 64 rows.
constexpr int kRowChunk = 64;

template <class I, class V>
void slice(const sparseport_slice_rows_args& args, int threads) {
  const int64_t s = args.rows.n;
  const I* rowptr = detail::as<I>(args.a.rowptr);
  const I* sel = detail::as<I>(args.rows.data);
  I* out_rowptr = detail::as_mut<I>(args.out.rowptr);
  if (args.phase == 0) {
    out_rowptr[0] = 0;
    // Each length fits I; their sum (repeated rows) may not, so it is checked in int64 before the scan.
    int64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
    for (int64_t t = 0; t < s; ++t) {
      const I len = rowptr[sel[t] + 1] - rowptr[sel[t]];
      out_rowptr[t + 1] = len;
      total += len;
    }
    detail::check_result_fits<I>(total, "the selected rows hold");
    inclusive_scan(out_rowptr + 1, s, threads);
    return;
  }
  const I* colind = detail::as<I>(args.a.colind);
  const V* values = detail::as<V>(args.a.values);
  I* out_colind = detail::as_mut<I>(args.out.colind);
  V* out_values = detail::as_mut<V>(args.out.values);
#pragma omp parallel for num_threads(threads) schedule(dynamic, kRowChunk)
  for (int64_t t = 0; t < s; ++t) {
    const I b = rowptr[sel[t]], e = rowptr[sel[t] + 1];
    std::copy(colind + b, colind + e, out_colind + out_rowptr[t]);
    if (values != nullptr && out_values != nullptr) std::copy(values + b, values + e, out_values + out_rowptr[t]);
  }
}

template <class I, class V>
void slice_dense(const sparseport_slice_rows_dense_args& args, int threads) {
  const int64_t s = args.rows.n, cols = args.out.cols, ld = args.out.ld;
  const I* rowptr = detail::as<I>(args.a.rowptr);
  const I* colind = detail::as<I>(args.a.colind);
  const V* values = detail::as<V>(args.a.values);
  const I* sel = detail::as<I>(args.rows.data);
  V* out = detail::as_mut<V>(args.out.data);
#pragma omp parallel for num_threads(threads) schedule(dynamic, kRowChunk)
  for (int64_t t = 0; t < s; ++t) {
    V* o = out + t * ld;
    fill_row(o, cols, V(0));
    const I b = rowptr[sel[t]], e = rowptr[sel[t] + 1];
    if (values != nullptr)
      for (I x = b; x < e; ++x) o[colind[x]] += values[x];
    else
      for (I x = b; x < e; ++x) o[colind[x]] += V(1);
  }
}

}  // namespace

void csr_slice_rows(const sparseport_slice_rows_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { slice<I, V>(args, threads); });
}

void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type,
                   [&]<class I, class V>() { slice_dense<I, V>(args, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
