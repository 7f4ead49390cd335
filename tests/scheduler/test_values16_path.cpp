// SPDX-License-Identifier: Apache-2.0
// The float32 path for 16-bit values (scheduler/values16.hpp, select.cpp) on the CPU backends
// (reference, openmp), through the public API only:
//  - a one-shot 16-bit call that no variant takes natively runs on float32 copies, and
//    last_decision() says so (via_f32) and names the float32 variant that ran; where the plugin
//    has a native 16-bit variant the decision is either that variant or the float32 path;
//  - a requested variant that does not take 16-bit values runs through float32 copies, gives the
//    right answer and is the variant last_decision() names (even right after another op's call);
//  - repeated one-shot calls on the same arrays reuse the copies: results stay right with new
//    contents, and the plugin's alloc slot is not called again;
//  - SpmmPlan (and the other plans) on 16-bit data: right results, decision() says via_f32 or
//    names a native variant; a plan with a named variant says via_f32 too;
//  - deterministic mode: the float32 path runs a deterministic variant.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/scoped.hpp"
#include "common/values16.hpp"

namespace sparseport::testing {
namespace {

// The CPU backends this file is about (openmp only where it is compiled in).
std::vector<std::string> cpu_backends() {
  std::vector<std::string> out;
  for (const char* name : {"reference", "openmp"})
    if (plugin(name).status == PluginStatus::available) out.push_back(name);
  return out;
}

const VariantInfo* variant_info(const PluginInfo& p, sparseport_op op, const std::string& name) {
  for (const VariantInfo& v : p.variants)
    if (v.op == op && v.name == name) return &v;
  return nullptr;
}

bool has_native16(const PluginInfo& p, sparseport_op op) {
  for (const VariantInfo& v : p.variants)
    if (v.op == op && v.values16) return true;
  return false;
}

// What last_decision() must say after a scheduled 16-bit call of op on plugin p.
void expect_decision16(const PluginInfo& p, sparseport_op op, const std::string& what,
                       const Decision& d = last_decision()) {
  SCOPED_TRACE(what + " on " + p.name + ": decision variant '" + d.variant + "', source '" + d.source + "', reason '" +
               d.reason + "'");
  const VariantInfo* v = variant_info(p, op, d.variant);
  ASSERT_NE(v, nullptr) << "the decision names no " << op_name(op) << " variant of " << p.name;
  if (!has_native16(p, op)) {
    EXPECT_TRUE(d.via_f32) << "no " << op_name(op) << " variant of " << p.name
                           << " takes 16-bit values, so the call ran on float32 copies";
    EXPECT_FALSE(v->values16);
  } else if (!d.via_f32) {
    EXPECT_TRUE(v->values16) << "a call not via float32 copies must have run a native 16-bit variant";
  }
}

SpmmOptions spmm_opt(Reduce r, std::string variant = {}) {
  SpmmOptions o;
  o.reduce = r;
  o.variant = std::move(variant);
  return o;
}

template <class I, class V>
HostCsr<I, V> test_matrix(uint64_t seed) {
  std::mt19937_64 rng(seed);
  MatrixSpec spec;
  spec.shape = Shape::power_law;
  spec.square = true;
  return make_matrix<I, V>(spec, rng);
}

// C = reduce(A B) in 16 bits against the reference's float64 path on the same values.
template <class I, class V>
void expect_spmm_right(const HostCsr<I, V>& a, const HostDense<V>& b, const HostDense<V>& c, Reduce r,
                       const std::string& what) {
  HostDense<double> want(a.rows, b.cols), bound(a.rows, b.cols);
  const std::string ov = oracle_variant(SPARSEPORT_OP_SPMM);
  spmm(oracle(), to_double(a).view(), to_double(b).view(), want.mut(), spmm_opt(r, ov));
  spmm(oracle(), to_double(a, true).view(), to_double(b, true).view(), bound.mut(),
       spmm_opt(r == Reduce::min ? Reduce::max : r, ov));
  const std::vector<int64_t> deg = row_degrees(a.view());
  expect_close16(c, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + 3; }, what);
}

// ---- one-shot calls -----------------------------------------------------------------------------

template <class I, class V>
void check_one_shot(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const PluginInfo& p = ctx.plugin();
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/one_shot"));
  std::mt19937_64 rng(case_seed("values16_path/one_shot/dense"));
  const int64_t F = 8;
  const HostDense<V> b = random16<V>(a.cols, F, F, rng), x = random16<V>(a.rows, F, F, rng);
  for (const Reduce r : kReduces) {
    HostDense<V> c(a.rows, F);
    spmm(ctx, a.view(), b.view(), c.mut(), spmm_opt(r));
    expect_decision16(p, SPARSEPORT_OP_SPMM, std::string("spmm ") + name(r));
    expect_spmm_right(a, b, c, r, std::string("spmm ") + name(r));
  }
  {
    HostDense<V> y(a.rows, 1);
    spmv(ctx, a.view(), DenseView{a.cols, 1, F, b.data.data(), value_type_of<V>()}, y.mut());
    expect_decision16(p, SPARSEPORT_OP_SPMM, "spmv");
  }
  HostDense<V> out(a.nnz(), 1);
  sddmm(ctx, a.view(), x.view(), b.view(), out.mut());
  expect_decision16(p, SPARSEPORT_OP_SDDMM, "sddmm");
  std::vector<I> dst;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      dst.push_back(static_cast<I>(i));
  const HostDense<V> src = random16<V>(a.nnz(), F, F, rng);
  HostDense<V> seg(a.rows, F);
  segment_reduce(ctx, make_index<I>(a.nnz(), dst.data()), src.view(), seg.mut());
  expect_decision16(p, SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce");
  std::vector<I> shuffled = dst;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  scatter_reduce(ctx, make_index<I>(a.nnz(), shuffled.data()), src.view(), seg.mut());
  expect_decision16(p, SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce");
  HostCoo<I, V> edges;
  edges.rows = a.rows;
  edges.cols = a.cols;
  edges.row = dst;
  edges.col = a.colind;
  edges.values = a.values;
  gather_scatter(ctx, edges.view(), b.view(), seg.mut());
  expect_decision16(p, SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter");
  csr_attention(ctx, a.view(), x.view(), b.view(), b.view(), seg.mut());
  expect_decision16(p, SPARSEPORT_OP_CSR_ATTENTION, "csr_attention");
}

TEST(Values16Path, OneShotCallsWithoutNativeVariantsRunViaFloat32) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_one_shot<int32_t, half>(backend);
    check_one_shot<int64_t, bfloat16>(backend);
  }
}

// ---- requested variants -------------------------------------------------------------------------

template <class I, class V>
void check_requested(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const PluginInfo& p = ctx.plugin();
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/requested"));
  std::mt19937_64 rng(case_seed("values16_path/requested/dense"));
  const int64_t F = 5;
  const HostDense<V> b = random16<V>(a.cols, F, F + 2, rng);
  // A float32 call of another op first, so that the last decision is someone else's.
  const HostCsr<I, float> a32 = to_float(a);
  const HostDense<float> q32 = to_float(random16<V>(a.rows, F, F, rng)), k32 = to_float(random16<V>(a.cols, F, F, rng));
  for (const std::string& variant : p.variants_of(SPARSEPORT_OP_SPMM)) {
    const VariantInfo* v = variant_info(p, SPARSEPORT_OP_SPMM, variant);
    if (v->values16) continue;  // a native one is not the float32 path
    if (v->tf32) continue;      // rounds to TF32: only with the caller's consent (test_cuda_tc.cpp)
    for (const Reduce r : {Reduce::sum, Reduce::max}) {
      SCOPED_TRACE("variant " + variant + ", reduce " + name(r));
      HostDense<float> att(a.rows, F);
      csr_attention(ctx, a32.view(), q32.view(), k32.view(), k32.view(), att.mut());
      HostDense<V> c = nan_dense16<V>(a.rows, F, F + 1);
      try {
        spmm(ctx, a.view(), b.view(), c.mut(), spmm_opt(r, variant));
      } catch (const Unsupported& e) {
        // A variant may not apply to an input (graphblas: max/min over repeated columns); it says so.
        EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
        continue;
      }
      const Decision d = last_decision();
      EXPECT_TRUE(d.via_f32) << "a requested variant without 16-bit support runs on float32 copies";
      EXPECT_EQ(d.variant, variant) << "the decision names the requested variant (source '" << d.source << "')";
      EXPECT_EQ(d.source, "requested");
      expect_spmm_right(a, b, c, r, "C");
      expect_padding16(c, "C");
    }
  }
}

TEST(Values16Path, RequestedVariantRunsOnFloat32CopiesAndIsTheOneNamed) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_requested<int32_t, bfloat16>(backend);
    check_requested<int64_t, half>(backend);
  }
}

