// SPDX-License-Identifier: Apache-2.0
// Fills the kokkos backend's table: lifecycle and memory from backends/kokkos (Kokkos started by
// the first context unless the program started it; memory in the default execution space's memory
// space, host or device as backends/kokkos/space.hpp decides), math from kernels/kokkos.
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "backends/kokkos/runtime.hpp"
#include "backends/kokkos/space.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"
#include "plugins/kokkos/diagnostics.h"

namespace {

using namespace sparseport;
namespace kk = sparseport::kokkos;

constexpr uint32_t kDefault = SPARSEPORT_VARIANT_DEFAULT;
// Conservatively: the variants without floating-point atomics, where each output element is
// reduced by one team thread in entry order, or by a vector reduction whose length is fixed by F
// and the execution space (not by the team size Kokkos picks). Not the atomic variants, nor
// KokkosSparse::spmv, whose algorithm (and its determinism) depends on the Kokkos build.
constexpr uint32_t kDet = SPARSEPORT_VARIANT_DETERMINISTIC;
// team_rows owns whole rows, so it records max/min's arg (kernels of their own, run only when asked).
constexpr uint32_t kArg = SPARSEPORT_VARIANT_RECORDS_ARG;

const sparseport_variant kVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.team_rows", kDefault | kDet | kArg,
     "a thread per row, vector lanes across F (device: TeamPolicy over blocks of 16 rows; host: blocks of equal "
     "rows + entries from a per-matrix plan); rows never split; "
     "records max/min's arg (kernels of their own, run only when asked)"},
    {SPARSEPORT_OP_SPMM, "spmm.hub_split", 0,
     "rows cut into chunks of at most T entries (T from nnz and the space's concurrency, or SPARSEPORT_HUB_T); "
     "a row of several chunks combined with atomics in a scratch row, then finished; hub list once per plan"},
    {SPARSEPORT_OP_SPMM, "spmm.kokkoskernels", SPARSEPORT_VARIANT_VENDOR,
     "KokkosSparse::spmv on rank-2 strided views (no copies; a pattern A gets an nnz-long array of ones; one column "
     "runs its single-vector spmv); reduce sum only, a single column only contiguous"},
    {SPARSEPORT_OP_SDDMM, "sddmm.team_rows", kDefault | kDet,
     "a team thread per row of A, each nonzero's dot product a vector reduction across F (host spaces: blocks of "
     "equal nonzero counts, dots in vector registers)"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.team_segments", kDefault | kDet,
     "each output row finds its run of the sorted index by binary search and reduces it across F; no atomics (host "
     "spaces: blocks of whole rows + messages, one search a block, runs reduced in vector registers)"},
    {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.atomic", 0,
     "every element a Kokkos atomic update (add, max or min), then counts fix empty rows and means (host spaces: "
     "no atomics, a counting sort of the messages by output row, then blocks of whole rows, messages folded in "
     "message order)"},
    {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.atomic", kDefault,
     "every element a Kokkos atomic update (add, max or min), then counts fix empty rows and means (host spaces: "
     "no atomics, a counting sort of the messages by output row, then blocks of whole rows, messages folded in "
     "message order)"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.team_segments", kDefault | kDet,
     "each output row finds its run of sorted dst by binary search, messages formed on the fly; no atomics (host "
     "spaces: blocks of whole rows + messages, one search a block, runs reduced in vector registers)"},
    {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.atomic", 0,
     "every element of every gathered message a Kokkos atomic update; the baseline (host spaces: no atomics, a "
     "counting sort of the messages by output row, then blocks of whole rows, messages folded in message order)"},
    {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.onepass", kDefault | kDet,
     "online softmax in one pass; device spaces: work items of at most T entries, a team thread each, V rows "
     "summed by vector lanes, a longer row's items merged in item order (split-K); host spaces: blocks of whole "
     "rows + nonzeros, scores as dots in vector registers"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.scan_copy", kDefault | kDet,
     "row lengths and a parallel_scan, then each selected row copied by vector lanes"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, "csr_slice_rows_dense.rows", kDefault | kDet,
     "each selected dense row zeroed by vector lanes, then its entries added in storage order (host spaces: a "
     "row per iteration, dynamic chunks of 64)"},
    {SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH, "csr_induced_subgraph.map", kDefault | kDet,
     "a vertex map, then kept entries counted per row (vector reduction) and scanned, or written relabelled"},
    {SPARSEPORT_OP_CSR_TRANSPOSE, "csr_transpose.count_sort", kDefault | kDet,
     "atomic counting sort by column, then each result row heap-sorted by position in A (stable order); host "
     "spaces: per-thread counts and a stable counting sort, no atomics, no sort"},
};

