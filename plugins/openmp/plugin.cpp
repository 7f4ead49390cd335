// SPDX-License-Identifier: Apache-2.0
// Fills the openmp backend's table: host memory and thread count from backends/openmp, math from
// kernels/openmp (the AVX2 copy where the CPU has AVX2, else the baseline copy; the environment
// variable SPARSEPORT_OPENMP_ISA=generic forces the baseline, e.g. to test it on an AVX2 machine).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "backends/openmp/device.hpp"
#include "backends/openmp/memory.hpp"
#include "kernels/openmp/kernels.hpp"
#include "core/plugin_support.hpp"

namespace {

using namespace sparseport;
namespace omp = sparseport::openmp;

constexpr uint32_t kDefault = SPARSEPORT_VARIANT_DEFAULT;
// Bitwise the same for any thread count: every output element is reduced by one thread in a fixed
// order (rows, sorted_deterministic's fixed blocks, the stable sort of sort_then_segment).
// merge_path is not: its pieces, and so where a row's sum is split, follow the thread count; nor
// are the atomic variants, nor GraphBLAS (its own threading).
constexpr uint32_t kDet = SPARSEPORT_VARIANT_DETERMINISTIC;
// spmm.rows owns whole rows, so it records max/min's arg (loops of its own, taken only when asked).
constexpr uint32_t kArg = SPARSEPORT_VARIANT_RECORDS_ARG;
// Take f16 and bf16 values themselves (kernels/openmp dispatch_values16): 16-bit loads widened in
// registers, float32 accumulation, one rounding per stored value. Every other variant gets 16-bit
// calls through the front end's float32 copies.
constexpr uint32_t k16 = SPARSEPORT_VARIANT_VALUES16;

const sparseport_variant kVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.rows", kDefault | kDet | kArg | k16,
     "blocks of whole rows (equal rows + nonzeros) to threads, register tiles of F (SIMD across F); rows never split; "
     "records max/min's arg (register tiles of their own, taken only when asked); f16/bf16 widened in registers"},
    {SPARSEPORT_OP_SPMM, "spmm.merge_path", k16,
     "rows + nonzeros cut evenly (merge path), a row cut at a boundary fixed up from carries; for mega-rows; "
     "f16/bf16 widened in registers"},
#if defined(SPARSEPORT_OPENMP_HAVE_GRAPHBLAS)
    {SPARSEPORT_OP_SPMM, "spmm.graphblas", SPARSEPORT_VARIANT_VENDOR,
     "SuiteSparse:GraphBLAS GrB_mxm (PLUS_TIMES; MAX/MIN_TIMES, *_SECOND on patterns) into C; B, C and 64-bit sorted A "
     "lent without copies, but 32-bit indices are widened, unsorted/repeated rows rebuilt, padded B/C and "
     "beta!=0 with alpha!=1 (or max/min) staged: copies, see SPARSEPORT_LOG=graphblas; max/min refuse repeated columns"},
#endif
    {SPARSEPORT_OP_SDDMM, "sddmm.rows", kDefault | kDet | k16,
     "nonzeros split evenly over threads and walked row by row, SIMD dot products over F; f16/bf16 widened in "
     "registers"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.sorted_add", kDefault,
     "RFC segment_sorted_add: F-wide run accumulators, one store per run, atomics only where a run crosses parts"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.sorted_deterministic", kDet,
     "no atomics: runs reduced in fixed blocks, block boundaries fixed up in order; same bits for any thread count"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.scatter_atomic", 0,
     "every element an atomic update, what compilers generate for a scatter; the baseline"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.atomic", kDefault,
     "every element an atomic update (the index is unsorted); the baseline"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.sort_then_segment", kDet,
     "stable parallel counting sort of the index, then each output row reduced in message order; no atomics"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.sorted_add", kDefault,
     "segment_sorted_add on messages gathered on the fly; atomics only where a run crosses parts"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.sorted_deterministic", kDet,
     "no atomics: fixed blocks of edges, boundaries fixed up in order; same bits for any thread count"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.scatter_atomic", 0,
     "every element of every gathered message an atomic update; the baseline"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.unfused", kDefault | kDet,
     "three passes: scores (nonzeros split evenly), row softmax, weighted sum of V rows; an nnz-long buffer"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.onepass", kDet,
     "one pass per row with an online softmax, batches of 32 entries, V rows summed in register tiles"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.parallel", kDefault | kDet,
     "row lengths and a parallel scan, then the selected rows copied in parallel"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, "csr_slice_rows_dense.parallel", kDefault | kDet,
     "each selected dense row zeroed and scattered by one thread, rows in parallel"},
    {SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, "csr_induced_subgraph.parallel", kDefault | kDet,
     "a parallel vertex map, then kept entries counted (phase 0) or relabelled in A's order (phase 1)"},
    {SPARSEPORT_OP_CSR_TRANSPOSE, "csr_transpose.parallel", kDefault | kDet,
     "stable parallel counting sort by column (per-thread counts), keeps A's row order in each result row"},
};

