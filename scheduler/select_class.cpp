// SPDX-License-Identifier: Apache-2.0
// Shape classes (issue 35): a decision for a matrix the exact-key cache has never seen, taken from
// other matrices of its shape (shape_class.hpp), so that a GNN's 1000th sampled subgraph does not
// pay a cold decision (estimate, timing, guardrail: 5-70 times the op on the 2-core CPU).
//
// A class is one more line in decisions.jsonl, keyed <device hash>/class:<shape>/<op>/F<F>/<types>,
// with the variant its members agreed on and "checks": how many times in a row that variant was
// timed against the vendor at full size on a member and kept. Its life:
//   - the first member (no class line) is decided cold as before; its final variant starts the
//     class (checks 1 when it was timed at full size, else 0);
//   - while checks < SPARSEPORT_CLASS_CHECKS (3), a member takes the class's variant and is checked
//     at full size on its first call (stage 5, check(): the vendor's call and the variant's, the
//     latter being the op's own), so each of these members is guarded as a probe decision is; a
//     check that keeps the variant counts one more, one that reverts it starts the class afresh
//     from the variant that won;
//   - a check in which the vendor took at least kWideMargin (2) times the variant makes the class
//     ready at once: its members lie within a factor 2 of each other in rows, entries, mean and
//     maximum degree (the log2 buckets of shape_class()), and a lead that wide does not turn into a
//     loss within them; narrower leads need SPARSEPORT_CLASS_CHECKS checks in a row;
//   - from then on members replay the variant unchecked (features, two lookups: no timing), except
//     the members whose graph signature hashes to 0 modulo class_recheck_every(margin), which are
//     checked again, so that a class that stops holding (another device state, a drifting sampler)
//     is caught and relearned; a class holding the vendor is decided cold at those members instead
//     (a check of the vendor against itself would teach nothing).
// So a native variant runs unchecked only after it beat the vendor at full size on
// SPARSEPORT_CLASS_CHECKS members in a row, or once by 2x. A wrong class costs speed, never a
// result: the class's variant must apply to the call (else the vendor runs), and it computes what
// any variant does.
// Not in deterministic mode (a class could give an input another variant, so other bits, than its
// exact decision), nor under replay, probe or model modes, nor for the index ops (no summary).
// Class hits are not written under their exact key (sampled subgraphs rarely recur: 1000 lines per
// epoch for nothing); checked members are, by check().
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "scheduler/cache.hpp"
#include "scheduler/options.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/shape_class.hpp"
#include "scheduler/summary.hpp"
#include "sparseport/errors.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

namespace {

// A full-size lead over the vendor (t_vendor / t_variant) wide enough to make a class ready after
// one check (see the top of this file).
constexpr double kWideMargin = 2.0;

}  // namespace

// One member in this many (by its graph signature's hash) of a ready class is checked at full size
// again. A recheck adds the vendor's call, margin times the variant's: 1 in N costs margin / N of
// the members' op time. N keeps that at 1 % (a fifth of the 5 % budget for all decision
// overhead), as a power of two from 256 (a class whose margin is unknown, as before) to 4096 (drift
// is still caught within a few thousand members). On the workload (openmp, 2-core CPU,
// sampled subgraphs of 50k entries, F = 64: spmm.graphblas 55 ms against spmm.merge_path 12 ms,
// margin 4.6) that is 1 in 512; 1 in 64 had cost 8 %. Not tuned on any matrix.
uint64_t class_recheck_every(double margin) {
  uint64_t n = 256;
  while (n < 4096 && static_cast<double>(n) < 100 * margin) n *= 2;
  return n;
}

namespace {

int log2_floor(double x) { return x > 0 ? static_cast<int>(std::floor(std::log2(x))) : -1; }

int checks_of(const Record& r) {
  const auto it = r.find("checks");
  return it == r.end() ? 0 : std::atoi(it->second.c_str());
}

// The class record's last full-size margin (0: none recorded).
double margin_of(const Record& r) {
  const auto it = r.find("margin");
  return it == r.end() ? 0 : std::atof(it->second.c_str());
}

// This plan's full-size lead of its final variant over the vendor, t_vendor / t_variant (0 where
// the two were not both timed at full size).
double full_size_margin(const PlanState& p) {
  const auto v = p.full_size_s.find(p.decision.vendor), c = p.full_size_s.find(p.decision.variant);
  if (p.decision.variant == p.decision.vendor || v == p.full_size_s.end() || c == p.full_size_s.end() ||
      c->second <= 0)
    return 0;
  return v->second / c->second;
}

bool ready(int checks, double margin, int class_checks) {
  return checks >= class_checks || (checks >= 1 && margin >= kWideMargin);
}

// The SIGNATURE numbers' shape and the degree histogram of a CSR in host memory; no locality.
sparseport_csr_summary degree_summary(const sparseport_csr& a) {
  sparseport_csr_summary s{};
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz;
  const auto count = [&](const auto* rowptr) {
    for (int64_t i = 0; i < a.rows; ++i) {
      const int64_t d = static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]);
      s.max_degree = std::max(s.max_degree, d);
      ++s.degree_hist[summary_bucket(static_cast<uint64_t>(d))];
    }
  };
  if (a.index_type == SPARSEPORT_I64) count(static_cast<const int64_t*>(a.rowptr));
  else count(static_cast<const int32_t*>(a.rowptr));
  return s;
}

}  // namespace

