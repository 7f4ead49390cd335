// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "src/ops/common.hpp"

namespace sparseport {
namespace {

template <class I>
void check_distinct(const std::string& w, const IndexView& v, int64_t n) {
  std::vector<int64_t> first(static_cast<size_t>(n), -1);
  const I* p = static_cast<const I*>(v.data);
  for (int64_t t = 0; t < v.n; ++t) {
    int64_t& seen = first[static_cast<size_t>(p[t])];
    if (seen >= 0)
      throw InvalidArgument(w + ": vertices[" + std::to_string(seen) + "] and vertices[" + std::to_string(t) +
                            "] are both " + std::to_string(p[t]) + " (vertices must be distinct)");
    seen = t;
  }
}

}  // namespace

CsrMatrix csr_induced_subgraph(const Context& ctx, const CsrView& a, const IndexView& vertices, const OpOptions& opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH);
  ops::check_csr(ctx, w, "A", a);
  if (a.rows != a.cols)
    throw DimensionMismatch(w + ": A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                            " but must be square (rows and columns are the same vertices)");
  ops::check_same_type(w, "vertices", vertices.index_type, a.index_type);
  // Checked before the contents: distinct vertices of A cannot outnumber its rows.
  if (vertices.n > a.rows)
    throw InvalidArgument(w + ": vertices has " + std::to_string(vertices.n) + " entries but A has only " +
                          std::to_string(a.rows) + " rows (vertices must be distinct)");
  ops::check_index(ctx, w, "vertices", vertices, a.rows, false);
  if (!ctx.device_memory()) {
    if (vertices.index_type == IndexType::i32)
      check_distinct<int32_t>(w, vertices, a.rows);
    else
      check_distinct<int64_t>(w, vertices, a.rows);
  }
  sparseport_induced_subgraph_args args{};
  args.a = ops::to_abi(a);
  args.vertices = ops::to_abi(vertices);
  return ops::call_two_phase(ctx, SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, ctx.plugin().table->csr_induced_subgraph, args,
                             a, vertices.n, vertices.n, opt.variant, w);
}

}  // namespace sparseport
