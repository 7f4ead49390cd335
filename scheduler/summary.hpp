// SPDX-License-Identifier: Apache-2.0
// What the scheduler reads of a CSR operand (plugin_abi.h, sparseport_csr_summary): its signature
// (shape and two hashes) and the raw counts its features come from (degree and column-distance
// histograms, the distinct columns of sampled 32-row blocks). This file is the definition: the
// host computes it here, and a plugin's summarize_csr slot (the CUDA plugin's, on the device) must
// give the same numbers bit for bit (tests/cuda/test_cuda_summary.cpp compares them).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "sparseport/plugin_abi.h"
#include "sparseport/context.hpp"

namespace sparseport::scheduler {

// 128-bit products for the exact scaled positions below (GCC and Clang; __extension__ keeps
// -Wpedantic quiet).
__extension__ typedef unsigned __int128 summary_u128;

// SplitMix64's finaliser: the mixing function of both hashes.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// One entry's term of an order-free hash: value v at position i.
constexpr uint64_t hash_term(int64_t v, int64_t i) {
  return mix64(static_cast<uint64_t>(v) ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull));
}
// The hash of n terms summed modulo 2^64.
constexpr uint64_t hash_finish(uint64_t sum, int64_t n) { return mix64(sum + static_cast<uint64_t>(n)); }

// The column of row i's diagonal, scaled for rectangular matrices: floor(i * cols / rows).
constexpr int64_t diagonal_of(int64_t row, int64_t rows, int64_t cols) {
  return rows <= 0 ? 0
                   : static_cast<int64_t>(static_cast<summary_u128>(row) * static_cast<uint64_t>(cols) /
                                          static_cast<uint64_t>(rows));
}
// bit_width of x >= 0, capped to the last bucket.
constexpr int summary_bucket(uint64_t x) {
  // One instruction, not a loop of up to 40 steps twice per entry: the host summary's FEATURES pass
  // took 1.8 ms on 50k entries (issue 35: a shape class's features are read per sampled subgraph).
  return std::min(static_cast<int>(std::bit_width(x)), SPARSEPORT_SUMMARY_BUCKETS - 1);
}

// Where the FEATURES pass's parts run: through a host plugin's run_parts slot (ABI 1.10) when it is
// set, else on threads the scheduler starts.
struct PartRunner {
  decltype(sparseport_plugin::run_parts) run_parts = nullptr;
  const sparseport_exec* exec = nullptr;
};

// The summary of a CSR whose arrays are in host memory (a.index_type SPARSEPORT_I32 or I64). The
// FEATURES pass over the entries runs on up to `threads` threads where the input is large enough;
// the numbers are the same for any count and either runner.
sparseport_csr_summary summarize_host(const sparseport_csr& a, uint32_t want, int threads = 1,
                                      const PartRunner& runner = {});

// The summary through the plugin: its summarize_csr slot when it has one and its memory is device
// memory, else on the host (the arrays copied first when they are in device memory). Throws
// BackendError when the slot fails.
sparseport_csr_summary summarize(const PluginInfo& plugin, const sparseport_exec& exec, const sparseport_csr& a,
                                 uint32_t want);

}  // namespace sparseport::scheduler
