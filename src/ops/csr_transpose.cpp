// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

CsrMatrix csr_transpose(const Context& ctx, const CsrView& a, const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_TRANSPOSE);
  ops::check_csr(ctx, w, "A", a);
  CsrMatrix m;
  m.rows = a.cols;
  m.cols = a.rows;
  m.nnz = a.nnz;
  m.index_type = a.index_type;
  m.value_type = a.value_type;
  m.pattern = a.is_pattern();
  const size_t isz = static_cast<size_t>(size_of(a.index_type));
  m.rowptr = ops::allocate_result(ctx, w, "the result's rowptr", a.cols + 1, isz);
  m.colind = ops::allocate_result(ctx, w, "the result's colind", a.nnz, isz);
  if (!m.pattern)
    m.values = ops::allocate_result(ctx, w, "the result's values", a.nnz, static_cast<size_t>(size_of(a.value_type)));
  const sparseport_transpose_args args{
      ops::to_abi(a),
      {m.rows, m.cols, m.nnz, m.rowptr.data(), m.colind.data(), m.pattern ? nullptr : m.values.data(),
       static_cast<int32_t>(a.index_type), static_cast<int32_t>(a.value_type)}};
  ops::call_plugin(ctx, SPARSEPORT_OP_CSR_TRANSPOSE, ctx.plugin().table->csr_transpose, args, opt.variant, w);
  return m;
}

}  // namespace sparseport
