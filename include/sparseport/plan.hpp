// SPDX-License-Identifier: Apache-2.0
// Plans and the input-aware scheduler's controls (DESIGN.md section 4).
//
// A plan binds one sparse operand (and F) to a context once: its graph signature is hashed, the
// decision cache is consulted, and when that misses, the first run() probes the candidate
// variants on a degree-stratified sample of rows and accepts a native one only if it beats the
// backend's vendor variant by the guardrail factor alpha. That first run also times the chosen
// variant against the vendor at full size once and reverts a decision that loses. Every later
// run() does no hashing, no probing and no O(nnz) validation: it checks the dense operands' shapes
// and calls the chosen variant. The one-shot functions of ops.hpp keep an internal plan per
// (backend context, sparse operand address, shape, F, types), so repeated one-shot calls on the
// same arrays replay the decision too.
//
// A plan keeps the views it was given: the sparse arrays must stay alive and unchanged while the
// plan is used (a matrix rebuilt at the same address is served the old decision, which is still
// correct, only possibly slower).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/context.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/views.hpp"

namespace sparseport {

enum class SchedulerMode {
  from_env,   // SPARSEPORT_SCHEDULER, default auto
  automatic,  // auto: replay a cached decision, else features + model (+ timing where it is unsure) + guardrail, cached
  off,        // the backend's default variant (no signatures, no cache, no probe)
  probe,      // always a cold decision as auto makes it (ignores cached decisions), then cache the result
  replay,     // only cached decisions; a miss runs the vendor variant and says so
  model,      // a cold decision from the learned model's (or the estimate's) ranking alone: no timing, no check
};
const char* name(SchedulerMode m);  // "auto", "off", "probe", "replay", "model"

// Zero / empty / from_env fields take the environment's value, else the default shown.
struct SchedulerOptions {
  SchedulerMode mode = SchedulerMode::from_env;
  double probe_frac = 0;       // SPARSEPORT_PROBE_FRAC, 0.03: fraction of rows in the probe sample
  int64_t min_probe_rows = 0;  // 512: the sample never has fewer rows (unless the matrix has fewer)
  double alpha = 0;            // SPARSEPORT_ALPHA, 0.95: native accepted iff t_native <= alpha * t_vendor
  int top_k = 0;               // SPARSEPORT_TOPK, 3: native variants the estimate sends to the probe
  int64_t hub_threshold = 0;   // SPARSEPORT_HUB_T, 256: the degree above which a row counts as a hub (as spmm.hub_split)
  int probe_repeats = 0;       // SPARSEPORT_PROBE_REPEATS, 5: timed repeats per candidate (median)
  double full_size_ms = 0;     // SPARSEPORT_FULL_SIZE_MS, 2.5: candidates predicted faster than this are timed at
                               // full size (within the cold-decision budget), slower ones on the probe sample
  std::string cache_dir;       // SPARSEPORT_CACHE_DIR, else ~/.cache/sparseport
  int class_checks = 0;        // SPARSEPORT_CLASS_CHECKS, 3: full-size checks a shape class's variant must pass
                               // before its members replay it unchecked; negative (or the variable 0): no classes
  // SPARSEPORT_EXPECTED_CALLS, 0 = many: the calls this plan (or a one-shot call's operands) is
  // expected to serve. A variant's first call on a matrix can build per-matrix state (tc_window's
  // format, hub_split's partition) that later calls reuse. A decision replayed where that state is
  // not yet built (a cache hit in a new process, a shape class's member) then ranks its variant and
  // the vendor by steady time + build time / expected_calls, from the times its record kept, and runs
  // the vendor where the variant's build would not be repaid. Where the decision is made, every timed
  // candidate's build is already spent, so there it ranks by steady time alone.
  int64_t expected_calls = 0;
  bool log = false;            // or SPARSEPORT_LOG containing "scheduler": print every decision
};

// How the variant that runs was chosen.
struct Decision {
  std::string variant;  // the variant that runs ("" until a plan's first run when it must probe)
  std::string vendor;   // the guardrail's reference: the vendor variant, else the plain variant
  std::string source;   // "requested", "off", "single", "timed", "probe", "model", "estimate", "cache hit",
                        // "class" (the shape class's variant: another matrix of this shape decided it),
                        // "replay", "replay miss", "unscheduled"
  std::string reason;   // one sentence: why this variant
  bool verified = false;  // timed against the vendor at full size
  bool reverted = false;  // the probe's choice lost at full size; variant is now the vendor
  double decide_seconds = 0;  // wall time spent deciding (signatures, cache, probe, verification)

