// SPDX-License-Identifier: Apache-2.0
// Gradients of the ops of ops.hpp, for training (DESIGN.md section 1). Each backward function
// takes the forward's inputs and the gradient of its output, and writes the gradients asked for:
// an output view whose data is null is not computed. Every gradient is made of the forward ops
// (spmm, sddmm, gather_scatter) on A, on A^T or on a re-weighted copy of A's values, so it runs on
// every backend and through the scheduler like the forward ones; spmm max/min adds one plugin
// kernel that follows the forward's recorded winners.
//
// A^T: the gradient with respect to B (or Y) is a product with A^T. Build a Transpose once per
// graph and pass it to every backward call: then the backward is a gather (an SpMM on A^T, no
// atomics, deterministic on every backend) and costs no more than the forward. Without one, each
// call builds a temporary one (a counting sort of A, O(nnz)).
#pragma once

#include <cstdint>
#include <memory>

#include "sparseport/context.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/views.hpp"

namespace sparseport {

namespace detail {
struct TransposeState;
struct TransposeAccess;
}  // namespace detail

// A dense matrix of entry positions: spmm max/min's winners, rows x cols, row-major with ld >= cols,
// in A's index type.
struct ArgView {
  int64_t rows = 0, cols = 0, ld = 0;
  const void* data = nullptr;
  IndexType index_type = IndexType::i32;
};
struct ArgMutView {
  int64_t rows = 0, cols = 0, ld = 0;
  void* data = nullptr;
  IndexType index_type = IndexType::i32;
  operator ArgView() const { return {rows, cols, ld, data, index_type}; }
};

// spmm max/min that also records, for each C[i,f], the position in A of the entry that won it:
// the first in row i's storage order among equal products (torch_scatter's convention: one
// winner), the first NaN product where there is one, -1 for a row without entries. arg: m x F in
// A's index type. Runs a variant flagged "records arg" (one per backend; `sparseport devices`
// marks them); opt.variant may name one. reduce sum/mean: InvalidArgument (they need no arg).
void spmm_arg(const Context& ctx, const CsrView& a, const DenseView& b, const DenseMutView& c, const ArgMutView& arg,
              const SpmmOptions& opt = {});

// A^T of a fixed A in ctx's memory, with the position in A of each of its entries, and the
// per-entry weights that mean needs; built once, used by every backward call on A. A must stay
// alive and unchanged (its values may change: they are gathered on each call).
class Transpose {
 public:
  Transpose(const Context& ctx, const CsrView& a);

  const CsrView& a() const;     // the A it was built for
  CsrView pattern() const;      // A^T, k x m, without values
  IndexView positions() const;  // nnz entries: A^T's entry t is A's entry positions()[t]

 private:
  friend struct detail::TransposeAccess;  // the backward functions' weights and scratch
  std::shared_ptr<detail::TransposeState> s_;
};

struct SpmmGrads {
  DenseMutView db;       // k x F: dL/dB
  DenseMutView dvalues;  // nnz x 1: dL/dA.values, in A's storage order
};

struct SpmmBackwardOptions {
  Reduce reduce = Reduce::sum;
  const Transpose* transpose = nullptr;  // A^T built once; null: a temporary one per call
  ArgView arg;                           // max/min: the forward's arg (spmm_arg), unchanged: its entries are
                                         // trusted (not checked), like a plan's arrays
  std::string variant;                   // for the products with A^T (spmm), as in SpmmOptions
};

// Gradients of C = reduce(A B) (alpha 1, beta 0), given dC (m x F):
//   sum:     dB = A^T dC,                 dA[e] = dC[i,:] . B[j,:]
//   mean:    dB = (D^-1 A)^T dC,          dA[e] = dC[i,:] . B[j,:] / deg(i)
//   max/min: dB[j,f] and dA[e] take dC[i,f] only where entry e = (i, j) won C[i,f] (opt.arg).
// dA is dL/dA.values; for a pattern A (every value 1) it may still be asked (the gradient with
// respect to those ones). The forward's alpha scales the gradients: scale dC yourself.
void spmm_backward(const Context& ctx, const CsrView& a, const DenseView& b, const DenseView& dc,
                   const SpmmGrads& grads, const SpmmBackwardOptions& opt = {});

struct SddmmGrads {
  DenseMutView dx;       // m x F
  DenseMutView dy;       // k x F
  DenseMutView dvalues;  // nnz x 1: dL/dA.values
};

// Gradients of out[e] = A.val[e] * X[i,:] . Y[j,:] given dout (nnz x 1):
//   dX = (A o dout) Y,   dY = (A o dout)^T X,   dA[e] = dout[e] * X[i,:] . Y[j,:].
// `transpose` serves dY as in spmm_backward.
void sddmm_backward(const Context& ctx, const CsrView& a, const DenseView& x, const DenseView& y,
                    const DenseView& dout, const SddmmGrads& grads, const Transpose* transpose = nullptr);

// Gradient of gather_scatter / segment_reduce / scatter_reduce with reduce sum, given dout (N x F):
// dsrc[e,:] = dout[index[e],:], a gather (index in any order). mean, max and min need the forward's
// counts or winners: compute them as spmm over a CSR of the messages instead (spmm_arg), which has
// them.
void segment_sum_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                          const DenseMutView& dsrc);

}  // namespace sparseport
