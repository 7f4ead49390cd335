// SPDX-License-Identifier: Apache-2.0
// Stage 5 (DESIGN.md section 4, step 5, second half): a choice made on the probe sample is timed
// once at full size against the vendor on its first call. A choice that loses there is reverted to
// the fastest variant measured at full size (the vendor, or the probe's runner-up when it is
// faster still), not always to the vendor. The last call that runs is the final variant's, so the
// caller's output is the op's result whichever way the check goes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sparseport/context.hpp"

namespace sparseport::scheduler {

struct CheckResult {
  std::string variant;  // what runs from now on
  bool reverted = false;
  std::vector<std::pair<std::string, double>> measured;  // full-size seconds, in the order timed
  double op_seconds = 0;  // the time of the final variant's last call (the op's own, not overhead)
  std::string reason;     // "; reverted: ..." or empty
};

CheckResult full_size_check(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
                            const std::string& chosen, const std::string& vendor, const std::string& runner_up,
                            const std::string& where);

}  // namespace sparseport::scheduler
