// SPDX-License-Identifier: Apache-2.0
// The plan of spmm.merge_path, shared by its two kernel files: spmm_merge_path.cu (F <= 16, which
// also builds the plan) and spmm_merge_path_wide.cu (F > 16). The merge path of A (row ends merged
// with the entries, m + nnz items) is cut into chunks of `items` items, a cut that falls in a row
// of fewer than `items` entries moved back to the row's start, so a chunk holds at most
// 2 x items - 1 items and only rows longer than a chunk cross chunks. The plan depends on rowptr
// and `items` only, and lives in the plan cache under "spmm.merge_path|rowptr|m|nnz|index size|items",
// so both widths share it when they cut A the same way.
#pragma once

#include <memory>

#include "kernels/cuda/common.cuh"

namespace sparseport::cuda {

// A chunk's start (`row` rows ended and `nz` entries taken before it), and the slots of the pieces
// it leaves for the fix-up (-1: none): tail_slot, the piece of the row that continues into the next
// chunk; head_slot, the piece of a row begun in an earlier chunk that ends in this one.
struct MergeChunk {
  int64_t row, nz, tail_slot, head_slot;
};

// A row that crosses chunks: its tails are slots first_tail .. first_tail + tails - 1 in chunk
// order, then its head.
struct MergeFix {
  int64_t row, first_tail, tails, head_slot;
};

class MergePlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit MergePlan(const State& s) : state_(&s) {}
  ~MergePlan() override {
    if (chunks_ != nullptr) (void)cudaFreeAsync(chunks_, state_->stream());
    if (fixes_ != nullptr) (void)cudaFreeAsync(fixes_, state_->stream());
  }
  MergeChunk* chunks_ = nullptr;  // nchunks_ + 1 (the last one is the end of the path)
  MergeFix* fixes_ = nullptr;
  int64_t nchunks_ = 0, nfix_ = 0, ntails_ = 0;
  // The most tails of one row (rows longer than a few chunks: the F > 16 fix-up then folds them
  // in groups first, spread over many warps).
  int64_t max_tails_ = 0;

 private:
  const State* state_;
};

// The plan of A cut into chunks of `items` path items: from the plan cache, else built (a search
// kernel, one copy back, a host pass; synchronises the stream) and cached. spmm_merge_path.cu.
std::shared_ptr<MergePlan> merge_plan(const State& s, const sparseport_csr& a, int64_t items);

// spmm.merge_path for F > kSmallFMaxF (spmm_merge_path_wide.cu); spmm_merge_path hands it over.
void spmm_merge_path_wide(const State& s, const sparseport_spmm_args& a);

}  // namespace sparseport::cuda
