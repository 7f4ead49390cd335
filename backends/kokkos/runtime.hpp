// SPDX-License-Identifier: Apache-2.0
// The kokkos backend's lifecycle and memory: Kokkos started once, by the first context, unless the
// program started it itself; finalised at exit only when it was started here. Memory comes from
// Kokkos::kokkos_malloc in the memory space of backends/kokkos/space.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/plan_cache.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::kokkos {

// Starts Kokkos when nobody has (and arranges Kokkos::finalize at exit); leaves a Kokkos the
// program initialised alone. Throws BackendError when Kokkos can no longer be started (it was
// finalised already: Kokkos allows one initialize per process).
void ensure_initialized();

// Whether this library called Kokkos::initialize (false when the program did).
bool initialized_here();

int context_create(int32_t device, void** state, sparseport_status* st);
void context_destroy(void* state);
int alloc(void* state, size_t bytes, void** ptr, sparseport_status* st);
void release(void* state, void* ptr);
int copy(void* state, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status* st);
int synchronize(void* state, sparseport_status* st);

// State kept across calls for one matrix (hub lists, row partitions): what depends only on A's
// structure is computed once, not per call, so a call pays no scans and no host synchronisation
// for it (core/plan_cache.hpp). Host memory can also be written behind the backend's back (a
// std::vector the caller refills): the kernels that use plans stay correct with a stale one and
// only lose balance (kernels/kokkos/spmm.cpp), as the keys hold the shape but not the contents.
using detail::Plan;
using detail::PlanCache;
using detail::PlanStats;

// One cache for the process, not per context: every context runs on Kokkos's one default
// instance, and a matrix may be used through several contexts. Plans hold Kokkos Views, so the
// cache empties itself in a Kokkos finalize hook (a View must not outlive Kokkos).
PlanCache& plans();

// fn(part, arg) for every part in [0, parts) on the host execution space, then a fence (the run_parts
// slot, ABI 1.10; offered where space.hpp's kRunParts holds).
void run_parts(int64_t parts, void (*fn)(int64_t part, void* arg), void* arg);

// "Kokkos 3.4.1, execution space Serial (concurrency 1), memory space HostSpace (host memory), ...".
std::string describe();

// "exec_space=Serial\nconcurrency=1\nmemory_space=HostSpace\nkokkos_version=3.4.1\n" (ABI 1.1).
std::string signature();

}  // namespace sparseport::kokkos