// The part of a variant name after "op.", checked against the names this plugin lists for op.
std::string_view suffix(const char* variant, std::string_view op) {
  const std::string_view v = variant != nullptr ? variant : "";
  if (v.size() <= op.size() + 1 || v.substr(0, op.size()) != op || v[op.size()] != '.')
    throw Unsupported("sparseport kokkos: '" + std::string(v) + "' is not a variant of " + std::string(op));
  return v.substr(op.size() + 1);
}

[[noreturn]] void unknown(const char* variant, std::string_view op) {
  throw Unsupported("sparseport kokkos: op " + std::string(op) + " has no variant '" + std::string(variant) + "'");
}

void expect(const char* variant, std::string_view op, std::string_view only) {
  if (suffix(variant, op) != only) unknown(variant, op);
}

// Only spmm.kokkoskernels has conditions (sums only, no strided single column); every other
// variant takes every valid input.
int applies(int32_t op, const char* variant, const void* args, sparseport_status* why) {
  if (op != SPARSEPORT_OP_SPMM || variant == nullptr || std::string_view(variant) != "spmm.kokkoskernels") return 1;
  std::string reason;
  int yes = 0;
  if (detail::guarded(why, [&] {
        yes = kk::spmm_kokkoskernels_applies(*static_cast<const sparseport_spmm_args*>(args), &reason) ? 1 : 0;
      }) != SPARSEPORT_OK)
    return 0;
  if (yes == 0) detail::set_status(why, SPARSEPORT_ERR_UNSUPPORTED, reason, 0, "");
  return yes;
}

int describe(char* buf, size_t len, sparseport_status* st) {
  return detail::guarded(st, [&] {
    const std::string line = kk::describe() + "; Context::set_threads does not change Kokkos's thread count";
    std::snprintf(buf, len, "%s", line.c_str());
  });
}

// ABI 1.1 device signature: the execution and memory spaces and their concurrency (hardware keys),
// and the Kokkos version (a version key: a rebuilt Kokkos invalidates cached decisions).
int device_signature(void*, char* buf, size_t len, sparseport_status* st) {
  return detail::guarded(st, [&] { std::snprintf(buf, len, "%s", kk::signature().c_str()); });
}

// Every kernel launch of the plugin holds one process-wide lock. Kokkos's host spaces (Serial,
// and OpenMP before Kokkos 4) keep one team/scan scratch pool per execution space instance and
// abort with "HostThreadTeamData::organize_pool ERROR pool already exists" when two host threads
// dispatch at once (CI caught csr_transpose's parallel_scan doing so: ExitAfterOp.kokkos.structural,
// ending `thread`). A call already uses every thread of the space, so two callers gain nothing by
// overlapping; on a device space the calls share the default instance's stream anyway. The README's
// thread contract ("one Context, many threads") rests on this lock for kokkos.
std::mutex g_launch;

#if defined(KOKKOS_ENABLE_OPENMP) && KOKKOS_VERSION < 40000
// Kokkos 3.4's OpenMP space launches only from a "master" thread, one whose thread-local
// Impl::t_openmp_instance points at the space's instance (the thread that initialised Kokkos); on
// any other thread every launch fails "in parallel or not initialized" (KokkosThreads.* caught it:
// two threads sharing a context on Kokkos-OpenMP). A call from another thread borrows the master's
// instance for its length, under the launch lock, so that the one instance serves one launch at a
// time: what Kokkos's own partition_master does for the threads it starts. The master is the
// thread that made the first kokkos context (where the plugin initialises Kokkos).
//
// Nor does Kokkos 3.4's OpenMP space survive fork(): a child's first launch waits forever in the
// pool's rendezvous for threads the child does not have (ExitAfterOp.kokkos.*, ending fork, on
// Kokkos-OpenMP). A call in a process other than the one that started Kokkos is refused instead,
// saying so, as the cuda plugin's are in a forked child.
Kokkos::Impl::OpenMPExec* g_master = nullptr;  // under g_launch
pid_t g_started_in = 0;                       // under g_launch

