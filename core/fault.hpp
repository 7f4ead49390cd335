// SPDX-License-Identifier: Apache-2.0
// Fault injection, for tests of faults that cannot be made on demand (a full disk, a refused file
// lock, a failed cudaMalloc on a machine with memory to spare). A site is a named place in the
// library that, when armed, fails as the real fault would. Armed by the environment variable
// SPARSEPORT_FAULT_INJECT=site[,site...] (read at the first check) or by set_fault_sites (tests).
// Always compiled in: an unarmed check is one relaxed atomic load.
//
// A site may be armed as `site@N`: its first N checks pass and the next one fails, once (then the
// site is disarmed). Stepping N over 0, 1, 2, ... fails each allocation of an op in turn: the
// out-of-memory tests reach every allocation an op makes, in the middle of its plan as well.
//
//   host_alloc    the host alloc slots (reference, openmp, kokkos on a host memory space) fail as
//                 if aligned_alloc returned null: Context::allocate raises OutOfMemory
//   device_alloc  the cuda plugin's cudaMalloc and its scratch pool's cudaMallocFromPoolAsync (plans,
//                 formats, an op's temporaries; kokkos on a device memory space) fail with
//                 cudaErrorMemoryAllocation: Context::allocate or the op raises OutOfMemory
//   cache_write   the decision cache's write of a line stops half-way with ENOSPC (a full disk)
//   cache_read    reading the decision cache fails with EIO
//   cache_lock    flock on the decision cache fails with ENOLCK (a file system without locks)
#pragma once

#include <string>
#include <string_view>

namespace sparseport::detail {

// Whether `site` is armed. Never throws; an unknown site is never armed.
bool fault_armed(std::string_view site) noexcept;

// Test-only: arms exactly the comma-separated `sites` ("" disarms every site) and returns the list
// that was armed before, a counted site as `site@K` with K the checks it still lets pass (a counted
// site that has fired is no longer listed). Throws InvalidArgument naming an unknown site or a bad
// count, and the known sites.
std::string set_fault_sites(std::string_view sites);

// Test-only: forgets what set_fault_sites armed; the next check reads SPARSEPORT_FAULT_INJECT again.
void reset_fault_sites_from_env();

// The sites fault_armed knows, comma-separated.
const char* known_fault_sites();

}  // namespace sparseport::detail