// ---- repeated calls reuse the copies ------------------------------------------------------------

// Counts the plugin's alloc slot calls: the library's own copy of the table (widened to this
// build's size, so not const memory) gets a counting slot for one scope, put back after.
int g_allocs = 0;
int (*g_alloc)(void*, size_t, void**, sparseport_status*) = nullptr;
int counting_alloc(void* state, size_t bytes, void** ptr, sparseport_status* st) {
  ++g_allocs;
  return g_alloc(state, bytes, ptr, st);
}
class CountAllocs {
 public:
  explicit CountAllocs(const Context& ctx) : t_(const_cast<sparseport_plugin*>(ctx.plugin().table)), saved_(t_->alloc) {
    g_alloc = saved_;
    g_allocs = 0;
    t_->alloc = &counting_alloc;
  }
  ~CountAllocs() { t_->alloc = saved_; }
  CountAllocs(const CountAllocs&) = delete;
  CountAllocs& operator=(const CountAllocs&) = delete;

 private:
  sparseport_plugin* t_;
  int (*saved_)(void*, size_t, void**, sparseport_status*);
};

template <class I, class V>
void check_repeated(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const PluginInfo& p = ctx.plugin();
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/repeated"));
  std::mt19937_64 rng(case_seed("values16_path/repeated/dense"));
  const int64_t F = 6;
  std::string plain;  // the first spmm variant without native 16-bit support
  for (const std::string& v : p.variants_of(SPARSEPORT_OP_SPMM))
    if (plain.empty() && !variant_info(p, SPARSEPORT_OP_SPMM, v)->values16) plain = v;
  // Every spmm variant of this build takes 16 bits (openmp without GraphBLAS): no named variant runs
  // on float32 copies; the scheduled calls below still run.
  std::vector<std::string> named{std::string()};
  if (!plain.empty()) named.push_back(plain);
  for (const std::string& variant : named) {
    SCOPED_TRACE("variant " + (variant.empty() ? std::string("(scheduled)") : variant));
    // The same arrays on every call; B's contents change in place.
    HostDense<V> b(a.cols, F), c(a.rows, F);
    for (int call = 0; call < 3; ++call) {
      SCOPED_TRACE("call " + std::to_string(call + 1));
      const HostDense<V> fresh = random16<V>(a.cols, F, F, rng);
      std::copy(fresh.data.begin(), fresh.data.end(), b.data.begin());
      std::optional<CountAllocs> count;
      if (call > 0) count.emplace(ctx);  // the first call allocates the copies (and may decide)
      spmm(ctx, a.view(), b.view(), c.mut(), spmm_opt(Reduce::sum, variant));
      const Decision d = last_decision();  // before the oracle's own calls below
      if (call > 0) {
        EXPECT_EQ(g_allocs, 0) << "a repeated call on the same arrays allocated new float32 copies";
      }
      count.reset();
      expect_spmm_right(a, b, c, Reduce::sum, "C");
      if (!variant.empty()) {
        EXPECT_TRUE(d.via_f32);
        EXPECT_EQ(d.variant, variant);
      } else {
        expect_decision16(p, SPARSEPORT_OP_SPMM, "spmm", d);
      }
    }
  }
}