  // What a cold decision read, predicted and measured (empty on a cache hit), for the log,
  // `sparseport tune` and training data. Times in milliseconds; negative = not predicted/measured.
  struct Candidate {
    std::string variant;
    double predicted_ms = -1;  // the learned model's prediction (with the transfer correction)
    double estimate_ms = -1;   // the hand-written roofline estimate
    double measured_ms = -1;   // measured at full size (exact timing or the full-size check)
    double probe_ms = -1;      // measured on the probe sample
    double build_ms = -1;      // its first full-size call's time beyond a steady call's: the per-matrix
                               // state it builds (and, in a new process, its kernels' first load)
  };
  std::vector<Candidate> candidates;                  // every applicable variant, best predicted first
  std::vector<std::pair<std::string, double>> inputs;  // the model's inputs by name ("f:log2_nnz" ...)
  double floor_ms = 0;    // the problem's roofline floor (the model predicts multiples of it)
  std::string device_class;  // "cuda-sm90", "openmp-x86_64" ...: which shipped model is this device's own
  std::string model;      // which model ranked ("own (cuda-sm90)", "nearest: ...", "" = the estimate)
  bool model_alone = false;  // the model's lead exceeded its measured error: no timing
  double lead = 0;        // predicted log2(t(second) / t(best)); the model decides alone above its margin
  std::string timing;     // "none", "full size", "single calls at full size", "probe sample"
  // 16-bit values (f16, bf16) ran as float32 copies: no variant takes them for this input, or the
  // float32 path measured faster than the best native 16-bit variant. variant then names the
  // float32 variant that ran.
  bool via_f32 = false;
};

namespace detail {
struct PlanState;
}

// C = alpha * reduce(A B) + beta * C for a fixed A (m x k) and F.
class SpmmPlan {
 public:
  SpmmPlan(const Context& ctx, const CsrView& a, int64_t features, const SpmmOptions& opt = {},
           const SchedulerOptions& sched = {});
  void run(const DenseView& b, const DenseMutView& c);
  const Decision& decision() const;

 private:
  Context ctx_;
  CsrView a_;
  int64_t features_;
  SpmmOptions opt_;
  std::shared_ptr<detail::PlanState> state_;
};

// out[e] = A.val[e] * dot(X[row(e)], Y[col(e)]) for a fixed A and F.
class SddmmPlan {
 public:
  SddmmPlan(const Context& ctx, const CsrView& a, int64_t features, const OpOptions& opt = {},
            const SchedulerOptions& sched = {});
  void run(const DenseView& x, const DenseView& y, const DenseMutView& out);
  const Decision& decision() const;

 private:
  Context ctx_;
  CsrView a_;
  int64_t features_;
  OpOptions opt_;
  std::shared_ptr<detail::PlanState> state_;
};

// csr_attention for a fixed pattern A and F (the width of Q and K).
class AttentionPlan {
 public:
  AttentionPlan(const Context& ctx, const CsrView& a, int64_t features, const AttentionOptions& opt = {},
                const SchedulerOptions& sched = {});
  void run(const DenseView& q, const DenseView& k, const DenseView& v, const DenseMutView& out);
  const Decision& decision() const;

 private:
  Context ctx_;
  CsrView a_;
  int64_t features_;
  AttentionOptions opt_;
  std::shared_ptr<detail::PlanState> state_;
};

// gather_scatter for fixed edges (dst sorted) and F.
class GatherScatterPlan {
 public:
  GatherScatterPlan(const Context& ctx, const CooView& edges, int64_t features, const ReduceOptions& opt = {},
                    const SchedulerOptions& sched = {});
  void run(const DenseView& x, const DenseMutView& out);
  const Decision& decision() const;

 private:
  Context ctx_;
  CooView edges_;
  int64_t features_;
  ReduceOptions opt_;
  std::shared_ptr<detail::PlanState> state_;
};

// ---- the decision cache and signatures (for tools such as `sparseport cache`) -----------------

// The JSON-lines file decisions are kept in (under opt.cache_dir or the environment's).
std::string decision_cache_file(const SchedulerOptions& opt = {});
// Every well-formed line of the cache file, in file order (corrupt lines are skipped, warning once).
std::vector<std::string> decision_cache_lines(const SchedulerOptions& opt = {});
// Removes the cache file; returns the number of entries it held.
size_t clear_decision_cache(const SchedulerOptions& opt = {});
// The decision behind the calling thread's most recent scheduled op call (one-shot or plan);
// empty variant when none ran yet, or when the plan that made it is gone (a Plan destroyed, the
// one-shot memo cleared, its Context destroyed): it holds no plan's memory alive. Lets tools report
// what "auto" chose.
Decision last_decision();
// Forgets the one-shot functions' internal plans (the next one-shot call decides afresh) and which
// device index arrays were already checked (the next call checks them again).
void clear_plan_memo();

// The context's device signature as "key=value" lines (hardware, then *_version keys, including
// library_version and abi_version), then "hash=..." (hardware keys only; versions are checked
// separately so that a driver update invalidates decisions rather than hiding them).
std::string device_signature(const Context& ctx);

}  // namespace sparseport
