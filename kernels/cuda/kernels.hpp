// SPDX-License-Identifier: Apache-2.0
// The cuda kernels as host functions: each takes the state (stream, pool, plans, device facts)
// and the op's ABI argument struct, already validated by the front end and checked by the plugin
// (device pointers, a variant that applies). They queue work on the state's stream and return
// without waiting; errors are exceptions from errors.hpp. Plain C++: plugin.cpp includes this.
#pragma once

#include <cstdint>
#include <string>

#include "backends/cuda/runtime.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::cuda {

// ---- when a variant applies (shared by the plugin's `applies` and the kernels) -----------------

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Rows (data, ld, cols) of values of `value_size` bytes read as 16-byte vectors: cols and ld
// multiples of 16 / value_size values (4 floats, 8 halves), data 16-byte aligned.
inline bool vec16_rows(const void* data, int64_t ld, int64_t cols, int64_t value_size) {
  const int64_t w = 16 / value_size;
  return cols % w == 0 && ld % w == 0 && aligned16(data);
}

// Vectors of 4 values along F: F % 4 == 0, every row start 16-byte aligned.
inline bool vec4_rows(const void* data, int64_t ld, int64_t cols) { return vec16_rows(data, ld, cols, 4); }

// The largest F for spmm.vector_rows, and for spmm.merge_path's lanes across entries (above it
// merge_path puts its lanes across F): a lane holds all F columns of a product in registers
// (spmm_small_f.cuh).
constexpr int64_t kSmallFMaxF = 16;

// spmm.cusparse_spmv: cusparseSpMV, so one column, and cuSPARSE's dense vectors are contiguous
// (B and C with ld 1, or a single row).
inline bool spmv_vectors(const sparseport_dense& b, const sparseport_dense_mut& c) {
  return b.cols == 1 && (b.ld == 1 || b.rows <= 1) && (c.ld == 1 || c.rows <= 1);
}

// ---- spmm ----------------------------------------------------------------------------------------

// C = beta * C (or 0 when beta == 0): every spmm variant when A has no entries.
void spmm_empty(const State& s, const sparseport_spmm_args& a);

// row_warp and row_warp_vec4 also write a.arg (ABI 1.5) for max and min when it is non-null.
void spmm_row_warp(const State& s, const sparseport_spmm_args& a);
void spmm_row_warp_vec4(const State& s, const sparseport_spmm_args& a);
// deterministic (SPARSEPORT_EXEC_DETERMINISTIC): a fixed partition (SPARSEPORT_HUB_T and
// SPARSEPORT_HUB_CHUNK ignored, one lane group per regular row) and a split hub's items combined
// in item order instead of by atomics: the same bits for every run, knob and launch shape.
void spmm_hub_split(const State& s, const sparseport_spmm_args& a, bool deterministic = false);
void spmm_nnz_balanced(const State& s, const sparseport_spmm_args& a);
// vector_rows (F <= kSmallFMaxF): a group of 2 to 32 lanes per row (from the mean row length;
// SPARSEPORT_SMALLF_LANES overrides it unless deterministic), lanes across the row's entries.
// merge_path (any F): equal path items (rows + entries) per warp, rows longer than a chunk split
// between warps and finished by a second kernel in a fixed order; no atomics; lanes across entries
// up to kSmallFMaxF, across F above (spmm_merge_path_wide.cu). Both run every reduction.
void spmm_vector_rows(const State& s, const sparseport_spmm_args& a, bool deterministic = false);
void spmm_merge_path(const State& s, const sparseport_spmm_args& a);
// tc_window (f16 / bf16 values, sum and mean; tc_window_format.hpp, spmm_tc_window.cu): tensor-core
// mma over 8-row windows of compacted columns, the format built on the GPU once per plan (the plan
// cache holds it) and A's values re-read into it every call. Needs compute capability 8.0.
void spmm_tc_window(const State& s, const sparseport_spmm_args& a);
// cusparseSpMM (sum only). The first call on a matrix builds a plan: descriptors, the buffer, and
// a timing of CSR ALG2 against ALG3 (after its preprocessing); the faster one is kept and reused.
void spmm_cusparse(const State& s, const sparseport_spmm_args& a);
// cusparseSpMV (sum, F == 1, spmv_vectors): the faster of CSR ALG1 and ALG2, timed once per plan.
void spmm_cusparse_spmv(const State& s, const sparseport_spmm_args& a);

// The gradients of spmm max/min through the forward's arg (sparseport_spmm_arg_backward_args).
// dvalues: a lane group per row of A, each entry's sum over the columns it won in a fixed order.
// dB: with a.at_* (A^T and its positions in A), a lane group per row of A^T gathering in A's row
// order, no atomics; without them, deterministic: A^T built here (csr_transpose with perm, into
// scratch) and gathered the same way; otherwise dB zeroed, then atomicAdd of each won element.
void spmm_arg_backward(const State& s, const sparseport_spmm_arg_backward_args& a, bool deterministic);

// Hub threshold: SPARSEPORT_HUB_T, else 256. hub_threshold_for(nnz): what spmm.hub_split and
// csr_attention.fused use, SPARSEPORT_HUB_T, else 64 below 4 M entries (latency-bound inputs,
// where the longest regular row decides) and 256 above.
int64_t hub_threshold();
int64_t hub_threshold_for(int64_t nnz);

// ---- sddmm ---------------------------------------------------------------------------------------

