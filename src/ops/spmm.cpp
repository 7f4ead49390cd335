// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

void spmm(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const SpmmOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SPMM);
  ops::check_csr(ctx, w, "A", a);
  ops::check_dense(w, "B", b, a.cols, b.cols, "need B.rows == A.cols");
  ops::check_dense(w, "C", c, a.rows, b.cols, "need C.rows == A.rows and C.cols == B.cols");
  ops::check_same_type(w, "B", b.value_type, a.value_type);
  ops::check_same_type(w, "C", c.value_type, a.value_type);
  ops::check_reduce(w, opt.reduce);
  if (c.rows == 0 || c.cols == 0) return;
  const sparseport_spmm_args args{ops::to_abi(a), ops::to_abi(b), ops::to_abi(c), static_cast<int32_t>(opt.reduce),
                                  opt.alpha, opt.beta};
  ops::call_plugin(ctx, SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, args, opt.variant, w);
}

}  // namespace sparseport
