// SPDX-License-Identifier: Apache-2.0
// SegmentCsr and the gradients over messages (backward.hpp): segment_reduce, scatter_reduce and
// gather_scatter are spmm on the messages' CSR (segments x E, or the edges as a CSR), so their arg
// and backward are spmm_arg and spmm_backward there (run_spmm_arg, run_spmm_backward in
// backward_spmm.cpp); sum's backward is one gather. Separate because SegmentCsr's state, its
// checks against the caller's index or edges, and the message-shaped argument checks are used by
// these ops only.
#include "sparseport/backward.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "src/ops/backward_internal.hpp"

namespace sparseport {

namespace detail {

struct SegmentCsrState {
  Context ctx;
  IndexView index;            // what it was built from: the index, or edges' dst
  const void* src = nullptr;  // edges' src (then csr's colind); null when built from an index
  int64_t segments = 0;
  CsrMatrix seg;  // segments x E pattern: row s holds the e with index[e] == s, in increasing e
  CsrView csr;    // seg, or edges as a CSR (seg's rowptr, src, the weights)
  std::optional<Transpose> t;
};

struct SegmentCsrAccess {
  static const SegmentCsrState& state(const SegmentCsr& c) { return *c.s_; }
  static SegmentCsr make(std::shared_ptr<SegmentCsrState> s) { return SegmentCsr(std::move(s)); }
};

}  // namespace detail

namespace {

using detail::arg_reduce;
using detail::check_arg;
using detail::check_arg_reduce;
using detail::check_backward_arg;
using detail::check_transpose;
using detail::column;
using detail::gather_values;
using detail::run_spmm_arg;
using detail::run_spmm_backward;
using detail::scratch;
using detail::SegmentCsrAccess;
using detail::SegmentCsrState;
using detail::TransposeState;
using detail::upload_iota;
using detail::wanted;
using detail::where;
using detail::with_values;

}  // namespace

// ---- SegmentCsr ---------------------------------------------------------------------------------

namespace {

// A_seg is csr_transpose of the E x segments CSR whose row e holds index[e]: the transpose lists a
// column's entries in row order, so each segment gets its messages in increasing e (a stable
// counting sort), and the ties of max/min still go to the lowest e.
CsrMatrix segment_pattern(const Context& ctx, const std::string& w, const IndexView& index, int64_t segments,
                          ValueType vt) {
  const Buffer rows = upload_iota(ctx, w, index.n + 1, index.index_type);
  const CsrView by_message{index.n, segments, index.n, rows.data(), index.data, nullptr, index.index_type, vt};
  return ops::transpose(ctx, w, by_message, nullptr, {});
}

std::shared_ptr<SegmentCsrState> index_state(const Context& ctx, const std::string& w, const IndexView& index,
                                             int64_t segments, ValueType vt) {
  if (segments < 0) throw InvalidArgument(w + ": segments is " + std::to_string(segments) + " (need >= 0)");
  ops::check_index(ctx, w, "index", index, segments, false);
  auto s = std::make_shared<SegmentCsrState>();
  s->ctx = ctx;
  s->index = index;
  s->segments = segments;
  s->seg = segment_pattern(ctx, w, index, segments, vt);
  s->csr = s->seg.view();
  return s;
}

void check_edges(const Context& ctx, const std::string& w, const CooView& edges) {
  if (edges.rows < 0 || edges.cols < 0 || edges.nnz < 0) throw InvalidArgument(w + ": edges has a negative size");
  ops::check_index(ctx, w, "edges.row (dst)", {edges.nnz, edges.row, edges.index_type}, edges.rows, true);
  ops::check_index(ctx, w, "edges.col (src)", {edges.nnz, edges.col, edges.index_type}, edges.cols, false);
}

std::shared_ptr<SegmentCsrState> edges_state(const Context& ctx, const std::string& w, const CooView& edges) {
  check_edges(ctx, w, edges);
  const IndexView dst{edges.nnz, edges.row, edges.index_type};
  auto s = std::make_shared<SegmentCsrState>();
  s->ctx = ctx;
  s->index = dst;
  s->src = edges.col;
  s->segments = edges.rows;
  // dst is sorted, so the pattern's columns are 0..E-1: only its rowptr is kept.
  s->seg = segment_pattern(ctx, w, dst, edges.rows, edges.value_type);
  s->seg.colind = Buffer();
  s->csr = {edges.rows, edges.cols, edges.nnz, s->seg.rowptr.data(), edges.col, edges.values, edges.index_type,
            edges.value_type};
  return s;
}

// The SegmentCsr of a call: the caller's (checked to be for this index and value type) or a
// temporary one in `temp`.
const SegmentCsr& segment_csr_for(const Context& ctx, const std::string& w, const IndexView& index, int64_t segments,
                                  ValueType vt, const SegmentCsr* given, std::optional<SegmentCsr>& temp) {
  if (given == nullptr) return temp.emplace(SegmentCsrAccess::make(index_state(ctx, w, index, segments, vt)));
  const SegmentCsrState& s = SegmentCsrAccess::state(*given);
  if (s.src != nullptr || s.index.data != index.data || s.index.n != index.n || s.index.index_type != index.index_type ||
      s.segments != segments)
    throw InvalidArgument(w + ": the SegmentCsr given was built for another index (" +
                          (s.src != nullptr ? std::string("an edge list") :
                                              "an array of " + std::to_string(s.index.n) + " entries into " +
                                                  std::to_string(s.segments) + " segments") +
                          "; this call has " + std::to_string(index.n) + " entries into " + std::to_string(segments) +
                          ", and the array must be the same)");
  if (s.csr.value_type != vt)
    throw InvalidArgument(w + ": the SegmentCsr given was built for " + name(s.csr.value_type) +
                          " messages but this call's are " + name(vt));
  return *given;
}

const SegmentCsr& edges_csr_for(const Context& ctx, const std::string& w, const CooView& edges,
                                const SegmentCsr* given, std::optional<SegmentCsr>& temp) {
  if (given == nullptr) return temp.emplace(SegmentCsrAccess::make(edges_state(ctx, w, edges)));
  const SegmentCsrState& s = SegmentCsrAccess::state(*given);
  if (s.src != edges.col || s.index.data != edges.row || s.index.n != edges.nnz || s.csr.rows != edges.rows ||
      s.csr.cols != edges.cols || s.csr.index_type != edges.index_type || s.csr.value_type != edges.value_type)
    throw InvalidArgument(w + ": the SegmentCsr given was built for other edges (other arrays, shape or types)");
  return *given;
}

}  // namespace

SegmentCsr::SegmentCsr(std::shared_ptr<detail::SegmentCsrState> s) : s_(std::move(s)) {}
SegmentCsr::SegmentCsr(const Context& ctx, const IndexView& index, int64_t segments, ValueType value_type)
    : s_(index_state(ctx, where(ctx, "SegmentCsr"), index, segments, value_type)) {}
SegmentCsr::SegmentCsr(const Context& ctx, const CooView& edges) : s_(edges_state(ctx, where(ctx, "SegmentCsr"), edges)) {}

const CsrView& SegmentCsr::csr() const { return s_->csr; }
const Transpose& SegmentCsr::transpose() const {
  if (!s_->t) s_->t.emplace(s_->ctx, s_->csr);
  return *s_->t;
}

// ---- segment_reduce / scatter_reduce / gather_scatter -------------------------------------------

namespace {

// The checks of segment_reduce (sorted) and scatter_reduce, named for the caller.
void check_messages(const Context& ctx, const std::string& w, const IndexView& index, bool sorted, const DenseView& src,
                    const DenseView& out) {
  ops::check_dense(w, "src", src, index.n, src.cols, "need one row of src per index entry");
  ops::check_dense(w, "out", out, out.rows, src.cols, "need out.cols == src.cols");
  ops::check_same_type(w, "out", out.value_type, src.value_type);
  ops::check_index(ctx, w, "index", index, out.rows, sorted);
}

// The same for their backward: dout is out's gradient, dsrc src's.
void check_message_grads(const Context& ctx, const std::string& w, const IndexView& index, bool sorted,
                         const DenseView& dout, const DenseMutView& dsrc) {
  ops::check_dense(w, "dout", dout, dout.rows, dout.cols, "");
  ops::check_dense(w, "dsrc", dsrc, index.n, dout.cols, "need dsrc to be index.n x dout.cols");
  ops::check_same_type(w, "dsrc", dsrc.value_type, dout.value_type);
  ops::check_index(ctx, w, "index", index, dout.rows, sorted);
}

// dsrc[e] = dout[index[e]]: gather_scatter over the COO (e, index[e]), one entry per row.
void gather_segments(const Context& ctx, const std::string& w, const IndexView& index, const DenseView& dout,
                     const DenseMutView& dsrc) {
  const Buffer iota = upload_iota(ctx, w, index.n, index.index_type);
  const CooView coo{index.n, dout.rows, index.n, iota.data(), index.data, nullptr, index.index_type, dout.value_type};
  gather_scatter(ctx, coo, dout, dsrc);
}

void index_reduce_arg(const Context& ctx, const char* op, bool sorted, const IndexView& index, const DenseView& src,
                      const DenseMutView& out, const ArgMutView& arg, const SegmentArgOptions& opt) {
  const std::string w = where(ctx, op);
  check_arg_reduce(w, opt.reduce);
  check_messages(ctx, w, index, sorted, src, out);
  check_arg(w, arg, out.rows, src.cols, index.index_type, "out's shape");
  std::optional<SegmentCsr> temp;
  const SegmentCsr& seg = segment_csr_for(ctx, w, index, out.rows, src.value_type, opt.csr, temp);
  run_spmm_arg(ctx, w, seg.csr(), src, out, arg, SpmmOptions{opt.reduce, 1.0, 0.0, opt.variant});
}

void index_reduce_backward(const Context& ctx, const char* op, bool sorted, const IndexView& index,
                           const DenseView& dout, const DenseMutView& dsrc, const SegmentBackwardOptions& opt) {
  const std::string w = where(ctx, op);
  ops::check_reduce(w, opt.reduce);
  check_message_grads(ctx, w, index, sorted, dout, dsrc);
  if (arg_reduce(opt.reduce))
    check_backward_arg(w, opt.reduce, opt.arg, dout.rows, dout.cols, index.index_type, "dout's shape");
  if (index.n == 0 || dout.cols == 0) return;
  // sum is a plain gather; with a SegmentCsr kept, the same gather is an spmm on its A^T.
  if (opt.reduce == Reduce::sum && opt.csr == nullptr) return gather_segments(ctx, w, index, dout, dsrc);
  std::optional<SegmentCsr> temp;
  const SegmentCsr& seg = segment_csr_for(ctx, w, index, dout.rows, dout.value_type, opt.csr, temp);
  SpmmBackwardOptions o;
  o.reduce = opt.reduce;
  o.transpose = opt.csr != nullptr ? &seg.transpose() : nullptr;
  o.arg = opt.arg;
  run_spmm_backward(ctx, w, seg.csr(), DenseView{}, dout, {dsrc, {}}, o);
}

}  // namespace

void segment_sum_backward(const Context& ctx, const IndexView& index, const DenseView& dout, const DenseMutView& dsrc) {
  const std::string w = where(ctx, "segment_sum_backward");
  check_message_grads(ctx, w, index, false, dout, dsrc);
  if (index.n == 0 || dout.cols == 0) return;
  gather_segments(ctx, w, index, dout, dsrc);
}

void segment_reduce_arg(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt) {
  index_reduce_arg(ctx, "segment_reduce_arg", true, index, src, out, arg, opt);
}

void scatter_reduce_arg(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt) {
  index_reduce_arg(ctx, "scatter_reduce_arg", false, index, src, out, arg, opt);
}

void segment_reduce_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                             const DenseMutView& dsrc, const SegmentBackwardOptions& opt) {
  index_reduce_backward(ctx, "segment_reduce_backward", true, index, dout, dsrc, opt);
}

