// SPDX-License-Identifier: Apache-2.0
// The kokkos plugin's summarize_csr (ABI 1.3/1.4) and check_indices (ABI 1.2) slots against their
// definitions, called through the plugin's table on arrays staged with Context::allocate and
// copy_to_backend, so that the same tests run on device memory under Kokkos-CUDA.
//  - summarize_csr equals scheduler::summarize_host field by field, histograms bucket by bucket,
//    for int32 and int64 indices and want = SIGNATURE (the feature fields stay 0), FEATURES and
//    both; with CHECK, the signature and the host check's verdict. Inputs: generated graphs and the
//    edges of the kernels (no rows, no entries, runs of empty rows longer than a team's chunk, a
//    mega-row, blocks past the 1024-entry cap, more 32-row blocks than are sampled, rectangular
//    both ways, wide int64 columns, columns outside [0, cols)).
//  - check_indices reports what the front end's host check reports (ops::host_report), problem,
//    position, row and values, for every kind of violation alone, at the start, in the middle and
//    at the end, and several at once; for CSRs and for plain and sorted index arrays.
// tests/cuda/test_cuda_summary.cpp is the cuda plugin's counterpart.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/conformance.hpp"
#include "common/csr_cases.hpp"
#include "scheduler/summary.hpp"
#include "sparseport/graph.hpp"
#include "sparseport/sparseport.hpp"
#include "src/ops/common.hpp"

