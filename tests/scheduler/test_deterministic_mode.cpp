// SPDX-License-Identifier: Apache-2.0
// Deterministic mode (Context::set_deterministic, SPARSEPORT_DETERMINISTIC=1) on the CPU: the
// variant flags of every plugin, the scheduler choosing only flagged variants (one-shot calls and
// plans, the fake plugin of test_scheduler.cpp's kind where the fastest variant is not flagged),
// a requested unflagged variant refused with InvalidArgument, an op without a deterministic variant
// refused with Unsupported, decisions and one-shot plans kept apart from default mode's, and the
// openmp plugin's results bitwise the same for any thread count and run.
//
// TF32 consent (Context::set_allow_tf32, SpmmOptions::allow_tf32, SPARSEPORT_ALLOW_TF32=1) is
// plumbed as deterministic mode is (an exec flag the scheduler reads), so it is tested here too, on
// a fake plugin with a variant flagged SPARSEPORT_VARIANT_TF32: never a candidate, the static choice,
// a replayed decision or the vendor without consent, refused by name with the remedy, a candidate
// with consent (the context's or the call's), and decisions and one-shot plans kept apart by it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../common/row_oracle.hpp"
#include "scheduler/cache.hpp"
#include "scheduler/select.hpp"
#include "sparseport/sparseport.hpp"
#include "src/ops/common.hpp"
#include "../common/scoped.hpp"

namespace {

using sparseport_test::TempDir;
using sparseport_test::ScopedEnv;

using namespace sparseport;
using namespace sparseport::scheduler;

bool flagged(const PluginInfo& p, const std::string& variant) {
  for (const VariantInfo& v : p.variants)
    if (v.name == variant) return v.is_deterministic;
  ADD_FAILURE() << p.name << " has no variant " << variant;
  return false;
}

constexpr sparseport_op kNumericOps[] = {SPARSEPORT_OP_SPMM,           SPARSEPORT_OP_SDDMM,
                                         SPARSEPORT_OP_SEGMENT_REDUCE, SPARSEPORT_OP_SCATTER_REDUCE,
                                         SPARSEPORT_OP_GATHER_SCATTER, SPARSEPORT_OP_CSR_ATTENTION};

// ---- flags ---------------------------------------------------------------------------------------

TEST(DeterministicFlags, ReferenceIsSerialSoEveryVariantIsFlagged) {
  for (const VariantInfo& v : plugin("reference").variants) EXPECT_TRUE(v.is_deterministic) << v.name;
}

TEST(DeterministicFlags, OpenMPFlagsOnlyWhatIsTheSameForAnyThreadCount) {
  const PluginInfo& p = plugin("openmp");
  if (p.table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in (" << p.reason << ")";
  for (const char* v : {"spmm.rows", "sddmm.rows", "segment_reduce.sorted_deterministic",
                        "scatter_reduce.sort_then_segment", "gather_scatter.sorted_deterministic",
                        "csr_attention.unfused", "csr_attention.onepass", "csr_transpose.parallel"})
    EXPECT_TRUE(flagged(p, v)) << v;
  // merge_path cuts rows where the thread count says; the others use atomics.
  for (const char* v : {"spmm.merge_path", "segment_reduce.sorted_add", "segment_reduce.scatter_atomic",
                        "scatter_reduce.atomic", "gather_scatter.sorted_add", "gather_scatter.scatter_atomic"})
    EXPECT_FALSE(flagged(p, v)) << v;
  for (const VariantInfo& v : p.variants) {
    if (v.is_vendor) {
      EXPECT_FALSE(v.is_deterministic) << v.name << " (GraphBLAS threads as it likes)";
    }
  }
}

// The CUDA plugin's table is listed even on a machine without a GPU, so its flags are checked here.
TEST(DeterministicFlags, CudaFlagsRowKernelsAndTheFixedOrderPathsNotTheAtomicOnes) {
  const PluginInfo& p = plugin("cuda");
  if (p.table == nullptr) GTEST_SKIP() << "skipped: the cuda plugin is not compiled in (" << p.reason << ")";
  for (const char* v : {"spmm.row_warp_vec4", "spmm.row_warp", "spmm.hub_split", "spmm.vector_rows", "spmm.merge_path",
                        "segment_reduce.nnz_balanced_deterministic", "gather_scatter.nnz_balanced_deterministic",
                        "scatter_reduce.sort_segment", "csr_attention.fused", "csr_attention.unfused",
                        "csr_slice_rows_dense.device", "csr_transpose.device"})
    EXPECT_TRUE(flagged(p, v)) << v;
  for (const char* v : {"spmm.nnz_balanced", "spmm.cusparse", "spmm.cusparse_spmv", "sddmm.cusparse",
                        "segment_reduce.nnz_balanced", "segment_reduce.atomic", "scatter_reduce.atomic",
                        "gather_scatter.nnz_balanced", "gather_scatter.atomic"})
    EXPECT_FALSE(flagged(p, v)) << v;
}

TEST(DeterministicFlags, EveryPluginHasADeterministicVariantOfEveryOp) {
  for (const PluginInfo& p : plugins()) {
    if (p.table == nullptr) continue;
    for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op) {
      // Known gap: the kokkos plugin's only scatter_reduce is atomic.
      if (p.name == "kokkos" && op == SPARSEPORT_OP_SCATTER_REDUCE) continue;
      if (p.variants_of(static_cast<sparseport_op>(op)).empty()) continue;
      bool any = false;
      for (const VariantInfo& v : p.variants) any = any || (v.op == op && v.is_deterministic);
      EXPECT_TRUE(any) << p.name << " has no deterministic variant of " << op_name(static_cast<sparseport_op>(op));
    }
  }
}

// ---- the context ---------------------------------------------------------------------------------

TEST(DeterministicContext, EnvironmentAndSetterSetTheExecFlag) {
  {
    ScopedEnv env("SPARSEPORT_DETERMINISTIC", nullptr);
    Context ctx = Context::create("reference");
    EXPECT_FALSE(ctx.deterministic());
    EXPECT_EQ(ctx.exec().flags & SPARSEPORT_EXEC_DETERMINISTIC, 0);
    ctx.set_deterministic(true);
    EXPECT_NE(ctx.exec().flags & SPARSEPORT_EXEC_DETERMINISTIC, 0);
  }
  {
    ScopedEnv env("SPARSEPORT_DETERMINISTIC", "1");
    Context ctx = Context::create("reference");
    EXPECT_TRUE(ctx.deterministic());
    EXPECT_NE(ctx.exec().flags & SPARSEPORT_EXEC_DETERMINISTIC, 0);
    ctx.set_deterministic(false);
    EXPECT_EQ(ctx.exec().flags & SPARSEPORT_EXEC_DETERMINISTIC, 0);
  }
  {
    ScopedEnv env("SPARSEPORT_DETERMINISTIC", "yes");
    EXPECT_THROW((void)Context::create("reference"), InvalidArgument);
  }
}

// ---- the scheduler on a fake plugin ----------------------------------------------------------------
//
// "fake" copies the reference plugin's table. spmm.fast is fast but not flagged; spmm.det_a and
// spmm.det_b are flagged and slow; the vendor is neither. sddmm has only an unflagged variant.

int g_spmm_calls = 0;

void spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

int fake_spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a, sparseport_status* st) {
  ++g_spmm_calls;
  const std::string v = variant;
  spin(v == "spmm.fast" ? 0.00005 : 0.002);
  return plugin("reference").table->spmm(x, "spmm.serial", a, st);
}

