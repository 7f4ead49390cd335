// SPDX-License-Identifier: Apache-2.0
// Graph generators, load_graph on specs, graph_info and fill_random: shapes, degree properties,
// canonical output, determinism, refusals with their messages, golden checksums, and statistics
// checked against hand-computed answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

template <class I, class V>
int64_t degree(const sp::HostCsr<I, V>& a, int64_t i) {
  return static_cast<int64_t>(a.rowptr[static_cast<size_t>(i) + 1] - a.rowptr[static_cast<size_t>(i)]);
}

template <class I, class V>
std::vector<int64_t> row_cols(const sp::HostCsr<I, V>& a, int64_t i) {
  return {a.colind.begin() + a.rowptr[static_cast<size_t>(i)], a.colind.begin() + a.rowptr[static_cast<size_t>(i) + 1]};
}

// Canonical CSR (sorted, unique, in range), square, values present and in [0.5, 1.5).
template <class I, class V>
void expect_well_formed(const sp::HostCsr<I, V>& a, const std::string& spec) {
  SCOPED_TRACE(spec);
  const sp::Validation v = sp::validate(a.view());
  EXPECT_TRUE(v.canonical()) << v.message;
  EXPECT_EQ(a.rows, a.cols);
  ASSERT_EQ(a.values.size(), a.colind.size());
  for (const V x : a.values) {
    ASSERT_GE(x, V(0.5));
    ASSERT_LT(x, V(1.5));
  }
}

// FNV-1a over 64-bit words of the shape, structure and value bits. Indices and values enter as
// integers, not raw bytes, so the checksum does not depend on byte order or index width.
struct Checksum {
  uint64_t h = 0xcbf29ce484222325ULL;
  void add(uint64_t w) {
    for (int b = 0; b < 8; ++b) {
      h ^= (w >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ULL;
    }
  }
};
template <class I, class V>
uint64_t structure_checksum(const sp::HostCsr<I, V>& a) {
  Checksum c;
  c.add(static_cast<uint64_t>(a.rows));
  c.add(static_cast<uint64_t>(a.cols));
  for (const I p : a.rowptr) c.add(static_cast<uint64_t>(p));
  for (const I j : a.colind) c.add(static_cast<uint64_t>(j));
  return c.h;
}
uint64_t bits(float x) { return std::bit_cast<uint32_t>(x); }
uint64_t bits(double x) { return std::bit_cast<uint64_t>(x); }
template <class V>
uint64_t values_checksum(const std::vector<V>& values) {
  Checksum c;
  for (const V x : values) c.add(bits(x));
  return c.h;
}

template <class I, class V>
void expect_same(const sp::HostCsr<I, V>& a, const sp::HostCsr<I, V>& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.rowptr, b.rowptr);
  EXPECT_EQ(a.colind, b.colind);
  EXPECT_EQ(a.values, b.values);
}

// Expects generate(spec) to throw InvalidArgument whose message names the spec and contains
// every one of `parts`.
template <class I = int32_t>
void expect_refused(const std::string& spec, const std::vector<std::string>& parts) {
  SCOPED_TRACE(spec);
  try {
    (void)sp::generate<I, float>(spec);
    ADD_FAILURE() << "generate accepted '" << spec << "'";
  } catch (const sp::InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + spec + "'"), std::string::npos) << msg;
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
  }
}

}  // namespace

// ---- Erdos-Renyi -------------------------------------------------------------------------------

TEST(GeneratorEr, ShapeCanonicalAndNnzNearNSquaredP) {
  const auto a = sp::generate<int32_t, float>("er:2000:0.01");
  expect_well_formed(a, "er:2000:0.01");
  EXPECT_EQ(a.rows, 2000);
  // Binomial(4e6, 0.01): mean 40000, sd 199; 6 sd is far beyond chance for a correct sampler.
  EXPECT_NEAR(static_cast<double>(a.nnz()), 40000.0, 6 * 199.0);
}

TEST(GeneratorEr, EntriesAreSpreadOverRowsAndColumns) {
  const int64_t n = 1000;
  const auto a = sp::generate<int32_t, float>("er:1000:0.02");
  // Each row's degree is Binomial(1000, 0.02): mean 20, sd 4.4; each column's count likewise.
  std::vector<int64_t> col_count(static_cast<size_t>(n), 0);
  int64_t upper = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LT(degree(a, i), 20 + 7 * 5) << "row " << i;
    for (const int64_t j : row_cols(a, i)) {
      ++col_count[static_cast<size_t>(j)];
      if (j > i) ++upper;
    }
  }
  EXPECT_LT(*std::max_element(col_count.begin(), col_count.end()), 20 + 7 * 5);
  EXPECT_GT(*std::min_element(col_count.begin(), col_count.end()), 0);
  // About half the off-diagonal entries lie above the diagonal (sd of the fraction ~ 0.0036).
  EXPECT_NEAR(static_cast<double>(upper) / static_cast<double>(a.nnz()), 0.4995, 0.03);
}

