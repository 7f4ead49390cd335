// SPDX-License-Identifier: Apache-2.0
// Helpers of the 16-bit value tests (tests/conformance/values16.cpp, tests/scheduler/
// test_values16_path.cpp): the f16/bf16 type pairs, dense operands of sparseport::half and
// sparseport::bfloat16 (conformance.hpp's kPadding, random_dense and nan_dense are constexpr or use
// std::numeric_limits, which the 16-bit types do not have), the spacing of 16-bit values, and the
// comparison with a float64 oracle under the 16-bit tolerance:
//
//   |got - want| <= 2 * ulp16(|want|) + terms * 2^-23 * bound
//
// where bound is the sum of the magnitudes of the result's terms (the oracle run on |inputs|) and
// terms the number of float32 roundings that can reach it (the row length plus a few).
//  - 2 ulp16: the result is rounded to 16 bits once (half an ulp), with an ulp of room for the
//    last float32 operations (alpha, beta, mean's division) landing next to a rounding boundary.
//  - terms * 2^-23 * bound: float32 accumulation. Products of two 16-bit values are exact in
//    float32 (11 + 11 significant bits fit in 24), so the error is the additions': at most
//    (n - 1) u32 * sum |terms| for n terms in any order (u32 = 2^-24, the worst case of recursive
//    summation; pairwise or tiled sums do better). 2^-23 * n = 2 n u32 covers that and the one or
//    two extra float32 roundings per term (a third factor, alpha). We use the worst-case n, not
//    the typical sqrt(n), so that the test never fails by chance; the term only matters where the
//    row is long (n > ~2^10) or the sum cancels: otherwise 2 ulp16 dominates by far, and a kernel
//    that accumulates in 16 bits or rounds an intermediate to 16 bits (error ~ u16 * bound, u16 =
//    2^-11 for f16, 2^-8 for bf16) fails it.
#pragma once

#include "common/conformance.hpp"

namespace sparseport::testing {

template <class V>
inline constexpr bool kIsHalf = std::is_same_v<V, half>;

struct Types16 {
  IndexType index = IndexType::i32;
  ValueType value = ValueType::f16;
};
inline std::string name(const Types16& t) { return std::string(name(t.index)) + "_" + name(t.value); }
inline constexpr Types16 kTypes16[] = {{IndexType::i32, ValueType::f16},
                                       {IndexType::i64, ValueType::f16},
                                       {IndexType::i32, ValueType::bf16},
                                       {IndexType::i64, ValueType::bf16}};

// Calls f.template operator()<I, V>() for the run-time types.
template <class F>
void with_types16(const Types16& t, F&& f) {
  if (t.index == IndexType::i32 && t.value == ValueType::f16) f.template operator()<int32_t, half>();
  if (t.index == IndexType::i64 && t.value == ValueType::f16) f.template operator()<int64_t, half>();
  if (t.index == IndexType::i32 && t.value == ValueType::bf16) f.template operator()<int32_t, bfloat16>();
  if (t.index == IndexType::i64 && t.value == ValueType::bf16) f.template operator()<int64_t, bfloat16>();
}

// ---- 16-bit scalars ------------------------------------------------------------------------------

template <class V>
V nan16() {
  return V(std::numeric_limits<float>::quiet_NaN());
}
template <class V>
V inf16() {
  return V(std::numeric_limits<float>::infinity());
}
template <class V>
bool isnan16(V v) {
  return std::isnan(static_cast<float>(v));
}
// What the padding between cols and ld of every 16-bit dense operand holds (-7776 in both types).
template <class V>
V padding16() {
  return V(-7777.0f);
}
// The unit roundoff of V: half an ulp at 1.
template <class V>
constexpr double u16() {
  return kIsHalf<V> ? 0x1p-11 : 0x1p-8;
}
// The largest finite V.
template <class V>
double max16() {
  return kIsHalf<V> ? 65504.0 : static_cast<double>(static_cast<float>(bfloat16::from_bits(0x7f7f)));
}

// The spacing of V's values at |x| (at 0 and among subnormals: the smallest subnormal).
template <class V>
double ulp16(double x) {
  constexpr int mantissa = kIsHalf<V> ? 10 : 7;
  constexpr int min_exp = kIsHalf<V> ? -14 : -126;
  x = std::fabs(x);
  const int e = (x == 0.0 || !std::isfinite(x)) ? min_exp : std::max(std::ilogb(x), min_exp);
  return std::ldexp(1.0, e - mantissa);
}

// x rounded to V (through float, as the library rounds a float32 result), back in double.
template <class V>
double round16(double x) {
  return static_cast<double>(static_cast<float>(V(static_cast<float>(x))));
}

// ---- 16-bit dense operands -----------------------------------------------------------------------

template <class V>
HostDense<V> filled16(int64_t rows, int64_t cols, int64_t ld, double fill) {
  HostDense<V> d(rows, cols, ld);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) d(i, j) = j < cols ? V(static_cast<float>(fill)) : padding16<V>();
  return d;
}

template <class V>
HostDense<V> nan_dense16(int64_t rows, int64_t cols, int64_t ld) {
  return filled16<V>(rows, cols, ld, std::numeric_limits<double>::quiet_NaN());
}

// Uniform in [lo, hi), rounded to V; padding beyond cols.
template <class V>
HostDense<V> random16(int64_t rows, int64_t cols, int64_t ld, std::mt19937_64& rng, double lo = -1.0,
                      double hi = 1.0) {
  HostDense<V> d(rows, cols, ld);
  std::uniform_real_distribution<double> val(lo, hi);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) d(i, j) = j < cols ? V(static_cast<float>(val(rng))) : padding16<V>();
  return d;
}

