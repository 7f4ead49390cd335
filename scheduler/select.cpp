// SPDX-License-Identifier: Apache-2.0
// The scheduler's pipeline for one call, in the order it runs (select_internal.hpp declares what
// the files share):
//   run()             select_memo.cpp      the one-shot path: a named variant, else the memo's plan
//   prepare()         here                 signatures and a cache lookup (what a Plan does at construction)
//     class_hit()     select_class.cpp     on a miss, the shape class's decision (checked until it has held);
//                                          on host memory first, unsigned, when the cache holds no
//                                          decision of the matrix's shape
//   execute()         here                 16-bit values: a native variant, else float32 copies
//   execute_native()  here                 decides on a cache miss, checks once, runs the variant:
//     decide()        select_decide.cpp    stages 1-4: features, model, timing, guardrail; recorded
//     check()         select_check.cpp     stage 5: a probe-sample choice timed once at full size
//     class_learn()   select_class.cpp     a member's final decision teaches its shape class
//   run_via_f32()     select_via_f32.cpp   the float32 path, and whether it beats the native variant
// Which variants apply, the static choice and the vendor: select_variants.cpp.
#include "scheduler/select.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/cache.hpp"
#include "scheduler/options.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/shape_class.hpp"
#include "scheduler/signature.hpp"
#include "scheduler/summary.hpp"
#include "scheduler/timing.hpp"
#include "scheduler/values16.hpp"
#include "sparseport/errors.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

