// SPDX-License-Identifier: Apache-2.0
// Deterministic mode on a GPU (Context::set_deterministic, SPARSEPORT_DETERMINISTIC=1): spmm (every
// reduction), segment_reduce, gather_scatter, scatter_reduce, csr_attention and
// csr_slice_rows_dense must give the same bits in every run, for every knob that changes how the
// work is cut (SPARSEPORT_HUB_T, SPARSEPORT_HUB_CHUNK), and whatever the operands' alignment, and
// still match a double-precision oracle (cuda_test.hpp's, written from the contract like the
// reference plugin's _f64acc variants). The inputs are built to make atomics race: a mega-row or
// mega-segment holding most entries and split over many CTAs and chunks, many rows and segments
// crossing chunk boundaries, an unsorted index with heavy collisions, and values spanning twelve
// orders of magnitude, so that any change in the order of additions changes the bits. The
// scheduler must choose only variants flagged deterministic (one-shot calls and plans), and refuse
// a named variant that is not. Without a GPU every test skips and says why.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>

#include "cuda_test.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/sparseport.hpp"
#include "../common/scoped.hpp"

namespace {

using sparseport_test::ScopedEnv;

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261213;
constexpr Reduce kReduces[] = {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min};
// Runs per check: 5, or SPARSEPORT_TEST_RUNS (at least 2, so that a repeat is still compared).
// tests/cuda/gpu_check.sh sets 2 under compute-sanitizer: a third identical launch reaches no new
// code or address, and each costs the tools seconds on the large inputs.
const int kRuns = [] {
  const char* e = std::getenv("SPARSEPORT_TEST_RUNS");
  const int n = e != nullptr ? std::atoi(e) : 5;
  return n >= 2 ? n : 2;
}();

// Each test decides in a decision cache of its own, and starts with no one-shot plans.
struct Isolated {
  std::string dir;
  std::optional<ScopedEnv> cache, hub_t, hub_chunk;
  Isolated() {
    dir = (std::filesystem::temp_directory_path() /
           ("sparseport-cuda-det-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())))
              .string();
    std::filesystem::create_directories(dir);
    cache.emplace("SPARSEPORT_CACHE_DIR", dir.c_str());
    hub_t.emplace("SPARSEPORT_HUB_T", nullptr);
    hub_chunk.emplace("SPARSEPORT_HUB_CHUNK", nullptr);
    clear_plan_memo();
  }
  ~Isolated() {
    clear_plan_memo();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Context deterministic_context() {
  Context ctx = Context::create("cuda");
  ctx.set_deterministic(true);
  return ctx;
}

bool flagged(const std::string& variant) {
  for (const VariantInfo& v : plugin("cuda").variants)
    if (v.name == variant) return v.is_deterministic;
  ADD_FAILURE() << "the cuda plugin has no variant " << variant;
  return false;
}

// "" (the scheduler's choice) first, then every variant of op flagged deterministic.
std::vector<std::string> deterministic_choices(sparseport_op op) {
  std::vector<std::string> out{""};
  for (const VariantInfo& v : plugin("cuda").variants)
    if (v.op == op && v.is_deterministic) out.push_back(v.name);
  EXPECT_GT(out.size(), 1u) << "no deterministic variant of " << op_name(op);
  return out;
}

std::string shown(const std::string& variant) { return variant.empty() ? "the scheduler's choice" : variant; }

// Multiplies each value by 10^k, k uniform in [-spread, spread] (the signs stay mixed).
template <class V>
void mix_magnitudes(std::vector<V>& v, uint64_t seed, int spread) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> k(-spread, spread);
  for (V& x : v) x = static_cast<V>(static_cast<double>(x) * std::pow(10.0, k(rng)));
}

template <class V>
HostDense<V> mixed_dense(int64_t rows, int64_t cols, int64_t ld, uint64_t seed, int spread = 3) {
  HostDense<V> d = random_dense<V>(rows, cols, ld, seed);
  mix_magnitudes(d.data, seed + 1000, spread);
  return d;
}

// The same values at another leading dimension.
template <class V>
HostDense<V> with_ld(const HostDense<V>& h, int64_t ld) {
  HostDense<V> d(h.rows, h.cols, ld, V(0));
  for (int64_t i = 0; i < h.rows; ++i)
    for (int64_t f = 0; f < h.cols; ++f) d(i, f) = h(i, f);
  return d;
}

// Every element of the two results (rows x cols, any leading dimensions) has the same bits.
template <class V>
::testing::AssertionResult same_bits(const HostDense<V>& got, const HostDense<V>& want) {
  if (got.rows != want.rows || got.cols != want.cols) return ::testing::AssertionFailure() << "shapes differ";
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t f = 0; f < got.cols; ++f) {
      const V g = got(i, f), w = want(i, f);
      if (std::memcmp(&g, &w, sizeof(V)) != 0)
        return ::testing::AssertionFailure()
               << "out[" << i << "," << f << "] is " << std::hexfloat << g << " but was " << w << std::defaultfloat
               << " (" << g << " vs " << w << "): not bitwise reproducible";
    }
  return ::testing::AssertionSuccess();
}

// A skewed CSR with mixed-magnitude values: a mega-row of `mega` of the entries, hubs, empty rows
// (at least min_hubs hubs of 600 entries: cuda_test.hpp's skewed_csr).
template <class I, class V>
HostCsr<I, V> racing_csr(int64_t rows, int64_t cols, int64_t nnz, double mega, uint64_t seed, bool values = true,
                         int64_t min_hubs = 0) {
  HostCsr<I, V> a = skewed_csr<I, V>(rows, cols, nnz, mega, seed, values, 600, min_hubs);
  if (values) mix_magnitudes(a.values, seed + 7, 3);
  return a;
}

// racing_csr at the test scale (as cuda_test.hpp's scaled_skewed_csr: floors, two hubs below full).
template <class I, class V>
HostCsr<I, V> scaled_racing_csr(Size full, Size at_least, double mega, uint64_t seed, bool values = true) {
  return racing_csr<I, V>(scaled(full.rows, at_least.rows), scaled(full.cols, at_least.cols),
                          scaled(full.nnz, at_least.nnz), mega, seed, values, scaled_hubs());
}

// ---- spmm ----------------------------------------------------------------------------------------

bool spmm_applies(const std::string& v, int64_t F, int64_t ldb, int64_t ldc) {
  if (v == "spmm.row_warp_vec4") return F % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0;  // buffers are 256-byte aligned
  if (v == "spmm.vector_rows") return F <= 16;
  return true;
}

struct Scaling {
  double alpha, beta;
};

// Every deterministic choice (or those of `choices` when it is not empty), every reduction: kRuns
// runs (fresh C each time) give the same bits and match the oracle; the scheduler's choice is
// flagged.
template <class I, class V>
void check_spmm(const Context& ctx, const HostCsr<I, V>& a, const std::vector<int64_t>& widths, uint64_t seed,
                const std::vector<Reduce>& reduces = {std::begin(kReduces), std::end(kReduces)},
                const std::vector<std::string>& choices = {}) {
  const auto rows = entries_by_row(a);
  const auto da = to_device(ctx, a);
  for (int64_t F : widths) {
    const HostDense<V> b = mixed_dense<V>(a.cols, F, F, seed + F);
    const HostDense<V> c0 = mixed_dense<V>(a.rows, F, F, seed + F + 1);
    const DevDense<V> db = to_device(ctx, b);
    for (Reduce r : reduces) {
      const Expected base = reduce_rows(a.rows, F, r, rows, [&](int64_t e, int64_t f) {
        return value_of(a, e) * static_cast<double>(b(a.colind[static_cast<size_t>(e)], f));
      });
      for (Scaling s : {Scaling{1.0, 0.0}, Scaling{0.5, -1.5}}) {
        if (s.beta != 0.0 && r != Reduce::sum && r != Reduce::max) continue;
        Expected want = base;
        for (int64_t i = 0; i < a.rows; ++i)
          for (int64_t f = 0; f < F; ++f) {
            const size_t k = static_cast<size_t>(i * F + f);
            const double old = s.beta != 0.0 ? static_cast<double>(c0(i, f)) : 0.0;
            want.value[k] = s.alpha * want.value[k] + s.beta * old;
            want.scale[k] = std::abs(s.alpha) * want.scale[k] + std::abs(s.beta * old);
          }
        for (const std::string& v : choices.empty() ? deterministic_choices(SPARSEPORT_OP_SPMM) : choices) {
          if (!spmm_applies(v, F, F, F)) continue;
          SCOPED_TRACE(shown(v) + ", F " + std::to_string(F) + ", " + name(r) + ", alpha " + std::to_string(s.alpha) +
                       ", beta " + std::to_string(s.beta) + ", seed " + std::to_string(seed));
          std::optional<HostDense<V>> first;
          for (int run = 0; run < kRuns; ++run) {
            const DevDense<V> dc = to_device(ctx, c0);  // a fresh C, at a new address, every run
            spmm(ctx, da.view, db.view(), dc.mut(), {r, s.alpha, s.beta, v});
            if (v.empty()) {
              EXPECT_TRUE(flagged(last_decision().variant)) << last_decision().variant;
            }
            const HostDense<V> got = to_host(ctx, dc);
            if (!first) {
              ASSERT_TRUE(close_to(got, want, F));
              first = got;
            } else {
              ASSERT_TRUE(same_bits(got, *first)) << "run " << run;
            }
          }
        }
      }
    }
  }
}

// A mega-row of 60% of 400k entries (split over several hundred CTAs by spmm.hub_split), hubs of
// 600 entries, rows of 50-210 entries, a fifth of the rows empty. Below 4 M entries the
// deterministic hub_split cuts rows above 64 entries into items of 512 (at most 1024 a row) and
// folds a split row's items in 8 ranges: the mega-row of 240000 takes 469 items. At 0.1 2000 x
// 1500 with 40000 entries: a mega-row of 24000, still 47 items (every range of the fold holds
// several), 9 hubs of 600 (2 items each, so ranges left empty too).
const Size kRacingFull{20000, 15000, 400000}, kRacingFloor{1000, 750, 20000};

TEST(CudaDeterminism, SpmmEveryDeterministicVariantAndReductionFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed), {8, 32, 33}, kSeed);
}

// 146733 entries, a mega-row of 75000 (147 items). At 0.1 the floor, 800 x 600 with 15000: a
// mega-row of 7500, 15 items; 6 hubs of 600.
TEST(CudaDeterminism, SpmmDoubleInt64Pattern) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, scaled_racing_csr<int64_t, double>({8000, 6000, 150000}, {800, 600, 15000}, 0.5, kSeed + 1, false),
             {16, 64}, kSeed + 1);
}

