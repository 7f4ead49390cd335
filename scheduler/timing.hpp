// SPDX-License-Identifier: Apache-2.0
// Stage 3 of a cold decision: timing the candidates (DESIGN.md section 4, step 4). Where the
// candidates are cheap (predicted well under a millisecond at full size), they are timed on the
// caller's own operands at full size (time_full_size: batched calls, one synchronize per batch, so
// launch and clock overheads do not rank them); otherwise on a small copy of the problem (the
// probe sample), built in the backend's own memory with the backend's own csr_slice_rows.
//
// Sampling. CSR ops (spmm, sddmm, csr_attention) take whole rows, stratified by degree: rows are
// grouped by floor(log2(degree + 1)) and every group gives probe_frac of its rows, at least one, so
// the hub and mega-rows that decide between row-mapped and nnz-balanced kernels are always in the
// sample (AutoSAGE samples uniformly and can miss them); on host memory, where no row is over 8x
// the mean degree, runs of consecutive rows instead (block_rows; select_decide.cpp says why). The
// sample keeps all columns, so the gathered operand (B, Y, K, V) is the real one with its real
// footprint. Index ops (segment_reduce, scatter_reduce, gather_scatter) take 16 evenly spaced
// windows of their messages, relabelled so the output is only as tall as the rows the windows touch.
#pragma once

#include <memory>
#include <string>
#include <utility>
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
// repeat. A failing call returns a negative time and its status in *failed. With `beaten_at` > 0:
// the first steady time (the warm-up's second call, or a batch) above it is returned at once, no
// median: a variant that slow has lost whatever its repeats would say. With `first_call` >= 0: the
// variant's first call on these operands was made already and took that long, and stands in for
// the warm-up's first call.
double time_variant(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                    const std::string& variant, const void* args, int repeats, bool warmup, sparseport_status* failed,
                    double beaten_at = 0, double first_call = -1);

// An op that reads its output (spmm with beta != 0) gets it saved once and put back before every
// timed call, so that timing leaves the caller's output as it found it for the call that counts.
class OutputGuard {
 public:
  OutputGuard(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
              const std::string& where);
  ~OutputGuard();
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;
  void restore() const;  // no-op when the op does not read its output
  bool active() const { return saved_ != nullptr; }  // the op reads its output: a copy is kept

 private:
  const PluginInfo& plugin_;
  sparseport_exec exec_;
  void* saved_ = nullptr;
  void* target_ = nullptr;
  size_t bytes_ = 0;
  std::string where_;
};

// Full-size times (seconds; negative: the variant failed) of each variant, on the caller's
// operands (best predicted first in `variants`): the others first, a warm-up call and one timed call
// each, then the best predicted, whose first call settles it where it took at most `first_wins`
// times every other variant's timed call (its steady call can only be faster: it won, and that call
// was the op's own); else it is timed once more. Then `repeats` batches for those within 4x of the
// fastest while the elapsed time stays within budget_s (repeats 0: none), the fastest last. A
// warm-up call's time is kept: what it spent beyond a steady call is the variant's per-matrix build
// (SchedulerOptions::expected_calls). The output is left as the last call made it (`guard` is the
// caller's, which restores it unless that call's variant is the one chosen): *last says whose
// result it holds, if any.
struct FullSizeTime {
  std::string variant;
  double seconds = -1;        // steady: the median batch's mean call, else the timed call
  double first_seconds = -1;  // the warm-up call, which builds the variant's per-matrix state
};
// Whose result the caller's output holds after timing: one call of `variant` on the output as the
// caller gave it (or any number of calls where the op does not read its output), which took
// `seconds`; an empty variant where it holds none.
struct LastCall {
  std::string variant;
  double seconds = -1;
};
std::vector<FullSizeTime> time_full_size(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                         const void* args, const std::vector<std::string>& variants, int repeats,
                                         double budget_s, double first_wins, const OutputGuard& guard, LastCall* last);

class ProbeSample {
 public:
  // Which rows of a CSR the sample holds (stratified by degree, or runs of rows: block_rows): `rows`
  // whole, ascending, and `cut`, rows of the sparse top strata kept in part, as (row, entries kept:
  // the row's first ones).
  struct Rows {
    std::vector<int64_t> rows;
    std::vector<std::pair<int64_t, int64_t>> cut;
  };

  ProbeSample(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
              const Structure& s, const SchedulerOptions& opt);
  // A CSR op's sample of the given rows, described as `how`.
  ProbeSample(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
              const Structure& s, const Rows& pick, const std::string& how);
  ~ProbeSample();
  ProbeSample(const ProbeSample&) = delete;
  ProbeSample& operator=(const ProbeSample&) = delete;

  const void* args() const { return args_.data(); }
  const std::string& description() const { return description_; }  // "rows 3000/100000 (nnz 48k), 9 strata"
  // The sample's share of the op's work: its entries over the operand's (messages for index ops).
  double work_fraction() const { return work_fraction_; }

  static Rows sample_rows(const std::vector<int64_t>& rowptr, double frac, int64_t min_rows);
  static Rows sample_rows(const Structure& s, double frac, int64_t min_rows);  // from rowptr as stored
  // `blocks` runs of consecutive whole rows, block k the rows that hold the entries within
  // frac / blocks / 2 of the entry quantile (2k + 1) / (2 blocks): the real rows' order, so the
  // real locality of B's reads, in a few places spread over the matrix (the full-size check's
  // block sample, check.hpp). Empty where the rows they take hold more than twice frac of the
  // entries (a mega-row).
  static Rows block_rows(const std::vector<int64_t>& rowptr, double frac, int blocks);

 private:
  void build_csr(sparseport_op op, const void* args, const Structure& s, const Rows& pick, const std::string& how);
  void* alloc(size_t bytes);
  void* upload(const void* host, size_t bytes);
  void* filled(size_t count, int32_t value_type);
  void copy_d2d(void* dst, const void* src, size_t bytes);
  void copy_h2d(void* dst, const void* src, size_t bytes);

  const PluginInfo& plugin_;
  sparseport_exec exec_;
  std::vector<void*> owned_;
  std::vector<char> args_;
  std::string description_;
  double work_fraction_ = 1;
};

}  // namespace sparseport::scheduler
