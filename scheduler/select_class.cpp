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
//   - a check that left the vendor out (check.hpp: it had lost by kSkipMargin on the probe, and the
//     variant ran as expected at full size) records that lead and the variant's time; the next
//     learning member's check reuses them, scaled to its rows + entries, and times only the variant
//     (the op's own call) unless it disappoints;
//   - a check in which the vendor took at least kWideMargin (2) times the variant makes the class
//     ready at once: its members lie within a factor 2 of each other in rows, entries, mean and
//     maximum degree (the log2 buckets of shape_class()), and a lead that wide does not turn into a
//     loss within them; narrower leads need SPARSEPORT_CLASS_CHECKS checks in a row;
//   - from then on members replay the variant unchecked (row lengths and a lookup: no timing, and on
//     host memory no signature unless the exact key could hit, select.cpp), except the members whose
//     shape and degree histogram hash to 0 modulo class_recheck_every(margin), which are
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
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "scheduler/cache.hpp"
#include "scheduler/check.hpp"
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

int checks_of(const Record& r) { return std::atoi(field(r, "checks").c_str()); }

// The class record's last full-size margin (0: none recorded).
double margin_of(const Record& r) { return std::atof(field(r, "margin").c_str()); }

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

// The maximum degree of rows [0, m) (every row), and the degree histogram (summary_bucket(degree)
// per row) of at most kClassSampleRows of them, taken at evenly spaced rows and scaled to m. A
// histogram of every row cost a sampled subgraph's class decision 60-100 us on the 2-core CPU (its
// 50k rows, counted by scatter or by comparisons: 1.2-2 ns a row), more than the rest of the
// decision; the class reads only bucketed quantiles from it (shape_class), which 4096 rows give to
// within a bucket where a quantile sits on a power of two. The maximum is exact: the skew bucket
// and the hub candidates come from it. The differences are taken in the index type's unsigned
// form (no overflow on any input), so that int32 rows compare four to a vector.
constexpr int64_t kClassSampleRows = 4096;

// The largest row length: every row, the loop the compiler vectorises. The library is built for
// the x86-64 baseline (SSE2, which has no 32-bit signed max: it is emulated), so on a CPU with AVX2
// the same loop runs from an AVX2 copy: 7.6 against 15.4 us over 49k int32 rows, warm, on the 2-core
// VM (a sampled subgraph's class decision is 60-75 us).
template <class I>
__attribute__((always_inline)) inline I max_row_length(const I* rowptr, int64_t m) {
  using U = std::make_unsigned_t<I>;
  I top = 0;
  for (int64_t i = 0; i < m; ++i) top = std::max(top, static_cast<I>(static_cast<U>(rowptr[i + 1]) - static_cast<U>(rowptr[i])));
  return top;
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) int32_t max_row_length_avx2(const int32_t* rowptr, int64_t m) {
  return max_row_length(rowptr, m);
}
__attribute__((target("avx2"))) int64_t max_row_length_avx2(const int64_t* rowptr, int64_t m) {
  return max_row_length(rowptr, m);
}
#endif

template <class I>
void count_degrees(const I* rowptr, int64_t m, sparseport_csr_summary& s) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  s.max_degree = static_cast<int64_t>(avx2 ? max_row_length_avx2(rowptr, m) : max_row_length(rowptr, m));
#else
  s.max_degree = static_cast<int64_t>(max_row_length(rowptr, m));
#endif
  const int64_t samples = std::min(m, kClassSampleRows);
  if (samples == 0) return;
  // Four histograms, sample j counted in the (j % 4)th: most sampled rows fall in the same one or
  // two buckets, and one histogram made each count wait for the previous one's store.
  int64_t hist[4][SPARSEPORT_SUMMARY_BUCKETS] = {};
  // Row floor(j * m / samples), stepped exactly (quotient and remainder): every row when m <= 4096.
  const int64_t step = m / samples, step_rem = m % samples;
  for (int64_t j = 0, i = 0, rem = 0; j < samples; ++j) {
    const int64_t d = static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]);
    ++hist[j & 3][summary_bucket(static_cast<uint64_t>(d))];
    i += step;
    rem += step_rem;
    if (rem >= samples) rem -= samples, ++i;
  }
  int64_t total = 0;
  for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b)
    total += s.degree_hist[b] = (hist[0][b] + hist[1][b] + hist[2][b] + hist[3][b]) * m / samples;
  s.degree_hist[0] += m - total;  // the rounding, at most one row a bucket: the counts add up to m
}

}  // namespace

