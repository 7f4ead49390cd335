// SPDX-License-Identifier: Apache-2.0
#include "backends/openmp/device.hpp"

#include <omp.h>

#include <fstream>
#include <thread>

namespace sparseport::openmp {

int resolve_threads(const sparseport_exec* exec) {
  if (exec != nullptr && exec->threads > 0) return exec->threads;
  return omp_get_max_threads();
}

namespace {

// The CPU's marketing name where the OS tells it (Linux), else "host".
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "host" : line.substr(start);
  }
  return "host";
}

}  // namespace

std::string describe_host() {
  return cpu_model() + ": " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads, " +
         std::to_string(omp_get_num_procs()) + " available to OpenMP, default " +
         std::to_string(omp_get_max_threads()) + " threads";
}

}  // namespace sparseport::openmp