TEST(GeneratorEr, ProbabilityZeroAndOne) {
  const auto none = sp::generate<int32_t, float>("er:50:0");
  EXPECT_EQ(none.rows, 50);
  EXPECT_EQ(none.nnz(), 0);
  EXPECT_EQ(none.rowptr, std::vector<int32_t>(51, 0));

  const auto full = sp::generate<int32_t, float>("er:7:1");
  EXPECT_EQ(full.nnz(), 49);
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(row_cols(full, i), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(GeneratorEr, SparseLargeGraphUsesSkippingAndStaysNearExpectation) {
  // 4e10 candidate positions: only skipping (O(nnz)) can make this quick; 800000 expected, sd 894.
  const auto a = sp::generate<int32_t, float>("er:200000:2e-5", {1, true});
  EXPECT_TRUE(a.is_pattern());
  EXPECT_NEAR(static_cast<double>(a.nnz()), 800000.0, 6 * 894.0);
  EXPECT_TRUE(sp::validate(a.view()).canonical());
}

TEST(GeneratorEr, NumbersInExponentFormMeanTheSame) {
  expect_same(sp::generate<int32_t, double>("er:1e3:2e-3"), sp::generate<int32_t, double>("er:1000:0.002"));
}

// ---- RMAT --------------------------------------------------------------------------------------

TEST(GeneratorRmat, ShapeNnzBoundsAndSkew) {
  const auto a = sp::generate<int32_t, float>("rmat:12:8");
  expect_well_formed(a, "rmat:12:8");
  EXPECT_EQ(a.rows, 4096);
  EXPECT_LE(a.nnz(), 8 * 4096);        // duplicates merged, never more than drawn
  EXPECT_GT(a.nnz(), 8 * 4096 * 6 / 10);  // but most draws are distinct at this size
  // Without a vertex permutation row 0 has the largest expected degree, (a+b)^12 = 3.7% of draws
  // (before merging), three times its runner-up.
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(degree(a, 0), g.deg_max);
  EXPECT_GT(g.skew, 20.0);
}

TEST(GeneratorRmat, QuadrantsFollowTheGraph500Probabilities) {
  // Few draws per possible position, so merging barely changes the split: top-left gets about
  // a = 0.57, top-right b and bottom-left c = 0.19 each, bottom-right d = 0.05.
  const auto a = sp::generate<int64_t, float>("rmat:16:1", {7, true});
  const int64_t half = a.rows / 2;
  double q[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < a.rows; ++i)
    for (const int64_t j : row_cols(a, i)) q[(i >= half ? 2 : 0) + (j >= half ? 1 : 0)] += 1;
  const double total = static_cast<double>(a.nnz());
  // 65536 draws: the sd of each fraction is at most 0.002.
  EXPECT_NEAR(q[0] / total, 0.57, 0.015);
  EXPECT_NEAR(q[1] / total, 0.19, 0.01);
  EXPECT_NEAR(q[2] / total, 0.19, 0.01);
  EXPECT_NEAR(q[3] / total, 0.05, 0.006);
}

TEST(GeneratorRmat, ScaleZeroIsOneEntry) {
  const auto a = sp::generate<int32_t, double>("rmat:0:5");  // five draws of the only position
  EXPECT_EQ(a.rows, 1);
  EXPECT_EQ(a.rowptr, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(a.colind, (std::vector<int32_t>{0}));
}

TEST(GeneratorRmat, PowerlawIsRmat16x8) {
  expect_same(sp::generate<int32_t, float>("powerlaw"), sp::generate<int32_t, float>("rmat:16:8"));
}

TEST(GeneratorRmat, IndexWidthDoesNotChangeTheGraph) {
  const auto a = sp::generate<int32_t, double>("rmat:11:4");
  const auto b = sp::generate<int64_t, double>("rmat:11:4");
  EXPECT_EQ(structure_checksum(a), structure_checksum(b));
  EXPECT_EQ(a.values, b.values);
}

// ---- hubs, band, megarow -------------------------------------------------------------------------

TEST(GeneratorHubs, HubRowsHaveHubdegAndOthersDeg) {
  const int64_t n = 1000, deg = 6, hubs = 4, hub_deg = 300;
  const auto a = sp::generate<int32_t, float>("hubs:1000:6:4:300");
  expect_well_formed(a, "hubs:1000:6:4:300");
  EXPECT_EQ(a.rows, n);
  EXPECT_EQ(a.nnz(), (n - hubs) * deg + hubs * hub_deg);
  // The hubs sit in the middle of four equal stripes: rows 125, 375, 625, 875.
  const std::vector<int64_t> hub_rows = {125, 375, 625, 875};
  for (int64_t i = 0; i < n; ++i) {
    const bool hub = std::find(hub_rows.begin(), hub_rows.end(), i) != hub_rows.end();
    EXPECT_EQ(degree(a, i), hub ? hub_deg : deg) << "row " << i;
  }
}

TEST(GeneratorHubs, EveryRowCanBeAHubAndDegreesUpToN) {
  const auto a = sp::generate<int32_t, float>("hubs:10:10:10:10");  // all rows full
  EXPECT_EQ(a.nnz(), 100);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(row_cols(a, i), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(GeneratorBand, RowsHoldExactlyTheBand) {
  const int64_t n = 40, h = 3;  // DEG 7 and DEG 6 both give half-width 3
  for (const char* spec : {"band:40:7", "band:40:6"}) {
    SCOPED_TRACE(spec);
    const auto a = sp::generate<int32_t, double>(spec);
    expect_well_formed(a, spec);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> want;
      for (int64_t j = std::max<int64_t>(0, i - h); j <= std::min<int64_t>(n - 1, i + h); ++j) want.push_back(j);
      EXPECT_EQ(row_cols(a, i), want) << "row " << i;
    }
    EXPECT_EQ(a.nnz(), n * 7 - 3 * 4);  // 7 per row, minus 3+2+1 clipped at each end
  }
}

TEST(GeneratorBand, IsSymmetricWithValues) {
  const auto a = sp::generate<int32_t, float>("band:300:9");
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_TRUE(g.symmetric);  // A(i,j) = A(j,i) by construction of the values
  EXPECT_EQ(g.self_loops, 300);
  EXPECT_EQ(g.deg_max, 9);
  EXPECT_EQ(g.empty_rows, 0);
}

TEST(GeneratorBand, WiderThanTheMatrixIsFull) {
  const auto a = sp::generate<int32_t, float>("band:5:100");
  EXPECT_EQ(a.nnz(), 25);
}

TEST(GeneratorMegarow, RowZeroHoldsTheFraction) {
  const auto a = sp::generate<int32_t, float>("megarow:1000:1:0.9");
  expect_well_formed(a, "megarow:1000:1:0.9");
  EXPECT_EQ(a.nnz(), 1000);
  EXPECT_EQ(degree(a, 0), 900);
  // The other 100 entries are spread over 999 rows: no row gets two.
  for (int64_t i = 1; i < a.rows; ++i) EXPECT_LE(degree(a, i), 1) << "row " << i;
}

TEST(GeneratorMegarow, RestSpreadEvenly) {
  const int64_t n = 2000, deg = 16;
  const auto a = sp::generate<int32_t, float>("megarow:2000:16:0.05");
  expect_well_formed(a, "megarow:2000:16:0.05");
  EXPECT_EQ(a.nnz(), n * deg);
  EXPECT_EQ(degree(a, 0), 1600);  // 0.05 * 32000
  int64_t lo = n, hi = 0;
  for (int64_t i = 1; i < n; ++i) {
    lo = std::min(lo, degree(a, i));
    hi = std::max(hi, degree(a, i));
  }
  // 30400 entries over 1999 rows: 15.2 each, so every other row holds 15 or 16.
  EXPECT_EQ(lo, 15);
  EXPECT_EQ(hi, 16);
}

TEST(GeneratorMegarow, WholeMatrixInRowZero) {
  const auto a = sp::generate<int32_t, float>("megarow:64:1:1");
  EXPECT_EQ(degree(a, 0), 64);
  EXPECT_EQ(a.nnz(), 64);
}

// ---- rmatp ---------------------------------------------------------------------------------------

TEST(GeneratorRmatp, Graph500ProbabilitiesGiveRmat) {
  expect_same(sp::generate<int32_t, float>("rmatp:10:8:0.57:0.19:0.19"), sp::generate<int32_t, float>("rmat:10:8"));
}

TEST(GeneratorRmatp, QuadrantsFollowTheGivenProbabilities) {
  const auto a = sp::generate<int64_t, float>("rmatp:16:1:0.4:0.3:0.2", {7, true});
  EXPECT_TRUE(sp::validate(a.view()).canonical());
  EXPECT_EQ(a.rows, 65536);
  EXPECT_LE(a.nnz(), 65536);
  const int64_t half = a.rows / 2;
  double q[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < a.rows; ++i)
    for (const int64_t j : row_cols(a, i)) q[(i >= half ? 2 : 0) + (j >= half ? 1 : 0)] += 1;
  const double total = static_cast<double>(a.nnz());
  // About 65000 distinct draws: the sd of each fraction is below 0.002.
  EXPECT_NEAR(q[0] / total, 0.4, 0.012);
  EXPECT_NEAR(q[1] / total, 0.3, 0.012);
  EXPECT_NEAR(q[2] / total, 0.2, 0.012);
  EXPECT_NEAR(q[3] / total, 0.1, 0.012);
}

TEST(GeneratorRmatp, DZeroNeverSetsARowBitAndAColumnBitTogether) {
  // d = 0: at no level are both the row's and the column's bit 1.
  const auto a = sp::generate<int32_t, float>("rmatp:10:8:0.5:0.25:0.25");
  expect_well_formed(a, "rmatp:10:8:0.5:0.25:0.25");
  EXPECT_GT(a.nnz(), 1000);
  for (int64_t i = 0; i < a.rows; ++i)
    for (const int64_t j : row_cols(a, i)) ASSERT_EQ(i & j, 0) << "(" << i << ", " << j << ")";
  // Sums that are 1 in decimal but not in binary (0.1 + 0.2 + 0.7 = 1.0000000000000002) are taken.
  EXPECT_NO_THROW((void)(sp::generate<int32_t, float>("rmatp:6:2:0.1:0.2:0.7")));
}

TEST(GeneratorRmatp, BadSpecsAreRefused) {
  expect_refused("rmatp:10:8:0.5:0.3:0.3", {"A+B+C is 1.1", "above 1", "rmatp:SCALE:EDGEFACTOR:A:B:C"});
  expect_refused("rmatp:10:8:0.5:0.3", {"field C is missing"});
  expect_refused("rmatp:10:8:1.5:0:0", {"field A is 1.5", "outside [0, 1]"});
  expect_refused("rmatp:10:8:0.5:x:0.1", {"field B is 'x'", "not a number"});
  expect_refused("rmatp:41:1:0.5:0.2:0.2", {"SCALE is 41"});
}

// ---- chunglu -------------------------------------------------------------------------------------

TEST(GeneratorChungLu, ShapeCanonicalAndNnzBelowTheDraws) {
  const auto a = sp::generate<int32_t, float>("chunglu:20000:8:3");
  expect_well_formed(a, "chunglu:20000:8:3");
  EXPECT_EQ(a.rows, 20000);
  EXPECT_LE(a.nnz(), 160000);          // N*AVGDEG draws, repeats merged
  EXPECT_GT(a.nnz(), 160000 * 97 / 100);  // few repeats at exponent 3
  const auto b = sp::generate<int32_t, float>("chunglu:20000:8:2.1", {1, true});
  EXPECT_LE(b.nnz(), 160000);
  EXPECT_GT(b.nnz(), 160000 * 7 / 10);  // the hubs repeat more
}

TEST(GeneratorChungLu, TailFollowsTheExponent) {
  const sp::GraphInfo heavy = sp::graph_info(sp::generate<int32_t, float>("chunglu:20000:8:2.1", {1, true}));
  const sp::GraphInfo light = sp::graph_info(sp::generate<int32_t, float>("chunglu:20000:8:3.5", {1, true}));
  // Expected largest degree about mean * N^(1/(EXPONENT-1)) / const: ~ 600x the mean at 2.1, ~ 30x at 3.5.
  EXPECT_GT(heavy.skew, 200.0);
  EXPECT_LT(light.skew, 60.0);
  EXPECT_GT(heavy.deg_max, 8 * light.deg_max);
  EXPECT_NEAR(light.deg_mean, 8.0, 0.1);
}

TEST(GeneratorChungLu, VertexIdsCarryNoLocality) {
  const auto a = sp::generate<int32_t, float>("chunglu:20000:8:2.5", {3, true});
  // The hubs are anywhere: the largest row is not among the first ranks' natural ids.
  const sp::GraphInfo g = sp::graph_info(a);
  int64_t hub = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    if (degree(a, i) == g.deg_max) hub = i;
  EXPECT_GT(hub, 100);
  // Columns within 1% of N of their row: about 2% of the entries for uniformly placed ids.
  int64_t near = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    for (const int64_t j : row_cols(a, i)) near += std::abs(i - j) < 200 ? 1 : 0;
  EXPECT_LT(static_cast<double>(near) / static_cast<double>(a.nnz()), 0.05);
}

TEST(GeneratorChungLu, SmallAndDegenerateSizes) {
  EXPECT_EQ((sp::generate<int32_t, float>("chunglu:0:0:2")).rows, 0);
  EXPECT_EQ((sp::generate<int32_t, float>("chunglu:100:0:2")).nnz(), 0);
  const auto one = sp::generate<int32_t, float>("chunglu:1:1:2");
  EXPECT_EQ(one.colind, (std::vector<int32_t>{0}));
  // AVGDEG = N: every row expects N draws; the weights are capped, the result canonical.
  const auto full = sp::generate<int32_t, float>("chunglu:50:50:1.5");
  expect_well_formed(full, "chunglu:50:50:1.5");
  EXPECT_LE(full.nnz(), 2500);
}

TEST(GeneratorChungLu, BadSpecsAreRefused) {
  expect_refused("chunglu:1000:8:1.4", {"field EXPONENT is 1.4", "outside [1.5, 4]", "chunglu:N:AVGDEG:EXPONENT"});
  expect_refused("chunglu:1000:8:4.5", {"field EXPONENT is 4.5"});
  expect_refused("chunglu:10:20:2", {"AVGDEG = 20 is more than N = 10"});
  expect_refused("chunglu:1000:2.5:2", {"field AVGDEG is 2.5", "not a whole number"});
  expect_refused<int32_t>("chunglu:1e9:4:2", {"N*AVGDEG = 4000000000", "int32"});
}

// ---- sbm -----------------------------------------------------------------------------------------

TEST(GeneratorSbm, DegoutZeroIsBlockDiagonal) {
  const auto a = sp::generate<int32_t, float>("sbm:1003:7:9:0");
  expect_well_formed(a, "sbm:1003:7:9:0");
  EXPECT_EQ(a.nnz(), 1003 * 9);
  for (int64_t b = 0; b < 7; ++b) {
    const int64_t lo = b * 1003 / 7, hi = (b + 1) * 1003 / 7;
    for (int64_t i = lo; i < hi; ++i) {
      ASSERT_EQ(degree(a, i), 9) << "row " << i;
      for (const int64_t j : row_cols(a, i)) ASSERT_TRUE(j >= lo && j < hi) << "row " << i << " column " << j;
    }
  }
}

TEST(GeneratorSbm, EachRowHasDeginInsideAndDegoutOutside) {
  const auto a = sp::generate<int32_t, float>("sbm:1000:8:10:3");
  expect_well_formed(a, "sbm:1000:8:10:3");
  EXPECT_EQ(a.nnz(), 13000);
  std::vector<int64_t> outside_count(1000, 0);
  for (int64_t i = 0; i < 1000; ++i) {
    const int64_t lo = i / 125 * 125, hi = lo + 125;
    int64_t inside = 0;
    for (const int64_t j : row_cols(a, i)) {
      inside += j >= lo && j < hi ? 1 : 0;
      if (j < lo || j >= hi) ++outside_count[static_cast<size_t>(j)];
    }
    ASSERT_EQ(inside, 10) << "row " << i;
  }
  // The outside columns are spread over the other blocks, not piled on the block edges.
  EXPECT_LT(*std::max_element(outside_count.begin(), outside_count.end()), 15);
}

TEST(GeneratorSbm, FullBlocksAndOneBlock) {
  const auto full = sp::generate<int32_t, float>("sbm:12:3:4:8");  // every row holds every column
  EXPECT_EQ(full.nnz(), 144);
  const auto one = sp::generate<int32_t, float>("sbm:100:1:100:0");
  EXPECT_EQ(one.nnz(), 10000);
}

TEST(GeneratorSbm, BadSpecsAreRefused) {
  expect_refused("sbm:100:0:5:0", {"BLOCKS is 0", "sbm:N:BLOCKS:DEGIN:DEGOUT"});
  expect_refused("sbm:10:11:1:0", {"BLOCKS = 11 is more than the N = 10 rows"});
  expect_refused("sbm:100:8:13:0", {"DEGIN = 13", "smallest block", "12 rows"});
  expect_refused("sbm:100:8:5:88", {"DEGOUT = 88", "outside the largest block", "87"});
  expect_refused("sbm:100:8:5", {"field DEGOUT is missing"});
}

// ---- meshes --------------------------------------------------------------------------------------

TEST(GeneratorMesh, Mesh2dNaturalOrderIsTheFivePointStencil) {
  const int64_t nx = 30, ny = 20;
  const auto a = sp::generate<int32_t, double>("mesh2d:30:20:0");
  expect_well_formed(a, "mesh2d:30:20:0");
  EXPECT_EQ(a.rows, nx * ny);
  EXPECT_EQ(a.nnz(), 5 * nx * ny - 2 * nx - 2 * ny);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t x = i % nx, y = i / nx;
    std::vector<int64_t> want;
    if (y > 0) want.push_back(i - nx);
    if (x > 0) want.push_back(i - 1);
    want.push_back(i);
    if (x + 1 < nx) want.push_back(i + 1);
    if (y + 1 < ny) want.push_back(i + nx);
    ASSERT_EQ(row_cols(a, i), want) << "row " << i;
    for (const int64_t j : row_cols(a, i)) ASSERT_LE(std::abs(j - i), nx);
  }
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_TRUE(g.symmetric);
  EXPECT_EQ(g.self_loops, nx * ny);
}

namespace {
template <class I, class V>
std::vector<int64_t> sorted_degrees(const sp::HostCsr<I, V>& a) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < a.rows; ++i) d.push_back(degree(a, i));
  std::sort(d.begin(), d.end());
  return d;
}
}  // namespace

TEST(GeneratorMesh, RenumberedIsTheSameGraphWithoutLocality) {
  for (const auto& [natural, renumbered, nx] :
       {std::tuple{"mesh2d:30:20:0", "mesh2d:30:20:1", 30}, std::tuple{"mesh3d:6:5:4:0", "mesh3d:6:5:4:1", 6},
        std::tuple{"mesh3d27:6:5:4:0", "mesh3d27:6:5:4:1", 6}}) {
    SCOPED_TRACE(renumbered);
    const auto a = sp::generate<int32_t, float>(natural);
    const auto b = sp::generate<int32_t, float>(renumbered);
    expect_well_formed(b, renumbered);
    EXPECT_EQ(b.rows, a.rows);
    EXPECT_EQ(b.nnz(), a.nnz());
    EXPECT_EQ(sorted_degrees(b), sorted_degrees(a));
    const sp::GraphInfo g = sp::graph_info(b);
    EXPECT_TRUE(g.symmetric);
    EXPECT_EQ(g.self_loops, a.rows);
    // Natural order keeps every neighbour within one plane (NX*NY); renumbered ids scatter them.
    int64_t far = 0;
    for (int64_t i = 0; i < b.rows; ++i)
      for (const int64_t j : row_cols(b, i)) far += std::abs(i - j) > 2 * nx ? 1 : 0;
    EXPECT_GT(far, b.nnz() / 2);
  }
}

TEST(GeneratorMesh, ThreeDimensionalStencilsHaveTheirCounts) {
  const auto seven = sp::generate<int32_t, float>("mesh3d:6:5:4:0");
  expect_well_formed(seven, "mesh3d:6:5:4:0");
  EXPECT_EQ(seven.rows, 120);
  EXPECT_EQ(seven.nnz(), 7 * 120 - 2 * (5 * 4 + 6 * 4 + 6 * 5));
  const auto box = sp::generate<int32_t, float>("mesh3d27:6:5:4:0");
  expect_well_formed(box, "mesh3d27:6:5:4:0");
  EXPECT_EQ(box.nnz(), (3 * 6 - 2) * (3 * 5 - 2) * (3 * 4 - 2));
  // An interior vertex of the 27-point stencil: all 27 neighbours, in id order.
  const int64_t v = (2 * 5 + 2) * 6 + 2;  // (2, 2, 2)
  std::vector<int64_t> want;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) want.push_back(v + (dz * 5 + dy) * 6 + dx);
  EXPECT_EQ(row_cols(box, v), want);
  EXPECT_EQ((sp::generate<int32_t, float>("mesh3d:1:1:5:0")).nnz(), 5 + 2 * 4);  // a path
  EXPECT_EQ((sp::generate<int32_t, float>("mesh2d:0:5:1")).rows, 0);
  EXPECT_EQ((sp::generate<int32_t, float>("mesh2d:1:1:1")).nnz(), 1);
}