constexpr uint32_t kDet = SPARSEPORT_VARIANT_DETERMINISTIC;
const sparseport_variant kFakeVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.vendor", SPARSEPORT_VARIANT_VENDOR | SPARSEPORT_VARIANT_DEFAULT, "vendor, not flagged"},
    {SPARSEPORT_OP_SPMM, "spmm.fast", 0, "fast, not flagged"},
    {SPARSEPORT_OP_SPMM, "spmm.det_a", kDet, "flagged"},
    {SPARSEPORT_OP_SPMM, "spmm.det_b", kDet, "flagged"},
    {SPARSEPORT_OP_SDDMM, "sddmm.fast", SPARSEPORT_VARIANT_DEFAULT, "the only sddmm, not flagged"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", SPARSEPORT_VARIANT_DEFAULT | kDet, "slice"},
};

// A plugin made of the reference's table with other variants, spmm slot and device signature, its
// PluginInfo filled as the registry fills it (core/registry.cpp), the flags included.
template <size_t N>
PluginInfo fake_from_reference(sparseport_plugin& table, const char* name, const sparseport_variant (&variants)[N],
                               sparseport_spmm_fn spmm, decltype(sparseport_plugin::device_signature) signature) {
  table = *plugin("reference").table;
  table.name = name;
  table.variants = variants;
  table.n_variants = static_cast<int32_t>(N);
  table.spmm = spmm;
  table.device_signature = signature;
  PluginInfo p;
  p.name = name;
  p.status = PluginStatus::available;
  p.table = &table;
  for (const sparseport_variant& v : variants) {
    VariantInfo info{static_cast<sparseport_op>(v.op), v.name, (v.flags & SPARSEPORT_VARIANT_DEFAULT) != 0,
                     (v.flags & SPARSEPORT_VARIANT_VENDOR) != 0, v.doc};
    info.is_deterministic = (v.flags & kDet) != 0;
    info.tf32 = (v.flags & SPARSEPORT_VARIANT_TF32) != 0;
    p.variants.push_back(info);
  }
  return p;
}

PluginInfo fake_plugin() {
  static sparseport_plugin table;
  static const PluginInfo p = fake_from_reference(
      table, "fake", kFakeVariants, &fake_spmm, [](void*, char* buf, size_t len, sparseport_status*) {
        std::snprintf(buf, len,
                      "kind=cpu\nmodel=fake-det\nthreads=1\nhardware_threads=4\nl3_bytes=1000000\nfake_version=1\n");
        return 0;
      });
  return p;
}

struct Problem {
  HostCsr<int32_t, float> a;
  HostDense<float> b, c;
  sparseport_spmm_args args() {
    return {
        {a.rows, a.cols, a.nnz(), a.rowptr.data(), a.colind.data(), a.values.data(), SPARSEPORT_I32, SPARSEPORT_F32},
        {b.rows, b.cols, b.ld, b.data.data(), SPARSEPORT_F32},
        {c.rows, c.cols, c.ld, c.data.data(), SPARSEPORT_F32},
        SPARSEPORT_REDUCE_SUM,
        1.0,
        0.0,
            nullptr,
            0};
  }
};

Problem make_problem(int64_t rows) {
  Problem p;
  p.a = generate<int32_t, float>("er:" + std::to_string(rows) + ":0.002");
  p.b = HostDense<float>(p.a.cols, 8);
  for (size_t i = 0; i < p.b.data.size(); ++i) p.b.data[i] = static_cast<float>(i % 7) - 3.0f;
  p.c = HostDense<float>(p.a.rows, 8);
  return p;
}

SchedulerOptions options(const TempDir& dir, SchedulerMode mode) {
  SchedulerOptions o;
  o.mode = mode;
  o.cache_dir = dir.path;
  o.probe_repeats = 3;
  o.min_probe_rows = 64;
  o.probe_frac = 0.05;
  return o;
}

constexpr sparseport_exec kDefaultExec{nullptr, 1, 0};
constexpr sparseport_exec kDetExec{nullptr, 1, SPARSEPORT_EXEC_DETERMINISTIC};

