// SPDX-License-Identifier: Apache-2.0
// The operators of DESIGN.md section 1. Every entry point checks shapes, types and index
// contents (host memory on every call; device memory on the device, once per operand, see
// ValidateMode in context.hpp), then runs one plugin variant of ctx's backend. Errors are
// exceptions from errors.hpp whose message names the op, the argument and the numbers; nothing is
// written to an output when an argument is refused.
//
// Common rules:
//  - Dense matrices are row-major with ld >= cols; all value-typed arguments share one value type
//    (float or double), all index-typed arguments one index type (int32_t or int64_t).
//  - A CSR or COO without values is a pattern: every value is 1.
//  - Outputs must not alias inputs.
//  - `variant` names a plugin variant ("spmm.rows"); empty lets the scheduler choose. A variant
//    the backend does not list, or that does not apply to the input, throws Unsupported.
//  - reduce: sum, mean (sum divided by the number of entries), max, min. A row or segment with no
//    entries gives 0 for every reduce, as PyTorch Geometric does.
//  - TF32: a variant that rounds float32 inputs to TF32 (VariantInfo::tf32) runs only with the
//    caller's consent, the context's (Context::set_allow_tf32, SPARSEPORT_ALLOW_TF32=1) or the
//    call's (SpmmOptions::allow_tf32); without it the scheduler never picks one, and naming one
//    throws InvalidArgument that says how to allow it.
#pragma once

#include <optional>
#include <string>

#include "sparseport/context.hpp"
#include "sparseport/views.hpp"

namespace sparseport {

enum class Reduce : int32_t {
  sum = SPARSEPORT_REDUCE_SUM,
  mean = SPARSEPORT_REDUCE_MEAN,
  max = SPARSEPORT_REDUCE_MAX,
  min = SPARSEPORT_REDUCE_MIN,
};
const char* name(Reduce r);                // "sum", ...
Reduce reduce_from_name(std::string_view);  // throws InvalidArgument

struct SpmmOptions {
  Reduce reduce = Reduce::sum;
  double alpha = 1.0;
  double beta = 0.0;  // 0: C's old contents are ignored (NaN in C does not leak in)
  std::string variant;
  // TF32 consent for this call: unset follows ctx.allow_tf32(); true lets TF32 variants run (and
  // be chosen), false keeps them out even where the context allows them. An SpmmPlan that lets the
  // scheduler choose fixes its consent when it is made (as it does deterministic mode).
  std::optional<bool> allow_tf32 = std::nullopt;
};

// C = alpha * reduce_j(A[i,j] * B[j,:]) + beta * C.   A: m x k CSR, B: k x F, C: m x F.
// Cost: O(nnz * F) reads of B, one write of C.
void spmm(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const SpmmOptions& opt = {});

// spmv takes spmm's options: it is spmm with one column.
using SpmvOptions = SpmmOptions;

// y = alpha * reduce_j(A[i,j] * x[j]) + beta * y (the classic SpMV with reduce sum).
// A: m x k CSR; x: k x 1 and y: m x 1 dense views, whose ld is the stride between consecutive
// values (make_vector). Runs spmm's variants at F = 1, chosen by the same scheduler (decisions are
// shared with spmm at F = 1); on cuda the vendor reference is cusparseSpMV (spmm.cusparse_spmv)
// where x and y are contiguous. For many products with one A (an iterative solver), an
// SpmmPlan(ctx, A, 1) pays the lookup once. Throws as spmm does, naming x and y.
// Cost: O(nnz) reads of x, one write of y.
void spmv(const Context& ctx, const CsrView& a, const DenseView& x, const DenseMutView& y, const SpmvOptions& opt = {});

struct OpOptions {
  std::string variant;
};

// out[e] = A.val[e] * dot(X[row(e),:], Y[col(e),:]) for every stored entry e of A.
// A: m x k, X: m x F, Y: k x F, out: nnz x 1 (entry e in A's storage order).
void sddmm(const Context& ctx, const CsrView& a, const DenseView& x, const DenseView& y, const DenseMutView& out,
           const OpOptions& opt = {});

struct ReduceOptions {
  Reduce reduce = Reduce::sum;
  std::string variant;
};

// out[i,:] = reduce over e with index[e] == i of src[e,:]; index sorted ascending (checked).
// index: E entries in [0, N), src: E x F, out: N x F (overwritten).
void segment_reduce(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                    const ReduceOptions& opt = {});

// The same with index in any order (PyG's scatter, torch's index_add_/scatter_reduce).
void scatter_reduce(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                    const ReduceOptions& opt = {});

// out[dst[e],:] (reduce)= w[e] * x[src[e],:] without materialising the E x F messages.
// edges: COO with row = dst sorted ascending, col = src, values = w (or none: w = 1);
// edges is N_dst x N_src, x: N_src x F, out: N_dst x F (overwritten). Equals spmm in COO form.
void gather_scatter(const Context& ctx, const CooView& edges, const DenseView& x, const DenseMutView& out,
                    const ReduceOptions& opt = {});

struct AttentionOptions {
  double scale = 0.0;  // 0 means 1 / sqrt(F)
  std::string variant;
};

// out[i,:] = sum_j softmax_j(scale * q_i . k_j) * v_j over the columns j stored in row i of A.
// A: m x n (values ignored), Q: m x F, K: n x F, V: n x Fv, out: m x Fv. Empty rows give 0.
void csr_attention(const Context& ctx, const CsrView& a, const DenseView& q, const DenseView& k, const DenseView& v,
                   const DenseMutView& out, const AttentionOptions& opt = {});

// Rows r[0..s) of A (any order, repeats allowed) as an s x A.cols CSR in ctx's memory.
// With int32 indices, repeated rows can hold more entries than int32 can address: InvalidArgument,
// raised before anything is stored. A result that does not fit in memory: OutOfMemory.
CsrMatrix csr_slice_rows(const Context& ctx, const CsrView& a, const IndexView& rows, const OpOptions& opt = {});

// The same rows as dense rows: out (s x A.cols) is zeroed, then out[t, col] += val.
void csr_slice_rows_dense(const Context& ctx, const CsrView& a, const IndexView& rows, const DenseMutView& out,
                          const OpOptions& opt = {});

// A square A restricted to the rows and columns in vertices (s distinct ids), relabelled so that
// id vertices[t] becomes t. Entries keep A's order within each row.
CsrMatrix csr_induced_subgraph(const Context& ctx, const CsrView& a, const IndexView& vertices,
                               const OpOptions& opt = {});

// CSR of A^T (the CSC of A): k x m. Within a row of the result, entries come in A's row order.
CsrMatrix csr_transpose(const Context& ctx, const CsrView& a, const OpOptions& opt = {});

// What validate() found. ok() means the structure is a valid CSR; sorted/unique are reported
// separately because many ops accept unsorted or repeated columns.
struct Validation {
  bool monotone = true;   // rowptr[0] == 0, non-decreasing, rowptr[rows] == nnz
  bool in_range = true;   // every column in [0, cols)
  bool sorted = true;     // columns ascending within each row
  bool unique = true;     // no column twice in a row
  int64_t bad_rowptr_row = -1, bad_column_row = -1, unsorted_row = -1, duplicate_row = -1;
  std::string message;    // every problem found, in whole sentences; empty when all is well

  bool ok() const { return monotone && in_range; }
  bool canonical() const { return ok() && sorted && unique; }
};

// Checks a CSR in host memory. Never throws for bad structure; reports it with the offending row.
Validation validate(const CsrView& a);

}  // namespace sparseport
