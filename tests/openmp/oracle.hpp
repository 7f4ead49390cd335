// SPDX-License-Identifier: Apache-2.0
// Inputs and a double-precision oracle for the openmp tests. The oracle is written here from the
// contract in ops.hpp (plain loops, independent of any plugin), so these tests do not depend on
// the reference plugin being built.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/row_oracle.hpp"
#include "sparseport/ops.hpp"

namespace sp_test {

using sparseport::HostCsr;
using sparseport::HostDense;
using sparseport::Reduce;

inline constexpr Reduce kReduces[] = {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min};

// A skewed square-or-not CSR: one mega-row holding about `mega` of the entries, a few hubs,
// a fifth of the rows empty, the rest of degree 1..8; columns random, unsorted, repeats allowed.
template <class I, class V>
HostCsr<I, V> skewed_csr(int64_t rows, int64_t cols, int64_t nnz_target, double mega, uint64_t seed,
                         bool with_values = true) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> deg(static_cast<size_t>(rows), 0);
  const int64_t mega_row = rows / 3;
  int64_t placed = 0;
  deg[static_cast<size_t>(mega_row)] = static_cast<int64_t>(mega * static_cast<double>(nnz_target));
  placed += deg[static_cast<size_t>(mega_row)];
  std::uniform_int_distribution<int64_t> small(1, 8);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t i = 0; i < rows && placed < nnz_target; ++i) {
    if (i == mega_row) continue;
    const double x = u(rng);
    const int64_t d = x < 0.2 ? 0 : (x < 0.22 ? 50 + small(rng) * 20 : small(rng));
    deg[static_cast<size_t>(i)] = std::min(d, nnz_target - placed);
    placed += deg[static_cast<size_t>(i)];
  }
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < deg[static_cast<size_t>(i)]; ++k) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (with_values) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

using sparseport_test::Expected;
using sparseport_test::random_dense;
using sparseport_test::reduce_rows;

// 8 ulps of slack: the CPU kernels sum in few, fixed orders.
template <class V>
::testing::AssertionResult close_to(const HostDense<V>& got, const Expected& want, int64_t F) {
  return sparseport_test::close_to(got, want, F, 8.0);
}

}  // namespace sp_test