// The kernels of one ISA copy.
struct KernelSet {
  const char* isa;
  decltype(&omp::generic::spmm) spmm;
  decltype(&omp::generic::sddmm) sddmm;
  decltype(&omp::generic::segment_reduce) segment_reduce;
  decltype(&omp::generic::gather_scatter) gather_scatter;
  decltype(&omp::generic::csr_attention) csr_attention;
  decltype(&omp::generic::csr_slice_rows) csr_slice_rows;
  decltype(&omp::generic::csr_slice_rows_dense) csr_slice_rows_dense;
  decltype(&omp::generic::csr_induced_subgraph) csr_induced_subgraph;
  decltype(&omp::generic::csr_transpose) csr_transpose;
  decltype(&omp::generic::spmm_arg_backward) spmm_arg_backward;
  decltype(&omp::generic::csr_softmax) csr_softmax;
};

#define SPARSEPORT_OPENMP_KERNEL_SET(ns)                                                                    \
  KernelSet {                                                                                               \
    #ns, &omp::ns::spmm, &omp::ns::sddmm, &omp::ns::segment_reduce, &omp::ns::gather_scatter,               \
        &omp::ns::csr_attention, &omp::ns::csr_slice_rows, &omp::ns::csr_slice_rows_dense,                  \
        &omp::ns::csr_induced_subgraph, &omp::ns::csr_transpose, &omp::ns::spmm_arg_backward,               \
        &omp::ns::csr_softmax                                                                               \
  }

constexpr KernelSet kGeneric = SPARSEPORT_OPENMP_KERNEL_SET(generic);
#if defined(SPARSEPORT_OPENMP_HAVE_AVX2)
constexpr KernelSet kAvx2 = SPARSEPORT_OPENMP_KERNEL_SET(avx2);
#endif

// Chosen once per process: the AVX2 copy when it was built and the CPU (and OS) support AVX2,
// unless SPARSEPORT_OPENMP_ISA=generic asks for the baseline.
const KernelSet& kernels() {
  static const KernelSet& chosen = []() -> const KernelSet& {
#if defined(SPARSEPORT_OPENMP_HAVE_AVX2)
    const char* env = std::getenv("SPARSEPORT_OPENMP_ISA");
    const bool forced_generic = env != nullptr && std::string_view(env) == "generic";
    if (!forced_generic && __builtin_cpu_supports("avx2")) return kAvx2;
#endif
    return kGeneric;
  }();
  return chosen;
}

// The part of a variant name after "op.", checked against the names this plugin lists for op.
std::string_view suffix(const char* variant, std::string_view op) {
  const std::string_view v = variant != nullptr ? variant : "";
  if (v.size() <= op.size() + 1 || v.substr(0, op.size()) != op || v[op.size()] != '.')
    throw Unsupported("sparseport openmp: '" + std::string(v) + "' is not a variant of " + std::string(op));
  return v.substr(op.size() + 1);
}

[[noreturn]] void unknown(const char* variant, std::string_view op) {
  throw Unsupported("sparseport openmp: op " + std::string(op) + " has no variant '" + std::string(variant) + "'");
}

[[maybe_unused]] bool is_graphblas(const char* variant) { return variant != nullptr && std::string_view(variant) == "spmm.graphblas"; }

omp::SpmmVariant spmm_variant(const char* variant) {
  const std::string_view s = suffix(variant, "spmm");
  if (s == "rows") return omp::SpmmVariant::rows;
  if (s == "merge_path") return omp::SpmmVariant::merge_path;
  unknown(variant, "spmm");
}

omp::SegmentVariant segment_variant(const char* variant, std::string_view op) {
  const std::string_view s = suffix(variant, op);
  if (op == "scatter_reduce") {
    if (s == "atomic") return omp::SegmentVariant::scatter_atomic;
    if (s == "sort_then_segment") return omp::SegmentVariant::sort_then_segment;
    unknown(variant, op);
  }
  if (s == "sorted_add") return omp::SegmentVariant::sorted_add;
  if (s == "sorted_deterministic") return omp::SegmentVariant::sorted_deterministic;
  if (s == "scatter_atomic") return omp::SegmentVariant::scatter_atomic;
  unknown(variant, op);
}

omp::AttentionVariant attention_variant(const char* variant) {
  const std::string_view s = suffix(variant, "csr_attention");
  if (s == "unfused") return omp::AttentionVariant::unfused;
  if (s == "onepass") return omp::AttentionVariant::onepass;
  unknown(variant, "csr_attention");
}

void expect(const char* variant, std::string_view op, std::string_view only) {
  if (suffix(variant, op) != only) unknown(variant, op);
}

// Only spmm.graphblas has conditions (see kernels/openmp/spmm_graphblas.cpp); every other variant
// handles every valid input.
int applies(int32_t op, const char* variant, const void* args, sparseport_status* why) {
#if defined(SPARSEPORT_OPENMP_HAVE_GRAPHBLAS)
  if (op == SPARSEPORT_OP_SPMM && is_graphblas(variant)) {
    std::string reason;
    int yes = 0;
    const int rc = detail::guarded(why, [&] {
      yes = omp::spmm_graphblas_applies(*static_cast<const sparseport_spmm_args*>(args), &reason) ? 1 : 0;
    });
    if (rc != SPARSEPORT_OK) return 0;
    if (yes == 0) detail::set_status(why, SPARSEPORT_ERR_UNSUPPORTED, reason, 0, "");
    return yes;
  }
#else
  (void)op, (void)variant, (void)args, (void)why;
#endif
  return 1;
}

