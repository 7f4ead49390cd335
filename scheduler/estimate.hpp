// SPDX-License-Identifier: Apache-2.0
// The roofline-style estimate (DESIGN.md section 4, step 3): a time per variant from the bytes it
// must move, the gathered bytes that miss the last-level cache, its launch cost, and the
// imbalance the degree tail causes for the variants that map a row to one worker. It only ranks;
// the probe measures.
#pragma once

#include <string>
#include <vector>

#include "scheduler/signature.hpp"

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

// Estimates for the given (applicable) variants, fastest first.
std::vector<Estimate> estimate(const Machine& m, const Features& f, const ProblemInfo& p,
                               const std::vector<std::string>& variants);

}  // namespace sparseport::scheduler
