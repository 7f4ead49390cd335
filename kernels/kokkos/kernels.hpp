// SPDX-License-Identifier: Apache-2.0
// The kokkos kernels: one function per op, taking the op's ABI argument struct (already validated
// by the front end; every pointer in the memory space of backends/kokkos/space.hpp). They run on
// Kokkos::DefaultExecutionSpace and throw errors.hpp exceptions; the plugin turns them into a
// status. On host spaces an op has finished when it returns; on a device space it may return with
// its kernels queued on the default instance (common.hpp, end_op), as the cuda plugin's ops do on
// their stream, and the plugin's synchronize waits. This header has no Kokkos in it, so plugin.cpp
// stays light.
#pragma once

#include <string>

#include "sparseport/plugin_abi.h"

namespace sparseport::kokkos {

// TeamPolicy over blocks of rows, vector lanes across F. Records max/min's arg when args.arg is set.
void spmm_team_rows(const sparseport_spmm_args& args);
// Rows cut into chunks of at most T entries; the chunks of a split row combined with atomics.
// Throws InvalidArgument for a malformed SPARSEPORT_HUB_T.
void spmm_hub_split(const sparseport_spmm_args& args);
// KokkosSparse::spmv on rank-2 strided views (the vendor baseline); sums only.
void spmm_kokkoskernels(const sparseport_spmm_args& args);
bool spmm_kokkoskernels_applies(const sparseport_spmm_args& args, std::string* why);
// One (index, value) pair of it (int32_t/int64_t, float/double), explicitly instantiated in a file
// of its own each (spmm_kokkoskernels_<index>_<value>.cpp).
template <class I, class V>
void spmm_kokkoskernels_typed(const sparseport_spmm_args& args);
void sddmm(const sparseport_sddmm_args& args);
// Sorted index: each output row finds its run by binary search and reduces it, no atomics (host
// spaces: blocks of whole rows + messages, one search a block; common.hpp).
void segment_reduce_team_segments(const sparseport_segment_args& args);
// Any index order: Kokkos atomics per element (sum/mean with atomic_add, max/min with a
// compare-and-swap loop). Host spaces: no atomics, a stable counting sort of the messages by row,
// then the sorted path, message order kept (common.hpp, host_reduce_counting).
void segment_reduce_atomic(const sparseport_segment_args& args);
void gather_scatter_team_segments(const sparseport_gather_scatter_args& args);
void gather_scatter_atomic(const sparseport_gather_scatter_args& args);
void csr_attention(const sparseport_attention_args& args);
void csr_slice_rows(const sparseport_slice_rows_args& args);
void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args);
void csr_induced_subgraph(const sparseport_induced_subgraph_args& args);
void csr_transpose(const sparseport_transpose_args& args);
// ABI 1.5: spmm max/min's gradients through the forward's arg. dB is gathered over A^T when the
// args carry it (no atomics); else scattered with atomics, or, when deterministic, a thread per
// column of dB walking A's rows in order.
void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, bool deterministic);
// ABI 1.6: csr_attention_backward's row softmax in place, a thread per row, in the value type.
void csr_softmax(const sparseport_csr_softmax_args& args);
// ABI 1.7: dst = src converted element by element (the front end's float32 path for 16-bit values).
void convert(const sparseport_dense& src, const sparseport_dense_mut& dst);
// ABI 1.3/1.4: the summary of `a` (want: SPARSEPORT_SUMMARY_* bits), scheduler/summary.cpp's numbers
// bit for bit, read where a lives; only the result comes back to the host (summary.cpp).
sparseport_csr_summary summarize_csr(const sparseport_csr& a, uint32_t want);
// ABI 1.2: the first violation in the arrays of c, as the front end's host check reports it.
sparseport_index_report check_indices(const sparseport_index_check& c);

}  // namespace sparseport::kokkos