// The small-F variants at widths of one lane tile (F = 1) and a masked one (F = 3), with the
// scheduler's deterministic choice: spmm.merge_path splits the mega-row over hundreds of chunks and
// folds their pieces in a fixed order; spmm.vector_rows gives it one group.
TEST(CudaDeterminism, SpmmSmallWidths) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed + 3), {1, 3}, kSeed + 3,
             {std::begin(kReduces), std::end(kReduces)}, {"spmm.vector_rows", "spmm.merge_path", ""});
}

// spmm.merge_path above F = 16 (lanes across F, spmm_merge_path_wide.cu) at F = 64: float4 lanes
// in two sub-groups of 16 per warp, whose pieces of a row are combined by a scan; the mega-row of
// 240000 entries crosses about 1900 chunks of 128 path items (its tails folded in groups of 32,
// then of 32 x 32, then the 2 or 3 pieces in order), the hubs of 600 entries 5 each, rows of 50-210
// entries 1 or 2. Every reduction, the same bits in every run; then double values and int64
// indices. At 0.1 40000 entries: a mega-row of 24000, about 190 chunks, folded in groups of 32.
TEST(CudaDeterminism, SpmmMergePathWideRowsAcrossManyChunks) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed + 80), {64}, kSeed + 80,
             {std::begin(kReduces), std::end(kReduces)}, {"spmm.merge_path"});
  check_spmm(ctx, scaled_racing_csr<int64_t, double>(kRacingFull, kRacingFloor, 0.6, kSeed + 81, false), {64},
             kSeed + 81, {Reduce::sum, Reduce::max}, {"spmm.merge_path"});
}

