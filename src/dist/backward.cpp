// SPDX-License-Identifier: Apache-2.0
// The distributed gradients (dist::spmm_backward, dist::sddmm_backward), written as the single-
// process ones are (src/ops/backward_spmm.cpp, backward_sddmm.cpp): products with A (the forward
// halo), with A^T (the transpose path, transpose.cpp) and sddmm, on re-weighted values. The
// weights per entry are moved into each block's order by one gather_scatter per block over the COO
// (t, orig[t]) (State::Reverse), in the call's context memory; mean's are made once on the host.
#include <string>
#include <utility>
#include <vector>

#include "sparseport/backward.hpp"
#include "src/dist/ops_internal.hpp"

namespace sparseport::dist {
namespace {

template <class I, class V>
using Reverse = typename DistCsr<I, V>::State::Reverse;

// out[t] = w[t] * src[orig[t]] (w null: 1) for t < orig.size(): one gather_scatter over the COO
// (t, orig[t]) with weights w; src is local_nnz x 1 (any ld), in the context's memory.
template <class I, class V>
void gather_entries(const Context& ctx, detail::Space& sp, const Reverse<I, V>& rv, const std::vector<I>& orig,
                    const std::vector<V>* w, const DenseView& src, V* out) {
  const int64_t n = static_cast<int64_t>(orig.size());
  if (n == 0) return;
  const CooView coo = make_coo<I, V>(n, src.rows, n, sp.place(rv.iota), sp.place(orig),
                                     w != nullptr && !w->empty() ? sp.place(*w) : nullptr);
  gather_scatter(ctx, coo, src, make_dense<V>(n, 1, 1, out));
}

bool wanted(const DenseMutView& d) { return d.data != nullptr; }

}  // namespace

template <class I, class V>
void spmm_backward(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseView& dc_local,
                   const SpmmGrads& grads, const SpmmBackwardOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "spmm_backward");
  typename DistCsr<I, V>::State& s = a.state();
  const int64_t f = dc_local.cols;
  // F and which gradients are asked: a rank whose part of a gradient is empty may pass null data
  // (an empty HostDense has none), so a gradient is computed when any rank asks for it.
  const std::vector<int64_t> agreed =
      detail::max_over_ranks(s.comm, {f, -f, wanted(grads.db) ? 1 : 0, wanted(grads.dvalues) ? 1 : 0}, w);
  const bool want_db = agreed[2] != 0, want_dv = agreed[3] != 0;
  const ValueType vt = value_type_of<V>();
  detail::agree_on_checks(s.comm, [&] {
    detail::refuse_device_context(ctx, w);
    if (agreed[0] != -agreed[1])
      throw InvalidArgument(w + ": dc_local has " + std::to_string(-agreed[1]) + " to " + std::to_string(agreed[0]) +
                            " columns across the ranks; F must be the same on every rank");
    if (opt.reduce == Reduce::max || opt.reduce == Reduce::min)
      throw Unsupported(w + ": reduce " + name(opt.reduce) +
                        " needs the forward's winners (spmm_arg), which sparseport::dist does not record; "
                        "dist::spmm_backward takes sum and mean");
    if (opt.reduce != Reduce::sum && opt.reduce != Reduce::mean)
      throw InvalidArgument(w + ": reduce has the unknown value " + std::to_string(static_cast<int>(opt.reduce)));
    if (opt.transpose != nullptr)
      throw InvalidArgument(w + ": opt.transpose is set, but a DistCsr keeps its blocks' transposes itself (made "
                                "on its first backward call); pass none");
    detail::check_dense_operand(dc_local, vt, a.local_rows(), f, "dc_local", "this rank's rows of dC: local_rows x F",
                                w);
    if (want_db)
      detail::check_dense_operand(grads.db, vt, a.local_cols(), f, "grads.db",
                                  "this rank's rows of dB: local_cols x dc_local.cols", w);
    if (want_dv) {
      detail::check_dense_operand(grads.dvalues, vt, a.local_nnz(), 1, "grads.dvalues",
                                  "one value per entry of this rank's rows: local_nnz x 1", w);
      detail::check_dense_operand(b_local, vt, a.local_cols(), f, "b_local",
                                  "this rank's rows of B, read for dvalues: local_cols x dc_local.cols", w);
    }
  });
  if (!want_db && !want_dv) {
    if (stats != nullptr) *stats = CallStats();
    return;
  }
  s.space.use(ctx);
  Reverse<I, V>& rv = detail::reverse_of<I, V>(s);
  detail::Space& sp = s.space;
  const bool mean = opt.reduce == Reduce::mean;
  CallStats all, step;
  bool first = true;
  if (want_db) {
    // dB = A^T dC (sum), (D^-1 A)^T dC (mean): the transpose path with A's values, or A's values / deg.
    const detail::BlockValues weights{sp.place(rv.local_t_mean), sp.place(rv.remote_t_mean)};
    detail::transpose_blocks<I, V>(ctx, a, dc_local, grads.db, 1.0, 0.0, opt.variant, mean ? &weights : nullptr, step,
                                   w);
    detail::add_step(all, step, first);
    first = false;
  }
  if (want_dv) {
    // dA[e] = dC[i,:] . B[j,:] (divided by deg(i) for mean): sddmm on A's pattern (mean: 1/deg values).
    const detail::BlockValues ones{nullptr, nullptr};
    const detail::BlockValues inv_deg{sp.place(rv.local_inv_deg), sp.place(rv.remote_inv_deg)};
    detail::sddmm_blocks<I, V>(ctx, a, dc_local, b_local, grads.dvalues, OpOptions{}, mean ? &inv_deg : &ones, step, w);
    detail::add_step(all, step, first);
  }
  if (stats != nullptr) *stats = std::move(all);
}

