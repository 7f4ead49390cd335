// SPDX-License-Identifier: Apache-2.0
// Fills the cuda backend's table: device, memory and the per-context state from backends/cuda,
// the math from kernels/cuda. Every op first makes the context's device current, checks that its
// pointers are device memory (naming the op and the argument when one is not), re-checks that
// the variant applies, then queues its kernels on the context's stream and returns. A sticky
// device fault poisons the context: later calls fail with DeviceFault at once.
// One file of about 700 lines on purpose: it is the plugin's whole binding layer (the math is one
// file per op in kernels/cuda), and a variant's flags, its rules of applicability and the slot that
// launches it are read and changed together; split, adding a variant would touch three files.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "backends/cuda/preload.hpp"
#include "backends/cuda/runtime.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/tc_window_format.hpp"
#include "plugins/cuda/diagnostics.h"
#include "core/plugin_support.hpp"

namespace {

using namespace sparseport;
namespace cu = sparseport::cuda;

constexpr uint32_t kDefault = SPARSEPORT_VARIANT_DEFAULT;
constexpr uint32_t kVendor = SPARSEPORT_VARIANT_VENDOR;
// Bitwise-identical results run to run and for any launch shape (plugins/cuda/README.md says why
// each one is). Variants whose fixed-order path differs from their default path take it when
// sparseport_exec.flags has SPARSEPORT_EXEC_DETERMINISTIC (deterministic() below).
constexpr uint32_t kDet = SPARSEPORT_VARIANT_DETERMINISTIC;
// Writes sparseport_spmm_args.arg for max and min (ABI 1.5). row_warp applies to every input, so
// the front end always has a recording variant to fall back to.
constexpr uint32_t kArg = SPARSEPORT_VARIANT_RECORDS_ARG;
// Rounds float32 inputs to TF32: offered only where the caller allows it (SPARSEPORT_EXEC_ALLOW_TF32).
constexpr uint32_t kTf32 = SPARSEPORT_VARIANT_TF32;
// Takes F16 and BF16 values itself (ABI 1.7): 16-bit loads and stores, float32 products and sums,
// one rounding per stored result. The front end serves every other variant's 16-bit calls through
// float32 copies; why_not refuses the 16-bit inputs a flagged variant cannot take.
constexpr uint32_t k16 = SPARSEPORT_VARIANT_VALUES16;

const sparseport_variant kVariants[] = {
    // spmm.row_warp_vec4 is the default; where it does not apply, the first that does (row_warp).
    {SPARSEPORT_OP_SPMM, "spmm.row_warp_vec4", kDefault | kDet | kArg | k16,
     "a group of F/4 lanes (4 to 32) per row, 16-byte vectors along F; needs F % 4 == 0 and 16-byte aligned rows of B and C; "
     "records arg for max/min; 16-bit values: F/8 lanes, 8 values a lane, F % 8 == 0"},
    {SPARSEPORT_OP_SPMM, "spmm.row_warp", kDet | kArg | k16,
     "a warp per row, lanes across F; any F and alignment; a long row holds one warp; records arg for max/min"},
    {SPARSEPORT_OP_SPMM, "spmm.hub_split", kDet | k16,
     "rows above SPARSEPORT_HUB_T (256; 64 below 4 M entries) entries get whole CTAs, a mega-row split over up to 8 x SMs CTAs; the rest as "
     "row_warp(_vec4), in the same launch, with several lane groups per row on small matrices; deterministic mode: a fixed "
     "partition and the split rows' parts combined in order"},
    {SPARSEPORT_OP_SPMM, "spmm.nnz_balanced", 0,
     "equal nonzero chunks per group, rows reduced in registers, atomics only for rows that cross a chunk; skew-independent"},
    {SPARSEPORT_OP_SPMM, "spmm.vector_rows", kDet | k16,
     "F <= 16 (SpMV and a few vectors): 2 to 32 lanes per row by the mean row length, lanes across the row's entries, "
     "each holding all F columns with several gathers in flight; a long row holds one group"},
    {SPARSEPORT_OP_SPMM, "spmm.merge_path", kDet | k16,
     "equal rows + entries per warp (merge path, chunk boundaries kept per matrix), rows longer than a chunk split "
     "between warps and finished in a fixed order by a second kernel, no atomics; any F (F <= 16: lanes across "
     "entries; above: lane groups across F, 16-byte vectors where B and C allow); for skewed rows"},
    {SPARSEPORT_OP_SPMM, "spmm.tc_window", k16,
     "tensor cores (mma.m16n8k16, float32 accumulation) for f16 and bf16 values, sum and mean: 8-row windows whose "
     "distinct columns are compacted into blocks of 16 with dense 8 x 16 tiles, built on the GPU once per plan; a warp "
     "per part of up to 32 blocks and slice of 16-64 features, B rows loaded straight into the mma's registers; "
     "windows of several parts summed in float32 scratch (atomics), C written once"},
    {SPARSEPORT_OP_SPMM, "spmm.tc_window_tf32", kTf32,
     "spmm.tc_window for float32 values on the tensor cores as TF32 (mma.m16n8k8; inputs rounded to 10 mantissa "
     "bits, float32 accumulation): only where the caller allows TF32"},
    // Two vendor variants: the scheduler's reference for an input is the first that applies to it,
    // so cusparseSpMV (F == 1) comes before cusparseSpMM; PluginInfo::vendor_variant names the last.
    {SPARSEPORT_OP_SPMM, "spmm.cusparse_spmv", kVendor | k16,
     "cusparseSpMV CSR, the faster of ALG1 and ALG2 timed once per plan; F == 1 with contiguous vectors, sum only"},
    {SPARSEPORT_OP_SPMM, "spmm.cusparse", kVendor | k16,
     "cusparseSpMM CSR, row-major B and C, the faster of ALG2 and ALG3 (preprocessed) timed once per plan; sum only"},
    {SPARSEPORT_OP_SDDMM, "sddmm.nnz_balanced", kDefault | kDet | k16,
     "entries as the unit of work (a row index kept per matrix), 8 lanes per dot product with 16-byte vectors where F and "
     "alignment allow, several dot products in flight per lane"},
    {SPARSEPORT_OP_SDDMM, "sddmm.row_warp", kDet | k16, "a warp per row, one column per lane, dot products reduced by shuffles"},
    {SPARSEPORT_OP_SDDMM, "sddmm.vec4", kDet | k16,
     "a warp per row, F/4 lanes per dot product with 16-byte vectors; needs F % 4 == 0 and 16-byte aligned rows of X and Y "
     "(16-bit values: F/8 lanes, F % 8 == 0)"},
    {SPARSEPORT_OP_SDDMM, "sddmm.cusparse", kVendor, "cusparseSDDMM (Y read as column-major F x k), then A's values applied"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.nnz_balanced", kDefault,
     "equal chunks of messages per group, runs reduced in registers and stored once, atomics only where a run crosses a chunk"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.atomic", 0, "every element an atomic update; the baseline"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.nnz_balanced_deterministic", kDet,
     "no atomics: chunks of a length fixed by E, runs crossing chunks combined in message order by fix-up passes"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.atomic", kDefault,
     "every element an atomic update (PyG scatter, index_add_); the index may be in any order"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.sort_segment", kDet,
     "no atomics: a stable radix sort of (index, position), then segment_reduce.nnz_balanced_deterministic over src rows "
     "gathered through the permutation"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.nnz_balanced", kDefault,
     "segment_reduce.nnz_balanced on messages gathered on the fly; never materialises E x F"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.atomic", 0, "every gathered element an atomic update; the baseline"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.nnz_balanced_deterministic", kDet,
     "segment_reduce.nnz_balanced_deterministic on messages gathered on the fly; no atomics"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.fused", kDefault | kDet | k16,
     "one pass per row with an online softmax, a group of lanes per row; rows above SPARSEPORT_HUB_T split over CTAs "
     "and merged (flash-decoding); 16-bit values: float32 scores and sums, a group of max(F, Fv)/8 lanes (4 to 32) "
     "with 16-byte vectors where F, Fv and alignment allow (one value a lane otherwise), long rows not split"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.unfused", kDet,
     "sddmm.nnz_balanced into an nnz buffer, row softmax, then spmm.nnz_balanced (deterministic mode: spmm.hub_split's "
     "fixed-order path)"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.device", kDefault | kDet,
     "row lengths, a device scan, a warp per row copying"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, "csr_slice_rows_dense.device", kDefault | kDet,
     "out zeroed, a warp per selected row scattering with atomics (repeated columns add up; deterministic mode: in "
     "entry order, no atomics)"},
    {SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, "csr_induced_subgraph.device", kDefault | kDet,
     "a device vertex map, kept entries counted and scanned, then written in A's order by a ballot compaction"},
    {SPARSEPORT_OP_CSR_TRANSPOSE, "csr_transpose.device", kDefault | kDet,
     "column counts scanned into rowptr, a stable radix sort of (column, entry), then rows and values gathered"},
};

std::string dims(const sparseport_dense& d) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "ld %lld, %s", static_cast<long long>(d.ld),
                cu::aligned16(d.data) ? "16-byte aligned" : "not 16-byte aligned");
  return buf;
}
std::string dims(const sparseport_dense_mut& d) { return dims(sparseport_dense{d.rows, d.cols, d.ld, d.data, d.value_type}); }

