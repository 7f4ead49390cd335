// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
std::optional<sparseport_sddmm_args> sddmm_args(const Context& ctx, const std::string& w, const CsrView& a,
                                                const DenseView& x, const DenseView& y, const DenseMutView& out,
                                                bool structure) {
  if (structure) check_csr(ctx, w, "A", a);
  check_dense(w, "X", x, a.rows, x.cols, "need X.rows == A.rows");
  check_dense(w, "Y", y, a.cols, x.cols, "need Y.rows == A.cols and Y.cols == X.cols");
  check_dense(w, "out", out, a.nnz, 1, "need one value per nonzero of A");
  check_same_type(w, "X", x.value_type, a.value_type);
  check_same_type(w, "Y", y.value_type, a.value_type);
  check_same_type(w, "out", out.value_type, a.value_type);
  if (a.nnz == 0) return std::nullopt;
  return sparseport_sddmm_args{to_abi(a), to_abi(x), to_abi(y), to_abi(out)};
}
}  // namespace ops

void sddmm(const Context& ctx, const CsrView& a, const DenseView& x, const DenseView& y, const DenseMutView& out,
           const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SDDMM);
  ops::call_csr_op(ctx, ctx.exec(), SPARSEPORT_OP_SDDMM, ctx.plugin().table->sddmm, a, opt.variant, w,
                   [&](bool structure) { return ops::sddmm_args(ctx, w, a, x, y, out, structure); });
}

}  // namespace sparseport