namespace {

using namespace sparseport;
using sparseport_test::build;
using sparseport_test::Case;
namespace sch = sparseport::scheduler;

constexpr uint32_t kSig = SPARSEPORT_SUMMARY_SIGNATURE;
constexpr uint32_t kFeat = SPARSEPORT_SUMMARY_FEATURES;
constexpr uint32_t kCheck = SPARSEPORT_SUMMARY_CHECK;

uint64_t seed_of(const std::string& name) { return sparseport::testing::case_seed("kokkos_summary/" + name); }

template <class I>
constexpr int32_t index_type_of() {
  return sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32;
}

// v in the plugin's memory (none for an empty v).
template <class T>
Buffer upload(const Context& ctx, const std::vector<T>& v) {
  if (v.empty()) return Buffer();
  Buffer b = ctx.allocate(v.size() * sizeof(T));
  ctx.copy_to_backend(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// ---- inputs ------------------------------------------------------------------------------------

template <class I>
std::vector<Case<I>> cases() {
  std::vector<Case<I>> out;
  const auto add = [&](std::string name, HostCsr<I, float> a) { out.push_back({std::move(name), std::move(a)}); };
  GenOptions pattern;
  pattern.pattern = true;
  // band:80000:5 has 2500 32-row blocks, more than the 2048 sampled; megarow's row 0 holds 4000
  // entries (a block past the cap, a row over several teams' chunks); bipartite is 3000 x 500.
  for (const char* spec : {"rmat:12:8", "rmat:14:4", "er:3000:0.01", "band:80000:5", "mesh2d:60:50:1",
                           "hubs:20000:8:4:10000", "megarow:4000:2:0.5", "bipartite:3000:500:6"})
    add(spec, generate<I, float>(spec, pattern));

  std::mt19937_64 rng(seed_of(std::string("inputs/") + (sizeof(I) == 8 ? "i64" : "i32")));
  const auto uniform = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  const auto none = [](int64_t) { return 0; };
  const auto zero = [](int64_t, int64_t) { return 0; };
  add("no rows, no columns", build<I>(0, 0, none, zero));
  add("no rows, 10 columns", build<I>(0, 10, none, zero));
  add("1000 empty rows", build<I>(1000, 1000, none, zero));
  add("one row, no columns", build<I>(1, 0, none, zero));
  add("one row of 3 entries", build<I>(1, 7, [](int64_t) { return 3; }, [](int64_t, int64_t k) { return 6 - 2 * k; }));
  // Runs of empty rows longer than a team's chunk of rows, between entries.
  add("entries every 1997th row", build<I>(20000, 20000, [](int64_t i) { return i % 1997 == 5 || i == 19999 ? 3 : 0; },
                                           [&](int64_t, int64_t) { return uniform(20000); }));
  add("rows 0 and last only", build<I>(7000, 7000, [](int64_t i) { return i == 0 || i == 6999 ? 700 : 0; },
                                       [&](int64_t, int64_t) { return uniform(7000); }));
  // A 20k-entry mega-row among short rows: its entries spread over about 20 teams' chunks.
  add("mega-row of 20k", build<I>(1000, 30000, [&](int64_t i) { return i == 500 ? 20000 : uniform(4); },
                                  [&](int64_t, int64_t) { return uniform(30000); }));
  add("a single row with every entry", build<I>(1, 1 << 20, [](int64_t) { return 5000; },
                                                [&](int64_t, int64_t) { return uniform(1 << 20); }));
  add("wide 1000 x 50000", build<I>(1000, 50000, [&](int64_t) { return uniform(40); },
                                   [&](int64_t, int64_t) { return uniform(50000); }));
  add("tall 50000 x 1000", build<I>(50000, 1000, [&](int64_t) { return uniform(6); },
                                   [&](int64_t, int64_t) { return uniform(1000); }));
  // 32-row blocks of 2048 entries (past the 1024-entry cap), with many repeated columns and segments.
  add("dense blocks of few columns", build<I>(1024, 1024, [](int64_t) { return 64; },
                                              [&](int64_t i, int64_t) { return (i / 32) * 8 + uniform(41); }));
  // Not a valid CSR, yet every number is defined: a column outside [0, cols) counts as a value of
  // its own in the blocks, and its distance as the definition computes it.
  sparseport_test::add_wide_and_invalid_columns<I>(add, uniform, "rmat:11:4", 5000);
  return out;
}

// ---- the slots and the definitions ---------------------------------------------------------------

template <class I>
sparseport_csr abi_of(const HostCsr<I, float>& a, const void* rowptr, const void* colind) {
  return {a.rows, a.cols, a.nnz(), rowptr, colind, nullptr, index_type_of<I>(), SPARSEPORT_F32};
}

// A matrix and its copy in the plugin's memory.
template <class I>
struct Staged {
  Buffer rowptr, colind;
  sparseport_csr dev, host;
  Staged(const Context& ctx, const HostCsr<I, float>& a)
      : rowptr(upload(ctx, a.rowptr)), colind(upload(ctx, a.colind)),
        dev(abi_of(a, rowptr.data(), colind.data())), host(abi_of(a, a.rowptr.data(), a.colind.data())) {}
};

const sparseport_plugin& table(const Context& ctx) {
  const sparseport_plugin* t = ctx.plugin().table;
  EXPECT_NE(t->summarize_csr, nullptr);
  EXPECT_NE(t->check_indices, nullptr);
  return *t;
}

// The slot's summary; the result starts as garbage, so a field the slot leaves unwritten shows.
sparseport_csr_summary call_summary(const Context& ctx, const sparseport_csr& a, uint32_t want) {
  sparseport_csr_summary s;
  std::memset(&s, 0xA5, sizeof s);
  const sparseport_exec x = ctx.exec();
  sparseport_status st{};
  EXPECT_EQ(table(ctx).summarize_csr(&x, &a, want, &s, &st), SPARSEPORT_OK) << st.message;
  return s;
}

sparseport_index_report call_check(const Context& ctx, const sparseport_index_check& c) {
  sparseport_index_report r;
  std::memset(&r, 0xA5, sizeof r);
  const sparseport_exec x = ctx.exec();
  sparseport_status st{};
  EXPECT_EQ(table(ctx).check_indices(&x, &c, &r, &st), SPARSEPORT_OK) << st.message;
  return r;
}

// The definition's numbers, and the index check's fields (summarize_host leaves them zero).
void expect_same(const sparseport_csr_summary& got, const sparseport_csr_summary& want) {
  sparseport_test::expect_equal(got, want);
  EXPECT_EQ(got.index_checked, want.index_checked);
  EXPECT_EQ(got.index_problem, want.index_problem);
}

void expect_same(const sparseport_index_report& got, const sparseport_index_report& want) {
  EXPECT_EQ(got.problem, want.problem);
  EXPECT_EQ(got.position, want.position);
  EXPECT_EQ(got.row, want.row);
  EXPECT_EQ(got.value, want.value);
  EXPECT_EQ(got.value2, want.value2);
}

sparseport_index_check csr_check(const sparseport_csr& a) {
  sparseport_index_check c{};
  c.kind = SPARSEPORT_CHECK_CSR;
  c.csr = a;
  c.op = "test";
  c.arg = "A";
  return c;
}

// ---- summarize_csr -------------------------------------------------------------------------------

template <class I>
void summaries_equal_the_definition() {
  const Context ctx = Context::create("kokkos");
  for (const Case<I>& c : cases<I>()) {
    const HostCsr<I, float>& a = c.a;
    SCOPED_TRACE(c.name + (sizeof(I) == 8 ? " (int64)" : " (int32)") + ", " + std::to_string(a.rows) + "x" +
                 std::to_string(a.cols) + ", " + std::to_string(a.nnz()) + " entries, SPARSEPORT_TEST_SEED=" +
                 std::to_string(sparseport::testing::base_seed()));
    const Staged<I> m(ctx, a);
    for (uint32_t want : {kSig, kSig | kFeat, kFeat}) {
      SCOPED_TRACE("want " + std::to_string(want));
      // Without FEATURES the definition leaves every field past the hashes 0.
      expect_same(call_summary(ctx, m.dev, want), sch::summarize_host(m.host, want));
    }
    // With CHECK: the definition's numbers and the host check's verdict (ABI 1.4).
    const int32_t problem = ops::host_report(csr_check(m.host)).problem;
    for (uint32_t want : {kSig | kCheck, kSig | kFeat | kCheck}) {
      SCOPED_TRACE("want " + std::to_string(want));
      sparseport_csr_summary expected = sch::summarize_host(m.host, want);
      expected.index_checked = 1;
      expected.index_problem = problem;
      expect_same(call_summary(ctx, m.dev, want), expected);
    }
  }
}

TEST(KokkosSummary, Int32EqualsTheHostDefinition) { summaries_equal_the_definition<int32_t>(); }
TEST(KokkosSummary, Int64EqualsTheHostDefinition) { summaries_equal_the_definition<int64_t>(); }

TEST(KokkosSummary, RefusesNullPointersAndNegativeSizes) {
  const Context ctx = Context::create("kokkos");
  const HostCsr<int32_t, float> a = generate<int32_t, float>("rmat:8:4");
  const Staged<int32_t> m(ctx, a);
  const sparseport_plugin& t = table(ctx);
  const sparseport_exec x = ctx.exec();
  sparseport_csr_summary s{};
  const auto refused = [&](const sparseport_csr* in, sparseport_csr_summary* out, const std::string& says) {
    sparseport_status st{};
    EXPECT_NE(t.summarize_csr(&x, in, kSig, out, &st), SPARSEPORT_OK);
    EXPECT_EQ(st.code, SPARSEPORT_ERR_INVALID_ARGUMENT) << st.message;
    EXPECT_NE(std::string(st.message).find(says), std::string::npos) << st.message;
  };
  refused(nullptr, &s, "matrix pointer is null");
  refused(&m.dev, nullptr, "result pointer is null");
  sparseport_csr bad = m.dev;
  bad.rowptr = nullptr;
  refused(&bad, &s, "A.rowptr is null");
  bad = m.dev;
  bad.colind = nullptr;
  refused(&bad, &s, "A.colind is null");
  bad = m.dev;
  bad.nnz = -1;
  refused(&bad, &s, "need no negative sizes");

  sparseport_index_check c = csr_check(m.dev);
  c.csr.colind = nullptr;
  sparseport_index_report r{};
  sparseport_status st{};
  EXPECT_NE(t.check_indices(&x, &c, &r, &st), SPARSEPORT_OK);
  EXPECT_EQ(st.code, SPARSEPORT_ERR_INVALID_ARGUMENT) << st.message;
  EXPECT_NE(std::string(st.message).find("test: A.colind is null"), std::string::npos) << st.message;
  // The context still works, and the result is the definition's.
  expect_same(call_summary(ctx, m.dev, kSig | kFeat), sch::summarize_host(m.host, kSig | kFeat));
}

// ---- check_indices -------------------------------------------------------------------------------

// Each kind of violation alone, at the start, in the middle and at the end of a matrix whose
// check spans many teams and chunks, and several at once (the first kind in the host check's order
// wins). The summary's CHECK gives the same verdict, and its hashes stay the definition's.
template <class I>
void csr_reports_equal_the_host_check() {
  const Context ctx = Context::create("kokkos");
  GenOptions pattern;
  pattern.pattern = true;
  const HostCsr<I, float> good = generate<I, float>("er:30000:0.00015", pattern);  // about 135k entries
  const int64_t n = good.nnz(), m = good.rows;
  ASSERT_GT(n, 100000);
  const std::vector<std::pair<std::string, std::function<void(HostCsr<I, float>&)>>> edits = {
      {"valid", [](HostCsr<I, float>&) {}},
      {"rowptr[0] = 1", [](HostCsr<I, float>& a) { a.rowptr[0] = 1; }},
      {"rowptr[0] = -1", [](HostCsr<I, float>& a) { a.rowptr[0] = -1; }},
      {"rowptr[rows] = nnz - 1", [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m)] -= 1; }},
      {"rowptr[rows] = nnz + 3", [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m)] += 3; }},
      {"rowptr decreases at row 1", [](HostCsr<I, float>& a) { a.rowptr[1] = a.rowptr[2] + 1; }},
      {"rowptr decreases in the middle", [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m / 2)] = 0; }},
      {"rowptr decreases at the last row",
       [&](HostCsr<I, float>& a) { a.rowptr[static_cast<size_t>(m - 1)] = static_cast<I>(n + 1); }},
      {"column -1 first", [](HostCsr<I, float>& a) { a.colind[0] = -1; }},
      {"column == cols in the middle",
       [&](HostCsr<I, float>& a) { a.colind[static_cast<size_t>(n / 2)] = static_cast<I>(a.cols); }},
      {"column far out at the end", [&](HostCsr<I, float>& a) { a.colind.back() = std::numeric_limits<I>::max(); }},
      {"the most negative column", [&](HostCsr<I, float>& a) { a.colind[5] = std::numeric_limits<I>::min(); }},
      {"several bad columns", [&](HostCsr<I, float>& a) {
         a.colind[static_cast<size_t>(n - 3)] = -2;
         a.colind[static_cast<size_t>(n / 3)] = static_cast<I>(a.cols + 1);
         a.colind[static_cast<size_t>(n / 3 + 1)] = -1;
       }},
      {"a bad column and a decreasing row", [&](HostCsr<I, float>& a) {
         a.colind[7] = -5;
         a.rowptr[static_cast<size_t>(m / 3)] = 0;
       }},
      {"every kind at once", [&](HostCsr<I, float>& a) {
         a.colind[3] = -5;
         a.rowptr[static_cast<size_t>(m / 4)] = 0;
         a.rowptr[static_cast<size_t>(m)] -= 1;
         a.rowptr[0] = 2;
       }},
  };
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what + (sizeof(I) == 8 ? " (int64)" : " (int32)"));
    HostCsr<I, float> a = good;
    edit(a);
    const Staged<I> s(ctx, a);
    const sparseport_index_report want = ops::host_report(csr_check(s.host));
    EXPECT_EQ(want.problem == SPARSEPORT_INDEX_OK, what == "valid");
    for (int rep = 0; rep < 2; ++rep) {  // the result words are clean for the next call
      expect_same(call_check(ctx, csr_check(s.dev)), want);
      const sparseport_csr_summary got = call_summary(ctx, s.dev, kSig | kCheck);
      const sparseport_csr_summary sig = sch::summarize_host(s.host, kSig);
      EXPECT_EQ(got.index_checked, 1);
      EXPECT_EQ(got.index_problem, want.problem);
      EXPECT_EQ(got.rowptr_hash, sig.rowptr_hash);
      EXPECT_EQ(got.colind_hash, sig.colind_hash);
    }
  }
  // No rows: rowptr alone.
  for (const auto& [rowptr0, nnz] : std::vector<std::pair<I, int64_t>>{{0, 0}, {1, 0}, {0, 2}}) {
    const std::vector<I> rowptr{rowptr0}, colind{0, 0};
    const Buffer rp = upload(ctx, rowptr), ci = upload(ctx, colind);
    const sparseport_csr dev{0, 4, nnz, rp.data(), ci.data(), nullptr, index_type_of<I>(), SPARSEPORT_F32};
    const sparseport_csr host{0, 4, nnz, rowptr.data(), colind.data(), nullptr, index_type_of<I>(), SPARSEPORT_F32};
    SCOPED_TRACE("no rows, rowptr[0] " + std::to_string(rowptr0) + ", nnz " + std::to_string(nnz));
    expect_same(call_check(ctx, csr_check(dev)), ops::host_report(csr_check(host)));
  }
}

