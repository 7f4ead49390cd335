// SPDX-License-Identifier: Apache-2.0
// The kokkos backend's lifecycle and memory: Kokkos started once, by the first context, unless the
// program started it itself; finalised at exit only when it was started here. Memory comes from
// Kokkos::kokkos_malloc in the memory space of backends/kokkos/space.hpp.
#pragma once

#include <cstddef>
#include <string>

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

// "Kokkos 3.4.1, execution space Serial (concurrency 1), memory space HostSpace (host memory), ...".
std::string describe();

// "exec_space=Serial\nconcurrency=1\nmemory_space=HostSpace\nkokkos_version=3.4.1\n" (ABI 1.1).
std::string signature();

}  // namespace sparseport::kokkos
