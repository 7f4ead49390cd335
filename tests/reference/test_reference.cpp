// SPDX-License-Identifier: Apache-2.0
// Tier 1: the reference plugin against small cases worked out by hand, through the public API.
// Every expected number below was computed on paper from the inputs next to it (the comments
// show the arithmetic), never by running the code under test. Numeric ops run both reference
// variants (accumulating in the value type and in double).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

const sp::Context& ref() {
  static const sp::Context ctx = sp::Context::create("reference");
  return ctx;
}

// Both reference variants of an op ("spmm.serial", "spmm.serial_f64acc").
std::vector<std::string> variants(sparseport_op op) {
  std::vector<std::string> v = sp::plugin("reference").variants_of(op);
  EXPECT_EQ(v.size(), 2u) << "the reference should offer a value-type and a double-accumulating variant of "
                          << sp::op_name(op);
  return v;
}

constexpr double kPad = 1000.0;  // what padding beyond cols holds; must never be read or written
const double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class V>
sp::HostDense<V> dense(int64_t rows, int64_t cols, std::vector<double> row_major, int64_t ld = -1) {
  sp::HostDense<V> d(rows, cols, ld < 0 ? cols : ld, static_cast<V>(kPad));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) d(i, j) = static_cast<V>(row_major[static_cast<size_t>(i * cols + j)]);
  return d;
}

template <class V>
sp::HostDense<V> filled(int64_t rows, int64_t cols, double v, int64_t ld = -1) {
  return dense<V>(rows, cols, std::vector<double>(static_cast<size_t>(rows * cols), v), ld);
}

// want is row-major rows x cols; padding beyond cols must still hold kPad.
template <class V>
void expect_dense(const sp::HostDense<V>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(got.rows * got.cols), want.size()) << what;
  const double eps = std::numeric_limits<V>::epsilon();
  for (int64_t i = 0; i < got.rows; ++i) {
    for (int64_t j = 0; j < got.ld; ++j) {
      const double g = got(i, j);
      if (j >= got.cols) {
        EXPECT_EQ(g, kPad) << what << ": padding [" << i << "," << j << "] was overwritten";
        continue;
      }
      const double w = want[static_cast<size_t>(i * got.cols + j)];
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(g)) << what << "[" << i << "," << j << "] is " << g << ", want NaN";
      } else {
        EXPECT_NEAR(g, w, 4 * eps * std::max(1.0, std::fabs(w))) << what << "[" << i << "," << j << "]";
      }
    }
  }
}

template <class I, class V>
sp::HostCsr<I, V> csr(int64_t rows, int64_t cols, std::vector<I> rowptr, std::vector<I> colind,
                      std::vector<V> values = {}) {
  sp::HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr = std::move(rowptr);
  a.colind = std::move(colind);
  a.values = std::move(values);
  return a;
}

// The running example, 3 x 4:
//   row 0: (0,1)=2  (0,3)=-1
//   row 1: empty
//   row 2: (2,0)=1  (2,1)=3  (2,2)=0.5
template <class I, class V>
sp::HostCsr<I, V> example(bool pattern = false) {
  return csr<I, V>(3, 4, {0, 2, 2, 5}, {1, 3, 0, 1, 2}, pattern ? std::vector<V>{} : std::vector<V>{2, -1, 1, 3, 0.5});
}
// B (4 x 2): B0 = [1 2], B1 = [3 -1], B2 = [4 0], B3 = [-2 5].
const std::vector<double> kB = {1, 2, 3, -1, 4, 0, -2, 5};

// ---- spmm ------------------------------------------------------------------------------------
//
// Terms A[i,j] * B[j,:]:
//   row 0: 2*B1 = [6 -2], -1*B3 = [2 -5]
//   row 2: 1*B0 = [1 2], 3*B1 = [9 -3], 0.5*B2 = [2 0]

