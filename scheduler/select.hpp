// SPDX-License-Identifier: Apache-2.0
// Variant selection: the input-aware scheduler of DESIGN.md section 4 behind one front-end call.
//
//   run()      the one-shot path: an explicit variant runs as asked; otherwise the op's plan is
//              found in a process-wide memo (keyed by backend context, sparse operand address,
//              shape, F and types) or prepared, and executed.
//   prepare()  signatures and a cache lookup (no probing): what a Plan does at construction.
//   execute()  decides on first use when the cache missed (estimate, probe, guardrail), verifies
//              a probed decision once at full size against the vendor, then runs the variant.
//
// Policy in one place: the vendor is the first variant the plugin flags as vendor that applies
// (spmm.cusparse_spmv before spmm.cusparse on cuda, so SpMV is checked against cusparseSpMV), else
// the op's default variant (the plain one, e.g. spmm.rows), else the first that applies. Structural ops
// (slice, induced subgraph, transpose) are not probed: they run their default variant.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/check.hpp"
#include "scheduler/features.hpp"
#include "scheduler/guardrail.hpp"
#include "scheduler/values16.hpp"
#include "scheduler/signature.hpp"
#include "sparseport/context.hpp"
#include "sparseport/plan.hpp"

namespace sparseport::detail {

// What a plan (or the one-shot memo) holds.
struct PlanState {
  const PluginInfo* plugin = nullptr;
  sparseport_exec exec{};
  sparseport_op op = SPARSEPORT_OP_SPMM;
  SchedulerOptions opt;  // resolved
  scheduler::ProblemInfo info;
  std::string key;       // cache key: device hash / graph signature / op / F / types
  std::string versions;  // the device signature's versions
  std::string graph;     // graph signature
  scheduler::Structure structure;  // index ops: kept until the decision is made (the probe samples from it)
  // The shape class (select_class.cpp), looked up after the exact key missed: its key ("" when no
  // class applies), and the features it was computed from, which a cold decision then reuses.
  std::string class_key;
  std::string class_text;
  std::optional<scheduler::Features> features;
  Decision decision;
  // For the full-size check and the transfer correction, until the decision is checked.
  std::string runner_up;                        // the probe's second-best native
  scheduler::ProbeEvidence probe;               // the choice's and the vendor's probe times (check.hpp)
  // The shape class's view of this matrix: rows + entries, the work a class member's full-size time
  // is scaled by (select_class.cpp); the vendor's lead on the probe that let check() leave the vendor
  // out of this plan's full-size check (0: it was timed, or there was no check), which class_learn
  // passes on; and the lead on the block sample that left it out instead (extrapolated to full size).
  double class_work = 0;
  double skip_margin = 0;
  double block_lead = 0;
  std::map<std::string, double> raw_prediction;  // the model's log2(t / floor) before correction
  std::map<std::string, double> full_size_s;     // every full-size time measured for this plan (measured())
  std::map<std::string, double> build_s;         // and each variant's build where its first call was timed
  double floor_s = 0;
  std::string device_hash;
  bool transfer = false;  // the model is another device class's: record full-size residuals
  bool decided = false;
  bool verify_pending = false;
  // decide() timed the chosen variant last, on the caller's operands and output: that call was the
  // op's own, and execute_native makes no other (reset there).
  bool output_written = false;
  // prepare() has just brought this process's copy of the cache file up to date (holds_prefix), or
  // found no line of A's shape in a copy checked less than kRecentCheckSeconds ago: the lookups of
  // the same preparation use it without another lstat (one cost a class decision 25-30 us right
  // after a batch's op on the 2-core CPU).
  bool cache_read = false;
  // prepare() with check_indices: what the summary's index check found (sparseport_index_problem;
  // -1: no check was made, e.g. no summary or a plugin that cannot check, so the caller checks).
  int32_t index_problem = -1;
  std::mutex mu;
  // 16-bit values: whether the float32 path runs (-1: not decided yet, 0: a native 16-bit variant,
  // 1: float32 copies), and the copies, used under via_mu.
  int via_f32 = -1;
  std::unique_ptr<scheduler::Scratch> scratch;
  std::mutex via_mu;
};

}  // namespace sparseport::detail

namespace sparseport::scheduler {

// Whether variant applies to args; the reason is written to *why when it does not.
bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why);

// The static choice (requested, else default, else first that applies), without deterministic mode
// or TF32 consent (a TF32 variant is skipped, and refused by name with InvalidArgument). Throws
// Unsupported (message starts with `where`) when requested is not offered or does not apply, or
// nothing applies.
std::string select(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                   const std::string& where);

// The guardrail's reference variant among `applicable`: never a TF32 variant unless nothing else is.
std::string vendor_of(const PluginInfo& plugin, sparseport_op op, const std::vector<std::string>& applicable);

// check_indices: a CSR operand's index contents are checked in the same pass as its signature
// (SPARSEPORT_SUMMARY_CHECK); a violation ends the preparation before anything else reads A.
std::shared_ptr<detail::PlanState> prepare(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                           const void* args, const SchedulerOptions& opt, bool check_indices = false);
void execute(const std::shared_ptr<detail::PlanState>& plan, const void* args, const std::string& where);
// What a process's first decision would otherwise pay on its hot path, paid when a context is
// created instead (Context::create, after the device signature): the decision cache file (from
// SPARSEPORT_CACHE_DIR) read into this process's index, and the code of the operand summary, the
// row-length pass and the lookup run once on a two-row matrix, so that their pages are mapped and
// their calls bound. Never throws; does nothing with SPARSEPORT_SCHEDULER=off.
void warm_up(const PluginInfo& plugin, const sparseport_exec& exec) noexcept;

// A one-shot op's CSR operand whose index contents are still to be checked (device memory, the
// first call on these arrays): the check rides on the scheduler's summary of A where run() prepares
// a plan (SPARSEPORT_SUMMARY_CHECK, the extra bytes of a pass it makes anyway), as a plan's does
// (src/ops/plan.cpp); a check of its own costs a launch, a copy back and a synchronisation.
// `settle(problem)` runs before anything reads A by its indices, with the summary's verdict
// (PlanState::index_problem), or -1 where run() made no summary (a named variant, a single
// variant, a remembered plan): the op's ops::csr_after_summary, which records A as checked, or
// checks it itself and throws on a violation naming the row and the values.
struct IndexRide {
  std::function<void(int32_t problem)> settle;
};

// The one-shot path used by every op of ops.hpp; `ride`: see IndexRide.
void run(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
         std::string_view requested, const std::string& where, const IndexRide* ride = nullptr);
void clear_memo();
// The calling thread's last executed decision (plan.hpp's last_decision()).
Decision last_decision();

}  // namespace sparseport::scheduler