// The run_parts slot (ABI 1.10): offered on Kokkos-OpenMP alone (backends/kokkos/space.hpp,
// kRunParts), where it runs every part exactly once; the scheduler's summary of host memory through
// it (rmat:14:8, 147k rows + entries: split on 2 threads and more) is the definition's.
TEST(KokkosSummary, RunPartsIsOfferedOnKokkosOpenMPAndRunsEveryPartOnce) {
  const Context ctx = Context::create("kokkos");
  const sparseport_plugin& t = *ctx.plugin().table;
  const sparseport_exec x = ctx.exec();
  char sig[1024] = {};
  sparseport_status st{};
  ASSERT_EQ(t.device_signature(x.state, sig, sizeof sig, &st), SPARSEPORT_OK) << st.message;
  const bool openmp = std::string(sig).find("exec_space=OpenMP\n") != std::string::npos;
  ASSERT_EQ(t.run_parts != nullptr, openmp) << sig;
  if (!openmp) {
    std::printf("run_parts is null here, as it must be off Kokkos-OpenMP; not run\n");
    return;
  }
  static std::atomic<int> runs[64];
  for (std::atomic<int>& r : runs) r = 0;
  ASSERT_EQ(t.run_parts(&x, 64, [](int64_t p, void*) { ++runs[p]; }, nullptr, &st), SPARSEPORT_OK) << st.message;
  for (int p = 0; p < 64; ++p) EXPECT_EQ(runs[p].load(), 1) << "part " << p;
  const HostCsr<int32_t, float> a = generate<int32_t, float>("rmat:14:8");
  const Staged<int32_t> m(ctx, a);
  sparseport_exec threads4 = x;
  threads4.threads = 4;
  expect_same(sch::summarize(ctx.plugin(), threads4, m.host, kSig | kFeat), sch::summarize_host(m.host, kSig | kFeat));
}

