// SPDX-License-Identifier: Apache-2.0
// Per-matrix state that a backend keeps across calls (hub lists, row partitions, vendor
// descriptors, formats), and the least-recently-used cache that holds it. Shared by the backends
// that plan (cuda: one cache per context state; kokkos: one for the process).
//
// A plan lists the byte ranges its key depends on; writing or freeing any of them through the
// backend drops the plan (PlanCache::invalidate), so a matrix rebuilt at the same address is not
// served a stale plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sparseport::detail {

class Plan {
 public:
  struct Range {
    uintptr_t begin = 0, end = 0;
  };
  virtual ~Plan() = default;
  void watch(const void* p, size_t bytes) {
    if (p != nullptr && bytes > 0)
      watched_.push_back({reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + bytes});
  }
  bool overlaps(uintptr_t begin, uintptr_t end) const {
    for (const Range& r : watched_)
      if (r.begin < end && begin < r.end) return true;
    return false;
  }

 private:
  std::vector<Range> watched_;
};

struct PlanStats {
  size_t entries = 0;
  uint64_t hits = 0, misses = 0, invalidated = 0, evicted = 0;
};

// Least recently used first out. Dropped plans are destroyed outside the lock (their destructors
// free device memory or Kokkos Views). `on_first_insert`, if given, runs (under the lock) at the
// first insert after construction and after every clear(): kokkos registers its finalize hook
// there, which empties the cache before Kokkos goes.
class PlanCache {
 public:
  explicit PlanCache(size_t capacity, std::function<void()> on_first_insert = {})
      : capacity_(capacity), on_first_insert_(std::move(on_first_insert)) {}
  std::shared_ptr<Plan> find(const std::string& key);  // counts a hit or a miss
  // The most recently used plan that `match` accepts, or null; counts nothing and moves nothing
  // (a plan looked for by what it holds rather than by its key: cuda's hub_split plans of an equal
  // rowptr at another address). `match` runs under the cache's lock: it must not call the cache.
  std::shared_ptr<Plan> find_if(const std::function<bool(const Plan&)>& match) const;
  void insert(const std::string& key, std::shared_ptr<Plan> plan);
  void invalidate(const void* p, size_t bytes);
  void clear();
  PlanStats stats() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  std::function<void()> on_first_insert_;
  bool armed_ = true;
  std::list<std::pair<std::string, std::shared_ptr<Plan>>> lru_;  // most recent first
  PlanStats stats_;
};

}  // namespace sparseport::detail
