// SPDX-License-Identifier: Apache-2.0
// The roofline-style estimate (DESIGN.md section 4, step 3): a time per variant from the bytes it
// must move, the gathered bytes that miss the last-level cache, its launch cost, and the
// imbalance the degree tail causes for the variants that map a row to one worker. It only ranks;
// the probe measures.
#pragma once

#include <string>
#include <vector>

#include "scheduler/features.hpp"

namespace sparseport::scheduler {

struct Machine {
  bool gpu = false;
  double bandwidth = 0;     // bytes/s the estimate assumes for streaming traffic
  double cache_bytes = 0;   // L2 (GPU) or L3 (CPU)
  double workers = 1;       // SMs x resident warps (GPU) or threads (CPU)
  double launch_s = 0;      // fixed cost of one kernel launch or parallel region
};
Machine machine(const DeviceSignature& sig);

struct Estimate {
  std::string variant;
  double seconds = 0;
  double bytes = 0;        // DRAM bytes the model charges
  double imbalance_s = 0;  // the longest single worker's time (0 when the variant balances nnz)
  std::string why;         // the dominant term, for the log
};

// How a variant maps work to workers, read from its stable name: "rows", "balanced", "hub_split",
// "atomic", "serial" or "vendor" (the learned model's fallback family for an unknown variant).
std::string mapping_name(const std::string& variant);

// The problem's roofline floor: its compulsory DRAM bytes at the streaming bandwidth plus one
// launch. The learned model predicts each variant's time as a multiple of it.
double floor_seconds(const Machine& m, const Features& f, const ProblemInfo& p);

// Estimates for the given (applicable) variants, fastest first.
std::vector<Estimate> estimate(const Machine& m, const Features& f, const ProblemInfo& p,
                               const std::vector<std::string>& variants);

}  // namespace sparseport::scheduler