bool is16(int32_t value_type) { return value_type == SPARSEPORT_F16 || value_type == SPARSEPORT_BF16; }

// Whether spmm.tc_window is offered: the build's default (SPARSEPORT_CUDA_TENSOR_CORES, OFF until
// the variant passes on a GPU), overridden by the environment variable of the same name. Read on
// every applies() question, so that a test or a user can turn it on in a running process.
bool tc_window_on() {
  const char* e = std::getenv("SPARSEPORT_CUDA_TENSOR_CORES");
  if (e != nullptr && *e != '\0') return std::strcmp(e, "0") != 0;
  return SPARSEPORT_CUDA_TENSOR_CORES_DEFAULT != 0;
}
const char* type_name(int32_t value_type) { return value_type == SPARSEPORT_BF16 ? "bf16" : "f16"; }


// Whether variant v of op is flagged k16 (takes 16-bit values itself); an unknown name passes
// (the op slot names it as unknown).
bool takes16(int32_t op, std::string_view v) {
  for (const sparseport_variant& x : kVariants)
    if (x.op == op && v == x.name) return (x.flags & k16) != 0;
  return true;
}

// The reason a variant without k16 is given 16-bit values (the front end converts them for it, so
// only a direct caller meets it), else empty.
std::string not16(int32_t op, std::string_view v, int32_t value_type) {
  if (!is16(value_type) || takes16(op, v)) return {};
  return std::string(v) + " takes float32 and float64 values only, not " + type_name(value_type) +
         " (it is not flagged SPARSEPORT_VARIANT_VALUES16; the front end runs it on float32 copies)";
}

