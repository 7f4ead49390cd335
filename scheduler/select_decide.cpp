// SPDX-License-Identifier: Apache-2.0
// A cold decision (a plan whose cache missed): stages 1-4 in order, and the record each decision
// leaves in the cache.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <unistd.h>

#include "scheduler/cache.hpp"
#include "scheduler/check.hpp"
#include "scheduler/estimate.hpp"
#include "scheduler/features.hpp"
#include "scheduler/guardrail.hpp"
#include "scheduler/model.hpp"
#include "scheduler/options.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/signature.hpp"
#include "scheduler/summary.hpp"
#include "scheduler/timing.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

namespace {

std::string now_iso() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  // gmtime_r, not gmtime: threads deciding at once shared gmtime's one static result (ThreadSanitizer,
  // the tsan preset's ExitAfterOp and CacheStress runs).
  std::tm utc{};
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &utc));
  return buf;
}

// The machine deterministic mode ranks variants for: the device's hardware, with a CPU backend's
// `threads` (the context's thread count, a launch setting) replaced by its hardware threads, so
// that the choice, and with it the bits, is the same for any thread count.
Machine deterministic_machine(const PluginInfo& plugin, const sparseport_exec& exec) {
  DeviceSignature sig = device_signature(plugin, exec);
  const std::string hardware_threads = sig.value("hardware_threads");
  if (!hardware_threads.empty())
    for (auto& [key, value] : sig.hardware)
      if (key == "threads") value = hardware_threads;
  return machine(sig);
}

std::string candidates_text(const std::vector<Decision::Candidate>& cs) {
  std::string t;
  char buf[160];
  for (const Decision::Candidate& c : cs) {
    std::snprintf(buf, sizeof buf, "%s%s predicted %.4g ms, estimate %.4g ms", t.empty() ? "" : "; ", c.variant.c_str(),
                  c.predicted_ms, c.estimate_ms);
    t += buf;
    if (c.probe_ms >= 0) std::snprintf(buf, sizeof buf, ", probe %.4g ms", c.probe_ms), t += buf;
    if (c.measured_ms >= 0) std::snprintf(buf, sizeof buf, ", measured %.4g ms", c.measured_ms), t += buf;
    if (c.build_ms >= 0) std::snprintf(buf, sizeof buf, ", build %.4g ms", c.build_ms), t += buf;
  }
  return t;
}

Decision::Candidate* candidate(PlanState& p, const std::string& v) {
  for (Decision::Candidate& c : p.decision.candidates)
    if (c.variant == v) return &c;
  return nullptr;
}

}  // namespace

Record base_record(const PlanState& p) {
  Record r{{"schema", std::to_string(kCacheSchema)},
          {"key", p.key},
          {"versions", p.versions},
          {"graph", p.graph},
          {"op", op_name(p.op)},
          {"backend", p.plugin->name},
          {"F", std::to_string(p.info.features)},
          {"types", type_suffix(p.info)},
          {"variant", p.decision.variant},
          {"vendor", p.decision.vendor},
          {"source", p.decision.source},
          {"reason", p.decision.reason},
          {"verified", p.decision.verified ? "true" : "false"},
          {"reverted", p.decision.reverted ? "true" : "false"},
          {"decided_at", now_iso()},
          {"pid", std::to_string(::getpid())},
          {"deterministic", deterministic(p.exec) ? "true" : "false"}};
  if (tf32_in_play(*p.plugin, p.op, p.exec)) r["allow_tf32"] = "true";  // the key ends in /tf32
  if (!p.class_key.empty()) r["class"] = p.class_key;
  // The chosen variant's and the vendor's steady and build times, where all four were measured at
  // full size: what a replay weighs against the plan's expected calls (amortised()).
  const auto at = [](const std::map<std::string, double>& times, const std::string& v) {
    const auto it = times.find(v);
    return it == times.end() ? -1.0 : it->second;
  };
  const auto steady = [&](const std::string& v) { return at(p.full_size_s, v); };
  const auto build = [&](const std::string& v) { return at(p.build_s, v); };
  const std::string &v = p.decision.variant, &vendor = p.decision.vendor;
  if (v != vendor && steady(v) >= 0 && build(v) >= 0 && steady(vendor) >= 0 && build(vendor) >= 0) {
    char buf[32];
    const auto put = [&](const char* name, double s) {
      std::snprintf(buf, sizeof buf, "%.6g", s * 1e3);
      r[name] = buf;
    };
    put("steady_ms", steady(v));
    put("build_ms", build(v));
    put("vendor_steady_ms", steady(vendor));
    put("vendor_build_ms", build(vendor));
  }
  return r;
}