// Small integers from {-2, ..., 2}: products and their sums are exact, and many tie.
template <class V>
HostDense<V> ties16(int64_t rows, int64_t cols, int64_t ld, std::mt19937_64& rng) {
  HostDense<V> d(rows, cols, ld);
  std::uniform_int_distribution<int> pick(-2, 2);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) d(i, j) = j < cols ? V(static_cast<float>(pick(rng))) : padding16<V>();
  return d;
}

// A double oracle's result rounded to V (to pass as an input: out for the attention backward).
template <class V>
HostDense<V> rounded16(const HostDense<double>& d, int64_t ld) {
  HostDense<V> h(d.rows, d.cols, ld);
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < ld; ++j) h(i, j) = j < d.cols ? V(static_cast<float>(d(i, j))) : padding16<V>();
  return h;
}

// The same values in float (exact): the input of the float32 run that a 16-bit result must match.
template <class V>
HostDense<float> to_float(const HostDense<V>& d) {
  HostDense<float> f(d.rows, d.cols, d.ld);
  for (size_t k = 0; k < d.data.size(); ++k) f.data[k] = static_cast<float>(d.data[k]);
  return f;
}
template <class I, class V>
HostCsr<I, float> to_float(const HostCsr<I, V>& a) {
  HostCsr<I, float> f;
  f.rows = a.rows;
  f.cols = a.cols;
  f.rowptr = a.rowptr;
  f.colind = a.colind;
  for (const V& v : a.values) f.values.push_back(static_cast<float>(v));
  return f;
}

inline HostDense<double> column_of(const std::vector<double>& v) {
  HostDense<double> d(static_cast<int64_t>(v.size()), 1);
  d.data = v;
  return d;
}

// ---- comparison ----------------------------------------------------------------------------------

// got (16 bits) against want (the float64 oracle) over the rows x cols block, with the tolerance of
// the header comment; terms(i) counts the float32 roundings of row i. A want beyond V's range must
// come out as the infinity of its sign (f16: |want| >= 65520); a NaN want as a NaN; an infinite want
// as that infinity. The failure message gives |diff| in units of u16 * bound too: about 1 or more
// is the mark of a 16-bit intermediate (or a 16-bit accumulator).
// rounded: how many 16-bit intermediates the result went through (a backward op composed of
// forward ops, e.g. A.val / deg or attention's P and dS, stores each intermediate in the value type,
// as the float32 backward stores them in float32); each may add one u16 x sum|terms|.
// floor (optional): where an intermediate is a subnormal of V its rounding errs by up to half the
// smallest subnormal, not u16 of it; floor(i, j) sums what a unit error in each intermediate moves the
// result (attention_oracle's *_floor), and adds floor x ulp16(0) / 2. Only f16's subnormals (below
// 6.1e-5) matter: bf16's lie below 1.2e-38.
template <class V, class Terms>
void expect_close16(const HostDense<V>& got, const HostDense<double>& want, const HostDense<double>& bound,
                    Terms&& terms, const std::string& what, int rounded = 0,
                    const HostDense<double>* floor = nullptr) {
  ASSERT_EQ(got.rows, want.rows) << what;
  ASSERT_EQ(got.cols, want.cols) << what;
  int64_t bad = 0;
  double worst = 0.0;
  for (int64_t i = 0; i < got.rows; ++i) {
    for (int64_t j = 0; j < got.cols; ++j) {
      const double g = static_cast<double>(static_cast<float>(got(i, j))), w = want(i, j);
      const double b = bound(i, j);
      const double tol = 2.0 * ulp16<V>(w) +
                         (static_cast<double>(terms(i)) * 0x1p-23 + rounded * u16<V>()) * (std::isfinite(b) ? b : 0.0) +
                         (floor != nullptr ? (*floor)(i, j) * 0.5 * ulp16<V>(0.0) : 0.0);
      bool ok = false;
      if (std::isnan(w)) {
        ok = std::isnan(g);
      } else if (std::isinf(w) || std::isinf(round16<V>(w))) {
        ok = g == round16<V>(w) || std::fabs(g - w) <= tol;
      } else {
        ok = std::isfinite(g) && std::fabs(g - w) <= tol;
      }
      if (ok) continue;
      const double units = b > 0 ? std::fabs(g - w) / (u16<V>() * b) : std::numeric_limits<double>::infinity();
      worst = std::max(worst, units);
      if (++bad <= 5)
        ADD_FAILURE() << what << "[" << i << "," << j << "] is " << g << " but the float64 oracle says " << w
                      << " (|diff| " << std::fabs(g - w) << " > tolerance " << tol << "; " << terms(i)
                      << " terms, sum of |terms| " << b << ", |diff| = " << units << " x u16 x sum|terms|)";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.rows * got.cols
                    << " values differ from the float64 oracle (worst |diff| = " << worst << " x u16 x sum|terms|)";
}

// Elements between cols and ld of every row must still hold the padding.
template <class V>
void expect_padding16(const HostDense<V>& got, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = got.cols; j < got.ld; ++j) bad += got(i, j).bits == padding16<V>().bits ? 0 : 1;
  EXPECT_EQ(bad, 0) << what << ": " << bad << " padding elements beyond cols were overwritten";
}

// Bit-for-bit equality of two 16-bit blocks (NaN payloads included).
template <class V>
bool same_bits(const HostDense<V>& a, const HostDense<V>& b) {
  if (a.rows != b.rows || a.cols != b.cols || a.ld != b.ld) return false;
  for (size_t k = 0; k < a.data.size(); ++k)
    if (a.data[k].bits != b.data[k].bits) return false;
  return true;
}

// An error's message, or "no exception".
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace sparseport::testing
