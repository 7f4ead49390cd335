// SPDX-License-Identifier: Apache-2.0
// Fills the reference backend's table: host memory from backends/reference, math from
// kernels/reference. Two variants per numeric op: accumulate in the value type (the default, what
// a plain loop does) or in double (what tests use as the oracle for float inputs).
#include <cstring>

#include "backends/reference/memory.hpp"
#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace {

using namespace sparseport;

constexpr uint32_t kDefault = SPARSEPORT_VARIANT_DEFAULT;
// Every variant is serial: one fixed order of operations, so bitwise the same run to run.
constexpr uint32_t kDet = SPARSEPORT_VARIANT_DETERMINISTIC;
constexpr uint32_t kArg = SPARSEPORT_VARIANT_RECORDS_ARG;

const sparseport_variant kVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.serial", kDefault | kDet | kArg, "serial row loop, accumulates in the value type"},
    {SPARSEPORT_OP_SPMM, "spmm.serial_f64acc", kDet | kArg, "serial row loop, accumulates in double"},
    {SPARSEPORT_OP_SDDMM, "sddmm.serial", kDefault | kDet, "serial loop over nonzeros, dot in the value type"},
    {SPARSEPORT_OP_SDDMM, "sddmm.serial_f64acc", kDet, "serial loop over nonzeros, dot in double"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.serial", kDefault | kDet, "serial loop, accumulates in the value type"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.serial_f64acc", kDet, "serial loop, accumulates in double"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.serial", kDefault | kDet, "serial loop, accumulates in the value type"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.serial_f64acc", kDet, "serial loop, accumulates in double"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.serial", kDefault | kDet, "serial loop, accumulates in the value type"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.serial_f64acc", kDet, "serial loop, accumulates in double"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.serial", kDefault | kDet, "unfused: scores, row softmax, weighted sum"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.serial_f64acc", kDet, "unfused, in double"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", kDefault | kDet, "serial copy of the selected rows"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, "csr_slice_rows_dense.serial", kDefault | kDet, "serial zero-fill and scatter"},
    {SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, "csr_induced_subgraph.serial", kDefault | kDet, "serial, with a vertex map"},
    {SPARSEPORT_OP_CSR_TRANSPOSE, "csr_transpose.serial", kDefault | kDet, "serial counting sort (stable)"},
};

bool f64acc(const char* variant) { return std::strstr(variant, "_f64acc") != nullptr; }

const sparseport_plugin kTable = {
    SPARSEPORT_ABI_VERSION,
    sizeof(sparseport_plugin),
    "reference",
    "serial reference implementation of every op; the test oracle",
    SPARSEPORT_MEMORY_HOST,
    kVariants,
    static_cast<int32_t>(sizeof kVariants / sizeof kVariants[0]),
    nullptr,  // device_count: the host, one device
    &reference::host_describe,
    nullptr,  // context_create: no state
    nullptr,
    &reference::host_alloc,
    &reference::host_release,
    &reference::host_copy,
    nullptr,  // synchronize: everything is synchronous
    nullptr,  // applies: every variant applies to every valid input
    [](const sparseport_exec*, const char* v, const sparseport_spmm_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::spmm(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char* v, const sparseport_sddmm_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::sddmm(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::segment_reduce(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::segment_reduce(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char* v, const sparseport_gather_scatter_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::gather_scatter(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char* v, const sparseport_attention_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_attention(*a, f64acc(v)); });
    },
    [](const sparseport_exec*, const char*, const sparseport_slice_rows_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_slice_rows(*a); });
    },
    [](const sparseport_exec*, const char*, const sparseport_slice_rows_dense_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_slice_rows_dense(*a); });
    },
    [](const sparseport_exec*, const char*, const sparseport_induced_subgraph_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_induced_subgraph(*a); });
    },
    [](const sparseport_exec*, const char*, const sparseport_transpose_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_transpose(*a); });
    },
    nullptr,  // device_signature: the scheduler uses the description (the reference is never tuned for speed)
    nullptr,  // check_indices: host memory, checked by the front end
    nullptr,  // summarize_csr: host memory, summarized by the scheduler (scheduler/summary.cpp)
    // spmm_arg_backward: in double, the oracle for every plugin's (the reference has no variants of it)
    [](const sparseport_exec*, const sparseport_spmm_arg_backward_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::spmm_arg_backward(*a, true); });
    },
    nullptr,  // set_external: host memory, no stream
    // csr_softmax: the front end's host pass as a slot (scale * s in the value type, the rest in double)
    [](const sparseport_exec*, const sparseport_csr_softmax_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { reference::csr_softmax(*a); });
    },
    nullptr,  // convert: host memory, the front end converts 16-bit values itself
    nullptr,  // run_parts: the scheduler's own threads count the FEATURES pass
};

}  // namespace

extern "C" const sparseport_plugin* sparseport_plugin_reference(void) { return &kTable; }
