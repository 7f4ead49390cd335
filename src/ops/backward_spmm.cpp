// SPDX-License-Identifier: Apache-2.0
// spmm_arg and spmm_backward (backward.hpp): the winners of max/min through the variants that
// record them, and the gradients dB = A^T dC (an spmm on the cached transpose, with mean's 1/deg
// weights) and dA.values = sddmm(dC, B), or the plugin's max/min backward slot. Separate because
// run_spmm_arg and run_spmm_backward are also the engine of the reduces over messages
// (backward_segment.cpp), which call them on a SegmentCsr.
#include "sparseport/backward.hpp"

#include <optional>
#include <string>
#include <vector>

#include "src/ops/backward_internal.hpp"

namespace sparseport {

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
using detail::wanted;
using detail::where;
using detail::with_values;

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

}  // namespace

namespace detail {

// spmm_arg after its own checks (the callers name what they check in their terms).
void run_spmm_arg(const Context& ctx, const std::string& w, const CsrView& a, const DenseView& b,
                  const DenseMutView& c, const ArgMutView& arg, const SpmmOptions& opt) {
  auto args = ops::spmm_args(ctx, w, a, b, c, opt, true);
  if (!args) return;
  args->arg = arg.data;
  args->arg_ld = arg.ld;
  // Only variants that record arg may run: a named one must be one; else the first that applies
  // and may run (a TF32 one only with consent; a named one without it is refused by the scheduler).
  const sparseport_exec exec = ops::exec_for(ctx, opt.allow_tf32);
  const bool tf32_ok = (exec.flags & SPARSEPORT_EXEC_ALLOW_TF32) != 0;
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
      if (variant.empty() && (tf32_ok || !v.tf32) &&
          scheduler::applies(ctx.plugin(), SPARSEPORT_OP_SPMM, v.name, probe, nullptr))
        variant = v.name;
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
  ops::call_plugin(ctx, exec, SPARSEPORT_OP_SPMM, ctx.plugin().table->spmm, *args, variant, w);
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
    spmm(ctx, with_values(at->pattern(), at_values), dc, grads.db,
         SpmmOptions{Reduce::sum, 1.0, 0.0, opt.variant, opt.allow_tf32});
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

}  // namespace detail

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

}  // namespace sparseport
