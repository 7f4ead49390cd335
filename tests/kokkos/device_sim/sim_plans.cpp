// SPDX-License-Identifier: Apache-2.0
// The backend's plan cache, as backends/kokkos/runtime.cpp defines it (hub_split's and csr_attention's
// hub plans live there), without the rest of the backend's runtime, which the simulations do not use.
#include <Kokkos_Core.hpp>

#include "backends/kokkos/runtime.hpp"

namespace sparseport::kokkos {
// common.hpp's message_chunk in the simulation (generate.cmake): > 0 replaces the kernel's chunk
// length (sim_messages.cpp sets it).
int64_t sim_message_chunk = 0;

PlanCache& plans() {
  static PlanCache* cache = new PlanCache(32, [] { Kokkos::push_finalize_hook([] { plans().clear(); }); });
  return *cache;
}
}  // namespace sparseport::kokkos