void note_master() {
  std::lock_guard<std::mutex> hold(g_launch);
  if (g_master == nullptr) g_master = Kokkos::Impl::t_openmp_instance;
  if (g_started_in == 0) g_started_in = ::getpid();
}

struct BorrowMaster {
  bool borrowed = false;
  BorrowMaster() {
    if (g_started_in != 0 && ::getpid() != g_started_in)
      throw Unsupported("the kokkos backend on Kokkos-OpenMP cannot run in a process forked after Kokkos started "
                        "(Kokkos 3.4's OpenMP space does not survive fork; start workers with spawn, or use the "
                        "openmp backend)");
    if (Kokkos::Impl::t_openmp_instance == nullptr && g_master != nullptr) {
      Kokkos::Impl::t_openmp_instance = g_master;
      borrowed = true;
    }
  }
  ~BorrowMaster() {
    if (borrowed) Kokkos::Impl::t_openmp_instance = nullptr;
  }
  BorrowMaster(const BorrowMaster&) = delete;
  BorrowMaster& operator=(const BorrowMaster&) = delete;
};
#else
void note_master() {}
struct BorrowMaster {};
#endif

template <class Fn>
int serialised(sparseport_status* st, Fn&& fn) {
  std::lock_guard<std::mutex> hold(g_launch);
  return detail::guarded(st, [&] {
    [[maybe_unused]] const BorrowMaster master;
    fn();
  });
}

// ABI 1.2: the index check, with the cuda plugin's argument checks short of its memory-space test
// (Kokkos has no portable one; no other slot of this plugin makes it).
int check_indices(const sparseport_exec*, const sparseport_index_check* c, sparseport_index_report* r,
                  sparseport_status* st) {
  return serialised(st, [&] {
    if (c == nullptr || r == nullptr)
      throw InvalidArgument(std::string("check_indices: the ") + (c == nullptr ? "check" : "report") +
                            " pointer is null");
    const std::string op = c->op != nullptr ? c->op : "check_indices";
    const std::string arg = c->arg != nullptr ? c->arg : "index";
    if (c->kind == SPARSEPORT_CHECK_CSR) {
      if (c->csr.rowptr == nullptr || (c->csr.nnz > 0 && c->csr.colind == nullptr))
        throw InvalidArgument(op + ": " + arg + (c->csr.rowptr == nullptr ? ".rowptr" : ".colind") + " is null");
    } else if (c->kind == SPARSEPORT_CHECK_INDEX || c->kind == SPARSEPORT_CHECK_SORTED_INDEX) {
      if (c->index.n > 0 && c->index.data == nullptr) throw InvalidArgument(op + ": " + arg + " is null");
    } else {
      throw InvalidArgument(op + ": unknown index check kind " + std::to_string(c->kind));
    }
    *r = kk::check_indices(*c);
  });
}

// ABI 1.3/1.4: the CSR summary; its arguments checked as every plugin checks them.
int summarize_csr(const sparseport_exec*, const sparseport_csr* a, uint32_t want, sparseport_csr_summary* out,
                  sparseport_status* st) {
  return serialised(st, [&] {
    detail::check_summary_args(a, out);
    *out = kk::summarize_csr(*a, want);  // A's values are not read
  });
}

// ABI 1.10: the scheduler's FEATURES parts on Kokkos's host threads (offered where kk::kRunParts).
int run_parts(const sparseport_exec*, int64_t parts, void (*fn)(int64_t, void*), void* arg, sparseport_status* st) {
  return serialised(st, [&] { kk::run_parts(parts, fn, arg); });
}

int context_create(int32_t device, void** state, sparseport_status* st) {
  const int rc = kk::context_create(device, state, st);
  if (rc == SPARSEPORT_OK) note_master();
  return rc;
}

