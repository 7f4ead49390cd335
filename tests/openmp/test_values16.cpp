// SPDX-License-Identifier: Apache-2.0
// f16 and bf16 values in the openmp variants that take them (SPARSEPORT_VARIANT_VALUES16: spmm.rows,
// spmm.merge_path, sddmm.rows), each named through the options, and last_decision() must say that
// it ran on the 16-bit arrays (via_f32 false). Against a float64 oracle computed from the 16-bit
// inputs: F in
// {1, 5, 8, 16, 33, 64} (scalar loop, tails, whole tiles), sum/mean/max/min, beta 0 and 0.5 (with
// alpha 1 and -1.5), int32 and int64 indices, weighted and pattern A, a skewed matrix with empty
// rows (the first and last among them) and one long row that merge_path cuts. A result passes
// within |err| <= 2 ulp16(|ref|) + 2^-20 * sum|terms|: the output's one rounding to 16 bits plus
// float32 accumulation. spmm max/min's arg must be the oracle's exactly (products of two 16-bit
// values are exact in float32). Stores round once to nearest even: C = alpha * b must be exactly
// V(alpha * b), ties, subnormals, overflow, NaN and infinities included. Then what only a float32
// accumulator gets right: a row whose partial sums pass 65504 but whose sum does not stays finite
// in f16, and a row of 100000 ones sums to +inf in f16 and to bfloat16(100000) in bf16 (a 16-bit
// accumulator would stall at 2048 or 256).
// Registered twice in tests/CMakeLists.txt: the AVX2 kernels (F16C where the CPU has it) and the
// baseline kernels (SPARSEPORT_OPENMP_ISA=generic: the portable half conversions).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;

constexpr uint64_t kSeed = 1616;
constexpr int kThreads = 3;
const std::vector<int64_t> kWidths = {1, 5, 8, 16, 33, 64};

template <class V>
const char* type_name() {
  return std::is_same_v<V, half> ? "f16" : "bf16";
}

// The spacing of V's values at |x| (subnormal spacing below the smallest normal).
template <class V>
double ulp16(double x) {
  constexpr int kMantissa = std::is_same_v<V, half> ? 10 : 7;
  constexpr int kMinExp = std::is_same_v<V, half> ? -14 : -126;
  x = std::fabs(x);
  const int e = x > 0 && std::isfinite(x) ? std::max(std::ilogb(x), kMinExp) : kMinExp;
  return std::ldexp(1.0, e - kMantissa);
}

template <class V>
bool within(double got, double ref, double magnitude) {
  return std::isfinite(got) && std::fabs(got - ref) <= 2 * ulp16<V>(ref) + std::ldexp(magnitude, -20);
}

template <class V>
V rand16(std::mt19937_64& rng, double lo, double hi) {
  return V(static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng)));
}

