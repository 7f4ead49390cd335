// SPDX-License-Identifier: Apache-2.0
// The counter-based random numbers behind the generators and fill_random. Everything is integer
// arithmetic on uint64_t (splitmix64), because std::*_distribution is implementation-defined and
// the same seed must give the same graph and the same operands on every machine and compiler.
#pragma once

#include <cstdint>
#include <limits>

namespace sparseport::detail {

// Weyl increment and finaliser of splitmix64 (Steele, Lea, Flood 2014).
inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A key for the sub-stream `index` of `key`: distinct indices give distinct keys (mix64 is a
// bijection), so per-row or per-operand streams never share state.
constexpr uint64_t derive_key(uint64_t key, uint64_t index) { return mix64(mix64(key + kGolden) + index * kGolden); }

// Word `counter` of the stream `key`: random access, so a result never depends on visiting order.
constexpr uint64_t word_at(uint64_t key, uint64_t counter) { return mix64(key + (counter + 1) * kGolden); }

// A sequential view of one stream (splitmix64 itself).
struct Stream {
  uint64_t state;
  uint64_t next() {
    state += kGolden;
    return mix64(state);
  }
};

// k * 2^-(digits-1) for the top digits-1 bits k of r: exact in V, in [0, 1), and such that
// 0.5 + u is exact too (no rounding up to 1.5), whatever the FPU contracts or reorders.
template <class V>
V unit_exact(uint64_t r) {
  constexpr int bits = std::numeric_limits<V>::digits - 1;
  constexpr V scale = V(1) / V(uint64_t{1} << bits);
  return static_cast<V>(r >> (64 - bits)) * scale;
}

// A double in [0, 1) from the top 53 bits: every value exactly representable.
inline double unit53(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

}  // namespace sparseport::detail