std::string shape_class(const Features& f) {
  char buf[160];
  const double skew = f.mean_degree > 0 ? static_cast<double>(f.max_degree) / f.mean_degree : 0;
  const int d = f.mean_degree > 0 ? static_cast<int>(std::floor(2 * std::log2(f.mean_degree))) : -99;
  std::snprintf(buf, sizeof buf, "r%d.c%d.z%d.d%d.s%d.q%d-%d-%d.h%d", log2_floor(static_cast<double>(f.rows)),
                log2_floor(static_cast<double>(f.cols)), log2_floor(static_cast<double>(f.nnz)), d, log2_floor(skew),
                summary_bucket(static_cast<uint64_t>(f.p50)), summary_bucket(static_cast<uint64_t>(f.p90)),
                summary_bucket(static_cast<uint64_t>(f.p99)), summary_bucket(static_cast<uint64_t>(f.over_256)));
  return buf;
}

bool class_hit(PlanState& p, const sparseport_csr& a, const std::string& device_hash) {
  if (p.opt.mode != SchedulerMode::automatic || p.opt.class_checks <= 0 || deterministic(p.exec)) return false;
  Features f;
  if (p.plugin->table->memory_space == SPARSEPORT_MEMORY_DEVICE) {
    // One pass where A lives (a kernel on cuda); a cold decision reuses it.
    try {
      p.features = f = features_of(summarize(*p.plugin, p.exec, a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES),
                                   p.info, p.opt.hub_threshold);
    } catch (const Error&) {
      return false;  // decide() reads the summary again and reports what it must
    }
  } else {
    // Host memory: the row lengths only (rowptr, which the signature just read), not the summary's
    // pass over every entry (1.3-1.8 ms on a 50k-entry sampled subgraph on the 2-core CPU, 15 % of
    // its spmm; the degree part is about 5 % of that). The class uses no more than these.
    f = features_of(degree_summary(a), p.info, p.opt.hub_threshold);
  }
  p.class_text = shape_class(f);
  p.class_key = device_hash + "/class:" + p.class_text + "/" + op_name(p.op) + "/F" + std::to_string(p.info.features) +
                "/" + type_suffix(p.info);
  bool stale = false;
  const std::optional<Record> r = CacheFile(p.opt.cache_dir).lookup(p.class_key, p.versions, &stale);
  if (!r || r->count("vendor") == 0 || !offers(*p.plugin, p.op, r->at("variant"))) return false;
  const int checks = checks_of(*r);
  const double margin = margin_of(*r);
  const bool is_ready = ready(checks, margin, p.opt.class_checks);
  const std::string& g = p.graph;
  const bool recheck = is_ready && hash_bytes(g.data(), g.size()) % class_recheck_every(margin) == 0;
  // A class holding the vendor has nothing to check (the check compares a variant with the vendor):
  // its rechecks are cold decisions instead, which relearn the class when a native wins (one noisy
  // probe on a loaded machine had put a class on spmm.graphblas, 4-5x merge_path, for good).
  if (recheck && r->at("variant") == r->at("vendor")) return false;
  p.decided = true;
  p.decision.variant = r->at("variant");
  p.decision.vendor = r->at("vendor");
  p.decision.source = "class";
  p.decision.reason = "shape class " + p.class_text + ": " + r->at("variant") + " kept in " + std::to_string(checks) +
                      " full-size check(s) against the vendor on other matrices of this shape" +
                      (is_ready ? (recheck ? "; this member is checked again" : "") : "; this member is checked too");
  p.verify_pending = !is_ready || recheck;
  return true;
}

void class_learn(PlanState& p) {
  if (p.class_key.empty() || p.decision.variant.empty()) return;
  const std::string& s = p.decision.source;
  if (s != "class" && s != "timed" && s != "probe" && s != "model" && s != "estimate") return;
  bool stale = false;
  const std::optional<Record> cur = CacheFile(p.opt.cache_dir).lookup(p.class_key, p.versions, &stale);
  const bool same = cur && cur->at("variant") == p.decision.variant;
  const int before = same ? checks_of(*cur) : 0;
  const int checks = before + (p.decision.verified ? 1 : 0);
  if (same && checks == before) return;  // an unchecked member teaches nothing
  // The latest check's margin (an unchecked first member has none: the class needs its checks).
  const double margin = full_size_margin(p);
  Record r = base_record(p);
  r.erase("class");
  r["key"] = p.class_key;
  r["graph"] = "class:" + p.class_text;
  r["source"] = "class";
  r["checks"] = std::to_string(checks);
  if (margin > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", margin);
    r["margin"] = buf;
  }
  r["member"] = p.graph;
  r["verified"] = checks > 0 ? "true" : "false";
  r["reason"] = same ? "kept at full size on " + std::to_string(checks) + " member(s) in a row"
                     : (cur ? "relearned: the member " + p.graph + " chose " + p.decision.variant + " (the class had " +
                                  cur->at("variant") + ")"
                            : "started by the member " + p.graph + " (" + p.decision.source + ")");
  store(p, r);
  char lead[48] = "";
  if (margin > 0) std::snprintf(lead, sizeof lead, ", the vendor %.3gx its time", margin);
  log(p.opt, label(p) + ": shape class " + p.class_text + " -> " + p.decision.variant + ", " + std::to_string(checks) +
                 " check(s)" + lead +
                 (ready(checks, margin, p.opt.class_checks) ? " (ready: members replay it unchecked)" : ""));
}

}  // namespace sparseport::scheduler