template <class I, class V>
void check_spmm_reduces(const std::string& variant) {
  const auto a = example<I, V>();
  const auto b = dense<V>(4, 2, kB);
  struct Case {
    sp::Reduce reduce;
    std::vector<double> want;
  };
  const Case cases[] = {
      {sp::Reduce::sum, {8, -7, 0, 0, 12, -1}},          // [6+2, -2-5]; [1+9+2, 2-3+0]
      {sp::Reduce::mean, {4, -3.5, 0, 0, 4, -1.0 / 3}},  // sums / 2 and / 3
      {sp::Reduce::max, {6, -2, 0, 0, 9, 2}},            // empty row 1 gives 0 for every reduce
      {sp::Reduce::min, {2, -5, 0, 0, 1, -3}},
  };
  for (const Case& c : cases) {
    auto out = filled<V>(3, 2, kNaN);
    sp::spmm(ref(), a.view(), b.view(), out.mut(), {c.reduce, 1.0, 0.0, variant});
    expect_dense(out, c.want, variant + " reduce " + sp::name(c.reduce));
  }
}

TEST(ReferenceSpmm, EveryReduceFloatInt32) {
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) check_spmm_reduces<int32_t, float>(v);
}

TEST(ReferenceSpmm, EveryReduceDoubleInt64) {
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) check_spmm_reduces<int64_t, double>(v);
}

TEST(ReferenceSpmm, AlphaBeta) {
  const auto a = example<int32_t, float>();
  const auto b = dense<float>(4, 2, kB);
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    // sum with alpha 2, beta -1, C0 = [1 1; 5 -5; 0.5 2]:
    //   row 0: 2*[8 -7] - [1 1] = [15 -15]; row 1: 0 - [5 -5] = [-5 5]; row 2: 2*[12 -1] - [0.5 2] = [23.5 -4]
    auto c = dense<float>(3, 2, {1, 1, 5, -5, 0.5, 2});
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 2.0, -1.0, v});
    expect_dense(c, {15, -15, -5, 5, 23.5, -4}, v + " sum");
    // max with alpha -1, beta 0.5: row 0: -[6 -2] + [0.5 0.5] = [-5.5 2.5]; row 1: [2.5 -2.5];
    //   row 2: -[9 2] + [0.25 1] = [-8.75 -1]
    c = dense<float>(3, 2, {1, 1, 5, -5, 0.5, 2});
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::max, -1.0, 0.5, v});
    expect_dense(c, {-5.5, 2.5, 2.5, -2.5, -8.75, -1}, v + " max");
  }
}

TEST(ReferenceSpmm, BetaZeroIgnoresNaNInC) {
  const auto a = example<int32_t, float>();
  const auto b = dense<float>(4, 2, kB);
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = filled<float>(3, 2, kNaN);
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 3.0, 0.0, v});
    expect_dense(c, {24, -21, 0, 0, 36, -3}, v);  // 3 * [8 -7; 0 0; 12 -1], no NaN anywhere
  }
}

TEST(ReferenceSpmm, PatternMeansValuesOfOne) {
  const auto a = example<int32_t, double>(/*pattern=*/true);
  const auto b = dense<double>(4, 2, kB);
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = filled<double>(3, 2, kNaN);
    // row 0: B1 + B3 = [1 4]; row 2: B0 + B1 + B2 = [8 1]
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 1.0, 0.0, v});
    expect_dense(c, {1, 4, 0, 0, 8, 1}, v + " sum");
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::mean, 1.0, 0.0, v});
    expect_dense(c, {0.5, 2, 0, 0, 8.0 / 3, 1.0 / 3}, v + " mean");
    // row 0: max(B1, B3) = [3 5]; row 2: max(B0, B1, B2) = [4 2]
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::max, 1.0, 0.0, v});
    expect_dense(c, {3, 5, 0, 0, 4, 2}, v + " max");
  }
}

TEST(ReferenceSpmm, LeadingDimensionsLargerThanCols) {
  const auto a = example<int64_t, float>();
  const auto b = dense<float>(4, 2, kB, /*ld=*/3);  // padding holds kPad: reading it would show
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = filled<float>(3, 2, 99.0, /*ld=*/5);
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 1.0, 0.0, v});
    expect_dense(c, {8, -7, 0, 0, 12, -1}, v);  // and columns 2..4 of C keep kPad
  }
}

