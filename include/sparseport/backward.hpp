// SPDX-License-Identifier: Apache-2.0
// Gradients of the ops of ops.hpp, for training (DESIGN.md section 1). Each backward function
// takes the forward's inputs and the gradient of its output, and writes the gradients asked for:
// an output view whose data is null is not computed. Every gradient is made of the forward ops
// (spmm, sddmm, gather_scatter) on A, on A^T or on a re-weighted copy of A's values, so it runs on
// every backend and through the scheduler like the forward ones; spmm max/min adds one plugin
// kernel that follows the forward's recorded winners, and csr_attention_backward one that turns
// the E scores into softmax weights (the exp, which no op computes), where they live.
//
// A^T: the gradient with respect to B (or Y) is a product with A^T. Build a Transpose once per
// graph and pass it to every backward call: then the backward is a gather (an SpMM on A^T, no
// atomics, deterministic on every backend) and costs no more than the forward. Without one, each
// call builds a temporary one (a counting sort of A, O(nnz)).
//
// Segments: a reduce of E messages into N segments (segment_reduce, scatter_reduce) is spmm of an
// N x E pattern CSR times the messages, and gather_scatter is spmm of the CSR of its edges; a
// SegmentCsr holds that CSR (and its Transpose), built once per index like a Transpose per graph.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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
// per-entry weights that mean needs; built once, used by every backward call on A (the calls must
// pass the same arrays and value type: checked). A must stay alive and unchanged (its values may
// change: they are gathered on each call).
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
  // TF32 consent for the products with A^T (spmm), as in SpmmOptions (unset: the context's).
  std::optional<bool> allow_tf32 = std::nullopt;
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

// Gradient of segment_reduce / scatter_reduce with reduce sum, given dout (N x F):
// dsrc[e,:] = dout[index[e],:], a gather (index in any order). The same as segment_reduce_backward
// with reduce sum, which also serves mean, max and min.
void segment_sum_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                          const DenseMutView& dsrc);

// ---- csr_attention ------------------------------------------------------------------------------

struct AttentionGrads {
  DenseMutView dq;  // A.rows x F: dL/dQ
  DenseMutView dk;  // A.cols x F: dL/dK
  DenseMutView dv;  // A.cols x Fv: dL/dV
};

// Gradients of out = csr_attention(A, Q, K, V) given out and dout (both A.rows x Fv), the way
// FlashAttention does it: the softmax weights P are recomputed from the scores and nothing E x F
// is formed (E = A.nnz; A's values are ignored, as in the forward):
//   S[e] = scale * Q[i,:] . K[j,:],   P = softmax of S over each row, shifted by the row's maximum
//   dV = P^T dO,   dP[e] = dO[i,:] . V[j,:],   dS = P o (dP - rowsum(dO o O)[i])
//   dQ = scale * dS K,   dK = scale * dS^T Q          (e = (i, j) an entry of A)
// scale as the forward's: 0 means 1 / sqrt(F). A row without entries gives dQ[i] = 0, a column
// without entries dK[j] = dV[j] = 0. Non-finite scores do what they do in the forward: a NaN score
// or a row of -inf (or +inf) scores makes the forward's row i NaN, and its P NaN, so dQ[i] and dK,
// dV at row i's columns come out NaN. `transpose` serves dK and dV as in spmm_backward.
// Cost: sddmm for S (E x F) and for dP (E x Fv), one row dot for rowsum(dO o O) (A.rows x Fv), one
// spmm per gradient asked (dV: E x Fv on A^T, dQ: E x F, dK: E x F on A^T), and O(E) per-entry
// scalar work: the softmax runs in the backend's memory, with its forward's arithmetic (the
// plugin's csr_softmax slot, ABI 1.6; a row per warp or thread, no copy to the host). Only a plugin
// built without the slot gets a serial pass over the E scores on the host instead (on device memory
// the E scores go to the host and P comes back, with a synchronisation). The E-long row index of
// the entries that dS needs is built once per Transpose, from a host copy of A's rowptr: keep a
// Transpose to pay it once. Throws DimensionMismatch / InvalidArgument naming the argument, as
// csr_attention does, and for a Transpose built for another A.
void csr_attention_backward(const Context& ctx, const CsrView& a, const DenseView& q, const DenseView& k,
                            const DenseView& v, const DenseView& out, const DenseView& dout,
                            const AttentionGrads& grads, double scale = 0.0, const Transpose* transpose = nullptr);

// ---- segment_reduce, scatter_reduce and gather_scatter with every reduce -------------------------

namespace detail {
struct SegmentCsrState;
struct SegmentCsrAccess;
}  // namespace detail

// The CSR on which a reduce over messages is an spmm, built once per index (or edge list) in ctx's
// memory by a stable counting sort (csr_transpose, O(E)), and kept like a Transpose:
//  - from index (E entries in [0, segments), any order): A_seg, segments x E, a pattern whose row s
//    holds the messages e with index[e] == s in increasing e. segment_reduce(index, src) is
//    spmm(A_seg, src); for a sorted index, A_seg's entry positions are the message numbers e.
//  - from edges (gather_scatter's COO, dst sorted): edges as the N_dst x N_src CSR they are (row
//    pointers counted from dst, columns src, values w); its entry positions are the edge numbers.
// The calls it serves must pass the same index (or edges' dst and src arrays: checked by pointer
// and size) and messages of value_type (edges: edges.value_type); those arrays must stay alive and
// unchanged (edges' weights may change: they are read on each call).
class SegmentCsr {
 public:
  SegmentCsr(const Context& ctx, const IndexView& index, int64_t segments, ValueType value_type = ValueType::f32);
  SegmentCsr(const Context& ctx, const CooView& edges);