TEST(GeneratorMesh, BadSpecsAreRefused) {
  expect_refused("mesh2d:10:10:2", {"field RENUMBER is 2", "must be 0 or 1", "mesh2d:NX:NY:RENUMBER"});
  expect_refused("mesh3d:10:10:1", {"field RENUMBER is missing"});
  expect_refused("mesh3d27:10:10:10", {"field RENUMBER is missing", "mesh3d27:NX:NY:NZ:RENUMBER"});
  expect_refused("mesh2d:10:x:0", {"field NY is 'x'"});
  expect_refused<int32_t>("mesh3d:2000:2000:2000:0", {"NX*NY*NZ = 8000000000 rows", "int32"});
  expect_refused<int32_t>("mesh3d27:1000:1000:100:0", {"the stencil holds", "int32"});
}

// ---- road ----------------------------------------------------------------------------------------

TEST(GeneratorRoad, SymmetricGridWithShortcutsAndLowDegrees) {
  const int64_t nx = 200, ny = 150;
  const auto a = sp::generate<int32_t, float>("road:200:150:0.6");
  expect_well_formed(a, "road:200:150:0.6");
  EXPECT_EQ(a.rows, nx * ny);
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_TRUE(g.symmetric);
  EXPECT_EQ(g.self_loops, 0);
  EXPECT_LE(g.deg_max, 6);
  EXPECT_GT(g.empty_rows, 0);  // (1-0.6)^4 of the inner vertices lose every grid edge
  // 2*0.6 per grid edge (59650 of them; sd of the count ~ 170) plus 2 per shortcut (~300).
  EXPECT_NEAR(static_cast<double>(a.nnz()), 2 * 0.6 * 59650 + 600, 1500);
  int64_t diagonal = 0;
  for (int64_t i = 0; i < a.rows; ++i)
    for (const int64_t j : row_cols(a, i)) {
      const int64_t dx = j % nx - i % nx, dy = j / nx - i / nx;
      ASSERT_TRUE(std::abs(dx) <= 1 && std::abs(dy) <= 1) << "(" << i << ", " << j << ") is not a grid neighbour";
      diagonal += dx != 0 && dy != 0 ? 1 : 0;
    }
  EXPECT_NEAR(static_cast<double>(diagonal) / 2, nx * ny / 100.0, 60);  // ~300 shortcuts, sd ~17
}

