// SPDX-License-Identifier: Apache-2.0
// Backward ops (backward.hpp): the gradients written as forward ops on A, on A^T and on
// re-weighted values, so that each backend's variants and the scheduler serve them unchanged.
//   - moving an nnz-array between A's order and A^T's is gather_scatter over the COO
//     (t, positions[t]) with optional weights w[t]: out[t] = w[t] * x[positions[t]];
//   - an element-wise product of two nnz-arrays is the same gather over (e, e) with weights;
//   - mean's 1/deg weights are computed once per Transpose, on the host from rowptr;
//   - a reduce over messages is spmm on the messages' CSR (SegmentCsr), so its arg and backward
//     are spmm_arg and spmm_backward there.
// csr_attention_backward is in backward_attention.cpp.
#include "sparseport/backward.hpp"

#include <numeric>
#include <vector>

#include "src/ops/backward_internal.hpp"

namespace sparseport {

namespace detail {

std::string where(const Context& ctx, const char* op) { return std::string("sparseport::") + op + "[" + ctx.backend() + "]"; }

void gather_values(const TransposeState& s, const void* cols, const void* w, const void* x, void* out) {
  const CsrView& a = s.a;
  const CooView coo{a.nnz, a.nnz, a.nnz, s.iota.data(), cols, w, a.index_type, a.value_type};
  gather_scatter(s.ctx, coo, column(x, a.nnz, a.value_type), column(out, a.nnz, a.value_type));
}

void* scratch(TransposeState& s, int which) {
  Buffer& b = s.scratch[which];
  if (b.data() == nullptr && s.a.nnz > 0)
    b = ops::allocate_result(s.ctx, "sparseport::backward", "scratch values", s.a.nnz,
                             static_cast<size_t>(size_of(s.a.value_type)));
  return b.data();
}

void* row_scratch(TransposeState& s) {
  if (s.row_scratch.data() == nullptr && s.a.rows > 0)
    s.row_scratch = ops::allocate_result(s.ctx, "sparseport::backward", "scratch values per row", s.a.rows,
                                         static_cast<size_t>(size_of(s.a.value_type)));
  return s.row_scratch.data();
}

const std::vector<int64_t>& host_rowptr(TransposeState& s) {
  std::vector<int64_t>& rp = s.host_rowptr;
  if (!rp.empty()) return rp;
  const CsrView& a = s.a;
  rp.resize(static_cast<size_t>(a.rows + 1));
  if (a.index_type == IndexType::i32) {
    std::vector<int32_t> h(rp.size());
    s.ctx.copy_to_host(h.data(), a.rowptr, h.size() * 4);
    std::copy(h.begin(), h.end(), rp.begin());
  } else {
    s.ctx.copy_to_host(rp.data(), a.rowptr, rp.size() * 8);
  }
  return rp;
}

const void* entry_rows(TransposeState& s) {
  if (s.entry_rows.data() != nullptr || s.a.nnz == 0) return s.entry_rows.data();
  const std::vector<int64_t>& rp = host_rowptr(s);
  const auto fill = [&]<class I>() {
    std::vector<I> h(static_cast<size_t>(s.a.nnz));
    for (int64_t i = 0; i < s.a.rows; ++i)
      std::fill(h.begin() + rp[static_cast<size_t>(i)], h.begin() + rp[static_cast<size_t>(i) + 1], static_cast<I>(i));
    s.entry_rows = ops::allocate_result(s.ctx, "sparseport::backward", "the row of each entry", s.a.nnz, sizeof(I));
    s.ctx.copy_to_backend(s.entry_rows.data(), h.data(), h.size() * sizeof(I));
  };
  if (s.a.index_type == IndexType::i32)
    fill.template operator()<int32_t>();
  else
    fill.template operator()<int64_t>();
  return s.entry_rows.data();
}

void check_transpose(const std::string& w, const CsrView& a, const Transpose* t) {
  // The value type too: the Transpose's scratch arrays hold values of the type it was built with.
  if (t != nullptr && (t->a().rowptr != a.rowptr || t->a().colind != a.colind || t->a().nnz != a.nnz ||
                       t->a().value_type != a.value_type))
    throw InvalidArgument(w + ": the Transpose given was built for another A (other arrays, entry count or value type)");
}

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

using detail::check_transpose;
using detail::column;
using detail::gather_values;
using detail::SegmentCsrAccess;
using detail::scratch;
using detail::SegmentCsrState;
using detail::TransposeState;
using detail::wanted;
using detail::where;
using detail::with_values;

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

// 1/deg(row) for every entry, in A's order and in A^T's, built once (host rowptr, one upload).
void ensure_inverse_degree(TransposeState& s) {
  if (s.inv_deg_a.data() != nullptr || s.a.nnz == 0) return;
  const CsrView& a = s.a;
  const std::vector<int64_t>& rp = detail::host_rowptr(s);
  const auto fill = [&]<class V>() {
    std::vector<V> h(static_cast<size_t>(a.nnz));
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t e = rp[static_cast<size_t>(i)]; e < rp[static_cast<size_t>(i) + 1]; ++e)
        h[static_cast<size_t>(e)] = V(1.0 / static_cast<double>(rp[static_cast<size_t>(i) + 1] - rp[static_cast<size_t>(i)]));
    s.inv_deg_a = ops::allocate_result(s.ctx, "sparseport::backward", "1/deg per entry", a.nnz, sizeof(V));
    s.ctx.copy_to_backend(s.inv_deg_a.data(), h.data(), h.size() * sizeof(V));
  };
  switch (a.value_type) {
    case ValueType::f64: fill.template operator()<double>(); break;
    case ValueType::f16: fill.template operator()<half>(); break;
    case ValueType::bf16: fill.template operator()<bfloat16>(); break;
    default: fill.template operator()<float>(); break;
  }
  s.inv_deg_at = ops::allocate_result(s.ctx, "sparseport::backward", "1/deg per entry of A^T", a.nnz,
                                      static_cast<size_t>(size_of(a.value_type)));
  gather_values(s, s.positions.data(), nullptr, s.inv_deg_a.data(), s.inv_deg_at.data());
}

bool arg_reduce(Reduce r) { return r == Reduce::max || r == Reduce::min; }

// arg must be rows x cols (`shape` says which those are) with ld >= cols, in the index type `it`.
void check_arg(const std::string& w, const ArgView& arg, int64_t rows, int64_t cols, IndexType it, const char* shape) {
  if (arg.data == nullptr && rows * cols > 0) throw InvalidArgument(w + ": arg.data is null");
  if (arg.rows != rows || arg.cols != cols || arg.ld < arg.cols)
    throw InvalidArgument(w + ": arg is " + std::to_string(arg.rows) + " x " + std::to_string(arg.cols) + " with ld " +
                          std::to_string(arg.ld) + "; need " + std::to_string(rows) + " x " + std::to_string(cols) +
                          " (" + shape + ") with ld >= cols");
  ops::check_same_type(w, "arg", arg.index_type, it);
}

// The backward of max/min needs the forward's winners.
void check_backward_arg(const std::string& w, Reduce r, const ArgView& arg, int64_t rows, int64_t cols, IndexType it,
                        const char* shape) {
  if (arg.data == nullptr && rows * cols > 0)
    throw InvalidArgument(w + ": reduce " + name(r) + " needs the forward's arg (spmm_arg); opt.arg is empty");
  check_arg(w, arg, rows, cols, it, shape);
}

}  // namespace

