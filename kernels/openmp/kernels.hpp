// SPDX-License-Identifier: Apache-2.0
// The openmp kernels: one function per op taking the op's ABI argument struct (already validated
// by the front end), the variant and the number of threads to run on. They throw errors.hpp
// exceptions; the plugin turns them into a status.
//
// Every kernel file is compiled twice (plugins/openmp/CMakeLists.txt): once for the baseline ISA
// into namespace `generic`, and on x86-64 with GCC once more into namespace `avx2` with the code
// (not the std templates it uses) compiled for AVX2, so one library runs everywhere and still uses
// 256-bit vectors where they exist. The plugin picks one namespace at run time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sparseport/plugin_abi.h"

namespace sparseport::openmp {

enum class SpmmVariant { rows, merge_path };
// Serves segment_reduce, scatter_reduce and gather_scatter; which ones apply to which op is the
// plugin's business (an unsorted index allows only scatter_atomic and sort_then_segment).
enum class SegmentVariant { sorted_add, sorted_deterministic, scatter_atomic, sort_then_segment };
enum class AttentionVariant { unfused, onepass };

// Names without the op prefix; the plugin adds "spmm.", "segment_reduce." and so on.
inline std::string_view name(SpmmVariant v) { return v == SpmmVariant::rows ? "rows" : "merge_path"; }
inline std::string_view name(SegmentVariant v) {
  switch (v) {
    case SegmentVariant::sorted_add: return "sorted_add";
    case SegmentVariant::sorted_deterministic: return "sorted_deterministic";
    case SegmentVariant::scatter_atomic: return "scatter_atomic";
    case SegmentVariant::sort_then_segment: return "sort_then_segment";
  }
  return "?";
}
inline std::string_view name(AttentionVariant v) { return v == AttentionVariant::unfused ? "unfused" : "onepass"; }

// The block of messages the deterministic segment reduction sums on its own before the boundary
// fix-up. It depends only on E, never on the thread count, so the summation order, and with it
// every bit of the result, is the same for any number of threads. 4096 messages keep the fix-up
// buffers small (2 rows of F per block) while a block is still far more work than its fix-up;
// beyond 2^16 blocks the block grows so the buffers stay bounded.
inline int64_t deterministic_block_size(int64_t messages) {
  constexpr int64_t kMinBlock = 4096, kMaxBlocks = int64_t{1} << 16;
  const int64_t by_count = (messages + kMaxBlocks - 1) / kMaxBlocks;
  return by_count > kMinBlock ? by_count : kMinBlock;
}

// A reduction of E F-wide messages into the rows of out: message e is row (pick ? pick[e] : e)
// of `rows`, times w[e] when w is not null, and goes to out row dst[e]. segment_reduce,
// scatter_reduce and gather_scatter are all this; segment_reduce.cpp holds the algorithms.
struct Messages {
  int64_t count = 0, features = 0;  // E, F
  const void* dst = nullptr;        // E indices in [0, out_rows); sorted unless the variant scatters
  const void* rows = nullptr;
  int64_t ld = 0;
  const void* pick = nullptr;  // E indices or null
  const void* w = nullptr;     // E values or null
  void* out = nullptr;
  int64_t out_rows = 0, out_ld = 0;
  int32_t index_type = SPARSEPORT_I32, value_type = SPARSEPORT_F32, reduce = SPARSEPORT_REDUCE_SUM;
};

#define SPARSEPORT_OPENMP_DECLARE_KERNELS                                                          \
  void spmm(const sparseport_spmm_args& args, SpmmVariant v, int threads);                         \
  void sddmm(const sparseport_sddmm_args& args, int threads);                                      \
  void segment_reduce(const sparseport_segment_args& args, SegmentVariant v, int threads);         \
  void reduce_messages(const Messages& msg, SegmentVariant v, int threads);                        \
  void gather_scatter(const sparseport_gather_scatter_args& args, SegmentVariant v, int threads);  \
  void csr_attention(const sparseport_attention_args& args, AttentionVariant v, int threads);      \
  void csr_slice_rows(const sparseport_slice_rows_args& args, int threads);                        \
  void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args, int threads);            \
  void csr_induced_subgraph(const sparseport_induced_subgraph_args& args, int threads);            \
  void csr_transpose(const sparseport_transpose_args& args, int threads);                          \
  void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, int threads, bool deterministic);  \
  void csr_softmax(const sparseport_csr_softmax_args& args, int threads);

namespace generic {
SPARSEPORT_OPENMP_DECLARE_KERNELS
}  // namespace generic
namespace avx2 {
SPARSEPORT_OPENMP_DECLARE_KERNELS
}  // namespace avx2

#undef SPARSEPORT_OPENMP_DECLARE_KERNELS

// spmm.graphblas, the vendor baseline (spmm_graphblas.cpp; built only with
// SPARSEPORT_ENABLE_GRAPHBLAS, once, outside the ISA copies: GraphBLAS does the math).
void spmm_graphblas(const sparseport_spmm_args& args, int threads);
// Whether spmm.graphblas applies to args; when not, the reason goes to *why.
bool spmm_graphblas_applies(const sparseport_spmm_args& args, std::string* why);
// "SuiteSparse:GraphBLAS 7.4.0", for the device description.
std::string graphblas_version();

}  // namespace sparseport::openmp