TEST(GeneratorRoad, KeepOneIsTheWholeGridAndKeepZeroOnlyShortcuts) {
  const auto all = sp::generate<int32_t, float>("road:40:30:1");
  const int64_t edges = 39 * 30 + 40 * 29;
  EXPECT_GE(all.nnz(), 2 * edges);
  EXPECT_LE(all.nnz(), 2 * edges + 40 * 30 / 2);
  EXPECT_EQ(sp::graph_info(all).empty_rows, 0);
  const auto none = sp::generate<int32_t, float>("road:40:30:0");
  EXPECT_LE(sp::graph_info(none).deg_max, 1);
}

TEST(GeneratorRoad, BadSpecsAreRefused) {
  expect_refused("road:10:10:1.5", {"field KEEP is 1.5", "outside [0, 1]", "road:NX:NY:KEEP"});
  expect_refused("road:10:10", {"field KEEP is missing"});
  expect_refused<int32_t>("road:100000:100000:0.5", {"NX*NY = 10000000000 rows", "int32"});
}

// ---- bipartite -----------------------------------------------------------------------------------

TEST(GeneratorBipartite, RectangularWithVaryingRowDegrees) {
  const auto a = sp::generate<int32_t, float>("bipartite:2000:300:12");
  SCOPED_TRACE("bipartite:2000:300:12");
  EXPECT_EQ(a.rows, 2000);
  EXPECT_EQ(a.cols, 300);
  const sp::Validation v = sp::validate(a.view());
  EXPECT_TRUE(v.canonical()) << v.message;
  ASSERT_EQ(a.values.size(), a.colind.size());
  for (const float x : a.values) ASSERT_TRUE(x >= 0.5f && x < 1.5f);
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(g.empty_rows, 0);  // 1 + Geometric: at least one column
  EXPECT_GT(g.deg_mean, 9.0);  // mean 12 drawn, a few repeats merged
  EXPECT_LT(g.deg_mean, 12.5);
  EXPECT_GT(g.deg_max, 36);  // geometric: ~5% of rows draw more than 3x the mean
  EXPECT_LE(g.deg_p50, 10);
  // Mild power-law popularity: the top column is well above the mean but far from every row.
  std::vector<int64_t> col(300, 0);
  for (const int32_t j : a.colind) ++col[static_cast<size_t>(j)];
  const double mean = static_cast<double>(a.nnz()) / 300.0;
  const auto top = static_cast<double>(*std::max_element(col.begin(), col.end()));
  EXPECT_GT(top, 3 * mean);
  EXPECT_LT(top, 0.6 * 2000);
}

