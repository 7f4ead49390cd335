// SPDX-License-Identifier: Apache-2.0
// Where the kokkos backend runs and where its memory lives: decided here, once, from the Kokkos it
// is built against. Kernels run on Kokkos::DefaultExecutionSpace (Serial on Debian's Kokkos 3.4;
// OpenMP, Threads, CUDA or HIP on a user's Kokkos), and every buffer of the plugin lives in that
// space's memory space. When the host cannot read that memory (CudaSpace, HIPSpace) the plugin
// reports SPARSEPORT_MEMORY_DEVICE, so callers stage inputs with Context::allocate and
// copy_to_backend exactly as for the cuda plugin; on Serial/OpenMP it is plain host memory.
#pragma once

#include <Kokkos_Core.hpp>

#include "sparseport/plugin_abi.h"

namespace sparseport::kokkos {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Device = Kokkos::Device<ExecSpace, MemSpace>;

// The one decision about memory (plugin table, copies, tests all follow it).
inline constexpr bool kDeviceMemory = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
inline constexpr int32_t kAbiMemorySpace = kDeviceMemory ? SPARSEPORT_MEMORY_DEVICE : SPARSEPORT_MEMORY_HOST;

}  // namespace sparseport::kokkos
