// SPDX-License-Identifier: Apache-2.0
// Backward ops (backward.hpp): the gradients written as forward ops on A, on A^T and on
// re-weighted values, so that each backend's variants and the scheduler serve them unchanged.
//   - moving an nnz-array between A's order and A^T's is gather_scatter over the COO
//     (t, positions[t]) with optional weights w[t]: out[t] = w[t] * x[positions[t]];
//   - an element-wise product of two nnz-arrays is the same gather over (e, e) with weights;
//   - mean's 1/deg weights are computed once per Transpose, on the host from rowptr;
//   - a reduce over messages is spmm on the messages' CSR (SegmentCsr), so its arg and backward
//     are spmm_arg and spmm_backward there.
// This file holds what the backward files share (the Transpose, its scratch arrays and weights, the
// checks of arg); the gradients of each op are in backward_spmm.cpp, backward_sddmm.cpp,
// backward_segment.cpp (SegmentCsr, the reduces over messages, gather_scatter) and
// backward_attention.cpp.
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

void check_arg_reduce(const std::string& w, Reduce r) {
  ops::check_reduce(w, r);
  if (!arg_reduce(r))
    throw InvalidArgument(w + ": reduce is " + name(r) + "; only max and min have a winning entry to record");
}

}  // namespace detail

namespace {

using detail::TransposeState;
using detail::upload_iota;
using detail::where;
using detail::with_values;

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

}  // namespace sparseport