TEST(DeterministicScheduler, OnlyFlaggedVariantsAreCandidatesAndTheKeysDiffer) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();

  // Default mode decides by timing (which variant wins is not asserted: timings on a loaded
  // machine decide it); what matters below is that its decision is cached under its own key.
  auto plain = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plain, &args, "test");
  ASSERT_FALSE(plain->decision.variant.empty()) << plain->decision.reason;

  // Deterministic mode: the same problem, the same cache folder: not a hit (another key), and the
  // choice is a flagged variant, taken from the estimate without timing anything.
  g_spmm_calls = 0;
  auto det = prepare(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_FALSE(det->decided) << det->decision.source;
  EXPECT_NE(det->key, plain->key);
  EXPECT_EQ(det->key, plain->key + "/deterministic");
  execute(det, &args, "test");
  EXPECT_TRUE(det->decision.variant == "spmm.det_a" || det->decision.variant == "spmm.det_b") << det->decision.variant;
  EXPECT_TRUE(flagged(fake, det->decision.variant));
  // Ranked without timing: by the learned model (the nearest one ships for this fake device) or
  // the estimate.
  EXPECT_TRUE(det->decision.source == "model" || det->decision.source == "estimate") << det->decision.source;
  EXPECT_EQ(det->decision.timing, "none");
  EXPECT_NE(det->decision.reason.find("deterministic"), std::string::npos) << det->decision.reason;
  EXPECT_EQ(det->decision.vendor, "spmm.det_a") << "the guardrail's reference is flagged too";
  EXPECT_EQ(g_spmm_calls, 1) << "deterministic mode ran the op once: no probe, no full-size check";

  // Both decisions are in the cache, under different keys; the deterministic one says so.
  std::map<std::string, std::string> by_key;
  for (Record& r : CacheFile(dir.path).read()) by_key[r["key"]] = r["variant"];
  ASSERT_EQ(by_key.count(plain->key), 1u);
  ASSERT_EQ(by_key.count(det->key), 1u);
  EXPECT_EQ(by_key[plain->key], plain->decision.variant);
  EXPECT_EQ(by_key[det->key], det->decision.variant);

  // A later deterministic plan replays its own decision, and never the default mode's.
  for (SchedulerMode mode : {SchedulerMode::automatic, SchedulerMode::replay}) {
    auto again = prepare(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, options(dir, mode));
    EXPECT_TRUE(again->decided);
    EXPECT_EQ(again->decision.variant, det->decision.variant);
    EXPECT_FALSE(again->verify_pending) << "no timed check in deterministic mode";
  }
  auto default_again = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  EXPECT_EQ(default_again->decision.variant, plain->decision.variant);

  // A deterministic replay miss runs a flagged variant, not the (unflagged) vendor.
  TempDir empty;
  auto miss = prepare(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::replay));
  execute(miss, &args, "test");
  EXPECT_EQ(miss->decision.source, "replay miss");
  EXPECT_TRUE(flagged(fake, miss->decision.variant)) << miss->decision.variant;
  // SPARSEPORT_SCHEDULER=off: the first flagged variant (the default is not flagged).
  auto off = prepare(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::off));
  execute(off, &args, "test");
  EXPECT_EQ(sparseport::last_decision().source, "off");
  // probe mode times the flagged variants only (at full size: this op is cheap).
  auto probed = prepare(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::probe));
  execute(probed, &args, "test");
  EXPECT_EQ(probed->decision.source, "timed");
  for (const sparseport::Decision::Candidate& c : probed->decision.candidates)
    EXPECT_TRUE(flagged(fake, c.variant)) << c.variant << " is a candidate";
  EXPECT_TRUE(flagged(fake, probed->decision.variant)) << probed->decision.variant;
  EXPECT_TRUE(flagged(fake, probed->decision.vendor)) << probed->decision.vendor;
}

TEST(DeterministicScheduler, TheChoiceDoesNotDependOnTheThreadCount) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  std::set<std::string> chosen;
  for (int threads : {1, 2, 7}) {
    const sparseport_exec exec{nullptr, threads, SPARSEPORT_EXEC_DETERMINISTIC};
    auto det = prepare(fake, exec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
    execute(det, &args, "test");
    chosen.insert(det->decision.variant);
  }
  EXPECT_EQ(chosen.size(), 1u);
}