void sddmm_row_warp(const State& s, const sparseport_sddmm_args& a);
void sddmm_vec4(const State& s, const sparseport_sddmm_args& a);
void sddmm_nnz_balanced(const State& s, const sparseport_sddmm_args& a);
void sddmm_cusparse(const State& s, const sparseport_sddmm_args& a);

// ---- segment reductions ---------------------------------------------------------------------

void segment_reduce_nnz_balanced(const State& s, const sparseport_segment_args& a);
void segment_reduce_atomic(const State& s, const sparseport_segment_args& a);  // also scatter_reduce
void gather_scatter_nnz_balanced(const State& s, const sparseport_gather_scatter_args& a);
void gather_scatter_atomic(const State& s, const sparseport_gather_scatter_args& a);
// No atomics: fixed chunks of messages (a function of E and F), each run's pieces combined in
// chunk order by fix-up passes. Bitwise reproducible for any launch shape.
void segment_reduce_nnz_balanced_deterministic(const State& s, const sparseport_segment_args& a);
void gather_scatter_nnz_balanced_deterministic(const State& s, const sparseport_gather_scatter_args& a);
// scatter_reduce without atomics: a stable radix sort of (index, position), then the deterministic
// sorted reduction over src rows gathered through the permutation.
void scatter_reduce_sort_segment(const State& s, const sparseport_segment_args& a);

// ---- attention ---------------------------------------------------------------------------------

// deterministic: unfused runs its SpMM as spmm.hub_split's deterministic path (not the atomic
// nnz_balanced); fused ignores SPARSEPORT_HUB_T (a fixed long-row split).
void csr_attention_unfused(const State& s, const sparseport_attention_args& a, bool deterministic = false);
void csr_attention_fused(const State& s, const sparseport_attention_args& a, bool deterministic = false);
// csr_attention.fused on f16 / bf16 values (ABI 1.7, attention_values16.cu): 16-bit Q, K, V and
// out, float32 scores, softmax statistics and sums, one rounding per stored value; a group of 4 to
// 32 lanes per row (16-byte vectors of 8 values where F, Fv, the leading dimensions and the
// alignment allow, one value a lane otherwise), any F and Fv. No atomics and a fixed order: always
// deterministic. Long rows are not split (one group walks the whole row).
void csr_attention_fused16(const State& s, const sparseport_attention_args& a);

// ---- structure ---------------------------------------------------------------------------------

void csr_slice_rows(const State& s, const sparseport_slice_rows_args& a);
// deterministic: repeated columns of a row add up in entry order (no atomics).
void csr_slice_rows_dense(const State& s, const sparseport_slice_rows_dense_args& a, bool deterministic = false);
void csr_induced_subgraph(const State& s, const sparseport_induced_subgraph_args& a);
// a.perm (ABI 1.5), when non-null, gets the position in A of each output entry.
void csr_transpose(const State& s, const sparseport_transpose_args& a);

// ---- index checks (the plugin's check_indices slot) ------------------------------------------------

// The first violation of c's rules in device memory (problem 0 when none); waits for the answer.
sparseport_index_report check_indices(const State& s, const sparseport_index_check& c);

// ---- CSR summary (the plugin's summarize_csr slot) ----------------------------------------------

// The summary of the CSR `a` in device memory (plugin_abi.h, sparseport_csr_summary; `want` is
// SPARSEPORT_SUMMARY_* bits), equal bit for bit to scheduler::summarize_host on a host copy; one
// launch, one copy back and one synchronisation. Waits for the answer.
sparseport_csr_summary summarize_csr(const State& s, const sparseport_csr& a, uint32_t want);
// At context creation: loads the signature kernels and allocates the persistent result words, so
// a new process's first cache lookup pays neither.
void prepare_summary(const State& s);

// ---- helpers other kernels use -----------------------------------------------------------------

// dst = src converted between value types (the convert slot, ABI 1.7), rounding to nearest even.
void convert(const State& s, const sparseport_dense& src, const sparseport_dense_mut& dst);
// Dense fill and scale (rows x cols with leading dimension ld) in the value type vt.
void dense_fill(const State& s, void* data, int64_t rows, int64_t cols, int64_t ld, int32_t vt, double value);
// The same for indices of type it (SPARSEPORT_I32 / I64): the -1 of spmm's arg for empty rows.
void index_fill(const State& s, void* data, int64_t rows, int64_t cols, int64_t ld, int32_t it, int64_t value);
// In-place exclusive prefix sum over n + 1 entries (the last one becomes the total); the CUB
// algorithms live in cub_algorithms.cu only, so that no other file pays for compiling them.
void exclusive_scan_inplace(const State& s, void* data, int64_t n_plus_1, int32_t index_type);
// Stable sort of (key, value) pairs by the low `bits` bits of the keys; keys are non-negative.
void sort_pairs(const State& s, const void* keys_in, void* keys_out, const void* vals_in, void* vals_out, int64_t n,
                int bits, int32_t index_type);

// ---- csr_attention_backward's weights (the plugin's csr_softmax slot, ABI 1.6) --------------------

// csr_attention.unfused's softmax pass on its own, in place on a.scores: scale * s in the value
// type, shifted by the row's maximum, expf/exp, divided by the row's sum; a warp per row, a CTA per
// row above 1024 entries. No atomics (the same bits every run).
void csr_softmax(const State& s, const sparseport_csr_softmax_args& a);

}  // namespace sparseport::cuda