TEST(ReferenceSpmm, RepeatedColumnsCountSeparately) {
  // One row: (0,1)=1 (0,1)=2 (0,3)=1 -> terms B1 = [3 -1], 2*B1 = [6 -2], B3 = [-2 5]
  const auto a = csr<int32_t, float>(1, 4, {0, 3}, {1, 1, 3}, {1, 2, 1});
  const auto b = dense<float>(4, 2, kB);
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = filled<float>(1, 2, kNaN);
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 1.0, 0.0, v});
    expect_dense(c, {7, 2}, v + " sum");
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::mean, 1.0, 0.0, v});
    expect_dense(c, {7.0 / 3, 2.0 / 3}, v + " mean");
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::max, 1.0, 0.0, v});
    expect_dense(c, {6, 5}, v + " max");
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::min, 1.0, 0.0, v});
    expect_dense(c, {-2, -2}, v + " min");
  }
}

TEST(ReferenceSpmm, NoNonzerosStillAppliesBeta) {
  const auto a = csr<int32_t, float>(2, 3, {0, 0, 0}, {}, {});
  const auto b = dense<float>(3, 2, {1, 2, 3, 4, 5, 6});
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = dense<float>(2, 2, {1, 2, 3, 4});
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::max, 5.0, 2.0, v});
    expect_dense(c, {2, 4, 6, 8}, v + " beta 2");  // 5 * 0 + 2 * C
    c = filled<float>(2, 2, kNaN);
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::sum, 5.0, 0.0, v});
    expect_dense(c, {0, 0, 0, 0}, v + " beta 0");
  }
}

// Documented choice (kernels/reference/reduce.hpp): NaN propagates through max and min.
TEST(ReferenceSpmm, NaNPropagatesThroughMaxAndMin) {
  const auto a = example<int32_t, double>();
  std::vector<double> b_nan = kB;
  b_nan[2] = kNaN;  // B1 = [NaN -1]: column 0 of rows 0 and 2 sees a NaN term
  const auto b = dense<double>(4, 2, b_nan);
  for (const std::string& v : variants(SPARSEPORT_OP_SPMM)) {
    auto c = filled<double>(3, 2, 0.0);
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::max, 1.0, 0.0, v});
    expect_dense(c, {kNaN, -2, 0, 0, kNaN, 2}, v + " max");
    sp::spmm(ref(), a.view(), b.view(), c.mut(), {sp::Reduce::min, 1.0, 0.0, v});
    expect_dense(c, {kNaN, -5, 0, 0, kNaN, -3}, v + " min");
  }
}

// ---- sddmm -----------------------------------------------------------------------------------
//
// X (3 x 2): X0 = [1 2], X1 = [5 5], X2 = [-1 1]; Y = B.
//   e0 (0,1): X0.B1 = 3 - 2 = 1    e1 (0,3): X0.B3 = -2 + 10 = 8    e2 (2,0): X2.B0 = -1 + 2 = 1
//   e3 (2,1): X2.B1 = -3 - 1 = -4  e4 (2,2): X2.B2 = -4 + 0 = -4

template <class I, class V>
void check_sddmm(const std::string& variant) {
  const auto x = dense<V>(3, 2, {1, 2, 5, 5, -1, 1});
  const auto y = dense<V>(4, 2, kB);
  auto out = filled<V>(5, 1, kNaN, /*ld=*/2);
  sp::sddmm(ref(), example<I, V>().view(), x.view(), y.view(), out.mut(), {variant});
  expect_dense(out, {2, -8, 1, -12, -2}, variant + " values");  // times A's values 2, -1, 1, 3, 0.5
  out = filled<V>(5, 1, kNaN);
  sp::sddmm(ref(), example<I, V>(true).view(), x.view(), y.view(), out.mut(), {variant});
  expect_dense(out, {1, 8, 1, -4, -4}, variant + " pattern");
}

