// SPDX-License-Identifier: Apache-2.0
// What CacheFile::lookup (cache.hpp) has read in this process: for the test that a lookup of a file
// that did not change reads nothing, and for tests/scheduler/cache_hit_cost's report.
#pragma once

#include <cstdint>

namespace sparseport::scheduler {

struct CacheStats {
  uint64_t lookups = 0;     // CacheFile::lookup calls
  uint64_t opens = 0;       // cache files opened by them
  uint64_t bytes_read = 0;  // bytes read from those files
  uint64_t parsed = 0;      // lines they parsed and checked (a hit kept from an earlier one parses none)
};

CacheStats cache_stats();  // since the process started; thread-safe

}  // namespace sparseport::scheduler