TEST(Values16Path, RepeatedOneShotCallsReuseTheCopies) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_repeated<int32_t, half>(backend);
    check_repeated<int64_t, bfloat16>(backend);
  }
}

// ---- nothing outlives its owner --------------------------------------------------------------------

// Counts the plugin's release slot calls, like CountAllocs.
int g_releases = 0;
void (*g_release)(void*, void*) = nullptr;
void counting_release(void* state, void* ptr) {
  ++g_releases;
  g_release(state, ptr);
}
class CountReleases {
 public:
  explicit CountReleases(const Context& ctx)
      : t_(const_cast<sparseport_plugin*>(ctx.plugin().table)), saved_(t_->release) {
    g_release = saved_;
    g_releases = 0;
    t_->release = &counting_release;
  }
  ~CountReleases() { t_->release = saved_; }
  CountReleases(const CountReleases&) = delete;
  CountReleases& operator=(const CountReleases&) = delete;

 private:
  sparseport_plugin* t_;
  void (*saved_)(void*, void*);
};

// last_decision() once held the thread's last plan alive: after clear_plan_memo() (or a failed
// call, or the Context's destruction) the float32 copies stayed allocated until the thread's next
// call, whose release then went through the plugin state of a context that might be gone (found
// by CudaResources.EveryAllocationOfEveryOpFamilyFailsInTurn: 315 kB left allocated on the GPU).
TEST(Values16Path, ClearingTheMemoFreesTheCopiesAtOnceAndLastDecisionHoldsNothing) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    const Context ctx = Context::create(backend);
    const PluginInfo& p = ctx.plugin();
    std::string plain;
    for (const std::string& v : p.variants_of(SPARSEPORT_OP_SPMM))
      if (plain.empty() && !variant_info(p, SPARSEPORT_OP_SPMM, v)->values16) plain = v;
    if (plain.empty()) continue;  // every spmm variant takes 16 bits here: no copies are made
    const HostCsr<int32_t, bfloat16> a = test_matrix<int32_t, bfloat16>(case_seed("values16_path/outlive"));
    std::mt19937_64 rng(case_seed("values16_path/outlive/dense"));
    const HostDense<bfloat16> b = random16<bfloat16>(a.cols, 5, 5, rng);
    HostDense<bfloat16> c(a.rows, 5);
    clear_plan_memo();
    spmm(ctx, a.view(), b.view(), c.mut(), spmm_opt(Reduce::sum, plain));
    EXPECT_TRUE(last_decision().via_f32) << "the named variant " << plain << " ran on float32 copies";
    {
      CountReleases count(ctx);
      clear_plan_memo();
      EXPECT_GT(g_releases, 0) << "clearing the memo did not free the float32 copies";
    }
    EXPECT_EQ(last_decision().variant, "") << "the decision of a plan that is gone";
    expect_spmm_right(a, b, c, Reduce::sum, "C");  // after: the oracle's own calls make decisions too
  }
}

