// SPDX-License-Identifier: Apache-2.0
// Plans (plan.hpp): validate the sparse operand once, prepare the scheduler's state once, then
// each run() checks only the dense operands and executes the decided variant.
#include "scheduler/cache.hpp"
#include "scheduler/options.hpp"
#include "scheduler/select.hpp"
#include "core/validated.hpp"
#include "src/ops/common.hpp"

namespace sparseport {

const char* name(SchedulerMode m) {
  switch (m) {
    case SchedulerMode::automatic: return "auto";
    case SchedulerMode::off: return "off";
    case SchedulerMode::probe: return "probe";
    case SchedulerMode::replay: return "replay";
    case SchedulerMode::model: return "model";
    default: return "from_env";
  }
}

namespace {

// A plan with an explicit variant never consults the scheduler; its decision says so.
std::shared_ptr<detail::PlanState> requested_state(const std::string& variant) {
  auto s = std::make_shared<detail::PlanState>();
  s->decided = true;
  s->decision.variant = variant;
  s->decision.source = "requested";
  s->decision.reason = "the caller named the variant";
  return s;
}

// What every plan constructor shares after its sparse operand was checked: F must be >= 0, and a
// named variant bypasses the scheduler; otherwise `shape` (the op's args with null dense data)
// goes to scheduler::prepare under `exec` (the context's, with the plan's TF32 consent).
template <class Args>
std::shared_ptr<detail::PlanState> plan_state(const Context& ctx, const sparseport_exec& exec, sparseport_op op,
                                              const std::string& w, int64_t features, const std::string& variant,
                                              const Args& shape, const SchedulerOptions& sched,
                                              bool check_indices = false) {
  if (features < 0) throw InvalidArgument(w + ": features " + std::to_string(features) + " is negative");
  if (!variant.empty()) return requested_state(variant);
  return scheduler::prepare(ctx.plugin(), exec, op, &shape, sched, check_indices);
}

// The same for a plan over a CSR A, with A's checks: its sizes and pointers first. Its index
// contents in device memory ride on the scheduler's signature pass over A when the plan makes one
// (SPARSEPORT_SUMMARY_CHECK): the extra bytes only, where a check of its own costs a launch, a
// copy back and a synchronisation (about 20 us on an H200, as long as a 1M-entry spmm). Otherwise
// (host memory, a named variant, a single variant, a plugin that cannot) check_csr checks them.
// prepare() reads A only for its signature (hashes, defined for any contents) and stops at a
// violation, so nothing reads A by its indices before they are known good.
template <class Args>
std::shared_ptr<detail::PlanState> csr_plan_state(const Context& ctx, const sparseport_exec& exec, sparseport_op op,
                                                  const std::string& w, const CsrView& a, int64_t features,
                                                  const std::string& variant, const Args& shape,
                                                  const SchedulerOptions& sched) {
  ops::check_csr_shape(w, "A", a);
  if (!variant.empty() || !ops::csr_check_can_ride(ctx)) {
    ops::check_csr(ctx, w, "A", a, /*plan=*/true);
    return plan_state(ctx, exec, op, w, features, variant, shape, sched);
  }
  std::shared_ptr<detail::PlanState> state = plan_state(ctx, exec, op, w, features, variant, shape, sched, true);
  ops::csr_after_summary(ctx, w, a, state->index_problem);
  return state;
}

// run(): the dense operand that carries F must have the plan's F.
void check_features(const std::string& w, const char* arg, int64_t got, int64_t want) {
  if (got != want)
    throw DimensionMismatch(w + ": " + arg + " has " + std::to_string(got) + " columns but the plan was made for F = " +
                            std::to_string(want));
}

// A named variant runs under `exec` as of this call (the context's, with the plan's TF32 option).
template <class Args>
void run_plan(const Context& ctx, const sparseport_exec& exec, const std::shared_ptr<detail::PlanState>& state,
              sparseport_op op, const Args& args, const std::string& requested, const std::string& w) {
  if (!requested.empty()) {
    scheduler::run(ctx.plugin(), exec, op, &args, requested, w);
    // 16-bit values: whether the named variant took them or ran on float32 copies.
    state->decision.via_f32 = scheduler::last_decision().via_f32;
    return;
  }
  scheduler::execute(state, &args, w);
}

}  // namespace

SpmmPlan::SpmmPlan(const Context& ctx, const CsrView& a, int64_t features, const SpmmOptions& opt,
                   const SchedulerOptions& sched)
    : ctx_(ctx), a_(a), features_(features), opt_(opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SPMM) + " (SpmmPlan)";
  const int32_t vt = static_cast<int32_t>(a.value_type);
  const sparseport_spmm_args probe_shape{ops::to_abi(a), {a.cols, features, features, nullptr, vt},
                                         {a.rows, features, features, nullptr, vt}, static_cast<int32_t>(opt.reduce),
                                         opt.alpha, opt.beta, nullptr, 0};
  state_ = csr_plan_state(ctx, ops::exec_for(ctx, opt.allow_tf32), SPARSEPORT_OP_SPMM, w, a, features, opt.variant,
                          probe_shape, sched);
}

void SpmmPlan::run(const DenseView& b, const DenseMutView& c) {
  const std::string w = ops::where(ctx_, SPARSEPORT_OP_SPMM) + " (SpmmPlan)";
  check_features(w, "B", b.cols, features_);
  if (const auto args = ops::spmm_args(ctx_, w, a_, b, c, opt_, false))
    run_plan(ctx_, ops::exec_for(ctx_, opt_.allow_tf32), state_, SPARSEPORT_OP_SPMM, *args, opt_.variant, w);
}

const Decision& SpmmPlan::decision() const { return state_->decision; }

