// SPDX-License-Identifier: Apache-2.0
// Internal to src/dist: what the backward ops (transpose.cpp, backward.cpp) take from the forward
// ones (ops.cpp): the checks of a dense operand, the forward products with the blocks' values
// replaced for one call, and the sum of several steps' CallStats.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "src/dist/internal.hpp"

namespace sparseport::dist::detail {

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// fn(), then the context synchronised, its time added to into.
inline void timed(const Context& ctx, double& into, const std::function<void()>& fn) {
  const auto tc = Clock::now();
  fn();
  ctx.synchronize();
  into += ms_since(tc);
}

// The options of a spmm the distributed op runs for itself (packing rows to send, combining partial
// sums, merging): plain float32 sums whatever the context's TF32 consent, which is for the caller's
// own blocks only (their calls forward the caller's SpmmOptions::allow_tf32).
inline SpmmOptions exact_spmm(Reduce r, double alpha, double beta) {
  SpmmOptions o{r, alpha, beta, {}};
  o.allow_tf32 = false;
  return o;
}

// The checks of one dense operand, as sparseport's front end makes them, named for the distributed
// op: value type, shape (rows x cols; `rule` says why), ld and data. DimensionMismatch for a shape,
// InvalidArgument otherwise.
void check_dense_operand(const DenseView& d, ValueType want_type, int64_t rows, int64_t cols, const char* arg,
                         const char* rule, const std::string& w);

// Values that replace the local and the remote block's own for one call: arrays in the call's
// context memory with one value per entry of the block, in the block's order (null: a pattern).
struct BlockValues {
  const void* local = nullptr;
  const void* remote = nullptr;
};

// dist::spmm with reduce sum after its checks, with each block's values from `values` when not null
// (sparseport::sddmm_backward's dX = (A o dout) Y). Binds the space to ctx.
template <class I, class V>
void spmm_sum_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseMutView& c_local,
                     const SpmmOptions& opt, const BlockValues* values, CallStats& st, const std::string& w);

// dist::sddmm after its checks, with each block's values from `values` when not null (the
// backward's dA = dout o (X Y^T), and spmm's dA = dC B^T per entry). Binds the space to ctx.
template <class I, class V>
void sddmm_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
                  const DenseMutView& out_local, const OpOptions& opt, const BlockValues* values, CallStats& st,
                  const std::string& w);

// this rank's rows of out = alpha * A^T x + beta * out (out: local_cols x F, x: local_rows x F)
// after the checks: the transpose path (transpose.cpp). values, when not null, replace the values
// of L^T (local) and R^T (remote), in their entry order (see State::Reverse). variant runs the
// products with L^T and R^T. Binds the space to ctx.
template <class I, class V>
void transpose_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local,
                      const DenseMutView& out_local, double alpha, double beta, const std::string& variant,
                      const BlockValues* values, CallStats& st, const std::string& w);

// The transpose path's host arrays, made on first use (no MPI calls).
template <class I, class V>
typename DistCsr<I, V>::State::Reverse& reverse_of(typename DistCsr<I, V>::State& s);

// The training ops (spmm_transpose, spmm_backward, sddmm_backward) on a device context: Unsupported
// naming the op. Their path is the forward's (public ops on the context, the state's arrays placed
// in its memory, the device transports), but it has not been run on a GPU, so it is not offered.
void refuse_device_context(const Context& ctx, const std::string& w);

// Element-wise maximum over the ranks of a few numbers (one MPI_Allreduce): what the checks of a
// collective call agree on first, e.g. F (as F and -F) and which outputs some rank asks for.
std::vector<int64_t> max_over_ranks(MPI_Comm comm, std::vector<int64_t> v, const std::string& w);

// into += step, for a call made of several distributed steps: times, bytes and messages added; the
// transport and the rows split of the last step that has them; halo_in_place when every exchanging
// step read in place.
void add_step(CallStats& into, const CallStats& step, bool first);

}  // namespace sparseport::dist::detail