// ---- Transpose ----------------------------------------------------------------------------------

Transpose::Transpose(const Context& ctx, const CsrView& a) : s_(std::make_shared<TransposeState>()) {
  const std::string w = where(ctx, "Transpose");
  s_->ctx = ctx;
  s_->a = a;
  s_->positions = ops::allocate_result(ctx, w, "the entry positions", a.nnz, static_cast<size_t>(size_of(a.index_type)));
  s_->at = ops::transpose(ctx, w, with_values(a, nullptr), s_->positions.data(), {});
  s_->iota = upload_iota(ctx, w, std::max(a.nnz, a.rows) + 1, a.index_type);
}

const CsrView& Transpose::a() const { return s_->a; }
CsrView Transpose::pattern() const {
  CsrView v = s_->at.view();
  v.value_type = s_->a.value_type;
  return v;
}
IndexView Transpose::positions() const { return {s_->a.nnz, s_->positions.data(), s_->a.index_type}; }

// ---- spmm ---------------------------------------------------------------------------------------

namespace {

// spmm_arg after its own checks (the callers name what they check in their terms).
void run_spmm_arg(const Context& ctx, const std::string& w, const CsrView& a, const DenseView& b,
                  const DenseMutView& c, const ArgMutView& arg, const SpmmOptions& opt) {
  auto args = ops::spmm_args(ctx, w, a, b, c, opt, true);
  if (!args) return;
  args->arg = arg.data;
  args->arg_ld = arg.ld;
  // Only variants that record arg may run: a named one must be one; else the first that applies.
  std::string variant = opt.variant;
  std::string offered;
  bool named_records = false;
  // 16-bit values: a variant that takes them natively first; else one that applies to the same
  // call in float32, which then runs on float32 copies (scheduler::run's float32 path).
  sparseport_spmm_args as_f32 = *args;
  as_f32.a.value_type = as_f32.b.value_type = as_f32.c.value_type = SPARSEPORT_F32;
  for (const sparseport_spmm_args* probe : {&*args, &as_f32}) {
    for (const VariantInfo& v : ctx.plugin().variants) {
      if (v.op != SPARSEPORT_OP_SPMM || !v.records_arg) continue;
      if (probe == &*args) {
        offered += (offered.empty() ? "" : ", ") + v.name;
        named_records = named_records || v.name == opt.variant;
      }
      if (variant.empty() && scheduler::applies(ctx.plugin(), SPARSEPORT_OP_SPMM, v.name, probe, nullptr)) variant = v.name;
    }
    if (!is_16bit(c.value_type)) break;
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

void check_arg_reduce(const std::string& w, Reduce r) {
  ops::check_reduce(w, r);
  if (!arg_reduce(r))
    throw InvalidArgument(w + ": reduce is " + name(r) + "; only max and min have a winning entry to record");
}

// spmm_backward after its checks: B is read for dvalues only (the caller checked it then), the
// arg of max/min is checked, opt.transpose is A's.
void run_spmm_backward(const Context& ctx, const std::string& w, const CsrView& a, const DenseView& b,
                       const DenseView& dc, const SpmmGrads& grads, const SpmmBackwardOptions& opt) {
  const bool want_db = wanted(grads.db), want_dv = wanted(grads.dvalues);
  if (!want_db && !want_dv) return;
  const bool by_arg = arg_reduce(opt.reduce);
  // A^T is needed for dB, and for max/min in deterministic mode (the gather instead of the scatter).
  std::optional<Transpose> temp;
  const Transpose* at = opt.transpose;
  if (at == nullptr && want_db && (!by_arg || ctx.deterministic())) at = &temp.emplace(ctx, a);

  if (by_arg) {
    const auto slot = ctx.plugin().table->spmm_arg_backward;
    if (slot == nullptr)
      throw Unsupported(w + ": backend '" + ctx.plugin().name + "' has no spmm max/min backward");
    sparseport_spmm_arg_backward_args args{ops::to_abi(a),
                                           ops::to_abi(b),
                                           ops::to_abi(dc),
                                           opt.arg.data,
                                           opt.arg.ld,
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
    const auto call = [&] {
      sparseport_status st{};
      if (slot(&exec, &args, &st) != 0) detail::throw_status(st, w);
    };
    if (!is_16bit(a.value_type)) return call();
    // The slot takes float32 and float64 only: 16-bit operands go through float32 copies.
    scheduler::Scratch copies(ctx.plugin(), exec.state);
    scheduler::run_as_f32(ctx.plugin(), exec,
                          {scheduler::values_in(args.a), scheduler::dense_in(args.b), scheduler::dense_in(args.dc),
                           scheduler::dense_out(args.db), scheduler::dense_out(args.dvalues)},
                          {}, copies, call, w);
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

}  // namespace

void spmm_arg(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const ArgMutView& arg,
              const SpmmOptions& opt) {
  const std::string w = where(ctx, "spmm_arg");
  check_arg_reduce(w, opt.reduce);
  check_arg(w, arg, a.rows, b.cols, a.index_type, "A.rows x B.cols");
  run_spmm_arg(ctx, w, a, b, c, arg, opt);
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
  if (want_dv || arg_reduce(opt.reduce)) {
    ops::check_dense(w, "B", b, a.cols, F, "need B to be A.cols x dC.cols");
    ops::check_same_type(w, "B", b.value_type, a.value_type);
  }
  check_transpose(w, a, opt.transpose);
  if (!want_db && !want_dv) return;
  if (arg_reduce(opt.reduce)) check_backward_arg(w, opt.reduce, opt.arg, a.rows, F, a.index_type, "A.rows x dC.cols");
  run_spmm_backward(ctx, w, a, b, dc, grads, opt);
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
