// SPDX-License-Identifier: Apache-2.0
#include "scheduler/select.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <unistd.h>

#include "scheduler/cache.hpp"
#include "scheduler/check.hpp"
#include "scheduler/estimate.hpp"
#include "scheduler/features.hpp"
#include "scheduler/guardrail.hpp"
#include "scheduler/model.hpp"
#include "scheduler/options.hpp"
#include "scheduler/summary.hpp"
#include "scheduler/timing.hpp"
#include "sparseport/errors.hpp"
#include "src/core/registry.hpp"

namespace sparseport::scheduler {

using detail::PlanState;
using Clock = std::chrono::steady_clock;

bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why) {
  // 16-bit values reach only the variants that take them; the others serve them through the
  // float32 path (values16.hpp), never by reading 16-bit arrays as float32 ones.
  if (is_values16(args_value_type(op, args))) {
    bool takes16 = false;
    for (const VariantInfo& v : plugin.variants)
      if (v.op == op && v.name == variant) takes16 = v.values16;
    if (!takes16) {
      if (why != nullptr) *why = "takes 16-bit values only through the float32 conversion";
      return false;
    }
  }
  if (plugin.table->applies == nullptr) return true;
  sparseport_status st{};
  if (plugin.table->applies(op, variant.c_str(), args, &st) != 0) return true;
  if (why != nullptr) *why = st.message;
  return false;
}

namespace {

// Deterministic mode (Context::set_deterministic, SPARSEPORT_DETERMINISTIC=1): only variants
// flagged SPARSEPORT_VARIANT_DETERMINISTIC are candidates, the guardrail's reference included, and
// the choice itself must not depend on timings (decide_by_probe), or two runs could pick variants
// that round differently.
bool deterministic(const sparseport_exec& exec) { return (exec.flags & SPARSEPORT_EXEC_DETERMINISTIC) != 0; }

bool is_deterministic(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return v.is_deterministic;
  return false;
}

bool offers(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return true;
  return false;
}

const char* const kDetMode = "deterministic mode (Context::set_deterministic or SPARSEPORT_DETERMINISTIC=1)";

// select() with deterministic mode: a requested variant that is not deterministic is refused with
// InvalidArgument, and only deterministic ones are chosen.
std::string select_in(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                      const std::string& where, bool det) {
  const std::vector<std::string> offered = plugin.variants_of(op);
  const auto allowed = [&](const std::string& v) { return !det || is_deterministic(plugin, op, v); };
  const auto deterministic_list = [&] {
    std::string list;
    for (const std::string& v : offered)
      if (is_deterministic(plugin, op, v)) list += (list.empty() ? "" : ", ") + v;
    return list.empty() ? std::string("none") : list;
  };
  if (!requested.empty()) {
    for (const std::string& v : offered) {
      if (v != requested) continue;
      if (!allowed(v))
        throw InvalidArgument(where + ": variant '" + v +
                              "' is not deterministic (its results may differ from run to run) and the context is in " +
                              kDetMode + "; the deterministic variants of " + op_name(op) + " on backend '" +
                              plugin.name + "' are: " + deterministic_list());
      std::string why;
      if (!applies(plugin, op, v, args, &why))
        throw Unsupported(where + ": variant '" + v + "' does not apply to this input: " + why);
      return v;
    }
    std::string list;
    for (const std::string& v : offered) list += (list.empty() ? "" : ", ") + v;
    throw Unsupported(where + ": backend '" + plugin.name + "' has no variant '" + std::string(requested) +
                      "' (it offers: " + (list.empty() ? "none" : list) + ")");
  }
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default && allowed(v.name) && applies(plugin, op, v.name, args, nullptr)) return v.name;
  std::string reasons;
  for (const std::string& v : offered) {
    if (!allowed(v)) {
      reasons += "; " + v + ": not deterministic";
      continue;
    }
    std::string why;
    if (applies(plugin, op, v, args, &why)) return v;
    reasons += "; " + v + ": " + why;
  }
  if (det)
    throw Unsupported(where + ": no deterministic variant of " + op_name(op) + " on backend '" + plugin.name +
                      "' applies to this input, and the context is in " + kDetMode + reasons);
  throw Unsupported(where + ": no variant of backend '" + plugin.name + "' applies to this input" + reasons);
}

}  // namespace

