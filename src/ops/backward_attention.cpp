// SPDX-License-Identifier: Apache-2.0
// csr_attention_backward (backward.hpp): FlashAttention's backward, with the forward ops carrying
// every product over F (sddmm for the scores and for dP, spmm for the three gradients) and only
// per-entry scalars in between:
//   - P, the softmax of the scores, needs exp, which no op computes: the plugin's csr_softmax slot
//     (ABI 1.6) replaces the scores by their row softmax in place, in the plugin's memory and with
//     the arithmetic of its own forward (on cuda two launches on the context's stream, no copy).
//     Only for a plugin without the slot (one built against ABI 1.5 or earlier) does the front end
//     run it itself: one serial pass on the host with the reference's arithmetic, staging the E
//     scores through the host on device memory.
//   - D = rowsum(dO o O) is sddmm over the rows x rows identity pattern (a dot per row).
//   - dS = P o dP - P o D[row]: P o dP is sddmm with P as A's values; the second term is taken off
//     by spmm with alpha -1 and beta 1 over the nnz x rows CSR whose row e holds (e, row(e)) with
//     value P[e], times D.
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "src/ops/backward_internal.hpp"

namespace sparseport {

namespace {

using detail::column;
using detail::TransposeState;
using detail::wanted;
using detail::with_values;

// ABI 1.6, the first with the csr_softmax slot. The loader widens an older plugin's table with
// zeros, so its slot reads null anyway; the version check states the rule rather than rely on that.
constexpr uint32_t kAbiCsrSoftmax = (1u << 16) | 6u;

// p (A's nnz scores, in the context's memory) becomes P: by the plugin where it has the slot; else
// on the host by the reference plugin's kernel for that slot (the oracle's arithmetic, called
// directly: the reference plugin's own table is not involved), with A's rowptr copied to the host
// once per Transpose and, on device memory, the scores staged through the host.
void softmax_in_place(const Context& ctx, const std::string& w, const CsrView& a, TransposeState& s, double scale,
                      void* p) {
  if (a.nnz == 0) return;
  const sparseport_plugin* t = ctx.plugin().table;
  if (is_16bit(a.value_type)) {
    // Softmax statistics in float32: the scores go through a float32 copy (one rounding back).
    const sparseport_exec exec = ctx.exec();
    scheduler::Scratch copies(ctx.plugin(), exec.state);
    std::vector<scheduler::ValueOperand> ops(1);
    CsrView a32 = with_values(a, nullptr);
    ops[0].out = &p, ops[0].type = reinterpret_cast<int32_t*>(&a32.value_type), ops[0].rows = a.nnz, ops[0].cols = 1;
    ops[0].read = ops[0].written = true;
    scheduler::run_as_f32(ctx.plugin(), exec, std::move(ops), {}, copies,
                          [&] { softmax_in_place(ctx, w, a32, s, scale, p); }, w);
    return;
  }
  if (t->csr_softmax != nullptr && t->abi_version >= kAbiCsrSoftmax) {
    const sparseport_csr_softmax_args args{ops::to_abi(with_values(a, nullptr)), p, scale};
    const sparseport_exec exec = ctx.exec();
    sparseport_status st{};
    if (t->csr_softmax(&exec, &args, &st) != 0) detail::throw_status(st, w);
    return;
  }
  const std::vector<int64_t>& rowptr = detail::host_rowptr(s);
  sparseport_csr_softmax_args host{ops::to_abi(with_values(a, nullptr)), p, scale};
  host.a.rowptr = rowptr.data();  // the kernel reads rowptr only
  host.a.colind = nullptr;
  host.a.index_type = SPARSEPORT_I64;
  if (!ctx.device_memory()) {
    ctx.synchronize();  // the sddmm that wrote p may still run (an asynchronous backend)
    return reference::csr_softmax(host);
  }
  std::vector<char> h(static_cast<size_t>(a.nnz * size_of(a.value_type)));
  ctx.copy_to_host(h.data(), p, h.size());
  host.scores = h.data();
  reference::csr_softmax(host);
  ctx.copy_to_backend(p, h.data(), h.size());
}

}  // namespace

void csr_attention_backward(const Context& ctx, const CsrView& a, const DenseView& q, const DenseView& k,
                            const DenseView& v, const DenseView& out, const DenseView& dout,
                            const AttentionGrads& grads, double scale, const Transpose* transpose) {
  const std::string w = detail::where(ctx, "csr_attention_backward");
  AttentionOptions forward;
  forward.scale = scale;
  // The forward's checks of A, Q, K, V, out and scale (out is only looked at, never written).
  const DenseMutView out_shape{out.rows, out.cols, out.ld, const_cast<void*>(out.data), out.value_type};
  ops::attention_args(ctx, w, a, q, k, v, out_shape, forward, true);
  const int64_t F = q.cols, Fv = v.cols;
  ops::check_dense(w, "dout", dout, a.rows, Fv, "need dout to be A.rows x V.cols, as out");
  ops::check_same_type(w, "dout", dout.value_type, a.value_type);
  const std::tuple<const char*, const DenseMutView*, int64_t, int64_t, const char*> outs[] = {
      {"dQ", &grads.dq, a.rows, F, "need dQ to be A.rows x Q.cols"},
      {"dK", &grads.dk, a.cols, F, "need dK to be A.cols x K.cols"},
      {"dV", &grads.dv, a.cols, Fv, "need dV to be A.cols x V.cols"}};
  for (const auto& [arg, d, rows, cols, rule] : outs) {
    if (!wanted(*d)) continue;
    ops::check_dense(w, arg, *d, rows, cols, rule);
    ops::check_same_type(w, arg, d->value_type, a.value_type);
  }
  detail::check_transpose(w, a, transpose);
  if (!wanted(grads.dq) && !wanted(grads.dk) && !wanted(grads.dv)) return;
  // The forward's scale (ops::attention_args): 0 asks for 1 / sqrt(F).
  const double sc = scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(F > 0 ? F : 1));