std::shared_ptr<PlanState> prepare(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                   const void* args, const SchedulerOptions& given, bool check_indices) {
  const Clock::time_point t0 = Clock::now();
  auto p = std::make_shared<PlanState>();
  p->plugin = &plugin;
  p->exec = exec;
  p->op = op;
  p->opt = resolve(given);
  p->info = problem_info(op, args);
  if (!p->info.scheduled || p->opt.mode == SchedulerMode::off || !offers_choice(plugin, op)) {
    p->decided = true;
    p->decision.source = p->opt.mode == SchedulerMode::off ? "off" : "single";
    p->decision.reason = p->opt.mode == SchedulerMode::off ? "SPARSEPORT_SCHEDULER=off: the default variant"
                                                           : "one variant offered for this op";
    return p;
  }
  const DeviceSignature& dev = device_signature(plugin, exec);
  const double t_signature = since(t0);
  p->versions = dev.versions_text();
  const sparseport_csr* csr = csr_of(op, args);
  const bool looks_up = p->opt.mode == SchedulerMode::automatic || p->opt.mode == SchedulerMode::replay;
  // A matrix in host memory whose shape no recorded decision has (a GNN's sampled subgraph, a new
  // time step's matrix) cannot hit the exact key: its shape class decides before its signature is
  // hashed, and a class replayed unchecked never hashes it (the hash of 50k row pointers was half
  // of a sampled subgraph's class decision, 95 of 200 us). In device memory the indices are checked
  // in the signature's pass, before anything reads A by them: there the shape only spares the exact
  // lookup, and the class's row lengths ride on that pass (below). Every other path signs first.
  const bool device = plugin.table->memory_space == SPARSEPORT_MEMORY_DEVICE;
  bool exact_possible = true;
  double shape_s = 0;                // the exact-shape question (the log lines' split)
  double summary_s = 0, t_call = 0;  // the operand summary stage, and the summary call alone
  // Whether the cache holds any decision of A's shape (the start of graph_signature's text; no
  // snprintf on a hit's path: signature.cpp, hex64). A "no" may come from this process's look at
  // the file within the last kRecentCheckSeconds (cache.hpp): the next sampled subgraph of a
  // mini-batch loop asks nothing of the file (its fstat was a fifth of a class decision); a shape
  // another process recorded meanwhile is seen that much later, which costs a class or cold
  // decision, never a result.
  const auto ask_shape = [&] {
    const Clock::time_point ts = Clock::now();
    const std::string shape = dev.hash + "/csr" + std::to_string(csr->rows) + "x" + std::to_string(csr->cols) + ":" +
                              std::to_string(csr->nnz) + ":";
    exact_possible = CacheFile(p->opt.cache_dir).holds_prefix(shape, true);
    p->cache_read = true;
    shape_s = since(ts);
  };
  if (csr != nullptr && looks_up && !device) {
    ask_shape();
    if (!exact_possible && class_hit(*p, *csr, args, dev.hash) && !p->verify_pending) {
      if (p->opt.log) {
        char took[160];
        std::snprintf(took, sizeof took, " [%.0f us: options and device signature %.0f, shape question %.0f, class %.0f; not signed]",
                      since(t0) * 1e6, t_signature * 1e6, shape_s * 1e6, (since(t0) - t_signature - shape_s) * 1e6);
        log(p->opt, label(*p) + ": class -> " + p->decision.variant + " (" + p->decision.reason + ")" + took);
      }
      p->cache_read = false;
      p->decision.decide_seconds = since(t0);
      return p;
    }
  }
  sparseport_csr_summary summary{};
  // Device memory: A's row lengths (class_summary_bits: DEGREES, or FEATURES from an older plugin)
  // come in the signature's pass wherever a shape class may decide, whether or not the cache holds
  // A's shape, because the summary is made before the shape question: a kernel launched right after
  // the caller's last GPU call costs the host less than one launched after the question's string,
  // file and map work (H100, sampled subgraphs of 50k entries: the launch took 24.8 us against 30.7,
  // the class decision 77-87 us against 94-102, the arms alternating;
  // benchmarks/results/2026-12-06-h100-decision-steps.md). The row lengths cost an exact hit little
  // GPU time (one histogram count a row).
  const bool with_features = device && csr != nullptr && class_applies(*p);
  try {
    const Clock::time_point ts = Clock::now();
    // CSR ops: the signature is hashed where the operand lives (no copy of rowptr); index ops read
    // a sample of their index array.
    if (csr != nullptr) {
      // With the row lengths and the index check in the same pass: one launch and one
      // synchronisation fewer (a sampled subgraph's class decision on an H100 was two summaries, 101
      // us a batch against its 24 us spmm). The features pass reads no further than the arrays
      // whatever the indices hold (kernels/cuda/summary.cu), and a violation found here ends the
      // preparation before anything uses them.
      const Clock::time_point tc = Clock::now();
      summary = summarize(plugin, exec, *csr,
                          SPARSEPORT_SUMMARY_SIGNATURE | (check_indices ? SPARSEPORT_SUMMARY_CHECK : 0u) |
                              (with_features ? class_summary_bits(plugin) : 0u));
      t_call = since(tc);
      const sparseport_csr_summary& s = summary;
      if (check_indices && s.index_checked != 0) p->index_problem = s.index_problem;
      if (p->index_problem > 0) {
        // Nothing may read A by its indices now (no features, no probe): the caller reports it.
        p->decided = true;
        p->decision = {};
        p->decision.source = "unscheduled";
        p->decision.reason = "the index check found invalid contents in A";
        p->cache_read = false;
        return p;
      }
      p->graph = graph_signature(s);
    } else
      p->structure = read_structure(plugin, exec, op, args);
    summary_s = since(ts);
  } catch (const Error& e) {
    // Unreadable sparse operand (e.g. host pointers given to a GPU backend): do not decide; the
    // op's own checks then report the argument precisely.
    p->decided = true;
    p->decision = {};
    p->decision.source = "unscheduled";
    p->decision.reason = std::string("could not read the sparse operand: ") + e.what();
    log(p->opt, std::string(op_name(op)) + "[" + plugin.name + "]: " + p->decision.reason);
    p->cache_read = false;
    return p;
  }
  if (csr != nullptr && looks_up && device) ask_shape();
  if (p->graph.empty()) p->graph = graph_signature(p->structure);
  p->key = dev.hash + "/" + p->graph + "/" + op_name(op) + "/F" + std::to_string(p->info.features) + "/" +
           type_suffix(p->info);
  // Deterministic mode decides among other variants: its decisions never replay in default mode,
  // nor default-mode decisions in it. So does TF32 consent where the backend has a TF32 variant of
  // the op: a decision made without consent is not replayed with it, nor the reverse.
  if (deterministic(exec)) p->key += "/deterministic";
  if (tf32_in_play(plugin, op, exec)) p->key += "/tf32";
  if (p->decided) {
    // The shape class decided above and checks this member at full size (check() records it under
    // the key just made).
    if (p->opt.log) log(p->opt, label(*p) + ": class -> " + p->decision.variant + " (" + p->decision.reason + ")");
  } else if (looks_up) {
    bool stale = false;
    const Clock::time_point tl = Clock::now();
    std::shared_ptr<const Record> hit;  // this process's copy of the record, shared (not copied per hit)
    if (exact_possible) hit = CacheFile(p->opt.cache_dir).lookup_shared(p->key, p->versions, &stale, !p->cache_read);
    const double lookup_s = since(tl), t_lookup = since(t0);
    // An entry naming a variant the backend no longer offers (one since retired) is not replayed,
    // nor a deterministic-mode entry naming a variant no longer flagged deterministic, nor one
    // naming a TF32 variant without consent (one flagged TF32 since it was recorded).
    if (hit && !offers(plugin, op, field(*hit, "variant"))) {
      log(p->opt, label(*p) + ": ignored a cached decision for " + field(*hit, "variant") + ", which backend '" +
                      plugin.name + "' no longer offers");
      hit.reset();
    }
    if (hit && !may_run(plugin, op, field(*hit, "variant"), exec)) hit.reset();
    if (stale) log(p->opt, label(*p) + ": ignored cached decisions made under other versions (now " + p->versions + ")");
    if (hit) {
      const Record& r = *hit;
      p->decided = true;
      p->decision.variant = field(r, "variant");
      p->decision.vendor = field(r, "vendor");
      p->decision.source = p->opt.mode == SchedulerMode::replay ? "replay" : "cache hit";
      p->decision.reason = "replayed: " + field(r, "reason");
      p->decision.verified = field(r, "verified") == "true";
      p->decision.reverted = field(r, "reverted") == "true";
      // A hit recorded before its full-size check (the process ended first) still gets one, except
      // in deterministic mode, which keeps timings out of its choices.
      p->verify_pending = !p->decision.verified && p->opt.mode == SchedulerMode::automatic && !deterministic(exec);
      // Nothing of this matrix is built in this process yet: a variant whose build its expected
      // calls do not repay gives way to the vendor (the record stays, for plans that expect more).
      if (const std::optional<std::string> why = amortised(r, p->opt.expected_calls)) {
        p->decision.variant = p->decision.vendor;
        p->decision.reason = "replayed; " + *why + " (recorded: " + field(r, "reason") + ")";
        p->verify_pending = false;
      }
      if (p->opt.log) {  // the line's strings are not built unless printed (they cost a hit 10-20 us)
        char took[240];
        std::snprintf(took, sizeof took,
                      " [%.0f us: options and device signature %.0f, shape question %.0f, operand summary %.0f (its call %.0f), "
                      "cache lookup %.0f]",
                      since(t0) * 1e6, t_signature * 1e6, shape_s * 1e6, summary_s * 1e6, t_call * 1e6, lookup_s * 1e6);
        log(p->opt, label(*p) + ": " + p->decision.source + " -> " + p->decision.variant + " (" + field(r, "reason") + ")" + took);
      }
    } else if ((exact_possible || device) && csr != nullptr && (!check_indices || p->index_problem == 0) &&
               class_hit(*p, *csr, args, dev.hash, with_features ? &summary : nullptr)) {
      // Features are read only from an operand whose indices are known good (checked with the
      // signature here, or by the caller before a one-shot call).
      if (p->opt.log) {
        char took[240];
        std::snprintf(took, sizeof took,
                      " [%.0f us: options and device signature %.0f, shape question %.0f, operand summary %.0f (its call %.0f), "
                      "exact lookup %.0f, class %.0f]",
                      since(t0) * 1e6, t_signature * 1e6, shape_s * 1e6, summary_s * 1e6, t_call * 1e6, lookup_s * 1e6,
                      (since(t0) - t_lookup) * 1e6);
        log(p->opt, label(*p) + ": class -> " + p->decision.variant + " (" + p->decision.reason + ")" + took);
      }
    } else if (p->opt.mode == SchedulerMode::replay) {
      p->decided = true;
      p->decision.source = "replay miss";
      p->decision.reason = "SPARSEPORT_SCHEDULER=replay and no cached decision: the vendor variant";
      log(p->opt, label(*p) + ": replay miss: no cached decision, using the vendor variant");
    }
  }
  if (p->decided) p->structure = {};
  p->cache_read = false;  // later lookups (class_learn's, check()'s) read what grew meanwhile
  p->decision.decide_seconds = since(t0);
  return p;
}

