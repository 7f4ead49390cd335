// SPDX-License-Identifier: Apache-2.0
// csr_softmax (ABI 1.6): csr_attention_backward's weights, pass 2 of csr_attention.unfused on its
// own: blocks of whole rows over threads (equal rows + entries, as spmm.rows), each row by one
// thread in the forward's arithmetic: s = scale * score in the value type, the row's maximum as
// the shift, exp and the sum in the value type, the weights times 1 / sum. So a NaN score, or a row
// of all -inf or with a +inf, makes the row NaN as in the forward; the same bits for any thread
// count.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

template <class I, class V>
void softmax_rows(const sparseport_csr_softmax_args& args, int threads) {
  const I* rowptr = detail::as<I>(args.a.rowptr);
  V* p = detail::as_mut<V>(args.scores);
  const V scale = static_cast<V>(args.scale);
  parallel_row_blocks(threads, rowptr, args.a.rows, args.a.nnz, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t e0 = rowptr[i], e1 = rowptr[i + 1];
      if (e0 == e1) continue;
      V mx = p[e0] = scale * p[e0];
      for (int64_t e = e0 + 1; e < e1; ++e) mx = std::max(mx, p[e] = scale * p[e]);
      V sum = 0;
      for (int64_t e = e0; e < e1; ++e) sum += (p[e] = std::exp(p[e] - mx));
      const V inv = V(1) / sum;
      for (int64_t e = e0; e < e1; ++e) p[e] *= inv;
    }
  });
}

}  // namespace

void csr_softmax(const sparseport_csr_softmax_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { softmax_rows<I, V>(args, threads); });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
