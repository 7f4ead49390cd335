// SPDX-License-Identifier: Apache-2.0
// The cuda plugin's summarize_csr slot (ABI 1.3) against its definition, scheduler::summarize_host
// on the host copy: every field equal, histograms bucket by bucket, for int32 and int64 indices
// and want = SIGNATURE (the feature fields must stay 0), FEATURES and both. Inputs: generated
// graphs, and the edge cases of the kernel's mapping (no rows, no entries, empty rows and long
// runs of them, a 200k-entry mega-row, a single row holding every entry, rectangular shapes, 3M
// entries on 2.5M rows so that every grid-stride loop wraps, blocks past the 1024-entry cap,
// wide int64 columns, columns outside [0, cols)). CudaSummaryMath checks the kernel's exact
// arithmetic (kernels/summary_math.hpp) against the definition's helpers without a GPU.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../common/conformance.hpp"
#include "../common/csr_cases.hpp"
#include "cuda_test.hpp"
#include "kernels/summary_math.hpp"
#include "scheduler/summary.hpp"
#include "sparseport/graph.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;
using sparseport_test::build;
using sparseport_test::Case;
using sparseport_test::expect_equal;
namespace sch = sparseport::scheduler;
namespace sm = sparseport::summary_math;

constexpr uint32_t kSig = SPARSEPORT_SUMMARY_SIGNATURE;
constexpr uint32_t kFeat = SPARSEPORT_SUMMARY_FEATURES;
constexpr uint32_t kCheck = SPARSEPORT_SUMMARY_CHECK;
constexpr uint32_t kDeg = SPARSEPORT_SUMMARY_DEGREES;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

uint64_t seed_of(const std::string& name) { return sparseport::testing::case_seed("cuda_summary/" + name); }

// ---- the kernel's arithmetic, on the host ------------------------------------------------------

TEST(CudaSummaryMath, HashesAndBucketsMatchTheDefinition) {
  std::mt19937_64 rng(seed_of("hash"));
  std::vector<int64_t> values = {0, 1, -1, 2, 31, 32, kI64Max, std::numeric_limits<int64_t>::min()};
  for (int k = 0; k < 200; ++k) values.push_back(static_cast<int64_t>(rng()));
  for (int64_t v : values)
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{16383}, int64_t{1} << 40, kI64Max}) {
      EXPECT_EQ(sm::hash_term(v, i), sch::hash_term(v, i)) << v << " at " << i;
      EXPECT_EQ(sm::hash_finish(static_cast<uint64_t>(v), i), sch::hash_finish(static_cast<uint64_t>(v), i));
    }
  std::vector<uint64_t> xs = {0, ~0ull};
  for (int b = 0; b < 64; ++b) xs.insert(xs.end(), {(1ull << b) - 1, 1ull << b, (1ull << b) + 1});
  for (int k = 0; k < 200; ++k) xs.push_back(rng() >> (rng() % 64));
  for (uint64_t x : xs) EXPECT_EQ(sm::bucket(x), sch::summary_bucket(x)) << x;
}

TEST(CudaSummaryMath, SamplePositionsMatchTheDefinition) {
  constexpr int64_t kS = SPARSEPORT_SUMMARY_SAMPLE;
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{100}, kS - 1, kS, kS + 1, 2 * kS - 1, 2 * kS,
                    int64_t{16384}, int64_t{1000003}, int64_t{3000000000}, (int64_t{1} << 40) + 12345, kI64Max / 3,
                    kI64Max}) {
    const sm::SampleParams p = sm::sample_params(n);
    const int64_t S = std::min<int64_t>(n, kS);
    ASSERT_EQ(p.samples, S) << n;
    int64_t wrong = 0, first_wrong = -1;
    // plugin_abi.h: every entry for n <= S; else runs of L entries, run r from floor(r (n - L) / (R - 1)).
    constexpr int64_t kL = SPARSEPORT_SUMMARY_RUN, kR = kS / kL;
    for (int64_t j = 0; j < S; ++j) {
      const auto want = n <= kS ? j
                                : static_cast<int64_t>(static_cast<sch::summary_u128>(j / kL) * static_cast<uint64_t>(n - kL) /
                                                       static_cast<uint64_t>(kR - 1)) +
                                      j % kL;
      if (sm::sample_position(j, p) != want && wrong++ == 0) first_wrong = j;
    }
    EXPECT_EQ(wrong, 0) << "n " << n << ", first wrong sample " << first_wrong;
    EXPECT_EQ(sm::sample_position(S - 1, p), n - 1) << "the last entry is sampled, n " << n;
  }
}

