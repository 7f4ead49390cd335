// SPDX-License-Identifier: Apache-2.0
// Where the kokkos backend runs and where its memory lives: decided here, once, from the Kokkos it
// is built against. Kernels run on Kokkos::DefaultExecutionSpace (Serial on Debian's Kokkos 3.4;
// OpenMP, Threads, CUDA or HIP on a user's Kokkos), and every buffer of the plugin lives in that
// space's memory space. When the host cannot read that memory (CudaSpace, HIPSpace) the plugin
// reports SPARSEPORT_MEMORY_DEVICE, so callers stage inputs with Context::allocate and
// copy_to_backend exactly as for the cuda plugin; on Serial/OpenMP it is plain host memory.
#pragma once

#include <Kokkos_Core.hpp>
#include <type_traits>

#include "sparseport/plugin_abi.h"

namespace sparseport::kokkos {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Device = Kokkos::Device<ExecSpace, MemSpace>;

// The one decision about memory (plugin table, copies, tests all follow it).
inline constexpr bool kDeviceMemory = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
inline constexpr int32_t kAbiMemorySpace = kDeviceMemory ? SPARSEPORT_MEMORY_DEVICE : SPARSEPORT_MEMORY_HOST;

// Whether the plugin runs the scheduler's FEATURES parts (the run_parts slot, ABI 1.10): on
// Kokkos-OpenMP, whose workers are OpenMP's and spin after each kernel as the openmp plugin's do, so
// threads of the scheduler's own would wait behind them. Not on Serial (one thread: the
// scheduler's threads do better) nor on a device space (summarized on the device, summarize_csr).
#if defined(KOKKOS_ENABLE_OPENMP)
inline constexpr bool kRunParts = std::is_same_v<ExecSpace, Kokkos::OpenMP>;
#else
inline constexpr bool kRunParts = false;
#endif

}  // namespace sparseport::kokkos