// ---- plans --------------------------------------------------------------------------------------

template <class I, class V>
void check_spmm_plan(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const PluginInfo& p = ctx.plugin();
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/plan"));
  std::mt19937_64 rng(case_seed("values16_path/plan/dense"));
  const int64_t F = 9;
  for (const Reduce r : {Reduce::sum, Reduce::min}) {
    SCOPED_TRACE(std::string("reduce ") + name(r));
    SpmmPlan plan(ctx, a.view(), F, spmm_opt(r));
    HostDense<V> b(a.cols, F), c(a.rows, F);
    Decision last;  // last_decision() right after the plan's last run (the oracle's calls come after)
    for (int call = 0; call < 3; ++call) {
      b.data = random16<V>(a.cols, F, F, rng).data;
      plan.run(b.view(), c.mut());
      last = last_decision();
      expect_spmm_right(a, b, c, r, "SpmmPlan C, run " + std::to_string(call + 1));
    }
    const Decision& d = plan.decision();
    SCOPED_TRACE("decision: variant '" + d.variant + "', source '" + d.source + "', reason '" + d.reason + "'");
    const VariantInfo* v = variant_info(p, SPARSEPORT_OP_SPMM, d.variant);
    ASSERT_NE(v, nullptr) << "the plan's decision names no spmm variant of " << p.name;
    if (!has_native16(p, SPARSEPORT_OP_SPMM)) {
      EXPECT_TRUE(d.via_f32) << "no spmm variant takes 16-bit values: the plan runs on float32 copies";
    } else if (!d.via_f32) {
      EXPECT_TRUE(v->values16) << "the plan says native but names a float32 variant";
    }
    EXPECT_EQ(last.via_f32, d.via_f32);
    EXPECT_EQ(last.variant, d.variant);
  }
  // A plan with a named variant without 16-bit support.
  std::string plain;
  for (const std::string& v : p.variants_of(SPARSEPORT_OP_SPMM))
    if (plain.empty() && !variant_info(p, SPARSEPORT_OP_SPMM, v)->values16) plain = v;
  if (plain.empty()) return;  // every spmm variant of this build takes 16 bits (openmp without GraphBLAS)
  SpmmPlan named(ctx, a.view(), F, spmm_opt(Reduce::sum, plain));
  HostDense<V> b = random16<V>(a.cols, F, F, rng), c(a.rows, F);
  named.run(b.view(), c.mut());
  const Decision named_last = last_decision();
  expect_spmm_right(a, b, c, Reduce::sum, "SpmmPlan(" + plain + ") C");
  EXPECT_EQ(named.decision().variant, plain);
  EXPECT_TRUE(named_last.via_f32) << "the named variant ran on float32 copies";
  EXPECT_TRUE(named.decision().via_f32)
      << "the plan's decision must say that its named variant " << plain << " runs on float32 copies";
}

