// SPDX-License-Identifier: Apache-2.0
// validate() reports each kind of broken or non-canonical CSR with the offending row, and never
// throws or reads out of bounds on a broken structure.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

template <class I>
sp::Validation check(int64_t rows, int64_t cols, const std::vector<I>& rowptr, const std::vector<I>& colind,
                     int64_t nnz = -1) {
  return sp::validate(sp::make_csr<I, float>(rows, cols, nnz < 0 ? static_cast<int64_t>(colind.size()) : nnz,
                                             rowptr.data(), colind.data()));
}

bool mentions(const sp::Validation& v, const std::string& s) { return v.message.find(s) != std::string::npos; }

TEST(Validate, CanonicalMatrixIsClean) {
  const auto v = check<int32_t>(3, 4, {0, 2, 2, 5}, {1, 3, 0, 1, 2});
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.canonical());
  EXPECT_TRUE(v.message.empty()) << v.message;
  EXPECT_EQ(v.bad_rowptr_row, -1);
  EXPECT_EQ(v.bad_column_row, -1);
  EXPECT_EQ(v.unsorted_row, -1);
  EXPECT_EQ(v.duplicate_row, -1);
}

TEST(Validate, EmptyMatrices) {
  EXPECT_TRUE(check<int32_t>(0, 0, {0}, {}).canonical());
  EXPECT_TRUE(check<int64_t>(3, 5, {0, 0, 0, 0}, {}).canonical());
}

TEST(Validate, NonMonotoneRowptr) {
  // rowptr goes 0, 3, 2, 5: it decreases between rows 1 and 2, so row 1 is the offender.
  const auto v = check<int32_t>(3, 4, {0, 3, 2, 5}, {1, 3, 0, 1, 2});
  EXPECT_FALSE(v.monotone);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.bad_rowptr_row, 1);
  EXPECT_TRUE(mentions(v, "row 1")) << v.message;
}

TEST(Validate, RowptrNotStartingAtZeroOrNotEndingAtNnz) {
  auto v = check<int32_t>(2, 4, {1, 2, 3}, {0, 1, 2});
  EXPECT_FALSE(v.monotone);
  EXPECT_EQ(v.bad_rowptr_row, 0);
  EXPECT_TRUE(mentions(v, "rowptr[0] is 1")) << v.message;
  v = check<int64_t>(2, 4, {0, 1, 2}, {0, 1, 2});  // nnz 3 but rowptr ends at 2
  EXPECT_FALSE(v.monotone);
  EXPECT_EQ(v.bad_rowptr_row, 2);
  EXPECT_TRUE(mentions(v, "rowptr[2] is 2")) << v.message;
  EXPECT_TRUE(mentions(v, "nnz is 3")) << v.message;
}

TEST(Validate, ColumnOutOfRange) {
  // Row 2 holds column 4 of a 4-column matrix; row 0 is fine.
  auto v = check<int32_t>(3, 4, {0, 2, 2, 5}, {1, 3, 0, 4, 2});
  EXPECT_TRUE(v.monotone);
  EXPECT_FALSE(v.in_range);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.bad_column_row, 2);
  EXPECT_TRUE(mentions(v, "row 2")) << v.message;
  EXPECT_TRUE(mentions(v, "column 4")) << v.message;
  v = check<int64_t>(2, 4, {0, 1, 2}, {0, -3});
  EXPECT_FALSE(v.in_range);
  EXPECT_EQ(v.bad_column_row, 1);
  EXPECT_TRUE(mentions(v, "column -3")) << v.message;
}

TEST(Validate, UnsortedColumnsAreValidButNotCanonical) {
  const auto v = check<int32_t>(3, 4, {0, 2, 2, 5}, {1, 3, 0, 2, 1});  // row 2: 0 2 1
  EXPECT_TRUE(v.ok());
  EXPECT_FALSE(v.sorted);
  EXPECT_TRUE(v.unique);
  EXPECT_FALSE(v.canonical());
  EXPECT_EQ(v.unsorted_row, 2);
  EXPECT_TRUE(mentions(v, "row 2")) << v.message;
}

TEST(Validate, DuplicateColumnsAreValidButNotCanonical) {
  // Row 1 holds column 3 twice, not next to each other (3 0 3): still a duplicate.
  const auto v = check<int64_t>(2, 4, {0, 1, 4}, {2, 3, 0, 3});
  EXPECT_TRUE(v.ok());
  EXPECT_FALSE(v.unique);
  EXPECT_FALSE(v.canonical());
  EXPECT_EQ(v.duplicate_row, 1);
  EXPECT_TRUE(mentions(v, "row 1")) << v.message;
  EXPECT_TRUE(mentions(v, "column 3")) << v.message;
  // A sorted row with a repeat: unsorted is not reported, the duplicate is.
  const auto w = check<int32_t>(1, 4, {0, 3}, {0, 2, 2});
  EXPECT_TRUE(w.sorted);
  EXPECT_FALSE(w.unique);
  EXPECT_EQ(w.duplicate_row, 0);
}

TEST(Validate, ReportsTheFirstOffendingRowOfEachKind) {
  // Row 0 unsorted (2 1), row 1 duplicate (3 3), row 2 out of range (9), row 3 duplicate and unsorted.
  const auto v = check<int32_t>(4, 5, {0, 2, 4, 5, 8}, {2, 1, 3, 3, 9, 4, 0, 4});
  EXPECT_EQ(v.unsorted_row, 0);
  EXPECT_EQ(v.duplicate_row, 1);
  EXPECT_EQ(v.bad_column_row, 2);
  EXPECT_TRUE(v.monotone);
  EXPECT_FALSE(v.ok());
}

TEST(Validate, BrokenRowptrDoesNotReadOutOfBounds) {
  // rowptr points past the 2 stored columns; validate must report, not read colind[2..9].
  const auto v = check<int32_t>(2, 4, {0, 9, 2}, {0, 1});
  EXPECT_FALSE(v.monotone);
  EXPECT_FALSE(v.message.empty());
}

TEST(Validate, NullPointersAndNegativeSizes) {
  EXPECT_FALSE(sp::validate(sp::make_csr<int32_t, float>(2, 2, 0, nullptr, nullptr)).ok());
  const std::vector<int32_t> rp{0, 1, 2};
  EXPECT_FALSE(sp::validate(sp::make_csr<int32_t, float>(2, 2, 2, rp.data(), nullptr)).ok());
  EXPECT_FALSE(sp::validate(sp::make_csr<int32_t, float>(-1, 2, 0, rp.data(), nullptr)).ok());
}

}  // namespace
