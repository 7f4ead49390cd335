// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

namespace sparseport {

CsrMatrix csr_slice_rows(const Context& ctx, const CsrView& a, const IndexView& rows, const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_SLICE_ROWS);
  ops::check_csr(ctx, w, "A", a);
  ops::check_same_type(w, "rows", rows.index_type, a.index_type);
  // One result row per entry of `rows`: the result's row count must fit its index type too.
  if (rows.index_type == IndexType::i32 && rows.n > INT32_MAX)
    throw InvalidArgument(w + ": rows has " + std::to_string(rows.n) +
                          " entries, more result rows than int32 indices can address (at most 2147483647); use int64");
  ops::check_index(ctx, w, "rows", rows, a.rows, false);
  sparseport_slice_rows_args args{};
  args.a = ops::to_abi(a);
  args.rows = ops::to_abi(rows);
  return ops::call_two_phase(ctx, SPARSEPORT_OP_CSR_SLICE_ROWS, ctx.plugin().table->csr_slice_rows, args, a, rows.n,
                             a.cols, opt.variant, w);
}

void csr_slice_rows_dense(const Context& ctx, const CsrView& a, const IndexView& rows, const DenseMutView& out,
                          const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE);
  ops::check_csr(ctx, w, "A", a);
  ops::check_same_type(w, "rows", rows.index_type, a.index_type);
  ops::check_index(ctx, w, "rows", rows, a.rows, false);
  ops::check_dense(w, "out", out, rows.n, a.cols, "need one dense row per selected row, A.cols wide");
  ops::check_same_type(w, "out", out.value_type, a.value_type);
  if (out.rows == 0 || out.cols == 0) return;
  const sparseport_slice_rows_dense_args args{ops::to_abi(a), ops::to_abi(rows), ops::to_abi(out)};
  ops::call_plugin(ctx, SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, ctx.plugin().table->csr_slice_rows_dense, args,
                   opt.variant, w);
}

}  // namespace sparseport