// Empty when variant applies to args, else the reason in a whole sentence.
std::string why_not(int32_t op, std::string_view v, const void* args) {
  if (op == SPARSEPORT_OP_SPMM) {
    const auto& a = *static_cast<const sparseport_spmm_args*>(args);
    const int64_t F = a.b.cols;
    if (std::string r = not16(op, v, a.c.value_type); !r.empty()) return r;
    if (v == "spmm.row_warp_vec4" && is16(a.c.value_type) &&
        !(cu::vec16_rows(a.b.data, a.b.ld, F, 2) && cu::vec16_rows(a.c.data, a.c.ld, F, 2)))
      return "spmm.row_warp_vec4 with " + std::string(type_name(a.c.value_type)) +
             " values reads 16-byte vectors of 8: it needs F % 8 == 0, B.ld and C.ld multiples of 8 and 16-byte "
             "aligned B and C, but F = " + std::to_string(F) + ", B has " + dims(a.b) + " and C has " + dims(a.c);
    if (v == "spmm.row_warp_vec4" && !is16(a.c.value_type) &&
        !(cu::vec4_rows(a.b.data, a.b.ld, F) && cu::vec4_rows(a.c.data, a.c.ld, F)))
      return "spmm.row_warp_vec4 needs F % 4 == 0, B.ld and C.ld multiples of 4 and 16-byte aligned B and C, but F = " +
             std::to_string(F) + ", B has " + dims(a.b) + " and C has " + dims(a.c);
    if (v == "spmm.tc_window" || v == "spmm.tc_window_tf32") {
      const std::string n(v);
      if (!tc_window_on())
        return n + " is off in this build (configure with -DSPARSEPORT_CUDA_TENSOR_CORES=ON or set "
                   "SPARSEPORT_CUDA_TENSOR_CORES=1 to offer it)";
      // The reduction first: a 16-bit max or min reaches the plugin as float32 copies (the front
      // end converts for variants that cannot take it), and its reason is the reduction.
      if (a.reduce == SPARSEPORT_REDUCE_MAX || a.reduce == SPARSEPORT_REDUCE_MIN)
        return n + " computes sums and means only (an mma adds its products), but reduce is " +
               (a.reduce == SPARSEPORT_REDUCE_MAX ? "max" : "min");
      const std::string type = is16(a.c.value_type) ? type_name(a.c.value_type)
                               : a.c.value_type == SPARSEPORT_F64 ? "float64" : "float32";
      if (v == "spmm.tc_window" && !is16(a.c.value_type))
        return "spmm.tc_window runs mma.m16n8k16 on f16 and bf16 values only (float32 accumulation), not " + type +
               (a.c.value_type == SPARSEPORT_F32 ? " (spmm.tc_window_tf32 runs float32 as TF32 where the caller allows it)"
                                                : "");
      if (v == "spmm.tc_window_tf32" && a.c.value_type != SPARSEPORT_F32)
        return "spmm.tc_window_tf32 rounds float32 values to TF32 (mma.m16n8k8), not " + type +
               (is16(a.c.value_type) ? " (spmm.tc_window takes 16-bit values)" : "");
      if (cu::tc_key_bits(a.a.rows, a.a.cols) > 64)
        return n + " sorts A's entries by 64-bit (window, column, row) keys, but A is " + std::to_string(a.a.rows) +
               "x" + std::to_string(a.a.cols) + ", which needs " +
               std::to_string(cu::tc_key_bits(a.a.rows, a.a.cols)) + " bits";
    }
    if (v == "spmm.vector_rows" && F > cu::kSmallFMaxF)
      return std::string(v) + " serves F <= " + std::to_string(cu::kSmallFMaxF) + " (all F columns of a product in a "
             "lane's registers) but F = " + std::to_string(F);
    if ((v == "spmm.cusparse" || v == "spmm.cusparse_spmv") && a.reduce != SPARSEPORT_REDUCE_SUM)
      return std::string(v) + " computes sums only (cuSPARSE has no mean, max or min), but reduce is " +
             (a.reduce == SPARSEPORT_REDUCE_MEAN ? "mean" : a.reduce == SPARSEPORT_REDUCE_MAX ? "max" : "min");
    // Measured on an H200 (CUDA 13): cuSPARSE's 16-bit SpMM/SpMV (CUDA_R_16BF/16F data, compute
    // CUDA_R_32F) sums a row of 10^5 ones to 8192 in bf16 and 32768 in f16, and overflows f16 on a
    // partial sum of 120000 whose total is 45000: it carries partial sums in the 16-bit type. So
    // 16-bit calls reach cuSPARSE through float32 copies (exact to float32 sums), unless
    // SPARSEPORT_CUSPARSE16=1 asks for its own 16-bit path (the benchmarks' vendor baseline).
    if ((v == "spmm.cusparse" || v == "spmm.cusparse_spmv") && is16(a.c.value_type)) {
      const char* e = std::getenv("SPARSEPORT_CUSPARSE16");
      if (e == nullptr || std::string(e) != "1")
        return std::string(v) + " in 16 bits carries partial sums in the 16-bit type (a bf16 row of 10^5 ones "
               "sums to 8192); it runs on float32 copies unless SPARSEPORT_CUSPARSE16=1";
    }
    if (v == "spmm.cusparse_spmv" && !cu::spmv_vectors(a.b, a.c))
      return "spmm.cusparse_spmv multiplies one contiguous vector (cusparseSpMV): it needs F == 1 and B.ld == C.ld == "
             "1, but F = " + std::to_string(F) + ", B.ld = " + std::to_string(a.b.ld) + " and C.ld = " +
             std::to_string(a.c.ld);
  } else if (op == SPARSEPORT_OP_SDDMM) {
    const auto& a = *static_cast<const sparseport_sddmm_args*>(args);
    const int64_t F = a.x.cols;
    if (std::string r = not16(op, v, a.out.value_type); !r.empty()) return r;
    if (v == "sddmm.vec4" && is16(a.out.value_type) &&
        !(cu::vec16_rows(a.x.data, a.x.ld, F, 2) && cu::vec16_rows(a.y.data, a.y.ld, F, 2)))
      return "sddmm.vec4 with " + std::string(type_name(a.out.value_type)) +
             " values reads 16-byte vectors of 8: it needs F % 8 == 0, X.ld and Y.ld multiples of 8 and 16-byte "
             "aligned X and Y, but F = " + std::to_string(F) + ", X has " + dims(a.x) + " and Y has " + dims(a.y);
    if (v == "sddmm.vec4" && !is16(a.out.value_type) &&
        !(cu::vec4_rows(a.x.data, a.x.ld, F) && cu::vec4_rows(a.y.data, a.y.ld, F)))
      return "sddmm.vec4 needs F % 4 == 0, X.ld and Y.ld multiples of 4 and 16-byte aligned X and Y, but F = " +
             std::to_string(F) + ", X has " + dims(a.x) + " and Y has " + dims(a.y);
  } else if (op == SPARSEPORT_OP_CSR_ATTENTION) {
    const auto& a = *static_cast<const sparseport_attention_args*>(args);
    // csr_attention.fused takes 16-bit values for every F and Fv and any alignment (16-byte
    // vectors where it can, one value a lane otherwise); unfused gets them as float32 copies.
    if (std::string r = not16(op, v, a.out.value_type); !r.empty()) return r;
  }
  return {};
}