TEST(Values16Path, SpmmPlanOnBf16SaysViaF32OrNative) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_spmm_plan<int32_t, bfloat16>(backend);
    check_spmm_plan<int64_t, half>(backend);
  }
}

template <class I, class V>
void check_other_plans(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const PluginInfo& p = ctx.plugin();
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/plans"));
  std::mt19937_64 rng(case_seed("values16_path/plans/dense"));
  const int64_t F = 4;
  const HostDense<V> x = random16<V>(a.rows, F, F, rng), y = random16<V>(a.cols, F, F, rng);
  const std::vector<int64_t> deg = row_degrees(a.view());
  const auto check = [&](const Decision& d, sparseport_op op, const std::string& what) {
    SCOPED_TRACE(what + ": decision variant '" + d.variant + "', source '" + d.source + "', reason '" + d.reason + "'");
    // A plan of an op with one variant names none (source "single"), as in float32.
    if (d.variant.empty() && d.source == "single" && p.variants_of(op).size() == 1) {
      if (!has_native16(p, op)) {
        EXPECT_TRUE(d.via_f32);
      }
      return;
    }
    const VariantInfo* v = variant_info(p, op, d.variant);
    ASSERT_NE(v, nullptr) << "the decision names no " << op_name(op) << " variant of " << p.name;
    if (!has_native16(p, op)) {
      EXPECT_TRUE(d.via_f32);
    } else if (!d.via_f32) {
      EXPECT_TRUE(v->values16);
    }
  };
  {
    SddmmPlan plan(ctx, a.view(), F);
    HostDense<V> out(a.nnz(), 1);
    plan.run(x.view(), y.view(), out.mut());
    check(plan.decision(), SPARSEPORT_OP_SDDMM, "SddmmPlan");
    HostDense<double> want(a.nnz(), 1), bound(a.nnz(), 1);
    sddmm(oracle(), to_double(a).view(), to_double(x).view(), to_double(y).view(), want.mut(),
          {oracle_variant(SPARSEPORT_OP_SDDMM)});
    sddmm(oracle(), to_double(a, true).view(), to_double(x, true).view(), to_double(y, true).view(), bound.mut(),
          {oracle_variant(SPARSEPORT_OP_SDDMM)});
    expect_close16(out, want, bound, [&](int64_t) { return F + 2; }, "SddmmPlan out");
  }
  {
    AttentionPlan plan(ctx, a.view(), F);
    HostDense<V> out(a.rows, F);
    plan.run(x.view(), y.view(), y.view(), out.mut());
    check(plan.decision(), SPARSEPORT_OP_CSR_ATTENTION, "AttentionPlan");
    HostDense<double> want(a.rows, F), bound(a.rows, F);
    const std::string ov = oracle_variant(SPARSEPORT_OP_CSR_ATTENTION);
    csr_attention(oracle(), to_double(a).view(), to_double(x).view(), to_double(y).view(), to_double(y).view(),
                  want.mut(), {0.0, ov});
    csr_attention(oracle(), to_double(a).view(), to_double(x).view(), to_double(y).view(), to_double(y, true).view(),
                  bound.mut(), {0.0, ov});
    // Scores of at most F products of magnitude < 1 (scale 1/sqrt(F)): terms deg + 4 + 2 F sqrt(F).
    expect_close16(out, want, bound, [&](int64_t i) { return deg[static_cast<size_t>(i)] + 4 + 2 * F * 2; },
                   "AttentionPlan out");
  }
  {
    const HostCoo<I, V> edges = to_coo(a);
    ReduceOptions ro;
    ro.reduce = Reduce::mean;
    GatherScatterPlan plan(ctx, edges.view(), F, ro);
    HostDense<V> out(a.rows, F);
    plan.run(y.view(), out.mut());
    check(plan.decision(), SPARSEPORT_OP_GATHER_SCATTER, "GatherScatterPlan");
    expect_spmm_right(a, y, out, Reduce::mean, "GatherScatterPlan out");
  }
}

