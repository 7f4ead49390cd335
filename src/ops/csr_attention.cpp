// SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include "src/ops/common.hpp"

namespace sparseport {

void csr_attention(const Context& ctx, const CsrView& a, const DenseView& q, const DenseView& k, const DenseView& v,
                   const DenseMutView& out, const AttentionOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_ATTENTION);
  ops::check_csr(ctx, w, "A", a);
  ops::check_dense(w, "Q", q, a.rows, q.cols, "need Q.rows == A.rows");
  ops::check_dense(w, "K", k, a.cols, q.cols, "need K.rows == A.cols and K.cols == Q.cols");
  ops::check_dense(w, "V", v, a.cols, v.cols, "need V.rows == A.cols");
  ops::check_dense(w, "out", out, a.rows, v.cols, "need out.rows == A.rows and out.cols == V.cols");
  for (const auto& [arg, t] : {std::pair{"Q", q.value_type}, {"K", k.value_type}, {"V", v.value_type},
                               {"out", out.value_type}})
    ops::check_same_type(w, arg, t, a.value_type);
  if (!std::isfinite(opt.scale)) throw InvalidArgument(w + ": scale " + std::to_string(opt.scale) + " is not finite");
  if (out.rows == 0 || out.cols == 0) return;
  const double scale = opt.scale != 0.0 ? opt.scale : 1.0 / std::sqrt(static_cast<double>(q.cols > 0 ? q.cols : 1));
  const sparseport_attention_args args{ops::to_abi(a), ops::to_abi(q), ops::to_abi(k), ops::to_abi(v), ops::to_abi(out),
                                       scale};
  ops::call_plugin(ctx, SPARSEPORT_OP_CSR_ATTENTION, ctx.plugin().table->csr_attention, args, opt.variant, w);
}

}  // namespace sparseport
