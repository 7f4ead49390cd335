// SPDX-License-Identifier: Apache-2.0
// Stage 1 of a cold decision (DESIGN.md section 4, step 2): the numbers that explain a variant's
// speed, from the operand's summary (scheduler/summary.hpp: one pass, on the device for device
// memory) and the problem (F, types, reduce). `inputs()` is the named vector the learned model
// reads; scheduler/model/README.md says why each one matters.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/signature.hpp"

namespace sparseport::scheduler {

struct Machine;

struct Features {
  int64_t rows = 0, cols = 0, nnz = 0, features = 0;
  double mean_degree = 0;
  int64_t p50 = 0, p90 = 0, p99 = 0, max_degree = 0;  // from the log2 histogram: a bucket's lower end
  int64_t hub_threshold = 0, hubs = 0;  // rows above SPARSEPORT_HUB_T (bucket resolution)
  int64_t over_256 = 0, over_4096 = 0;  // rows above fixed thresholds (hub_split's candidates)
  double max_row_share = 0;             // nnz of the longest row / nnz
  bool aligned16 = true;                // dense operands' rows 16-byte aligned (F*size % 16 == 0)
  // Row lengths: the fraction of rows with bit_width(degree) == b (b = 0: empty rows).
  std::array<double, SPARSEPORT_SUMMARY_BUCKETS> degree_frac{};
  double nnz_share_256plus = 0;  // entries in rows of 256 or more (bucket midpoints)
  // Column locality (CSR only; has_locality false for index ops): |col - diagonal|.
  bool has_locality = false;
  double dist_mean = 0;                                   // mean |col - diag| / cols
  double within_32 = 0, within_1k = 0, within_32k = 0;    // fractions of entries that close
  double block_reuse = 1;   // entries / distinct columns in a 32-row block (gathered rows shared by a warp's rows)
  double segment_fill = 1;  // distinct columns / distinct 32-column segments (B rows per 128-byte line at F = 1)
  std::string text() const;
};

// CSR ops: from the summary (want FEATURES).
Features features_of(const sparseport_csr_summary& s, const ProblemInfo& p, int64_t hub_threshold);
// Index ops: from the sampled structure (runs of a sorted index; nothing for an unsorted one).
Features features_of(Structure& s, const ProblemInfo& p, int64_t hub_threshold);

// The learned model's inputs, by name ("f:..."), for the problem (every variant shares them);
// floor_s is the problem's roofline floor (estimate.hpp).
std::vector<std::pair<std::string, double>> inputs(const Features& f, const ProblemInfo& p, const Machine& m,
                                                   double floor_s);
// The one variant-specific input: log2(the hand-written estimate / the floor).
inline constexpr const char* kEstimateInput = "f:est_over_floor";

}  // namespace sparseport::scheduler