std::string select(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                   const std::string& where) {
  return select_in(plugin, op, args, requested, where, false);
}

std::string vendor_of(const PluginInfo& plugin, sparseport_op op, const std::vector<std::string>& applicable) {
  const auto in = [&](const std::string& v) { return std::find(applicable.begin(), applicable.end(), v) != applicable.end(); };
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_vendor && in(v.name)) return v.name;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default && in(v.name)) return v.name;
  return applicable.empty() ? std::string() : applicable.front();
}

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  return buf;
}

std::string now_iso() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string label(const PlanState& p) {
  return std::string(op_name(p.op)) + "[" + p.plugin->name + "]" + (deterministic(p.exec) ? " deterministic" : "") +
         " F=" + std::to_string(p.info.features) + " " + (p.graph.empty() ? "" : p.graph);
}

// The variants of op that apply to args; in deterministic mode only the deterministic ones.
std::vector<std::string> applicable_variants(const PluginInfo& plugin, sparseport_op op, const void* args, bool det) {
  std::vector<std::string> out;
  for (const std::string& v : plugin.variants_of(op))
    if ((!det || is_deterministic(plugin, op, v)) && applies(plugin, op, v, args, nullptr)) out.push_back(v);
  return out;
}

Record base_record(const PlanState& p) {
  return {{"schema", std::to_string(kCacheSchema)},
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
}

void store(const PlanState& p, Record r) {
  // A read-only, full or unsafe cache costs a re-probe next time, never a failed op: try_append warns
  // once per reason; the log says it at every decision.
  std::string why;
  if (!CacheFile(p.opt.cache_dir).try_append(r, &why)) log(p.opt, label(p) + ": decision not cached: " + why);
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

const sparseport_csr* csr_of(sparseport_op op, const void* args) {
  if (op == SPARSEPORT_OP_SPMM) return &static_cast<const sparseport_spmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_SDDMM) return &static_cast<const sparseport_sddmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_CSR_ATTENTION) return &static_cast<const sparseport_attention_args*>(args)->a;
  return nullptr;
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
  }
  return t;
}

Decision::Candidate* candidate(PlanState& p, const std::string& v) {
  for (Decision::Candidate& c : p.decision.candidates)
    if (c.variant == v) return &c;
  return nullptr;
}