TEST(DeterministicScheduler, RequestedUnflaggedVariantIsRefusedAndNoFlaggedVariantIsUnsupported) {
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(500);
  sparseport_spmm_args args = pb.args();
  try {
    run(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, "spmm.fast", "sparseport::spmm[fake]");
    ADD_FAILURE() << "a non-deterministic variant ran in deterministic mode";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("spmm.fast"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not deterministic"), std::string::npos) << msg;
    EXPECT_NE(msg.find("deterministic mode"), std::string::npos) << msg;
    EXPECT_NE(msg.find("spmm.det_a, spmm.det_b"), std::string::npos) << "lists the ones that are: " << msg;
  }
  EXPECT_NO_THROW(run(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, "spmm.det_b", "sparseport::spmm[fake]"));
  EXPECT_NO_THROW(run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "spmm.fast", "sparseport::spmm[fake]"));
  // An unknown name is still Unsupported, whatever the mode.
  EXPECT_THROW(run(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, "spmm.nope", "x"), Unsupported);

  // sddmm: nothing flagged.
  HostDense<float> x(pb.a.rows, 8, 8, 1.0f), y(pb.a.cols, 8, 8, 1.0f), out(pb.a.nnz(), 1, 1, 0.0f);
  const sparseport_sddmm_args sd{args.a,
                                 {x.rows, x.cols, x.ld, x.data.data(), SPARSEPORT_F32},
                                 {y.rows, y.cols, y.ld, y.data.data(), SPARSEPORT_F32},
                                 {out.rows, out.cols, out.ld, out.data.data(), SPARSEPORT_F32}};
  try {
    run(fake, kDetExec, SPARSEPORT_OP_SDDMM, &sd, "", "sparseport::sddmm[fake]");
    ADD_FAILURE() << "sddmm ran without a deterministic variant";
  } catch (const Unsupported& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sddmm"), std::string::npos) << msg;
    EXPECT_NE(msg.find("deterministic mode"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sddmm.fast: not deterministic"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(run(fake, kDefaultExec, SPARSEPORT_OP_SDDMM, &sd, "", "sparseport::sddmm[fake]"));
}

// The one-shot path keeps a plan per call site; a deterministic call must not reuse a default one.
TEST(DeterministicScheduler, OneShotCallsKeepTheModesApart) {
  TempDir dir;
  ScopedEnv cache("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  ScopedEnv mode("SPARSEPORT_SCHEDULER", "auto");
  ScopedEnv repeats("SPARSEPORT_PROBE_REPEATS", "3");
  clear_memo();
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  // Which variant default mode's timing picks is not asserted (a loaded machine decides it); the
  // default call after the deterministic one must get the default plan back, not the other.
  run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  const std::string first = sparseport::last_decision().variant;
  run(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  EXPECT_TRUE(flagged(fake, sparseport::last_decision().variant)) << sparseport::last_decision().variant;
  run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  EXPECT_EQ(sparseport::last_decision().variant, first);
  clear_memo();
}

// ---- the openmp plugin through the public API ------------------------------------------------------

// A mega-row holding most entries, many short rows, and values of mixed magnitudes (1e-6 .. 1e6,
// both signs) so that any change in the order of additions changes the bits.
HostCsr<int32_t, float> skewed(int64_t rows, int64_t cols, int64_t mega, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> col(0, cols - 1), deg(0, 6);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> expo(-6, 6);
  HostCsr<int32_t, float> a;
  a.rows = rows;
  a.cols = cols;  // rowptr starts as {0}
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t d = i == rows / 2 ? mega : deg(rng);
    for (int64_t k = 0; k < d; ++k) {
      a.colind.push_back(static_cast<int32_t>(col(rng)));
      a.values.push_back(static_cast<float>(mant(rng) * std::pow(10.0, expo(rng))));
    }
    a.rowptr.push_back(static_cast<int32_t>(a.colind.size()));
  }
  return a;
}

HostDense<float> mixed_dense(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> expo(-4, 4);
  HostDense<float> d(rows, cols);
  for (float& x : d.data) x = static_cast<float>(mant(rng) * std::pow(10.0, expo(rng)));
  return d;
}

bool same_bits(const HostDense<float>& a, const HostDense<float>& b) {
  return a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

TEST(DeterministicOpenMP, EveryOpIsBitwiseTheSameForAnyThreadCountAndRun) {
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  TempDir dir;
  ScopedEnv cache("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  ScopedEnv env("SPARSEPORT_DETERMINISTIC", "1");
  clear_memo();
  const int64_t F = 19;
  const auto a = skewed(3000, 2500, 40000, 7);
  const HostDense<float> b = mixed_dense(a.cols, F, 8);
  const HostDense<float> q = mixed_dense(a.rows, F, 9);
  // Messages, their sorted destinations (rows of a, so one mega-segment), and a shuffled copy.
  std::vector<int32_t> dst;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.rowptr[i]; e < a.rowptr[i + 1]; ++e) dst.push_back(static_cast<int32_t>(i));
  const int64_t E = static_cast<int64_t>(dst.size());
  const HostDense<float> src = mixed_dense(E, F, 10);
  std::vector<int32_t> shuffled = dst;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(11));
  HostCoo<int32_t, float> edges;
  edges.rows = a.rows;
  edges.cols = a.cols;
  edges.row = dst;
  edges.col = a.colind;
  edges.values = a.values;

  struct Out {
    std::string what;
    HostDense<float> got;
    std::string variant;
  };
  const auto run_all = [&](int threads) {
    Context ctx = Context::create("openmp");
    EXPECT_TRUE(ctx.deterministic()) << "SPARSEPORT_DETERMINISTIC=1 at creation";
    ctx.set_threads(threads);
    std::vector<Out> outs;
    for (Reduce r : {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min}) {
      const std::string rn = name(r);
      HostDense<float> c(a.rows, F);
      spmm(ctx, a.view(), b.view(), c.mut(), {r, 1.0, 0.0, ""});
      outs.push_back({"spmm " + rn, c, sparseport::last_decision().variant});
      HostDense<float> s1(a.rows, F);
      segment_reduce(ctx, make_index(E, dst.data()), src.view(), s1.mut(), {r, ""});
      outs.push_back({"segment_reduce " + rn, s1, sparseport::last_decision().variant});
      HostDense<float> s2(a.rows, F);
      scatter_reduce(ctx, make_index(E, shuffled.data()), src.view(), s2.mut(), {r, ""});
      outs.push_back({"scatter_reduce " + rn, s2, sparseport::last_decision().variant});
      HostDense<float> g(a.rows, F);
      gather_scatter(ctx, edges.view(), b.view(), g.mut(), {r, ""});
      outs.push_back({"gather_scatter " + rn, g, sparseport::last_decision().variant});
    }
    HostDense<float> att(a.rows, F);
    csr_attention(ctx, a.view(), q.view(), b.view(), b.view(), att.mut());
    outs.push_back({"csr_attention", att, sparseport::last_decision().variant});
    return outs;
  };
  const std::vector<Out> first = run_all(1);
  const PluginInfo& omp = plugin("openmp");
  for (const Out& o : first) EXPECT_TRUE(flagged(omp, o.variant)) << o.what << " ran " << o.variant;
  for (int threads : {1, 2, 3, 4, 1}) {
    const std::vector<Out> again = run_all(threads);
    ASSERT_EQ(again.size(), first.size());
    for (size_t k = 0; k < first.size(); ++k) {
      EXPECT_EQ(again[k].variant, first[k].variant) << first[k].what << ", " << threads << " threads";
      EXPECT_TRUE(same_bits(again[k].got, first[k].got))
          << first[k].what << " differs bitwise with " << threads << " threads (" << first[k].variant << ")";
    }
  }
  // And they are right: spmm and segment_reduce against a double-precision oracle, with the
  // rounding allowance of the terms' magnitudes (the values span twelve orders of magnitude).
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.rowptr[i]; e < a.rowptr[i + 1]; ++e) rows[static_cast<size_t>(i)].push_back(e);
  size_t k = 0;
  for (Reduce r : {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min}) {
    const auto spmm_want = sparseport_test::reduce_rows(a.rows, F, r, rows, [&](int64_t e, int64_t f) {
      return static_cast<double>(a.values[static_cast<size_t>(e)]) * b(a.colind[static_cast<size_t>(e)], f);
    });
    EXPECT_TRUE(sparseport_test::close_to(first[k].got, spmm_want, F, 32.0)) << first[k].what;
    const auto seg_want = sparseport_test::reduce_rows(
        a.rows, F, r, rows, [&](int64_t e, int64_t f) { return static_cast<double>(src(e, f)); });
    EXPECT_TRUE(sparseport_test::close_to(first[k + 1].got, seg_want, F, 32.0)) << first[k + 1].what;
    k += 4;
  }
  clear_memo();
}

// Without the mode, the same calls may use the atomic and merge-path variants; the mode's cost is
// only in which variants run, so a request for one of them in the mode says what to do instead.
TEST(DeterministicOpenMP, PlansHonourTheModeAndNamedUnflaggedVariantsAreRefused) {
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  TempDir dir;
  Context ctx = Context::create("openmp");
  ctx.set_deterministic(true);
  const auto a = skewed(2000, 1500, 20000, 3);
  const int64_t F = 8;
  const HostDense<float> b = mixed_dense(a.cols, F, 4);
  HostDense<float> c(a.rows, F);
  SchedulerOptions o;
  o.mode = SchedulerMode::probe;
  o.cache_dir = dir.path;
  o.probe_repeats = 2;
  SpmmPlan plan(ctx, a.view(), F, {}, o);
  plan.run(b.view(), c.mut());
  EXPECT_EQ(plan.decision().variant, "spmm.rows");
  SpmmPlan named(ctx, a.view(), F, {Reduce::sum, 1.0, 0.0, "spmm.merge_path"}, o);
  EXPECT_THROW(named.run(b.view(), c.mut()), InvalidArgument);
  EXPECT_THROW(spmm(ctx, a.view(), b.view(), c.mut(), {Reduce::sum, 1.0, 0.0, "spmm.merge_path"}), InvalidArgument);
  std::vector<int32_t> idx(static_cast<size_t>(a.nnz()), 0);
  const HostDense<float> src = mixed_dense(a.nnz(), F, 5);
  HostDense<float> out(1, F);
  EXPECT_THROW(scatter_reduce(ctx, make_index(a.nnz(), idx.data()), src.view(), out.mut(),
                              {Reduce::sum, "scatter_reduce.atomic"}),
               InvalidArgument);
  EXPECT_NO_THROW(scatter_reduce(ctx, make_index(a.nnz(), idx.data()), src.view(), out.mut(),
                                 {Reduce::sum, "scatter_reduce.sort_then_segment"}));
  ctx.set_deterministic(false);
  EXPECT_NO_THROW(spmm(ctx, a.view(), b.view(), c.mut(), {Reduce::sum, 1.0, 0.0, "spmm.merge_path"}));
}

// ---- TF32 consent ----------------------------------------------------------------------------------
//
// "fake-tf32" copies the reference plugin's table. spmm.tf32 rounds to TF32 (flagged), is the
// fastest and the op's default (so the static choice must skip it); spmm.vendor is the vendor and
// slow; spmm.plain is neither. Its spmm slot refuses spmm.tf32 under an exec without
// SPARSEPORT_EXEC_ALLOW_TF32, so a run that reaches it proves that the consent reached the plugin.
// sddmm has two variants and none flagged: consent must not change its keys.

std::map<std::string, int> g_tf32_calls;
std::string g_tf32_last;  // the variant the fake's spmm slot last ran

int tf32_fake_spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a,
                   sparseport_status* st) {
  const std::string v = variant;
  ++g_tf32_calls[v];
  g_tf32_last = v;
  if (v == "spmm.tf32" && (x == nullptr || (x->flags & SPARSEPORT_EXEC_ALLOW_TF32) == 0)) {
    st->code = SPARSEPORT_ERR_INVALID_ARGUMENT;
    std::snprintf(st->message, sizeof st->message, "spmm.tf32 reached the plugin without SPARSEPORT_EXEC_ALLOW_TF32");
    return st->code;
  }
  spin(v == "spmm.tf32" ? 0.00005 : v == "spmm.plain" ? 0.001 : 0.002);
  return plugin("reference").table->spmm(x, "spmm.serial", a, st);
}

const sparseport_variant kTf32Variants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.tf32", SPARSEPORT_VARIANT_TF32 | SPARSEPORT_VARIANT_DEFAULT,
     "TF32, fastest, the default"},
    {SPARSEPORT_OP_SPMM, "spmm.vendor", SPARSEPORT_VARIANT_VENDOR, "vendor"},
    {SPARSEPORT_OP_SPMM, "spmm.plain", 0, "plain"},
    {SPARSEPORT_OP_SDDMM, "sddmm.a", SPARSEPORT_VARIANT_DEFAULT, "no TF32 variant of sddmm"},
    {SPARSEPORT_OP_SDDMM, "sddmm.b", 0, "no TF32 variant of sddmm"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", SPARSEPORT_VARIANT_DEFAULT, "slice"},
};

PluginInfo tf32_plugin() {
  static sparseport_plugin table;
  static const PluginInfo p = fake_from_reference(
      table, "fake-tf32", kTf32Variants, &tf32_fake_spmm, [](void*, char* buf, size_t len, sparseport_status*) {
        std::snprintf(buf, len,
                      "kind=cpu\nmodel=fake-tf32\nthreads=1\nhardware_threads=4\nl3_bytes=1000000\nfake_version=1\n");
        return 0;
      });
  return p;
}

constexpr sparseport_exec kTf32Exec{nullptr, 1, SPARSEPORT_EXEC_ALLOW_TF32};

bool has_candidate(const sparseport::Decision& d, const std::string& v) {
  for (const sparseport::Decision::Candidate& c : d.candidates)
    if (c.variant == v) return true;
  return false;
}

TEST(Tf32Flags, NoCpuPluginFlagsTf32AndCudaFlagsOnlyItsTf32Variant) {
  for (const PluginInfo& p : plugins()) {
    if (p.table == nullptr) continue;
    for (const VariantInfo& v : p.variants) {
      if (p.name == "cuda" && v.name == "spmm.tc_window_tf32")
        EXPECT_TRUE(v.tf32) << v.name;
      else
        EXPECT_FALSE(v.tf32) << p.name << ": " << v.name << " is flagged TF32";
    }
  }
}

TEST(Tf32Context, EnvironmentSetterCopiesAndTheExecFlag) {
  {
    ScopedEnv env("SPARSEPORT_ALLOW_TF32", nullptr);
    Context ctx = Context::create("reference");
    EXPECT_FALSE(ctx.allow_tf32()) << "off by default";
    EXPECT_EQ(ctx.exec().flags & SPARSEPORT_EXEC_ALLOW_TF32, 0);
    Context copy = ctx;  // copies share it, as they share deterministic mode
    copy.set_allow_tf32(true);
    EXPECT_TRUE(ctx.allow_tf32());
    EXPECT_NE(ctx.exec().flags & SPARSEPORT_EXEC_ALLOW_TF32, 0);
    EXPECT_EQ(ctx.exec().flags & SPARSEPORT_EXEC_DETERMINISTIC, 0) << "the flags are independent";
    ctx.set_deterministic(true);
    EXPECT_EQ(ctx.exec().flags, SPARSEPORT_EXEC_ALLOW_TF32 | SPARSEPORT_EXEC_DETERMINISTIC);
  }
  {
    ScopedEnv env("SPARSEPORT_ALLOW_TF32", "1");
    Context ctx = Context::create("reference");
    EXPECT_TRUE(ctx.allow_tf32());
    EXPECT_NE(ctx.exec().flags & SPARSEPORT_EXEC_ALLOW_TF32, 0);
    ctx.set_allow_tf32(false);
    EXPECT_EQ(ctx.exec().flags & SPARSEPORT_EXEC_ALLOW_TF32, 0);
  }
  {
    ScopedEnv env("SPARSEPORT_ALLOW_TF32", "0");
    EXPECT_FALSE(Context::create("reference").allow_tf32());
  }
  for (const char* bad : {"yes", "true", "2"}) {
    ScopedEnv env("SPARSEPORT_ALLOW_TF32", bad);
    try {
      (void)Context::create("reference");
      ADD_FAILURE() << "SPARSEPORT_ALLOW_TF32=" << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("SPARSEPORT_ALLOW_TF32"), std::string::npos) << e.what();
    }
  }
}

