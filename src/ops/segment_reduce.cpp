// SPDX-License-Identifier: Apache-2.0
// segment_reduce and scatter_reduce share their checks; only the sortedness rule and the slot differ.
#include "src/ops/common.hpp"

namespace sparseport {
namespace {

void index_reduce(const Context& ctx, sparseport_op op, const IndexView& index, const DenseView& src,
                  const DenseMutView& out, const ReduceOptions& opt) {
  const std::string w = ops::where(ctx, op);
  const bool sorted = op == SPARSEPORT_OP_SEGMENT_REDUCE;
  ops::check_dense(w, "src", src, index.n, src.cols, "need one row of src per index entry");
  ops::check_dense(w, "out", out, out.rows, src.cols, "need out.cols == src.cols");
  ops::check_same_type(w, "out", out.value_type, src.value_type);
  ops::check_index(ctx, w, "index", index, out.rows, sorted);
  ops::check_reduce(w, opt.reduce);
  if (out.rows == 0 || out.cols == 0) return;
  const sparseport_segment_args args{ops::to_abi(index), ops::to_abi(src), ops::to_abi(out),
                                     static_cast<int32_t>(opt.reduce)};
  const sparseport_plugin* t = ctx.plugin().table;
  ops::call_plugin(ctx, op, sorted ? t->segment_reduce : t->scatter_reduce, args, opt.variant, w);
}

}  // namespace

void segment_reduce(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                    const ReduceOptions& opt) {
  index_reduce(ctx, SPARSEPORT_OP_SEGMENT_REDUCE, index, src, out, opt);
}

void scatter_reduce(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                    const ReduceOptions& opt) {
  index_reduce(ctx, SPARSEPORT_OP_SCATTER_REDUCE, index, src, out, opt);
}

}  // namespace sparseport
