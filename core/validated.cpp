// SPDX-License-Identifier: Apache-2.0
#include "core/validated.hpp"

#include <functional>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace sparseport::detail {
namespace {

struct KeyHash {
  size_t operator()(const ValidatedKey& k) const {
    size_t h = std::hash<const void*>{}(k.state);
    auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(std::hash<const void*>{}(k.first));
    mix(std::hash<const void*>{}(k.second));
    mix(static_cast<size_t>(k.rows));
    mix(static_cast<size_t>(k.cols));
    mix(static_cast<size_t>(k.n));
    mix(static_cast<size_t>(k.kind) * 16 + static_cast<size_t>(k.index_bytes));
    return h;
  }
};

struct Extent {
  uintptr_t first_end = 0, second_end = 0;
};

// A program touches few distinct operands; past this many, forgetting all is the simple bound
// (a forgotten entry only costs one more check).
constexpr size_t kCapacity = 4096;

// Never destroyed: a caller's static Context, destroyed during exit, forgets its entries here
// (forget_validated), possibly after a static made on first use would have been destroyed.
std::mutex& mu = *new std::mutex;
std::unordered_map<ValidatedKey, Extent, KeyHash>& entries() {
  static auto& m = *new std::unordered_map<ValidatedKey, Extent, KeyHash>;
  return m;
}

bool overlaps(uintptr_t b0, uintptr_t e0, uintptr_t b1, uintptr_t e1) { return b0 < e1 && b1 < e0; }

}  // namespace

bool validated_before(const ValidatedKey& key) {
  const std::lock_guard lock(mu);
  return entries().count(key) != 0;
}

void remember_validated(const ValidatedKey& key, size_t first_bytes, size_t second_bytes) {
  const std::lock_guard lock(mu);
  auto& m = entries();
  if (m.size() >= kCapacity) m.clear();
  m[key] = Extent{reinterpret_cast<uintptr_t>(key.first) + first_bytes,
                  reinterpret_cast<uintptr_t>(key.second) + second_bytes};
}

void forget_validated(const void* state, const void* p, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes;
  const std::lock_guard lock(mu);
  auto& m = entries();
  for (auto it = m.begin(); it != m.end();) {
    const ValidatedKey& k = it->first;
    bool drop = k.state == state;
    if (drop && p != nullptr)
      drop = overlaps(begin, end, reinterpret_cast<uintptr_t>(k.first), it->second.first_end) ||
             overlaps(begin, end, reinterpret_cast<uintptr_t>(k.second), it->second.second_end);
    it = drop ? m.erase(it) : std::next(it);
  }
}

void forget_all_validated() {
  const std::lock_guard lock(mu);
  entries().clear();
}

}  // namespace sparseport::detail
