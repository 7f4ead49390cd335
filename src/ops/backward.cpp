// SPDX-License-Identifier: Apache-2.0
// Backward ops (backward.hpp): the gradients written as forward ops on A, on A^T and on
// re-weighted values, so that each backend's variants and the scheduler serve them unchanged.
//   - moving an nnz-array between A's order and A^T's is gather_scatter over the COO
//     (t, positions[t]) with optional weights w[t]: out[t] = w[t] * x[positions[t]];
//   - an element-wise product of two nnz-arrays is the same gather over (e, e) with weights;
//   - mean's 1/deg weights are computed once per Transpose, on the host from rowptr.
#include "sparseport/backward.hpp"

#include <numeric>
#include <vector>

#include "src/ops/common.hpp"

namespace sparseport {

namespace detail {

struct TransposeState {
  Context ctx;
  CsrView a;
  CsrMatrix at;       // a pattern
  Buffer positions;   // nnz, A's index type
  Buffer iota;        // 0..nnz-1, A's index type: the rows of every order-moving gather
  Buffer inv_deg_a;   // nnz values: 1/deg(row) in A's order (mean), on first use
  Buffer inv_deg_at;  // the same in A^T's order
  Buffer scratch[3];  // nnz values each, for per-call value arrays
};

struct TransposeAccess {
  static TransposeState& state(const Transpose& t) { return *t.s_; }
};

}  // namespace detail

namespace {

using detail::TransposeState;

int64_t value_bytes(const CsrView& a) { return size_of(a.value_type); }

DenseView column(const void* data, int64_t n, ValueType t) { return {n, 1, 1, data, t}; }
DenseMutView column(void* data, int64_t n, ValueType t) { return {n, 1, 1, data, t}; }

// A host array of n indices 0..n-1 (of A's index type) copied to ctx's memory.
Buffer upload_iota(const Context& ctx, const std::string& w, int64_t n, IndexType it) {
  Buffer b = ops::allocate_result(ctx, w, "the entry numbering", n, static_cast<size_t>(size_of(it)));
  if (n == 0) return b;
  if (it == IndexType::i32) {
    std::vector<int32_t> h(static_cast<size_t>(n));
    std::iota(h.begin(), h.end(), 0);
    ctx.copy_to_backend(b.data(), h.data(), h.size() * 4);
  } else {
    std::vector<int64_t> h(static_cast<size_t>(n));
    std::iota(h.begin(), h.end(), int64_t{0});
    ctx.copy_to_backend(b.data(), h.data(), h.size() * 8);
  }
  return b;
}

// out[t] = w[t] * x[cols[t]] for t < n (w null: 1): gather_scatter over the COO (t, cols[t]).
void gather_values(const TransposeState& s, const void* cols, const void* w, const void* x, void* out) {
  const CsrView& a = s.a;
  const CooView coo{a.nnz, a.nnz, a.nnz, s.iota.data(), cols, w, a.index_type, a.value_type};
  gather_scatter(s.ctx, coo, column(x, a.nnz, a.value_type), column(out, a.nnz, a.value_type));
}

void* scratch(TransposeState& s, int which) {
  Buffer& b = s.scratch[which];
  if (b.data() == nullptr && s.a.nnz > 0)
    b = ops::allocate_result(s.ctx, "sparseport::backward", "scratch values", s.a.nnz,
                             static_cast<size_t>(value_bytes(s.a)));
  return b.data();
}

// 1/deg(row) for every entry, in A's order and in A^T's, built once (host rowptr, one upload).
void ensure_inverse_degree(TransposeState& s) {
  if (s.inv_deg_a.data() != nullptr || s.a.nnz == 0) return;
  const CsrView& a = s.a;
  std::vector<int64_t> rp(static_cast<size_t>(a.rows + 1));
  if (a.index_type == IndexType::i32) {
    std::vector<int32_t> h(rp.size());
    s.ctx.copy_to_host(h.data(), a.rowptr, h.size() * 4);
    std::copy(h.begin(), h.end(), rp.begin());
  } else {
    s.ctx.copy_to_host(rp.data(), a.rowptr, rp.size() * 8);
  }
  const auto fill = [&]<class V>() {
    std::vector<V> h(static_cast<size_t>(a.nnz));
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t e = rp[static_cast<size_t>(i)]; e < rp[static_cast<size_t>(i) + 1]; ++e)
        h[static_cast<size_t>(e)] = V(1) / static_cast<V>(rp[static_cast<size_t>(i) + 1] - rp[static_cast<size_t>(i)]);
    s.inv_deg_a = ops::allocate_result(s.ctx, "sparseport::backward", "1/deg per entry", a.nnz, sizeof(V));
    s.ctx.copy_to_backend(s.inv_deg_a.data(), h.data(), h.size() * sizeof(V));
  };
  if (a.value_type == ValueType::f32)
    fill.template operator()<float>();
  else
    fill.template operator()<double>();
  s.inv_deg_at = ops::allocate_result(s.ctx, "sparseport::backward", "1/deg per entry of A^T", a.nnz,
                                      static_cast<size_t>(value_bytes(a)));
  gather_values(s, s.positions.data(), nullptr, s.inv_deg_a.data(), s.inv_deg_at.data());
}

CsrView with_values(CsrView v, const void* values) {
  v.values = values;
  return v;
}

std::string where(const Context& ctx, const char* op) { return std::string("sparseport::") + op + "[" + ctx.backend() + "]"; }

bool wanted(const DenseMutView& d) { return d.data != nullptr; }

}  // namespace