void warm_up(const PluginInfo& plugin, const sparseport_exec& exec) noexcept {
  try {
    const SchedulerOptions o = resolve({});
    if (o.mode == SchedulerMode::off) return;
    const DeviceSignature& dev = device_signature(plugin, exec);  // memoised: made just before
    static const int32_t rowptr[] = {0, 1, 3}, colind[] = {1, 0, 1};
    const sparseport_csr tiny{2, 2, 3, rowptr, colind, nullptr, SPARSEPORT_I32, SPARSEPORT_F32};
    const sparseport_csr_summary s = summarize_host(tiny, SPARSEPORT_SUMMARY_SIGNATURE);
    (void)degree_summary(tiny);
    const CacheFile cache(o.cache_dir);
    cache.preload(dev.hash + "/");  // this device's keys
    (void)cache.holds_prefix(dev.hash + "/" + graph_signature(s));
  } catch (...) {
    // Warming is optional: the first decision does what was skipped and reports any failure.
  }
}

// The plan behind the thread's last call: a weak reference per call instead of copying the
// decision's strings on the hot path; last_decision() copies it under the plan's lock. Weak, so
// that it keeps nothing alive: a plan dropped by its owner (the memo cleared, a Plan or a Context
// destroyed) frees its memory then, float32 copies of 16-bit operands included, and not at this
// thread's next call through a state that may be gone by then (issue 34).
thread_local std::weak_ptr<PlanState> g_last;

