// SPDX-License-Identifier: Apache-2.0
// The probe (DESIGN.md section 4, step 4): a small copy of the problem, built in the backend's own
// memory with the backend's own csr_slice_rows, on which candidate variants are timed.
//
// Sampling. CSR ops (spmm, sddmm, csr_attention) take whole rows, stratified by degree: rows are
// grouped by floor(log2(degree + 1)) and every group gives probe_frac of its rows, at least one, so
// the hub and mega-rows that decide between row-mapped and nnz-balanced kernels are always in the
// sample (AutoSAGE samples uniformly and can miss them). The sample keeps all columns, so the
// gathered operand (B, Y, K, V) is the real one with its real footprint. Index ops (segment_reduce,
// scatter_reduce, gather_scatter) take 16 evenly spaced windows of their messages, relabelled so
// the output is only as tall as the rows the windows touch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "scheduler/signature.hpp"
#include "sparseport/plan.hpp"

namespace sparseport::scheduler {

// Runs one variant of op through the plugin table; returns the slot's status code.
int call_slot(const sparseport_plugin* t, sparseport_op op, const sparseport_exec& exec, const std::string& variant,
              const void* args, sparseport_status* st);
// Median over `repeats` of the wall time per call. With `warmup`: two untimed calls first, and
// calls shorter than ~200 us are timed in batches (back-to-back calls, one synchronize, the mean),
// so host clock and synchronize overheads do not swamp short GPU kernels. Without: one call per
// repeat. A failing call returns a negative time and its status in *failed.
double time_variant(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                    const std::string& variant, const void* args, int repeats, bool warmup, sparseport_status* failed);

class ProbeSample {
 public:
  ProbeSample(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
              Structure& s, const SchedulerOptions& opt);  // widens s's rowptr
  ~ProbeSample();
  ProbeSample(const ProbeSample&) = delete;
  ProbeSample& operator=(const ProbeSample&) = delete;

  const void* args() const { return args_.data(); }
  const std::string& description() const { return description_; }  // "rows 3000/100000 (nnz 48k), 9 strata"

  // The sampled rows of a CSR, for tests: stratified, ascending, each at most once.
  static std::vector<int64_t> stratified_rows(const std::vector<int64_t>& rowptr, double frac, int64_t min_rows);

 private:
  void* alloc(size_t bytes);
  void* upload(const void* host, size_t bytes);
  void* filled(size_t count, int32_t value_type);
  void copy_d2d(void* dst, const void* src, size_t bytes);

  const PluginInfo& plugin_;
  sparseport_exec exec_;
  std::vector<void*> owned_;
  std::vector<char> args_;
  std::string description_;
};

}  // namespace sparseport::scheduler