// A full-size measurement: kept in the decision and, when the model is not this device's own,
// recorded for the transfer correction (model.hpp).
void measured(PlanState& p, const std::string& v, double seconds) {
  if (seconds < 0) return;
  if (Decision::Candidate* c = candidate(p, v)) c->measured_ms = seconds * 1e3;
  if (p.transfer && !deterministic(p.exec)) {
    auto it = p.raw_prediction.find(v);
    if (it != p.raw_prediction.end())
      record_measurement(p.opt.cache_dir, p.device_hash, op_name(p.op), v,
                         std::log2(seconds / p.floor_s) - it->second);
  }
}

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
  const Features f = csr != nullptr ? features_of(summarize(*p.plugin, p.exec, *csr, SPARSEPORT_SUMMARY_SIGNATURE |
                                                                                      SPARSEPORT_SUMMARY_FEATURES),
                                                  p.info, p.opt.hub_threshold)
                                    : features_of(p.structure, p.info, p.opt.hub_threshold);

  // 2. The model ranks (the hand-written estimate where no model predicts; model.hpp).
  const DeviceSignature dev = device_signature(*p.plugin, p.exec);
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

  const auto finish = [&](const std::string& variant, const std::string& source, const std::string& reason) {
    d.variant = variant;
    d.source = source;
    d.reason = reason;
    d.decide_seconds += since(t0);
    log(p.opt, label(p) + ": " + source + " (timing: " + d.timing + ")\n  features: " + f.text() + "\n  " + ranking +
                   "\n  candidates: " + candidates_text(d.candidates) + "\n  chose " + variant + ": " + reason);
    Record r = base_record(p);
    r["features"] = f.text();
    r["candidates"] = candidates_text(d.candidates);
    r["model"] = d.model;
    store(p, r);
  };

  if (det || d.model_alone || p.opt.mode == SchedulerMode::model) {
    // Deterministic mode decides from the ranking alone, a function of the device's hardware and
    // the input: the same choice, so the same bits, in every run and for any thread count (timings
    // could pick variants that round differently). SPARSEPORT_SCHEDULER=probe still times.
    if (!det || p.opt.mode != SchedulerMode::probe) {
      d.timing = "none";
      p.verify_pending = false;
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
  // predicted best on a graph of 1M entries or more, else 5 ms), else one call each of the two
  // best predicted. Slower ops on the probe sample, checked at full size on their first call.
  std::vector<std::string> natives;
  for (const Decision::Candidate& c : d.candidates)
    if (c.variant != d.vendor && natives.size() < static_cast<size_t>(p.opt.top_k)) natives.push_back(c.variant);
  const double budget = f.nnz >= 1000000 ? 2 * t_best : 5e-3;
  const std::string where = label(p);
  if (t_best < p.opt.full_size_ms * 1e-3) {
    // At full size, on the caller's operands, best predicted first: exact, and no check needed
    // afterwards. A warm-up and a timed call each of the candidates cost about twice their number
    // in full-size calls: where that exceeds the budget (2 calls on a large graph), only the two
    // best predicted are timed.
    std::vector<std::string> timed;
    for (const Decision::Candidate& c : d.candidates)
      if (c.variant == d.vendor || std::find(natives.begin(), natives.end(), c.variant) != natives.end())
        timed.push_back(c.variant);
    double first_calls = 0;
    for (const std::string& v : timed) first_calls += 2 * key(*candidate(p, v)) * 1e-3;
    if (first_calls > budget) timed.resize(2);
    d.timing = first_calls > budget ? "one call each of the two best predicted, at full size" : "full size";
    const auto times = time_full_size(*p.plugin, p.exec, p.op, args, timed, 3, budget, where);
    std::vector<std::pair<std::string, double>> native_times;
    double t_vendor = -1;
    for (const auto& [v, t] : times) {
      measured(p, v, t);
      if (v == d.vendor) t_vendor = t;
      else native_times.emplace_back(v, t);
    }
    p.verify_pending = false;
    d.verified = true;
    if (std::find(timed.begin(), timed.end(), d.vendor) == timed.end()) {
      // The vendor was not among the two best predicted: the faster of the two measured.
      const auto best = std::min_element(native_times.begin(), native_times.end(), [](auto& x, auto& y) {
        return (x.second < 0 ? 1e300 : x.second) < (y.second < 0 ? 1e300 : y.second);
      });
      finish(best->second >= 0 ? best->first : d.vendor, "timed",
             "the faster of the two best predicted at full size (the vendor predicted slower)");
      return;
    }
    const Verdict v = guardrail(native_times, d.vendor, t_vendor, p.opt.alpha, "at full size");
    finish(v.variant, "timed", v.reason);
    return;
  }

  // The probe sample: the op is too long to time at full size within the budget.
  d.timing = "probe sample";
  if (csr != nullptr && p.structure.rows == 0 && p.structure.rowptr.empty())
    p.structure = read_structure(*p.plugin, p.exec, p.op, args);
  ProbeSample sample(*p.plugin, p.exec, p.op, args, p.structure, p.opt);
  sparseport_status error{};
  const double t_vendor = time_variant(*p.plugin, p.exec, p.op, d.vendor, sample.args(), p.opt.probe_repeats, true, &error);
  if (t_vendor < 0) {
    // The vendor refusing the sample almost always means the caller's arguments are wrong (host
    // pointers on a GPU backend ...): stop deciding, run the vendor, and let the op report it.
    p.verify_pending = false;
    finish(d.vendor, "unscheduled", std::string("the vendor failed on the probe sample: ") + error.message);
    return;
  }
  candidate(p, d.vendor)->probe_ms = t_vendor * 1e3;
  std::vector<std::pair<std::string, double>> times;
  for (const std::string& v : natives) {
    const double t = time_variant(*p.plugin, p.exec, p.op, v, sample.args(), p.opt.probe_repeats, true, &error);
    if (t < 0) warn(label(p) + ": " + v + " failed on the probe: " + error.message);
    times.emplace_back(v, t);
    candidate(p, v)->probe_ms = t * 1e3;
  }
  const Verdict v = guardrail(times, d.vendor, t_vendor, p.opt.alpha, "on the probe (" + sample.description() + ")");
  // The check's runner-up: the fastest other native on the probe.
  p.runner_up.clear();
  double t_runner = 1e300;
  for (const auto& [name, t] : times)
    if (t >= 0 && name != v.variant && t < t_runner) p.runner_up = name, t_runner = t;
  finish(v.variant, "probe", v.reason);
}

// Stage 5: the first full-size call after a probe-sample decision.
void check(PlanState& p, const void* args, const std::string& where) {
  const Clock::time_point t0 = Clock::now();
  p.verify_pending = false;
  p.decision.verified = true;
  const std::string chosen = p.decision.variant;
  const CheckResult r = full_size_check(*p.plugin, p.exec, p.op, args, chosen, p.decision.vendor, p.runner_up, where);
  for (const auto& [v, t] : r.measured) measured(p, v, t);
  if (r.reverted) {
    p.decision.reverted = true;
    p.decision.variant = r.variant;
    p.decision.reason += r.reason;
    warn(label(p) + ": reverted " + chosen + " to " + r.variant + r.reason.substr(r.reason.find(':')));
  }
  // The final variant's call is the op's own, not overhead.
  p.decision.decide_seconds += since(t0) - r.op_seconds;
  std::string text;
  for (const auto& [v, t] : r.measured) text += (text.empty() ? "" : ", ") + v + " " + ms(t);
  log(p.opt, label(p) + ": checked at full size: " + text + (r.reverted ? " -> reverted to " + r.variant : " -> kept"));
  Record rec = base_record(p);
  rec["full_size"] = text;
  rec["probe_choice"] = chosen;
  store(p, rec);
}

}  // namespace

