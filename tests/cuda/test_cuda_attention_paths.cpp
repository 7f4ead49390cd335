// SPDX-License-Identifier: Apache-2.0
// csr_attention.fused's paths (kernels/cuda/attention_fused.cu) on the shapes the other tests do
// not reach, against a double oracle with the reference plugin's arithmetic:
//  - the chunked path's lane shapes: rows of 4-vectors at max(F, Fv) <= 32 (8 lanes, chunks of 8),
//    <= 64 (16 lanes), <= 128 (32 lanes), <= 256 (two tiles, chunks of 4), misaligned or odd widths
//    (one column a lane, one or two tiles), F != Fv either way, F = 1, and the general path past
//    those widths;
//  - row lengths around the chunk sizes (0-9, 15-17, 31-33, 63-65, 127-129, 255-256), so full
//    chunks, a partial last chunk and a row shorter than one chunk, with S slices and with one;
//  - long rows cut into CTA items in the same launch: one item (written by its CTA), several (the
//    last ticket merges them), item boundaries at 256, 257, 513 entries, many split rows at once;
//  - special scores: -inf scores for a whole first chunk then finite ones (finite result), a row of
//    -inf scores only (NaN, as the reference), NaN and +inf scores (NaN), opposite infinities with
//    a negative scale, and V rows holding infinities at the end of rows (a partial chunk's spare
//    lanes repeat the last entry, which must not add 0 * inf);
//  - deterministic mode: the same bits run after run and whatever SPARSEPORT_HUB_T, on split rows.
// Without a GPU every test skips and says why.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/scoped.hpp"
#include "cuda_test.hpp"

namespace {

using sparseport_test::ScopedEnv;

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261126;
const std::string kFused = "csr_attention.fused";

// A CSR with these row lengths, columns uniform in [0, cols).
template <class I, class V>
HostCsr<I, V> rows_of(const std::vector<int64_t>& degs, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  HostCsr<I, V> a;
  a.rows = static_cast<int64_t>(degs.size());
  a.cols = cols;
  for (const int64_t d : degs) {
    for (int64_t k = 0; k < d; ++k) a.colind.push_back(static_cast<I>(col(rng)));
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

// The reference plugin's arithmetic in double (kernels/reference/csr_attention.cpp): the row's first
// unbeaten score as the shift, then exp, sum, weighted V rows; so NaN and infinities land where it
// puts them (a +inf, NaN or all -inf row is NaN). bound: sum_j p_j |v_j|, what rounding scales with.
template <class I, class V>
void oracle(const HostCsr<I, V>& a, const HostDense<V>& q, const HostDense<V>& k, const HostDense<V>& v,
            double scale, HostDense<double>& want, HostDense<double>& bound) {
  const int64_t F = q.cols, Fv = v.cols;
  want = HostDense<double>(a.rows, Fv);
  bound = HostDense<double>(a.rows, Fv);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
    if (e0 == e1) continue;
    std::vector<double> s;
    double top = 0.0;
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t c = a.colind[static_cast<size_t>(e)];
      double d = 0.0;
      for (int64_t f = 0; f < F; ++f) d += static_cast<double>(q(i, f)) * static_cast<double>(k(c, f));
      s.push_back(scale * d);
      top = e == e0 || s.back() > top ? s.back() : top;
    }
    double z = 0.0;
    for (double& x : s) z += (x = std::exp(x - top));
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t c = a.colind[static_cast<size_t>(e)];
      const double p = s[static_cast<size_t>(e - e0)];
      for (int64_t f = 0; f < Fv; ++f) {
        want(i, f) += p * static_cast<double>(v(c, f));
        bound(i, f) += std::fabs(p * static_cast<double>(v(c, f)));
      }
    }
    for (int64_t f = 0; f < Fv; ++f) {
      want(i, f) /= z;
      bound(i, f) /= z;
    }
  }
}