// Above 4 M entries hub_split's items and threshold are the large-input ones (2048 and 256). One
// test per reduction, so that sharded runs (tests/cuda/gpu_check.sh) can put them side by side.
// The size is the point (4.5 M entries; the mega-row of 2.25 M takes the 1024 items of the cap, of
// 2198 entries), so it is kept at every scale; below full scale only spmm.hub_split runs, the one
// variant whose kernels change above 4 M entries (the other variants, and the scheduler's choice,
// run on the scaled input of SpmmEveryDeterministicVariantAndReductionFloatInt32): 2 x kRuns calls
// instead of 12 x kRuns.
std::vector<std::string> large_input_choices() { return thinned<std::string>({}, {"spmm.hub_split"}); }

TEST(CudaDeterminism, SpmmLargeInputMegaRowSum) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, racing_csr<int32_t, float>(300000, 200000, 4500000, 0.5, kSeed + 2), {8}, kSeed + 2, {Reduce::sum},
             large_input_choices());
}

TEST(CudaDeterminism, SpmmLargeInputMegaRowMax) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_spmm(ctx, racing_csr<int32_t, float>(300000, 200000, 4500000, 0.5, kSeed + 2), {8}, kSeed + 2, {Reduce::max},
             large_input_choices());
}

// The knobs that cut hub_split's work, and the operands' alignment (vec4 lanes or scalar lanes),
// change nothing in deterministic mode.
template <class I, class V>
void check_hub_split_invariance(const Context& ctx, const HostCsr<I, V>& a, int64_t F, uint64_t seed) {
  const auto da = to_device(ctx, a);
  const HostDense<V> b = mixed_dense<V>(a.cols, F, F, seed);
  const DevDense<V> db = to_device(ctx, b), db_odd = to_device(ctx, with_ld(b, F + 1));
  const HostDense<V> c0(a.rows, F, F, V(0));
  for (Reduce r : kReduces) {
    SCOPED_TRACE(std::string(name(r)) + ", F " + std::to_string(F));
    const SpmmOptions opt{r, 1.0, 0.0, "spmm.hub_split"};
    DevDense<V> dc = to_device(ctx, c0);
    spmm(ctx, da.view, db.view(), dc.mut(), opt);
    const HostDense<V> base = to_host(ctx, dc);
    // Below full scale the extremes only: every row a hub or none, the shortest items or whole
    // rows.
    for (const char* t : thinned<const char*>({"1", "16", "64", "300", "5000", "1000000000"}, {"1", "1000000000"}))
      for (const char* chunk : thinned<const char*>({nullptr, "8", "64", "100000"}, {nullptr, "8", "100000"})) {
        ScopedEnv e1("SPARSEPORT_HUB_T", t), e2("SPARSEPORT_HUB_CHUNK", chunk);
        SCOPED_TRACE(std::string("SPARSEPORT_HUB_T=") + t + " SPARSEPORT_HUB_CHUNK=" + (chunk ? chunk : "(unset)"));
        dc = to_device(ctx, c0);
        spmm(ctx, da.view, db.view(), dc.mut(), opt);
        ASSERT_TRUE(same_bits(to_host(ctx, dc), base));
      }
    // B and C at ld F + 1: no 16-byte rows, so the scalar-lane path.
    const DevDense<V> dc_odd = to_device(ctx, with_ld(c0, F + 1));
    spmm(ctx, da.view, db_odd.view(), dc_odd.mut(), opt);
    ASSERT_TRUE(same_bits(to_host(ctx, dc_odd), base)) << "B and C with ld F + 1";
  }
}

