// SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
std::optional<sparseport_attention_args> attention_args(const Context& ctx, const std::string& w, const CsrView& a,
                                                        const DenseView& q, const DenseView& k, const DenseView& v,
                                                        const DenseMutView& out, const AttentionOptions& opt,
                                                        bool structure) {
  if (structure) check_csr(ctx, w, "A", a);
  check_dense(w, "Q", q, a.rows, q.cols, "need Q.rows == A.rows");
  check_dense(w, "K", k, a.cols, q.cols, "need K.rows == A.cols and K.cols == Q.cols");
  check_dense(w, "V", v, a.cols, v.cols, "need V.rows == A.cols");
  check_dense(w, "out", out, a.rows, v.cols, "need out.rows == A.rows and out.cols == V.cols");
  for (const auto& [arg, t] : {std::pair{"Q", q.value_type}, {"K", k.value_type}, {"V", v.value_type},
                               {"out", out.value_type}})
    check_same_type(w, arg, t, a.value_type);
  if (!std::isfinite(opt.scale)) throw InvalidArgument(w + ": scale " + std::to_string(opt.scale) + " is not finite");
  if (out.rows == 0 || out.cols == 0) return std::nullopt;
  const double scale = opt.scale != 0.0 ? opt.scale : 1.0 / std::sqrt(static_cast<double>(q.cols > 0 ? q.cols : 1));
  return sparseport_attention_args{to_abi(a), to_abi(q), to_abi(k), to_abi(v), to_abi(out), scale};
}
}  // namespace ops

void csr_attention(const Context& ctx, const CsrView& a, const DenseView& q, const DenseView& k, const DenseView& v,
                   const DenseMutView& out, const AttentionOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_ATTENTION);
  ops::call_csr_op(ctx, ctx.exec(), SPARSEPORT_OP_CSR_ATTENTION, ctx.plugin().table->csr_attention, a, opt.variant, w,
                   [&](bool structure) { return ops::attention_args(ctx, w, a, q, k, v, out, opt, structure); });
}

}  // namespace sparseport