// Decisions taken on the probe sample (SPARSEPORT_FULL_SIZE_MS tiny: every candidate counts as too
// slow to time at full size; SPARSEPORT_SCHEDULER=probe: timed even where a model is sure; a cache
// of its own: no replay). The sample is sliced with the backend's csr_slice_rows, which takes no
// 16-bit values: before the fix the slicer read them as floats, past the end of the array (on the
// GPU a device fault on 32M-entry inputs); now it slices the pattern and the plan still runs on
// the 16-bit data, right. Plans of spmm (sum and max) and sddmm on both value types.
template <class I, class V>
void check_probe_plans(const std::string& backend) {
  const Context ctx = Context::create(backend);
  const HostCsr<I, V> a = test_matrix<I, V>(case_seed("values16_path/probe"));
  std::mt19937_64 rng(case_seed("values16_path/probe/dense"));
  const int64_t F = 16;
  const HostDense<V> b = random16<V>(a.cols, F, F, rng), x = random16<V>(a.rows, F, F, rng);
  for (const Reduce r : {Reduce::sum, Reduce::max}) {
    SpmmPlan plan(ctx, a.view(), F, spmm_opt(r));
    HostDense<V> c(a.rows, F);
    plan.run(b.view(), c.mut());
    const Decision d = plan.decision();
    // A backend whose only native variant is the whole list decides without timing ("single").
    if (d.source != "single" && !d.via_f32) {
      EXPECT_EQ(d.timing, "probe sample") << d.variant << ": " << d.reason;
    }
    expect_spmm_right(a, b, c, r, std::string("SpmmPlan ") + name(r) + " decided on the probe sample");
  }
  SddmmPlan plan(ctx, a.view(), F);
  HostDense<V> out(a.nnz(), 1);
  plan.run(x.view(), b.view(), out.mut());
  HostDense<double> want(a.nnz(), 1), bound(a.nnz(), 1);
  sddmm(oracle(), to_double(a).view(), to_double(x).view(), to_double(b).view(), want.mut(),
        {oracle_variant(SPARSEPORT_OP_SDDMM)});
  sddmm(oracle(), to_double(a, true).view(), to_double(x, true).view(), to_double(b, true).view(), bound.mut(),
        {oracle_variant(SPARSEPORT_OP_SDDMM)});
  expect_close16(out, want, bound, [&](int64_t) { return F + 2; }, "SddmmPlan decided on the probe sample");
}

TEST(Values16Path, PlansDecidedOnTheProbeSampleSliceSixteenBitMatrices) {
  sparseport_test::TempDir cache;
  const sparseport_test::ScopedEnv dir("SPARSEPORT_CACHE_DIR", cache.path.c_str());
  const sparseport_test::ScopedEnv mode("SPARSEPORT_SCHEDULER", "probe");
  const sparseport_test::ScopedEnv full("SPARSEPORT_FULL_SIZE_MS", "1e-6");
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_probe_plans<int32_t, bfloat16>(backend);
    check_probe_plans<int64_t, half>(backend);
  }
}

TEST(Values16Path, OtherPlansOnF16) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    check_other_plans<int32_t, half>(backend);
    check_other_plans<int64_t, bfloat16>(backend);
  }
}

// ---- deterministic mode -------------------------------------------------------------------------

TEST(Values16Path, DeterministicModeRunsADeterministicVariant) {
  for (const std::string& backend : cpu_backends()) {
    SCOPED_TRACE("backend " + backend);
    Context ctx = Context::create(backend);
    ctx.set_deterministic(true);
    const PluginInfo& p = ctx.plugin();
    const HostCsr<int32_t, bfloat16> a = test_matrix<int32_t, bfloat16>(case_seed("values16_path/deterministic"));
    std::mt19937_64 rng(case_seed("values16_path/deterministic/dense"));
    const HostDense<bfloat16> b = random16<bfloat16>(a.cols, 7, 7, rng);
    HostDense<bfloat16> c(a.rows, 7), again(a.rows, 7);
    spmm(ctx, a.view(), b.view(), c.mut());
    expect_decision16(p, SPARSEPORT_OP_SPMM, "spmm");
    const Decision d = last_decision();
    const VariantInfo* v = variant_info(p, SPARSEPORT_OP_SPMM, d.variant);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->is_deterministic) << d.variant << " ran in deterministic mode";
    spmm(ctx, a.view(), b.view(), again.mut());
    EXPECT_TRUE(same_bits(c, again));
    expect_spmm_right(a, b, c, Reduce::sum, "C");
  }
}

}  // namespace
}  // namespace sparseport::testing
