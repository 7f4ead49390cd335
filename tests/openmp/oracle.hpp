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

template <class V>
HostDense<V> random_dense(int64_t rows, int64_t cols, int64_t ld, uint64_t seed) {
  HostDense<V> d(rows, cols, ld);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (V& x : d.data) x = static_cast<V>(val(rng));
  return d;
}

// Expected values and, per value, what bounds its rounding: the sum of the magnitudes of its terms
// (for a sum or mean; the value itself for max and min) and the number of terms.
struct Expected {
  std::vector<double> value, scale, terms;

  void resize(size_t n) {
    value.assign(n, 0.0);
    scale.assign(n, 0.0);
    terms.assign(n, 0.0);
  }
};

inline double reduce_init(Reduce r) {
  if (r == Reduce::max) return -std::numeric_limits<double>::infinity();
  if (r == Reduce::min) return std::numeric_limits<double>::infinity();
  return 0.0;
}
inline double reduce_step(Reduce r, double acc, double x) {
  if (r == Reduce::max) return std::max(acc, x);
  if (r == Reduce::min) return std::min(acc, x);
  return acc + x;
}

// out[i, f] = reduce over messages e of row i of message(e)[f], 0 for none; mean = sum / count.
template <class Rows, class Msg>
Expected reduce_rows(int64_t n_out, int64_t F, Reduce r, const Rows& rows_of, const Msg& msg) {
  Expected x;
  x.resize(static_cast<size_t>(n_out * F));
  for (int64_t i = 0; i < n_out; ++i) {
    const std::vector<int64_t>& es = rows_of[static_cast<size_t>(i)];
    for (int64_t f = 0; f < F; ++f) {
      double acc = reduce_init(r), mag = 0.0;
      for (int64_t e : es) {
        const double m = msg(e, f);
        acc = reduce_step(r, acc, m);
        mag += std::abs(m);
      }
      if (es.empty()) acc = 0.0;
      if (r == Reduce::mean && !es.empty()) {
        acc /= static_cast<double>(es.size());
        mag /= static_cast<double>(es.size());
      }
      x.value[static_cast<size_t>(i * F + f)] = acc;
      x.scale[static_cast<size_t>(i * F + f)] = (r == Reduce::sum || r == Reduce::mean) ? mag : std::abs(acc);
      x.terms[static_cast<size_t>(i * F + f)] = static_cast<double>(es.size());
    }
  }
  return x;
}

// Rounding allowance for a value of type V reduced from `terms` terms of total magnitude `scale`:
// rounding errors of a sum grow like sqrt(terms) in practice; 8 ulps of slack on top.
template <class V>
double tolerance(double scale, double terms) {
  const double eps = std::numeric_limits<V>::epsilon();
  return 8.0 * eps * (std::sqrt(terms + 1.0) * scale + std::numeric_limits<V>::min());
}

// Compares an op's dense output (rows x F, leading dimension ld) with the oracle; on the first
// mismatch reports where and by how much.
template <class V>
::testing::AssertionResult close_to(const HostDense<V>& got, const Expected& want, int64_t F) {
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t f = 0; f < F; ++f) {
      const double g = static_cast<double>(got(i, f)), w = want.value[static_cast<size_t>(i * F + f)];
      const size_t k = static_cast<size_t>(i * F + f);
      const double tol = tolerance<V>(want.scale[k], want.terms[k]);
      if (!(std::abs(g - w) <= tol))
        return ::testing::AssertionFailure() << "out[" << i << "," << f << "] = " << g << " but the oracle gives " << w
                                             << " (tolerance " << tol << ")";
    }
  return ::testing::AssertionSuccess();
}

}  // namespace sp_test