std::shared_ptr<PlanState> prepare(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                   const void* args, const SchedulerOptions& given, bool check_indices) {
  const Clock::time_point t0 = Clock::now();
  auto p = std::make_shared<PlanState>();
  p->plugin = &plugin;
  p->exec = exec;
  p->op = op;
  p->opt = resolve(given);
  p->info = problem_info(op, args);
  if (!p->info.scheduled || p->opt.mode == SchedulerMode::off || plugin.variants_of(op).size() <= 1) {
    p->decided = true;
    p->decision.source = p->opt.mode == SchedulerMode::off ? "off" : "single";
    p->decision.reason = p->opt.mode == SchedulerMode::off ? "SPARSEPORT_SCHEDULER=off: the default variant"
                                                           : "one variant offered for this op";
    return p;
  }
  const DeviceSignature dev = device_signature(plugin, exec);
  const double t_signature = since(t0);
  try {
    // CSR ops: the signature is hashed where the operand lives (no copy of rowptr); index ops read
    // a sample of their index array.
    if (const sparseport_csr* csr = csr_of(op, args)) {
      const sparseport_csr_summary s =
          summarize(plugin, exec, *csr, SPARSEPORT_SUMMARY_SIGNATURE | (check_indices ? SPARSEPORT_SUMMARY_CHECK : 0u));
      if (check_indices && s.index_checked != 0) p->index_problem = s.index_problem;
      if (p->index_problem > 0) {
        // Nothing may read A by its indices now (no features, no probe): the caller reports it.
        p->decided = true;
        p->decision.source = "unscheduled";
        p->decision.reason = "the index check found invalid contents in A";
        return p;
      }
      p->graph = graph_signature(s);
    } else
      p->structure = read_structure(plugin, exec, op, args);
  } catch (const Error& e) {
    // Unreadable sparse operand (e.g. host pointers given to a GPU backend): do not decide; the
    // op's own checks then report the argument precisely.
    p->decided = true;
    p->decision.source = "unscheduled";
    p->decision.reason = std::string("could not read the sparse operand: ") + e.what();
    log(p->opt, std::string(op_name(op)) + "[" + plugin.name + "]: " + p->decision.reason);
    return p;
  }
  if (p->graph.empty()) p->graph = graph_signature(p->structure);
  p->versions = dev.versions_text();
  p->key = dev.hash + "/" + p->graph + "/" + op_name(op) + "/F" + std::to_string(p->info.features) + "/" +
           type_suffix(p->info);
  // Deterministic mode decides among other variants: its decisions never replay in default mode,
  // nor default-mode decisions in it.
  if (deterministic(exec)) p->key += "/deterministic";
  if (p->opt.mode == SchedulerMode::automatic || p->opt.mode == SchedulerMode::replay) {
    bool stale = false;
    const double t_summary = since(t0);
    std::optional<Record> hit = CacheFile(p->opt.cache_dir).lookup(p->key, p->versions, &stale);
    const double t_lookup = since(t0);
    // An entry naming a variant the backend no longer offers (one since retired) is not replayed,
    // nor a deterministic-mode entry naming a variant no longer flagged deterministic.
    if (hit && !offers(plugin, op, (*hit)["variant"])) {
      log(p->opt, label(*p) + ": ignored a cached decision for " + (*hit)["variant"] + ", which backend '" +
                      plugin.name + "' no longer offers");
      hit.reset();
    }
    if (hit && deterministic(exec) && !is_deterministic(plugin, op, (*hit)["variant"])) hit.reset();
    if (stale) log(p->opt, label(*p) + ": ignored cached decisions made under other versions (now " + p->versions + ")");
    if (hit) {
      Record r = *hit;
      p->decided = true;
      p->decision.variant = r["variant"];
      p->decision.vendor = r["vendor"];
      p->decision.source = p->opt.mode == SchedulerMode::replay ? "replay" : "cache hit";
      p->decision.reason = "replayed: " + r["reason"];
      p->decision.verified = r["verified"] == "true";
      p->decision.reverted = r["reverted"] == "true";
      // A hit recorded before its full-size check (the process ended first) still gets one, except
      // in deterministic mode, which keeps timings out of its choices.
      p->verify_pending = !p->decision.verified && p->opt.mode == SchedulerMode::automatic && !deterministic(exec);
      char took[160];
      std::snprintf(took, sizeof took, " [%.0f us: options and device signature %.0f, operand summary %.0f, cache lookup %.0f]",
                    since(t0) * 1e6, t_signature * 1e6, (t_summary - t_signature) * 1e6, (t_lookup - t_summary) * 1e6);
      log(p->opt, label(*p) + ": " + p->decision.source + " -> " + p->decision.variant + " (" + r["reason"] + ")" + took);
    } else if (p->opt.mode == SchedulerMode::replay) {
      p->decided = true;
      p->decision.source = "replay miss";
      p->decision.reason = "SPARSEPORT_SCHEDULER=replay and no cached decision: the vendor variant";
      log(p->opt, label(*p) + ": replay miss: no cached decision, using the vendor variant");
    }
  }
  if (p->decided) p->structure = {};
  p->decision.decide_seconds = since(t0);
  return p;
}