// NaN where the oracle has NaN, the same infinity where it has one, else within the rounding of a
// float or double softmax (the scores carry about F roundings).
template <class V>
void expect_matches(const HostDense<V>& got, const HostDense<double>& want, const HostDense<double>& bound,
                    const std::string& what) {
  const double rel = std::is_same_v<V, float> ? 3e-5 : 1e-12;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.rows; ++i)
    for (int64_t f = 0; f < want.cols; ++f) {
      const double g = static_cast<double>(got(i, f)), w = want(i, f);
      bool ok;
      if (std::isnan(w))
        ok = std::isnan(g);
      else if (std::isinf(w))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= rel * (1.0 + (std::isfinite(bound(i, f)) ? bound(i, f) : 0.0));
      if (ok) continue;
      if (++bad <= 5)
        ADD_FAILURE() << what << ": out[" << i << "," << f << "] = " << g << " but the oracle gives " << w;
    }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.rows * want.cols << " values differ";
}

struct Widths {
  int64_t F, Fv;
  int64_t offset;  // elements of slack in front of Q, K, V and out: 1 makes every row misaligned
};

std::string shown(const Widths& w) {
  return "F " + std::to_string(w.F) + ", Fv " + std::to_string(w.Fv) + (w.offset != 0 ? ", misaligned" : "");
}

// csr_attention.fused on a (and Q, K, V, which `shape` may edit, A's columns too) against the
// oracle; out starts NaN.
template <class I, class V, class Shape>
void check(const Context& ctx, HostCsr<I, V> a, const Widths& w, double scale, uint64_t seed, const std::string& what,
           Shape&& shape) {
  HostDense<V> q = random_dense<V>(a.rows, w.F, w.F, seed + 1), k = random_dense<V>(a.cols, w.F, w.F, seed + 2),
               v = random_dense<V>(a.cols, w.Fv, w.Fv, seed + 3);
  shape(a, q, k, v);
  const double sc = scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(w.F));
  HostDense<double> want, bound;
  oracle(a, q, k, v, sc, want, bound);
  const auto da = to_device(ctx, a);
  const DevDense<V> dq = to_device(ctx, q, w.offset), dk = to_device(ctx, k, w.offset),
                    dv = to_device(ctx, v, w.offset);
  const DevDense<V> out =
      to_device(ctx, HostDense<V>(a.rows, w.Fv, w.Fv, std::numeric_limits<V>::quiet_NaN()), w.offset);
  csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), out.mut(), {scale, kFused});
  expect_matches(to_host(ctx, out), want, bound,
                 what + ", " + shown(w) + ", scale " + std::to_string(scale) + ", seed " + std::to_string(seed));
}

template <class I, class V>
void check(const Context& ctx, const HostCsr<I, V>& a, const Widths& w, double scale, uint64_t seed,
           const std::string& what) {
  check(ctx, a, w, scale, seed, what, [](HostCsr<I, V>&, HostDense<V>&, HostDense<V>&, HostDense<V>&) {});
}

// Every lane shape of the chunked path, and the general path just past it.
const std::vector<Widths> kWidths = {
    {32, 32, 0},  {16, 16, 0},   {4, 4, 0},    {20, 12, 0},  {64, 64, 0},  {36, 64, 0},  {128, 128, 0}, {4, 128, 0},
    {256, 256, 0}, {200, 12, 0}, {4, 200, 0},  {260, 32, 0}, {32, 260, 0}, {1, 1, 0},    {3, 5, 0},     {33, 33, 0},
    {64, 1, 0},   {32, 32, 1},   {64, 64, 1},  {65, 65, 0},  {17, 80, 0},
};

// Row lengths around the chunk sizes (8 and 4 entries, slices of 2 or 4 chunks); all <= 256, so no
// row is split (the threshold stays 256).
const std::vector<int64_t> kAroundChunks = {0,  1,  2,  3,  4,  5,  7,  8,   9,   15,  16,  17,  31, 32,
                                            33, 63, 64, 65, 0,  97, 127, 128, 129, 255, 256, 6,  12, 40};

