// SPDX-License-Identifier: Apache-2.0
// Stage 4 of a cold decision (DESIGN.md section 4, step 5): a native variant is accepted only when
// it was measured at most alpha times the vendor's time (alpha 0.95 by default), so a choice never
// costs more than the vendor kernel the user could have called instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sparseport::scheduler {

struct Verdict {
  std::string variant, reason;
};
// From measured times (`on` says where: "on the probe", "at full size") (seconds; negative = failed) of the native candidates and the vendor.
Verdict guardrail(const std::vector<std::pair<std::string, double>>& native, const std::string& vendor,
                  double vendor_seconds, double alpha, const std::string& on = "on the probe");

}  // namespace sparseport::scheduler
