// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

namespace ops {
std::optional<sparseport_gather_scatter_args> gather_scatter_args(const Context& ctx, const std::string& w,
                                                                  const CooView& edges, const DenseView& x,
                                                                  const DenseMutView& out, const ReduceOptions& opt,
                                                                  bool structure) {
  if (edges.rows < 0 || edges.cols < 0 || edges.nnz < 0)
    throw InvalidArgument(w + ": edges has a negative size");
  check_dense(w, "x", x, edges.cols, x.cols, "need x.rows == edges.cols, the number of source vertices");
  check_dense(w, "out", out, edges.rows, x.cols,
              "need out.rows == edges.rows, the number of destination vertices, and out.cols == x.cols");
  check_same_type(w, "x", x.value_type, edges.value_type);
  check_same_type(w, "out", out.value_type, edges.value_type);
  if (structure) {
    check_index(ctx, w, "edges.row (dst)", {edges.nnz, edges.row, edges.index_type}, edges.rows, true);
    check_index(ctx, w, "edges.col (src)", {edges.nnz, edges.col, edges.index_type}, edges.cols, false);
  }
  check_reduce(w, opt.reduce);
  if (out.rows == 0 || out.cols == 0) return std::nullopt;
  return sparseport_gather_scatter_args{to_abi(edges), to_abi(x), to_abi(out), static_cast<int32_t>(opt.reduce)};
}
}  // namespace ops

void gather_scatter(const Context& ctx, const CooView& edges, const DenseView& x, const DenseMutView& out,
                    const ReduceOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_GATHER_SCATTER);
  if (const auto args = ops::gather_scatter_args(ctx, w, edges, x, out, opt, true))
    ops::call_plugin(ctx, SPARSEPORT_OP_GATHER_SCATTER, ctx.plugin().table->gather_scatter, *args, opt.variant, w);
}

}  // namespace sparseport