TEST(ReferenceSddmm, ValuesPatternAndLeadingDimension) {
  for (const std::string& v : variants(SPARSEPORT_OP_SDDMM)) {
    check_sddmm<int32_t, float>(v);
    check_sddmm<int64_t, double>(v);
  }
}

TEST(ReferenceSddmm, RepeatedAndUnsortedColumnsEachGetTheirOwnValue) {
  // Row 0: (0,3)=1 (0,1)=2 (0,3)=-1 with X0 = [1 2]: X0.B3 = 8, X0.B1 = 1 -> [8, 2, -8]
  const auto a = csr<int32_t, float>(1, 4, {0, 3}, {3, 1, 3}, {1, 2, -1});
  const auto x = dense<float>(1, 2, {1, 2});
  const auto y = dense<float>(4, 2, kB, 4);
  for (const std::string& v : variants(SPARSEPORT_OP_SDDMM)) {
    auto out = filled<float>(3, 1, kNaN);
    sp::sddmm(ref(), a.view(), x.view(), y.view(), out.mut(), {v});
    expect_dense(out, {8, 2, -8}, v);
  }
}

// ---- segment_reduce / scatter_reduce ---------------------------------------------------------
//
// index = [0 0 2 2 2] over N = 4 segments; src rows [1 2] [3 -4] | [5 0] [-1 1] [2 2].
// Segments 1 and 3 are empty (3 is trailing).

struct ReduceCase {
  sp::Reduce reduce;
  std::vector<double> want;
};
const ReduceCase kSegmentCases[] = {
    {sp::Reduce::sum, {4, -2, 0, 0, 6, 3, 0, 0}},
    {sp::Reduce::mean, {2, -1, 0, 0, 2, 1, 0, 0}},
    {sp::Reduce::max, {3, 2, 0, 0, 5, 2, 0, 0}},
    {sp::Reduce::min, {1, -4, 0, 0, -1, 0, 0, 0}},
};

template <class I, class V>
void check_segment(bool scatter, const std::string& variant) {
  // scatter_reduce gets the same messages shuffled: index [2 0 2 0 2].
  const std::vector<I> index = scatter ? std::vector<I>{2, 0, 2, 0, 2} : std::vector<I>{0, 0, 2, 2, 2};
  const auto src = scatter ? dense<V>(5, 2, {5, 0, 1, 2, -1, 1, 3, -4, 2, 2}, 3)
                           : dense<V>(5, 2, {1, 2, 3, -4, 5, 0, -1, 1, 2, 2}, 3);
  for (const ReduceCase& c : kSegmentCases) {
    auto out = filled<V>(4, 2, kNaN, 3);  // every element is overwritten, empty segments too
    const sp::IndexView idx = sp::make_index<I>(5, index.data());
    if (scatter)
      sp::scatter_reduce(ref(), idx, src.view(), out.mut(), {c.reduce, variant});
    else
      sp::segment_reduce(ref(), idx, src.view(), out.mut(), {c.reduce, variant});
    expect_dense(out, c.want, variant + " " + sp::name(c.reduce));
  }
}

TEST(ReferenceSegmentReduce, EveryReduceWithEmptySegments) {
  for (const std::string& v : variants(SPARSEPORT_OP_SEGMENT_REDUCE)) {
    check_segment<int32_t, float>(false, v);
    check_segment<int64_t, double>(false, v);
  }
}

TEST(ReferenceScatterReduce, EveryReduceInAnyOrder) {
  for (const std::string& v : variants(SPARSEPORT_OP_SCATTER_REDUCE)) {
    check_segment<int32_t, float>(true, v);
    check_segment<int64_t, double>(true, v);
  }
}

TEST(ReferenceSegmentReduce, NoMessagesGiveZeros) {
  for (const std::string& v : variants(SPARSEPORT_OP_SEGMENT_REDUCE)) {
    auto out = filled<float>(3, 2, kNaN);
    const sp::HostDense<float> src(0, 2);
    sp::segment_reduce(ref(), sp::make_index<int32_t>(0, nullptr), src.view(), out.mut(), {sp::Reduce::min, v});
    expect_dense(out, {0, 0, 0, 0, 0, 0}, v);
  }
}