template <class I, class V>
void sddmm_backward(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
                    const DenseView& dout_local, const SddmmGrads& grads, CallStats* stats) {
  const std::string w = detail::where(ctx, "sddmm_backward");
  typename DistCsr<I, V>::State& s = a.state();
  const int64_t f = x_local.cols;
  const std::vector<int64_t> agreed = detail::max_over_ranks(
      s.comm, {f, -f, wanted(grads.dx) ? 1 : 0, wanted(grads.dy) ? 1 : 0, wanted(grads.dvalues) ? 1 : 0}, w);
  const bool want_dx = agreed[2] != 0, want_dy = agreed[3] != 0, want_dv = agreed[4] != 0;
  const ValueType vt = value_type_of<V>();
  detail::agree_on_checks(s.comm, [&] {
    detail::refuse_device_context(ctx, w);
    if (agreed[0] != -agreed[1])
      throw InvalidArgument(w + ": x_local has " + std::to_string(-agreed[1]) + " to " + std::to_string(agreed[0]) +
                            " columns across the ranks; F must be the same on every rank");
    detail::check_dense_operand(x_local, vt, a.local_rows(), f, "x_local", "this rank's rows of X: local_rows x F", w);
    detail::check_dense_operand(y_local, vt, a.local_cols(), f, "y_local",
                                "this rank's rows of Y: local_cols x x_local.cols", w);
    detail::check_dense_operand(dout_local, vt, a.local_nnz(), 1, "dout_local",
                                "one value per entry of this rank's rows: local_nnz x 1", w);
    if (want_dx)
      detail::check_dense_operand(grads.dx, vt, a.local_rows(), f, "grads.dx", "this rank's rows of dX: local_rows x F",
                                  w);
    if (want_dy)
      detail::check_dense_operand(grads.dy, vt, a.local_cols(), f, "grads.dy", "this rank's rows of dY: local_cols x F",
                                  w);
    if (want_dv)
      detail::check_dense_operand(grads.dvalues, vt, a.local_nnz(), 1, "grads.dvalues",
                                  "one value per entry of this rank's rows: local_nnz x 1", w);
  });
  if (!want_dx && !want_dy && !want_dv) {
    if (stats != nullptr) *stats = CallStats();
    return;
  }
  s.space.use(ctx);
  Reverse<I, V>& rv = detail::reverse_of<I, V>(s);
  detail::Space& sp = s.space;
  const int64_t nl = s.local.nnz(), nr = s.remote.nnz();
  // Per-call values, in the values workspace: g = A.val o dout in L's, R's, L^T's and R^T's order
  // (the weights of dX and dY), and dout in L's and R's (dA's).
  V* g = static_cast<V*>(sp.workspace(detail::Space::values, static_cast<size_t>(3 * (nl + nr)) * sizeof(V)));
  V* gt = g + (nl + nr);
  V* d = gt + (nl + nr);
  const std::vector<V>* lv = s.pattern ? nullptr : &s.local.values;
  const std::vector<V>* rvv = s.pattern ? nullptr : &s.remote.values;
  const std::vector<V>* ltv = s.pattern ? nullptr : &rv.local_t.values;
  const std::vector<V>* rtv = s.pattern ? nullptr : &rv.remote_t.values;
  CallStats all, step;
  bool first = true;
  if (want_dx) {
    // dX = (A o dout) Y: the forward spmm (Y's halo) on the blocks with values A.val o dout.
    gather_entries<I, V>(ctx, sp, rv, rv.local_orig, lv, dout_local, g);
    gather_entries<I, V>(ctx, sp, rv, rv.remote_orig, rvv, dout_local, g + nl);
    const detail::BlockValues v{g, g + nl};
    detail::spmm_sum_blocks<I, V>(ctx, a, y_local, grads.dx, SpmmOptions{Reduce::sum, 1.0, 0.0, {}}, &v, step, w);
    detail::add_step(all, step, first);
    first = false;
  }
  if (want_dy) {
    // dY = (A o dout)^T X: the transpose path with the same values in L^T's and R^T's order.
    gather_entries<I, V>(ctx, sp, rv, rv.local_t_orig, ltv, dout_local, gt);
    gather_entries<I, V>(ctx, sp, rv, rv.remote_t_orig, rtv, dout_local, gt + nl);
    const detail::BlockValues v{gt, gt + nl};
    detail::transpose_blocks<I, V>(ctx, a, x_local, grads.dy, 1.0, 0.0, {}, &v, step, w);
    detail::add_step(all, step, first);
    first = false;
  }
  if (want_dv) {
    // dA[e] = dout[e] * X[i,:] . Y[j,:]: sddmm with dout as the blocks' values.
    gather_entries<I, V>(ctx, sp, rv, rv.local_orig, nullptr, dout_local, d);
    gather_entries<I, V>(ctx, sp, rv, rv.remote_orig, nullptr, dout_local, d + nl);
    const detail::BlockValues v{d, d + nl};
    detail::sddmm_blocks<I, V>(ctx, a, x_local, y_local, grads.dvalues, OpOptions{}, &v, step, w);
    detail::add_step(all, step, first);
  }
  if (stats != nullptr) *stats = std::move(all);
}

#define SPARSEPORT_DIST_BACKWARD(I, V)                                                                          \
  template void spmm_backward<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseView&,   \
                                    const SpmmGrads&, const SpmmBackwardOptions&, CallStats*);                  \
  template void sddmm_backward<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseView&,  \
                                     const DenseView&, const SddmmGrads&, CallStats*);
SPARSEPORT_DIST_BACKWARD(int32_t, float)
SPARSEPORT_DIST_BACKWARD(int32_t, double)
SPARSEPORT_DIST_BACKWARD(int64_t, float)
SPARSEPORT_DIST_BACKWARD(int64_t, double)
#undef SPARSEPORT_DIST_BACKWARD

}  // namespace sparseport::dist