// The front end's translation of the op option (src/ops/common.hpp): unset follows the context,
// true and false override it either way; nothing else in the exec changes.
TEST(Tf32Context, TheOpOptionOverridesTheContext) {
  ScopedEnv env("SPARSEPORT_ALLOW_TF32", nullptr);
  Context off = Context::create("reference");
  Context on = Context::create("reference");
  on.set_allow_tf32(true);
  on.set_deterministic(true);
  on.set_threads(3);
  const auto flag = [](const sparseport_exec& x) { return (x.flags & SPARSEPORT_EXEC_ALLOW_TF32) != 0; };
  EXPECT_FALSE(flag(ops::exec_for(off, std::nullopt)));
  EXPECT_TRUE(flag(ops::exec_for(off, true)));
  EXPECT_FALSE(flag(ops::exec_for(off, false)));
  EXPECT_TRUE(flag(ops::exec_for(on, std::nullopt)));
  EXPECT_TRUE(flag(ops::exec_for(on, true)));
  EXPECT_FALSE(flag(ops::exec_for(on, false)));
  const sparseport_exec x = ops::exec_for(on, false);
  EXPECT_EQ(x.state, on.exec().state);
  EXPECT_EQ(x.threads, 3);
  EXPECT_NE(x.flags & SPARSEPORT_EXEC_DETERMINISTIC, 0);

  // Through the public API on the reference backend (no TF32 variant there): every setting runs
  // and gives the same result, one-shot and planned (the default variant: the same bits).
  TempDir dir;
  ScopedEnv cache("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  ScopedEnv mode("SPARSEPORT_SCHEDULER", "off");
  Problem pb = make_problem(400);
  HostDense<float> want(pb.a.rows, 8);
  spmm(off, pb.a.view(), pb.b.view(), want.mut());
  for (const Context* ctx : {&off, &on})
    for (const std::optional<bool> opt :
         {std::optional<bool>{}, std::optional<bool>{true}, std::optional<bool>{false}}) {
      SpmmOptions o;
      o.allow_tf32 = opt;
      HostDense<float> c(pb.a.rows, 8), d(pb.a.rows, 8);
      spmm(*ctx, pb.a.view(), pb.b.view(), c.mut(), o);
      SpmmPlan plan(*ctx, pb.a.view(), 8, o);
      plan.run(pb.b.view(), d.mut());
      EXPECT_EQ(c.data, want.data);
      EXPECT_EQ(d.data, want.data);
    }
}

// (a) Without consent the TF32 variant is no candidate, never chosen, never timed, never the
// static choice (it is the default) and never the vendor.
TEST(Tf32Scheduler, WithoutConsentNeverACandidateNorChosenNorTimed) {
  TempDir dir;
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  g_tf32_calls.clear();
  for (SchedulerMode mode : {SchedulerMode::automatic, SchedulerMode::probe}) {
    auto plan = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, mode));
    execute(plan, &args, "test");
    EXPECT_NE(plan->decision.variant, "spmm.tf32") << plan->decision.reason;
    EXPECT_FALSE(plan->decision.variant.empty()) << plan->decision.reason;
    EXPECT_FALSE(has_candidate(plan->decision, "spmm.tf32"));
    EXPECT_TRUE(has_candidate(plan->decision, "spmm.plain")) << "the others are candidates: " << plan->decision.reason;
    EXPECT_EQ(plan->decision.vendor, "spmm.vendor");
  }
  // The static choice skips the flagged default: SPARSEPORT_SCHEDULER=off runs the first other one.
  TempDir empty;
  auto off = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::off));
  execute(off, &args, "test");
  EXPECT_EQ(g_tf32_last, "spmm.vendor");
  EXPECT_EQ(scheduler::select(fake, SPARSEPORT_OP_SPMM, &args, "", "test"), "spmm.vendor");
  // A replay miss runs the vendor.
  auto miss = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::replay));
  execute(miss, &args, "test");
  EXPECT_EQ(miss->decision.variant, "spmm.vendor");
  // The one-shot path, named nothing.
  run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  EXPECT_NE(sparseport::last_decision().variant, "spmm.tf32");
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], 0) << "the TF32 variant ran (or was timed) without consent";
  // The guardrail's reference is never a TF32 variant, even where it is the only default.
  EXPECT_EQ(vendor_of(fake, SPARSEPORT_OP_SPMM, {"spmm.tf32", "spmm.plain"}), "spmm.plain");
  EXPECT_EQ(vendor_of(fake, SPARSEPORT_OP_SPMM, {"spmm.tf32", "spmm.plain", "spmm.vendor"}), "spmm.vendor");
}