const sparseport_plugin kTable = {
    SPARSEPORT_ABI_VERSION,
    sizeof(sparseport_plugin),
    "kokkos",
    "Kokkos on its default execution space (TeamPolicy over rows, vector lanes across F), Kokkos Kernels spmv baseline",
    kk::kAbiMemorySpace,
    kVariants,
    static_cast<int32_t>(sizeof kVariants / sizeof kVariants[0]),
    nullptr,  // device_count: one device, the default execution space Kokkos was initialised with
    &describe,
    &context_create,
    &kk::context_destroy,
    &kk::alloc,
    &kk::release,
    &kk::copy,
    &kk::synchronize,
    &applies,
    [](const sparseport_exec*, const char* v, const sparseport_spmm_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        const std::string_view s = suffix(v, "spmm");
        if (s == "team_rows") return kk::spmm_team_rows(*a);
        if (s == "hub_split") return kk::spmm_hub_split(*a);
        if (s == "kokkoskernels") return kk::spmm_kokkoskernels(*a);
        unknown(v, "spmm");
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_sddmm_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "sddmm", "team_rows");
        kk::sddmm(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        const std::string_view s = suffix(v, "segment_reduce");
        if (s == "team_segments") return kk::segment_reduce_team_segments(*a);
        if (s == "atomic") return kk::segment_reduce_atomic(*a);
        unknown(v, "segment_reduce");
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_segment_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "scatter_reduce", "atomic");
        kk::segment_reduce_atomic(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_gather_scatter_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        const std::string_view s = suffix(v, "gather_scatter");
        if (s == "team_segments") return kk::gather_scatter_team_segments(*a);
        if (s == "atomic") return kk::gather_scatter_atomic(*a);
        unknown(v, "gather_scatter");
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_attention_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "csr_attention", "onepass");
        kk::csr_attention(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_slice_rows_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "csr_slice_rows", "scan_copy");
        kk::csr_slice_rows(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_slice_rows_dense_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "csr_slice_rows_dense", "rows");
        kk::csr_slice_rows_dense(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_induced_subgraph_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "csr_induced_subgraph", "map");
        kk::csr_induced_subgraph(*a);
      });
    },
    [](const sparseport_exec*, const char* v, const sparseport_transpose_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        expect(v, "csr_transpose", "count_sort");
        kk::csr_transpose(*a);
      });
    },
    &device_signature,
    // check_indices and summarize_csr: read where the arrays live, only the result copied back
    // (kernels/kokkos/summary.cpp); on a device space the front end and the scheduler no longer copy
    // rowptr and colind to the host. Host memory is still checked by the front end and summarized
    // by the scheduler themselves (src/ops/common.cpp, scheduler/summary.cpp).
    &check_indices,
    &summarize_csr,
    // spmm_arg_backward: dvalues a thread per row; dB gathered over A^T when given, else scattered
    // (see kernels/kokkos/spmm_arg_backward.cpp)
    [](const sparseport_exec* x, const sparseport_spmm_arg_backward_args* a, sparseport_status* st) {
      return serialised(st, [&] {
        kk::spmm_arg_backward(*a, x != nullptr && (x->flags & SPARSEPORT_EXEC_DETERMINISTIC) != 0);
      });
    },
    // set_external: not offered. Every kernel runs on the default execution space instance; running
    // on a caller's stream would need an instance per context threaded through every kernel.
    nullptr,
    // csr_softmax: a thread per row in the value type (kernels/kokkos/csr_softmax.cpp)
    [](const sparseport_exec*, const sparseport_csr_softmax_args* a, sparseport_status* st) {
      return serialised(st, [&] { kk::csr_softmax(*a); });
    },
    // convert: the front end's float32 path for 16-bit values; without it a device space's memory
    // could not take them (kernels/kokkos/convert.cpp)
    [](const sparseport_exec*, const sparseport_dense* src, const sparseport_dense_mut* dst, sparseport_status* st) {
      return serialised(st, [&] { kk::convert(*src, *dst); });
    },
    // run_parts: on Kokkos-OpenMP the scheduler's FEATURES parts run on Kokkos's OpenMP threads, whose
    // spin after each kernel would hold the cores from threads of the scheduler's own (space.hpp)
    kk::kRunParts ? &run_parts : nullptr,
};

}  // namespace

extern "C" const sparseport_plugin* sparseport_plugin_kokkos(void) { return &kTable; }

extern "C" int sparseport_kokkos_get_diagnostics(sparseport_kokkos_diagnostics* out) {
  if (out == nullptr) return SPARSEPORT_ERR_INVALID_ARGUMENT;
  const kk::PlanStats p = kk::plans().stats();
  out->plan_entries = p.entries;
  out->plan_hits = p.hits;
  out->plan_misses = p.misses;
  out->plan_invalidated = p.invalidated;
  out->plan_evicted = p.evicted;
  return SPARSEPORT_OK;
}