// ---- gather_scatter --------------------------------------------------------------------------
//
// The running example's entries as edges (dst, src, w), with a fourth destination that gets no
// edge; x = B. So out rows 0..2 are the spmm results above and row 3 is 0.

template <class I, class V>
void check_gather(const std::string& variant) {
  const std::vector<I> dst = {0, 0, 2, 2, 2}, src = {1, 3, 0, 1, 2};
  const std::vector<V> w = {2, -1, 1, 3, 0.5};
  const auto x = dense<V>(4, 2, kB, 3);
  const ReduceCase cases[] = {
      {sp::Reduce::sum, {8, -7, 0, 0, 12, -1, 0, 0}},
      {sp::Reduce::mean, {4, -3.5, 0, 0, 4, -1.0 / 3, 0, 0}},
      {sp::Reduce::max, {6, -2, 0, 0, 9, 2, 0, 0}},
      {sp::Reduce::min, {2, -5, 0, 0, 1, -3, 0, 0}},
  };
  for (const ReduceCase& c : cases) {
    auto out = filled<V>(4, 2, kNaN);
    sp::gather_scatter(ref(), sp::make_coo<I, V>(4, 4, 5, dst.data(), src.data(), w.data()), x.view(), out.mut(),
                       {c.reduce, variant});
    expect_dense(out, c.want, variant + " " + sp::name(c.reduce));
  }
  // Unweighted: row 0: B1 + B3 = [1 4]; row 2: B0 + B1 + B2 = [8 1].
  auto out = filled<V>(4, 2, kNaN);
  sp::gather_scatter(ref(), sp::make_coo<I, V>(4, 4, 5, dst.data(), src.data(), nullptr), x.view(), out.mut(),
                     {sp::Reduce::sum, variant});
  expect_dense(out, {1, 4, 0, 0, 8, 1, 0, 0}, variant + " unweighted");
}

TEST(ReferenceGatherScatter, EveryReduceWeightedAndNot) {
  for (const std::string& v : variants(SPARSEPORT_OP_GATHER_SCATTER)) {
    check_gather<int32_t, float>(v);
    check_gather<int64_t, double>(v);
  }
}

// ---- csr_attention ---------------------------------------------------------------------------
//
// A (4 x 3, values ignored): row 0 keys {0, 1}; row 1 empty; row 2 keys {2, 2}; row 3 keys {0, 1}.
// Q0 = [1 0], Q1 = [7 7], Q2 = [5 5], Q3 = [100 0]; K0 = [0 1], K1 = [1 0], K2 = [2 2];
// V0 = [1 0 2], V1 = [0 1 2], V2 = [3 -3 1].
// With scale s: row 0 scores [0, s]: p = [1, e^s] / (1 + e^s), out = [p0, p1, 2].
//   row 2: two equal scores on the same key: out = V2. row 3 scores [0, 100 s]: without the
//   shift by the row maximum, exp(100) overflows float.

template <class I, class V>
void check_attention(const std::string& variant) {
  const std::vector<I> rp = {0, 2, 2, 4, 6}, ci = {0, 1, 2, 2, 0, 1};
  const std::vector<V> vals(6, V(5));
  const auto q = dense<V>(4, 2, {1, 0, 7, 7, 5, 5, 100, 0});
  const auto k = dense<V>(3, 2, {0, 1, 1, 0, 2, 2}, 3);
  const auto v = dense<V>(3, 3, {1, 0, 2, 0, 1, 2, 3, -3, 1});
  for (const double scale : {1.0, 0.0}) {
    const double s = scale != 0.0 ? scale : 1.0 / std::sqrt(2.0);  // 0: the default 1/sqrt(F)
    const double p1 = std::exp(s) / (1 + std::exp(s)), p3 = 1 / (1 + std::exp(-100 * s));
    const std::vector<double> want = {1 - p1, p1, 2, 0, 0, 0, 3, -3, 1, 1 - p3, p3, 2};
    for (const V* values : {vals.data(), static_cast<const V*>(nullptr)}) {
      auto out = filled<V>(4, 3, kNaN, 4);
      sp::csr_attention(ref(), sp::make_csr<I, V>(4, 3, 6, rp.data(), ci.data(), values), q.view(), k.view(), v.view(),
                        out.mut(), {scale, variant});
      expect_dense(out, want, variant + " scale " + std::to_string(scale) + (values ? " values" : " pattern"));
    }
  }
}