int describe(char* buf, size_t len, sparseport_status* st) {
  return detail::guarded(st, [&] {
    std::string line = omp::describe_host() + "; kernels for " + kernels().isa;
#if defined(SPARSEPORT_OPENMP_HAVE_GRAPHBLAS)
    line += "; vendor baseline " + omp::graphblas_version() + " (threads follow the context's)";
#endif
    std::snprintf(buf, len, "%s", line.c_str());
  });
}

int device_signature(void* state, char* buf, size_t len, sparseport_status* st) {
  // The state is null (threads travel in sparseport_exec): this reports OpenMP's default thread
  // count, and the scheduler overrides `threads` when the context sets its own.
  (void)state;
  return detail::guarded(st, [&] { std::snprintf(buf, len, "%s", omp::signature(omp::resolve_threads(nullptr)).c_str()); });
}

const sparseport_plugin kTable = {
    SPARSEPORT_ABI_VERSION,
    sizeof(sparseport_plugin),
    "openmp",
    "OpenMP on the host CPU: register-tiled SIMD kernels, merge-path and sorted-run reductions",
    SPARSEPORT_MEMORY_HOST,
    kVariants,
    static_cast<int32_t>(sizeof kVariants / sizeof kVariants[0]),
    nullptr,  // device_count: the host, one device
    &describe,
    nullptr,  // context_create: no state; the thread count travels in sparseport_exec
    nullptr,
    &omp::host_alloc,
    &omp::host_release,
    &omp::host_copy,
    nullptr,  // synchronize: every op returns when its work is done
    &applies,
    [](const sparseport_exec* x, const char* v, const sparseport_spmm_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
#if defined(SPARSEPORT_OPENMP_HAVE_GRAPHBLAS)
        if (is_graphblas(v)) return omp::spmm_graphblas(*a, omp::resolve_threads(x));
#endif
        kernels().spmm(*a, spmm_variant(v), omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_sddmm_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        expect(v, "sddmm", "rows");
        kernels().sddmm(*a, omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        kernels().segment_reduce(*a, segment_variant(v, "segment_reduce"), omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        kernels().segment_reduce(*a, segment_variant(v, "scatter_reduce"), omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_gather_scatter_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        kernels().gather_scatter(*a, segment_variant(v, "gather_scatter"), omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_attention_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { kernels().csr_attention(*a, attention_variant(v), omp::resolve_threads(x)); });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_slice_rows_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        expect(v, "csr_slice_rows", "parallel");
        kernels().csr_slice_rows(*a, omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_slice_rows_dense_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        expect(v, "csr_slice_rows_dense", "parallel");
        kernels().csr_slice_rows_dense(*a, omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_induced_subgraph_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        expect(v, "csr_induced_subgraph", "parallel");
        kernels().csr_induced_subgraph(*a, omp::resolve_threads(x));
      });
    },
    [](const sparseport_exec* x, const char* v, const sparseport_transpose_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        expect(v, "csr_transpose", "parallel");
        kernels().csr_transpose(*a, omp::resolve_threads(x));
      });
    },
    &device_signature,
    nullptr,  // check_indices: host memory, checked by the front end
    nullptr,  // summarize_csr: host memory, summarized by the scheduler (scheduler/summary.cpp)
    // spmm_arg_backward: dvalues row-parallel; dB gathered over A^T when given, else scattered
    // (see kernels/openmp/spmm_arg_backward.cpp)
    [](const sparseport_exec* x, const sparseport_spmm_arg_backward_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] {
        const bool deterministic = x != nullptr && (x->flags & SPARSEPORT_EXEC_DETERMINISTIC) != 0;
        kernels().spmm_arg_backward(*a, omp::resolve_threads(x), deterministic);
      });
    },
    nullptr,  // set_external: host memory, no stream or scratch pool to share
    // csr_softmax: csr_attention.unfused's softmax pass, whole rows over threads (kernels/openmp/csr_softmax.cpp)
    [](const sparseport_exec* x, const sparseport_csr_softmax_args* a, sparseport_status* st) {
      return detail::guarded(st, [&] { kernels().csr_softmax(*a, omp::resolve_threads(x)); });
    },
    nullptr,  // convert: host memory, the front end converts 16-bit values itself
    // run_parts: the scheduler's FEATURES pass split over this backend's OpenMP workers
    // (backends/openmp/device.cpp), not over threads of its own that would compete with them
    [](const sparseport_exec* x, int64_t parts, void (*fn)(int64_t, void*), void* arg, sparseport_status* st) {
      return detail::guarded(st, [&] { omp::run_parts(x, parts, fn, arg); });
    },
};

}  // namespace

extern "C" const sparseport_plugin* sparseport_plugin_openmp(void) { return &kTable; }
