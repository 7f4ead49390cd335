// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include "src/ops/common.hpp"

namespace sparseport {
namespace {

template <class I>
void scan(const CsrView& a, Validation& v) {
  const I* rp = static_cast<const I*>(a.rowptr);
  const I* ci = static_cast<const I*>(a.colind);
  auto note = [&](std::string s) { v.message += (v.message.empty() ? "" : " ") + s; };
  if (rp[0] != 0) {
    v.monotone = false;
    v.bad_rowptr_row = 0;
    note("rowptr[0] is " + std::to_string(rp[0]) + ", not 0.");
  }
  if (static_cast<int64_t>(rp[a.rows]) != a.nnz) {
    v.monotone = false;
    if (v.bad_rowptr_row < 0) v.bad_rowptr_row = a.rows;
    note("rowptr[" + std::to_string(a.rows) + "] is " + std::to_string(rp[a.rows]) + " but nnz is " +
         std::to_string(a.nnz) + ".");
  }
  for (int64_t i = 0; i < a.rows; ++i) {
    if (rp[i + 1] < rp[i]) {
      if (v.monotone || v.bad_rowptr_row < 0 || v.bad_rowptr_row == a.rows) {
        if (v.monotone || v.bad_rowptr_row == a.rows)
          note("rowptr decreases at row " + std::to_string(i) + " (" + std::to_string(rp[i]) + " then " +
               std::to_string(rp[i + 1]) + ").");
        v.bad_rowptr_row = i;
      }
      v.monotone = false;
      continue;
    }
    // Only entries inside [0, nnz) are read, so a broken rowptr cannot make validate crash.
    const int64_t lo = std::max<int64_t>(rp[i], 0), hi = std::min<int64_t>(rp[i + 1], a.nnz);
    for (int64_t e = lo; e < hi; ++e) {
      if (ci[e] < 0 || static_cast<int64_t>(ci[e]) >= a.cols) {
        if (v.in_range)
          note("row " + std::to_string(i) + " has column " + std::to_string(ci[e]) + " outside [0, " +
               std::to_string(a.cols) + ").");
        if (v.bad_column_row < 0) v.bad_column_row = i;
        v.in_range = false;
      }
      if (e > lo && ci[e] < ci[e - 1] && v.unsorted_row < 0) {
        v.sorted = false;
        v.unsorted_row = i;
        note("row " + std::to_string(i) + " has unsorted columns (" + std::to_string(ci[e - 1]) + " before " +
             std::to_string(ci[e]) + ").");
      }
    }
    // Duplicates: compare neighbours after sorting a copy of the row (rows are usually short).
    if (v.duplicate_row < 0 && hi - lo > 1) {  // not lo + 1: lo may be INT64_MAX
      std::vector<I> row(ci + lo, ci + hi);
      std::sort(row.begin(), row.end());
      if (auto d = std::adjacent_find(row.begin(), row.end()); d != row.end()) {
        v.unique = false;
        v.duplicate_row = i;
        note("row " + std::to_string(i) + " holds column " + std::to_string(*d) + " more than once.");
      }
    }
  }
}

}  // namespace

Validation validate(const CsrView& a) {
  Validation v;
  if (a.rows < 0 || a.cols < 0 || a.nnz < 0) {
    v.monotone = false;
    v.message = "negative size: " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " with nnz " +
                std::to_string(a.nnz) + ".";
    return v;
  }
  // Read with the wrong element size, the arrays would be read past their end.
  if (a.index_type != IndexType::i32 && a.index_type != IndexType::i64) {
    v.monotone = false;
    v.message = "unknown index type tag " + std::to_string(static_cast<int>(a.index_type)) + " (need i32 or i64).";
    return v;
  }
  if (a.rowptr == nullptr || (a.nnz > 0 && a.colind == nullptr)) {
    v.monotone = false;
    v.message = a.rowptr == nullptr ? "rowptr is null." : "colind is null but nnz is " + std::to_string(a.nnz) + ".";
    return v;
  }
  if (a.index_type == IndexType::i32)
    scan<int32_t>(a, v);
  else
    scan<int64_t>(a, v);
  return v;
}

}  // namespace sparseport