std::optional<std::string> amortised(const Record& r, int64_t expected_calls) {
  if (expected_calls <= 0) return std::nullopt;  // the default: a cache hit looks nothing up here
  const std::string &variant = field(r, "variant"), &vendor = field(r, "vendor");
  if (variant.empty() || variant == vendor || field(r, "build_ms").empty() || field(r, "vendor_build_ms").empty())
    return std::nullopt;
  const auto number = [&](const char* name) { return std::atof(field(r, name).c_str()); };
  const double calls = static_cast<double>(expected_calls);
  const double mine = number("steady_ms") + number("build_ms") / calls;
  const double theirs = number("vendor_steady_ms") + number("vendor_build_ms") / calls;
  if (mine <= theirs) return std::nullopt;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "over the %lld expected call(s), %s's build of %.4g ms makes it %.4g ms a call against %s's %.4g ms "
                "(build %.4g ms): the vendor runs",
                static_cast<long long>(expected_calls), variant.c_str(), number("build_ms"), mine, vendor.c_str(),
                theirs, number("vendor_build_ms"));
  return std::string(buf);
}

void store(const PlanState& p, Record r) {
  // A read-only, full or unsafe cache costs a re-probe next time, never a failed op: try_append warns
  // once per reason; the log says it at every decision.
  std::string why;
  if (!CacheFile(p.opt.cache_dir).try_append(r, &why)) log(p.opt, label(p) + ": decision not cached: " + why);
}

// A full-size measurement: kept in the decision and, when the model is not this device's own,
// recorded for the transfer correction (model.hpp).
void measured(PlanState& p, const std::string& v, double seconds) {
  if (seconds < 0) return;
  p.full_size_s[v] = seconds;
  if (Decision::Candidate* c = candidate(p, v)) c->measured_ms = seconds * 1e3;
  if (p.transfer && !deterministic(p.exec)) {
    auto it = p.raw_prediction.find(v);
    if (it != p.raw_prediction.end())
      record_measurement(p.opt.cache_dir, p.device_hash, op_name(p.op), v,
                         std::log2(seconds / p.floor_s) - it->second);
  }
}

void built(PlanState& p, const std::string& v, double first_seconds) {
  const auto steady = p.full_size_s.find(v);
  if (first_seconds < 0 || steady == p.full_size_s.end()) return;
  const double b = std::max(first_seconds - steady->second, 0.0);
  p.build_s[v] = b;
  if (Decision::Candidate* c = candidate(p, v)) c->build_ms = b * 1e3;
}

// The time a cold decision of an input under 1M entries may take in all (issue 35): the full-size
// timing gets what the features and the model leave of it.
constexpr double kColdDecisionSeconds = 5e-3;

