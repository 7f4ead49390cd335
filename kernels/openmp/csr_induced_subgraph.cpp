// SPDX-License-Identifier: Apache-2.0
// csr_induced_subgraph in two phases, each over the selected vertices in parallel: a vertex map
// (old id -> new id, -1 outside the set), then per selected row the count of kept entries and a
// scan (phase 0), or the kept entries relabelled in A's order (phase 1). The map is rebuilt in each
// phase because the plugin keeps no state between the two calls.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

// Selected rows per dynamic chunk (as csr_slice_rows).
constexpr int kRowChunk = 64;

template <class I, class V>
void induced(const sparseport_induced_subgraph_args& args, int threads) {
  const int64_t n = args.a.rows, s = args.vertices.n;
  const I* rowptr = detail::as<I>(args.a.rowptr);
  const I* colind = detail::as<I>(args.a.colind);
  const V* values = detail::as<V>(args.a.values);
  const I* vert = detail::as<I>(args.vertices.data);
  I* out_rowptr = detail::as_mut<I>(args.out.rowptr);
  std::unique_ptr<I[]> map = scratch<I>(n);
  int64_t total = 0;  // phase 0: the kept entries, checked in int64 before the scan
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) map[i] = I(-1);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < s; ++t) map[vert[t]] = static_cast<I>(t);
    if (args.phase == 0) {
#pragma omp for schedule(dynamic, kRowChunk) reduction(+ : total)
      for (int64_t t = 0; t < s; ++t) {
        I kept = 0;
        for (I e = rowptr[vert[t]]; e < rowptr[vert[t] + 1]; ++e) kept += map[colind[e]] >= 0 ? 1 : 0;
        out_rowptr[t + 1] = kept;
        total += kept;
      }
    } else {
      I* out_colind = detail::as_mut<I>(args.out.colind);
      V* out_values = detail::as_mut<V>(args.out.values);
      const bool copy_values = values != nullptr && out_values != nullptr;
#pragma omp for schedule(dynamic, kRowChunk)
      for (int64_t t = 0; t < s; ++t) {
        I at = out_rowptr[t];
        for (I e = rowptr[vert[t]]; e < rowptr[vert[t] + 1]; ++e) {
          const I to = map[colind[e]];
          if (to < 0) continue;
          out_colind[at] = to;
          if (copy_values) out_values[at] = values[e];
          ++at;
        }
      }
    }
  }
  if (args.phase == 0) {
    detail::check_result_fits<I>(total, "the induced subgraph holds");
    out_rowptr[0] = 0;
    inclusive_scan(out_rowptr + 1, s, threads);
  }
}

}  // namespace

void csr_induced_subgraph(const sparseport_induced_subgraph_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { induced<I, V>(args, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
