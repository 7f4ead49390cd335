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
// for it. A plan lists the byte ranges its key depends on; writing them through copy() or freeing
// them through release() drops the plan, so a matrix rebuilt at the same address is not served it.
// Host memory can also be written behind the backend's back (a std::vector the caller refills):
// the kernels that use plans stay correct with a stale one and only lose balance (kernels/kokkos/
// spmm.cpp), as the keys hold the shape but not the contents.
class Plan {
 public:
  virtual ~Plan() = default;
  void watch(const void* p, size_t bytes) {
    if (p != nullptr && bytes > 0)
      watched_.push_back({reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + bytes});
  }
  bool overlaps(uintptr_t begin, uintptr_t end) const {
    for (const auto& [b, e] : watched_)
      if (b < end && begin < e) return true;
    return false;
  }

 private:
  std::vector<std::pair<uintptr_t, uintptr_t>> watched_;
};

struct PlanStats {
  size_t entries = 0;
  uint64_t hits = 0, misses = 0, invalidated = 0, evicted = 0;
};

// Least recently used first out. One cache for the process, not per context: every context runs
// on Kokkos's one default instance, and a matrix may be used through several contexts. Plans hold
// Kokkos Views, so the cache empties itself in a Kokkos finalize hook (a View must not outlive
// Kokkos).
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<Plan> find(const std::string& key);  // counts a hit or a miss
  void insert(const std::string& key, std::shared_ptr<Plan> plan);
  void invalidate(const void* p, size_t bytes);
  void clear();
  PlanStats stats() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  bool hooked_ = false;
  std::list<std::pair<std::string, std::shared_ptr<Plan>>> lru_;  // most recent first
  PlanStats stats_;
};

PlanCache& plans();

// "Kokkos 3.4.1, execution space Serial (concurrency 1), memory space HostSpace (host memory), ...".
std::string describe();

// "exec_space=Serial\nconcurrency=1\nmemory_space=HostSpace\nkokkos_version=3.4.1\n" (ABI 1.1).
std::string signature();

}  // namespace sparseport::kokkos