TEST(CudaSummaryMath, DiagonalsMatchTheDefinition) {
  std::mt19937_64 rng(seed_of("diagonal"));
  const int64_t two32 = int64_t{1} << 32;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 1}, {1, 0}, {5, 0}, {7, 3}, {3, 7}, {1000, 50000}, {50000, 1000}, {65536, 65536},
      {(int64_t{1} << 31) + 11, (int64_t{1} << 31) - 5}, {two32 - 1, (int64_t{1} << 40) + 3}, {two32 - 1, kI64Max},
      {two32, two32 * 2 + 1}, {kI64Max / 2, kI64Max}, {kI64Max, 3}};
  for (const auto& [rows, cols] : shapes) {
    const sm::DiagParams p = sm::diag_params(rows, cols);
    std::vector<int64_t> at = {0, rows - 1, rows / 2, rows / 3, rows - 2 > 0 ? rows - 2 : 0};
    for (int k = 0; k < 2000; ++k) at.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(rows)));
    if (rows <= 5000)
      for (int64_t i = 0; i < rows; ++i) at.push_back(i);
    for (int64_t i : at)
      ASSERT_EQ(sm::diagonal(i, p), sch::diagonal_of(i, rows, cols)) << "row " << i << " of " << rows << "x" << cols;
  }
  EXPECT_EQ(sm::diagonal(0, sm::diag_params(0, 10)), 0);
}

TEST(CudaSummaryMath, DistanceTermsMatchTheDefinition) {
  std::mt19937_64 rng(seed_of("distance"));
  const auto want = [](uint64_t x, uint64_t cols) { return cols > 0 ? (x << 20) / cols : 0; };
  for (uint64_t cols = 0; cols <= 300; ++cols) {
    const sm::DistanceParams p = sm::distance_params(static_cast<int64_t>(cols));
    for (uint64_t x = 0; x <= cols + 2; ++x) ASSERT_EQ(sm::distance_term(x, p), want(x, cols)) << x << " / " << cols;
  }
  for (uint64_t cols : {uint64_t{1000}, uint64_t{50000}, uint64_t{1} << 20, (uint64_t{1} << 31) - 1,
                        uint64_t{1000000000007}, (uint64_t{1} << 43) - 1, uint64_t{1} << 43, (uint64_t{1} << 43) + 1,
                        uint64_t{1} << 50, static_cast<uint64_t>(kI64Max)}) {
    const sm::DistanceParams p = sm::distance_params(static_cast<int64_t>(cols));
    std::vector<uint64_t> xs = {0, 1, cols - 1, cols, cols + 1, cols / 2, cols / 3, cols / 7 * 3, uint64_t{1} << 44,
                                ~0ull};
    for (int k = 0; k < 5000; ++k) xs.push_back(rng() % cols);
    for (int k = 0; k < 200; ++k) xs.push_back(rng());
    for (uint64_t x : xs) ASSERT_EQ(sm::distance_term(x, p), want(x, cols)) << x << " / " << cols;
  }
  for (int64_t c : {int64_t{0}, int64_t{5}, kI64Max, -kI64Max})
    for (int64_t d : {int64_t{0}, int64_t{3}, kI64Max / 2})
      EXPECT_EQ(sm::distance(c, d), static_cast<uint64_t>(c > d ? c - d : d - c));
}

// ---- inputs ------------------------------------------------------------------------------------