void scatter_reduce_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                             const DenseMutView& dsrc, const SegmentBackwardOptions& opt) {
  index_reduce_backward(ctx, "scatter_reduce_backward", false, index, dout, dsrc, opt);
}

void gather_scatter_arg(const Context& ctx, const CooView& edges, const DenseView& x, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt) {
  const std::string w = where(ctx, "gather_scatter_arg");
  check_arg_reduce(w, opt.reduce);
  ops::gather_scatter_args(ctx, w, edges, x, out, ReduceOptions{opt.reduce, {}}, true);  // the forward's checks
  check_arg(w, arg, edges.rows, x.cols, edges.index_type, "out's shape");
  std::optional<SegmentCsr> temp;
  const SegmentCsr& seg = edges_csr_for(ctx, w, edges, opt.csr, temp);
  run_spmm_arg(ctx, w, with_values(seg.csr(), edges.values), x, out, arg,
               SpmmOptions{opt.reduce, 1.0, 0.0, opt.variant});
}

void gather_scatter_backward(const Context& ctx, const CooView& edges, const DenseView& x, const DenseView& dout,
                             const GatherScatterGrads& grads, const SegmentBackwardOptions& opt) {
  const std::string w = where(ctx, "gather_scatter_backward");
  ops::check_reduce(w, opt.reduce);
  check_edges(ctx, w, edges);
  const int64_t F = dout.cols;
  ops::check_dense(w, "dout", dout, edges.rows, F, "need dout.rows == edges.rows, the number of destination vertices");
  ops::check_same_type(w, "dout", dout.value_type, edges.value_type);
  if (wanted(grads.dx)) {
    ops::check_dense(w, "dx", grads.dx, edges.cols, F, "need dx to be edges.cols x dout.cols");
    ops::check_same_type(w, "dx", grads.dx.value_type, edges.value_type);
  }
  if (wanted(grads.dvalues)) {
    ops::check_dense(w, "dvalues", grads.dvalues, edges.nnz, 1, "need one value per edge");
    ops::check_same_type(w, "dvalues", grads.dvalues.value_type, edges.value_type);
    ops::check_dense(w, "x", x, edges.cols, F, "need x to be edges.cols x dout.cols");
    ops::check_same_type(w, "x", x.value_type, edges.value_type);
  }
  if (!wanted(grads.dx) && !wanted(grads.dvalues)) return;
  if (arg_reduce(opt.reduce))
    check_backward_arg(w, opt.reduce, opt.arg, edges.rows, F, edges.index_type, "dout's shape");
  std::optional<SegmentCsr> temp;
  const SegmentCsr& seg = edges_csr_for(ctx, w, edges, opt.csr, temp);
  SpmmBackwardOptions o;
  o.reduce = opt.reduce;
  o.transpose = opt.csr != nullptr ? &seg.transpose() : nullptr;
  o.arg = opt.arg;
  run_spmm_backward(ctx, w, with_values(seg.csr(), edges.values), x, dout, {grads.dx, grads.dvalues}, o);
}

}  // namespace sparseport
