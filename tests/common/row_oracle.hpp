// SPDX-License-Identifier: Apache-2.0
// A double-precision oracle for row reductions, shared by the backend-specific tests (tests/openmp,
// tests/cuda). It is written from the contract in ops.hpp with plain loops, independent of every
// plugin, so those tests hold even where the reference plugin is the thing that is wrong.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sparseport/ops.hpp"

namespace sparseport_test {

using sparseport::HostDense;
using sparseport::Reduce;

template <class V>
HostDense<V> random_dense(int64_t rows, int64_t cols, int64_t ld, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  HostDense<V> d(rows, cols, ld);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(lo, hi);
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

// out[i, f] = reduce over messages e of rows_of[i] of msg(e, f), 0 for none; mean = sum / count.
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
      const size_t k = static_cast<size_t>(i * F + f);
      x.value[k] = acc;
      x.scale[k] = (r == Reduce::sum || r == Reduce::mean) ? mag : std::abs(acc);
      x.terms[k] = static_cast<double>(es.size());
    }
  }
  return x;
}

// Rounding allowance for a value of type V reduced from `terms` terms of total magnitude `scale`:
// rounding errors of a sum grow like sqrt(terms) in practice, times `ulps` of slack for the
// backend's summation orders.
template <class V>
double tolerance(double scale, double terms, double ulps) {
  const double eps = std::numeric_limits<V>::epsilon();
  return ulps * eps * (std::sqrt(terms + 1.0) * scale + std::numeric_limits<V>::min());
}

// Compares an op's dense output (rows x F) with the oracle; on the first mismatch says where.
template <class V>
::testing::AssertionResult close_to(const HostDense<V>& got, const Expected& want, int64_t F, double ulps) {
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t f = 0; f < F; ++f) {
      const size_t k = static_cast<size_t>(i * F + f);
      const double g = static_cast<double>(got(i, f)), w = want.value[k];
      const double tol = tolerance<V>(want.scale[k], want.terms[k], ulps);
      if (!(std::abs(g - w) <= tol))
        return ::testing::AssertionFailure() << "out[" << i << "," << f << "] = " << g << " but the oracle gives " << w
                                             << " (tolerance " << tol << ", " << want.terms[k] << " terms)";
    }
  return ::testing::AssertionSuccess();
}

}  // namespace sparseport_test
