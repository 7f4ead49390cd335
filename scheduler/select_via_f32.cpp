// SPDX-License-Identifier: Apache-2.0
// 16-bit values through float32 copies (values16.hpp) on a plan, and the one-time choice between
// that path and a native 16-bit variant.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/options.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/timing.hpp"
#include "scheduler/values16.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

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
  remember_last(plan);
}

namespace {

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

}  // namespace

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
  if (p.via_f32 == 0) remember_last(plan);
}

}  // namespace sparseport::scheduler