void remember_last(const std::shared_ptr<PlanState>& plan) {
  if (g_last.owner_before(plan) || plan.owner_before(g_last)) g_last = plan;
}

Decision last_decision() {
  const std::shared_ptr<PlanState> p = g_last.lock();
  if (p == nullptr) return {};
  std::lock_guard<std::mutex> lock(p->mu);
  return p->decision;
}

namespace {

// Runs the plan's native choice; returns the variant that ran.
std::string execute_native(const std::shared_ptr<PlanState>& plan, const void* args, const std::string& where) {
  PlanState& p = *plan;
  remember_last(plan);
  std::lock_guard<std::mutex> lock(p.mu);
  const PluginInfo& plugin = *p.plugin;
  std::string variant = p.decision.variant;
  // Fast path (every call after the first): the decided variant still applies.
  if (!(p.decided && !p.verify_pending && !variant.empty() && applies(plugin, p.op, variant, args, nullptr))) {
    const std::vector<std::string> applicable = applicable_variants(plugin, p.op, args, p.exec);
    if (applicable.empty()) (void)select_in(plugin, p.op, args, {}, where, p.exec);  // throws, listing every reason
    if (!p.decided) {
      p.verify_pending = true;
      decide(p, args, applicable);  // clears verify_pending unless a probe-sample decision needs a check
      p.decided = true;
      p.structure = {};
      if (!p.verify_pending) class_learn(p);  // else check() does, once the variant is final
    }
    if (p.decision.source == "off" || p.decision.source == "single" || p.decision.source == "unscheduled") {
      variant = select_in(plugin, p.op, args, {}, where, p.exec);
    } else if (p.decision.variant.empty() || !applies(plugin, p.op, p.decision.variant, args, nullptr)) {
      // Replay miss, or a decision that does not apply to these operands (e.g. alignment): vendor.
      variant = vendor_of(plugin, p.op, applicable);
      if (!p.decision.variant.empty())
        log(p.opt, label(p) + ": " + p.decision.variant + " does not apply to this call's operands; ran " + variant);
      if (p.decision.variant.empty()) p.decision.vendor = p.decision.variant = variant;  // report what ran
    } else {
      variant = p.decision.variant;
    }
    if (p.verify_pending && variant == p.decision.variant) {
      check(p, args, where);
      return variant;  // verify's last call was the final variant: the output is written
    }
    if (p.output_written) {
      p.output_written = false;
      if (variant == p.decision.variant) return variant;  // the decision's last timed call was the op's
    }
  }
  sparseport_status st{};
  const sparseport_exec exec = p.exec;
  if (call_slot(plugin.table, p.op, exec, variant, args, &st) != SPARSEPORT_OK)
    detail::throw_status(st, where + "/" + variant);
  return variant;
}

}  // namespace

void execute(const std::shared_ptr<PlanState>& plan, const void* args, const std::string& where) {
  PlanState& p = *plan;
  const int32_t value_type = args_value_type(p.op, args);
  if (!is_values16(value_type)) {
    (void)execute_native(plan, args, where);
    return;
  }
  // 16 bits: a native variant when one takes them and is faster than the float32 path.
  if (p.via_f32 < 0 &&
      applicable_variants(*p.plugin, p.op, args, p.exec).empty()) {
    p.via_f32 = 1;
    log(p.opt, std::string(op_name(p.op)) + "[" + p.plugin->name + "]: no variant takes " +
                   name(static_cast<ValueType>(value_type)) + " values for this input: float32 copies");
  }
  if (p.via_f32 == 1) {
    run_via_f32(plan, args, {}, where);
    return;
  }
  const std::string native = execute_native(plan, args, where);
  if (p.via_f32 < 0) decide_via(plan, args, native, where);
}

// Shared by the stage files (select_internal.hpp).

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  return buf;
}

std::string label(const PlanState& p) {
  return std::string(op_name(p.op)) + "[" + p.plugin->name + "]" + (deterministic(p.exec) ? " deterministic" : "") +
         (tf32_in_play(*p.plugin, p.op, p.exec) ? " tf32" : "") +
         " F=" + std::to_string(p.info.features) + " " + (p.graph.empty() ? "" : p.graph);
}

const std::string& field(const Record& r, const char* name) {
  static const std::string none;
  const auto it = r.find(name);
  return it == r.end() ? none : it->second;
}

const sparseport_csr* csr_of(sparseport_op op, const void* args) {
  if (op == SPARSEPORT_OP_SPMM) return &static_cast<const sparseport_spmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_SDDMM) return &static_cast<const sparseport_sddmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_CSR_ATTENTION) return &static_cast<const sparseport_attention_args*>(args)->a;
  return nullptr;
}

}  // namespace sparseport::scheduler