// Inputs of 400000 (a mega-row of 240000: 469 items) and 94944 entries (48000: 94 items). At 0.1
// 40000 (24000: 47 items) and the floor, 500 x 400 with 10099 (4800: 10 items), 10 and 4 hubs of
// 600; the knobs' loops thinned to their extremes (6 settings instead of 24).
TEST(CudaDeterminism, HubSplitIgnoresItsKnobsAndTheAlignment) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_hub_split_invariance(ctx, scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed + 3), 32,
                             kSeed + 3);
  check_hub_split_invariance(
      ctx, scaled_racing_csr<int64_t, double>({5000, 4000, 120000}, {500, 400, 12000}, 0.4, kSeed + 4), 12, kSeed + 4);
}

// Two contexts (as two runs of a program), one made deterministic by SPARSEPORT_DETERMINISTIC=1
// when it was created: the same variant, the same bits; a plan too. Sizes as
// SpmmEveryDeterministicVariantAndReductionFloatInt32's (at 0.1 40000 entries, 47 items).
TEST(CudaDeterminism, EnvironmentContextAndPlansGiveTheSameBits) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const auto a = scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed + 5);
  const int64_t F = 32;
  const HostDense<float> b = mixed_dense<float>(a.cols, F, F, kSeed + 6);
  std::vector<HostDense<float>> results;
  std::vector<std::string> ran;
  for (int which = 0; which < 2; ++which) {
    std::optional<Context> ctx;
    if (which == 0) {
      ctx.emplace(deterministic_context());
    } else {
      ScopedEnv env("SPARSEPORT_DETERMINISTIC", "1");
      ctx.emplace(Context::create("cuda"));
      EXPECT_TRUE(ctx->deterministic()) << "SPARSEPORT_DETERMINISTIC=1 at creation";
    }
    const auto da = to_device(*ctx, a);
    const DevDense<float> db = to_device(*ctx, b);
    const DevDense<float> dc = to_device(*ctx, HostDense<float>(a.rows, F, F, 0.0f));
    spmm(*ctx, da.view, db.view(), dc.mut());
    ran.push_back(last_decision().variant);
    EXPECT_TRUE(flagged(ran.back())) << ran.back();
    results.push_back(to_host(*ctx, dc));
    SpmmPlan plan(*ctx, da.view, F);
    for (int run = 0; run < kRuns; ++run) {
      const DevDense<float> pc = to_device(*ctx, HostDense<float>(a.rows, F, F, 0.0f));
      plan.run(db.view(), pc.mut());
      EXPECT_TRUE(flagged(plan.decision().variant)) << plan.decision().variant;
      EXPECT_EQ(plan.decision().variant, ran.back());
      ASSERT_TRUE(same_bits(to_host(*ctx, pc), results.back())) << "plan run " << run;
    }
  }
  EXPECT_EQ(ran[0], ran[1]);
  EXPECT_TRUE(same_bits(results[1], results[0]));
}

