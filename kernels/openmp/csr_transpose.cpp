// SPDX-License-Identifier: Apache-2.0
// csr_transpose: a stable parallel counting sort by column. Each thread counts the columns of an
// equal share of the nonzeros (whole rows), the counts become per-(column, thread) offsets, and
// each thread places its rows in order, so within a result row the entries keep A's row order.
// With args.perm (ABI 1.5) each placed entry also records its position in A.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

template <class I, class V>
void transpose(const sparseport_transpose_args& args, int threads) {
  const int64_t m = args.a.rows, k = args.a.cols, nnz = args.a.nnz;
  const I* rowptr = detail::as<I>(args.a.rowptr);
  const I* colind = detail::as<I>(args.a.colind);
  const V* values = detail::as<V>(args.a.values);
  I* out_rowptr = detail::as_mut<I>(args.out.rowptr);
  I* out_colind = detail::as_mut<I>(args.out.colind);
  V* out_values = detail::as_mut<V>(args.out.values);
  const bool copy_values = values != nullptr && out_values != nullptr;
  I* perm = detail::as_mut<I>(args.perm);  // ABI 1.5: where each out entry came from in A, or null
  // Per-thread column counts, later offsets: k per thread, one thread's counts contiguous.
  std::unique_ptr<int64_t[]> count = scratch<int64_t>(int64_t{threads} * k);
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    // Whole rows per thread, balanced on rows + nonzeros (the merge path's end points).
    const int64_t total = m + nnz;
    const int64_t r0 = merge_path_search(split_point(total, t, nt), rowptr, m, nnz).row;
    const int64_t r1 = merge_path_search(split_point(total, t + 1, nt), rowptr, m, nnz).row;
    int64_t* c = count.get() + t * k;
    std::fill(c, c + k, int64_t{0});
    for (int64_t e = rowptr[r0]; e < rowptr[r1]; ++e) ++c[colind[e]];
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t j = 0; j < k; ++j) {
      int64_t total_j = 0;
      for (int u = 0; u < nt; ++u) total_j += count[u * k + j];
      out_rowptr[j + 1] = static_cast<I>(total_j);
    }
#pragma omp single
    {
      out_rowptr[0] = 0;
      for (int64_t j = 0; j < k; ++j) out_rowptr[j + 1] += out_rowptr[j];
    }
#pragma omp for schedule(static)
    for (int64_t j = 0; j < k; ++j) {
      int64_t at = out_rowptr[j];
      for (int u = 0; u < nt; ++u) {
        const int64_t n = count[u * k + j];
        count[u * k + j] = at;
        at += n;
      }
    }
    for (int64_t i = r0; i < r1; ++i)
      for (I e = rowptr[i]; e < rowptr[i + 1]; ++e) {
        const int64_t at = c[colind[e]]++;
        out_colind[at] = static_cast<I>(i);
        if (copy_values) out_values[at] = values[e];
        if (perm != nullptr) perm[at] = e;
      }
  }
}

}  // namespace

void csr_transpose(const sparseport_transpose_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { transpose<I, V>(args, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
