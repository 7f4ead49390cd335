// SPDX-License-Identifier: Apache-2.0
// The scheduler's knobs (DESIGN.md section 4), read from the environment or set in C++, and its log.
#pragma once

#include <string>

#include "sparseport/plan.hpp"

namespace sparseport::scheduler {

// SchedulerOptions with every unset field taken from the environment:
// SPARSEPORT_SCHEDULER, SPARSEPORT_PROBE_FRAC, SPARSEPORT_ALPHA, SPARSEPORT_TOPK, SPARSEPORT_HUB_T,
// SPARSEPORT_PROBE_REPEATS, SPARSEPORT_FULL_SIZE_MS, SPARSEPORT_CACHE_DIR, SPARSEPORT_LOG. A malformed value throws
// InvalidArgument naming the variable and the value.
SchedulerOptions resolve(const SchedulerOptions& given);

// The cache folder: SPARSEPORT_CACHE_DIR, else $XDG_CACHE_HOME/sparseport, else ~/.cache/sparseport.
std::string default_cache_dir();

// One line to stderr, prefixed "sparseport scheduler: ", when opt.log is set.
void log(const SchedulerOptions& opt, const std::string& line);
// A warning to stderr whatever the log setting (corrupt cache lines, reverted decisions).
void warn(const std::string& line);

}  // namespace sparseport::scheduler