TEST(CudaDeterminism, NamedVariantsThatAreNotDeterministicAreRefused) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  const auto a = racing_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed + 8);
  const auto da = to_device(ctx, a);
  const DevDense<float> db = to_device(ctx, random_dense<float>(a.cols, 16, 16, kSeed + 9));
  const DevDense<float> dc = to_device(ctx, HostDense<float>(a.rows, 16, 16, 0.0f));
  for (const char* v : {"spmm.nnz_balanced", "spmm.cusparse"}) {
    try {
      spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, v});
      ADD_FAILURE() << v << " ran in deterministic mode";
    } catch (const InvalidArgument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(v), std::string::npos) << msg;
      EXPECT_NE(msg.find("not deterministic"), std::string::npos) << msg;
      EXPECT_NE(msg.find("deterministic mode"), std::string::npos) << msg;
    }
  }
  std::vector<int32_t> idx(static_cast<size_t>(a.nnz()), 0);
  const Buffer d_idx = upload(ctx, idx);
  const DevDense<float> src = to_device(ctx, random_dense<float>(a.nnz(), 16, 16, kSeed + 10));
  const DevDense<float> out = to_device(ctx, HostDense<float>(1, 16, 16, 0.0f));
  const IndexView index = make_index(a.nnz(), static_cast<const int32_t*>(d_idx.data()));
  EXPECT_THROW(segment_reduce(ctx, index, src.view(), out.mut(), {Reduce::sum, "segment_reduce.atomic"}),
               InvalidArgument);
  EXPECT_THROW(scatter_reduce(ctx, index, src.view(), out.mut(), {Reduce::sum, "scatter_reduce.atomic"}),
               InvalidArgument);
  EXPECT_NO_THROW(scatter_reduce(ctx, index, src.view(), out.mut(), {Reduce::sum, "scatter_reduce.sort_segment"}));
}

// ---- segment reductions ----------------------------------------------------------------------------

// Runs `call(choice, out)` kRuns times per deterministic choice of op (the scheduler's alone when
// scheduler_only): the same bits every time, at ld F and at ld F + 1 (other lane shapes), and the
// oracle's values.
template <class V, class Call>
void check_reduction(const Context& ctx, sparseport_op op, int64_t n_out, int64_t F, const Expected& want,
                     const Call& call, const std::string& what, bool scheduler_only = false) {
  for (const std::string& v : scheduler_only ? std::vector<std::string>{""} : deterministic_choices(op)) {
    SCOPED_TRACE(what + ", " + shown(v) + ", F " + std::to_string(F));
    std::optional<HostDense<V>> first;
    for (int64_t ld : {F, F + 1}) {
      for (int run = 0; run < kRuns; ++run) {
        const DevDense<V> out = to_device(ctx, HostDense<V>(n_out, F, ld, std::numeric_limits<V>::quiet_NaN()));
        call(v, ld, out);
        if (v.empty()) {
          EXPECT_TRUE(flagged(last_decision().variant)) << last_decision().variant;
        }
        const HostDense<V> got = to_host(ctx, out);
        if (!first) {
          ASSERT_TRUE(close_to(got, want, F));
          first = got;
        } else {
          ASSERT_TRUE(same_bits(got, *first)) << "ld " << ld << ", run " << run;
        }
      }
    }
  }
}

// Sorted destinations: the rows of a skewed CSR (a mega-segment over thousands of chunks, segments
// of 50-600 messages crossing chunk boundaries, empty ones). gather_scatter on the same edges.
// Every reduction, or those of `reduces`; every deterministic choice, or the scheduler's alone.
template <class I, class V>
void check_segments(const Context& ctx, int64_t E, int64_t F, uint64_t seed, bool weighted,
                    const std::vector<Reduce>& reduces = {std::begin(kReduces), std::end(kReduces)},
                    bool scheduler_only = false) {
  const auto a = racing_csr<I, V>(E / 20, E / 25, E, 0.55, seed, weighted, scaled_hubs());
  const auto rows = entries_by_row(a);
  std::vector<I> idx;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      idx.push_back(static_cast<I>(i));
  const int64_t n = static_cast<int64_t>(idx.size());
  const Buffer d_idx = upload(ctx, idx), d_col = upload(ctx, a.colind);
  Buffer d_w;
  if (weighted) d_w = upload(ctx, a.values);
  const HostDense<V> src = mixed_dense<V>(n, F, F, seed + 1);
  const HostDense<V> x = mixed_dense<V>(a.cols, F, F, seed + 2);
  const DevDense<V> d_src = to_device(ctx, src), d_src_odd = to_device(ctx, with_ld(src, F + 1));
  const DevDense<V> d_x = to_device(ctx, x), d_x_odd = to_device(ctx, with_ld(x, F + 1));
  const IndexView index = make_index(n, static_cast<const I*>(d_idx.data()));
  const CooView edges =
      make_coo<I, V>(a.rows, a.cols, n, static_cast<const I*>(d_idx.data()), static_cast<const I*>(d_col.data()),
                     weighted ? static_cast<const V*>(d_w.data()) : nullptr);
  for (Reduce r : reduces) {
    const Expected seg =
        reduce_rows(a.rows, F, r, rows, [&](int64_t e, int64_t f) { return static_cast<double>(src(e, f)); });
    check_reduction<V>(
        ctx, SPARSEPORT_OP_SEGMENT_REDUCE, a.rows, F, seg,
        [&](const std::string& v, int64_t ld, const DevDense<V>& out) {
          segment_reduce(ctx, index, (ld == F ? d_src : d_src_odd).view(), out.mut(), {r, v});
        },
        std::string("segment_reduce ") + name(r), scheduler_only);
    const Expected gas = reduce_rows(a.rows, F, r, rows, [&](int64_t e, int64_t f) {
      return value_of(a, e) * static_cast<double>(x(a.colind[static_cast<size_t>(e)], f));
    });
    check_reduction<V>(
        ctx, SPARSEPORT_OP_GATHER_SCATTER, a.rows, F, gas,
        [&](const std::string& v, int64_t ld, const DevDense<V>& out) {
          gather_scatter(ctx, edges, (ld == F ? d_x : d_x_odd).view(), out.mut(), {r, v});
        },
        std::string("gather_scatter ") + name(r), scheduler_only);
  }
}

