// SPDX-License-Identifier: Apache-2.0
// The front end's shared checks and the one way an op reaches a plugin slot. Checks that read
// index contents run on the host for host memory and through the plugin for device memory.
#pragma once

#include <new>
#include <optional>
#include <string>

#include "scheduler/select.hpp"
#include "sparseport/context.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/ops.hpp"
#include "core/registry.hpp"

namespace sparseport::ops {

// "sparseport::spmm[reference]": the prefix of every message an op raises.
std::string where(const Context& ctx, sparseport_op op);

sparseport_csr to_abi(const CsrView& v);
sparseport_coo to_abi(const CooView& v);
sparseport_index_array to_abi(const IndexView& v);
sparseport_dense to_abi(const DenseView& v);
sparseport_dense_mut to_abi(const DenseMutView& v);

// Pointers, ld >= cols, non-negative sizes; then the shape must be rows x cols.
void check_dense(const std::string& w, const char* arg, const DenseView& d, int64_t rows, int64_t cols,
                 const char* rule);
// Sizes, pointers, index/value type tags, then the contents as ctx.validate() says: rowptr[0] == 0,
// monotone, rowptr[rows] == nnz, columns in [0, cols). Host memory is read here; device memory by
// the plugin's check_indices, once per operand, or on every call with `plan` (a plan is built).
// (A plan's and a scheduled one-shot call's check of device memory can ride on the scheduler's
// summary of A instead: csr_plan_state in plan.cpp, call_csr_op below.)
void check_csr(const Context& ctx, const std::string& w, const char* arg, const CsrView& a, bool plan = false);
// check_csr's first part: sizes, pointers and type tags, nothing read from the arrays.
void check_csr_shape(const std::string& w, const char* arg, const CsrView& a);
// Whether a plan may have the contents checked by the scheduler's summary of A (device memory,
// checks on): SPARSEPORT_SUMMARY_CHECK, the check riding on a pass the plan makes anyway.
bool csr_check_can_ride(const Context& ctx);
// Records A's contents as checked on the device (the once-per-operand memo).
void csr_checked(const Context& ctx, const CsrView& a);
// Every entry in [0, bound); sorted ascending when `sorted`; contents as for check_csr.
void check_index(const Context& ctx, const std::string& w, const char* arg, const IndexView& idx, int64_t bound,
                 bool sorted, bool plan = false);
// The check of index contents in host memory: the first violation of c, as check_csr and
// check_index find it (a CSR's rowptr[0], rowptr[rows], first decreasing row, then first column
// out of range; an index array's first entry out of range or, sorted, below the one before). A
// plugin's check_indices must report the same (tests/kokkos/test_kokkos_summary.cpp compares).
sparseport_index_report host_report(const sparseport_index_check& c);
void check_same_type(const std::string& w, const char* arg, ValueType got, ValueType want);
void check_same_type(const std::string& w, const char* arg, IndexType got, IndexType want);
void check_reduce(const std::string& w, Reduce r);

// Each op's checks and ABI arguments, shared by the one-shot function and its plan. `structure`:
// check the sparse operand's contents too (O(nnz); a plan does it once, at construction).
// nullopt: nothing to compute (an empty output).
std::optional<sparseport_spmm_args> spmm_args(const Context& ctx, const std::string& w, const CsrView& a,
                                              const DenseView& b, const DenseMutView& c, const SpmmOptions& opt,
                                              bool structure);
std::optional<sparseport_sddmm_args> sddmm_args(const Context& ctx, const std::string& w, const CsrView& a,
                                                const DenseView& x, const DenseView& y, const DenseMutView& out,
                                                bool structure);
std::optional<sparseport_attention_args> attention_args(const Context& ctx, const std::string& w, const CsrView& a,
                                                        const DenseView& q, const DenseView& k, const DenseView& v,
                                                        const DenseMutView& out, const AttentionOptions& opt,
                                                        bool structure);
std::optional<sparseport_gather_scatter_args> gather_scatter_args(const Context& ctx, const std::string& w,
                                                                  const CooView& edges, const DenseView& x,
                                                                  const DenseMutView& out, const ReduceOptions& opt,
                                                                  bool structure);

// csr_transpose, also writing perm (a.nnz entries of A's index type) where non-null: the position
// in A of each entry of the result.
CsrMatrix transpose(const Context& ctx, const std::string& w, const CsrView& a, void* perm, const std::string& variant);

// The exec a call runs with: the context's, with SPARSEPORT_EXEC_ALLOW_TF32 as the call's
// allow_tf32 option says (unset: as the context says). The scheduler and the plugin see consent
// only through this flag, so decisions and one-shot plans made with and without it stay apart.
sparseport_exec exec_for(const Context& ctx, const std::optional<bool>& allow_tf32);

// Lets the scheduler pick the variant (or honours `requested`) and run it, under `exec`
// (ctx.exec() or exec_for's); a failed status becomes the matching exception. Host memory running
// out on this side of the plugin table (the scheduler's own vectors) is OutOfMemory too; inside a
// plugin, guarded() already turned it into a status.
template <class Args, class Fn>
void call_plugin(const Context& ctx, const sparseport_exec& exec, sparseport_op op, Fn slot, const Args& args,
                 const std::string& requested, const std::string& w, const scheduler::IndexRide* ride = nullptr) {
  if (slot == nullptr) throw Unsupported(w + ": backend '" + ctx.plugin().name + "' does not provide this op");
  try {
    scheduler::run(ctx.plugin(), exec, op, &args, requested, w, ride);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(w + ": ran out of host memory while running the op (std::bad_alloc)", 0, "std::bad_alloc");
  }
}
template <class Args, class Fn>
void call_plugin(const Context& ctx, sparseport_op op, Fn slot, const Args& args, const std::string& requested,
                 const std::string& w) {
  call_plugin(ctx, ctx.exec(), op, slot, args, requested, w);
}

// Where a one-shot op's A has its index contents checked: nowhere (ValidateMode or the
// once-per-operand memo says so), here (check_csr), or on the scheduler's summary of A
// (scheduler::IndexRide: device memory, checks on, no variant named).
enum class CsrCheck { none, here, ride };
CsrCheck csr_check_for(const Context& ctx, const CsrView& a, const std::string& requested);

// A's index contents after a plan's preparation that may have checked them in its summary of A
// (`problem`: PlanState::index_problem, -1 where it did not): 0 records A as checked; otherwise
// check_csr checks them (a plan's check, made whatever the memo says), which throws on a violation
// naming its row and values, and a violation the summary found that check_csr does not is an
// internal error. Plans (plan.cpp) and one-shot calls (call_csr_op) alike.
void csr_after_summary(const Context& ctx, const std::string& w, const CsrView& a, int32_t problem);

// A one-shot op over a CSR A (spmm, spmv, sddmm, csr_attention): its checks, `make_args(structure)`
// (structure: A's index contents too), then the plugin call. Where A's contents ride on the
// scheduler's summary, its sizes and pointers are checked first and its contents by
// csr_after_summary with the scheduler's verdict, before anything reads A by its indices; with an
// empty output, by check_csr, as before.
template <class MakeArgs, class Fn>
void call_csr_op(const Context& ctx, const sparseport_exec& exec, sparseport_op op, Fn slot, const CsrView& a,
                 const std::string& requested, const std::string& w, const MakeArgs& make_args) {
  const CsrCheck how = csr_check_for(ctx, a, requested);
  if (how != CsrCheck::here) check_csr_shape(w, "A", a);
  const auto args = make_args(how == CsrCheck::here);
  if (!args) {
    if (how == CsrCheck::ride) check_csr(ctx, w, "A", a);
    return;
  }
  if (how != CsrCheck::ride) return call_plugin(ctx, exec, op, slot, *args, requested, w);
  const scheduler::IndexRide ride{[&](int32_t problem) { csr_after_summary(ctx, w, a, problem); }};
  call_plugin(ctx, exec, op, slot, *args, requested, w, &ride);
}

// Bytes for n elements of `size` bytes; OutOfMemory when that does not fit size_t.
size_t bytes_for(const std::string& w, const char* what, int64_t n, size_t size);
// ctx.allocate for n elements of one of the op's results; OutOfMemory names the op, the array and the bytes.
Buffer allocate_result(const Context& ctx, const std::string& w, const char* what, int64_t n, size_t size);

// Runs a two-phase structural op (phase 0: rowptr; phase 1: fill) into a CsrMatrix in ctx's memory.
template <class Args, class Fn>
CsrMatrix call_two_phase(const Context& ctx, sparseport_op op, Fn slot, Args args, const CsrView& a, int64_t rows,
                         int64_t cols, const std::string& requested, const std::string& w) {
  CsrMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.index_type = a.index_type;
  m.value_type = a.value_type;
  m.pattern = a.is_pattern();
  const size_t isz = static_cast<size_t>(size_of(a.index_type));
  m.rowptr = allocate_result(ctx, w, "the result's rowptr", rows + 1, isz);
  args.out = {rows, cols, 0, m.rowptr.data(), nullptr, nullptr, static_cast<int32_t>(a.index_type),
              static_cast<int32_t>(a.value_type)};
  args.phase = 0;
  call_plugin(ctx, op, slot, args, requested, w);
  if (isz == 4) {
    int32_t last = 0;
    ctx.copy_to_host(&last, static_cast<const char*>(m.rowptr.data()) + rows * 4, 4);
    m.nnz = last;
  } else {
    ctx.copy_to_host(&m.nnz, static_cast<const char*>(m.rowptr.data()) + rows * 8, 8);
  }
  // The plugins refuse a count that does not fit before they store it; a negative total means one did not.
  if (m.nnz < 0)
    throw PluginError(w + ": the result's rowptr[" + std::to_string(rows) + "] reads " + std::to_string(m.nnz) +
                      " after phase 0: the plugin let the entry count overflow its " + name(a.index_type) +
                      " rowptr instead of refusing it; use int64 indices");
  m.colind = allocate_result(ctx, w, "the result's colind", m.nnz, isz);
  if (!m.pattern) m.values = allocate_result(ctx, w, "the result's values", m.nnz, static_cast<size_t>(size_of(a.value_type)));
  args.out.nnz = m.nnz;
  args.out.colind = m.colind.data();
  args.out.values = m.pattern ? nullptr : m.values.data();
  args.phase = 1;
  call_plugin(ctx, op, slot, args, requested, w);
  return m;
}

}  // namespace sparseport::ops