// ---- Transpose ----------------------------------------------------------------------------------

Transpose::Transpose(const Context& ctx, const CsrView& a) : s_(std::make_shared<TransposeState>()) {
  const std::string w = where(ctx, "Transpose");
  s_->ctx = ctx;
  s_->a = a;
  s_->positions = ops::allocate_result(ctx, w, "the entry positions", a.nnz, static_cast<size_t>(size_of(a.index_type)));
  s_->at = ops::transpose(ctx, w, with_values(a, nullptr), s_->positions.data(), {});
  s_->iota = upload_iota(ctx, w, a.nnz, a.index_type);
}

const CsrView& Transpose::a() const { return s_->a; }
CsrView Transpose::pattern() const {
  CsrView v = s_->at.view();
  v.value_type = s_->a.value_type;
  return v;
}
IndexView Transpose::positions() const { return {s_->a.nnz, s_->positions.data(), s_->a.index_type}; }

// ---- spmm ---------------------------------------------------------------------------------------

void spmm_arg(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const ArgMutView& arg,
              const SpmmOptions& opt) {
  const std::string w = where(ctx, "spmm_arg");
  if (opt.reduce != Reduce::max && opt.reduce != Reduce::min)
    throw InvalidArgument(w + ": reduce is " + name(opt.reduce) + "; only max and min have a winning entry to record");
  if (arg.data == nullptr && arg.rows * arg.cols > 0) throw InvalidArgument(w + ": arg.data is null");
  if (arg.rows != a.rows || arg.cols != b.cols || arg.ld < arg.cols)
    throw InvalidArgument(w + ": arg is " + std::to_string(arg.rows) + " x " + std::to_string(arg.cols) + " with ld " +
                          std::to_string(arg.ld) + "; need " + std::to_string(a.rows) + " x " + std::to_string(b.cols) +
                          " (A.rows x B.cols) with ld >= cols");
  ops::check_same_type(w, "arg", arg.index_type, a.index_type);
  auto args = ops::spmm_args(ctx, w, a, b, c, opt, true);
  if (!args) return;
  args->arg = arg.data;
  args->arg_ld = arg.ld;
  // Only variants that record arg may run: a named one must be one; else the first that applies.
  std::string variant = opt.variant;
  std::string offered;
  bool named_records = false;
  for (const VariantInfo& v : ctx.plugin().variants) {
    if (v.op != SPARSEPORT_OP_SPMM || !v.records_arg) continue;
    offered += (offered.empty() ? "" : ", ") + v.name;
    if (variant.empty() && scheduler::applies(ctx.plugin(), SPARSEPORT_OP_SPMM, v.name, &*args, nullptr)) variant = v.name;
    named_records = named_records || v.name == opt.variant;
  }
  if (!opt.variant.empty() && !named_records)
    throw Unsupported(w + ": variant '" + opt.variant + "' does not record arg; on backend '" + ctx.plugin().name +
                      "' these do: " + (offered.empty() ? "none" : offered));
  if (variant.empty())
    throw Unsupported(w + ": no spmm variant of backend '" + ctx.plugin().name +
                      "' that records arg applies to this input (those that record it: " +
                      (offered.empty() ? "none" : offered) + ")");
  ops::call_plugin(ctx, SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, *args, variant, w);
}

