// SPDX-License-Identifier: Apache-2.0
// The exact integer arithmetic of the device CSR summaries (the summarize_csr slots of the cuda
// plugin, kernels/cuda/summary.cu, and of the kokkos plugin, kernels/kokkos/summary.cpp), written
// once for host and device so that tests/cuda/test_cuda_summary.cpp can check it against the
// definition (scheduler/summary.hpp) on any machine, GPU or not. Each function gives the same
// bits as its counterpart in scheduler/summary.hpp; the divisions are done without 128-bit
// arithmetic where the operands allow (a 64-bit division is ~70 instructions on the GPU, and
// the distance sum needs one per entry). Plain C++ without CUDA headers, here beside the backends'
// folders because two backends share it: device functions under nvcc (the cuda plugin, Kokkos-CUDA),
// plain inline functions otherwise (a host Kokkos).
#pragma once

#include <cstdint>

#include "sparseport/plugin_abi.h"

#if defined(__CUDACC__)
#define SPARSEPORT_HD __host__ __device__ __forceinline__
#else
#define SPARSEPORT_HD inline
#endif

namespace sparseport::summary_math {

// 128-bit products where 64 bits may not hold them (GCC, Clang and nvcc; __extension__ keeps
// -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

// SplitMix64's finaliser (scheduler::mix64).
SPARSEPORT_HD uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// scheduler::hash_term and scheduler::hash_finish.
SPARSEPORT_HD uint64_t hash_term(int64_t v, int64_t i) {
  return mix64(static_cast<uint64_t>(v) ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull));
}
SPARSEPORT_HD uint64_t hash_finish(uint64_t sum, int64_t n) { return mix64(sum + static_cast<uint64_t>(n)); }

// bit_width(x) capped to the last bucket (scheduler::summary_bucket).
SPARSEPORT_HD int bucket(uint64_t x) {
#if defined(__CUDA_ARCH__)
  const int w = x == 0 ? 0 : 64 - __clzll(static_cast<long long>(x));
#else
  int w = 0;
  for (uint64_t y = x; y != 0; y >>= 1) ++w;
#endif
  return w < SPARSEPORT_SUMMARY_BUCKETS - 1 ? w : SPARSEPORT_SUMMARY_BUCKETS - 1;
}

// floor(n / d) for d > 0, given inv = 1.0 / d (rounded to nearest), when floor(n / d) < 2^50 and
// n + d < 2^64. The double estimate n * inv carries three roundings of relative error 2^-53
// each, so it is within 2^50 * 3 * 2^-53 < 1/2 of n / d: its truncation q is off by at most one
// either way, and one multiply-compare corrects it (q * d <= n + d cannot wrap).
SPARSEPORT_HD uint64_t div_by(uint64_t n, uint64_t d, double inv) {
  uint64_t q = static_cast<uint64_t>(static_cast<double>(n) * inv);
  const uint64_t p = q * d;
  if (p > n)
    --q;
  else if (n - p >= d)
    ++q;
  return q;
}

// Entry j < S of a signature sample of n entries (rowptr: n = rows + 1; colind: n = nnz), as
// plugin_abi.h defines it (scheduler/summary.cpp, sample_hash): S = min(n, SPARSEPORT_SUMMARY_SAMPLE);
// for n <= S every entry (position j); above, R = S / L runs of L = SPARSEPORT_SUMMARY_RUN
// consecutive entries, run r starting at floor(r * (n - L) / (R - 1)), so entry j is
// floor((j / L) * (n - L) / (R - 1)) + j % L. Both cases are that formula, with L = 1 and R - 1 =
// max(n - 1, 1) for n <= S. With the span n - L = q * g + r, g = R - 1, 0 <= r < g: run * q +
// floor(run * r / g), and run * r < S^2 <= 2^32 (static_assert below), so a 32-bit product and
// division suffice.
static_assert(int64_t{SPARSEPORT_SUMMARY_SAMPLE} * SPARSEPORT_SUMMARY_SAMPLE <= (int64_t{1} << 32),
              "a sample's run * r fits 32 bits");
static_assert(SPARSEPORT_SUMMARY_SAMPLE % SPARSEPORT_SUMMARY_RUN == 0 && SPARSEPORT_SUMMARY_SAMPLE / SPARSEPORT_SUMMARY_RUN >= 2 &&
                  (SPARSEPORT_SUMMARY_RUN & (SPARSEPORT_SUMMARY_RUN - 1)) == 0,
              "whole runs, at least two (the first and the last entry), of a power-of-two length");