// E = 400000 (a mega-segment of 220000): the deterministic chunks have their minimum length, 128
// (E below 32768 x 128), so 3125 of them and three fix-up passes; the mega-segment spans about
// 1719. At 0.1 E = 40000: 313 chunks, two fix-up passes (the third level stays covered by
// SegmentLargeInputThreeFixupLevels), a mega-segment of 22000 over about 172 chunks, 10 hubs of
// 600.
TEST(CudaDeterminism, SegmentAndGatherScatterFloatInt32) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  for (int64_t F : {1, 5, 32}) check_segments<int32_t, float>(ctx, scaled(400000, 20000), F, kSeed + 20 + F, true);
}

// E = 150000: 1172 chunks, three passes. At 0.1 the floor, 15000: 118 chunks, two passes, a
// mega-segment of 8250 over about 65 chunks, 5 hubs of 600.
TEST(CudaDeterminism, SegmentAndGatherScatterDoubleInt64) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_segments<int64_t, double>(ctx, scaled(150000, 15000), 16, kSeed + 30, false);
}

// E = 5 M: chunks of 153 messages, 32 k of them, three fix-up levels. The size is the point (a
// chunk longer than the minimum needs E above 4.19 M at this F), so it is kept at every scale;
// below full scale the loops are thinned instead: mean (the sum kernels plus the run lengths) and
// max (the compare kernels; min is its mirror), the scheduler's choice only (the one deterministic
// variant of each op, so the same kernels): 16 calls instead of 64 (at kRuns = 2).
TEST(CudaDeterminism, SegmentLargeInputThreeFixupLevels) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  const std::vector<Reduce> all(std::begin(kReduces), std::end(kReduces));
  check_segments<int32_t, float>(ctx, 5000000, 4, kSeed + 35, true, thinned<Reduce>(all, {Reduce::mean, Reduce::max}),
                                 !full_scale());
}

// An unsorted index with heavy collisions: half the messages to one row, the rest over 3000 rows,
// the last 1000 rows of the output empty.
template <class I, class V>
void check_scatter(const Context& ctx, int64_t E, int64_t F, uint64_t seed) {
  const int64_t N = 4000;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, 2999);
  std::vector<I> idx(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) idx[static_cast<size_t>(e)] = static_cast<I>(e % 2 == 0 ? 1234 : pick(rng));
  std::shuffle(idx.begin(), idx.end(), rng);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(N));
  for (int64_t e = 0; e < E; ++e) rows[static_cast<size_t>(idx[static_cast<size_t>(e)])].push_back(e);
  const Buffer d_idx = upload(ctx, idx);
  const HostDense<V> src = mixed_dense<V>(E, F, F, seed + 1);
  const DevDense<V> d_src = to_device(ctx, src), d_src_odd = to_device(ctx, with_ld(src, F + 1));
  const IndexView index = make_index(E, static_cast<const I*>(d_idx.data()));
  for (Reduce r : kReduces) {
    const Expected want =
        reduce_rows(N, F, r, rows, [&](int64_t e, int64_t f) { return static_cast<double>(src(e, f)); });
    check_reduction<V>(
        ctx, SPARSEPORT_OP_SCATTER_REDUCE, N, F, want,
        [&](const std::string& v, int64_t ld, const DevDense<V>& out) {
          scatter_reduce(ctx, index, (ld == F ? d_src : d_src_odd).view(), out.mut(), {r, v});
        },
        std::string("scatter_reduce ") + name(r));
  }
}

// E = 300000 (150000 messages to one row: 1172 deterministic chunks of 128, 50 to each other
// row) and 100000. At 0.1 the floors, 30000 and 10000: 15000 and 5000 messages to one row (118
// and 40 chunks, two fix-up passes), 5 and 1.7 to each other row on average.
TEST(CudaDeterminism, ScatterReduceHeavyCollisions) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  check_scatter<int32_t, float>(ctx, scaled(300000, 30000), 8, kSeed + 40);
  check_scatter<int32_t, float>(ctx, scaled(300000, 30000), 32, kSeed + 41);
  check_scatter<int64_t, double>(ctx, scaled(100000, 10000), 3, kSeed + 42);
}

