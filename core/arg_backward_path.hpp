// SPDX-License-Identifier: Apache-2.0
// Which of the three dB paths of spmm max/min's backward (spmm_arg_backward) a host plugin takes:
//   columns: A's rows in order, dB's columns split between threads (no atomics, deterministic);
//   gather:  A^T's rows, one per thread (deterministic, needs A^T);
//   atomic:  A's rows in parallel, atomic adds (not deterministic).
// The least time by a per-element cost model, each path's elements over the threads it keeps busy:
// columns m / parts, gather nnz / threads, atomic 5 m / threads (F is common to all three).
// Measured on the 2-core dev machine (AMD EPYC, Zen 4), 200k x 200k, 16 random entries a row,
// float, 2 threads: at F = 16 (one part) the column split took 22-31 ms, the atomic scatter 83-86 ms,
// the gather 290-330 ms; at F = 64 (two parts) the split 100-110 ms, the gather 550-640 ms; on
// Kokkos-OpenMP at F = 16 the split 44-65 ms, atomics 87-94 ms, gather 287-311 ms. So the gather's
// weight is 1 (it measured 1-1.5: it wins once there are more threads than entries per row times
// parts) and the atomics' 5 (a compare-and-swap loop per float).
// SPARSEPORT_ARG_BACKWARD_DB=columns|gather|atomic forces one where it applies (tests, tuning).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sparseport/errors.hpp"

namespace sparseport::detail {

enum class ArgDbPath { columns, gather, atomic };

inline ArgDbPath pick_arg_db_path(const char* backend, int64_t m, int64_t nnz, double threads, double parts,
                                  bool have_at, bool deterministic) {
  if (const char* v = std::getenv("SPARSEPORT_ARG_BACKWARD_DB"); v != nullptr && *v != '\0') {
    const std::string_view want = v;
    if (want == "columns") return ArgDbPath::columns;
    if (want == "gather") return have_at ? ArgDbPath::gather : ArgDbPath::columns;
    if (want == "atomic") return deterministic ? ArgDbPath::columns : ArgDbPath::atomic;
    throw InvalidArgument(std::string("sparseport::spmm_arg_backward[") + backend + "]: SPARSEPORT_ARG_BACKWARD_DB='" +
                          v + "' is not one of columns, gather, atomic");
  }
  constexpr double kGatherCost = 1.0, kAtomicCost = 5.0;
  const double columns = static_cast<double>(m) / parts;
  const double gather = kGatherCost * static_cast<double>(nnz) / threads;
  const double atomic = kAtomicCost * static_cast<double>(m) / threads;
  ArgDbPath best = ArgDbPath::columns;
  double t = columns;
  if (have_at && gather < t) best = ArgDbPath::gather, t = gather;
  if (!deterministic && atomic < t) best = ArgDbPath::atomic;
  return best;
}

}  // namespace sparseport::detail