struct SampleParams {
  int64_t samples = 0;  // S
  int64_t q = 0;        // (n - L) / g
  uint32_t r = 0;       // (n - L) % g
  uint32_t gaps = 1;    // g = R - 1
  uint32_t run = 1;     // L
};
inline SampleParams sample_params(int64_t n) {
  SampleParams p;
  p.samples = n < SPARSEPORT_SUMMARY_SAMPLE ? n : SPARSEPORT_SUMMARY_SAMPLE;
  if (p.samples <= 0) return p;
  p.run = n > SPARSEPORT_SUMMARY_SAMPLE ? SPARSEPORT_SUMMARY_RUN : 1;
  const int64_t runs = p.samples / p.run;
  p.gaps = static_cast<uint32_t>(runs > 1 ? runs - 1 : 1);
  p.q = (n - p.run) / p.gaps;
  p.r = static_cast<uint32_t>((n - p.run) % p.gaps);
  return p;
}
SPARSEPORT_HD int64_t sample_position(int64_t j, const SampleParams& p) {
  const auto run = static_cast<uint32_t>(j) / p.run;
  return static_cast<int64_t>(run) * p.q + static_cast<int64_t>(run * p.r / p.gaps) +
         static_cast<int64_t>(static_cast<uint32_t>(j) % p.run);
}

// Row i's diagonal column floor(i * cols / rows) (scheduler::diagonal_of), for 0 <= i < rows.
// With cols = q * rows + r: i * q + floor(i * r / rows), i * r < rows^2 < 2^64 when rows < 2^32
// (the quotient is below rows, so div_by applies); larger row counts take the 128-bit path.
struct DiagParams {
  int64_t rows = 0, cols = 0;
  uint64_t q = 0, r = 0;
  double inv_rows = 0;
  bool narrow = false;  // 0 < rows < 2^32
};
inline DiagParams diag_params(int64_t rows, int64_t cols) {
  DiagParams p;
  p.rows = rows;
  p.cols = cols;
  if (rows > 0) {
    p.q = static_cast<uint64_t>(cols) / static_cast<uint64_t>(rows);
    p.r = static_cast<uint64_t>(cols) % static_cast<uint64_t>(rows);
    p.inv_rows = 1.0 / static_cast<double>(rows);
    p.narrow = rows < (int64_t{1} << 32);
  }
  return p;
}
SPARSEPORT_HD int64_t diagonal(int64_t row, const DiagParams& p) {
  if (p.rows <= 0) return 0;
  if (p.narrow)
    return static_cast<int64_t>(static_cast<uint64_t>(row) * p.q +
                                div_by(static_cast<uint64_t>(row) * p.r, static_cast<uint64_t>(p.rows), p.inv_rows));
  return static_cast<int64_t>(static_cast<u128>(row) * static_cast<uint64_t>(p.cols) /
                              static_cast<uint64_t>(p.rows));
}

// One entry's term of the distance sum: floor(x * 2^20 / cols) with x << 20 taken modulo 2^64, as
// summarize_host computes it (0 when cols == 0). When cols <= 2^43 and x < cols (every valid
// column: x = |col - diag| with both in [0, cols)), x << 20 < 2^63 and the quotient is below 2^20,
// so div_by applies; other x take the plain division.
struct DistanceParams {
  uint64_t cols = 0;
  double inv_cols = 0;
  bool fast = false;  // 0 < cols <= 2^43
};
inline DistanceParams distance_params(int64_t cols) {
  DistanceParams p;
  if (cols > 0) {
    p.cols = static_cast<uint64_t>(cols);
    p.inv_cols = 1.0 / static_cast<double>(cols);
    p.fast = cols <= (int64_t{1} << 43);
  }
  return p;
}
SPARSEPORT_HD uint64_t distance_term(uint64_t x, const DistanceParams& p) {
  if (p.cols == 0) return 0;
  if (p.fast && x < p.cols) return div_by(x << 20, p.cols, p.inv_cols);
  return (x << 20) / p.cols;
}

// |col - diag| as summarize_host computes it.
SPARSEPORT_HD uint64_t distance(int64_t col, int64_t diag) {
  return static_cast<uint64_t>(col > diag ? col - diag : diag - col);
}

}  // namespace sparseport::summary_math