int applies(int32_t op, const char* variant, const void* args, sparseport_status* why) {
  const std::string reason = why_not(op, variant != nullptr ? variant : "", args);
  if (reason.empty()) return 1;
  detail::set_status(why, SPARSEPORT_ERR_UNSUPPORTED, reason, 0, "none");
  return 0;
}

[[noreturn]] void unknown(std::string_view variant, const char* op) {
  throw Unsupported(std::string("the cuda plugin has no variant '") + std::string(variant) + "' of " + op);
}

void require_applies(int32_t op, std::string_view variant, const void* args) {
  const std::string reason = why_not(op, variant, args);
  if (!reason.empty()) throw Unsupported(reason);
}

// Runs f on the context's state with the device current; a sticky fault poisons the state.
template <class F>
int with_state(void* state, sparseport_status* st, F&& f) {
  const cu::PluginCall call;  // the module preload waits while calls run
  auto* s = static_cast<cu::State*>(state);
  return detail::guarded(st, [&] {
    if (s == nullptr) throw PluginError("the cuda plugin was called without a context");
    try {
      f(*s);
    } catch (const DeviceFault& e) {
      s->poison(e.native_name() + ": " + e.what());
      throw;
    }
  });
}

// Whether the caller asked for deterministic mode (ABI 1.2 exec flags).
bool deterministic(const sparseport_exec* x) { return x != nullptr && (x->flags & SPARSEPORT_EXEC_DETERMINISTIC) != 0; }

template <class F>
int run_op(const sparseport_exec* x, sparseport_status* st, F&& f) {
  return with_state(x != nullptr ? x->state : nullptr, st, [&](cu::State& s) {
    s.activate();
    f(s);
  });
}

