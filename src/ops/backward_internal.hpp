// SPDX-License-Identifier: Apache-2.0
// What the backward files (backward.cpp, backward_spmm.cpp, backward_sddmm.cpp, backward_segment.cpp,
// backward_attention.cpp) share: a Transpose's state, the small steps they compose the gradients
// from, the checks of arg, and the spmm arg and backward that the reduces over messages run on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler/values16.hpp"
#include "sparseport/backward.hpp"
#include "src/ops/common.hpp"

namespace sparseport::detail {

struct TransposeState {
  Context ctx;
  CsrView a;
  CsrMatrix at;       // a pattern
  Buffer positions;   // nnz, A's index type
  Buffer iota;        // 0..max(nnz, rows), A's index type: the rows of every order-moving gather,
                      // and the rowptr and colind of the one-entry-per-row CSRs of the attention
  Buffer inv_deg_a;   // nnz values: 1/deg(row) in A's order (mean), on first use
  Buffer inv_deg_at;  // the same in A^T's order
  Buffer entry_rows;  // nnz indices: the row of each entry in A's order (attention), on first use
  std::vector<int64_t> host_rowptr;  // A's rowptr on the host, on first use
  Buffer scratch[3];  // nnz values each, for per-call value arrays
  Buffer row_scratch;  // rows values, for a per-call value per row
};

struct TransposeAccess {
  static TransposeState& state(const Transpose& t) { return *t.s_; }
};

// "sparseport::op[backend]": the prefix of the backward functions' messages.
std::string where(const Context& ctx, const char* op);

inline bool wanted(const DenseMutView& d) { return d.data != nullptr; }

inline DenseView column(const void* data, int64_t n, ValueType t) { return {n, 1, 1, data, t}; }
inline DenseMutView column(void* data, int64_t n, ValueType t) { return {n, 1, 1, data, t}; }

inline CsrView with_values(CsrView v, const void* values) {
  v.values = values;
  return v;
}

// out[t] = w[t] * x[cols[t]] for t < nnz (w null: 1): gather_scatter over the COO (t, cols[t]).
void gather_values(const TransposeState& s, const void* cols, const void* w, const void* x, void* out);

// Scratch array `which` (0..2) of nnz values, allocated on first use; null when A has no entries.
void* scratch(TransposeState& s, int which);
// rows values, allocated on first use.
void* row_scratch(TransposeState& s);
// A's rowptr on the host (copied once from device memory).
const std::vector<int64_t>& host_rowptr(TransposeState& s);
// entry_rows, built on first use from the host rowptr.
const void* entry_rows(TransposeState& s);

// InvalidArgument naming w when t (if any) was built for another A than a.
void check_transpose(const std::string& w, const CsrView& a, const Transpose* t);

// ---- the arg checks (backward.cpp) and the spmm engine (backward_spmm.cpp) of the per-op files --

// A host array of n indices 0..n-1 (of A's index type) copied to ctx's memory.
Buffer upload_iota(const Context& ctx, const std::string& w, int64_t n, IndexType it);

inline bool arg_reduce(Reduce r) { return r == Reduce::max || r == Reduce::min; }

// arg must be rows x cols (`shape` says which those are) with ld >= cols, in the index type `it`.
void check_arg(const std::string& w, const ArgView& arg, int64_t rows, int64_t cols, IndexType it, const char* shape);

// The backward of max/min needs the forward's winners.
void check_backward_arg(const std::string& w, Reduce r, const ArgView& arg, int64_t rows, int64_t cols, IndexType it,
                        const char* shape);

void check_arg_reduce(const std::string& w, Reduce r);

// backward_spmm.cpp:
// spmm_arg after its own checks (the callers name what they check in their terms).
void run_spmm_arg(const Context& ctx, const std::string& w, const CsrView& a, const DenseView& b,
                  const DenseMutView& c, const ArgMutView& arg, const SpmmOptions& opt);

// spmm_backward after its checks: B is read for dvalues only (the caller checked it then), the
// arg of max/min is checked, opt.transpose is A's.
void run_spmm_backward(const Context& ctx, const std::string& w, const CsrView& a, const DenseView& b,
                       const DenseView& dc, const SpmmGrads& grads, const SpmmBackwardOptions& opt);

}  // namespace sparseport::detail
