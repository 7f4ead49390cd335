// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
std::optional<sparseport_spmm_args> spmm_args(const Context& ctx, const std::string& w, const CsrView& a,
                                              const DenseView& b, const DenseMutView& c, const SpmmOptions& opt,
                                              bool structure) {
  if (structure) check_csr(ctx, w, "A", a);
  check_dense(w, "B", b, a.cols, b.cols, "need B.rows == A.cols");
  check_dense(w, "C", c, a.rows, b.cols, "need C.rows == A.rows and C.cols == B.cols");
  check_same_type(w, "B", b.value_type, a.value_type);
  check_same_type(w, "C", c.value_type, a.value_type);
  check_reduce(w, opt.reduce);
  if (c.rows == 0 || c.cols == 0) return std::nullopt;
  return sparseport_spmm_args{to_abi(a), to_abi(b), to_abi(c), static_cast<int32_t>(opt.reduce), opt.alpha, opt.beta,
                              nullptr, 0};
}
}  // namespace ops

void spmm(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const SpmmOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SPMM);
  if (const auto args = ops::spmm_args(ctx, w, a, b, c, opt, true))
    ops::call_plugin(ctx, SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, *args, opt.variant, w);
}

}  // namespace sparseport