// (b) With the context's consent it is a candidate, timed, and may be chosen; the vendor stays the
// vendor; named, it runs, and the plugin sees the flag.
TEST(Tf32Scheduler, WithConsentACandidateTimedAndRunnableByName) {
  TempDir dir;
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  g_tf32_calls.clear();
  auto plan = prepare(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(plan, &args, "test");
  EXPECT_TRUE(has_candidate(plan->decision, "spmm.tf32")) << plan->decision.reason;
  EXPECT_GT(g_tf32_calls["spmm.tf32"], 0) << "timed as a candidate";
  EXPECT_EQ(plan->decision.vendor, "spmm.vendor") << "the guardrail's reference is never a TF32 variant";
  // (Whether timing then picks it, 40x faster by its spin, is the scheduler's quality under this
  // machine's load, not consent: not asserted.)
  // The static choice with consent is the op's default, the TF32 variant.
  TempDir empty;
  auto off = prepare(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, options(empty, SchedulerMode::off));
  execute(off, &args, "test");
  EXPECT_EQ(g_tf32_last, "spmm.tf32");
  const int before = g_tf32_calls["spmm.tf32"];
  EXPECT_NO_THROW(run(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, "spmm.tf32", "sparseport::spmm[fake-tf32]"));
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], before + 1);
  EXPECT_EQ(sparseport::last_decision().variant, "spmm.tf32");
}

