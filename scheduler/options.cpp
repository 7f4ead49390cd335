// SPDX-License-Identifier: Apache-2.0
#include "scheduler/options.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "sparseport/errors.hpp"

namespace sparseport::scheduler {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

double env_double(const char* name, double lo, double hi, double fallback) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d >= lo && d <= hi))
    throw InvalidArgument(std::string("sparseport scheduler: ") + name + "='" + v + "' is not a number in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return d;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* d = env("SPARSEPORT_CACHE_DIR")) return d;
  if (const char* x = env("XDG_CACHE_HOME")) return std::string(x) + "/sparseport";
  if (const char* h = env("HOME")) return std::string(h) + "/.cache/sparseport";
  return ".sparseport-cache";
}

SchedulerOptions resolve(const SchedulerOptions& given) {
  SchedulerOptions o = given;
  if (o.mode == SchedulerMode::from_env) {
    const char* m = env("SPARSEPORT_SCHEDULER");
    const std::string_view s = m != nullptr ? m : "auto";
    if (s == "auto") o.mode = SchedulerMode::automatic;
    else if (s == "off") o.mode = SchedulerMode::off;
    else if (s == "probe") o.mode = SchedulerMode::probe;
    else if (s == "replay") o.mode = SchedulerMode::replay;
    else if (s == "model") o.mode = SchedulerMode::model;
    else
      throw InvalidArgument("sparseport scheduler: SPARSEPORT_SCHEDULER='" + std::string(s) +
                            "' is not one of auto, off, probe, replay, model");
  }
  if (o.probe_frac <= 0) o.probe_frac = env_double("SPARSEPORT_PROBE_FRAC", 1e-6, 1.0, 0.03);
  if (o.min_probe_rows <= 0) o.min_probe_rows = 512;
  if (o.alpha <= 0) o.alpha = env_double("SPARSEPORT_ALPHA", 1e-3, 10.0, 0.95);
  if (o.top_k <= 0) o.top_k = static_cast<int>(env_double("SPARSEPORT_TOPK", 1, 64, 3));
  if (o.hub_threshold <= 0) o.hub_threshold = static_cast<int64_t>(env_double("SPARSEPORT_HUB_T", 1, 1e12, 256));
  if (o.probe_repeats <= 0) o.probe_repeats = static_cast<int>(env_double("SPARSEPORT_PROBE_REPEATS", 1, 1000, 5));
  if (o.full_size_ms <= 0) o.full_size_ms = env_double("SPARSEPORT_FULL_SIZE_MS", 1e-6, 1e6, 2.5);
  if (o.cache_dir.empty()) o.cache_dir = default_cache_dir();
  if (o.class_checks == 0) {
    o.class_checks = static_cast<int>(env_double("SPARSEPORT_CLASS_CHECKS", 0, 1000, 3));
    if (o.class_checks == 0) o.class_checks = -1;
  }
  if (o.expected_calls <= 0) o.expected_calls = static_cast<int64_t>(env_double("SPARSEPORT_EXPECTED_CALLS", 0, 1e15, 0));
  if (!o.log) {
    const char* l = env("SPARSEPORT_LOG");
    o.log = l != nullptr && std::string_view(l).find("scheduler") != std::string_view::npos;
  }
  return o;
}

void log(const SchedulerOptions& opt, const std::string& line) {
  if (opt.log) std::fprintf(stderr, "sparseport scheduler: %s\n", line.c_str());
}

void warn(const std::string& line) { std::fprintf(stderr, "sparseport scheduler: warning: %s\n", line.c_str()); }

}  // namespace sparseport::scheduler