template <class I>
std::vector<Case<I>> cases() {
  std::vector<Case<I>> out;
  const auto add = [&](std::string name, HostCsr<I, float> a) { out.push_back({std::move(name), std::move(a)}); };
  GenOptions pattern;
  pattern.pattern = true;
  for (const char* spec : {"rmat:14:8", "rmat:17:4", "hubs:100000:8:4:50000", "band:200000:7", "er:3000:0.01"})
    add(spec, generate<I, float>(spec, pattern));

  std::mt19937_64 rng(seed_of(std::string("inputs/") + (sizeof(I) == 8 ? "i64" : "i32")));
  const auto uniform = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  add("no rows, no columns", build<I>(0, 0, [](int64_t) { return 0; }, [](int64_t, int64_t) { return 0; }));
  add("no rows, 10 columns", build<I>(0, 10, [](int64_t) { return 0; }, [](int64_t, int64_t) { return 0; }));
  add("1000 empty rows", build<I>(1000, 1000, [](int64_t) { return 0; }, [](int64_t, int64_t) { return 0; }));
  add("one row, no columns", build<I>(1, 0, [](int64_t) { return 0; }, [](int64_t, int64_t) { return 0; }));
  add("a fifth of the rows empty", skewed_csr<I, float>(5000, 5000, 20000, 0.05, rng(), false));
  // Long runs of empty rows between entries: windows move on by search.
  add("entries every 997th row", build<I>(100000, 100000, [](int64_t i) { return i % 997 == 5 || i == 99999 ? 3 : 0; },
                                          [&](int64_t, int64_t) { return uniform(100000); }));
  add("rows 0 and last only", build<I>(70000, 70000, [](int64_t i) { return i == 0 || i == 69999 ? 700 : 0; },
                                       [&](int64_t, int64_t) { return uniform(70000); }));
  // A 200k-entry mega-row among short rows: tiles cut it.
  add("mega-row of 200k", build<I>(1000, 300000, [&](int64_t i) { return i == 500 ? 200000 : uniform(4); },
                                   [&](int64_t, int64_t) { return uniform(300000); }));
  add("a single row with every entry", build<I>(1, 1 << 20, [](int64_t) { return 300000; },
                                                [&](int64_t, int64_t) { return uniform(1 << 20); }));
  add("wide 1000 x 50000", build<I>(1000, 50000, [&](int64_t) { return uniform(40); },
                                   [&](int64_t, int64_t) { return uniform(50000); }));
  add("tall 50000 x 1000", build<I>(50000, 1000, [&](int64_t) { return uniform(12); },
                                   [&](int64_t, int64_t) { return uniform(1000); }));
  add("diagonal 100000", build<I>(100000, 100000, [](int64_t) { return 1; }, [](int64_t i, int64_t) { return i; }));
  // 32-row blocks above the 1024-entry cap, with many repeated columns and segments.
  add("dense 64 x 64 blocks of few columns", build<I>(4096, 4096, [](int64_t) { return 64; },
                                                      [&](int64_t i, int64_t) { return (i / 32) * 8 + uniform(41); }));
  // 3M entries on 2.5M rows (about 0.75M rows hold them, then a 1.75M-row empty tail): every
  // grid-stride loop of the kernel wraps on an H200.
  add("3M entries on 2.5M rows", skewed_csr<I, float>(2500000, 2500000, 3000000, 0.02, rng(), false));
  // Not a valid CSR, yet every number is defined: columns outside [0, cols) sort at full width.
  sparseport_test::add_wide_and_invalid_columns<I>(add, uniform, "rmat:12:4", 20000);
  return out;
}

// ---- comparison ----------------------------------------------------------------------------------