// Stages 1-4 (DESIGN.md section 4, steps 2-5 and 7) for a plan whose cache missed: features, the
// model's ranking, timing where the model is not sure (at full size where that fits the budget,
// else on the probe sample), the guardrail.
void decide(PlanState& p, const void* args, const std::vector<std::string>& applicable) {
  const Clock::time_point t0 = Clock::now();
  const bool det = deterministic(p.exec);
  Decision& d = p.decision;
  d.vendor = vendor_of(*p.plugin, p.op, applicable);
  if (applicable.size() == 1) {
    d.variant = d.vendor;
    d.source = "single";
    d.reason = "only " + d.vendor + " applies";
    d.decide_seconds += since(t0);
    return;
  }

  // 1. Features: one pass over the operand where it lives.
  const sparseport_csr* csr = csr_of(p.op, args);
  // (Already read when the shape class was looked up.)
  const Features f = p.features        ? *p.features
                     : csr != nullptr ? features_of(summarize(*p.plugin, p.exec, *csr, SPARSEPORT_SUMMARY_SIGNATURE |
                                                                                        SPARSEPORT_SUMMARY_FEATURES),
                                                    p.info, p.opt.hub_threshold)
                                      : features_of(p.structure, p.info, p.opt.hub_threshold);
  const double t_features = since(t0);

  // 2. The model ranks (the hand-written estimate where no model predicts; model.hpp).
  const DeviceSignature& dev = device_signature(*p.plugin, p.exec);
  const Machine m = det ? deterministic_machine(*p.plugin, p.exec) : machine(dev);
  p.floor_s = floor_seconds(m, f, p.info);
  p.device_hash = dev.hash;
  d.floor_ms = p.floor_s * 1e3;
  d.inputs = inputs(f, p.info, m, p.floor_s);
  const std::vector<Estimate> est = estimate(m, f, p.info, applicable);
  d.device_class = device_class(p.plugin->name, dev);
  Ranking ranked = rank(op_name(p.op), applicable, est, d.inputs, p.floor_s, d.device_class, dev.hash,
                        p.opt.cache_dir, det);
  d.candidates = std::move(ranked.candidates);
  d.model = ranked.model;
  d.lead = ranked.lead;
  d.model_alone = ranked.confident;
  p.raw_prediction = std::move(ranked.raw);
  p.transfer = ranked.transfer;
  const auto key = [](const Decision::Candidate& c) { return c.predicted_ms; };
  const double t_best = key(d.candidates.front()) * 1e-3;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %s predicted %.4g ms, lead %.2f (margin %.2f)", d.model.c_str(),
                d.candidates[0].variant.c_str(), t_best * 1e3, d.lead, ranked.margin);
  const std::string ranking = buf;
  const double t_model = since(t0);

  double t_sample = -1;  // building the probe sample, where one was built
  const auto finish = [&](const std::string& variant, const std::string& source, const std::string& reason) {
    d.variant = variant;
    d.source = source;
    d.reason = reason;
    const double t_all = since(t0);
    d.decide_seconds += t_all;
    if (p.opt.log) {  // where the decision's time went (the check's full-size calls come after, logged apart)
      char took[200], sampled[48] = "";
      if (t_sample >= 0) std::snprintf(sampled, sizeof sampled, " (of it the probe sample %.3g)", t_sample * 1e3);
      std::snprintf(took, sizeof took, " [%.3g ms: features %.3g, model %.3g, timing and guardrail %.3g%s]", t_all * 1e3,
                    t_features * 1e3, (t_model - t_features) * 1e3, (t_all - t_model) * 1e3, sampled);
      log(p.opt, label(p) + ": " + source + " (timing: " + d.timing + ")" + took + "\n  features: " + f.text() + "\n  " +
                     ranking + "\n  candidates: " + candidates_text(d.candidates) + "\n  chose " + variant + ": " + reason);
    }
    Record r = base_record(p);
    r["features"] = f.text();
    r["candidates"] = candidates_text(d.candidates);
    r["model"] = d.model;
    store(p, r);
  };

  // The model's pick, checked against the vendor on its first full-size call as a probe's pick is
  // (stage 5: the vendor's call and the pick's, which is the op's own), with the next predicted
  // native as the runner-up, and the model's predicted times as the evidence with which the check
  // may leave the vendor's full-size call out (check.hpp): the vendor's moved two sigmas in its
  // favour.
  const auto check_the_pick = [&] {
    p.verify_pending = d.candidates.front().variant != d.vendor;
    p.runner_up.clear();
    if (!p.verify_pending) return;
    for (const Decision::Candidate& c : d.candidates)
      if (c.variant != d.vendor && c.variant != d.candidates.front().variant) {
        p.runner_up = c.variant;
        break;
      }
    for (const Decision::Candidate& c : d.candidates)
      if (c.variant == d.vendor && c.predicted_ms > 0 && d.candidates.front().predicted_ms > 0)
        p.probe = {d.candidates.front().predicted_ms * 1e-3, c.predicted_ms * 1e-3 / std::exp2(2 * ranked.sigma), 1.0,
                   p.floor_s, "by the model's prediction"};
  };

  if (det || d.model_alone || p.opt.mode == SchedulerMode::model) {
    // Deterministic mode decides from the ranking alone, a function of the device's hardware and
    // the input: the same choice, so the same bits, in every run and for any thread count (timings
    // could pick variants that round differently). SPARSEPORT_SCHEDULER=probe still times.
    if (!det || p.opt.mode != SchedulerMode::probe) {
      d.timing = "none";
      // The model's pick is checked against the vendor on its first full-size call
      // (check_the_pick): a cold decision of at most two full-size calls that never leaves a
      // variant slower than the vendor unguarded (issue 35). Unchecked, its record stayed
      // unverified and the check fell on the first cache hit of the next process (Kokkos-OpenMP:
      // 7-65 ms for a hit, kokkoskernels being 3-7x team_rows). Deterministic mode and
      // SPARSEPORT_SCHEDULER=model time nothing.
      p.verify_pending = false;
      p.runner_up.clear();
      if (d.model_alone && !det && p.opt.mode != SchedulerMode::model) check_the_pick();
      finish(d.candidates.front().variant, ranked.modelled ? "model" : "estimate",
             det ? "deterministic mode: the best predicted deterministic variant (no timing: timings could choose "
                   "differently from run to run)"
                 : (d.model_alone ? "the model's lead exceeds its measured error; no timing"
                                  : "SPARSEPORT_SCHEDULER=model: the best predicted variant, no timing"));
      return;
    }
  }

  // 3. Timing: the top-k predicted natives and the vendor. Where the predicted best is faster than
  // full_size_ms (2.5 ms, from the cold-decision budget, not tuned on any matrix: above it a warm-up
  // and a timed call of two candidates already cost about 10 ms, more than the probe sample's few
  // milliseconds), at full size: batches when they fit the budget (2 full-size calls of the
  // predicted best on a graph of 1M entries or more, else what the features and the model left of
  // the 5 ms a whole cold decision may take, issue 35), else one call each of the two best
  // predicted. Slower ops on the probe sample, checked at full size on their first call. The 5 ms
  // were the timing's alone before: with the features' 0.5-2 ms on top, half the shared matrices'
  // decisions at F = 32-128 went over 5 ms on the 2-core VM (73 of 144), and 48 of 144 with the
  // remainder, the picks within 5 % of the best as often (144 / 153 against 143 / 153; three
  // oracle runs an arm; benchmarks/results/2026-12-06-cpu-cold-vendor-blocks.md).
  // A native the model has no tree of its own for (one added after it was trained: cuda-sm90
  // predicted merge_path by nnz_balanced's tree, 2.1x too slow on rmat:20:16, until its spmm was
  // retrained with every variant's records) is timed as well, whatever its rank: its rank says
  // nothing of it (H200, rmat:22:16 F = 32: left out, the pick was 1.17x the best).
  std::vector<std::string> natives, untrained;
  for (const Decision::Candidate& c : d.candidates) {
    if (c.variant == d.vendor) continue;
    const bool unknown = std::find(ranked.untrained.begin(), ranked.untrained.end(), c.variant) != ranked.untrained.end();
    if (unknown || natives.size() < static_cast<size_t>(p.opt.top_k)) natives.push_back(c.variant);
    if (unknown) untrained.push_back(c.variant);
  }
  const double budget = f.nnz >= 1000000 ? 2 * t_best : std::max(kColdDecisionSeconds - since(t0), 0.0);
  const std::string where = label(p);
  if (t_best < p.opt.full_size_ms * 1e-3) {
    // At full size, on the caller's operands: exact, and no check needed afterwards. A warm-up and
    // a timed call each of the candidates cost about twice their number in full-size calls (the best
    // predicted goes last, and its first call alone, the op's own, settles it where it beats the
    // others: time_full_size): where that exceeds the budget (2 calls on a large graph), only the
    // two best predicted are timed.
    std::vector<std::string> timed;
    for (const Decision::Candidate& c : d.candidates)
      if (c.variant == d.vendor || std::find(natives.begin(), natives.end(), c.variant) != natives.end())
        timed.push_back(c.variant);
    double first_calls = 0;
    for (const std::string& v : timed) first_calls += 2 * key(*candidate(p, v)) * 1e-3;
    // Where the budget affords only a warm-up and one timed call each of the two best predicted,
    // both natives that a host backend's own model ranked with trees of their own: the model's
    // pick, checked against the vendor on its first call (check_the_pick), instead of the two
    // single calls. Why: one call of a 0.1-3 ms op on a shared CPU moves more than the model errs.
    // On the 2-core VM the oracle's own medians of 5 calls of the same two variants moved by up to
    // 15-37 % from one run to the next, and over the 55 decisions that took this path (the 17
    // shared matrices at F = 32, 64, 128 and 14 generated graphs at F = 32 and 128, 8 oracle runs)
    // the single calls' pick was within 5 % of the best 43 times, the model's top pick 51 times
    // (benchmarks/results/2026-12-07-s37.md). It is also cheaper: the two pairs of calls were four
    // full-size calls, the check is the vendor's one (less where the model's prediction or the
    // blocks leave it out, check.hpp). Only for a model whose held-out error of a predicted ratio
    // (sigma, log2) is under log2(1.15), the worst regret: openmp-x86_64's is 0.133, while
    // kokkos-x86_64's 0.444 (36 %) is no better than the calls it would replace.
    // Not on a device: a GPU's timed calls are events on an idle card, and the path was not
    // measured there.
    const double kTrustedSigma = std::log2(1.15);
    const bool two_natives = timed.size() >= 2 && timed[0] != d.vendor && timed[1] != d.vendor;
    if (first_calls > budget && two_natives && untrained.empty() && ranked.modelled && !ranked.transfer &&
        ranked.margin > 0 && ranked.sigma > 0 && ranked.sigma < kTrustedSigma &&
        p.plugin->table->memory_space != SPARSEPORT_MEMORY_DEVICE) {
      d.timing = "none";
      check_the_pick();
      finish(d.candidates.front().variant, "model",
             "the best predicted; one call each of the two best predicted (the budget's whole timing) would not tell "
             "apart what the model's error cannot; checked against the vendor on its first call");
      return;
    }
    if (first_calls > budget) {
      std::vector<std::string> two(timed.begin(), timed.begin() + 2);
      for (const std::string& v : untrained)
        if (std::find(two.begin(), two.end(), v) == two.end()) two.push_back(v);
      timed = std::move(two);
    }
    d.timing = first_calls > budget ? (timed.size() > 2 ? "one call each of the two best predicted and of the variants "
                                                          "the model was not trained on, at full size"
                                                        : "one call each of the two best predicted, at full size")
                                    : "full size";
    std::vector<std::pair<std::string, double>> native_times;
    double t_vendor = -1;
    const OutputGuard guard(*p.plugin, p.exec, p.op, args, where);
    LastCall last;
    for (const FullSizeTime& t : time_full_size(*p.plugin, p.exec, p.op, args, timed, 3, budget, p.opt.alpha, guard, &last)) {
      measured(p, t.variant, t.seconds);
      built(p, t.variant, t.first_seconds);
      if (t.variant == d.vendor) t_vendor = t.seconds;
      else native_times.emplace_back(t.variant, t.seconds);
    }
    p.verify_pending = false;
    d.verified = true;
    std::string variant, reason;
    if (std::find(timed.begin(), timed.end(), d.vendor) == timed.end()) {
      // The vendor was not among the two best predicted: the faster of those measured.
      const auto best = std::min_element(native_times.begin(), native_times.end(), [](auto& x, auto& y) {
        return (x.second < 0 ? 1e300 : x.second) < (y.second < 0 ? 1e300 : y.second);
      });
      variant = best->second >= 0 ? best->first : d.vendor;
      reason = timed.size() > 2 ? "the fastest of the two best predicted and the untrained at full size (the vendor "
                                  "predicted slower)"
                                : "the faster of the two best predicted at full size (the vendor predicted slower)";
    } else {
      const Verdict v = guardrail(native_times, d.vendor, t_vendor, p.opt.alpha, "at full size");
      variant = v.variant, reason = v.reason;
    }
    // Where the last call timed was the chosen variant's, on the output as the caller gave it, that
    // call was the op's own (execute_native runs no other), as the check's last call is (check.hpp).
    if (last.variant == variant) {
      p.output_written = true;
      d.decide_seconds -= last.seconds;
    } else {
      guard.restore();
    }
    finish(variant, "timed", reason);
    return;
  }

  // The probe sample: the op is too long to time at full size within the budget.
  d.timing = "probe sample";
  if (csr != nullptr && p.structure.rows == 0 && p.structure.rowptr.empty())
    p.structure = read_structure(*p.plugin, p.exec, p.op, args);
  // Where no row is more than kNarrowDegree times the mean, the sample is runs of consecutive rows
  // (the check's blocks, check.hpp) instead of rows stratified by degree: the strata exist to keep
  // hub rows at their share of the work, and without hubs the strided rows only lose the locality of
  // neighbouring rows, which made a probe call cost 3x its share of a full-size call on banded and
  // mesh-like inputs (band:1000000:8 at F = 64 on the 2-core VM: 3.5-4.2 ms against 47 ms for 33x
  // the rows; the probe alone cost 2.1 full-size calls). Host-memory backends only, as the check's
  // blocks: not measured on a GPU.
  constexpr double kNarrowDegree = 8;
  std::optional<ProbeSample> sample;
  if (csr != nullptr && p.plugin->table->memory_space != SPARSEPORT_MEMORY_DEVICE &&
      f.max_degree <= kNarrowDegree * std::max(1.0, f.mean_degree)) {
    widen_rowptr(p.structure);
    const ProbeSample::Rows runs = ProbeSample::block_rows(p.structure.rowptr, p.opt.probe_frac, kBlocks);
    if (static_cast<int64_t>(runs.rows.size()) >= p.opt.min_probe_rows)
      sample.emplace(*p.plugin, p.exec, p.op, args, p.structure, runs,
                     std::to_string(kBlocks) + " blocks of consecutive rows (no hub rows)");
  }
  if (!sample) sample.emplace(*p.plugin, p.exec, p.op, args, p.structure, p.opt);
  t_sample = since(t0) - t_model;
  sparseport_status error{};
  // The vendor refusing the sample almost always means the caller's arguments are wrong (host
  // pointers on a GPU backend ...): stop deciding, run the vendor, and let the op report it.
  const auto vendor_failed = [&] {
    p.verify_pending = false;
    finish(d.vendor, "unscheduled", std::string("the vendor failed on the probe sample: ") + error.message);
  };
  // The vendor's first call comes first, to catch that before anything else runs.
  const double t_vendor_first = time_variant(*p.plugin, p.exec, p.op, d.vendor, sample->args(), 1, false, &error);
  if (t_vendor_first < 0) return vendor_failed();
  // Then the natives, then the vendor's timing proper, its first call standing in for its warm-up's
  // first (the sample's first touch and the vendor's plan are made: one call fewer). A variant
  // whose steady call already took kBeaten x the fastest native's time is left at that call,
  // without the median of its repeats: one call's noise is far below 2x (on the 2-core VM medians
  // of 5 calls moved by up to 37 %), so it can be neither the fastest native nor a vendor within
  // the guardrail's alpha of it. On the products-sized SAGE graph the vendor's stand-in
  // (row_warp_vec4, 5-10x hub_split) was 7 calls of the probe's 7 x 4, 35 ms of 98 ms at F = 256
  // (H100, session 40).
  constexpr double kBeaten = 2;
  std::vector<std::pair<std::string, double>> times;
  double fastest = 0;
  for (const std::string& v : natives) {
    const double t =
        time_variant(*p.plugin, p.exec, p.op, v, sample->args(), p.opt.probe_repeats, true, &error, kBeaten * fastest);
    if (t < 0) warn(label(p) + ": " + v + " failed on the probe: " + error.message);
    if (t >= 0 && (fastest == 0 || t < fastest)) fastest = t;
    times.emplace_back(v, t);
    candidate(p, v)->probe_ms = t * 1e3;
  }
  const double t_vendor = time_variant(*p.plugin, p.exec, p.op, d.vendor, sample->args(), p.opt.probe_repeats, true,
                                       &error, kBeaten * fastest, t_vendor_first);
  if (t_vendor < 0) return vendor_failed();
  candidate(p, d.vendor)->probe_ms = t_vendor * 1e3;
  const Verdict v = guardrail(times, d.vendor, t_vendor, p.opt.alpha, "on the probe (" + sample->description() + ")");
  // The check's runner-up: the fastest other native on the probe; and the probe's evidence, with
  // which the check may leave the vendor out (check.hpp).
  p.runner_up.clear();
  double t_runner = 1e300;
  for (const auto& [name, t] : times) {
    if (t >= 0 && name != v.variant && t < t_runner) p.runner_up = name, t_runner = t;
    if (name == v.variant) p.probe = {t, t_vendor, sample->work_fraction(), p.floor_s};
  }
  finish(v.variant, "probe", v.reason);
}

}  // namespace sparseport::scheduler