TEST(KokkosCheckIndices, CsrReportsEqualTheHostCheckInt32) { csr_reports_equal_the_host_check<int32_t>(); }
TEST(KokkosCheckIndices, CsrReportsEqualTheHostCheckInt64) { csr_reports_equal_the_host_check<int64_t>(); }

// Index arrays (segment ids, row selections): entries in [0, bound), ascending for the sorted kind.
template <class I>
void index_reports_equal_the_host_check() {
  const Context ctx = Context::create("kokkos");
  std::mt19937_64 rng(seed_of(std::string("index/") + (sizeof(I) == 8 ? "i64" : "i32")));
  const int64_t bound = 5000, n = 100000;
  std::vector<I> sorted(static_cast<size_t>(n));
  for (I& v : sorted) v = static_cast<I>(rng() % static_cast<uint64_t>(bound));
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](std::vector<I>& v, int64_t e) -> I& { return v[static_cast<size_t>(e)]; };
  const std::vector<std::pair<std::string, std::function<void(std::vector<I>&)>>> edits = {
      {"valid", [](std::vector<I>&) {}},
      {"-1 first", [&](std::vector<I>& v) { at(v, 0) = -1; }},
      {"bound in the middle", [&](std::vector<I>& v) { at(v, n / 2) = static_cast<I>(bound); }},
      {"far out at the end", [&](std::vector<I>& v) { v.back() = std::numeric_limits<I>::max(); }},
      {"a descent in the middle", [&](std::vector<I>& v) { at(v, n / 2) = static_cast<I>(at(v, n / 2 - 1) - 1); }},
      {"a descent at the end", [&](std::vector<I>& v) { v.back() = 0; }},
      {"a descent, then a value out of range", [&](std::vector<I>& v) {
         at(v, 1000) = 0;
         at(v, n - 10) = -3;
       }},
      {"a value out of range, then a descent", [&](std::vector<I>& v) {
         at(v, 1000) = static_cast<I>(bound + 7);
         at(v, n - 10) = 0;
       }},
      {"out of range and below the one before at one entry", [&](std::vector<I>& v) { at(v, 77) = -9; }},
      {"a descent right after a value out of range", [&](std::vector<I>& v) {
         at(v, 500) = static_cast<I>(bound);
         at(v, 501) = 0;
       }},
  };
  for (const auto& [what, edit] : edits) {
    std::vector<I> v = sorted;
    edit(v);
    const Buffer dev = upload(ctx, v);
    for (const int32_t kind : {SPARSEPORT_CHECK_INDEX, SPARSEPORT_CHECK_SORTED_INDEX}) {
      SCOPED_TRACE(what + (kind == SPARSEPORT_CHECK_SORTED_INDEX ? ", sorted" : "") +
                   (sizeof(I) == 8 ? " (int64)" : " (int32)"));
      sparseport_index_check c{};
      c.kind = kind;
      c.bound = bound;
      c.op = "test";
      c.arg = "index";
      c.index = {n, v.data(), index_type_of<I>()};
      const sparseport_index_report want = ops::host_report(c);
      c.index.data = dev.data();
      expect_same(call_check(ctx, c), want);
    }
  }
  // An empty array, and one of one entry.
  sparseport_index_check c{};
  c.kind = SPARSEPORT_CHECK_SORTED_INDEX;
  c.bound = 3;
  c.index = {0, nullptr, index_type_of<I>()};
  expect_same(call_check(ctx, c), sparseport_index_report{});
  for (const I x : {I(2), I(3)}) {
    const std::vector<I> one{x};
    const Buffer dev = upload(ctx, one);
    c.index = {1, one.data(), index_type_of<I>()};
    const sparseport_index_report want = ops::host_report(c);
    c.index.data = dev.data();
    expect_same(call_check(ctx, c), want);
  }
}

TEST(KokkosCheckIndices, IndexReportsEqualTheHostCheckInt32) { index_reports_equal_the_host_check<int32_t>(); }
TEST(KokkosCheckIndices, IndexReportsEqualTheHostCheckInt64) { index_reports_equal_the_host_check<int64_t>(); }

}  // namespace
