// SPDX-License-Identifier: Apache-2.0
// Hand-built CSR inputs for the tests that compare a plugin's summary or index check with the
// host definition (tests/cuda/test_cuda_summary.cpp, tests/kokkos/test_kokkos_summary.cpp). Each
// test keeps its own list of cases: a GPU's list is larger than one the 2-core CI runs on a CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
