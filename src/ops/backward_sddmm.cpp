// SPDX-License-Identifier: Apache-2.0
// sddmm_backward (backward.hpp): dX = (A o dout) Y and dY = (A o dout)^T X as spmm on A and on the
// cached transpose, and dA.values = dout o (X Y^T) as sddmm with dout as the values. Separate from
// the other ops' gradients: it shares only the Transpose and its scratch arrays.
#include "sparseport/backward.hpp"

#include <optional>
#include <string>
#include <utility>

#include "src/ops/backward_internal.hpp"

namespace sparseport {

namespace {

using detail::check_transpose;
using detail::column;
using detail::gather_values;
using detail::scratch;
using detail::SegmentCsrAccess;
using detail::SegmentCsrState;
using detail::TransposeState;
using detail::wanted;
using detail::where;
using detail::with_values;

}  // namespace

void sddmm_backward(const Context& ctx, const CsrView& a, const DenseView& x, const DenseView& y,
                    const DenseView& dout, const SddmmGrads& grads, const Transpose* transpose) {
  const std::string w = where(ctx, "sddmm_backward");
  ops::check_csr(ctx, w, "A", a);
  const int64_t F = x.cols;
  ops::check_dense(w, "X", x, a.rows, F, "need X.rows == A.rows");
  ops::check_dense(w, "Y", y, a.cols, F, "need Y to be A.cols x X.cols");
  ops::check_dense(w, "dout", dout, a.nnz, 1, "need dout to be A.nnz x 1");
  for (const auto& [arg, t] : {std::pair{"X", x.value_type}, {"Y", y.value_type}, {"dout", dout.value_type}})
    ops::check_same_type(w, arg, t, a.value_type);
  const std::pair<const char*, const DenseMutView*> outs[] = {{"dX", &grads.dx}, {"dY", &grads.dy}, {"dvalues", &grads.dvalues}};
  for (const auto& [arg, d] : outs)
    if (wanted(*d)) ops::check_same_type(w, arg, d->value_type, a.value_type);
  if (wanted(grads.dx)) ops::check_dense(w, "dX", grads.dx, a.rows, F, "need dX to be A.rows x X.cols");
  if (wanted(grads.dy)) ops::check_dense(w, "dY", grads.dy, a.cols, F, "need dY to be A.cols x X.cols");
  if (wanted(grads.dvalues)) ops::check_dense(w, "dvalues", grads.dvalues, a.nnz, 1, "need dvalues to be A.nnz x 1");
  check_transpose(w, a, transpose);

  std::optional<Transpose> temp;
  const Transpose& at = transpose != nullptr ? *transpose : temp.emplace(ctx, a);
  TransposeState& s = detail::TransposeAccess::state(at);
  // g[e] = A.val[e] * dout[e] (contiguous, whatever dout's ld): the weights of both products.
  void* g = scratch(s, 1);
  if (a.nnz > 0) {
    const CooView diag{a.nnz, a.nnz, a.nnz, s.iota.data(), s.iota.data(), a.values, a.index_type, a.value_type};
    gather_scatter(ctx, diag, dout, column(g, a.nnz, a.value_type));
  }
  if (wanted(grads.dx)) spmm(ctx, with_values(with_values(a, nullptr), g), y, grads.dx);
  if (wanted(grads.dy)) {
    void* gt = scratch(s, 2);
    if (a.nnz > 0) gather_values(s, s.positions.data(), nullptr, g, gt);
    spmm(ctx, with_values(at.pattern(), gt), x, grads.dy);
  }
  if (wanted(grads.dvalues)) {
    // dA[e] = dout[e] * X[i] . Y[j]: sddmm with dout as the values (made contiguous when ld > 1).
    const void* d = dout.data;
    if (dout.ld != 1 && a.nnz > 0) {
      void* c = scratch(s, 0);
      const CooView diag{a.nnz, a.nnz, a.nnz, s.iota.data(), s.iota.data(), nullptr, a.index_type, a.value_type};
      gather_scatter(ctx, diag, dout, column(c, a.nnz, a.value_type));
      d = c;
    }
    sddmm(ctx, with_values(a, d), x, y, grads.dvalues);
  }
}

}  // namespace sparseport
