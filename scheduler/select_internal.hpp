// SPDX-License-Identifier: Apache-2.0
// Internal to the files of the scheduler's pipeline (select.cpp lists them and their order): what
// one stage file defines and another calls. Not for use outside scheduler/select*.cpp.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/cache.hpp"
#include "scheduler/select.hpp"

namespace sparseport::scheduler {

using Clock = std::chrono::steady_clock;

// select_variants.cpp
bool deterministic(const sparseport_exec& exec);
bool is_deterministic(const PluginInfo& plugin, sparseport_op op, const std::string& variant);
// TF32 consent (SPARSEPORT_EXEC_ALLOW_TF32) and the variants that need it (VariantInfo::tf32).
bool allows_tf32(const sparseport_exec& exec);
bool is_tf32(const PluginInfo& plugin, sparseport_op op, const std::string& variant);
// exec allows TF32 and plugin offers a TF32 variant of op: consent changes what may run, so the
// decision keys carry "/tf32" (elsewhere the candidates, and the decision, are the same either way).
bool tf32_in_play(const PluginInfo& plugin, sparseport_op op, const sparseport_exec& exec);
// Whether exec lets variant run: deterministic mode only flagged ones, TF32 ones only with consent.
bool may_run(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const sparseport_exec& exec);
bool offers(const PluginInfo& plugin, sparseport_op op, const std::string& variant);
// More than one variant of op, so that there is something to decide (no list of names built: every
// call and every decision asks).
bool offers_choice(const PluginInfo& plugin, sparseport_op op);
std::string select_in(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                      const std::string& where, const sparseport_exec& exec);
std::vector<std::string> applicable_variants(const PluginInfo& plugin, sparseport_op op, const void* args,
                                             const sparseport_exec& exec);

// select.cpp
double since(Clock::time_point t0);
std::string ms(double s);
std::string label(const detail::PlanState& p);
const sparseport_csr* csr_of(sparseport_op op, const void* args);
// A record's field, empty where it has none (records are shared and const: no operator[]).
const std::string& field(const Record& r, const char* name);
// Makes `plan` the one last_decision() reports on this thread.
void remember_last(const std::shared_ptr<detail::PlanState>& plan);

// select_decide.cpp
Record base_record(const detail::PlanState& p);
void store(const detail::PlanState& p, Record r);
void measured(detail::PlanState& p, const std::string& v, double seconds);
// The variant's first full-size call on this matrix took first_seconds: what it spent beyond the
// steady time measured() holds is the variant's build (its per-matrix state).
void built(detail::PlanState& p, const std::string& v, double first_seconds);
// Where a record's variant and vendor were both timed at full size with their builds and the plan
// expects expected_calls calls (SchedulerOptions::expected_calls; 0: many, never): why the vendor runs
// instead, when the variant's steady + build / expected_calls exceeds the vendor's; else nothing.
std::optional<std::string> amortised(const Record& r, int64_t expected_calls);
void decide(detail::PlanState& p, const void* args, const std::vector<std::string>& applicable);

// select_class.cpp. Whether p may be decided by a shape class at all (automatic mode, class checks
// on, not deterministic).
bool class_applies(const detail::PlanState& p);
// What a device plugin's summary must hold for a class decision: DEGREES where the plugin speaks
// ABI 1.9 (the row lengths alone), else FEATURES.
uint32_t class_summary_bits(const PluginInfo& plugin);
// prepare() after the exact key missed; the features computed stay in the plan when the summary
// held FEATURES (else a cold decision summarizes again).
// `summary`: A's device summary with class_summary_bits already made (prepare()'s one pass), else null.
// `args`: the call's (a sibling reduction's class is checked against this call's own vendor).
bool class_hit(detail::PlanState& p, const sparseport_csr& a, const void* args, const std::string& device_hash,
               const sparseport_csr_summary* summary = nullptr);
// A member's final decision (made cold, or checked at full size) teaches its class.
void class_learn(detail::PlanState& p);

// select_check.cpp
void check(detail::PlanState& p, const void* args, const std::string& where);

// select_via_f32.cpp
void run_via_f32(const std::shared_ptr<detail::PlanState>& plan, const void* args, std::string_view requested,
                 const std::string& where);
void decide_via(const std::shared_ptr<detail::PlanState>& plan, const void* args, const std::string& native,
                const std::string& where);

}  // namespace sparseport::scheduler