// (c) The call's option against the context's consent, as the front end turns it into the exec.
TEST(Tf32Scheduler, TheOpOptionAllowsOnAnOffContextAndRefusesOnAnOnContext) {
  ScopedEnv env("SPARSEPORT_ALLOW_TF32", nullptr);
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(500);
  sparseport_spmm_args args = pb.args();
  Context off = Context::create("reference");
  Context on = Context::create("reference");
  on.set_allow_tf32(true);
  // The exec of a call on `off` with allow_tf32 = true, on `on` with false (only the flag matters
  // to the fake plugin: the state is the reference's, which its slots ignore).
  const sparseport_exec yes = ops::exec_for(off, true), no = ops::exec_for(on, false);
  g_tf32_calls.clear();
  EXPECT_NO_THROW(run(fake, yes, SPARSEPORT_OP_SPMM, &args, "spmm.tf32", "sparseport::spmm[fake-tf32]"));
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], 1);
  EXPECT_THROW(run(fake, no, SPARSEPORT_OP_SPMM, &args, "spmm.tf32", "sparseport::spmm[fake-tf32]"), InvalidArgument);
  TempDir dir;
  auto with = prepare(fake, yes, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(with, &args, "test");
  EXPECT_TRUE(has_candidate(with->decision, "spmm.tf32"));
  auto without = prepare(fake, no, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  const int before = g_tf32_calls["spmm.tf32"];
  execute(without, &args, "test");
  EXPECT_FALSE(has_candidate(without->decision, "spmm.tf32"));
  EXPECT_NE(without->decision.variant, "spmm.tf32");
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], before) << "timed although the call said no";
  EXPECT_NE(with->key, without->key);
}