TEST(GeneratorBipartite, SymmetrizeIsRefusedAndDropSelfLoopsWorks) {
  sp::MmReadOptions opt;
  opt.symmetrize = true;
  try {
    (void)sp::load_graph<int32_t, float>("bipartite:200:50:8", opt);
    ADD_FAILURE() << "symmetrized a rectangular matrix";
  } catch (const sp::InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot symmetrize 'bipartite:200:50:8'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("200 x 50"), std::string::npos) << msg;
  }
  opt = {};
  opt.drop_self_loops = true;
  const auto a = sp::load_graph<int32_t, float>("bipartite:200:50:8", opt);
  EXPECT_EQ(a.rows, 200);
  EXPECT_EQ(a.cols, 50);
  EXPECT_TRUE(sp::validate(a.view()).canonical());
  EXPECT_EQ(sp::graph_info(a).self_loops, 0);
  EXPECT_GT(sp::graph_info(sp::generate<int32_t, float>("bipartite:200:50:8")).self_loops, 0);
}

TEST(GeneratorBipartite, EdgeCasesAndBadSpecs) {
  EXPECT_EQ((sp::generate<int32_t, float>("bipartite:10:0:0")).nnz(), 0);
  const auto ones = sp::generate<int32_t, float>("bipartite:100:7:1");  // DEG 1: one column per row
  EXPECT_EQ(ones.nnz(), 100);
  EXPECT_EQ(ones.cols, 7);
  expect_refused("bipartite:100:300:400", {"DEG = 400 distinct columns do not fit in COLS = 300", "bipartite:ROWS:COLS:DEG"});
  expect_refused("bipartite:100:300", {"field DEG is missing"});
  expect_refused<int32_t>("bipartite:10:3e9:1", {"COLS = 3000000000 columns", "int32"});
}

// ---- @SEED ---------------------------------------------------------------------------------------

TEST(GeneratorSeed, SuffixReplacesTheSeed) {
  expect_same(sp::generate<int32_t, float>("er:500:0.01@42"), sp::generate<int32_t, float>("er:500:0.01", {42}));
  // The suffix wins over GenOptions::seed, for the structure and the values.
  expect_same(sp::generate<int32_t, float>("chunglu:2000:6:2.2@9", {5}), sp::generate<int32_t, float>("chunglu:2000:6:2.2", {9}));
  expect_same(sp::generate<int32_t, float>("powerlaw@3"), sp::generate<int32_t, float>("rmat:16:8", {3}));
  expect_same(sp::load_graph<int32_t, float>("rmat:9:4@5"), sp::generate<int32_t, float>("rmat:9:4", {5}));
  const auto zero = sp::generate<int32_t, float>("band:10:2@0");
  const auto big = sp::generate<int32_t, float>("band:10:2@18446744073709551615");
  EXPECT_EQ(zero.colind, big.colind);
  EXPECT_NE(zero.values, big.values);
}

TEST(GeneratorSeed, BadSeedsAreRefusedNamingTheSeed) {
  expect_refused("er:10:0.5@x", {"the seed after '@' is 'x'", "not a whole number", "er:N:P@SEED"});
  expect_refused("er:10:0.5@", {"the seed after '@' is empty"});
  expect_refused("er:10:0.5@-1", {"the seed after '@' is '-1'"});
  expect_refused("er:10:0.5@1e3", {"the seed after '@' is '1e3'"});
  expect_refused("er:10:0.5@18446744073709551616", {"from 0 to 18446744073709551615"});
  expect_refused("er:10:0.5@3@4", {"the seed after '@' is '3@4'"});
  expect_refused("er:10@3", {"field P is missing"});  // the fields are checked first
  expect_refused("road:10:10:2@3", {"field KEEP is 2"});
}

// ---- all generators ------------------------------------------------------------------------------

TEST(GeneratorAll, SameSeedSameGraphDifferentSeedDifferentGraph) {
  for (const std::string spec :
       {"er:500:0.01", "rmat:10:8", "hubs:500:5:3:100", "megarow:500:4:0.2", "rmatp:10:8:0.45:0.15:0.15",
        "chunglu:1000:6:2.1", "sbm:500:5:6:2", "mesh2d:20:15:1", "mesh3d:6:5:4:1", "mesh3d27:6:5:4:1", "road:30:20:0.7",
        "bipartite:500:80:6"}) {
    SCOPED_TRACE(spec);
    const auto a = sp::generate<int32_t, float>(spec, {42});
    expect_same(a, sp::generate<int32_t, float>(spec, {42}));
    const auto b = sp::generate<int32_t, float>(spec, {43});
    EXPECT_NE(structure_checksum(a), structure_checksum(b));
    // The same through the suffix: @42 is seed 42 whatever GenOptions says, @43 another graph.
    expect_same(a, sp::generate<int32_t, float>(spec + "@42", {7}));
    EXPECT_NE(structure_checksum(a), structure_checksum(sp::generate<int32_t, float>(spec + "@43", {42})));
  }
  // The band's and natural meshes' structure is fixed; only their values follow the seed.
  for (const char* spec : {"band:100:4", "mesh2d:10:10:0", "mesh3d:4:4:4:0", "mesh3d27:4:4:4:0"}) {
    SCOPED_TRACE(spec);
    const auto a = sp::generate<int32_t, float>(spec, {42});
    const auto b = sp::generate<int32_t, float>(spec, {43});
    EXPECT_EQ(a.colind, b.colind);
    EXPECT_NE(a.values, b.values);
  }
}

TEST(GeneratorAll, IndexWidthDoesNotChangeTheNewGraphs) {
  for (const char* spec : {"rmatp:9:4:0.4:0.3:0.2", "chunglu:800:5:2.3", "sbm:400:4:5:2", "mesh2d:20:10:1",
                           "mesh3d:5:4:3:1", "mesh3d27:5:4:3:1", "road:25:20:0.8", "bipartite:300:70:5"}) {
    SCOPED_TRACE(spec);
    const auto a = sp::generate<int32_t, double>(spec);
    const auto b = sp::generate<int64_t, double>(spec);
    EXPECT_EQ(structure_checksum(a), structure_checksum(b));
    EXPECT_EQ(a.values, b.values);
  }
}