// ---- pointer checks: every array the op will touch must be device memory of this device --------

void need(const cu::State& s, const void* p, bool used, const char* op, const char* arg) {
  if (used) cu::require_device_pointer(s, p, op, arg);
}

void need_csr(const cu::State& s, const sparseport_csr& a, const char* op) {
  need(s, a.rowptr, true, op, "A.rowptr");
  need(s, a.colind, a.nnz > 0, op, "A.colind");
  need(s, a.values, a.nnz > 0, op, "A.values");
}

void need_dense(const cu::State& s, const void* data, int64_t rows, int64_t cols, const char* op, const char* arg) {
  need(s, data, rows > 0 && cols > 0, op, arg);
}

// ---- op slots ----------------------------------------------------------------------------------

int spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a, sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    need_csr(s, a->a, "spmm");
    need_dense(s, a->b.data, a->b.rows, a->b.cols, "spmm", "B");
    need_dense(s, a->c.data, a->c.rows, a->c.cols, "spmm", "C");
    require_applies(SPARSEPORT_OP_SPMM, v, a);
    if (v != "spmm.row_warp_vec4" && v != "spmm.row_warp" && v != "spmm.hub_split" && v != "spmm.nnz_balanced" &&
        v != "spmm.vector_rows" && v != "spmm.merge_path" && v != "spmm.tc_window" && v != "spmm.tc_window_tf32" &&
        v != "spmm.cusparse_spmv" &&
        v != "spmm.cusparse")
      unknown(v, "spmm");
    // arg (ABI 1.5) is written for max and min only, and only by the variants flagged kArg.
    if (a->arg != nullptr && (a->reduce == SPARSEPORT_REDUCE_MAX || a->reduce == SPARSEPORT_REDUCE_MIN)) {
      if (v != "spmm.row_warp_vec4" && v != "spmm.row_warp")
        throw Unsupported(std::string(v) +
                          " does not record arg (the entry that won each max or min); spmm.row_warp and "
                          "spmm.row_warp_vec4 do");
      need_dense(s, a->arg, a->c.rows, a->c.cols, "spmm", "arg");
    }
    if (a->c.rows == 0 || a->c.cols == 0) return;
    if (a->a.nnz == 0 && is16(a->c.value_type)) {
      // C = beta * C (and arg = -1) in 16 bits: row_warp's empty rows (spmm_empty scales in
      // float32 and double only).
      cu::spmm_row_warp(s, *a);
    } else if (a->a.nnz == 0) {
      cu::spmm_empty(s, *a);
    } else if (v == "spmm.row_warp_vec4") {
      cu::spmm_row_warp_vec4(s, *a);
    } else if (v == "spmm.row_warp") {
      cu::spmm_row_warp(s, *a);
    } else if (v == "spmm.hub_split") {
      cu::spmm_hub_split(s, *a, deterministic(x));
    } else if (v == "spmm.nnz_balanced") {
      cu::spmm_nnz_balanced(s, *a);
    } else if (v == "spmm.vector_rows") {
      cu::spmm_vector_rows(s, *a, deterministic(x));
    } else if (v == "spmm.merge_path") {
      cu::spmm_merge_path(s, *a);
    } else if (v == "spmm.tc_window" || v == "spmm.tc_window_tf32") {
      cu::spmm_tc_window(s, *a);
    } else if (v == "spmm.cusparse_spmv") {
      cu::spmm_cusparse_spmv(s, *a);
    } else {
      cu::spmm_cusparse(s, *a);
    }
  });
}

int sddmm(const sparseport_exec* x, const char* variant, const sparseport_sddmm_args* a, sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    need_csr(s, a->a, "sddmm");
    need_dense(s, a->x.data, a->x.rows, a->x.cols, "sddmm", "X");
    need_dense(s, a->y.data, a->y.rows, a->y.cols, "sddmm", "Y");
    need_dense(s, a->out.data, a->out.rows, a->out.cols, "sddmm", "out");
    require_applies(SPARSEPORT_OP_SDDMM, v, a);
    if (v != "sddmm.nnz_balanced" && v != "sddmm.row_warp" && v != "sddmm.vec4" && v != "sddmm.cusparse")
      unknown(v, "sddmm");
    if (a->a.nnz == 0) return;
    if (a->x.cols == 0) {  // every dot product is empty: out = 0 whatever the variant
      cu::dense_fill(s, a->out.data, a->out.rows, a->out.cols, a->out.ld, a->out.value_type, 0.0);
    } else if (v == "sddmm.nnz_balanced") {
      cu::sddmm_nnz_balanced(s, *a);
    } else if (v == "sddmm.row_warp") {
      cu::sddmm_row_warp(s, *a);
    } else if (v == "sddmm.vec4") {
      cu::sddmm_vec4(s, *a);
    } else {
      cu::sddmm_cusparse(s, *a);
    }
  });
}

void need_segment(const cu::State& s, const sparseport_segment_args& a, const char* op) {
  need(s, a.index.data, a.index.n > 0, op, "index");
  need_dense(s, a.src.data, a.src.rows, a.src.cols, op, "src");
  need_dense(s, a.out.data, a.out.rows, a.out.cols, op, "out");
}