sparseport_csr_summary degree_summary(const sparseport_csr& a) {
  sparseport_csr_summary s{};
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz;
  if (a.index_type == SPARSEPORT_I64) count_degrees(static_cast<const int64_t*>(a.rowptr), a.rows, s);
  else count_degrees(static_cast<const int32_t*>(a.rowptr), a.rows, s);
  return s;
}

namespace {

// Which members of a ready class are checked again: a hash of what the class read of the member
// (shape, maximum degree, degree histogram), not of its signature, which a member replayed
// unchecked never computes (select.cpp). Members equal in all of these are rechecked together.
uint64_t member_hash(const sparseport_csr_summary& s) {
  const int64_t head[] = {s.rows, s.cols, s.nnz, s.max_degree};
  return hash_bytes(s.degree_hist, sizeof s.degree_hist, hash_bytes(head, sizeof head));
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

bool class_applies(const PlanState& p) {
  return p.opt.mode == SchedulerMode::automatic && p.opt.class_checks > 0 && !deterministic(p.exec);
}

uint32_t class_summary_bits(const PluginInfo& plugin) {
  constexpr uint32_t kAbiDegrees = (1u << 16) | 9u;
  return plugin.table->abi_version >= kAbiDegrees ? SPARSEPORT_SUMMARY_DEGREES : SPARSEPORT_SUMMARY_FEATURES;
}

namespace {

// A learning class's evidence that its last check left the vendor out (check.hpp: the vendor had
// lost by kSkipMargin or more, and the variant then ran within kScaleSlack of its expected time),
// lent to this member's check: the vendor's lead, and the variant's full-size time on that member
// scaled by rows + entries (members lie within 2x of each other in both, shape_class), so that the
// variant is timed first and the vendor only where the variant disappoints. A mini-batch loop's
// second and third members no longer each pay the vendor at full size (GraphBLAS on a sampled
// subgraph of the 2-core CPU: 5.4 ms against the op's 0.9 ms). lead_field: "skip_margin" (the
// probe's lead, for this class's own members) or "lead" (the vendor's lead however it was seen, for
// another reduction's members, sibling_hit: below kSkipMargin check.cpp times the vendor on the
// block sample first, as after a probe).
void lend_skip_evidence(PlanState& p, const Record& r, const char* lead_field, const char* source) {
  const double lead = std::atof(field(r, lead_field).c_str());
  const double pick_s = std::atof(field(r, "pick_ms").c_str()) * 1e-3;
  const double work = std::atof(field(r, "pick_work").c_str());
  if (lead > 0 && pick_s > 0 && work > 0 && p.class_work > 0) {
    const double expected = pick_s * p.class_work / work;
    p.probe = {expected, expected * lead, 1.0, 0.0, source};
  }
}

// spmm's sum and mean run the same native kernels at the same cost (mean is sum's finish divided by
// the row's length); only the vendor may differ (cuSPARSE sums only: a mean's guardrail stands a
// native variant in for it). A GNN's mean aggregation is followed in its backward pass by sums over
// the transposed matrix of the same shape, each decided cold (the products-sized SAGE twin's first
// epoch: probes of 168 and 122 ms for its two backward widths, of 568 ms for all five; H100,
// benchmarks/results/2026-12-07-s39.md). So a shape with no class of its own for sum (mean) takes the
// native pick of its class for mean (sum), and is checked at full size against this call's own
// vendor, as a learning class's member is, with that class's evidence where the vendor is the same:
// the pick never runs unchecked on another reduction's evidence, and the check teaches this
// reduction's own class. A sibling class that holds its vendor, or whose pick does not apply to this
// call, lends nothing.
template <class KeyFor>
bool sibling_hit(PlanState& p, const CacheFile& cache, const void* args, const KeyFor& key_for) {
  if (p.op != SPARSEPORT_OP_SPMM || (p.info.reduce != SPARSEPORT_REDUCE_SUM && p.info.reduce != SPARSEPORT_REDUCE_MEAN))
    return false;
  ProblemInfo other = p.info;
  other.reduce = p.info.reduce == SPARSEPORT_REDUCE_SUM ? SPARSEPORT_REDUCE_MEAN : SPARSEPORT_REDUCE_SUM;
  bool stale = false;
  const std::shared_ptr<const Record> r = cache.lookup_shared(key_for(other), p.versions, &stale, false);
  if (r == nullptr) return false;
  const std::string &variant = field(*r, "variant"), &their_vendor = field(*r, "vendor");
  if (variant.empty() || variant == their_vendor || !offers(*p.plugin, p.op, variant) ||
      !may_run(*p.plugin, p.op, variant, p.exec))
    return false;
  const std::vector<std::string> applicable = applicable_variants(*p.plugin, p.op, args, p.exec);
  if (std::find(applicable.begin(), applicable.end(), variant) == applicable.end()) return false;
  const std::string vendor = vendor_of(*p.plugin, p.op, applicable);
  if (vendor.empty() || variant == vendor) return false;
  const char* from = other.reduce == SPARSEPORT_REDUCE_SUM ? "sum" : "mean";
  p.decided = true;
  p.decision.variant = variant;
  p.decision.vendor = vendor;
  p.decision.source = "class";
  p.decision.reason = "shape class " + p.class_text + " of spmm " + from + ": " + variant +
                      " (the same kernels at the same cost), checked against " + vendor;
  p.verify_pending = true;
  // The same vendor: its lead over the pick there (check.cpp then leaves it out, or times it on the
  // block sample, on that evidence as on a probe's).
  if (vendor == their_vendor) lend_skip_evidence(p, *r, "lead", "on a member of its shape class of another reduction");
  return true;
}

}  // namespace

bool class_hit(PlanState& p, const sparseport_csr& a, const void* args, const std::string& device_hash,
               const sparseport_csr_summary* summary) {
  if (!class_applies(p)) return false;
  Features f;
  sparseport_csr_summary s;
  if (p.plugin->table->memory_space == SPARSEPORT_MEMORY_DEVICE) {
    // One pass where A lives (a kernel on cuda): the row lengths, which are all a class reads
    // (shape_class.hpp), where the plugin can give them alone, without FEATURES's pass over every
    // entry and its sorted blocks: on an H100, sampled subgraphs of 50k entries on fresh arrays, the
    // kernel takes 13 us against 21 us of GPU time, the call with the check 19-20 us against
    // 26-28 us (benchmarks/results/2026-12-06-h100-summary-stage.md). A cold decision reuses a
    // FEATURES summary, and makes one after a DEGREES one.
    const uint32_t bits = class_summary_bits(*p.plugin);
    try {
      s = summary != nullptr ? *summary : summarize(*p.plugin, p.exec, a, SPARSEPORT_SUMMARY_SIGNATURE | bits);
      f = features_of(s, p.info, p.opt.hub_threshold);
      if (bits == SPARSEPORT_SUMMARY_FEATURES) p.features = f;
    } catch (const Error&) {
      return false;  // decide() reads the summary again and reports what it must
    }
  } else {
    // Host memory: the row lengths only (one pass over rowptr), not the summary's pass over every
    // entry (1.3-1.8 ms on a 50k-entry sampled subgraph on the 2-core CPU, 15 % of its spmm; the
    // degree part is about 5 % of that). The class uses no more than these.
    s = degree_summary(a);
    f = features_of(s, p.info, p.opt.hub_threshold);
  }
  p.class_work = static_cast<double>(s.rows + s.nnz);
  p.class_text = shape_class(f);
  const auto key_for = [&](const ProblemInfo& info) {
    return device_hash + "/class:" + p.class_text + "/" + op_name(p.op) + "/F" + std::to_string(info.features) + "/" +
           type_suffix(info) + (tf32_in_play(*p.plugin, p.op, p.exec) ? "/tf32" : "");
  };
  p.class_key = key_for(p.info);
  bool stale = false;
  const CacheFile cache(p.opt.cache_dir);
  const std::shared_ptr<const Record> r = cache.lookup_shared(p.class_key, p.versions, &stale, !p.cache_read);
  if (r == nullptr) return sibling_hit(p, cache, args, key_for);
  const std::string &variant = field(*r, "variant"), &vendor = field(*r, "vendor");
  if (variant.empty() || vendor.empty() || !offers(*p.plugin, p.op, variant) || !may_run(*p.plugin, p.op, variant, p.exec))
    return false;
  const int checks = checks_of(*r);
  const double margin = margin_of(*r);
  const bool is_ready = ready(checks, margin, p.opt.class_checks);
  const bool recheck = is_ready && member_hash(s) % class_recheck_every(margin) == 0;
  // A class holding the vendor has nothing to check (the check compares a variant with the vendor):
  // its rechecks are cold decisions instead, which relearn the class when a native wins (one noisy
  // probe on a loaded machine had put a class on spmm.graphblas, 4-5x merge_path, for good).
  if (recheck && variant == vendor) return false;
  p.decided = true;
  p.decision.variant = variant;
  p.decision.vendor = vendor;
  p.decision.source = "class";
  p.decision.reason = "shape class " + p.class_text + ": " + variant + " kept in " + std::to_string(checks) +
                      " full-size check(s) against the vendor on other matrices of this shape" +
                      (is_ready ? (recheck ? "; this member is checked again" : "") : "; this member is checked too");
  p.verify_pending = !is_ready || recheck;
  // Each member builds its own state: where the member's expected calls do not repay the variant's
  // build (the times of the member that taught the class, whose ratios a member within 2x of its
  // shape shares), the vendor runs, unchecked, and the class learns nothing from this member.
  if (const std::optional<std::string> why = amortised(*r, p.opt.expected_calls)) {
    p.decision.variant = vendor;
    p.decision.reason = "shape class " + p.class_text + ": " + *why;
    p.verify_pending = false;
    return true;
  }
  // A learning class lends this member's check its evidence that the vendor lost (lend_skip_evidence).
  // Rechecks of a ready class still time the vendor: they are how a class that stopped holding is
  // caught.
  if (!is_ready) lend_skip_evidence(p, *r, "skip_margin", "on another member of its shape class");
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
  // The evidence a later member's check may reuse (class_hit), where this check left the vendor out;
  // and for another reduction's members (sibling_hit) the vendor's lead whichever way it was seen:
  // on the probe, on the block sample, or timed at full size.
  const auto pick = p.full_size_s.find(p.decision.variant);
  if (pick != p.full_size_s.end() && pick->second > 0 && p.class_work > 0) {
    char buf[32];
    if (p.skip_margin >= kSkipMargin) {
      std::snprintf(buf, sizeof buf, "%.4g", p.skip_margin);
      r["skip_margin"] = buf;
    }
    const double lead = p.skip_margin > 0 ? p.skip_margin : (p.block_lead > 0 ? p.block_lead : margin);
    if (lead > 0) {
      std::snprintf(buf, sizeof buf, "%.4g", lead);
      r["lead"] = buf;
    }
    std::snprintf(buf, sizeof buf, "%.6g", pick->second * 1e3);
    r["pick_ms"] = buf;
    std::snprintf(buf, sizeof buf, "%.0f", p.class_work);
    r["pick_work"] = buf;
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