TEST(GeneratorAll, PatternOptionDropsOnlyTheValues) {
  for (const char* spec : {"er:300:0.02", "rmat:9:4", "hubs:300:4:2:50", "band:300:5", "megarow:300:2:0.5",
                           "chunglu:300:4:2.5", "sbm:300:3:4:1", "mesh3d:4:4:4:1", "road:20:15:0.7", "bipartite:300:40:4"}) {
    SCOPED_TRACE(spec);
    const auto with = sp::generate<int64_t, double>(spec, {3});
    const auto without = sp::generate<int64_t, double>(spec, {3, true});
    EXPECT_TRUE(without.is_pattern());
    EXPECT_FALSE(with.is_pattern());
    EXPECT_EQ(with.rowptr, without.rowptr);
    EXPECT_EQ(with.colind, without.colind);
  }
}

// These checksums were computed once (seed 1) and written here by hand. They are what makes
// "identical output on every machine" a tested promise: a compiler, standard library or platform
// that changed a single column or value bit would fail here. Change them only together with a
// deliberate, announced change of the generators.
TEST(GeneratorAll, GoldenChecksums) {
  struct Golden {
    const char* spec;
    int64_t nnz;
    uint64_t structure, values_f32, values_f64;
  };
  const Golden golden[] = {
      {"er:300:0.02", 1825, 0xefd8c2bec8803f38ULL, 0x34932a2fe2858375ULL, 0xb3d89a7c7b8b1ad5ULL},
      {"rmat:10:4", 3631, 0x56c3d02fbfad0e66ULL, 0x4a74ce59c1a00340ULL, 0x12f39490de584c0fULL},
      {"hubs:400:6:3:120", 2742, 0x559bd539766e536dULL, 0x756b5a399ab009a8ULL, 0xc360c10f2bdb84faULL},
      {"band:50:5", 244, 0x96f3c0e16ff474b1ULL, 0xf0e32c669b321689ULL, 0xba2baf543a6b89edULL},
      {"megarow:400:3:0.25", 1200, 0x1b1634f2993ad918ULL, 0x41cef5201ba3b814ULL, 0xc8bed8a95a300092ULL},
      {"powerlaw", 494550, 0x0be58652575390a4ULL, 0xf2408d7b7af06c2dULL, 0x00a2c86e63826824ULL},
      {"rmatp:10:4:0.45:0.2:0.25", 4018, 0x8b50e18a80a9ed33ULL, 0x0e9f578f6a5483d2ULL, 0x1fb301dd47029eafULL},
      {"chunglu:1000:6:2.1", 4875, 0xb2921a45d2554260ULL, 0x7464cd85630a5644ULL, 0x5389ee0fb7a62802ULL},
      {"sbm:400:4:6:2", 3200, 0xae7359adb4fe0193ULL, 0x4801e60346cdc348ULL, 0x58010329ecbb7ed4ULL},
      {"mesh2d:15:12:1", 846, 0x424b6e264ff9ee9eULL, 0xde832c2c6a071535ULL, 0x2b1eaf3636f9a07dULL},
      {"mesh3d:6:5:4:1", 692, 0xb989bb65324b64dbULL, 0x637e852c62232957ULL, 0xae30307db0fd973cULL},
      {"mesh3d27:5:4:3:1", 910, 0x571d4004a42b8893ULL, 0x8ca600ae743dced6ULL, 0x15a9244fd23def0cULL},
      {"road:30:25:0.7", 2052, 0x1a7f4ed73ce76e73ULL, 0x8708b7675307b915ULL, 0x787f3fe401cb20e5ULL},
      {"bipartite:300:70:6", 1542, 0xed2fd9479773d8caULL, 0x6987951a51825d23ULL, 0x82d10d1939aaea94ULL},
      {"chunglu:500:4:3@11", 1981, 0x7c8de8ee20474112ULL, 0x15c75c8269e94eb3ULL, 0x6010db5a5b8732a5ULL},
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE(g.spec);
    const auto f = sp::generate<int32_t, float>(g.spec);
    const auto d = sp::generate<int64_t, double>(g.spec);
    EXPECT_EQ(f.nnz(), g.nnz);
    EXPECT_EQ(structure_checksum(f), g.structure);
    EXPECT_EQ(structure_checksum(d), g.structure);
    EXPECT_EQ(values_checksum(f.values), g.values_f32);
    EXPECT_EQ(values_checksum(d.values), g.values_f64);
  }
}

// ---- specs ---------------------------------------------------------------------------------------

TEST(GeneratorSpec, RecognisesGeneratorNames) {
  for (const char* s : {"er:10:0.5", "rmat:4:2", "hubs:1:1:1:1", "band:3:1", "megarow:2:1:0.5", "powerlaw", "er",
                        "rmatp:4:2:0.5:0.2:0.2", "chunglu:10:2:2", "sbm:10:2:1:1", "mesh2d:3:3:0", "mesh3d:2:2:2:1",
                        "mesh3d27:2:2:2:0", "road:3:3:0.5", "bipartite:3:4:1", "er:10:0.5@3", "powerlaw@2", "er@x"})
    EXPECT_TRUE(sp::is_generator_spec(s)) << s;
  for (const char* s : {"", "graph.mtx", "data/er:1:2.mtx", "erdos:10:0.5", "powerlaw.mtx.gz", "Band:3:1", "data/er@3.mtx",
                        "mesh:3:3", "@3"})
    EXPECT_FALSE(sp::is_generator_spec(s)) << s;
}

TEST(GeneratorSpec, MalformedSpecsAreRefusedNamingTheField) {
  expect_refused("er:100", {"field P is missing", "er:N:P"});
  expect_refused("er", {"field N is missing"});
  expect_refused("er::0.5", {"field N is empty"});
  expect_refused("er:100:abc", {"field P is 'abc'", "not a number"});
  expect_refused("er:100:nan", {"field P is 'nan'", "not a number"});
  expect_refused("er:ten:0.5", {"field N is 'ten'", "not a number"});
  expect_refused("er:-5:0.1", {"field N is -5", "negative"});
  expect_refused("er:1.5:0.1", {"field N is 1.5", "not a whole number"});
  expect_refused("er:10:1.5", {"field P is 1.5", "outside [0, 1]"});
  expect_refused("er:10:-0.1", {"field P is -0.1", "outside [0, 1]"});
  expect_refused("er:10:0.5:3", {"there are 3 fields", "takes 2"});
  expect_refused("band:10", {"field DEG is missing", "band:N:DEG"});
  expect_refused("hubs:10:2:1", {"field HUBDEG is missing"});
  expect_refused("rmat:41:16", {"SCALE is 41", "above the limit 40"});
  expect_refused("rmat:16:x", {"field EDGEFACTOR is 'x'"});
  expect_refused("megarow:10:2:2", {"field FRACTION is 2", "outside [0, 1]"});
  expect_refused("powerlaw:3", {"there is 1 field", "takes 0"});
  expect_refused("er:1e30:0.1", {"field N is 1e30", "above the limit 2^62"});
}

