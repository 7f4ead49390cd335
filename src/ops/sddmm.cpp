// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

void sddmm(const Context& ctx, const CsrView& a, const DenseView& x, const DenseView& y, const DenseMutView& out,
           const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SDDMM);
  ops::check_csr(ctx, w, "A", a);
  ops::check_dense(w, "X", x, a.rows, x.cols, "need X.rows == A.rows");
  ops::check_dense(w, "Y", y, a.cols, x.cols, "need Y.rows == A.cols and Y.cols == X.cols");
  ops::check_dense(w, "out", out, a.nnz, 1, "need one value per nonzero of A");
  ops::check_same_type(w, "X", x.value_type, a.value_type);
  ops::check_same_type(w, "Y", y.value_type, a.value_type);
  ops::check_same_type(w, "out", out.value_type, a.value_type);
  if (a.nnz == 0) return;
  const sparseport_sddmm_args args{ops::to_abi(a), ops::to_abi(x), ops::to_abi(y), ops::to_abi(out)};
  ops::call_plugin(ctx, SPARSEPORT_OP_SDDMM, ctx.plugin().table->sddmm, args, opt.variant, w);
}

}  // namespace sparseport
