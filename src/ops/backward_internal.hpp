// SPDX-License-Identifier: Apache-2.0
// What the backward files (backward.cpp, backward_attention.cpp) share: a Transpose's state and the
// small steps they compose the gradients from.
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

}  // namespace sparseport::detail
