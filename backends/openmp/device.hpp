// SPDX-License-Identifier: Apache-2.0
// The openmp backend's device is the host: how many threads an op runs on, and a one-line
// description of the CPU for logs, the CLI and (later) the scheduler's device signature.
#pragma once

#include <string>

#include "sparseport/plugin_abi.h"

namespace sparseport::openmp {

// The context's thread count when it set one (> 0), else OpenMP's default: OMP_NUM_THREADS, or
// one thread per available core.
int resolve_threads(const sparseport_exec* exec);

// fn(part, arg) for every part in [0, parts) on the team of an OpenMP parallel region of at most
// resolve_threads(exec) threads (the run_parts slot, ABI 1.10): the workers the ops run on, which
// spin a while after each region, take the parts at once.
void run_parts(const sparseport_exec* exec, int64_t parts, void (*fn)(int64_t part, void* arg), void* arg);

// "AMD EPYC ...: 2 hardware threads, OpenMP default 2 threads".
std::string describe_host();

// The scheduler's device signature ("key=value" lines, plugin_abi.h): CPU model, packages, cores,
// hardware threads, NUMA nodes, L1d/L2/L3 sizes (hwloc when built with it), SIMD width, and the
// thread count the context runs with.
std::string signature(int threads);

}  // namespace sparseport::openmp
