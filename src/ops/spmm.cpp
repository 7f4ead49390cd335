// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
namespace {

// The dense operands' names and rules in messages: spmm's B and C, spmv's x and y.
struct DenseNames {
  const char *b, *b_rule, *c, *c_rule;
};
constexpr DenseNames kSpmmNames{"B", "need B.rows == A.cols", "C", "need C.rows == A.rows and C.cols == B.cols"};
constexpr DenseNames kSpmvNames{"x", "need x.rows == A.cols, one column", "y", "need y.rows == A.rows, one column"};

// spmm's checks and ABI arguments; F: the width B must have (spmv: 1).
std::optional<sparseport_spmm_args> checked_args(const Context& ctx, const std::string& w, const CsrView& a,
                                                 const DenseView& b, const DenseMutView& c, const SpmmOptions& opt,
                                                 bool structure, const DenseNames& n, int64_t F) {
  if (structure) check_csr(ctx, w, "A", a);
  check_dense(w, n.b, b, a.cols, F, n.b_rule);
  check_dense(w, n.c, c, a.rows, F, n.c_rule);
  check_same_type(w, n.b, b.value_type, a.value_type);
  check_same_type(w, n.c, c.value_type, a.value_type);
  check_reduce(w, opt.reduce);
  if (c.rows == 0 || c.cols == 0) return std::nullopt;
  return sparseport_spmm_args{to_abi(a), to_abi(b), to_abi(c), static_cast<int32_t>(opt.reduce), opt.alpha, opt.beta,
                              nullptr, 0};
}

}  // namespace

std::optional<sparseport_spmm_args> spmm_args(const Context& ctx, const std::string& w, const CsrView& a,
                                              const DenseView& b, const DenseMutView& c, const SpmmOptions& opt,
                                              bool structure) {
  return checked_args(ctx, w, a, b, c, opt, structure, kSpmmNames, b.cols);
}
}  // namespace ops

void spmm(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const SpmmOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SPMM);
  ops::call_csr_op(ctx, ops::exec_for(ctx, opt.allow_tf32), SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, a,
                   opt.variant, w, [&](bool structure) { return ops::spmm_args(ctx, w, a, b, c, opt, structure); });
}

// spmm with one column: the same slot, variants and scheduler; only the messages say spmv.
void spmv(const Context& ctx, const CsrView& a, const DenseView& x, const DenseMutView& y, const SpmvOptions& opt) {
  const std::string w = "sparseport::spmv[" + ctx.backend() + "]";
  ops::call_csr_op(ctx, ops::exec_for(ctx, opt.allow_tf32), SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, a,
                   opt.variant, w, [&](bool structure) {
                     return ops::checked_args(ctx, w, a, x, y, opt, structure, ops::kSpmvNames, 1);
                   });
}

}  // namespace sparseport