SddmmPlan::SddmmPlan(const Context& ctx, const CsrView& a, int64_t features, const OpOptions& opt,
                     const SchedulerOptions& sched)
    : ctx_(ctx), a_(a), features_(features), opt_(opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_SDDMM) + " (SddmmPlan)";
  const int32_t vt = static_cast<int32_t>(a.value_type);
  const sparseport_sddmm_args probe_shape{ops::to_abi(a), {a.rows, features, features, nullptr, vt},
                                          {a.cols, features, features, nullptr, vt}, {a.nnz, 1, 1, nullptr, vt}};
  state_ = csr_plan_state(ctx, ctx.exec(), SPARSEPORT_OP_SDDMM, w, a, features, opt.variant, probe_shape, sched);
}

void SddmmPlan::run(const DenseView& x, const DenseView& y, const DenseMutView& out) {
  const std::string w = ops::where(ctx_, SPARSEPORT_OP_SDDMM) + " (SddmmPlan)";
  check_features(w, "X", x.cols, features_);
  if (const auto args = ops::sddmm_args(ctx_, w, a_, x, y, out, false))
    run_plan(ctx_, ctx_.exec(), state_, SPARSEPORT_OP_SDDMM, *args, opt_.variant, w);
}

const Decision& SddmmPlan::decision() const { return state_->decision; }

AttentionPlan::AttentionPlan(const Context& ctx, const CsrView& a, int64_t features, const AttentionOptions& opt,
                             const SchedulerOptions& sched)
    : ctx_(ctx), a_(a), features_(features), opt_(opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_CSR_ATTENTION) + " (AttentionPlan)";
  const int32_t vt = static_cast<int32_t>(a.value_type);
  const sparseport_attention_args probe_shape{ops::to_abi(a),
                                              {a.rows, features, features, nullptr, vt},
                                              {a.cols, features, features, nullptr, vt},
                                              {a.cols, features, features, nullptr, vt},
                                              {a.rows, features, features, nullptr, vt},
                                              1.0};
  state_ = csr_plan_state(ctx, ctx.exec(), SPARSEPORT_OP_CSR_ATTENTION, w, a, features, opt.variant, probe_shape,
                          sched);
}

void AttentionPlan::run(const DenseView& q, const DenseView& k, const DenseView& v, const DenseMutView& out) {
  const std::string w = ops::where(ctx_, SPARSEPORT_OP_CSR_ATTENTION) + " (AttentionPlan)";
  check_features(w, "Q", q.cols, features_);
  if (const auto args = ops::attention_args(ctx_, w, a_, q, k, v, out, opt_, false))
    run_plan(ctx_, ctx_.exec(), state_, SPARSEPORT_OP_CSR_ATTENTION, *args, opt_.variant, w);
}

const Decision& AttentionPlan::decision() const { return state_->decision; }

GatherScatterPlan::GatherScatterPlan(const Context& ctx, const CooView& edges, int64_t features,
                                     const ReduceOptions& opt, const SchedulerOptions& sched)
    : ctx_(ctx), edges_(edges), features_(features), opt_(opt) {
  const std::string w = ops::where(ctx, SPARSEPORT_OP_GATHER_SCATTER) + " (GatherScatterPlan)";
  if (edges.rows < 0 || edges.cols < 0 || edges.nnz < 0) throw InvalidArgument(w + ": edges has a negative size");
  ops::check_index(ctx, w, "edges.row (dst)", {edges.nnz, edges.row, edges.index_type}, edges.rows, true, /*plan=*/true);
  ops::check_index(ctx, w, "edges.col (src)", {edges.nnz, edges.col, edges.index_type}, edges.cols, false, /*plan=*/true);
  const int32_t vt = static_cast<int32_t>(edges.value_type);
  const sparseport_gather_scatter_args probe_shape{ops::to_abi(edges), {edges.cols, features, features, nullptr, vt},
                                                   {edges.rows, features, features, nullptr, vt},
                                                   static_cast<int32_t>(opt.reduce)};
  state_ = plan_state(ctx, ctx.exec(), SPARSEPORT_OP_GATHER_SCATTER, w, features, opt.variant, probe_shape, sched);
}

void GatherScatterPlan::run(const DenseView& x, const DenseMutView& out) {
  const std::string w = ops::where(ctx_, SPARSEPORT_OP_GATHER_SCATTER) + " (GatherScatterPlan)";
  check_features(w, "x", x.cols, features_);
  if (const auto args = ops::gather_scatter_args(ctx_, w, edges_, x, out, opt_, false))
    run_plan(ctx_, ctx_.exec(), state_, SPARSEPORT_OP_GATHER_SCATTER, *args, opt_.variant, w);
}

const Decision& GatherScatterPlan::decision() const { return state_->decision; }

// ---- cache and signatures -------------------------------------------------------------------------

std::string decision_cache_file(const SchedulerOptions& opt) {
  return scheduler::CacheFile(scheduler::resolve(opt).cache_dir).path;
}

std::vector<std::string> decision_cache_lines(const SchedulerOptions& opt) {
  std::vector<std::string> out;
  for (const scheduler::Record& r : scheduler::CacheFile(scheduler::resolve(opt).cache_dir).read())
    out.push_back(scheduler::format_record(r));
  return out;
}

size_t clear_decision_cache(const SchedulerOptions& opt) {
  return scheduler::CacheFile(scheduler::resolve(opt).cache_dir).clear();
}

void clear_plan_memo() {
  scheduler::clear_memo();
  detail::forget_all_validated();  // device index arrays are checked again on their next call
}

Decision last_decision() { return scheduler::last_decision(); }

std::string device_signature(const Context& ctx) {
  return scheduler::device_signature(ctx.plugin(), ctx.exec()).text();
}

}  // namespace sparseport