int segment_reduce(const sparseport_exec* x, const char* variant, const sparseport_segment_args* a,
                   sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    need_segment(s, *a, "segment_reduce");
    if (a->out.rows == 0 || a->out.cols == 0) return;
    if (v == "segment_reduce.nnz_balanced")
      cu::segment_reduce_nnz_balanced(s, *a);
    else if (v == "segment_reduce.nnz_balanced_deterministic")
      cu::segment_reduce_nnz_balanced_deterministic(s, *a);
    else if (v == "segment_reduce.atomic")
      cu::segment_reduce_atomic(s, *a);
    else
      unknown(v, "segment_reduce");
  });
}

int scatter_reduce(const sparseport_exec* x, const char* variant, const sparseport_segment_args* a,
                   sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    need_segment(s, *a, "scatter_reduce");
    if (v != "scatter_reduce.atomic" && v != "scatter_reduce.sort_segment") unknown(v, "scatter_reduce");
    if (a->out.rows == 0 || a->out.cols == 0) return;
    if (v == "scatter_reduce.sort_segment")
      cu::scatter_reduce_sort_segment(s, *a);
    else
      cu::segment_reduce_atomic(s, *a);
  });
}

int gather_scatter(const sparseport_exec* x, const char* variant, const sparseport_gather_scatter_args* a,
                   sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    const bool any = a->edges.nnz > 0;
    need(s, a->edges.row, any, "gather_scatter", "edges.row");
    need(s, a->edges.col, any, "gather_scatter", "edges.col");
    need(s, a->edges.values, any, "gather_scatter", "edges.values");
    need_dense(s, a->x.data, a->x.rows, a->x.cols, "gather_scatter", "x");
    need_dense(s, a->out.data, a->out.rows, a->out.cols, "gather_scatter", "out");
    if (a->out.rows == 0 || a->out.cols == 0) return;
    if (v == "gather_scatter.nnz_balanced")
      cu::gather_scatter_nnz_balanced(s, *a);
    else if (v == "gather_scatter.nnz_balanced_deterministic")
      cu::gather_scatter_nnz_balanced_deterministic(s, *a);
    else if (v == "gather_scatter.atomic")
      cu::gather_scatter_atomic(s, *a);
    else
      unknown(v, "gather_scatter");
  });
}

int csr_attention(const sparseport_exec* x, const char* variant, const sparseport_attention_args* a,
                  sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const std::string_view v = variant != nullptr ? variant : "";
    need(s, a->a.rowptr, true, "csr_attention", "A.rowptr");
    need(s, a->a.colind, a->a.nnz > 0, "csr_attention", "A.colind");  // A's values are not read
    need_dense(s, a->q.data, a->q.rows, a->q.cols, "csr_attention", "Q");
    need_dense(s, a->k.data, a->k.rows, a->k.cols, "csr_attention", "K");
    need_dense(s, a->v.data, a->v.rows, a->v.cols, "csr_attention", "V");
    need_dense(s, a->out.data, a->out.rows, a->out.cols, "csr_attention", "out");
    if (is16(a->out.value_type)) require_applies(SPARSEPORT_OP_CSR_ATTENTION, v, a);
    if (a->out.rows == 0 || a->out.cols == 0) return;
    if (v == "csr_attention.fused" && is16(a->out.value_type))
      cu::csr_attention_fused16(s, *a);  // deterministic in either mode: no atomics, a fixed order
    else if (v == "csr_attention.fused")
      cu::csr_attention_fused(s, *a, deterministic(x));
    else if (v == "csr_attention.unfused")
      cu::csr_attention_unfused(s, *a, deterministic(x));
    else
      unknown(v, "csr_attention");
  });
}

void need_out_csr(const cu::State& s, const sparseport_csr_mut& o, int phase, const char* op) {
  if (phase == 0) {
    need(s, o.rowptr, true, op, "out.rowptr");
  } else {
    need(s, o.colind, o.nnz > 0, op, "out.colind");
    need(s, o.values, o.nnz > 0, op, "out.values");
  }
}

int csr_slice_rows(const sparseport_exec* x, const char* variant, const sparseport_slice_rows_args* a,
                   sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    if (std::string_view(variant != nullptr ? variant : "") != "csr_slice_rows.device")
      unknown(variant != nullptr ? variant : "", "csr_slice_rows");
    need_csr(s, a->a, "csr_slice_rows");
    need(s, a->rows.data, a->rows.n > 0, "csr_slice_rows", "rows");
    need_out_csr(s, a->out, a->phase, "csr_slice_rows");
    cu::csr_slice_rows(s, *a);
  });
}