TEST(CudaAttentionPaths, RowLengthsAroundChunks) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  const auto a = rows_of<int32_t, float>(kAroundChunks, 300, kSeed);
  for (const Widths& w : kWidths)
    for (const double scale : {0.0, -0.7}) check(ctx, a, w, scale, kSeed + 1, "around chunks, int32/float");
  const auto a64 = rows_of<int64_t, double>(kAroundChunks, 300, kSeed + 10);
  for (const Widths& w : {Widths{32, 32, 0}, Widths{64, 20, 0}, Widths{128, 128, 0}, Widths{256, 256, 0},
                          Widths{3, 5, 0}, Widths{40, 64, 1}})
    check(ctx, a64, w, 0.0, kSeed + 11, "around chunks, int64/double");
  const auto a32d = rows_of<int32_t, double>(kAroundChunks, 300, kSeed + 20);
  const auto a64f = rows_of<int64_t, float>(kAroundChunks, 300, kSeed + 30);
  for (const Widths& w : {Widths{32, 32, 0}, Widths{256, 64, 0}, Widths{33, 2, 0}}) {
    check(ctx, a32d, w, 0.0, kSeed + 21, "around chunks, int32/double");
    check(ctx, a64f, w, 0.0, kSeed + 31, "around chunks, int64/float");
  }
}

// Enough rows that a row gets one slice (rows x lanes past the device's resident threads, or a mean
// degree under 8), then a middling matrix (2 slices at 8 lanes on a 132-SM GPU). The lengths repeat
// around the chunk sizes so every slice count meets full and partial chunks.
TEST(CudaAttentionPaths, SlicesPerRow) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  std::vector<int64_t> low(40000), mid(8000);
  for (size_t i = 0; i < low.size(); ++i) low[i] = kAroundChunks[i % kAroundChunks.size()] % 10;
  for (size_t i = 0; i < mid.size(); ++i) mid[i] = 4 + static_cast<int64_t>(i % 17);
  const auto a_low = rows_of<int32_t, float>(low, 5000, kSeed + 40);
  const auto a_mid = rows_of<int32_t, float>(mid, 5000, kSeed + 41);
  for (const Widths& w : {Widths{32, 32, 0}, Widths{64, 64, 0}, Widths{128, 128, 0}, Widths{33, 33, 0}}) {
    check(ctx, a_low, w, 0.0, kSeed + 42, "one slice");
    check(ctx, a_mid, w, 0.0, kSeed + 43, "middling");
  }
}

// Rows longer than the threshold (64 below 4 M entries once a row passes 256): CTA items of 256
// entries in the same launch as the rows. One item (65-256 entries: the CTA writes the row), two
// (257: an item of one entry), several (513, 1000, 2600: the last ticket merges them in item
// order), thirty split rows at once (a ticket each); then SPARSEPORT_HUB_T = 16, which makes items
// of rows of 17 entries and more.
TEST(CudaAttentionPaths, LongRowsAcrossItems) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  std::vector<int64_t> degs = {65, 3, 100, 256, 0, 257, 300, 9, 513, 1000, 2600, 17, 64, 33};
  for (int i = 0; i < 30; ++i) degs.push_back(i % 3 == 0 ? 700 : 5 + i);
  const auto a = rows_of<int32_t, float>(degs, 3000, kSeed + 50);
  const auto a64 = rows_of<int64_t, double>(degs, 3000, kSeed + 51);
  for (const char* t : {static_cast<const char*>(nullptr), "16"}) {
    ScopedEnv hub_t("SPARSEPORT_HUB_T", t);
    const std::string what = std::string("long rows, SPARSEPORT_HUB_T=") + (t != nullptr ? t : "(unset)");
    for (const Widths& w : {Widths{32, 32, 0}, Widths{64, 64, 0}, Widths{4, 4, 0}, Widths{128, 128, 0},
                            Widths{256, 256, 0}, Widths{256, 8, 0}, Widths{3, 5, 0}, Widths{33, 64, 0},
                            Widths{64, 64, 1}, Widths{300, 300, 0}})
      check(ctx, a, w, 0.0, kSeed + 52, what + ", int32/float");
    for (const Widths& w : {Widths{32, 32, 0}, Widths{256, 256, 0}, Widths{17, 17, 0}})
      check(ctx, a64, w, 0.0, kSeed + 53, what + ", int64/double");
  }
}

