// SPDX-License-Identifier: Apache-2.0
#include "scheduler/select.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <unistd.h>

#include "scheduler/cache.hpp"
#include "scheduler/estimate.hpp"
#include "scheduler/options.hpp"
#include "scheduler/probe.hpp"
#include "sparseport/errors.hpp"
#include "src/core/registry.hpp"

namespace sparseport::scheduler {

using detail::PlanState;
using Clock = std::chrono::steady_clock;

bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why) {
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

Verdict guardrail(const std::vector<std::pair<std::string, double>>& native, const std::string& vendor,
                  double vendor_seconds, double alpha) {
  const std::pair<std::string, double>* best = nullptr;
  for (const auto& n : native)
    if (n.second >= 0 && (best == nullptr || n.second < best->second)) best = &n;
  char buf[256];
  if (best == nullptr) return {vendor, "no native candidate ran on the probe; using the vendor variant"};
  if (vendor_seconds < 0) {
    std::snprintf(buf, sizeof buf, "the vendor variant failed on the probe; %s was fastest (%.4g ms)",
                  best->first.c_str(), best->second * 1e3);
    return {best->first, buf};
  }
  if (best->second <= alpha * vendor_seconds) {
    std::snprintf(buf, sizeof buf, "%s %.4g ms <= alpha %.2f x %s %.4g ms on the probe (%.2fx)", best->first.c_str(),
                  best->second * 1e3, alpha, vendor.c_str(), vendor_seconds * 1e3, vendor_seconds / best->second);
    return {best->first, buf};
  }
  std::snprintf(buf, sizeof buf, "guardrail: best native %s %.4g ms > alpha %.2f x %s %.4g ms; keeping the vendor",
                best->first.c_str(), best->second * 1e3, alpha, vendor.c_str(), vendor_seconds * 1e3);
  return {vendor, buf};
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
          {"source", "probe"},
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

// Estimate, probe, guardrail (DESIGN.md section 4, steps 2-5) for a plan whose cache missed.
void decide_by_probe(PlanState& p, const void* args, const std::vector<std::string>& applicable) {
  const Clock::time_point t0 = Clock::now();
  p.decision.vendor = vendor_of(*p.plugin, p.op, applicable);
  std::vector<std::string> natives;
  for (const std::string& v : applicable)
    if (v != p.decision.vendor) natives.push_back(v);
  p.decision.source = "probe";
  if (natives.empty()) {
    p.decision.variant = p.decision.vendor;
    p.decision.source = "single";
    p.decision.reason = "only " + p.decision.vendor + " applies";
    p.decision.decide_seconds += since(t0);
    return;
  }
  const Features f = features(p.structure, p.info, p.opt.hub_threshold);
  if (deterministic(p.exec) && p.opt.mode != SchedulerMode::probe) {
    // Deterministic mode decides from the estimate alone, a function of the device's hardware and
    // the input: the same choice, so the same bits, in every run and for any thread count. Timings
    // (the probe, the full-size check) could pick variants that round differently from one run to
    // the next. SPARSEPORT_SCHEDULER=probe still probes the deterministic variants (and caches the
    // choice, which later runs then replay).
    const std::vector<Estimate> ranked = estimate(deterministic_machine(*p.plugin, p.exec), f, p.info, applicable);
    std::string ranked_text;
    for (const Estimate& e : ranked) ranked_text += (ranked_text.empty() ? "" : ", ") + e.variant + " " + e.why;
    p.decision.variant = ranked.front().variant;
    p.decision.source = "estimate";
    p.decision.reason = "deterministic mode: the estimate's fastest deterministic variant (no probe: timings could "
                        "choose differently from run to run)";
    p.verify_pending = false;
    p.decision.decide_seconds += since(t0);
    log(p.opt, label(p) + ": estimate only (deterministic mode)\n  features: " + f.text() +
                   "\n  estimates of the deterministic variants: " + ranked_text + "\n  chose " + p.decision.variant);
    Record r = base_record(p);
    r["source"] = "estimate";
    r["estimate"] = ranked_text;
    r["features"] = f.text();
    store(p, r);
    return;
  }
  const std::vector<Estimate> est = estimate(machine(device_signature(*p.plugin, p.exec)), f, p.info, natives);
  std::string est_text;
  for (const Estimate& e : est) est_text += (est_text.empty() ? "" : ", ") + e.variant + " " + e.why;
  const size_t k = std::min<size_t>(est.size(), static_cast<size_t>(p.opt.top_k));

  ProbeSample sample(*p.plugin, p.exec, p.op, args, p.structure, p.opt);
  sparseport_status error{};
  std::string probe_text;
  const double t_vendor = time_variant(*p.plugin, p.exec, p.op, p.decision.vendor, sample.args(), p.opt.probe_repeats, true, &error);
  if (t_vendor < 0) {
    // The vendor refusing the sample almost always means the caller's arguments are wrong (host
    // pointers on a GPU backend ...): stop deciding, run the vendor, and let the op report it.
    p.decision.variant = p.decision.vendor;
    p.decision.source = "unscheduled";
    p.decision.reason = std::string("the vendor failed on the probe sample: ") + error.message;
    p.verify_pending = false;
    p.decision.decide_seconds += since(t0);
    log(p.opt, label(p) + ": " + p.decision.reason);
    return;
  }
  probe_text = p.decision.vendor + "=" + ms(t_vendor);
  std::vector<std::pair<std::string, double>> times;
  for (size_t i = 0; i < k; ++i) {
    const double t = time_variant(*p.plugin, p.exec, p.op, est[i].variant, sample.args(), p.opt.probe_repeats, true, &error);
    if (t < 0) warn(label(p) + ": " + est[i].variant + " failed on the probe: " + error.message);
    times.emplace_back(est[i].variant, t);
    probe_text += ", " + est[i].variant + "=" + ms(t);
  }
  const Verdict v = guardrail(times, p.decision.vendor, t_vendor, p.opt.alpha);
  p.decision.variant = v.variant;
  p.decision.reason = v.reason;
  p.decision.decide_seconds += since(t0);
  log(p.opt, label(p) + ": probe\n  features: " + f.text() + "\n  estimates (top " + std::to_string(k) +
                 " go to the probe): " + est_text + "\n  sample: " + sample.description() + "\n  probe medians of " +
                 std::to_string(p.opt.probe_repeats) + ": " + probe_text + "\n  chose " + v.variant + ": " + v.reason);
  Record r = base_record(p);
  r["probe"] = probe_text;
  r["estimate"] = est_text;
  r["features"] = f.text();
  store(p, r);
}

// The first full-size call after a probe: the chosen variant against the vendor, one timed call
// each (after a warm-up of each on device backends). The last call that runs is
// the final variant's, so the output is the op's result whichever way this goes.
void verify(PlanState& p, const void* args, const std::string& where) {
  const Clock::time_point t0 = Clock::now();
  p.verify_pending = false;
  p.decision.verified = true;
  if (p.decision.variant == p.decision.vendor) {
    sparseport_status error{};
    if (time_variant(*p.plugin, p.exec, p.op, p.decision.variant, args, 1, false, &error) < 0)
      detail::throw_status(error, where + "/" + p.decision.variant);
    store(p, base_record(p));  // nothing to compare (that call was the op itself); now verified
    return;
  }
  // spmm with beta != 0 reads C: restore C before every run so the result is computed once.
  const sparseport_spmm_args* spmm = p.op == SPARSEPORT_OP_SPMM ? static_cast<const sparseport_spmm_args*>(args) : nullptr;
  void* saved = nullptr;
  size_t c_bytes = 0;
  const sparseport_plugin* t = p.plugin->table;
  const auto copy = [&](void* dst, const void* src) {
    sparseport_status st{};
    if (t->copy(p.exec.state, dst, src, c_bytes, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st) != SPARSEPORT_OK)
      detail::throw_status(st, where + ": saving C for the full-size check");
  };
  if (spmm != nullptr && spmm->beta != 0) {
    const size_t vsz = spmm->c.value_type == SPARSEPORT_F64 ? 8 : 4;
    c_bytes = ((spmm->c.rows - 1) * spmm->c.ld + spmm->c.cols) * vsz;
    sparseport_status st{};
    if (t->alloc(p.exec.state, c_bytes, &saved, &st) != SPARSEPORT_OK)
      detail::throw_status(st, where + ": allocating a copy of C for the full-size check");
    copy(saved, spmm->c.data);
  }
  struct Release {
    const sparseport_plugin* t;
    void* state;
    void* ptr;
    ~Release() {
      if (ptr != nullptr) t->release(state, ptr);
    }
  } release{t, p.exec.state, saved};
  const auto timed = [&](const std::string& v) {
    if (saved != nullptr) copy(spmm->c.data, saved);
    sparseport_status error{};
    const double s = time_variant(*p.plugin, p.exec, p.op, v, args, 1, false, &error);  // one call
    if (s < 0) detail::throw_status(error, where + "/" + v);
    return s;
  };
  // A device backend builds per-matrix state on a first call (cuSPARSE descriptors and buffers,
  // hub partitions): warm both up there. Host variants keep no such state, and the vendor may be
  // much slower than the choice (GraphBLAS), so a CPU check times one call of each.
  if (t->memory_space == SPARSEPORT_MEMORY_DEVICE) {
    timed(p.decision.vendor);
    timed(p.decision.variant);
  }
  const double t_vendor = timed(p.decision.vendor);
  const double t_chosen = timed(p.decision.variant);
  const std::string chosen = p.decision.variant;
  if (t_chosen > t_vendor) {
    p.decision.reverted = true;
    p.decision.variant = p.decision.vendor;
    p.decision.reason += "; reverted: at full size " + chosen + " took " + ms(t_chosen) + " and " +
                         p.decision.vendor + " " + ms(t_vendor);
    warn(label(p) + ": reverted " + chosen + " to " + p.decision.vendor + " (" + ms(t_chosen) + " vs " +
         ms(t_vendor) + " at full size)");
  }
  // The time of the two measured calls of the chosen variant is the op's own, not overhead.
  p.decision.decide_seconds += since(t0) - t_chosen;
  log(p.opt, label(p) + ": verified at full size: " + chosen + " " + ms(t_chosen) + ", vendor " + p.decision.vendor +
                 " " + ms(t_vendor) + (p.decision.reverted ? " -> reverted to the vendor" : " -> kept"));
  Record r = base_record(p);
  r["full_ms_chosen"] = std::to_string(t_chosen * 1e3);
  r["full_ms_vendor"] = std::to_string(t_vendor * 1e3);
  r["probe_choice"] = chosen;
  store(p, r);
}

}  // namespace

std::shared_ptr<PlanState> prepare(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                   const void* args, const SchedulerOptions& given) {
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
  try {
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
  p->graph = graph_signature(p->structure);
  p->versions = dev.versions_text();
  p->key = dev.hash + "/" + p->graph + "/" + op_name(op) + "/F" + std::to_string(p->info.features) + "/" +
           type_suffix(p->info);
  // Deterministic mode decides among other variants: its decisions never replay in default mode,
  // nor default-mode decisions in it.
  if (deterministic(exec)) p->key += "/deterministic";
  if (p->opt.mode == SchedulerMode::automatic || p->opt.mode == SchedulerMode::replay) {
    bool stale = false;
    std::optional<Record> hit = CacheFile(p->opt.cache_dir).lookup(p->key, p->versions, &stale);
    // A deterministic-mode entry naming a variant no longer flagged deterministic is not replayed.
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
      log(p->opt, label(*p) + ": " + p->decision.source + " -> " + p->decision.variant + " (" + r["reason"] + ")");
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

void execute(const std::shared_ptr<PlanState>& plan, const void* args, const std::string& where) {
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
      decide_by_probe(p, args, applicable);  // clears verify_pending when it could not probe
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
      verify(p, args, where);
      return;  // verify's last call was the final variant: the output is written
    }
  }
  sparseport_status st{};
  const sparseport_exec exec = p.exec;
  if (call_slot(plugin.table, p.op, exec, variant, args, &st) != SPARSEPORT_OK)
    detail::throw_status(st, where + "/" + variant);
}

namespace {

std::mutex memo_mu;
std::map<std::string, std::shared_ptr<PlanState>> memo;

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
  if (!requested.empty() || !info.scheduled || opt.mode == SchedulerMode::off || plugin.variants_of(op).size() <= 1) {
    const std::string variant = select_in(plugin, op, args, requested, where, deterministic(exec));
    sparseport_status st{};
    if (call_slot(plugin.table, op, exec, variant, args, &st) != SPARSEPORT_OK)
      detail::throw_status(st, where + "/" + variant);
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

}  // namespace sparseport::scheduler
