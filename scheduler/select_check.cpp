// SPDX-License-Identifier: Apache-2.0
// Stage 5 on the plan: check.cpp times the full-size call; here its measurements, a reversion, the
// log line and the cache record are applied to the plan's decision.
#include <chrono>
#include <functional>
#include <string>

#include "scheduler/cache.hpp"
#include "scheduler/check.hpp"
#include "scheduler/options.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/signature.hpp"
#include "scheduler/timing.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

// Stage 5: the first full-size call after a probe-sample decision.
void check(PlanState& p, const void* args, const std::string& where) {
  const Clock::time_point t0 = Clock::now();
  p.verify_pending = false;
  p.decision.verified = true;
  const std::string chosen = p.decision.variant;
  // The block sample (check.hpp), for CSR ops on host memory: built only if the check asks for it.
  std::function<BlockTimes(double)> blocks;
  if (csr_of(p.op, args) != nullptr && p.plugin->table->memory_space != SPARSEPORT_MEMORY_DEVICE)
    blocks = [&](double fraction) -> BlockTimes {
      if (p.structure.rowptr.empty()) {
        if (p.structure.rows == 0) p.structure = read_structure(*p.plugin, p.exec, p.op, args);
        widen_rowptr(p.structure);
      }
      const ProbeSample::Rows pick = ProbeSample::block_rows(p.structure.rowptr, fraction, kBlocks);
      if (pick.rows.empty()) return {};
      const ProbeSample sample(*p.plugin, p.exec, p.op, args, p.structure, pick,
                               std::to_string(kBlocks) + " blocks of consecutive rows");
      sparseport_status error{};
      const auto once = [&](const std::string& v) { return time_variant(*p.plugin, p.exec, p.op, v, sample.args(), 1, false, &error); };
      if (once(chosen) < 0) return {};  // untimed: it touches the sample's output first
      BlockTimes b;
      b.vendor_s = once(p.decision.vendor);
      b.chosen_s = once(chosen);
      b.work_fraction = sample.work_fraction();
      b.description = sample.description();
      return b;
    };
  const CheckResult r =
      full_size_check(*p.plugin, p.exec, p.op, args, chosen, p.decision.vendor, p.runner_up, where, p.probe, blocks);
  for (const auto& [v, t] : r.measured) measured(p, v, t);
  built(p, p.decision.vendor, r.vendor_first_s);  // where a device's vendor was warmed up
  built(p, chosen, r.chosen_first_s);             // where the chosen variant was timed twice
  // The probe's margin is what a shape class lends its next member (select_class.cpp); a skip on the
  // blocks' evidence lends nothing.
  if (r.vendor_skipped && !r.skipped_on_blocks) p.skip_margin = p.probe.vendor_s / p.probe.chosen_s;
  if (r.skipped_on_blocks) p.block_lead = r.block_lead;  // lent only to another reduction's class (sibling_hit)
  p.decision.reason += r.note;
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
  // What the check cost beyond the op's own call, and a device vendor's warm-up call (not in `text`:
  // the record keeps the steady times), so that a log says where a cold decision's calls went.
  if (p.opt.log) {
    std::string cost = " [" + ms(since(t0) - r.op_seconds) + " beyond the op's call";
    if (r.vendor_first_s >= 0) cost += ", of it " + p.decision.vendor + "'s first call " + ms(r.vendor_first_s);
    log(p.opt, label(p) + ": checked at full size: " + text + (r.reverted ? " -> reverted to " + r.variant : " -> kept") +
                   r.note + cost + "]");
  }
  Record rec = base_record(p);
  rec["full_size"] = text;
  rec["probe_choice"] = chosen;
  store(p, rec);
  class_learn(p);
}

}  // namespace sparseport::scheduler