// Scores and values that are not finite, on rows (threshold 256) and on items (SPARSEPORT_HUB_T = 8:
// every row of 9 entries or more is an item). Q's and K's column 0 are made positive so that an
// infinity there sets the score's sign.
template <class I, class V>
void check_specials(const Context& ctx, const Widths& w) {
  const V inf = std::numeric_limits<V>::infinity(), nan = std::numeric_limits<V>::quiet_NaN();
  const std::vector<int64_t> degs = {12, 9, 1, 3, 17, 8, 33, 0, 2, 40, 5, 16};
  const auto a0 = rows_of<I, V>(degs, 60, kSeed + 60);
  const auto positive_col0 = [](HostDense<V>& m) {
    for (int64_t i = 0; i < m.rows; ++i) m(i, 0) = V(0.5) + std::fabs(m(i, 0));
  };
  struct Case {
    const char* name;
    double scale;
    void (*shape)(HostCsr<I, V>&, HostDense<V>&, HostDense<V>&, HostDense<V>&, V, V);
  };
  const Case cases[] = {
      // Row 0: its first 8 keys score -inf (a whole chunk at 8 lanes), the last 4 are finite.
      {"-inf first chunk", 0.0,
       [](HostCsr<I, V>& a, HostDense<V>&, HostDense<V>& k, HostDense<V>&, V inf_, V) {
         for (int e = 0; e < 8; ++e) a.colind[static_cast<size_t>(e)] = static_cast<I>(50 + e % 5);
         for (int e = 8; e < 12; ++e) a.colind[static_cast<size_t>(e)] = static_cast<I>(e);
         for (int c = 50; c < 55; ++c) k(c, 0) = -inf_;
       }},
      // Row 1: every key scores -inf (NaN, as the reference's exp(-inf - -inf)); key 55 elsewhere
      // weighs 0.
      {"all -inf row", 0.7,
       [](HostCsr<I, V>& a, HostDense<V>&, HostDense<V>& k, HostDense<V>&, V inf_, V) {
         for (I e = a.rowptr[1]; e < a.rowptr[2]; ++e) a.colind[static_cast<size_t>(e)] = 55;
         a.colind[static_cast<size_t>(a.rowptr[9])] = 55;
         k(55, 0) = -inf_;
       }},
      // Equal weights; every row ends with keys 9 and 7, whose V rows hold -inf and +inf.
      {"infinite V at row ends", 0.0,
       [](HostCsr<I, V>& a, HostDense<V>&, HostDense<V>& k, HostDense<V>& v, V inf_, V) {
         for (V& x : k.data) x = V(0);
         v(7, 0) = inf_;
         v(9, v.cols - 1) = -inf_;
         for (int64_t r = 0; r < a.rows; ++r) {
           const I e0 = a.rowptr[static_cast<size_t>(r)], e1 = a.rowptr[static_cast<size_t>(r) + 1];
           if (e1 - e0 >= 1) a.colind[static_cast<size_t>(e1 - 1)] = 7;
           if (e1 - e0 >= 2) a.colind[static_cast<size_t>(e1 - 2)] = 9;
         }
       }},
      // A NaN in key 11 (the rows holding it are NaN).
      {"NaN key", 0.0,
       [](HostCsr<I, V>& a, HostDense<V>&, HostDense<V>& k, HostDense<V>&, V, V nan_) {
         k(11, k.cols - 1) = nan_;
         a.colind[3] = 11;
       }},
      // Keys of +inf and -inf dot products with a negative scale: -inf scores weigh 0, +inf give NaN.
      {"opposite infinities, negative scale", -0.7,
       [](HostCsr<I, V>& a, HostDense<V>&, HostDense<V>& k, HostDense<V>&, V inf_, V) {
         k(3, 0) = inf_;
         k(4, 0) = -inf_;
         a.colind[0] = 3;
         a.colind[7] = 4;
         a.colind[static_cast<size_t>(a.rowptr[4])] = 3;  // row 4: a +inf dot, so a -inf score only
       }},
  };
  for (const Case& c : cases)
    for (const char* t : {static_cast<const char*>(nullptr), "8"}) {
      ScopedEnv hub_t("SPARSEPORT_HUB_T", t);
      check(ctx, a0, w, c.scale, kSeed + 61, std::string(c.name) + (t != nullptr ? ", items" : ", rows"),
            [&](HostCsr<I, V>& a, HostDense<V>& q, HostDense<V>& k, HostDense<V>& v) {
              positive_col0(q);
              positive_col0(k);
              c.shape(a, q, k, v, inf, nan);
            });
    }
}