void spmm_backward(const Context& ctx, const CsrView& a, const DenseView& b, const DenseView& dc,
                   const SpmmGrads& grads, const SpmmBackwardOptions& opt) {
  const std::string w = where(ctx, "spmm_backward");
  ops::check_csr(ctx, w, "A", a);
  ops::check_reduce(w, opt.reduce);
  const int64_t F = dc.cols;
  ops::check_dense(w, "dC", dc, a.rows, dc.cols, "need dC.rows == A.rows");
  ops::check_same_type(w, "dC", dc.value_type, a.value_type);
  const bool want_db = wanted(grads.db), want_dv = wanted(grads.dvalues);
  if (want_db) {
    ops::check_dense(w, "dB", grads.db, a.cols, F, "need dB to be A.cols x dC.cols");
    ops::check_same_type(w, "dB", grads.db.value_type, a.value_type);
  }
  if (want_dv) {
    ops::check_dense(w, "dvalues", grads.dvalues, a.nnz, 1, "need dvalues to be A.nnz x 1");
    ops::check_same_type(w, "dvalues", grads.dvalues.value_type, a.value_type);
  }
  // B is read only for dA.
  if (want_dv || opt.reduce == Reduce::max || opt.reduce == Reduce::min) {
    ops::check_dense(w, "B", b, a.cols, F, "need B to be A.cols x dC.cols");
    ops::check_same_type(w, "B", b.value_type, a.value_type);
  }
  if (opt.transpose != nullptr && (opt.transpose->a().rowptr != a.rowptr || opt.transpose->a().colind != a.colind ||
                                   opt.transpose->a().nnz != a.nnz))
    throw InvalidArgument(w + ": the Transpose given was built for another A (other arrays or entry count)");
  if (!want_db && !want_dv) return;

  const bool arg_reduce = opt.reduce == Reduce::max || opt.reduce == Reduce::min;
  // A^T is needed for dB, and for max/min in deterministic mode (the gather instead of the scatter).
  std::optional<Transpose> temp;
  const Transpose* at = opt.transpose;
  if (at == nullptr && want_db && (!arg_reduce || ctx.deterministic())) at = &temp.emplace(ctx, a);

  if (arg_reduce) {
    const ArgView& arg = opt.arg;
    if (arg.data == nullptr && a.rows * F > 0)
      throw InvalidArgument(w + ": reduce " + name(opt.reduce) + " needs the forward's arg (spmm_arg); opt.arg is empty");
    if (arg.rows != a.rows || arg.cols != F || arg.ld < F)
      throw InvalidArgument(w + ": arg is " + std::to_string(arg.rows) + " x " + std::to_string(arg.cols) +
                            "; need A.rows x dC.cols = " + std::to_string(a.rows) + " x " + std::to_string(F));
    ops::check_same_type(w, "arg", arg.index_type, a.index_type);
    const auto slot = ctx.plugin().table->spmm_arg_backward;
    if (slot == nullptr)
      throw Unsupported(w + ": backend '" + ctx.plugin().name + "' has no spmm max/min backward");
    sparseport_spmm_arg_backward_args args{ops::to_abi(a),
                                           ops::to_abi(b),
                                           ops::to_abi(dc),
                                           arg.data,
                                           arg.ld,
                                           want_db ? ops::to_abi(grads.db) : sparseport_dense_mut{},
                                           want_dv ? ops::to_abi(grads.dvalues) : sparseport_dense_mut{},
                                           nullptr,
                                           nullptr,
                                           nullptr};
    if (at != nullptr && a.nnz > 0) {  // with no entries there is nothing to gather (and no arrays)
      const CsrView p = at->pattern();
      args.at_rowptr = p.rowptr;
      args.at_colind = p.colind;
      args.at_perm = at->positions().data;
    }
    const sparseport_exec exec = ctx.exec();
    sparseport_status st{};
    if (slot(&exec, &args, &st) != 0) detail::throw_status(st, w);
    return;
  }

  const bool mean = opt.reduce == Reduce::mean;
  if (want_db) {
    TransposeState& s = detail::TransposeAccess::state(*at);
    if (mean) ensure_inverse_degree(s);
    const void* at_values = nullptr;  // a pattern A summed: A^T is a pattern too
    if (!a.is_pattern()) {
      at_values = scratch(s, 0);
      gather_values(s, s.positions.data(), mean ? s.inv_deg_at.data() : nullptr, a.values, scratch(s, 0));
    } else if (mean) {
      at_values = s.inv_deg_at.data();
    }
    spmm(ctx, with_values(at->pattern(), at_values), dc, grads.db, SpmmOptions{Reduce::sum, 1.0, 0.0, opt.variant});
  }
  if (want_dv) {
    // sddmm multiplies by A's values: here 1 (sum: a pattern) or 1/deg (mean, built with A^T).
    const void* weights = nullptr;
    if (mean) {
      if (at == nullptr) at = &temp.emplace(ctx, a);
      TransposeState& s = detail::TransposeAccess::state(*at);
      ensure_inverse_degree(s);
      weights = s.inv_deg_a.data();
    }
    sddmm(ctx, with_values(a, weights), dc, b, grads.dvalues);
  }
}

// ---- sddmm --------------------------------------------------------------------------------------

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
  if (transpose != nullptr && (transpose->a().rowptr != a.rowptr || transpose->a().colind != a.colind))
    throw InvalidArgument(w + ": the Transpose given was built for another A");

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

// ---- segment / scatter / gather_scatter sum -----------------------------------------------------

void segment_sum_backward(const Context& ctx, const IndexView& index, const DenseView& dout, const DenseMutView& dsrc) {
  const std::string w = where(ctx, "segment_sum_backward");
  ops::check_dense(w, "dout", dout, dout.rows, dout.cols, "");
  ops::check_dense(w, "dsrc", dsrc, index.n, dout.cols, "need dsrc to be index.n x dout.cols");
  ops::check_same_type(w, "dsrc", dsrc.value_type, dout.value_type);
  ops::check_index(ctx, w, "index", index, dout.rows, false);
  if (index.n == 0 || dout.cols == 0) return;
  const Buffer iota = upload_iota(ctx, w, index.n, index.index_type);
  // dsrc[e] = dout[index[e]]: gather_scatter over the COO (e, index[e]), one entry per row.
  const CooView coo{index.n, dout.rows, index.n, iota.data(), index.data, nullptr, index.index_type, dout.value_type};
  gather_scatter(ctx, coo, dout, dsrc);
}

}  // namespace sparseport
