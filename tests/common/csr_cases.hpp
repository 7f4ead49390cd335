// SPDX-License-Identifier: Apache-2.0
// Hand-built CSR inputs for the tests that compare a plugin's summary or index check with the
// host definition (tests/cuda/test_cuda_summary.cpp, tests/kokkos/test_kokkos_summary.cpp). Each
// test keeps its own list of cases: a GPU's list is larger than one the 2-core CI runs on a CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "sparseport/graph.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport_test {

// rows x cols with deg(i) entries in row i, the k-th at column col(i, k) (any values allowed).
template <class I, class Deg, class Col>
sparseport::HostCsr<I, float> build(int64_t rows, int64_t cols, Deg&& deg, Col&& col) {
  sparseport::HostCsr<I, float> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t d = deg(i);
    for (int64_t k = 0; k < d; ++k) a.colind.push_back(static_cast<I>(col(i, k)));
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

template <class I>
struct Case {
  std::string name;
  sparseport::HostCsr<I, float> a;
};

// The cases every summary test shares beyond its own list: a matrix that is not a valid CSR yet has
// every number defined (columns below 0, at cols + 5 and at the index type's maximum, every 7th
// entry of `spec`), and for int64 columns up to 2^40, 2^50 and near 2^63 over `rows` rows.
// add(name, matrix) takes each; uniform(n) draws from [0, n).
template <class I, class Add, class Uniform>
void add_wide_and_invalid_columns(Add&& add, Uniform&& uniform, const char* spec, int64_t rows) {
  sparseport::GenOptions pattern;
  pattern.pattern = true;
  sparseport::HostCsr<I, float> a = sparseport::generate<I, float>(spec, pattern);
  const auto big = static_cast<int64_t>(std::numeric_limits<I>::max());
  for (size_t e = 0; e < a.colind.size(); e += 7)
    a.colind[e] = static_cast<I>(e % 3 == 0 ? -3 - static_cast<int64_t>(e % 5) : (e % 3 == 1 ? a.cols + 5 : big));
  add("columns outside [0, cols)", std::move(a));
  if constexpr (sizeof(I) == 8) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    const int64_t c40 = int64_t{1} << 40, c50 = int64_t{1} << 50;
    add("int64 columns below 2^40",
        build<I>(rows, c40, [&](int64_t) { return uniform(20); }, [&](int64_t, int64_t) { return uniform(c40); }));
    add("int64 columns below 2^50",
        build<I>(rows, c50, [&](int64_t) { return uniform(20); }, [&](int64_t, int64_t) { return uniform(c50); }));
    add("int64 columns near 2^63", build<I>(3000, kMax, [&](int64_t) { return uniform(50); },
                                            [&](int64_t, int64_t) { return kMax - uniform(1 << 20); }));
  }
}

// Every number of the summary's definition (SIGNATURE and FEATURES; the index check's fields are
// each test's own business).
inline void expect_equal(const sparseport_csr_summary& got, const sparseport_csr_summary& want) {
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.cols, want.cols);
  EXPECT_EQ(got.nnz, want.nnz);
  EXPECT_EQ(got.rowptr_hash, want.rowptr_hash);
  EXPECT_EQ(got.colind_hash, want.colind_hash);
  EXPECT_EQ(got.max_degree, want.max_degree);
  for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
    EXPECT_EQ(got.degree_hist[b], want.degree_hist[b]) << "degree bucket " << b;
    EXPECT_EQ(got.distance_hist[b], want.distance_hist[b]) << "distance bucket " << b;
  }
  EXPECT_EQ(got.distance_sum, want.distance_sum);
  EXPECT_EQ(got.block_entries, want.block_entries);
  EXPECT_EQ(got.block_distinct, want.block_distinct);
  EXPECT_EQ(got.block_segments, want.block_segments);
  EXPECT_EQ(got.blocks, want.blocks);
}

}  // namespace sparseport_test