namespace {
// The plan behind the thread's last call: a reference count per call instead of copying the
// decision's strings on the hot path; last_decision() copies it under the plan's lock.
thread_local std::shared_ptr<PlanState> g_last;
}

Decision last_decision() {
  const std::shared_ptr<PlanState> p = g_last;
  if (p == nullptr) return {};
  std::lock_guard<std::mutex> lock(p->mu);
  return p->decision;
}

namespace {

// Runs the plan's native choice; returns the variant that ran.
std::string execute_native(const std::shared_ptr<PlanState>& plan, const void* args, const std::string& where) {
  PlanState& p = *plan;
  if (g_last != plan) g_last = plan;
  std::lock_guard<std::mutex> lock(p.mu);
  const PluginInfo& plugin = *p.plugin;
  std::string variant = p.decision.variant;
  // Fast path (every call after the first): the decided variant still applies.
  if (!(p.decided && !p.verify_pending && !variant.empty() && applies(plugin, p.op, variant, args, nullptr))) {
    const bool det = deterministic(p.exec);
    const std::vector<std::string> applicable = applicable_variants(plugin, p.op, args, det);
    if (applicable.empty()) (void)select_in(plugin, p.op, args, {}, where, det);  // throws, listing every reason
    if (!p.decided) {
      p.verify_pending = true;
      decide(p, args, applicable);  // clears verify_pending unless a probe-sample decision needs a check
      p.decided = true;
      p.structure = {};
    }
    if (p.decision.source == "off" || p.decision.source == "single" || p.decision.source == "unscheduled") {
      variant = select_in(plugin, p.op, args, {}, where, det);
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
  }
  sparseport_status st{};
  const sparseport_exec exec = p.exec;
  if (call_slot(plugin.table, p.op, exec, variant, args, &st) != SPARSEPORT_OK)
    detail::throw_status(st, where + "/" + variant);
  return variant;
}

// The float32 path for a 16-bit call: float32 copies in the plan's scratch, the op run on them as
// a float32 call (`requested` or the scheduler's choice for float32), results rounded back once.
void run_via_f32(const std::shared_ptr<PlanState>& plan, const void* args, std::string_view requested,
                 const std::string& where) {
  PlanState& p = *plan;
  std::lock_guard<std::mutex> lock(p.via_mu);
  if (p.scratch == nullptr) p.scratch = std::make_unique<Scratch>(*p.plugin, p.exec.state);
  // A copy of the argument struct whose pointers and tags are rewritten to the copies.
  alignas(std::max_align_t) unsigned char copy[512];
  static_assert(sizeof(sparseport_spmm_args) <= sizeof copy && sizeof(sparseport_attention_args) <= sizeof copy &&
                    sizeof(sparseport_slice_rows_args) <= sizeof copy && sizeof(sparseport_transpose_args) <= sizeof copy,
                "argument structs fit the copy");
  std::memcpy(copy, args, args_size(p.op));
  std::vector<int32_t*> tags;
  std::vector<ValueOperand> ops = value_operands(p.op, copy, &tags);
  Decision inner;
  run_as_f32(*p.plugin, p.exec, std::move(ops), tags, *p.scratch, [&] {
    run(*p.plugin, p.exec, p.op, copy, requested, where);
    inner = last_decision();
  }, where);
  {
    // The plan reports the float32 call's decision, marked as run on copies.
    std::lock_guard<std::mutex> l(p.mu);
    const std::string reason = p.decision.reason;
    if (!inner.variant.empty()) {
      const double decide = p.decision.decide_seconds;
      p.decision = inner;
      p.decision.decide_seconds += decide;
    } else if (!requested.empty()) {
      p.decision.variant = std::string(requested);
    }
    p.decision.via_f32 = true;
    if (p.decision.reason.rfind("16-bit values as float32 copies", 0) != 0)
      p.decision.reason = "16-bit values as float32 copies; " + p.decision.reason;
  }
  g_last = plan;
}

double seconds_of(const PlanState& p, int reps, const std::function<void()>& call) {
  sparseport_status st{};
  const auto sync = [&] {
    if (p.plugin->table->synchronize != nullptr && p.plugin->table->synchronize(p.exec.state, &st) != SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: synchronising while timing the float32 path");
  };
  sync();
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i) call();
  sync();
  return since(t0) / reps;
}

// Whether the float32 path beats the native 16-bit variant that just ran: both timed on the
// call's own operands (3 calls each after a warm-up), so only ops that overwrite their outputs
// are timed (spmm with beta != 0 accumulates into C and keeps the native variant).
void decide_via(const std::shared_ptr<PlanState>& plan, const void* args, const std::string& native,
                const std::string& where) {
  PlanState& p = *plan;
  const bool accumulates = p.op == SPARSEPORT_OP_SPMM && static_cast<const sparseport_spmm_args*>(args)->beta != 0.0;
  if (deterministic(p.exec) || p.opt.mode != SchedulerMode::automatic || accumulates || !p.info.scheduled) {
    p.via_f32 = 0;
    return;
  }
  const auto call_native = [&] {
    sparseport_status st{};
    if (call_slot(p.plugin->table, p.op, p.exec, native, args, &st) != SPARSEPORT_OK)
      detail::throw_status(st, where + "/" + native);
  };
  const auto call_via = [&] { run_via_f32(plan, args, {}, where); };
  call_via();  // warm-up: the float32 plan's own decision and the copies' allocation
  const double t_via = seconds_of(p, 3, call_via);
  const double t_native = seconds_of(p, 3, call_native);
  std::lock_guard<std::mutex> lock(p.mu);
  p.via_f32 = t_via < t_native ? 1 : 0;
  char buf[200];
  std::snprintf(buf, sizeof buf, "; 16-bit %s %s vs float32 copies %s -> %s", native.c_str(), ms(t_native).c_str(),
                ms(t_via).c_str(), p.via_f32 ? "float32 copies" : native.c_str());
  p.decision.reason += buf;
  if (p.via_f32 == 0) {
    p.decision.via_f32 = false;
    p.decision.variant = native;
  }
  log(p.opt, label(p) + ":" + std::string(buf + 1));
  if (p.via_f32 == 0) g_last = plan;
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
      applicable_variants(*p.plugin, p.op, args, deterministic(p.exec)).empty()) {
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

namespace {

// The one-shot plans, never destroyed: a plan's destructor hands its float32 copies back through
// the plugin table to the context's state, and at exit neither need be alive any more (the static
// plugin registry and the CUDA runtime are torn down in an order this library does not control).
// Memory held here at exit goes with the process; a Context destroyed before exit takes its plans
// with it (forget_state). Issue 34: destroying this map at exit crashed 1-2 % of GPU test processes.
std::mutex& memo_mu = *new std::mutex;
std::map<std::string, std::shared_ptr<PlanState>>& memo = *new std::map<std::string, std::shared_ptr<PlanState>>;

// The one-shot memo key: which backend context, which arrays, which shape, F and types.
std::string memo_key(const sparseport_exec& exec, const PluginInfo& plugin, sparseport_op op, const void* args,
                     const ProblemInfo& info, const SchedulerOptions& opt) {
  const void *p0 = nullptr, *p1 = nullptr;
  int64_t r = 0, c = 0, n = 0;
  switch (op) {
    case SPARSEPORT_OP_SPMM: {
      const auto& a = static_cast<const sparseport_spmm_args*>(args)->a;
      p0 = a.rowptr, p1 = a.colind, r = a.rows, c = a.cols, n = a.nnz;
      break;
    }
    case SPARSEPORT_OP_SDDMM: {
      const auto& a = static_cast<const sparseport_sddmm_args*>(args)->a;
      p0 = a.rowptr, p1 = a.colind, r = a.rows, c = a.cols, n = a.nnz;
      break;
    }
    case SPARSEPORT_OP_CSR_ATTENTION: {
      const auto& a = static_cast<const sparseport_attention_args*>(args)->a;
      p0 = a.rowptr, p1 = a.colind, r = a.rows, c = a.cols, n = a.nnz;
      break;
    }
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE: {
      const auto* a = static_cast<const sparseport_segment_args*>(args);
      p0 = a->index.data, r = a->out.rows, c = a->src.rows, n = a->index.n;
      break;
    }
    case SPARSEPORT_OP_GATHER_SCATTER: {
      const auto& e = static_cast<const sparseport_gather_scatter_args*>(args)->edges;
      p0 = e.row, p1 = e.col, r = e.rows, c = e.cols, n = e.nnz;
      break;
    }
    default:
      break;
  }
  char buf[512];
  // exec.flags: a deterministic-mode call never reuses a default-mode plan, nor the reverse.
  std::snprintf(buf, sizeof buf, "%p/%p/%d/%d/%d/%p/%p/%lld/%lld/%lld/%lld/%s/%d/%s",
                static_cast<const void*>(plugin.table), exec.state, exec.threads, exec.flags, static_cast<int>(op), p0,
                p1, static_cast<long long>(r),
                static_cast<long long>(c), static_cast<long long>(n), static_cast<long long>(info.features),
                type_suffix(info).c_str(), static_cast<int>(opt.mode), opt.cache_dir.c_str());
  return buf;
}

}  // namespace

void run(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
         std::string_view requested, const std::string& where) {
  const ProblemInfo info = problem_info(op, args);
  const SchedulerOptions opt = resolve({});
  const bool v16 = is_values16(args_value_type(op, args));
  if (v16 && !requested.empty() && !applies(plugin, op, std::string(requested), args, nullptr) &&
      offers(plugin, op, std::string(requested))) {
    // A named variant that does not take 16-bit values runs on float32 copies (held by a memo
    // plan of its own, so repeated calls reuse them).
    std::shared_ptr<PlanState> plan;
    const std::string key = memo_key(exec, plugin, op, args, info, opt) + "/requested=" + std::string(requested);
    {
      std::lock_guard<std::mutex> lock(memo_mu);
      if (auto it = memo.find(key); it != memo.end()) plan = it->second;
      if (plan == nullptr) {
        plan = std::make_shared<PlanState>();
        plan->plugin = &plugin;
        plan->exec = exec;
        plan->op = op;
        plan->opt = opt;
        plan->info = info;
        plan->decided = true;
        plan->decision.source = "requested";
        plan->decision.reason = "the caller named the variant";
        if (memo.size() >= 1024) memo.clear();
        memo.emplace(key, plan);
      }
    }
    run_via_f32(plan, args, requested, where);
    return;
  }
  if (!requested.empty() || (!v16 && (!info.scheduled || opt.mode == SchedulerMode::off || plugin.variants_of(op).size() <= 1))) {
    const std::string variant = select_in(plugin, op, args, requested, where, deterministic(exec));
    sparseport_status st{};
    if (call_slot(plugin.table, op, exec, variant, args, &st) != SPARSEPORT_OK)
      detail::throw_status(st, where + "/" + variant);
    // last_decision() names what ran here too (one small state per thread, reused).
    // Rewritten only when it changes: a loop of named calls does no string work here.
    thread_local std::shared_ptr<PlanState> direct = std::make_shared<PlanState>();
    const char* source = !requested.empty() ? "requested" : opt.mode == SchedulerMode::off ? "off" : "single";
    if (direct->decision.variant != variant || direct->decision.source != source) {
      direct->decision = Decision{};
      direct->decision.variant = variant;
      direct->decision.source = source;
      direct->decision.reason = !requested.empty()                ? "the caller named the variant"
                                : opt.mode == SchedulerMode::off ? "SPARSEPORT_SCHEDULER=off: the default variant"
                                                                 : "one variant applies";
    }
    if (g_last != direct) g_last = direct;
    return;
  }
  const std::string key = memo_key(exec, plugin, op, args, info, opt);
  std::shared_ptr<PlanState> plan;
  {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (auto it = memo.find(key); it != memo.end()) plan = it->second;
  }
  if (plan == nullptr) {
    plan = prepare(plugin, exec, op, args, opt);
    std::lock_guard<std::mutex> lock(memo_mu);
    if (memo.size() >= 1024) memo.clear();  // bounded: a long-running program with many graphs re-decides
    plan = memo.emplace(key, plan).first->second;
  }
  execute(plan, args, where);
}

void clear_memo() {
  std::lock_guard<std::mutex> lock(memo_mu);
  memo.clear();
}

void forget_state(void* state) {
  std::lock_guard<std::mutex> lock(memo_mu);
  for (auto it = memo.begin(); it != memo.end();) {
    if (it->second->exec.state == state) {
      {
        std::lock_guard<std::mutex> l(it->second->via_mu);
        if (it->second->scratch != nullptr) it->second->scratch->release();
      }
      it = memo.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace sparseport::scheduler