TEST(ReferenceAttention, SoftmaxRowsEmptyRowAndLargeScores) {
  for (const std::string& v : variants(SPARSEPORT_OP_CSR_ATTENTION)) {
    check_attention<int32_t, float>(v);
    check_attention<int64_t, double>(v);
  }
}

// ---- csr_slice_rows --------------------------------------------------------------------------
//
// Rows [2 0 2 1] of the running example: row 2 (cols 0 1 2, values 1 3 0.5), row 0 (cols 1 3,
// values 2 -1), row 2 again, row 1 (empty).

template <class I, class V>
void check_slice() {
  const auto a = example<I, V>();
  const std::vector<I> rows = {2, 0, 2, 1};
  const sp::CsrMatrix m = sp::csr_slice_rows(ref(), a.view(), sp::make_index<I>(4, rows.data()));
  const auto h = ref().to_host<I, V>(m);
  EXPECT_EQ(h.rows, 4);
  EXPECT_EQ(h.cols, 4);
  EXPECT_EQ(h.rowptr, (std::vector<I>{0, 3, 5, 8, 8}));
  EXPECT_EQ(h.colind, (std::vector<I>{0, 1, 2, 1, 3, 0, 1, 2}));
  EXPECT_EQ(h.values, (std::vector<V>{1, 3, 0.5, 2, -1, 1, 3, 0.5}));

  auto out = filled<V>(4, 4, kNaN, 6);  // zeroed first, so no NaN survives
  sp::csr_slice_rows_dense(ref(), a.view(), sp::make_index<I>(4, rows.data()), out.mut());
  expect_dense(out, {1, 3, 0.5, 0, 0, 2, 0, -1, 1, 3, 0.5, 0, 0, 0, 0, 0}, "dense");
}

TEST(ReferenceSliceRows, RepeatsAnyOrderAndEmptyRows) {
  check_slice<int32_t, float>();
  check_slice<int64_t, double>();
}

TEST(ReferenceSliceRows, KeepsUnsortedAndRepeatedColumnsInOrder) {
  // row 0: (0,3)=7 (0,0)=8; row 1: (1,2)=9. Rows [0 1 0].
  const auto a = csr<int32_t, float>(2, 4, {0, 2, 3}, {3, 0, 2}, {7, 8, 9});
  const std::vector<int32_t> rows = {0, 1, 0};
  const auto h = ref().to_host<int32_t, float>(sp::csr_slice_rows(ref(), a.view(), sp::make_index(3, rows.data())));
  EXPECT_EQ(h.rowptr, (std::vector<int32_t>{0, 2, 3, 5}));
  EXPECT_EQ(h.colind, (std::vector<int32_t>{3, 0, 2, 3, 0}));
  EXPECT_EQ(h.values, (std::vector<float>{7, 8, 9, 7, 8}));
}

TEST(ReferenceSliceRows, DenseAddsUpRepeatedColumns) {
  // One row: (0,1)=1 (0,1)=2 (0,3)=1 -> [0, 1+2, 0, 1]
  const auto a = csr<int32_t, double>(1, 4, {0, 3}, {1, 1, 3}, {1, 2, 1});
  const std::vector<int32_t> rows = {0, 0};
  auto out = filled<double>(2, 4, kNaN);
  sp::csr_slice_rows_dense(ref(), a.view(), sp::make_index(2, rows.data()), out.mut());
  expect_dense(out, {0, 3, 0, 1, 0, 3, 0, 1}, "dense");
}