// ---- attention -------------------------------------------------------------------------------------

template <class I, class V>
void check_attention(const Context& ctx, const HostCsr<I, V>& a, int64_t F, int64_t Fv, uint64_t seed) {
  const auto da = to_device(ctx, a);
  const HostDense<V> q = random_dense<V>(a.rows, F, F, seed + 1), k = random_dense<V>(a.cols, F, F, seed + 2),
                     vv = random_dense<V>(a.cols, Fv, Fv, seed + 3);
  const DevDense<V> dq = to_device(ctx, q), dk = to_device(ctx, k), dv = to_device(ctx, vv);
  const double sc = 1.0 / std::sqrt(static_cast<double>(F));
  HostDense<double> want(a.rows, Fv);
  for (int64_t i = 0; i < a.rows; ++i) {
    const I e0 = a.rowptr[static_cast<size_t>(i)], e1 = a.rowptr[static_cast<size_t>(i) + 1];
    std::vector<double> s;
    for (I e = e0; e < e1; ++e) {
      double d = 0;
      for (int64_t f = 0; f < F; ++f) d += double(q(i, f)) * double(k(a.colind[static_cast<size_t>(e)], f));
      s.push_back(sc * d);
    }
    if (s.empty()) continue;
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (I e = e0; e < e1; ++e)
      for (int64_t f = 0; f < Fv; ++f)
        want(i, f) += s[static_cast<size_t>(e - e0)] / sum * double(vv(a.colind[static_cast<size_t>(e)], f));
  }
  const double tol = std::is_same_v<V, float> ? 3e-5 : 1e-12;
  for (const std::string& v : deterministic_choices(SPARSEPORT_OP_CSR_ATTENTION)) {
    SCOPED_TRACE(shown(v) + ", F " + std::to_string(F) + ", Fv " + std::to_string(Fv) + ", seed " +
                 std::to_string(seed));
    std::optional<HostDense<V>> first;
    // The knob of the long-row split changes nothing in deterministic mode (below full scale: unset
    // and its extremes).
    for (const char* t : thinned<const char*>({nullptr, "16", "1000", "100000000"}, {nullptr, "16", "100000000"})) {
      ScopedEnv hub_t("SPARSEPORT_HUB_T", t);
      for (int run = 0; run < kRuns; ++run) {
        const DevDense<V> out = to_device(ctx, HostDense<V>(a.rows, Fv, Fv, std::numeric_limits<V>::quiet_NaN()));
        csr_attention(ctx, da.view, dq.view(), dk.view(), dv.view(), out.mut(), {0.0, v});
        if (v.empty()) {
          EXPECT_TRUE(flagged(last_decision().variant)) << last_decision().variant;
        }
        const HostDense<V> got = to_host(ctx, out);
        if (!first) {
          for (int64_t i = 0; i < a.rows; ++i)
            for (int64_t f = 0; f < Fv; ++f)
              ASSERT_LE(std::abs(double(got(i, f)) - want(i, f)), tol)
                  << "out[" << i << "," << f << "] = " << got(i, f) << " but the oracle gives " << want(i, f);
          first = got;
        } else {
          ASSERT_TRUE(same_bits(got, *first)) << "SPARSEPORT_HUB_T=" << (t ? t : "(unset)") << ", run " << run;
        }
      }
    }
  }
}

// A mega-row of 6 000 entries (split into items by the fused kernel, a whole CTA in the unfused
// softmax), hubs, empty rows. Deterministic mode cuts rows above 64 entries (below 4 M entries)
// into items of 256: the mega-row takes 24. At 0.1 the floors, 1200 x 1000 with 8000 and 800 x 600
// with 6000: mega-rows of 2400 and 1800, still 10 and 8 items and above kLongRow (1024 entries),
// so still a whole CTA in the unfused softmax; 3-6 hubs of 600.
TEST(CudaDeterminism, AttentionFusedAndUnfused) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  const Size full{3000, 2500, 20000}, at_least{1200, 1000, 8000};
  check_attention(ctx, scaled_skewed_csr<int32_t, float>(full, at_least, 0.3, kSeed + 50), 32, 64, kSeed + 50);
  check_attention(ctx, scaled_skewed_csr<int32_t, float>(full, at_least, 0.3, kSeed + 51), 33, 20, kSeed + 51);
  check_attention(ctx, scaled_skewed_csr<int64_t, double>({2000, 1500, 15000}, {800, 600, 6000}, 0.3, kSeed + 52), 16,
                  16, kSeed + 52);
}

// ---- csr_slice_rows_dense (repeated columns add up) --------------------------------------------