TEST(GeneratorSpec, UnsatisfiableSpecsShowTheNumbers) {
  expect_refused("megarow:10:5:0.5", {"FRACTION*N*DEG = 25", "only N = 10"});
  expect_refused("megarow:0:1:0.5", {"N is 0"});
  expect_refused("megarow:3:4:0.1", {"N-1 = 2 rows would need 6 distinct columns each", "N = 3"});
  expect_refused("megarow:1:1:0", {"no other row"});
  expect_refused("hubs:10:11:1:2", {"DEG = 11", "N = 10"});
  expect_refused("hubs:10:2:1:20", {"HUBDEG = 20", "N = 10"});
  expect_refused("hubs:10:2:11:2", {"NHUBS = 11"});
}

TEST(GeneratorSpec, IndexTypeOverflowIsRefused) {
  expect_refused<int32_t>("rmat:31:1", {"2147483648 rows", "int32", "at most 2147483647"});
  expect_refused<int32_t>("rmat:28:16", {"EDGEFACTOR*2^SCALE = 4294967296", "int32"});
  expect_refused<int32_t>("er:100000:0.5", {"N*N*P = 5000000000", "int32"});
  expect_refused<int32_t>("band:1e9:10", {"int32"});
  expect_refused<int32_t>("megarow:100000:100000:0", {"N*DEG = 10000000000", "int32"});
  expect_refused<int32_t>("er:3e9:0", {"3000000000 rows", "int32"});
}

TEST(GeneratorSpec, UnknownGeneratorIsRefused) {
  try {
    (void)sp::generate<int32_t, float>("grid:3:3");
    FAIL() << "accepted grid:3:3";
  } catch (const sp::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'grid:3:3' is not a generator spec"), std::string::npos) << e.what();
  }
}

// ---- load_graph ----------------------------------------------------------------------------------

TEST(GeneratorLoadGraph, EmptyMeansPowerlawAndProgressEnds) {
  double last = -1;
  sp::MmReadOptions opt;
  opt.progress = [&last](double f) { last = f; };
  expect_same(sp::load_graph<int32_t, float>("", opt), sp::generate<int32_t, float>("powerlaw"));
  EXPECT_EQ(last, 1.0);
}

TEST(GeneratorLoadGraph, HonoursKeepValuesDropSelfLoopsAndSymmetrize) {
  const std::string spec = "rmat:9:8";
  const auto a = sp::generate<int32_t, double>(spec);
  ASSERT_GT(sp::graph_info(a).self_loops, 0);

  sp::MmReadOptions opt;
  opt.keep_values = false;
  EXPECT_TRUE((sp::load_graph<int32_t, double>(spec, opt)).is_pattern());

  opt = {};
  opt.drop_self_loops = true;
  const auto nd = sp::load_graph<int32_t, double>(spec, opt);
  EXPECT_EQ(sp::graph_info(nd).self_loops, 0);
  EXPECT_EQ(nd.nnz(), a.nnz() - sp::graph_info(a).self_loops);
  EXPECT_TRUE(sp::validate(nd.view()).canonical());

  opt = {};
  opt.symmetrize = true;
  const auto s = sp::load_graph<int32_t, double>(spec, opt);
  EXPECT_TRUE(sp::validate(s.view()).canonical());
  const sp::GraphInfo g = sp::graph_info(s);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_TRUE(g.symmetric);
  // Every original entry is still there with its value.
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k) {
      const auto b = s.colind.begin() + s.rowptr[static_cast<size_t>(i)];
      const auto e = s.colind.begin() + s.rowptr[static_cast<size_t>(i) + 1];
      const auto it = std::lower_bound(b, e, a.colind[static_cast<size_t>(k)]);
      ASSERT_TRUE(it != e && *it == a.colind[static_cast<size_t>(k)]) << "lost (" << i << ", " << a.colind[static_cast<size_t>(k)] << ")";
      EXPECT_EQ(s.values[static_cast<size_t>(it - s.colind.begin())], a.values[static_cast<size_t>(k)]);
    }
  EXPECT_GT(s.nnz(), a.nnz());  // RMAT is not symmetric, so the union adds entries
  EXPECT_LE(s.nnz(), 2 * a.nnz());
}

// ---- graph_info ----------------------------------------------------------------------------------

namespace {
template <class V = double>
sp::HostCsr<int32_t, V> csr(int64_t rows, int64_t cols, std::vector<int32_t> rowptr, std::vector<int32_t> colind,
                            std::vector<V> values = {}) {
  sp::HostCsr<int32_t, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr = std::move(rowptr);
  a.colind = std::move(colind);
  a.values = std::move(values);
  return a;
}
}  // namespace

TEST(GeneratorGraphInfo, HandBuiltSymmetricMatrix) {
  // [1 2 . .]
  // [2 . . .]
  // [. . . .]
  // [. . . 5]
  const auto a = csr(4, 4, {0, 2, 3, 3, 4}, {0, 1, 0, 3}, {1, 2, 2, 5});
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(g.rows, 4);
  EXPECT_EQ(g.cols, 4);
  EXPECT_EQ(g.nnz, 4);
  // Degrees 2 1 0 1, sorted 0 1 1 2: nearest rank ceil(0.5*4) = 2nd -> 1; ceil(0.9*4) = 4th -> 2.
  EXPECT_EQ(g.deg_p50, 1);
  EXPECT_EQ(g.deg_p90, 2);
  EXPECT_EQ(g.deg_p99, 2);
  EXPECT_EQ(g.deg_max, 2);
  EXPECT_DOUBLE_EQ(g.deg_mean, 1.0);
  EXPECT_DOUBLE_EQ(g.skew, 2.0);
  EXPECT_EQ(g.empty_rows, 1);
  EXPECT_EQ(g.self_loops, 2);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_TRUE(g.symmetric);
}

TEST(GeneratorGraphInfo, SymmetricPatternWithAsymmetricValues) {
  const auto a = csr(4, 4, {0, 2, 3, 3, 4}, {0, 1, 0, 3}, {1, 2, 3, 5});  // (0,1) = 2 but (1,0) = 3
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_FALSE(g.symmetric);
}

TEST(GeneratorGraphInfo, CycleHasEqualCountsButIsNotSymmetric) {
  // (0,1) (1,2) (2,0): every row and column holds one entry, so only the full compare can tell.
  const auto a = csr(3, 3, {0, 1, 2, 3}, {1, 2, 0});
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_FALSE(g.pattern_symmetric);
  EXPECT_FALSE(g.symmetric);
  EXPECT_EQ(g.self_loops, 0);
  EXPECT_EQ(g.deg_p50, 1);
  EXPECT_DOUBLE_EQ(g.skew, 1.0);
}

TEST(GeneratorGraphInfo, PatternInputIsSymmetricWhenItsPatternIs) {
  const auto a = csr(3, 3, {0, 1, 2, 2}, {1, 0});  // (0,1) (1,0), row 2 empty
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_TRUE(g.symmetric);
  EXPECT_EQ(g.empty_rows, 1);
}

TEST(GeneratorGraphInfo, UnsortedAndRepeatedColumnsAreMergedForSymmetry) {
  // Row 0 stores (0,1)=1, (0,0)=4, (0,1)=1: merged (0,0)=4, (0,1)=2; row 1 stores (1,0)=2.
  const auto a = csr(2, 2, {0, 3, 4}, {1, 0, 1, 0}, {1, 4, 1, 2});
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(g.nnz, 4);  // stored entries
  EXPECT_EQ(g.deg_max, 3);
  EXPECT_EQ(g.self_loops, 1);
  EXPECT_TRUE(g.pattern_symmetric);
  EXPECT_TRUE(g.symmetric);
}

