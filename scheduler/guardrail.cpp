// SPDX-License-Identifier: Apache-2.0
#include "scheduler/guardrail.hpp"

#include <cstdio>

namespace sparseport::scheduler {

Verdict guardrail(const std::vector<std::pair<std::string, double>>& native, const std::string& vendor,
                  double vendor_seconds, double alpha, const std::string& on) {
  const std::pair<std::string, double>* best = nullptr;
  for (const auto& n : native)
    if (n.second >= 0 && (best == nullptr || n.second < best->second)) best = &n;
  char buf[256];
  if (best == nullptr) return {vendor, "no native candidate ran " + on + "; using the vendor variant"};
  if (vendor_seconds < 0) {
    std::snprintf(buf, sizeof buf, "the vendor variant failed %s; %s was fastest (%.4g ms)", on.c_str(),
                  best->first.c_str(), best->second * 1e3);
    return {best->first, buf};
  }
  if (best->second <= alpha * vendor_seconds) {
    std::snprintf(buf, sizeof buf, "%s %.4g ms <= alpha %.2f x %s %.4g ms %s (%.2fx)", best->first.c_str(),
                  best->second * 1e3, alpha, vendor.c_str(), vendor_seconds * 1e3, on.c_str(), vendor_seconds / best->second);
    return {best->first, buf};
  }
  std::snprintf(buf, sizeof buf, "guardrail: best native %s %.4g ms > alpha %.2f x %s %.4g ms; keeping the vendor",
                best->first.c_str(), best->second * 1e3, alpha, vendor.c_str(), vendor_seconds * 1e3);
  return {vendor, buf};
}

}  // namespace sparseport::scheduler