// The index check's verdict, in check_indices' order: rowptr[0], rowptr[rows], a decreasing row,
// a column outside [0, cols).
template <class I>
int32_t first_problem(const HostCsr<I, float>& a) {
  if (a.rowptr[0] != 0) return SPARSEPORT_INDEX_ROWPTR_START;
  if (static_cast<int64_t>(a.rowptr[static_cast<size_t>(a.rows)]) != a.nnz()) return SPARSEPORT_INDEX_ROWPTR_END;
  for (int64_t i = 0; i < a.rows; ++i)
    if (a.rowptr[static_cast<size_t>(i) + 1] < a.rowptr[static_cast<size_t>(i)]) return SPARSEPORT_INDEX_ROWPTR_DECREASES;
  for (const I c : a.colind)
    if (c < 0 || static_cast<int64_t>(c) >= a.cols) return SPARSEPORT_INDEX_OUT_OF_RANGE;
  return SPARSEPORT_INDEX_OK;
}

// Without FEATURES every field past the hashes is 0.
void expect_no_features(const sparseport_csr_summary& s) {
  EXPECT_EQ(s.max_degree, 0);
  for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
    EXPECT_EQ(s.degree_hist[b], 0) << "degree bucket " << b;
    EXPECT_EQ(s.distance_hist[b], 0) << "distance bucket " << b;
  }
  EXPECT_EQ(s.distance_sum, 0u);
  EXPECT_EQ(s.block_entries, 0);
  EXPECT_EQ(s.block_distinct, 0);
  EXPECT_EQ(s.block_segments, 0);
  EXPECT_EQ(s.blocks, 0);
}

template <class I>
sparseport_csr abi_of(const HostCsr<I, float>& a, const void* rowptr, const void* colind) {
  return {a.rows, a.cols, a.nnz(), rowptr, colind, nullptr, sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32,
          SPARSEPORT_F32};
}

// The plugin's slot, called through its table; the result starts as garbage, so a field the slot
// leaves unwritten shows.
sparseport_csr_summary call_slot(const Context& ctx, const sparseport_csr& a, uint32_t want) {
  sparseport_csr_summary s;
  std::memset(&s, 0xA5, sizeof s);
  const sparseport_plugin* t = ctx.plugin().table;
  if (t->table_size < offsetof(sparseport_plugin, summarize_csr) + sizeof t->summarize_csr || t->summarize_csr == nullptr) {
    ADD_FAILURE() << "the cuda plugin has no summarize_csr slot";
    return s;
  }
  const sparseport_exec x = ctx.exec();
  sparseport_status st{};
  const int rc = t->summarize_csr(&x, &a, want, &s, &st);
  EXPECT_EQ(rc, SPARSEPORT_OK) << st.message;
  return s;
}

class CudaSummary : public ::testing::Test {
 protected:
  void SetUp() override {
    CUDA_TEST_REQUIRE_GPU();
    ctx_ = Context::create("cuda:0");
  }