TEST(CudaAttentionPaths, SpecialScoresAndValues) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  for (const Widths& w : {Widths{32, 32, 0}, Widths{4, 4, 0}, Widths{64, 64, 0}, Widths{128, 128, 0},
                          Widths{256, 256, 0}, Widths{3, 5, 0}, Widths{33, 33, 0}, Widths{64, 64, 1}})
    check_specials<int32_t, float>(ctx, w);
  for (const Widths& w : {Widths{32, 32, 0}, Widths{256, 256, 0}}) check_specials<int64_t, double>(ctx, w);
}

// Deterministic mode on split rows at the chunked path's widths: the same bits in every run and
// whatever SPARSEPORT_HUB_T (which deterministic mode ignores), whichever CTA draws a row's last
// ticket.
TEST(CudaAttentionPaths, DeterministicSplitRows) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  ctx.set_deterministic(true);
  std::vector<int64_t> degs(600);
  for (size_t i = 0; i < degs.size(); ++i) degs[i] = i % 50 == 0 ? 1500 : static_cast<int64_t>(i % 40);
  const auto a = rows_of<int32_t, float>(degs, 2000, kSeed + 70);
  const auto da = to_device(ctx, a);
  for (const Widths& w : {Widths{32, 32, 0}, Widths{64, 64, 0}, Widths{128, 128, 0}, Widths{256, 256, 0},
                          Widths{33, 20, 0}}) {
    const HostDense<float> q = random_dense<float>(a.rows, w.F, w.F, kSeed + 71),
                           k = random_dense<float>(a.cols, w.F, w.F, kSeed + 72),
                           v = random_dense<float>(a.cols, w.Fv, w.Fv, kSeed + 73);
    HostDense<double> want, bound;
    oracle(a, q, k, v, 1.0 / std::sqrt(static_cast<double>(w.F)), want, bound);
    const DevDense<float> dq = to_device(ctx, q), dk = to_device(ctx, k), dv = to_device(ctx, v);
    std::optional<HostDense<float>> first;
    for (const char* t : {static_cast<const char*>(nullptr), "16", "100000"}) {
      ScopedEnv hub_t("SPARSEPORT_HUB_T", t);
      for (int run = 0; run < 3; ++run) {
        const DevDense<float> out = to_device(ctx, HostDense<float>(a.rows, w.Fv, w.Fv, 0.0f));
        csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), out.mut(), {0.0, kFused});
        const HostDense<float> got = to_host(ctx, out);
        if (!first) {
          expect_matches(got, want, bound, "deterministic, " + shown(w));
          first = got;
        } else {
          EXPECT_EQ(0, std::memcmp(got.data.data(), first->data.data(), got.data.size() * sizeof(float)))
              << shown(w) << ": the bits changed (SPARSEPORT_HUB_T=" << (t != nullptr ? t : "(unset)") << ", run "
              << run << ")";
        }
      }
    }
  }
}

}  // namespace