TEST(CudaDeterminism, SliceRowsDenseRepeatedColumns) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = deterministic_context();
  // 40 columns for rows of up to 600 entries: every column repeats many times in a row.
  auto a = racing_csr<int32_t, float>(2000, 40, 60000, 0.2, kSeed + 60);
  const auto da = to_device(ctx, a);
  std::vector<int32_t> rows;
  std::mt19937_64 rng(kSeed + 61);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(a.rows - 1));
  for (int t = 0; t < 300; ++t) rows.push_back(pick(rng));
  rows.push_back(static_cast<int32_t>(a.rows / 3));  // the mega-row
  const Buffer d_rows = upload(ctx, rows);
  const IndexView rv = make_index(static_cast<int64_t>(rows.size()), static_cast<const int32_t*>(d_rows.data()));
  EXPECT_TRUE(flagged("csr_slice_rows_dense.device"));
  std::optional<HostDense<float>> first;
  for (int run = 0; run < kRuns; ++run) {
    const DevDense<float> out = to_device(ctx, HostDense<float>(static_cast<int64_t>(rows.size()), a.cols, a.cols + 3,
                                                                std::numeric_limits<float>::quiet_NaN()));
    csr_slice_rows_dense(ctx, da.view, rv, out.mut());
    const HostDense<float> got = to_host(ctx, out);
    if (!first) {
      for (size_t t = 0; t < rows.size(); ++t) {
        std::vector<double> want(static_cast<size_t>(a.cols), 0.0), mag(static_cast<size_t>(a.cols), 0.0);
        for (int32_t e = a.rowptr[static_cast<size_t>(rows[t])]; e < a.rowptr[static_cast<size_t>(rows[t]) + 1]; ++e) {
          want[static_cast<size_t>(a.colind[static_cast<size_t>(e)])] += a.values[static_cast<size_t>(e)];
          mag[static_cast<size_t>(a.colind[static_cast<size_t>(e)])] += std::abs(a.values[static_cast<size_t>(e)]);
        }
        for (int64_t j = 0; j < a.cols; ++j)
          ASSERT_NEAR(got(static_cast<int64_t>(t), j), want[static_cast<size_t>(j)],
                      1e-4 * (mag[static_cast<size_t>(j)] + 1e-30))
              << "out[" << t << "," << j << "]";
      }
      first = got;
    } else {
      ASSERT_TRUE(same_bits(got, *first)) << "run " << run;
    }
  }
}

// ---- for the record: is cuSPARSE's SpMM bitwise reproducible here? ----------------------------------

// spmm.cusparse is not flagged deterministic (it times CSR ALG2 against ALG3 once per plan and keeps
// the faster, so which algorithm runs is itself a timing). This prints whether each algorithm it
// chose repeated its bits over kRuns runs, on the racing input, in default mode; no assertion.
// Sizes as SpmmEveryDeterministicVariantAndReductionFloatInt32's (at 0.1 40000 entries).
TEST(CudaDeterminism, ReportsWhetherCusparseRepeatsItsBits) {
  CUDA_TEST_REQUIRE_GPU();
  Isolated iso;
  const Context ctx = Context::create("cuda");
  const auto a = scaled_racing_csr<int32_t, float>(kRacingFull, kRacingFloor, 0.6, kSeed + 70);
  // The same rows with columns sorted and repeats dropped: ALG3 is tried only on canonical CSR.
  HostCsr<int32_t, float> canonical;
  canonical.rows = a.rows;
  canonical.cols = a.cols;  // rowptr starts as {0}
  for (int64_t i = 0; i < a.rows; ++i) {
    std::map<int32_t, float> row;
    for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      row.emplace(a.colind[static_cast<size_t>(e)], a.values[static_cast<size_t>(e)]);
    for (const auto& [c, v] : row) {
      canonical.colind.push_back(c);
      canonical.values.push_back(v);
    }
    canonical.rowptr.push_back(static_cast<int32_t>(canonical.colind.size()));
  }
  const std::vector<const HostCsr<int32_t, float>*> matrices{&a, &canonical};
  for (const HostCsr<int32_t, float>* m : matrices) {
    const auto da = to_device(ctx, *m);
    const int64_t F = 32;
    const DevDense<float> db = to_device(ctx, mixed_dense<float>(m->cols, F, F, kSeed + 71));
    std::optional<HostDense<float>> first;
    bool same = true;
    for (int run = 0; run < kRuns; ++run) {
      const DevDense<float> dc = to_device(ctx, HostDense<float>(m->rows, F, F, 0.0f));
      spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.cusparse"});
      const HostDense<float> got = to_host(ctx, dc);
      if (!first)
        first = got;
      else
        same = same && static_cast<bool>(same_bits(got, *first));
    }
    sparseport_cuda_diagnostics d{};
    (void)sparseport_cuda_get_diagnostics(ctx.exec().state, &d);
    std::printf("spmm.cusparse (%s columns): %s over %d runs; plan: %s\n", m == &a ? "repeated, unsorted" : "sorted",
                same ? "bitwise identical" : "NOT bitwise identical", kRuns, d.note);
  }
}

}  // namespace