  template <class I>
  void check_all() {
    for (const Case<I>& c : cases<I>()) {
      const HostCsr<I, float>& a = c.a;
      SCOPED_TRACE(c.name + (sizeof(I) == 8 ? " (int64)" : " (int32)") + ", " + std::to_string(a.rows) + "x" +
                   std::to_string(a.cols) + ", " + std::to_string(a.nnz()) + " entries, SPARSEPORT_TEST_SEED=" +
                   std::to_string(sparseport::testing::base_seed()));
      const Buffer rowptr = upload(ctx_, a.rowptr);
      const Buffer colind = a.nnz() > 0 ? upload(ctx_, a.colind) : Buffer();
      const sparseport_csr dev = abi_of(a, rowptr.data(), colind.data());
      const sparseport_csr host = abi_of(a, a.rowptr.data(), a.colind.data());
      // DEGREES (ABI 1.9) after FEATURES: its result words hold FEATURES's other fields, which it
      // must not pass on (summarize_host's DEGREES has them 0, and expect_equal compares all).
      for (uint32_t want : {kSig, kSig | kFeat, kFeat, kSig | kDeg, kSig}) {
        SCOPED_TRACE("want " + std::to_string(want));
        const sparseport_csr_summary expected = sch::summarize_host(host, want);
        const sparseport_csr_summary got = call_slot(ctx_, dev, want);
        expect_equal(got, expected);
        if ((want & (kFeat | kDeg)) == 0) expect_no_features(got);
      }
      // With CHECK: the same signature, and the index check's verdict (ABI 1.4).
      const sparseport_csr_summary checked = call_slot(ctx_, dev, kSig | kCheck);
      const sparseport_csr_summary sig = sch::summarize_host(host, kSig);
      EXPECT_EQ(checked.rowptr_hash, sig.rowptr_hash);
      EXPECT_EQ(checked.colind_hash, sig.colind_hash);
      expect_no_features(checked);
      EXPECT_EQ(checked.index_checked, 1);
      EXPECT_EQ(checked.index_problem, first_problem(a));
      // All three at once (the scheduler's class decision of a new shape in device memory): the
      // features too, and the same verdict.
      const sparseport_csr_summary all = call_slot(ctx_, dev, kSig | kFeat | kCheck);
      expect_equal(all, sch::summarize_host(host, kSig | kFeat));
      EXPECT_EQ(all.index_checked, 1);
      EXPECT_EQ(all.index_problem, first_problem(a));
      // The row lengths with the check (a shape class's decision of a new shape in device memory
      // since ABI 1.9): FEATURES's degree numbers, nothing else of FEATURES, the same verdict.
      const sparseport_csr_summary rows = call_slot(ctx_, dev, kSig | kDeg | kCheck);
      const sparseport_csr_summary full = sch::summarize_host(host, kSig | kFeat);
      expect_equal(rows, sch::summarize_host(host, kSig | kDeg));
      EXPECT_EQ(rows.max_degree, full.max_degree);
      for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) EXPECT_EQ(rows.degree_hist[b], full.degree_hist[b]) << b;
      EXPECT_EQ(rows.index_checked, 1);
      EXPECT_EQ(rows.index_problem, first_problem(a));
      // The scheduler's entry point takes the slot too.
      expect_equal(sch::summarize(ctx_.plugin(), ctx_.exec(), dev, kSig | kFeat), sch::summarize_host(host, kSig | kFeat));
    }
  }

  Context ctx_;
};

TEST_F(CudaSummary, Int32EqualsTheHostDefinition) { check_all<int32_t>(); }
TEST_F(CudaSummary, Int64EqualsTheHostDefinition) { check_all<int64_t>(); }

TEST_F(CudaSummary, RefusesMissingAndHostPointers) {
  const HostCsr<int32_t, float> a = generate<int32_t, float>("rmat:10:4");
  const Buffer rowptr = upload(ctx_, a.rowptr), colind = upload(ctx_, a.colind);
  const sparseport_csr dev = abi_of(a, rowptr.data(), colind.data());
  const sparseport_plugin* t = ctx_.plugin().table;
  ASSERT_NE(t->summarize_csr, nullptr);
  const sparseport_exec x = ctx_.exec();
  sparseport_status st{};
  EXPECT_NE(t->summarize_csr(&x, &dev, kSig, nullptr, &st), SPARSEPORT_OK);
  EXPECT_EQ(st.code, SPARSEPORT_ERR_INVALID_ARGUMENT) << st.message;
  sparseport_csr_summary s{};
  st = {};
  const sparseport_csr on_host = abi_of(a, a.rowptr.data(), a.colind.data());
  EXPECT_NE(t->summarize_csr(&x, &on_host, kSig, &s, &st), SPARSEPORT_OK);
  EXPECT_EQ(st.code, SPARSEPORT_ERR_INVALID_ARGUMENT) << st.message;
  EXPECT_NE(std::string(st.message).find("A.rowptr"), std::string::npos) << st.message;
  // The context still works, and the result is the host's.
  expect_equal(call_slot(ctx_, dev, kSig | kFeat), sch::summarize_host(on_host, kSig | kFeat));
}

