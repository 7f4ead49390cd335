/* SPDX-License-Identifier: Apache-2.0 */
/* What the kokkos plugin keeps across calls, for tests and tools that need to see it (plan reuse).
 * Not part of the plugin table. */
#ifndef SPARSEPORT_KOKKOS_DIAGNOSTICS_H
#define SPARSEPORT_KOKKOS_DIAGNOSTICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The process's kokkos plan cache (one for every kokkos context: they share Kokkos's default
 * instance). Counts since the process started; entries: the plans held now. */
typedef struct sparseport_kokkos_diagnostics {
  uint64_t plan_entries, plan_hits, plan_misses, plan_invalidated, plan_evicted;
} sparseport_kokkos_diagnostics;

/* Returns 0 on success. */
int sparseport_kokkos_get_diagnostics(sparseport_kokkos_diagnostics* out);

#ifdef __cplusplus
}
#endif

#endif /* SPARSEPORT_KOKKOS_DIAGNOSTICS_H */