  std::optional<Transpose> temp;
  const Transpose& at = transpose != nullptr ? *transpose : temp.emplace(ctx, a);
  TransposeState& s = detail::TransposeAccess::state(at);
  const int64_t E = a.nnz;
  const ValueType vt = a.value_type;

  void* p = detail::scratch(s, 0);
  sddmm(ctx, with_values(a, nullptr), q, k, column(p, E, vt));
  softmax_in_place(ctx, w, a, s, sc, p);
  void* in_at_order = detail::scratch(s, 2);  // P, then dS, in A^T's order
  if (wanted(grads.dv)) {
    if (E > 0) detail::gather_values(s, s.positions.data(), nullptr, p, in_at_order);
    spmm(ctx, with_values(at.pattern(), in_at_order), dout, grads.dv);
  }
  if (!wanted(grads.dq) && !wanted(grads.dk)) return;

  void* ds = detail::scratch(s, 1);
  sddmm(ctx, with_values(a, p), dout, v, column(ds, E, vt));  // P o dP
  void* d = detail::row_scratch(s);
  const CsrView identity{a.rows, a.rows, a.rows, s.iota.data(), s.iota.data(), nullptr, a.index_type, vt};
  sddmm(ctx, identity, dout, out, column(d, a.rows, vt));  // D = rowsum(dO o O)
  const CsrView by_entry{E, a.rows, E, s.iota.data(), detail::entry_rows(s), p, a.index_type, vt};
  spmm(ctx, by_entry, column(d, a.rows, vt), column(ds, E, vt), SpmmOptions{Reduce::sum, -1.0, 1.0, {}});
  if (wanted(grads.dq)) spmm(ctx, with_values(a, ds), k, grads.dq, SpmmOptions{Reduce::sum, sc, 0.0, {}});
  if (wanted(grads.dk)) {
    if (E > 0) detail::gather_values(s, s.positions.data(), nullptr, ds, in_at_order);
    spmm(ctx, with_values(at.pattern(), in_at_order), q, grads.dk, SpmmOptions{Reduce::sum, sc, 0.0, {}});
  }
}

}  // namespace sparseport