// CHECK on broken matrices: each kind of violation alone, at the start, in the middle and at the
// end of a matrix large enough that the kernel's loops wrap, and several at once (the first kind
// in check_indices' order wins). The signature hashes stay the host's whatever the contents.
template <class I>
void check_broken(const Context& ctx) {
  GenOptions pattern;
  pattern.pattern = true;
  // About 1.6M entries on 400k rows, mean degree 4: every loop of the kernel wraps on an H200 (one
  // wave of 132 x 8 blocks reads 1.08M columns). At SPARSEPORT_TEST_SCALE 0.1 (the sanitizer
  // runs): 130k rows, about 520k entries, still several blocks per kind of violation.
  const int64_t rows = scaled(400000, 130000);
  const HostCsr<I, float> good = generate<I, float>("er:" + std::to_string(rows) + ":" + std::to_string(4.0 / rows), pattern);
  const int64_t n = good.nnz(), m = good.rows;
  if (full_scale()) {
    ASSERT_GT(n, 1000000);
  }
  std::vector<std::pair<std::string, std::function<void(HostCsr<I, float>&)>>> edits = {
      {"valid", [](HostCsr<I, float>&) {}},
      {"rowptr[0] = 1", [](HostCsr<I, float>& a) { a.rowptr[0] = 1; }},
      {"rowptr[rows] = nnz - 1", [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m)] -= 1; }},
      {"rowptr decreases at row 1", [](HostCsr<I, float>& a) { a.rowptr[1] = a.rowptr[2] + 1; }},
      {"rowptr decreases in the middle", [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m / 2)] = 0; }},
      {"rowptr decreases at the last row",
       [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m - 1)] = static_cast<I>(n + 1); }},
      {"column -1 first", [](HostCsr<I, float>& a) { a.colind[0] = -1; }},
      {"column == cols in the middle", [&](HostCsr<I, float>& a) { a.colind[static_cast<size_t>(n / 2)] = static_cast<I>(a.cols); }},
      {"column far out at the end", [&](HostCsr<I, float>& a) { a.colind.back() = std::numeric_limits<I>::max(); }},
      {"a bad column and a decreasing row", [&](HostCsr<I, float>& a) {
         a.colind[7] = -5;
         a.rowptr[static_cast<size_t>(m / 3)] = 0;
       }},
  };
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what + (sizeof(I) == 8 ? " (int64)" : " (int32)"));
    HostCsr<I, float> a = good;
    edit(a);
    const Buffer rowptr = upload(ctx, a.rowptr), colind = upload(ctx, a.colind);
    const sparseport_csr dev = abi_of(a, rowptr.data(), colind.data());
    const sparseport_csr_summary want = sch::summarize_host(abi_of(a, a.rowptr.data(), a.colind.data()), kSig);
    for (int rep = 0; rep < 2; ++rep) {  // the accumulators are left clean for the next call
      const sparseport_csr_summary got = call_slot(ctx, dev, kSig | kCheck);
      EXPECT_EQ(got.index_checked, 1);
      EXPECT_EQ(got.index_problem, first_problem(a));
      EXPECT_EQ(got.rowptr_hash, want.rowptr_hash);
      EXPECT_EQ(got.colind_hash, want.colind_hash);
    }
    // With FEATURES in the same pass (the scheduler's class decision of a new shape in device
    // memory): the per-entry numbers are unspecified on an invalid rowptr, but the verdict and the
    // hashes are not, and no read may leave the arrays (compute-sanitizer memcheck would show one).
    const sparseport_csr_summary all = call_slot(ctx, dev, kSig | kFeat | kCheck);
    EXPECT_EQ(all.index_checked, 1);
    EXPECT_EQ(all.index_problem, first_problem(a));
    EXPECT_EQ(all.rowptr_hash, want.rowptr_hash);
    EXPECT_EQ(all.colind_hash, want.colind_hash);
  }
}

TEST_F(CudaSummary, CheckFindsEachViolationInt32) { check_broken<int32_t>(ctx_); }
TEST_F(CudaSummary, CheckFindsEachViolationInt64) { check_broken<int64_t>(ctx_); }

}  // namespace
