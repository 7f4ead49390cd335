// SPDX-License-Identifier: Apache-2.0
// The reference kernels: serial, simple, obviously correct; the oracle for every other plugin.
// Each takes the op's ABI argument struct (already validated by the front end) and `f64acc`:
// accumulate in double (variant "*.serial_f64acc") instead of in the value type ("*.serial").
// They throw errors.hpp exceptions; the plugin turns them into a status.
#pragma once

#include "sparseport/plugin_abi.h"

namespace sparseport::reference {

void spmm(const sparseport_spmm_args& args, bool f64acc);
void sddmm(const sparseport_sddmm_args& args, bool f64acc);
// Serves both segment_reduce and scatter_reduce: a serial loop does not care about order.
void segment_reduce(const sparseport_segment_args& args, bool f64acc);
void gather_scatter(const sparseport_gather_scatter_args& args, bool f64acc);
void csr_attention(const sparseport_attention_args& args, bool f64acc);
void csr_slice_rows(const sparseport_slice_rows_args& args);
void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args);
void csr_induced_subgraph(const sparseport_induced_subgraph_args& args);
void csr_transpose(const sparseport_transpose_args& args);
// Accumulates in double with f64acc (the oracle), else in the value type.
void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, bool f64acc);
// ABI 1.6: csr_attention_backward's row softmax in place (scale * s in the value type, the rest in
// double: the oracle).
void csr_softmax(const sparseport_csr_softmax_args& args);

}  // namespace sparseport::reference
