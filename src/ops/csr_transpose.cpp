// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
CsrMatrix transpose(const Context& ctx, const std::string& w, const CsrView& a, void* perm,
                    const std::string& variant) {
  ops::check_csr(ctx, w, "A", a);
  // perm is ABI 1.5: a plugin built against an older table would leave it unwritten.
  if (perm != nullptr && ctx.plugin().table->abi_version < ((1u << 16) | 5u))
    throw Unsupported(w + ": backend '" + ctx.plugin().name + "' was built against plugin ABI " +
                      std::to_string(ctx.plugin().table->abi_version >> 16) + "." +
                      std::to_string(ctx.plugin().table->abi_version & 0xffffu) +
                      ", which cannot report the transpose's entry positions (1.5 can)");
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
       static_cast<int32_t>(a.index_type), static_cast<int32_t>(a.value_type)},
      perm};
  ops::call_plugin(ctx, SPARSEPORT_OP_CSR_TRANSPOSE, ctx.plugin().table->csr_transpose, args, variant, w);
  return m;
}
}  // namespace ops

CsrMatrix csr_transpose(const Context& ctx, const CsrView& a, const OpOptions& opt) {
  return ops::transpose(ctx, ops::where(ctx, SPARSEPORT_OP_CSR_TRANSPOSE), a, nullptr, opt.variant);
}

}  // namespace sparseport