TEST(GeneratorGraphInfo, RectangularIsNeverSymmetric) {
  const auto a = csr(2, 3, {0, 1, 2}, {0, 1}, {1, 1});
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(g.self_loops, 2);
  EXPECT_FALSE(g.pattern_symmetric);
  EXPECT_FALSE(g.symmetric);
}

TEST(GeneratorGraphInfo, NearestRankQuantilesOnKnownDegrees) {
  // Row i holds columns 0..i, so the degrees are 1..100 (shuffled by reversing the rows).
  std::vector<int32_t> rowptr{0}, colind;
  for (int32_t i = 99; i >= 0; --i) {
    for (int32_t j = 0; j <= i; ++j) colind.push_back(j);
    rowptr.push_back(static_cast<int32_t>(colind.size()));
  }
  const auto a = csr<float>(100, 100, rowptr, colind);
  const sp::GraphInfo g = sp::graph_info(a);
  EXPECT_EQ(g.deg_p50, 50);
  EXPECT_EQ(g.deg_p90, 90);
  EXPECT_EQ(g.deg_p99, 99);
  EXPECT_EQ(g.deg_max, 100);
  EXPECT_DOUBLE_EQ(g.deg_mean, 50.5);
  EXPECT_EQ(g.empty_rows, 0);
}

TEST(GeneratorGraphInfo, EmptyMatrix) {
  const sp::GraphInfo g = sp::graph_info(csr(0, 0, {0}, {}));
  EXPECT_EQ(g.rows, 0);
  EXPECT_EQ(g.nnz, 0);
  EXPECT_EQ(g.deg_max, 0);
  EXPECT_EQ(g.deg_mean, 0.0);
  EXPECT_EQ(g.skew, 0.0);
}

TEST(GeneratorGraphInfo, InvalidStructureIsRefused) {
  EXPECT_THROW(sp::graph_info(csr(2, 2, {0, 1, 2}, {0, 2})), sp::InvalidArgument);     // column 2 of 2
  EXPECT_THROW(sp::graph_info(csr(2, 2, {0, 2, 1}, {0, 1})), sp::InvalidArgument);     // rowptr decreases
  EXPECT_THROW(sp::graph_info(csr(2, 2, {0, 1}, {0})), sp::InvalidArgument);           // rowptr too short
  try {
    (void)sp::graph_info(csr(2, 2, {0, 1, 2}, {0, 5}));
    ADD_FAILURE() << "column 5 of a 2 x 2 matrix was accepted";
  } catch (const sp::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 has column 5, outside [0, 2)"), std::string::npos) << e.what();
  }
}

TEST(GeneratorGraphInfo, MegarowStatistics) {
  const sp::GraphInfo g = sp::graph_info(sp::generate<int32_t, float>("megarow:1000:4:0.2"));
  EXPECT_EQ(g.nnz, 4000);
  EXPECT_EQ(g.deg_max, 800);
  EXPECT_DOUBLE_EQ(g.deg_mean, 4.0);
  EXPECT_DOUBLE_EQ(g.skew, 200.0);
  EXPECT_EQ(g.deg_p50, 3);  // 3200 entries over 999 rows: 3 or 4 each, mostly 3
  EXPECT_EQ(g.empty_rows, 0);
}

// ---- fill_random ---------------------------------------------------------------------------------

template <class V>
class GeneratorFillRandom : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GeneratorFillRandom, ValueTypes);

TYPED_TEST(GeneratorFillRandom, ValueDependsOnPositionNotOnLd) {
  using V = TypeParam;
  sp::HostDense<V> tight(5, 7), padded(5, 7, 12);
  sp::fill_random(tight, 99);
  sp::fill_random(padded, 99);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(tight(i, j), padded(i, j)) << i << "," << j;
  // A wider matrix agrees on the shared columns too, and padding holds what a column there would.
  sp::HostDense<V> wide(5, 12);
  sp::fill_random(wide, 99);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 12; ++j) EXPECT_EQ(wide(i, j), padded(i, j)) << i << "," << j;
}

TYPED_TEST(GeneratorFillRandom, VectorIsTheFirstRow) {
  using V = TypeParam;
  std::vector<V> v(33);
  sp::fill_random(v, 5, 0.5, 1.5);
  sp::HostDense<V> m(1, 33);
  sp::fill_random(m, 5, 0.5, 1.5);
  EXPECT_EQ(v, m.data);
}

TYPED_TEST(GeneratorFillRandom, UniformInRangeAndSeedSensitive) {
  using V = TypeParam;
  std::vector<V> v(100000);
  sp::fill_random(v, 1, -2.0, 6.0);
  double sum = 0;
  int64_t below_two = 0;
  for (const V x : v) {
    ASSERT_GE(x, V(-2));
    ASSERT_LT(x, V(6));
    sum += static_cast<double>(x);
    below_two += x < V(2) ? 1 : 0;
  }
  // Uniform on [-2, 6): mean 2 (sd of the mean 0.0073), half below 2 (sd 158).
  EXPECT_NEAR(sum / static_cast<double>(v.size()), 2.0, 0.05);
  EXPECT_NEAR(static_cast<double>(below_two), 50000.0, 6 * 158.0);
  std::vector<V> w(v.size()), again(v.size());
  sp::fill_random(w, 2, -2.0, 6.0);
  sp::fill_random(again, 1, -2.0, 6.0);
  EXPECT_NE(v, w);
  EXPECT_EQ(v, again);
}

TYPED_TEST(GeneratorFillRandom, RoundingNeverReachesHi) {
  using V = TypeParam;
  // An interval a few ulps of V wide: most lo + u*(hi-lo) round to hi and must be kept below it.
  const double lo = 1.0, hi = 1.0 + 4.0 * std::numeric_limits<V>::epsilon();
  std::vector<V> v(10000);
  sp::fill_random(v, 3, lo, hi);
  for (const V x : v) {
    ASSERT_GE(static_cast<double>(x), lo);
    ASSERT_LT(static_cast<double>(x), hi);
  }
  EXPECT_NE(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
}

TYPED_TEST(GeneratorFillRandom, BadIntervalsAreRefused) {
  using V = TypeParam;
  std::vector<V> v(4);
  EXPECT_THROW(sp::fill_random(v, 1, 1.0, 1.0), sp::InvalidArgument);
  EXPECT_THROW(sp::fill_random(v, 1, 2.0, 1.0), sp::InvalidArgument);
  EXPECT_THROW(sp::fill_random(v, 1, 0.0, std::numeric_limits<double>::infinity()), sp::InvalidArgument);
  EXPECT_THROW(sp::fill_random(v, 1, std::nan(""), 1.0), sp::InvalidArgument);
  sp::HostDense<V> m(3, 3);
  m.data.resize(5);
  EXPECT_THROW(sp::fill_random(m, 1), sp::InvalidArgument);
}

TEST(GeneratorFillRandomGolden, ChecksumsAreFixed) {
  // Computed once and written by hand, like GeneratorAll.GoldenChecksums: fill_random gives the
  // same operands on every machine.
  sp::HostDense<float> f(37, 5, 8);
  sp::HostDense<double> d(37, 5, 8);
  sp::fill_random(f, 2024);
  sp::fill_random(d, 2024);
  EXPECT_EQ(values_checksum(f.data), 0x3f837e969f1a5ffaULL);
  EXPECT_EQ(values_checksum(d.data), 0xb1a3f0ae8984bf20ULL);
  EXPECT_EQ(d(0, 0), 0.55994223219236994);  // the first value, printed with 17 digits
  EXPECT_EQ(f(0, 0), 0.559942245f);
}