TEST(ReferenceSliceRows, PatternStaysPattern) {
  const auto a = example<int32_t, float>(true);
  const std::vector<int32_t> rows = {1, 2};
  const sp::CsrMatrix m = sp::csr_slice_rows(ref(), a.view(), sp::make_index(2, rows.data()));
  EXPECT_TRUE(m.pattern);
  const auto h = ref().to_host<int32_t, float>(m);
  EXPECT_EQ(h.rowptr, (std::vector<int32_t>{0, 0, 3}));
  EXPECT_EQ(h.colind, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_TRUE(h.values.empty());
  // Dense rows of a pattern hold 1 where an entry is: row 0 has columns 1 and 3.
  auto out = filled<float>(1, 4, kNaN);
  const std::vector<int32_t> first = {0};
  sp::csr_slice_rows_dense(ref(), a.view(), sp::make_index(1, first.data()), out.mut());
  expect_dense(out, {0, 1, 0, 1}, "dense pattern");
}

TEST(ReferenceSliceRows, EmptySelection) {
  const auto a = example<int32_t, float>();
  const auto h =
      ref().to_host<int32_t, float>(sp::csr_slice_rows(ref(), a.view(), sp::make_index<int32_t>(0, nullptr)));
  EXPECT_EQ(h.rows, 0);
  EXPECT_EQ(h.rowptr, (std::vector<int32_t>{0}));
  EXPECT_TRUE(h.colind.empty());
}

// ---- csr_induced_subgraph --------------------------------------------------------------------
//
// A (4 x 4): row 0: (0,1)=1 (0,2)=2 (0,3)=3; row 1: (1,0)=4; row 2: (2,3)=5 (2,0)=6 (unsorted);
//            row 3: (3,3)=7.

template <class I, class V>
sp::HostCsr<I, V> square() {
  return csr<I, V>(4, 4, {0, 3, 4, 6, 7}, {1, 2, 3, 0, 3, 0, 3}, {1, 2, 3, 4, 5, 6, 7});
}

template <class I, class V>
sp::HostCsr<I, V> induced(const sp::HostCsr<I, V>& a, std::vector<I> vertices) {
  return ref().to_host<I, V>(sp::csr_induced_subgraph(
      ref(), a.view(), sp::make_index<I>(static_cast<int64_t>(vertices.size()), vertices.data())));
}

template <class I, class V>
void check_induced() {
  const auto a = square<I, V>();
  // vertices [2 0]: 2 -> 0, 0 -> 1. Row 2 keeps (2,0)=6 as column 1; row 0 keeps (0,2)=2 as column 0.
  auto h = induced(a, {2, 0});
  EXPECT_EQ(h.rows, 2);
  EXPECT_EQ(h.cols, 2);
  EXPECT_EQ(h.rowptr, (std::vector<I>{0, 1, 2}));
  EXPECT_EQ(h.colind, (std::vector<I>{1, 0}));
  EXPECT_EQ(h.values, (std::vector<V>{6, 2}));
  // vertices [0 2 3]: 0 -> 0, 2 -> 1, 3 -> 2. Row 0: (0,2)=2 (0,3)=3 -> cols 1 2; row 2 keeps A's
  // order (2,3)=5 (2,0)=6 -> cols 2 0; row 3: (3,3)=7 -> col 2.
  h = induced(a, {0, 2, 3});
  EXPECT_EQ(h.rowptr, (std::vector<I>{0, 2, 4, 5}));
  EXPECT_EQ(h.colind, (std::vector<I>{1, 2, 2, 0, 2}));
  EXPECT_EQ(h.values, (std::vector<V>{2, 3, 5, 6, 7}));
  // vertex [1] alone: its only neighbour 0 is outside, so no entry.
  h = induced(a, {1});
  EXPECT_EQ(h.rowptr, (std::vector<I>{0, 0}));
  EXPECT_TRUE(h.colind.empty());
  h = induced(a, {});
  EXPECT_EQ(h.rows, 0);
  EXPECT_EQ(h.rowptr, (std::vector<I>{0}));
}

TEST(ReferenceInducedSubgraph, RelabelsAndKeepsRowOrder) {
  check_induced<int32_t, float>();
  check_induced<int64_t, double>();
}

TEST(ReferenceInducedSubgraph, Pattern) {
  sp::HostCsr<int32_t, float> a = square<int32_t, float>();
  a.values.clear();
  const std::vector<int32_t> vertices = {3, 0, 2};
  const sp::CsrMatrix m = sp::csr_induced_subgraph(ref(), a.view(), sp::make_index(3, vertices.data()));
  EXPECT_TRUE(m.pattern);
  // 3 -> 0, 0 -> 1, 2 -> 2. Row 3: (3,3) -> 0; row 0: (0,2) -> 2, (0,3) -> 0; row 2: (2,3) -> 0, (2,0) -> 1.
  const auto h = ref().to_host<int32_t, float>(m);
  EXPECT_EQ(h.rowptr, (std::vector<int32_t>{0, 1, 3, 5}));
  EXPECT_EQ(h.colind, (std::vector<int32_t>{0, 2, 0, 0, 1}));
  EXPECT_TRUE(h.values.empty());
}

// ---- csr_transpose ---------------------------------------------------------------------------
//
// The running example transposed (4 x 3): column 0 of A holds (2,0)=1; column 1: (0,1)=2 (2,1)=3;
// column 2: (2,2)=0.5; column 3: (0,3)=-1.

template <class I, class V>
void check_transpose() {
  const auto h = ref().to_host<I, V>(sp::csr_transpose(ref(), example<I, V>().view()));
  EXPECT_EQ(h.rows, 4);
  EXPECT_EQ(h.cols, 3);
  EXPECT_EQ(h.rowptr, (std::vector<I>{0, 1, 3, 4, 5}));
  EXPECT_EQ(h.colind, (std::vector<I>{2, 0, 2, 2, 0}));
  EXPECT_EQ(h.values, (std::vector<V>{1, 2, 3, 0.5, -1}));
}

TEST(ReferenceTranspose, Example) {
  check_transpose<int32_t, float>();
  check_transpose<int64_t, double>();
}

TEST(ReferenceTranspose, StableForRepeatedAndUnsortedColumns) {
  // row 0: (0,1)=1 (0,0)=2 (0,1)=3; row 1: (1,1)=4.
  // A^T row 0: (0)=2; row 1: (0)=1 (0)=3 (storage order within A's row 0), then (1)=4.
  const auto a = csr<int32_t, float>(2, 2, {0, 3, 4}, {1, 0, 1, 1}, {1, 2, 3, 4});
  const auto h = ref().to_host<int32_t, float>(sp::csr_transpose(ref(), a.view()));
  EXPECT_EQ(h.rowptr, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(h.colind, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(h.values, (std::vector<float>{2, 1, 3, 4}));
}

TEST(ReferenceTranspose, EmptyAndPattern) {
  const auto none =
      ref().to_host<int32_t, float>(sp::csr_transpose(ref(), csr<int32_t, float>(2, 3, {0, 0, 0}, {}).view()));
  EXPECT_EQ(none.rows, 3);
  EXPECT_EQ(none.cols, 2);
  EXPECT_EQ(none.rowptr, (std::vector<int32_t>{0, 0, 0, 0}));
  const auto no_rows =
      ref().to_host<int64_t, float>(sp::csr_transpose(ref(), csr<int64_t, float>(0, 3, {0}, {}).view()));
  EXPECT_EQ(no_rows.rows, 3);
  EXPECT_EQ(no_rows.cols, 0);
  EXPECT_EQ(no_rows.rowptr, (std::vector<int64_t>{0, 0, 0, 0}));
  const sp::CsrMatrix m = sp::csr_transpose(ref(), example<int32_t, float>(true).view());
  EXPECT_TRUE(m.pattern);
  const auto h = ref().to_host<int32_t, float>(m);
  EXPECT_EQ(h.colind, (std::vector<int32_t>{2, 0, 2, 2, 0}));
  EXPECT_TRUE(h.values.empty());
}

}  // namespace
