// SPDX-License-Identifier: Apache-2.0
// Internal to the files of the scheduler's pipeline (select.cpp lists them and their order): what
// one stage file defines and another calls. Not for use outside scheduler/select*.cpp.
#pragma once

#include <chrono>
#include <memory>
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
bool offers(const PluginInfo& plugin, sparseport_op op, const std::string& variant);
std::string select_in(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                      const std::string& where, bool det);
std::vector<std::string> applicable_variants(const PluginInfo& plugin, sparseport_op op, const void* args, bool det);

// select.cpp
double since(Clock::time_point t0);
std::string ms(double s);
std::string label(const detail::PlanState& p);
const sparseport_csr* csr_of(sparseport_op op, const void* args);
// Makes `plan` the one last_decision() reports on this thread.
void remember_last(const std::shared_ptr<detail::PlanState>& plan);

// select_decide.cpp
Record base_record(const detail::PlanState& p);
void store(const detail::PlanState& p, Record r);
void measured(detail::PlanState& p, const std::string& v, double seconds);
void decide(detail::PlanState& p, const void* args, const std::vector<std::string>& applicable);

// select_class.cpp (prepare() after the exact key missed; the features computed stay in the plan)
bool class_hit(detail::PlanState& p, const sparseport_csr& a, const std::string& device_hash);
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
