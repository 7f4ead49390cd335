// SPDX-License-Identifier: Apache-2.0
// The shape class of a CSR operand (issue 35): the features that decide a variant, quantised so
// coarsely that the subgraphs one sampler draws from one graph (a GNN's mini-batches) share a class,
// while a matrix of another size, degree profile or locality does not. select_class.cpp keys a
// second cache line by it (device hash, class, op, F, types), which decides a matrix the exact key
// has never seen at the cost of its features, no timing.
#pragma once

#include <cstdint>
#include <string>

#include "scheduler/features.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::scheduler {

// "r15.c15.z15.d0.s3.q0-4-4.h0": log2 buckets (floor) of rows, cols, nnz and max degree / mean
// degree, half-octaves of the mean degree, the p50/p90/p99 degree buckets (bit widths, as the
// summary's histogram has them), and the bit width of the number of rows over 256 (hub_split's
// candidates). Row lengths only, no column locality: on host memory they come from rowptr alone (the
// pass over every entry cost 15 % of a sampled subgraph's spmm). Only [a-z0-9.-]: a cache key needs
// no escape.
std::string shape_class(const Features& f);

// What a host-memory member's class is read from: the SIGNATURE numbers' shape (rows, cols, nnz),
// the exact maximum degree, and the degree histogram of a CSR in host memory from rowptr alone:
// summarize_host's (summary.hpp) for up to 4096 rows, above that one of 4096 evenly spaced rows
// scaled to the row count (select_class.cpp says why). No hashes, no locality.
sparseport_csr_summary degree_summary(const sparseport_csr& a);

// One member in how many of a ready class is checked against the vendor again, for a class whose
// last check measured the vendor at `margin` times its variant (0: unknown); select_class.cpp says why.
uint64_t class_recheck_every(double margin);

}  // namespace sparseport::scheduler