int csr_slice_rows_dense(const sparseport_exec* x, const char* variant, const sparseport_slice_rows_dense_args* a,
                         sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    if (std::string_view(variant != nullptr ? variant : "") != "csr_slice_rows_dense.device")
      unknown(variant != nullptr ? variant : "", "csr_slice_rows_dense");
    need_csr(s, a->a, "csr_slice_rows_dense");
    need(s, a->rows.data, a->rows.n > 0, "csr_slice_rows_dense", "rows");
    need_dense(s, a->out.data, a->out.rows, a->out.cols, "csr_slice_rows_dense", "out");
    if (a->out.rows == 0 || a->out.cols == 0) return;
    cu::csr_slice_rows_dense(s, *a, deterministic(x));
  });
}

int csr_induced_subgraph(const sparseport_exec* x, const char* variant, const sparseport_induced_subgraph_args* a,
                         sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    if (std::string_view(variant != nullptr ? variant : "") != "csr_induced_subgraph.device")
      unknown(variant != nullptr ? variant : "", "csr_induced_subgraph");
    need_csr(s, a->a, "csr_induced_subgraph");
    need(s, a->vertices.data, a->vertices.n > 0, "csr_induced_subgraph", "vertices");
    need_out_csr(s, a->out, a->phase, "csr_induced_subgraph");
    cu::csr_induced_subgraph(s, *a);
  });
}

int csr_transpose(const sparseport_exec* x, const char* variant, const sparseport_transpose_args* a,
                  sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    if (std::string_view(variant != nullptr ? variant : "") != "csr_transpose.device")
      unknown(variant != nullptr ? variant : "", "csr_transpose");
    need_csr(s, a->a, "csr_transpose");
    need(s, a->out.rowptr, true, "csr_transpose", "out.rowptr");
    need(s, a->out.colind, a->out.nnz > 0, "csr_transpose", "out.colind");
    need(s, a->out.values, a->out.nnz > 0, "csr_transpose", "out.values");
    need(s, a->perm, a->a.nnz > 0, "csr_transpose", "perm");
    cu::csr_transpose(s, *a);
  });
}

// ---- spmm max/min backward (ABI 1.5) -------------------------------------------------------------

int spmm_arg_backward(const sparseport_exec* x, const sparseport_spmm_arg_backward_args* a, sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const char* op = "spmm_arg_backward";
    const bool dv = a->dvalues.data != nullptr, db = a->db.data != nullptr;
    const int64_t m = a->a.rows, F = a->dc.cols, nnz = a->a.nnz;
    need_csr(s, a->a, op);
    need_dense(s, a->dc.data, m, F, op, "dC");
    need_dense(s, a->arg, m, F, op, "arg");
    need(s, a->b.data, dv && nnz > 0 && F > 0, op, "B");
    need(s, a->dvalues.data, dv && nnz > 0, op, "dvalues");
    need_dense(s, a->db.data, a->db.rows, a->db.cols, op, "dB");
    const int given = (a->at_rowptr != nullptr) + (a->at_colind != nullptr) + (a->at_perm != nullptr);
    if (given != 0 && given != 3)
      throw InvalidArgument(std::string(op) + "[cuda]: at_rowptr, at_colind and at_perm describe A^T together, but " +
                            std::to_string(given) + " of the 3 are given (give all of them, or none to scatter)");
    if (given == 3 && db) {
      need(s, a->at_rowptr, true, op, "at_rowptr");
      need(s, a->at_colind, nnz > 0, op, "at_colind");
      need(s, a->at_perm, nnz > 0, op, "at_perm");
    }
    if (!dv && !db) return;
    cu::spmm_arg_backward(s, *a, deterministic(x));
  });
}

// ---- csr_attention_backward's weights (ABI 1.6) --------------------------------------------------

int csr_softmax(const sparseport_exec* x, const sparseport_csr_softmax_args* a, sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    need(s, a->a.rowptr, true, "csr_softmax", "A.rowptr");  // A's colind and values are not read
    need(s, a->scores, a->a.nnz > 0, "csr_softmax", "scores");
    cu::csr_softmax(s, *a);
  });
}

// ---- value conversion (ABI 1.7): the front end's float32 path for 16-bit values ----------------

int convert(const sparseport_exec* x, const sparseport_dense* src, const sparseport_dense_mut* dst,
            sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    need(s, src->data, src->rows > 0 && src->cols > 0, "convert", "src");
    need(s, dst->data, src->rows > 0 && src->cols > 0, "convert", "dst");
    cu::convert(s, *src, *dst);
  });
}

// ---- index checks --------------------------------------------------------------------------------

int check_indices(const sparseport_exec* x, const sparseport_index_check* c, sparseport_index_report* r,
                  sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    const char* op = c->op != nullptr ? c->op : "check_indices";
    const std::string arg = c->arg != nullptr ? c->arg : "index";
    if (c->kind == SPARSEPORT_CHECK_CSR) {
      need(s, c->csr.rowptr, true, op, (arg + ".rowptr").c_str());
      need(s, c->csr.colind, c->csr.nnz > 0, op, (arg + ".colind").c_str());
    } else {
      need(s, c->index.data, c->index.n > 0, op, arg.c_str());
    }
    *r = cu::check_indices(s, *c);
  });
}

// ---- CSR summary ---------------------------------------------------------------------------------