  const CsrView& csr() const;           // the CSR above (value_type: the messages' value type)
  const Transpose& transpose() const;   // csr()'s Transpose, built on first use (the backward's)

 private:
  friend struct detail::SegmentCsrAccess;  // the arg and backward functions' temporaries and checks
  explicit SegmentCsr(std::shared_ptr<detail::SegmentCsrState> s);
  std::shared_ptr<detail::SegmentCsrState> s_;
};

struct SegmentArgOptions {
  Reduce reduce = Reduce::max;      // max or min (sum and mean have no winner: InvalidArgument)
  const SegmentCsr* csr = nullptr;  // built once for this index / edges; null: a temporary one per call
  std::string variant;              // an spmm variant that records arg, as in spmm_arg
};

// segment_reduce / scatter_reduce / gather_scatter with reduce max or min that also record, for
// each out[s,f], the message that won it, as spmm_arg does on the SegmentCsr (torch_scatter's
// convention): among equal messages the lowest e, the first NaN where there is one (out is then
// NaN), -1 for a segment without messages (out is then 0). arg: out's shape (ld >= cols) in the
// index type. What arg holds is the winner's position in SegmentCsr::csr():
//  - segment_reduce_arg (index sorted, checked): the message number e itself;
//  - scatter_reduce_arg (index in any order): the position in index's stable sort; the message is
//    e = csr().colind[arg[s,f]] (the backward takes the positions as they are);
//  - gather_scatter_arg: the edge number e (dst is sorted).
// out and arg are those of segment_reduce / gather_scatter (the same values, bit for bit, as
// spmm max/min over the same entries). Cost: the forward's spmm, plus building a SegmentCsr when
// none is given (O(E)). Throws as the forward does, naming the function, and InvalidArgument for
// reduce sum/mean, an arg of the wrong shape or index type, or a SegmentCsr built for other input.
void segment_reduce_arg(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt = {});
void scatter_reduce_arg(const Context& ctx, const IndexView& index, const DenseView& src, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt = {});
void gather_scatter_arg(const Context& ctx, const CooView& edges, const DenseView& x, const DenseMutView& out,
                        const ArgMutView& arg, const SegmentArgOptions& opt = {});

struct SegmentBackwardOptions {
  Reduce reduce = Reduce::sum;
  const SegmentCsr* csr = nullptr;  // built once for this index / edges; null: a temporary one when needed
  ArgView arg;                      // max/min: the forward's arg (*_arg), unchanged; trusted, not checked
};

// Gradient of segment_reduce (index sorted, checked) / scatter_reduce (any order) given dout
// (N x F), into dsrc (E x F, overwritten):
//   sum:     dsrc[e,:] = dout[index[e],:]                         (a gather, no SegmentCsr needed)
//   mean:    dsrc[e,:] = dout[index[e],:] / count(index[e])        (count: messages in the segment)
//   max/min: dsrc[e,f] = dout[index[e],f] where e won out[index[e],f] (opt.arg), else 0.
// This is spmm_backward on the SegmentCsr: cost O(E F), plus a SegmentCsr (mean, max, min) and its
// Transpose (mean; max/min in deterministic mode or with opt.csr) when none is given. Throws as
// segment_reduce / scatter_reduce do for the index, naming the function, and DimensionMismatch /
// InvalidArgument for dsrc or arg of the wrong shape, or a SegmentCsr built for other input.
void segment_reduce_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                             const DenseMutView& dsrc, const SegmentBackwardOptions& opt = {});
void scatter_reduce_backward(const Context& ctx, const IndexView& index, const DenseView& dout,
                             const DenseMutView& dsrc, const SegmentBackwardOptions& opt = {});

struct GatherScatterGrads {
  DenseMutView dx;       // N_src x F: dL/dx
  DenseMutView dvalues;  // E x 1: dL/dw, in edge order (asked of a pattern too: the gradient at w = 1)
};

// Gradients of out = gather_scatter(edges, x) (out[dst[e],:] (reduce)= w[e] * x[src[e],:]) given
// dout (N_dst x F), into dx (N_src x F) and dvalues (E x 1), both overwritten:
//   sum:     dx[j,:] = sum over the edges e from j of w[e] * dout[dst[e],:],
//            dw[e] = dout[dst[e],:] . x[src[e],:]
//   mean:    the same with each edge's terms divided by its destination's edge count
//   max/min: dx[src[e],f] and dw[e] take dout[dst[e],f] only where edge e won (opt.arg).
// This is spmm_backward on the edges' CSR (SegmentCsr): the same cost, plus a SegmentCsr (O(E))
// when none is given. x is read for dvalues only (it may be an empty view otherwise). Throws as
// gather_scatter does (dst unsorted, indices out of range), naming the function, and
// DimensionMismatch / InvalidArgument for a gradient or arg of the wrong shape.
void gather_scatter_backward(const Context& ctx, const CooView& edges, const DenseView& x, const DenseView& dout,
                             const GatherScatterGrads& grads, const SegmentBackwardOptions& opt = {});

}  // namespace sparseport