// rows x cols: the first and last row empty, about a quarter of the others empty, the rest of
// degree 1..12, and row rows/2 holding `long_row` entries; columns random (unsorted, repeats allowed).
template <class I, class V>
HostCsr<I, V> skewed(int64_t rows, int64_t cols, int64_t long_row, bool pattern, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> deg(1, 12), col(0, cols - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t d = i == rows / 2 ? long_row : (i == 0 || i == rows - 1 || u(rng) < 0.25 ? 0 : deg(rng));
    for (; d > 0; --d) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (!pattern) a.values.push_back(rand16<V>(rng, -1.0, 1.0));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

template <class V>
HostDense<V> random_dense(int64_t rows, int64_t cols, int64_t ld, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostDense<V> d(rows, cols, ld);
  for (V& x : d.data) x = rand16<V>(rng, lo, hi);
  return d;
}

SpmmOptions options(Reduce r, double alpha, double beta, const std::string& variant) {
  SpmmOptions o;
  o.reduce = r;
  o.alpha = alpha;
  o.beta = beta;
  o.variant = variant;
  return o;
}

// The float64 oracle of one row of spmm (and of its arg for max/min): C[i,f] before and after.
struct RowRef {
  double value = 0, magnitude = 0;
  int64_t arg = -1;
};

template <class I, class V>
RowRef spmm_ref(const HostCsr<I, V>& a, const HostDense<V>& b, int64_t i, int64_t f, Reduce r, double alpha,
                double beta, double old) {
  RowRef out;
  const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
  double red = 0, sum_abs = 0;
  for (int64_t e = e0; e < e1; ++e) {
    const double w = a.is_pattern() ? 1.0 : static_cast<float>(a.values[static_cast<size_t>(e)]);
    const double x = w * static_cast<float>(b(a.colind[static_cast<size_t>(e)], f));
    sum_abs += std::fabs(x);
    if (r == Reduce::sum || r == Reduce::mean) {
      red += x;
    } else if (e == e0 || (r == Reduce::max ? x > red : x < red)) {
      red = x;
      out.arg = e;
    }
  }
  double mag = sum_abs;
  if (r == Reduce::mean && e1 > e0) {
    red /= static_cast<double>(e1 - e0);
    mag /= static_cast<double>(e1 - e0);
  }
  if (r == Reduce::max || r == Reduce::min) mag = std::fabs(red);
  out.value = alpha * red + beta * old;
  out.magnitude = std::fabs(alpha) * mag + std::fabs(beta * old);
  return out;
}

bool records_arg(Reduce r) { return r == Reduce::max || r == Reduce::min; }

// The call just made ran `variant` itself on the 16-bit arrays, not on float32 copies.
void expect_native(const std::string& variant) {
  const Decision d = last_decision();
  EXPECT_FALSE(d.via_f32) << variant << " ran on float32 copies (" << d.reason << ")";
  EXPECT_EQ(d.variant, variant);
}

// Every width, reduce, beta and A with or without values, for one variant, V and I.
template <class I, class V>
void check_spmm(const std::string& variant) {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kThreads);
  uint64_t seed = kSeed;
  for (const bool pattern : {false, true}) {
    const HostCsr<I, V> a = skewed<I, V>(1500, 900, 4000, pattern, seed++);
    for (const int64_t F : kWidths) {
      const HostDense<V> b = random_dense<V>(a.cols, F, F + 3, -2.0, 2.0, seed++);
      const HostDense<V> c0 = random_dense<V>(a.rows, F, F + 1, -1.0, 1.0, seed++);
      for (const Reduce r : {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min})
        for (const double beta : {0.0, 0.5}) {
          const double alpha = beta == 0.0 ? 1.0 : -1.5;
          SCOPED_TRACE(variant + ", " + type_name<V>() + (sizeof(I) == 8 ? ", int64" : ", int32") +
                       (pattern ? ", pattern" : "") + ", F " + std::to_string(F) + ", " + name(r) + ", alpha " +
                       std::to_string(alpha) + ", beta " + std::to_string(beta));
          HostDense<V> c = c0;
          spmm(ctx, a.view(), b.view(), c.mut(), options(r, alpha, beta, variant));
          expect_native(variant);
          // spmm.rows records arg for max/min: the same values, and the oracle's winners.
          const bool with_arg = variant == "spmm.rows" && records_arg(r);
          HostDense<V> ca = c0;
          std::vector<I> arg(static_cast<size_t>(a.rows * F), I(-7));
          if (with_arg) {
            const ArgMutView av{a.rows, F, F, arg.data(), index_type_of<I>()};
            spmm_arg(ctx, a.view(), b.view(), ca.mut(), av, options(r, alpha, beta, variant));
            expect_native(variant);
          }
          int64_t bad = 0;
          for (int64_t i = 0; i < a.rows; ++i)
            for (int64_t f = 0; f < F; ++f) {
              const RowRef ref = spmm_ref(a, b, i, f, r, alpha, beta, static_cast<float>(c0(i, f)));
              const double got = static_cast<float>(c(i, f));
              if (!within<V>(got, ref.value, ref.magnitude) && bad++ < 5)
                ADD_FAILURE() << "C[" << i << "," << f << "] = " << got << ", want " << ref.value << " (terms "
                              << ref.magnitude << ")";
              if (!with_arg) continue;
              const double got_a = static_cast<float>(ca(i, f));
              const I got_arg = arg[static_cast<size_t>(i * F + f)];
              if ((got_a != got || got_arg != static_cast<I>(ref.arg)) && bad++ < 5)
                ADD_FAILURE() << "spmm_arg at [" << i << "," << f << "]: C " << got_a << " (spmm: " << got
                              << "), arg " << got_arg << ", want " << ref.arg;
            }
          EXPECT_EQ(bad, 0);
        }
    }
  }
}

TEST(OpenMPValues16, FlaggedVariants) {
  const Context ctx = Context::create("openmp");
  for (const VariantInfo& v : ctx.plugin().variants) {
    const bool want = v.name == "spmm.rows" || v.name == "spmm.merge_path" || v.name == "sddmm.rows";
    EXPECT_EQ(v.values16, want) << v.name;
  }
}

TEST(OpenMPValues16, SpmmRowsF16I32) { check_spmm<int32_t, half>("spmm.rows"); }
TEST(OpenMPValues16, SpmmRowsF16I64) { check_spmm<int64_t, half>("spmm.rows"); }
TEST(OpenMPValues16, SpmmRowsBf16I32) { check_spmm<int32_t, bfloat16>("spmm.rows"); }
TEST(OpenMPValues16, SpmmRowsBf16I64) { check_spmm<int64_t, bfloat16>("spmm.rows"); }
TEST(OpenMPValues16, SpmmMergePathF16I32) { check_spmm<int32_t, half>("spmm.merge_path"); }
TEST(OpenMPValues16, SpmmMergePathF16I64) { check_spmm<int64_t, half>("spmm.merge_path"); }
TEST(OpenMPValues16, SpmmMergePathBf16I32) { check_spmm<int32_t, bfloat16>("spmm.merge_path"); }
TEST(OpenMPValues16, SpmmMergePathBf16I64) { check_spmm<int64_t, bfloat16>("spmm.merge_path"); }

template <class I, class V>
void check_sddmm() {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kThreads);
  uint64_t seed = kSeed + 500;
  OpOptions opt;
  opt.variant = "sddmm.rows";
  for (const bool pattern : {false, true}) {
    const HostCsr<I, V> a = skewed<I, V>(700, 600, 2000, pattern, seed++);
    for (const int64_t F : kWidths) {
      SCOPED_TRACE(std::string("sddmm.rows, ") + type_name<V>() + (sizeof(I) == 8 ? ", int64" : ", int32") +
                   (pattern ? ", pattern" : "") + ", F " + std::to_string(F));
      const HostDense<V> x = random_dense<V>(a.rows, F, F + 2, -2.0, 2.0, seed++);
      const HostDense<V> y = random_dense<V>(a.cols, F, F, -2.0, 2.0, seed++);
      HostDense<V> out(a.nnz(), 1, 2, V(-3.0f));  // ld 2: a strided output
      sddmm(ctx, a.view(), x.view(), y.view(), out.mut(), opt);
      expect_native("sddmm.rows");
      int64_t bad = 0;
      for (int64_t i = 0; i < a.rows; ++i)
        for (int64_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
          const int64_t j = a.colind[static_cast<size_t>(e)];
          double dot = 0, mag = 0;
          for (int64_t f = 0; f < F; ++f) {
            const double p = static_cast<double>(static_cast<float>(x(i, f))) * static_cast<float>(y(j, f));
            dot += p;
            mag += std::fabs(p);
          }
          const double w = a.is_pattern() ? 1.0 : static_cast<float>(a.values[static_cast<size_t>(e)]);
          const double got = static_cast<float>(out(e, 0));
          if (!within<V>(got, w * dot, std::fabs(w) * mag) && bad++ < 5)
            ADD_FAILURE() << "out[" << e << "] = " << got << ", want " << w * dot;
          EXPECT_EQ(static_cast<float>(out(e, 1)), -3.0f) << "the padding of out was written";
        }
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST(OpenMPValues16, SddmmF16I32) { check_sddmm<int32_t, half>(); }
TEST(OpenMPValues16, SddmmF16I64) { check_sddmm<int64_t, half>(); }
TEST(OpenMPValues16, SddmmBf16I32) { check_sddmm<int32_t, bfloat16>(); }
TEST(OpenMPValues16, SddmmBf16I64) { check_sddmm<int64_t, bfloat16>(); }

// ---- one rounding, to nearest even -------------------------------------------------------------

// C = alpha * B[perm] with one entry per row: the float32 value is alpha * b, one float32 multiply,
// so the stored value must be exactly V(alpha * b), sign of zero included. A random alpha of 24
// significant bits puts the products between 16-bit values; alpha = 1.5 puts about half of them
// exactly halfway (b's last bit set), where only round-half-to-even gives the right neighbour.
// B mixes ordinary values with ones that round to subnormals or overflow, and NaN and +-inf.
template <class V>
void check_rounding(const std::string& variant) {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kThreads);
  std::mt19937_64 rng(kSeed + 900);
  const int64_t n = 900;
  HostCsr<int32_t, V> a;  // a pattern: row i holds column (7 i) mod n
  a.rows = a.cols = n;
  for (int64_t i = 0; i < n; ++i) {
    a.colind.push_back(static_cast<int32_t>(i * 7 % n));
    a.rowptr.push_back(static_cast<int32_t>(i + 1));
  }
  const double big = std::is_same_v<V, half> ? 65504.0 : 1e38;
  const double tiny = std::is_same_v<V, half> ? 1e-6 : 1e-39;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (const int64_t F : kWidths) {
    SCOPED_TRACE(variant + ", " + type_name<V>() + ", F " + std::to_string(F));
    HostDense<V> b(n, F);
    for (V& x : b.data) {
      const double k = u(rng);
      x = k < 0.8    ? rand16<V>(rng, -2.0, 2.0)
          : k < 0.88 ? rand16<V>(rng, -tiny, tiny)
          : k < 0.96 ? rand16<V>(rng, -big, big)
          : k < 0.98 ? V(std::numeric_limits<float>::quiet_NaN())
                     : V(k < 0.99 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
    }
    for (const Reduce r : {Reduce::sum, Reduce::max})
      for (const float alpha : {static_cast<float>(1.0 + u(rng) / 7), 1.5f}) {
        HostDense<V> c(n, F);
        spmm(ctx, a.view(), b.view(), c.mut(), options(r, alpha, 0.0, variant));
        expect_native(variant);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t f = 0; f < F; ++f) {
            // sum starts from +0, so a -0 in B sums to +0; max starts from -inf.
            const float x = static_cast<float>(b(a.colind[static_cast<size_t>(i)], f));
            const float want = static_cast<float>(V(alpha * (r == Reduce::sum ? 0.0f + x : x)));
            const float got = static_cast<float>(c(i, f));
            const bool same =
                std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
            if (!same && bad++ < 5)
              ADD_FAILURE() << name(r) << ", alpha " << alpha << ": C[" << i << "," << f << "] = " << got << ", want "
                            << want;
          }
        EXPECT_EQ(bad, 0);
      }
  }
}

TEST(OpenMPValues16, SpmmRoundsOnceToNearestEven) {
  for (const std::string variant : {"spmm.rows", "spmm.merge_path"}) {
    check_rounding<half>(variant);
    check_rounding<bfloat16>(variant);
  }
}

// ---- float32 accumulation --------------------------------------------------------------------------

// One row of A (rows x 1 matrix of `n` entries of value `w`) times B whose rows are all `bval`,
// through `variant` at width F; returns C's row as floats.
template <class V>
std::vector<float> one_row(const Context& ctx, const std::string& variant, const std::vector<float>& w,
                           float bval, int64_t F, Reduce r, double alpha) {
  const int64_t n = static_cast<int64_t>(w.size());
  HostCsr<int32_t, V> a;
  a.rows = 1;
  a.cols = n;
  for (int64_t e = 0; e < n; ++e) {
    a.colind.push_back(static_cast<int32_t>(e));
    a.values.push_back(V(w[static_cast<size_t>(e)]));
  }
  a.rowptr.push_back(static_cast<int32_t>(n));
  HostDense<V> b(n, F, F, V(bval));
  HostDense<V> c(1, F, F, V(0.0f));
  spmm(ctx, a.view(), b.view(), c.mut(), options(r, alpha, 0.0, variant));
  expect_native(variant);
  std::vector<float> got;
  for (int64_t f = 0; f < F; ++f) got.push_back(static_cast<float>(c(0, f)));
  return got;
}

// Products 40000, 40000, -20000: the partial sum 80000 is past f16's 65504, the sum 60000 is not.
TEST(OpenMPValues16, SpmmNearTheF16LimitStaysFinite) {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kThreads);
  for (const std::string variant : {"spmm.rows", "spmm.merge_path"})
    for (const int64_t F : kWidths) {
      SCOPED_TRACE(variant + ", F " + std::to_string(F));
      for (const float g : one_row<half>(ctx, variant, {200, 200, -100}, 200, F, Reduce::sum, 1.0))
        EXPECT_EQ(g, 60000.0f);
      for (const float g : one_row<half>(ctx, variant, {200, 200, -100}, 200, F, Reduce::mean, 1.0))
        EXPECT_EQ(g, 20000.0f);
      for (const float g : one_row<bfloat16>(ctx, variant, {200, 200, -100}, 200, F, Reduce::sum, 1.0))
        EXPECT_EQ(g, static_cast<float>(bfloat16(60000.0f)));
    }
}

// 100000 entries of 1: the sum is exact in float32, +inf once rounded to f16, bfloat16(100000) in
// bf16; the mean is 1 in both; alpha 0.5 brings f16's sum back into range (half(50000)). merge_path
// cuts the row into pieces whose carries add up in float32 too.
TEST(OpenMPValues16, SpmmLongRowOfOnes) {
  Context ctx = Context::create("openmp");
  ctx.set_threads(kThreads);
  const std::vector<float> ones(100000, 1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::string variant : {"spmm.rows", "spmm.merge_path"})
    for (const int64_t F : {int64_t{1}, int64_t{5}, int64_t{16}, int64_t{33}}) {
      SCOPED_TRACE(variant + ", F " + std::to_string(F));
      for (const float g : one_row<half>(ctx, variant, ones, 1, F, Reduce::sum, 1.0)) EXPECT_EQ(g, inf);
      for (const float g : one_row<half>(ctx, variant, ones, 1, F, Reduce::sum, 0.5))
        EXPECT_EQ(g, static_cast<float>(half(50000.0f)));
      for (const float g : one_row<half>(ctx, variant, ones, 1, F, Reduce::mean, 1.0)) EXPECT_EQ(g, 1.0f);
      for (const float g : one_row<bfloat16>(ctx, variant, ones, 1, F, Reduce::sum, 1.0))
        EXPECT_EQ(g, static_cast<float>(bfloat16(100000.0f)));
      for (const float g : one_row<bfloat16>(ctx, variant, ones, 1, F, Reduce::mean, 1.0)) EXPECT_EQ(g, 1.0f);
    }
}

// sddmm: a dot of 100000 ones, and one whose partial sums pass f16's limit.
template <class V>
float one_dot(const Context& ctx, const std::vector<float>& x, const std::vector<float>& y) {
  const int64_t F = static_cast<int64_t>(x.size());
  HostCsr<int32_t, V> a;
  a.rows = a.cols = 1;
  a.colind = {0};
  a.values = {V(1.0f)};
  a.rowptr.push_back(1);
  HostDense<V> xd(1, F), yd(1, F), out(1, 1);
  for (int64_t f = 0; f < F; ++f) {
    xd(0, f) = V(x[static_cast<size_t>(f)]);
    yd(0, f) = V(y[static_cast<size_t>(f)]);
  }
  OpOptions opt;
  opt.variant = "sddmm.rows";
  sddmm(ctx, a.view(), xd.view(), yd.view(), out.mut(), opt);
  expect_native("sddmm.rows");
  return static_cast<float>(out(0, 0));
}

TEST(OpenMPValues16, SddmmFloat32Dot) {
  const Context ctx = Context::create("openmp");
  const std::vector<float> ones(100000, 1.0f);
  EXPECT_EQ(one_dot<half>(ctx, ones, ones), std::numeric_limits<float>::infinity());
  EXPECT_EQ(one_dot<bfloat16>(ctx, ones, ones), static_cast<float>(bfloat16(100000.0f)));
  // 40000 in lanes 0 and 8 (the two vector accumulators), -20000 in lane 1: 60000.
  std::vector<float> x(16, 0.0f), y(16, 0.0f);
  x[0] = x[8] = 200, y[0] = y[8] = 200, x[1] = 100, y[1] = -200;
  EXPECT_EQ(one_dot<half>(ctx, x, y), 60000.0f);
  EXPECT_EQ(one_dot<bfloat16>(ctx, x, y), static_cast<float>(bfloat16(60000.0f)));
}

}  // namespace