int summarize_csr(const sparseport_exec* x, const sparseport_csr* a, uint32_t want, sparseport_csr_summary* out,
                  sparseport_status* st) {
  return run_op(x, st, [&](cu::State& s) {
    detail::check_summary_args(a, out);
    need(s, a->rowptr, true, "summarize_csr", "A.rowptr");
    need(s, a->colind, a->nnz > 0, "summarize_csr", "A.colind");  // A's values are not read
    *out = cu::summarize_csr(s, *a, want);
  });
}

// ---- lifecycle and memory ------------------------------------------------------------------------

int device_count(int32_t* count, sparseport_status* st) {
  return detail::guarded(st, [&] { *count = cu::device_count(); });
}

int describe_devices(char* buf, size_t len, sparseport_status* st) {
  return detail::guarded(st, [&] { std::snprintf(buf, len, "%s", cu::describe_devices().c_str()); });
}

int device_signature(void* state, char* buf, size_t len, sparseport_status* st) {
  return with_state(state, st, [&](cu::State& s) { std::snprintf(buf, len, "%s", cu::signature(s.device()).c_str()); });
}

int context_create(int32_t device, void** state, sparseport_status* st) {
  const cu::PluginCall call;
  return detail::guarded(st, [&] {
    auto s = std::make_unique<cu::State>(device);
    // The signature kernels (loaded, and launched once on a two-row matrix), and the pinned result
    // words of the summary and index checks, now rather than inside the first op's decision.
    cu::prepare_summary(*s);
    (void)s->check_words();
    // With SPARSEPORT_CUDA_PRELOAD=1, the kernel modules on a thread of their own, so that a first
    // decision does not load each candidate's module (~1 ms per MB) while it times it
    // (backends/cuda/preload.hpp).
    cu::preload_modules(device);
    *state = s.release();
  });
}

void context_destroy(void* state) { delete static_cast<cu::State*>(state); }

int alloc(void* state, size_t bytes, void** ptr, sparseport_status* st) {
  return with_state(state, st, [&](cu::State& s) { *ptr = s.alloc(bytes); });
}

void release(void* state, void* ptr) {
  if (state != nullptr) static_cast<cu::State*>(state)->release(ptr);
}

int copy(void* state, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status* st) {
  return with_state(state, st, [&](cu::State& s) { s.copy(dst, src, bytes, kind); });
}

int synchronize(void* state, sparseport_status* st) {
  return with_state(state, st, [&](cu::State& s) { s.synchronize(); });
}

int set_external(void* state, const sparseport_external* ext, sparseport_status* st) {
  return with_state(state, st, [&](cu::State& s) { s.set_external(ext); });
}

const sparseport_plugin kTable = {
    SPARSEPORT_ABI_VERSION,
    sizeof(sparseport_plugin),
    "cuda",
    "CUDA on NVIDIA GPUs: native SpMM/SDDMM/segment/attention kernels, cuSPARSE as the vendor baseline",
    SPARSEPORT_MEMORY_DEVICE,
    kVariants,
    static_cast<int32_t>(sizeof kVariants / sizeof kVariants[0]),
    &device_count,
    &describe_devices,
    &context_create,
    &context_destroy,
    &alloc,
    &release,
    &copy,
    &synchronize,
    &applies,
    &spmm,
    &sddmm,
    &segment_reduce,
    &scatter_reduce,
    &gather_scatter,
    &csr_attention,
    &csr_slice_rows,
    &csr_slice_rows_dense,
    &csr_induced_subgraph,
    &csr_transpose,
    &device_signature,
    &check_indices,
    &summarize_csr,
    &spmm_arg_backward,
    &set_external,
    &csr_softmax,
    &convert,
    nullptr,  // run_parts: device memory, summarized on the device (summarize_csr)
};

}  // namespace

extern "C" const sparseport_plugin* sparseport_plugin_cuda(void) { return &kTable; }

extern "C" int sparseport_cuda_get_diagnostics(void* state, sparseport_cuda_diagnostics* out) {
  if (state == nullptr || out == nullptr) return SPARSEPORT_ERR_INVALID_ARGUMENT;
  const auto* s = static_cast<const cu::State*>(state);
  const cu::PlanStats p = s->plans().stats();
  out->plan_entries = p.entries;
  out->plan_hits = p.hits;
  out->plan_misses = p.misses;
  out->plan_invalidated = p.invalidated;
  out->plan_evicted = p.evicted;
  out->poisoned = s->poisoned() ? 1 : 0;
  std::snprintf(out->note, sizeof out->note, "%s", s->note().c_str());
  try {
    const cu::State::MemoryInUse m = s->memory_in_use();
    out->allocated_bytes = m.allocated;
    out->scratch_bytes = m.scratch;
  } catch (...) {
    out->allocated_bytes = out->scratch_bytes = 0;  // a poisoned context: nothing can be counted
  }
  return SPARSEPORT_OK;
}

extern "C" void* sparseport_cuda_stream(void* state) {
  return state != nullptr ? static_cast<void*>(static_cast<const cu::State*>(state)->stream()) : nullptr;
}
