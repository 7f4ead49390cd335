// SPDX-License-Identifier: Apache-2.0
// The one-shot path every op of ops.hpp takes: a named variant runs as asked; otherwise the op's
// plan comes from a process-wide memo, or is prepared, and is executed.
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "scheduler/options.hpp"
#include "scheduler/select.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/signature.hpp"
#include "scheduler/timing.hpp"
#include "scheduler/values16.hpp"
#include "core/registry.hpp"
#include "sparseport/errors.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

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
  // exec.flags: a deterministic-mode call never reuses a default-mode plan, nor the reverse; nor
  // does a call with TF32 consent reuse one without.
  std::snprintf(buf, sizeof buf, "%p/%p/%d/%d/%d/%p/%p/%lld/%lld/%lld/%lld/%s/%d/%s",
                static_cast<const void*>(plugin.table), exec.state, exec.threads, exec.flags, static_cast<int>(op), p0,
                p1, static_cast<long long>(r),
                static_cast<long long>(c), static_cast<long long>(n), static_cast<long long>(info.features),
                type_suffix(info).c_str(), static_cast<int>(opt.mode), opt.cache_dir.c_str());
  return buf;
}

}  // namespace

void run(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
         std::string_view requested, const std::string& where, const IndexRide* ride) {
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
    if (ride != nullptr) ride->settle(-1);
    run_via_f32(plan, args, requested, where);
    return;
  }
  if (!requested.empty() || (!v16 && (!info.scheduled || opt.mode == SchedulerMode::off || !offers_choice(plugin, op)))) {
    if (ride != nullptr) ride->settle(-1);
    const std::string variant = select_in(plugin, op, args, requested, where, exec);
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
    remember_last(direct);
    return;
  }
  const std::string key = memo_key(exec, plugin, op, args, info, opt);
  std::shared_ptr<PlanState> plan;
  {
    std::lock_guard<std::mutex> lock(memo_mu);
    if (auto it = memo.find(key); it != memo.end()) plan = it->second;
  }
  if (plan != nullptr && ride != nullptr) ride->settle(-1);  // a remembered plan makes no summary
  if (plan == nullptr) {
    plan = prepare(plugin, exec, op, args, opt, /*check_indices=*/ride != nullptr);
    if (ride != nullptr) {
      // The summary's verdict, before the plan is remembered or anything reads A. settle throws on a
      // violation; a plan whose summary found one never runs, whatever settle did.
      ride->settle(plan->index_problem);
      if (plan->index_problem > 0)
        throw Error(where + ": A's index check found problem " + std::to_string(plan->index_problem) +
                    " and the op's check let it through");
    }
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
