// SPDX-License-Identifier: Apache-2.0
// The 16-bit arithmetic the CUDA tests of f16/bf16 values share (test_cuda_values16.cpp,
// test_cuda_tc.cpp): a 16-bit value as double, the spacing of H's values, its smallest subnormal, and
// a random value rounded to H. (tests/common/values16.hpp holds the conformance suite's versions;
// it comes with the conformance harness, which these programs do not link.)
#pragma once

#include <cmath>
#include <random>
#include <type_traits>

#include "sparseport/half.hpp"

namespace cuda_test {

template <class H>
double to_d(H x) {
  return static_cast<double>(static_cast<float>(x));
}

// One unit in the last place of the 16-bit type H at magnitude x (x >= 0), subnormals included.
template <class H>
double ulp16(double x) {
  constexpr int mant = std::is_same_v<H, sparseport::half> ? 10 : 7;       // stored significand bits
  constexpr int emin = std::is_same_v<H, sparseport::half> ? -14 : -126;  // smallest normal exponent
  int e = x > 0 ? static_cast<int>(std::floor(std::log2(x))) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

// The smallest subnormal of H.
template <class H>
double tiny16() {
  return std::is_same_v<H, sparseport::half> ? std::ldexp(1.0, -24) : std::ldexp(1.0, -133);
}

// Uniform in [lo, hi), rounded to H.
template <class H>
H rnd16(std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  return H(static_cast<float>(d(rng)));
}

}  // namespace cuda_test