// (d) Named without consent: InvalidArgument naming the op, the variant and every remedy; before the
// plugin is reached. Unknown names stay Unsupported.
TEST(Tf32Scheduler, NamedWithoutConsentIsRefusedWithTheRemedy) {
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(300);
  sparseport_spmm_args args = pb.args();
  g_tf32_calls.clear();
  try {
    run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "spmm.tf32", "sparseport::spmm[fake-tf32]");
    ADD_FAILURE() << "spmm.tf32 ran without consent";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sparseport::spmm[fake-tf32]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'spmm.tf32' of spmm"), std::string::npos) << "names the variant and the op: " << msg;
    EXPECT_NE(msg.find("TF32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Context::set_allow_tf32(true)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SpmmOptions::allow_tf32 = true"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SPARSEPORT_ALLOW_TF32=1"), std::string::npos) << msg;
  }
  // In deterministic mode too (spmm.tf32 is not flagged deterministic: that reason comes first).
  EXPECT_THROW(run(fake, kDetExec, SPARSEPORT_OP_SPMM, &args, "spmm.tf32", "x"), InvalidArgument);
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], 0);
  EXPECT_THROW(run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "spmm.nope", "x"), Unsupported);
  EXPECT_NO_THROW(run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "spmm.plain", "x"));
}

// (e) Decisions made with and without consent are cached under different keys and never replayed
// across a change of consent; an op without a TF32 variant keeps one key. A cached decision naming
// a TF32 variant under a key without consent (a variant flagged since) is not replayed.
TEST(Tf32Scheduler, DecisionsAreNotReusedAcrossAConsentChange) {
  TempDir dir;
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  g_tf32_calls.clear();
  auto plain = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plain, &args, "test");
  ASSERT_NE(plain->decision.variant, "spmm.tf32");

  auto with = prepare(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_FALSE(with->decided) << "replayed a decision made without consent: " << with->decision.source;
  EXPECT_EQ(with->key, plain->key + "/tf32");
  execute(with, &args, "test");

  // Both are cached, each under its own key; the consent one says so.
  std::map<std::string, Record> by_key;
  for (Record& r : CacheFile(dir.path).read()) by_key[r["key"]] = r;
  ASSERT_EQ(by_key.count(plain->key), 1u);
  ASSERT_EQ(by_key.count(with->key), 1u);
  EXPECT_EQ(by_key[with->key]["variant"], with->decision.variant);
  EXPECT_EQ(by_key[with->key]["allow_tf32"], "true");
  EXPECT_EQ(by_key[plain->key].count("allow_tf32"), 0u);

  // Replays keep to their own side, in both directions.
  auto again_without = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  EXPECT_TRUE(again_without->decided);
  EXPECT_EQ(again_without->decision.variant, plain->decision.variant);
  auto again_with = prepare(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  EXPECT_TRUE(again_with->decided);
  EXPECT_EQ(again_with->decision.variant, with->decision.variant);

  // A record naming the TF32 variant under the key without consent is not replayed without it.
  Record forged = by_key[plain->key];
  forged["variant"] = "spmm.tf32";
  CacheFile(dir.path).append(forged);
  g_tf32_calls.clear();
  auto guarded = prepare(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  execute(guarded, &args, "test");
  EXPECT_NE(guarded->decision.variant, "spmm.tf32");
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], 0);

  // sddmm has no TF32 variant: consent leaves its key (and so its decisions) alone.
  HostDense<float> x(pb.a.rows, 8, 8, 1.0f), y(pb.a.cols, 8, 8, 1.0f), out(pb.a.nnz(), 1, 1, 0.0f);
  const sparseport_sddmm_args sd{args.a,
                                 {x.rows, x.cols, x.ld, x.data.data(), SPARSEPORT_F32},
                                 {y.rows, y.cols, y.ld, y.data.data(), SPARSEPORT_F32},
                                 {out.rows, out.cols, out.ld, out.data.data(), SPARSEPORT_F32}};
  auto sd_plain = prepare(fake, kDefaultExec, SPARSEPORT_OP_SDDMM, &sd, options(dir, SchedulerMode::replay));
  auto sd_with = prepare(fake, kTf32Exec, SPARSEPORT_OP_SDDMM, &sd, options(dir, SchedulerMode::replay));
  EXPECT_FALSE(sd_plain->key.empty());
  EXPECT_EQ(sd_plain->key, sd_with->key);
}

// The one-shot path keeps a plan per call site: a call with consent must not reuse one without.
TEST(Tf32Scheduler, OneShotCallsKeepConsentApart) {
  TempDir dir;
  ScopedEnv cache("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  ScopedEnv mode("SPARSEPORT_SCHEDULER", "auto");
  ScopedEnv repeats("SPARSEPORT_PROBE_REPEATS", "3");
  clear_memo();
  const PluginInfo fake = tf32_plugin();
  Problem pb = make_problem(3000);
  sparseport_spmm_args args = pb.args();
  g_tf32_calls.clear();
  run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  const std::string first = sparseport::last_decision().variant;
  EXPECT_NE(first, "spmm.tf32");
  run(fake, kTf32Exec, SPARSEPORT_OP_SPMM, &args, "", "test");
  // A decision of its own (the TF32 variant among its candidates), not the plan made without consent;
  // which variant timing picks is not asserted.
  EXPECT_TRUE(has_candidate(sparseport::last_decision(), "spmm.tf32")) << sparseport::last_decision().reason;
  const int calls = g_tf32_calls["spmm.tf32"];
  run(fake, kDefaultExec, SPARSEPORT_OP_SPMM, &args, "", "test");
  EXPECT_EQ(sparseport::last_decision().variant, first);
  EXPECT_EQ(g_tf32_calls["spmm.tf32"], calls);
  clear_memo();
}

}  // namespace
