// SPDX-License-Identifier: Apache-2.0
// spmm on Kokkos, two native variants.
//
// spmm.team_rows: a TeamPolicy over blocks of rows, a team thread per row.
// On a device space, vector lanes across F: lane l of VL holds the columns l + k * VL for k < NK
// in registers and the row is walked once per block of NK * VL columns, so for each k the lanes of
// a row read one row of B together (coalesced); NK (1, 2, 4 or 8, lane_slots) is a template
// argument, one kernel per count. It first gave each lane one
// column and walked the row again for every VL columns: at F = 256 the row's indices and values
// were read 8 times (benchmarks/results/2026-11-25-h200-kokkos-cuda.md).
// On a host space (one vector lane) that order would read the row's indices and values once per
// column of C and stride through B by ldb: on Kokkos-OpenMP it ran at 0.06-0.35x the openmp
// plugin. There the row's entries are the outer loop and a block of columns the inner, vectorisable
// one: each entry is read once per block and B along its rows. team_rows holds a block of 64 (float
// with AVX), 32, 16 or 8 columns in vector registers from the first entry to the store into C
// (host_tile, host_rows), prefetching B's rows a few entries ahead; the other host loops use
// blocks of up to kHostCols. The order of the additions within a row (entry by entry) is the same
// in all, so are the results.
//
// spmm.team_rows with arg (max/min with args.arg, ABI 1.5): kernels of their own, so the paths
// above are untouched when no arg is asked for. Each row keeps, per column, the fold and the
// position of the entry that holds it; a strictly better product or the first NaN replaces it, so
// the first of equal products stays (the reference's rule). Host spaces walk the row once per
// block of kHostCols columns as above; device spaces give each vector lane one column at a time.
//
// spmm.hub_split: rows cut into chunks of at most T entries (chunk_length says how T is chosen).
// A row of one chunk is reduced and written as team_rows does (on a device space by the teams that
// follow the hubs' chunks in the same launch: hub_split_groups_device); a row of several (a hub)
// reduces each chunk in registers and combines the chunks with atomics into a scratch row of F values
// initialised to the reduce's identity, and a last pass finishes the hubs into C. One giant row
// is spread over as many workers as it has chunks instead of one. The hub list and the numbering
// of the hubs' extra chunks (binary search maps a chunk back to its hub) depend only on rowptr
// and T: they are a plan, built once (two scans, their totals read back) and kept in the backend's
// plan cache (backends/kokkos/runtime.hpp); a call then runs the init, the chunks and the finish
// with no host synchronisation but the closing fence. Built per call they cost 60-90 us on
// Kokkos-OpenMP (2 threads), more than the whole SpMM of a small graph. The summation order of a
// hub depends on which chunk lands first: not deterministic.
//
// Plans are keyed by rowptr's address and the shape; host memory can be rewritten without the
// backend seeing it, so the kernels check the plan against the rowptr they read, at no extra
// memory traffic, and stay correct with a stale plan: a planned hub that is no longer above T is
// written whole by its row's item (its extra chunks are empty, the finish skips it), a row above T
// that the plan does not list is written whole by one worker, and a hub's last planned chunk runs
// to the row's end however long the row has grown. Only the balance is lost.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <type_traits>

#include "backends/kokkos/runtime.hpp"
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/hubs.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Columns of C per block in the host loops with a run-time width (hub_split's chunks, the arg
// kernels): 64 accumulators (256 or 512 bytes) in L1 while the row's entries stream by.
constexpr int64_t kHostCols = 64;
// team_rows on a host space prefetches the first line of B's row for the entry this many entries
// ahead (across row ends: short rows are the common case), as the openmp plugin does with the same
// distance (kernels/openmp/common.hpp, kPrefetchDistance). Kokkos-OpenMP on 1 thread against the
// openmp plugin on 1 thread, AVX2, float, 64-column tiles, geomean over the 18 matrices of
// ../shared/data: 1.02x -> 1.07x at F = 128, 1.11x either way at F = 32, and on wing (a mesh whose
// B rows miss the caches) 0.55x -> 0.84x at F = 32 (benchmarks/results/2026-12-03-cpu-kokkos-spmm.md;
// 2-thread runs on the shared machine were too noisy to separate this).
[[maybe_unused]] constexpr int64_t kHostPrefetch = 16;  // host spaces only (unused in a CUDA compile)
// Columns of C per vector lane per walk of a row on a device space, at most: 8 register
// accumulators (16 registers in double), so F <= 8 * VL = 256 is one walk with VL = 32 lanes,
// wider F one walk per 256 columns (narrower F gets a kernel with fewer, lane_slots). More would spill on CUDA at the 64-128 registers a thread has at full
// occupancy; fewer walks the row more often at the common F = 128-256.
constexpr int kLaneCols = 8;

// The operands of one call, unpacked once (captured by value by the kernels).
template <class I, class V>
struct Spmm {
  const I* rp = nullptr;
  const I* ci = nullptr;
  const V* av = nullptr;  // null: a pattern, every value 1
  const V* b = nullptr;
  V* c = nullptr;
  int64_t m = 0, f = 0, ldb = 0, ldc = 0, nnz = 0;
  V alpha = V(1), beta = V(0);
  // beta == 0 must not read C: 0 * NaN would leak a NaN (or garbage) C into the result.
  bool read_c = false, mean = false;
};

template <class I, class V>
Spmm<I, V> unpack(const sparseport_spmm_args& args) {
  Spmm<I, V> p;
  p.rp = detail::as<I>(args.a.rowptr);
  p.ci = detail::as<I>(args.a.colind);
  p.av = detail::as<V>(args.a.values);
  p.b = detail::as<V>(args.b.data);
  p.c = detail::as_mut<V>(args.c.data);
  p.m = args.a.rows, p.f = args.c.cols, p.ldb = args.b.ld, p.ldc = args.c.ld, p.nnz = args.a.nnz;
  p.alpha = static_cast<V>(args.alpha), p.beta = static_cast<V>(args.beta);
  p.read_c = args.beta != 0.0;
  p.mean = args.reduce == SPARSEPORT_REDUCE_MEAN;
  return p;
}

// alpha * r + beta * c for the fold acc of `count` entries: r = 0 for an empty row (whatever the
// reduce, as the reference), acc / count for mean; c is not read where beta is 0.
template <class I, class V>
KOKKOS_INLINE_FUNCTION V finished(const Spmm<I, V>& p, V acc, int64_t count, V c) {
  const V r = count == 0 ? V(0) : p.mean ? acc / static_cast<V>(count) : acc;
  return p.read_c ? p.alpha * r + p.beta * c : p.alpha * r;
}

template <class I, class V>
KOKKOS_INLINE_FUNCTION void store(const Spmm<I, V>& p, V* cij, V acc, int64_t count) {
  *cij = finished(p, acc, count, p.read_c ? *cij : V(0));
}

// Device spaces: Cols (common.hpp) of W adjacent columns of C or of a row of B, one load or store
// (16 bytes at W = 16 / sizeof(V), where F, the lds and the pointers allow: wide_columns). The cuda
// plugin's row kernels get most of their lead at F <= 64 from these loads: each lane's gather moves
// 16 bytes instead of 4, so a warp has 4x the bytes in flight (mdual at F = 32, 1M entries of ~4 a
// row: team_rows 0.13 ms against row_warp_vec4's 0.045, 0.071 with these loads; over the 17 shared
// matrices at F = 32-128 the best kokkos variant went from 0.63x to 0.73x the cuda plugin's best;
// H200, 2026-12-04, benchmarks/results/2026-12-04-h200-kokkos-wide-tc-small-weak-band.md). W = 1 is
// the scalar kernel.
template <int W, class I, class V>
KOKKOS_INLINE_FUNCTION void store(const Spmm<I, V>& p, V* cij, const Cols<V, W>& acc, int64_t count) {
  Cols<V, W>* out = reinterpret_cast<Cols<V, W>*>(cij);
  Cols<V, W> r;
  const Cols<V, W> old = p.read_c ? *out : Cols<V, W>{};
  for (int w = 0; w < W; ++w) r.v[w] = finished(p, acc.v[w], count, old.v[w]);
  *out = r;
}

// The lane columns a device kernel is compiled for: 1, 2, 4 or 8, the fewest that cover F with
// vl lanes (at most 8: wider F takes several passes). Each count is a kernel of its own, so that
// the F <= 32 kernel does not pay the registers of eight accumulators (76 instead of about 40 a
// thread on an H200: a third of the warps resident, and this kernel lives on latency).
inline int lane_slots(int64_t f, int64_t vl) {
  const int64_t n = (f + vl - 1) / vl;
  return n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8;
}

// The width in columns of a device kernel's loads for this call: 16 / sizeof(V) where F, B's and C's
// lds are multiples of it and B and C start on 16 bytes, and F fits two such loads a lane (the
// accumulators of kLaneCols scalar columns), else 1.
// SPARSEPORT_KOKKOS_WIDE=0 keeps the scalar kernels (an A/B of the 16-byte loads in one process).
template <class I, class V>
int wide_columns(const Spmm<I, V>& p) {
  if (const char* v = std::getenv("SPARSEPORT_KOKKOS_WIDE"); v != nullptr && std::strcmp(v, "0") == 0) return 1;
  constexpr int w = static_cast<int>(16 / sizeof(V));
  const bool aligned = reinterpret_cast<uintptr_t>(p.b) % 16 == 0 && reinterpret_cast<uintptr_t>(p.c) % 16 == 0;
  const bool fits = p.f % w == 0 && p.ldb % w == 0 && p.ldc % w == 0 && aligned;
  const int64_t fw = p.f / w, vl = vector_length(fw);
  return w > 1 && fits && lane_slots(fw, vl) * w <= kLaneCols ? w : 1;
}

// Device spaces: how many of the columns j, j + vl, ... (at most NK) are below f.
template <int NK>
KOKKOS_INLINE_FUNCTION int lane_cols(int64_t f, int64_t j, int64_t vl) {
  if (j >= f) return 0;
  const int64_t n = (f - j + vl - 1) / vl;
  return n < NK ? static_cast<int>(n) : NK;
}

// Device spaces: lane_fold_n's fold of a row of 1 to U entries [eb, ee) in one batch: U gathers
// issued before the first fold, the folds in entry order (the same bits). An entry past ee loads
// entry eb again (a line the lane has just read) and is not folded, so the loads stay
// unconditional: predicated loads (a load only where the entry exists) cost registers (below).
template <int U, int NK, int W, Op op, class I, class V>
KOKKOS_INLINE_FUNCTION void fold_batch(const Spmm<I, V>& p, int64_t eb, int64_t ee, int64_t j,
                                       int64_t vl, int nk, Cols<V, W> (&acc)[kLaneCols]) {
  V a[U];
  const Cols<V, W>* brow[U];
  for (int u = 0; u < U; ++u) {
    const int64_t e = eb + u < ee ? eb + u : eb;
    a[u] = p.av != nullptr ? p.av[e] : V(1);
    brow[u] = reinterpret_cast<const Cols<V, W>*>(p.b + static_cast<int64_t>(p.ci[e]) * p.ldb) + j;
  }
  Cols<V, W> b[U][NK];
  for (int u = 0; u < U; ++u)
    for (int k = 0; k < NK; ++k)
      if (NK == 1 || k < nk) b[u][k] = brow[u][k * vl];
  for (int k = 0; k < NK; ++k)
    if (NK == 1 || k < nk)
      for (int w = 0; w < W; ++w) acc[k].v[w] = a[0] * b[0][k].v[w];
  for (int u = 1; u < U; ++u)
    if (eb + u < ee)
      for (int k = 0; k < NK; ++k)
        if (NK == 1 || k < nk)
          for (int w = 0; w < W; ++w) acc[k].v[w] = fold<op>(acc[k].v[w], a[u] * b[u][k].v[w]);
}

// Device spaces: acc[k] (k < nk) = the fold, entry by entry, of A[e] * B[col(e), j + k * vl] over
// the entries [eb, ee) (eb < ee), with NK >= nk slots: the loop over the entries then holds exactly
// NK loads of B per entry. With one loop for every nk (8 predicated slots) nvcc did not unroll the
// entry loop, so at F <= 32 (nk = 1) one entry's two dependent loads (column, then B) were in
// flight at a time: team_rows ran 3x slower on an H200 than the one-column loop before it.
// (j, vl and the slots count W-column groups: group g is columns g * W .. g * W + W - 1.)
// Unrolled (team_rows): after the first entry the entries go U at a time: U columns read, then U
// rows of B, then U folds in entry order (the same order, so the same bits, as one at a time). A
// lane then has U gathers of B in flight instead of one; U x NK x W <= 32 values of B in registers,
// U <= 8, as the cuda plugin's row kernels keep 8 vectors in flight a lane. On an H200 (2026-12-04,
// 19 graphs x F = 32, 64, 128, speed over the cuda plugin's best in the same run, against the run
// before) team_rows ran 1.33x faster geomean, 1.6-1.7x on rmat:18:16 and on the skewed graphs whose
// hub rows one team thread walks whole (facebook-combined 205 -> 131 us at F = 32), 0.96-0.98x on
// mdual. hub_split ran 0.94x with it (0.81-0.93x on the four largest inputs), so it keeps one entry
// at a time: its chunks are at most T entries, so the chain the unrolling shortens is already cut,
// and the unrolled loop's registers cost it resident warps where the input fills the GPU.
// A row of at most U / 2 entries goes in one masked batch (fold_batch), its gathers all in flight,
// where the loop below loads its first entry alone and the rest one at a time: mdual (~4 entries a
// row) never reached a full batch. On an H100 (2026-12-05, 18 graphs x F = 32, 64, 128, float
// sums; benchmarks/results/2026-12-05-h100-kokkos-tail-tc-entries-fs-baseline.md) mdual ran 1.34x /
// 1.26x / 1.21x faster at F = 32 / 64 / 128, the geomean of kokkos best over cuda best went 0.727
// -> 0.735, the rest within noise. Masked batches for every row doubled long rows' chains
// (facebook-combined 0.86x), and their predicated loads took team_rows<1, 4> from 48 to 56
// registers: hence unconditional loads and short rows only. ptxas (sm_90): float sums'
// team_rows<1, 4> / <2, 4> / <1, 1> keep 48 / 60 / 40 registers. With 4 or 8 lane slots (F > 64
// without 16-byte loads, not measured) the batch took 71-180 registers instead of 56-138, so those
// keep the loop; their narrower tail passes (lane_fold) still batch. Every other kernel of the file
// keeps main's registers within +-15, all but team_rows<8, 1> on int64 float sums (94 -> 142, no
// spills). Long rows' tails in masked batches too ran within noise (0.733) at 65 registers.
template <int NK, int W, Op op, bool Unrolled, class I, class V>
KOKKOS_INLINE_FUNCTION void lane_fold_n(const Spmm<I, V>& p, int64_t eb, int64_t ee, int64_t j, int64_t vl, int nk,
                                        Cols<V, W> (&acc)[kLaneCols]) {
  constexpr int U = !Unrolled || NK * W >= 32 ? 1 : (32 / (NK * W) < 8 ? 32 / (NK * W) : 8);
  if constexpr (U > 1 && NK <= 2)
    if (ee - eb <= U / 2) {
      fold_batch<U / 2, NK, W, op>(p, eb, ee, j, vl, nk, acc);
      return;
    }
  {
    const V a = p.av != nullptr ? p.av[eb] : V(1);
    const auto* brow = reinterpret_cast<const Cols<V, W>*>(p.b + static_cast<int64_t>(p.ci[eb]) * p.ldb) + j;
    for (int k = 0; k < NK; ++k)
      if (NK == 1 || k < nk) {
        const Cols<V, W> b = brow[k * vl];
        for (int w = 0; w < W; ++w) acc[k].v[w] = a * b.v[w];
      }
  }
  int64_t e = eb + 1;
  for (; e + U <= ee; e += U) {
    V a[U];
    const Cols<V, W>* brow[U];
    for (int u = 0; u < U; ++u) {
      a[u] = p.av != nullptr ? p.av[e + u] : V(1);
      brow[u] = reinterpret_cast<const Cols<V, W>*>(p.b + static_cast<int64_t>(p.ci[e + u]) * p.ldb) + j;
    }
    Cols<V, W> b[U][NK];
    for (int u = 0; u < U; ++u)
      for (int k = 0; k < NK; ++k)
        if (NK == 1 || k < nk) b[u][k] = brow[u][k * vl];
    for (int u = 0; u < U; ++u)
      for (int k = 0; k < NK; ++k)
        if (NK == 1 || k < nk)
          for (int w = 0; w < W; ++w) acc[k].v[w] = fold<op>(acc[k].v[w], a[u] * b[u][k].v[w]);
  }
  for (; e < ee; ++e) {
    const V a = p.av != nullptr ? p.av[e] : V(1);
    const auto* brow = reinterpret_cast<const Cols<V, W>*>(p.b + static_cast<int64_t>(p.ci[e]) * p.ldb) + j;
    for (int k = 0; k < NK; ++k)
      if (NK == 1 || k < nk) {
        const Cols<V, W> b = brow[k * vl];
        for (int w = 0; w < W; ++w) acc[k].v[w] = fold<op>(acc[k].v[w], a * b.v[w]);
      }
  }
}

template <int NK, int W, Op op, bool Unrolled, class I, class V>
KOKKOS_INLINE_FUNCTION void lane_fold(const Spmm<I, V>& p, int64_t eb, int64_t ee, int64_t j, int64_t vl, int nk,
                                      Cols<V, W> (&acc)[kLaneCols]) {
  static_assert(NK == 1 || NK == 2 || NK == 4 || NK == 8, "the slot counts of lane_slots");
  if (nk <= 0) return;
  if constexpr (NK == 1) {
    lane_fold_n<1, W, op, Unrolled>(p, eb, ee, j, vl, nk, acc);
  } else {
    if (nk <= NK / 2)
      lane_fold<NK / 2, W, op, Unrolled>(p, eb, ee, j, vl, nk, acc);  // the last pass over a narrower tail
    else
      lane_fold_n<NK, W, op, Unrolled>(p, eb, ee, j, vl, nk, acc);
  }
}

// The fold's identity, what a hub's scratch row starts from: -0.0 for sums (-0.0 + x is x for
// every x, +0.0 would turn a sum of -0.0 terms into +0.0), -inf for max, +inf for min. Computed on
// the host and captured: std::numeric_limits is not a device function without relaxed constexpr.
template <Op op, class V>
V identity() {
  if constexpr (op == Op::max)
    return -std::numeric_limits<V>::infinity();
  else if constexpr (op == Op::min)
    return std::numeric_limits<V>::infinity();
  else
    return -V(0);
}

// Host spaces: blocks of whole rows of about equal rows + entries (the openmp plugin's
// parallel_row_blocks split), at least one and at most kBlocksPerThread per thread, handed out one
// at a time. The static TeamPolicy over 16-row blocks this replaces gave each thread an equal
// number of rows, whatever their entries. bounds[b] is block b's first row, bounds[blocks] = m.
[[maybe_unused]] constexpr int64_t kMinBlock = 4096;  // host spaces only, as the next
[[maybe_unused]] constexpr int64_t kBlocksPerThread = 16;

struct RowBlocksPlan : Plan {
  std::vector<int64_t> bounds;
};

template <class I>
std::shared_ptr<RowBlocksPlan> build_row_blocks(const I* rp, int64_t m, int64_t nnz) {
  auto plan = std::make_shared<RowBlocksPlan>();
  const int64_t threads = std::max<int64_t>(1, ExecSpace().concurrency());
  const int64_t total = m + nnz;
  const int64_t blocks = std::clamp<int64_t>(total / kMinBlock, threads, threads * kBlocksPerThread);
  plan->bounds.resize(static_cast<size_t>(blocks) + 1);
  for (int64_t b = 0; b <= blocks; ++b) {
    // The first row r with r + rowptr[r] >= the block's start on the merge path.
    const int64_t d = total / blocks * b + total % blocks * b / blocks;
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (mid + static_cast<int64_t>(rp[mid]) < d)
        lo = mid + 1;
      else
        hi = mid;
    }
    plan->bounds[static_cast<size_t>(b)] = b == blocks ? m : lo;
  }
  plan->watch(rp, static_cast<size_t>(m + 1) * sizeof(I));
  return plan;
}

template <class I>
std::shared_ptr<RowBlocksPlan> row_blocks_plan(const I* rp, int64_t m, int64_t nnz) {
  const std::string key = "spmm.team_rows|" + std::to_string(reinterpret_cast<uintptr_t>(rp)) + "|" +
                          std::to_string(m) + "|" + std::to_string(nnz) + "|" + std::to_string(sizeof(I));
  auto plan = std::static_pointer_cast<RowBlocksPlan>(plans().find(key));
  if (plan == nullptr) {
    plan = build_row_blocks(rp, m, nnz);
    plans().insert(key, plan);
  }
  return plan;
}

using Dynamic = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<int64_t>>;

// ---------------------------------------------------------------------------------------------
// team_rows

// team_rows on a device space, compiled for NK lane columns (lane_slots). One row a team thread (vl
// vector lanes: a warp at F >= 32 on CUDA) in teams of the size Kokkos recommends for this kernel,
// as hub_split_device does. It gave each team kRowsPerTeam (16) rows at Kokkos's AUTO team size, so
// a team thread walked several rows one after the other: on a matrix of a few thousand rows
// (bcsstk16: 4884) an SM then held a fraction of the warps it can, and this kernel lives on the
// latency of its gathers (H200, 2026-12-04: team_rows 0.4-0.5x the cuda plugin's best there).
// W > 1: each lane loads and stores W adjacent columns at once (wide_columns).
template <int NK, int W, Op op, class I, class V>
void team_rows_device(const Spmm<I, V>& p, int64_t vl) {
  const int64_t fw = p.f / W;
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const int64_t r0 = static_cast<int64_t>(t.league_rank()) * t.team_size();
    const int64_t r1 = r0 + t.team_size() < p.m ? r0 + t.team_size() : p.m;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
      const int64_t begin = static_cast<int64_t>(p.rp[i]), end = static_cast<int64_t>(p.rp[i + 1]);
      for (int64_t j0 = 0; j0 < fw; j0 += NK * vl) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, vl), [&](const int64_t lane) {
          const int64_t j = j0 + lane;
          const int nk = lane_cols<NK>(fw, j, vl);
          Cols<V, W> acc[kLaneCols];
          for (int k = 0; k < NK; ++k)
            for (int w = 0; w < W; ++w) acc[k].v[w] = V(0);
          if (end > begin) lane_fold<NK, W, op, true>(p, begin, end, j, vl, nk, acc);
          for (int k = 0; k < NK; ++k)
            if (k < nk) store<W>(p, p.c + i * p.ldc + (j + k * vl) * W, acc[k], end - begin);
        });
      }
    });
  };
  if (p.m == 0) return;
  const int ts = Policy(1, Kokkos::AUTO, static_cast<int>(vl)).team_size_recommended(body, Kokkos::ParallelForTag());
  const int64_t league = (p.m + ts - 1) / ts;
  Kokkos::parallel_for("sparseport::kokkos::spmm.team_rows", Policy(static_cast<int>(league), ts, static_cast<int>(vl)),
                       body);
}

// Host spaces: 8 NV columns of row i from j0, in NV 8-wide vectors of GCC's vector extension held in
// registers (an array of accumulators with a run-time width stays in memory: one load and one store
// per 8 values per entry, and a compare per vector). Each column is folded in entry order, products
// as a * b and folds as fold<op>: the bits of the scalar loop.
// The whole tile stays in vectors, the finish included (mean, alpha, beta: the same operations per
// lane as the scalar store(), so the same bits). Written per element, the finish was compiled to a
// scalar multiply, two branches and a store for each of the 32 columns, behind a stack copy of the
// accumulators and a `rep stos` that zeroed them: on rows of 3-15 entries (most of the matrices in
// ../shared/data) that cost more than the entries themselves (Kokkos-OpenMP on 1 thread, AVX2,
// cora F = 32: 142 -> 65 us; benchmarks/results/2026-12-03-cpu-kokkos-spmm.md). Max and min select
// per vector (fold<op>'s test on lane masks, GCC's vector ?:) instead of lane by lane.
template <int NV, Op op, class I, class V>
inline void host_tile(const Spmm<I, V>& p, int64_t begin, int64_t end, int64_t i, int64_t j0) {
  typedef V Vec __attribute__((vector_size(8 * sizeof(V))));
  V* crow = p.c + i * p.ldc + j0;
  // No helper returns or takes a Vec by value: without -mavx that is an ABI GCC warns about
  // (-Wpsabi, an error under -Werror), and Debian's Kokkos build targets the baseline ISA.
  Vec acc[NV];
  if (end > begin) {
    const V a0 = p.av != nullptr ? p.av[begin] : V(1);
    const V* b0 = p.b + static_cast<int64_t>(p.ci[begin]) * p.ldb + j0;
    for (int k = 0; k < NV; ++k) {
      Vec x;
      __builtin_memcpy(&x, b0 + 8 * k, sizeof x);
      acc[k] = a0 * x;
    }
    for (int64_t e = begin + 1; e < end; ++e) {
      if (e + kHostPrefetch < p.nnz)
        __builtin_prefetch(p.b + static_cast<int64_t>(p.ci[e + kHostPrefetch]) * p.ldb + j0);
      const V a = p.av != nullptr ? p.av[e] : V(1);
      const V* brow = p.b + static_cast<int64_t>(p.ci[e]) * p.ldb + j0;
      for (int k = 0; k < NV; ++k) {
        Vec x;
        __builtin_memcpy(&x, brow + 8 * k, sizeof x);
        x = a * x;
        if constexpr (op == Op::sum) {
          acc[k] = acc[k] + x;
        } else {
          // fold<op> on whole vectors: keep acc where it is NaN or x is not better.
          if constexpr (op == Op::max)
            acc[k] = ((acc[k] != acc[k]) | (x <= acc[k])) ? acc[k] : x;
          else
            acc[k] = ((acc[k] != acc[k]) | (x >= acc[k])) ? acc[k] : x;
        }
      }
    }
    if (p.mean) {
      const V count = static_cast<V>(end - begin);
      for (int k = 0; k < NV; ++k) acc[k] = acc[k] / count;
    }
  } else {
    for (int k = 0; k < NV; ++k) acc[k] = Vec{};  // an empty row reduces to 0
  }
  for (int k = 0; k < NV; ++k) {
    Vec r = p.alpha * acc[k];
    if (p.read_c) {
      Vec old;
      __builtin_memcpy(&old, crow + 8 * k, sizeof old);
      r = r + p.beta * old;
    }
    __builtin_memcpy(crow + 8 * k, &r, sizeof r);
  }
}

// One column of row i (the last F % 8).
template <Op op, class I, class V>
inline void host_col(const Spmm<I, V>& p, int64_t begin, int64_t end, int64_t i, int64_t j) {
  V r = V(0);
  for (int64_t e = begin; e < end; ++e) {
    const V a = p.av != nullptr ? p.av[e] : V(1);
    const V x = a * p.b[static_cast<int64_t>(p.ci[e]) * p.ldb + j];
    r = e == begin ? x : fold<op>(r, x);
  }
  if (p.mean && end > begin) r = r / static_cast<V>(end - begin);
  V* q = p.c + i * p.ldc + j;
  *q = p.read_c ? p.alpha * r + p.beta * *q : p.alpha * r;
}

// Columns of C per walk of a row on a host space: 8 accumulator registers' worth, leaving the
// other 8 of the 16 vector registers (x86-64 with or without AVX) to the loads and products. With
// AVX (the -march of a Kokkos built for the host, scripts/kokkos.sh) that is 64 floats or 32
// doubles, the openmp plugin's tile (kernels/openmp/common.hpp); on the x86-64 baseline (Debian's
// Kokkos) 32 columns of either, as 64 floats would take all 16 SSE registers. Kokkos-OpenMP and
// openmp on 1 thread each, AVX2, float, without the prefetch: 64 columns instead of 32 took the
// geomean over the 18 matrices of ../shared/data at F = 128 from 0.98x to 1.02x the openmp plugin
// (1.07x with the prefetch; benchmarks/results/2026-12-03-cpu-kokkos-spmm.md).
#if defined(__AVX__)
template <class V>
inline constexpr int kHostTileVectors = sizeof(V) == 4 ? 8 : 4;
#else
template <class V>
inline constexpr int kHostTileVectors = 4;
#endif

// Host spaces: the rows in blocks of about equal rows + entries (row_blocks_plan), one block at a
// time; each row walked once per kHostTileVectors vectors of columns, then narrower tiles and
// single columns for the rest of F.
template <Op op, class I, class V>
void host_rows(const Spmm<I, V>& p, const int64_t* bounds, int64_t blocks) {
  constexpr int kWide = kHostTileVectors<V>;
  Dynamic policy(0, blocks);
  policy.set_chunk_size(1);
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm.team_rows", policy, KOKKOS_LAMBDA(const int64_t blk) {
        for (int64_t i = bounds[blk]; i < bounds[blk + 1]; ++i) {
          const int64_t begin = static_cast<int64_t>(p.rp[i]), end = static_cast<int64_t>(p.rp[i + 1]);
          int64_t j0 = 0;
          for (; j0 + 8 * kWide <= p.f; j0 += 8 * kWide) host_tile<kWide, op>(p, begin, end, i, j0);
          if constexpr (kWide == 8)
            if (j0 + 32 <= p.f) host_tile<4, op>(p, begin, end, i, j0), j0 += 32;
          if (j0 + 16 <= p.f) host_tile<2, op>(p, begin, end, i, j0), j0 += 16;
          if (j0 + 8 <= p.f) host_tile<1, op>(p, begin, end, i, j0), j0 += 8;
          for (; j0 < p.f; ++j0) host_col<op>(p, begin, end, i, j0);
        }
      });
}

template <Op op, class I, class V>
void team_rows_op(const sparseport_spmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* b = detail::as<V>(args.b.data);
  V* c = detail::as_mut<V>(args.c.data);
  const int64_t m = args.a.rows, f = args.c.cols, ldb = args.b.ld, ldc = args.c.ld;
  const V alpha = static_cast<V>(args.alpha), beta = static_cast<V>(args.beta);
  // beta == 0 must not read C: 0 * NaN would leak a NaN (or garbage) C into the result.
  const bool read_c = args.beta != 0.0;
  const bool mean = args.reduce == SPARSEPORT_REDUCE_MEAN;
  if constexpr (!kDeviceMemory) {
    Spmm<I, V> p;
    p.rp = rp, p.ci = ci, p.av = av, p.b = b, p.c = c;
    p.m = m, p.f = f, p.ldb = ldb, p.ldc = ldc, p.nnz = args.a.nnz;
    p.alpha = alpha, p.beta = beta, p.read_c = read_c, p.mean = mean;
    if (m == 0 || f == 0) return;
    // Held by this call: an invalidation from another thread cannot free the bounds under it.
    const std::shared_ptr<RowBlocksPlan> plan = row_blocks_plan(rp, m, args.a.nnz);
    const int64_t* bounds = plan->bounds.data();
    const int64_t blocks = static_cast<int64_t>(plan->bounds.size()) - 1;
    host_rows<op>(p, bounds, blocks);
    Kokkos::fence();  // before the plan may go
    return;
  }
  Spmm<I, V> p;
  p.rp = rp, p.ci = ci, p.av = av, p.b = b, p.c = c;
  p.m = m, p.f = f, p.ldb = ldb, p.ldc = ldc;
  p.alpha = alpha, p.beta = beta, p.read_c = read_c, p.mean = mean;
  if (wide_columns(p) > 1) {
    constexpr int W = static_cast<int>(16 / sizeof(V));
    const int64_t vl = vector_length(f / W);
    if (lane_slots(f / W, vl) == 1)
      team_rows_device<1, W, op>(p, vl);
    else
      team_rows_device<2, W, op>(p, vl);
    return;
  }
  const int64_t vl = vector_length(f);
  switch (lane_slots(f, vl)) {
    case 1: team_rows_device<1, 1, op>(p, vl); break;
    case 2: team_rows_device<2, 1, op>(p, vl); break;
    case 4: team_rows_device<4, 1, op>(p, vl); break;
    default: team_rows_device<8, 1, op>(p, vl); break;
  }
}

// Whether product x replaces acc in the fold of max (kMax) or min, as the reference folds: never
// once acc is NaN, always for the first NaN, else only when strictly better. Bitwise | and & keep
// the host column loop free of control flow (vectorisable), as fold does.
template <bool kMax, class V>
KOKKOS_INLINE_FUNCTION bool replaces(V acc, V x) {
  return (acc == acc) & ((x != x) | (kMax ? x > acc : x < acc));
}

template <bool kMax, class I, class V>
void team_rows_arg(const sparseport_spmm_args& args) {
  const Spmm<I, V> p = unpack<I, V>(args);
  I* arg = detail::as_mut<I>(args.arg);
  const int64_t arg_ld = args.arg_ld;
  if constexpr (!kDeviceMemory) {
    Kokkos::parallel_for(
        "sparseport::kokkos::spmm.team_rows.arg", row_blocks(p.m, p.f), KOKKOS_LAMBDA(const Member& t) {
          const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
          const int64_t r1 = r0 + kRowsPerTeam < p.m ? r0 + kRowsPerTeam : p.m;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
            const int64_t begin = static_cast<int64_t>(p.rp[i]), end = static_cast<int64_t>(p.rp[i + 1]);
            V* crow = p.c + i * p.ldc;
            I* arow = arg + i * arg_ld;
            if (begin == end) {
              for (int64_t j = 0; j < p.f; ++j) {
                store(p, crow + j, V(0), 0);
                arow[j] = I(-1);
              }
              return;
            }
            for (int64_t j0 = 0; j0 < p.f; j0 += kHostCols) {
              const int64_t w = p.f - j0 < kHostCols ? p.f - j0 : kHostCols;
              V acc[kHostCols];
              I pos[kHostCols];
              {
                const V a = p.av != nullptr ? p.av[begin] : V(1);
                const V* brow = p.b + static_cast<int64_t>(p.ci[begin]) * p.ldb + j0;
                for (int64_t jj = 0; jj < w; ++jj) {
                  acc[jj] = a * brow[jj];
                  pos[jj] = static_cast<I>(begin);
                }
              }
              for (int64_t e = begin + 1; e < end; ++e) {
                const V a = p.av != nullptr ? p.av[e] : V(1);
                const V* brow = p.b + static_cast<int64_t>(p.ci[e]) * p.ldb + j0;
                const I here = static_cast<I>(e);
                for (int64_t jj = 0; jj < w; ++jj) {
                  const V x = a * brow[jj];
                  const bool take = replaces<kMax>(acc[jj], x);
                  acc[jj] = take ? x : acc[jj];
                  pos[jj] = take ? here : pos[jj];
                }
              }
              for (int64_t jj = 0; jj < w; ++jj) {
                store(p, crow + j0 + jj, acc[jj], end - begin);
                arow[j0 + jj] = pos[jj];
              }
            }
          });
        });
    return;
  }
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm.team_rows.arg", row_blocks(p.m, p.f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < p.m ? r0 + kRowsPerTeam : p.m;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t i) {
          const int64_t begin = static_cast<int64_t>(p.rp[i]), end = static_cast<int64_t>(p.rp[i + 1]);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, p.f), [&](const int64_t j) {
            V acc = V(0);
            int64_t pos = -1;
            for (int64_t e = begin; e < end; ++e) {
              const V x = (p.av != nullptr ? p.av[e] : V(1)) * p.b[static_cast<int64_t>(p.ci[e]) * p.ldb + j];
              if (e == begin || replaces<kMax>(acc, x)) {
                acc = x;
                pos = e;
              }
            }
            store(p, p.c + i * p.ldc + j, acc, end - begin);
            arg[i * arg_ld + j] = static_cast<I>(pos);
          });
        });
      });
}

// The reduce as a template argument through named templates (nvcc rejects KOKKOS_LAMBDA inside a
// generic lambda); mean runs as sum and divides at the end. Max and min with args.arg record it
// (the front end passes arg only for max/min, to variants flagged SPARSEPORT_VARIANT_RECORDS_ARG).
template <class I, class V>
void team_rows(const sparseport_spmm_args& args) {
  if (args.arg != nullptr && args.reduce == SPARSEPORT_REDUCE_MAX)
    team_rows_arg<true, I, V>(args);
  else if (args.arg != nullptr && args.reduce == SPARSEPORT_REDUCE_MIN)
    team_rows_arg<false, I, V>(args);
  else if (args.reduce == SPARSEPORT_REDUCE_MAX)
    team_rows_op<Op::max, I, V>(args);
  else if (args.reduce == SPARSEPORT_REDUCE_MIN)
    team_rows_op<Op::min, I, V>(args);
  else
    team_rows_op<Op::sum, I, V>(args);
  end_op();
}

// ---------------------------------------------------------------------------------------------
// hub_split

// T, the most entries a chunk holds. A worker is what runs one chunk at a time: a thread on a
// host space, a group of VL vector lanes on a device (concurrency() / VL of them: 8448 on an H200
// at F >= 32). T is the smallest length that still cuts the entries into kWaves chunks per
// worker: then no chunk holds more than 1/kWaves of a worker's fair share, so the worker that
// draws the longest one (a hub's) finishes within about 1/kWaves of a balanced schedule, while
// rows up to T entries (all of them, unless the matrix has hubs) stay whole and pay no atomics.
// Never below kMinChunk: a split row costs F atomic updates per chunk on top of its T x F
// gathered loads, which T >= 32 keeps under 1/32 of the gathered traffic; the chunk's fixed costs
// (a binary search, its row's offsets) stay as small. SPARSEPORT_HUB_T overrides T (tuning and
// tests), as it sets the cuda plugin's hub threshold.
// Never below kHubMeanMultiple x the mean row either, the cuda plugin's floor (kernels/cuda/
// spmm_hub.cu, mean_floor): a row a few times the mean does not unbalance the workers, and on a
// small matrix of even rows the fair share fell under them, so every row split and paid the scratch
// row, its atomics and the finishing pass (H200, bcsstk16, 4884 rows of ~59 entries, T = 32:
// hub_split 0.39-0.48x the cuda plugin's best, 2026-12-04).
// Examples: H200, rmat:18:16 (3.9 M entries) at F = 64: T = 117; Kokkos-OpenMP on 2 threads,
// rmat:16:16 (0.96 M): T = 119,402, so only rows of more than an eighth of the entries split.
constexpr int64_t kWaves = 4;
constexpr int64_t kMinChunk = 32;
constexpr int64_t kHubMeanMultiple = 4;

int64_t chunk_length(int64_t nnz, int64_t rows, int64_t f) {
  if (const char* v = std::getenv("SPARSEPORT_HUB_T"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long long t = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || t < 1)
      throw InvalidArgument(std::string("sparseport::spmm[kokkos]: SPARSEPORT_HUB_T='") + v +
                            "' is not a positive whole number of entries");
    return t;
  }
  const int64_t threads = std::max<int64_t>(1, ExecSpace().concurrency());
  const int64_t workers = kDeviceMemory ? std::max<int64_t>(1, threads / vector_length(f)) : threads;
  const int64_t per_chunk = (nnz + kWaves * workers - 1) / (kWaves * workers);
  return std::max({kMinChunk, per_chunk, kHubMeanMultiple * (nnz / std::max<int64_t>(rows, 1))});
}

// The scratch rows that hub_split reuses from call to call (a cudaMalloc per call would cost more
// than the kernels on small inputs, and synchronise), grown by half again when too small, never
// shrunk. They depend on F and the value type as well as on the matrix, so they are not part of a
// plan. One mutex serialises the calls that use them (Kokkos runs one kernel at a time on the
// default instance anyway). Freed by a Kokkos finalize hook: a View must not outlive Kokkos. The
// object itself is never destroyed, so the hook cannot find it gone at exit (a static would be
// destroyed before the atexit handler that finalises Kokkos runs, when the first context
// registered that handler before this static existed).
struct Workspace {
  std::mutex lock;
  bool hooked = false;
  Kokkos::View<double*, MemSpace> scratch;  // double: aligned for float and double alike
  // What the scratch holds between calls: its first `clean` values are the identity of `clean_for`
  // (the reduce and the value's size) in the buffer at `clean_at`, put back by the last call's
  // finish, so that the next call of that kind over no more cells skips the init pass: one launch
  // fewer a call (on an H200 the init kernel took 2.0 us of a 57 us hub_split call on
  // facebook-combined, plus its launch). 0: nothing known.
  const void* clean_at = nullptr;
  int64_t clean = 0;
  int clean_for = 0;
  // hub_split_groups_device's tickets, a counter per hub and lane: zero between calls (the item that
  // draws a counter's last ticket puts it back).
  Kokkos::View<unsigned*, MemSpace> tickets;
};

Workspace& workspace() {
  static Workspace* w = new Workspace;
  return *w;
}

void hook(Workspace& w) {
  if (w.hooked) return;
  Kokkos::push_finalize_hook([] {
    Workspace& ws = workspace();
    std::lock_guard<std::mutex> guard(ws.lock);
    ws.scratch = {};
    ws.tickets = {};  // a View must not outlive Kokkos
    ws.clean_at = nullptr;
    ws.clean = 0;
    ws.hooked = false;
  });
  w.hooked = true;
}

// Host spaces: one chunk by one thread, the entries outside and kHostCols columns of C inside, as
// team_rows's host loop (acc a local array, so the compiler keeps it apart from B and C and
// vectorises the column loop). scratch is null when the matrix has no hubs.
template <Op op, class I, class V>
KOKKOS_INLINE_FUNCTION void host_chunk(const Spmm<I, V>& p, const Chunk& c, V* scratch, V start) {
  if (c.hub >= 0 && c.ee == c.eb) return;
  const I* ci = p.ci;
  const V* av = p.av;
  const V* b = p.b;
  const int64_t f = p.f, ldb = p.ldb;
  const int64_t count = static_cast<int64_t>(p.rp[c.row + 1]) - static_cast<int64_t>(p.rp[c.row]);
  for (int64_t j0 = 0; j0 < f; j0 += kHostCols) {
    const int64_t w = f - j0 < kHostCols ? f - j0 : kHostCols;
    V acc[kHostCols];
    for (int64_t jj = 0; jj < w; ++jj) acc[jj] = V(0);
    for (int64_t e = c.eb; e < c.ee; ++e) {
      const V a = av != nullptr ? av[e] : V(1);
      const V* brow = b + static_cast<int64_t>(ci[e]) * ldb + j0;
      if (e == c.eb) {
        for (int64_t jj = 0; jj < w; ++jj) acc[jj] = a * brow[jj];
      } else {
        for (int64_t jj = 0; jj < w; ++jj) acc[jj] = fold<op>(acc[jj], a * brow[jj]);
      }
    }
    if (c.hub < 0) {
      V* crow = p.c + c.row * p.ldc + j0;
      for (int64_t jj = 0; jj < w; ++jj) store(p, crow + jj, acc[jj], count);
    } else {
      V* srow = scratch + c.hub * f + j0;
      for (int64_t jj = 0; jj < w; ++jj) atomic_combine<op>(srow + jj, acc[jj], start);
    }
  }
}

// Host spaces: work items of one extra hub chunk or kRowsPerTeam rows, handed out one at a time
// (dynamic schedule, chunk size 1: hub chunks are long, and Kokkos's automatic chunk size would
// hand several of them to one thread at once).
template <Op op, class I, class V>
void hub_split_host(const Spmm<I, V>& p, const Hubs& h, V* scratch, V start, int64_t t) {
  const int64_t blocks = (p.m + kRowsPerTeam - 1) / kRowsPerTeam;
  Dynamic policy(0, h.extra + blocks);
  policy.set_chunk_size(1);
  Kokkos::parallel_for(
      "sparseport::kokkos::spmm.hub_split", policy, KOKKOS_LAMBDA(const int64_t x) {
        if (x < h.extra) {
          host_chunk<op>(p, chunk_of(p.rp, h, t, x), scratch, start);
          return;
        }
        const int64_t r0 = (x - h.extra) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < p.m ? r0 + kRowsPerTeam : p.m;
        for (int64_t r = r0; r < r1; ++r) host_chunk<op>(p, chunk_of(p.rp, h, t, h.extra + r), scratch, start);
      });
}

// Device spaces: a team thread per work item (team_size() items per team), vector lanes across F
// as in team_rows. The team size is the one Kokkos recommends for this kernel.
template <int NK, int W, Op op, class I, class V>
void hub_split_device(const Spmm<I, V>& p, const Hubs& h, V* scratch, V start, int64_t t) {
  const int64_t fw = p.f / W;
  const int64_t vl = vector_length(fw);
  const int64_t items = h.extra + p.m;
  const auto body = KOKKOS_LAMBDA(const Member& team) {
    const int64_t x0 = static_cast<int64_t>(team.league_rank()) * team.team_size();
    const int64_t x1 = x0 + team.team_size() < items ? x0 + team.team_size() : items;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, x0, x1), [&](const int64_t x) {
      const Chunk c = chunk_of(p.rp, h, t, x);
      if (c.hub >= 0 && c.ee == c.eb) return;
      const int64_t count = static_cast<int64_t>(p.rp[c.row + 1]) - static_cast<int64_t>(p.rp[c.row]);
      for (int64_t j0 = 0; j0 < fw; j0 += NK * vl) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vl), [&](const int64_t lane) {
          const int64_t j = j0 + lane;
          const int nk = lane_cols<NK>(fw, j, vl);
          Cols<V, W> acc[kLaneCols];
          for (int k = 0; k < NK; ++k)
            for (int w = 0; w < W; ++w) acc[k].v[w] = V(0);
          if (c.ee > c.eb) lane_fold<NK, W, op, false>(p, c.eb, c.ee, j, vl, nk, acc);
          if (c.hub < 0) {
            for (int k = 0; k < NK; ++k)
              if (k < nk) store<W>(p, p.c + c.row * p.ldc + (j + k * vl) * W, acc[k], count);
          } else {
            for (int k = 0; k < NK; ++k)
              if (k < nk)
                for (int w = 0; w < W; ++w)
                  atomic_combine<op>(scratch + c.hub * p.f + (j + k * vl) * W + w, acc[k].v[w], start);
          }
        });
      }
    });
  };
  const int ts = Policy(1, Kokkos::AUTO, static_cast<int>(vl)).team_size_recommended(body, Kokkos::ParallelForTag());
  const int64_t league = (items + ts - 1) / ts;
  Kokkos::parallel_for("sparseport::kokkos::spmm.hub_split", Policy(static_cast<int>(league), ts, static_cast<int>(vl)),
                       body);
}

// Device spaces: G = vector_length_max / vl team threads share a work item, team thread g of the G
// folding the item's entries g, g + G, ... across its vl lanes, each lane NK column groups (j = lane,
// lane + vl, ...: a group's vl lanes load adjacent 16 bytes), as the cuda plugin's hub_split splits a
// row over 4 groups of 8 lanes with float4 loads at every F (spmm_hub_kernel<.., 4, 8, 4>). A warp
// then holds one item with G entries in flight, where hub_split_device gives a warp 32 / vl items
// (one at F / W >= 32) with one entry each, the longest deciding. H200, facebook-combined (Nsight
// Compute, 2026-12-04): at F = 32 hub_split_device ran 1048 warps at 7 % of the SMs' warp slots,
// 69 us, the first groups (F / W below the vector length only) 4192 warps at 33 %, 22 us, the cuda
// plugin's hub_split 4096 warps at 37 %, 19 us; at F = 128 (one item a warp, no groups then) 52 us
// against the cuda plugin's 21 us. Whole calls with those first groups, the 17 shared matrices x
// F = 32, 64, 128 in one run against SPARSEPORT_KOKKOS_GROUPS=0: the best kokkos variant over the
// cuda plugin's best went from 0.696 to 0.721 geomean (facebook-combined 2.0x faster at F = 32,
// polblogs 1.5x, cora 1.2x; email-Enron 0.74x at F = 32 and cit-HepPh 0.87x slower;
// benchmarks/results/2026-12-04-h200-kokkos-lane-groups.md). Groups at every F (8 lanes, 1-8 slots a
// lane): not yet run. The G partials meet in team scratch after a team barrier and the item's first
// team thread folds them in group order: run to run the same bits, but not team_rows' (the additions
// are grouped differently).
// Items a team: 2 x G team threads x vl lanes (64 CUDA threads; 32 resident CTAs an SM still fill its
// 2048 threads). The team barrier before the partials meet holds every item of a team until its
// longest one is done; with 8 items a team (256 threads, the cuda plugin's hub_split block) the
// best kokkos variant was 0.669x the cuda plugin's best over the 17 shared matrices x F = 32, 64,
// 128, with 2 items 0.685x and 0.696x in two runs, with 1 item 0.689x (>= 0.6x on 36, 39, 40 and 38
// of the 51 inputs; H200, 2026-12-05, benchmarks/results/2026-12-05-h200-kokkos-branches.md).
// Whole rows apart: the groups share only the hubs' chunks (hub_chunk_of); every row of at most T
// entries is folded whole in the same launch by the teams after them, NK team threads a row, as
// team_rows folds it (one column group a lane, batches of gathers in flight, a short row in one
// masked batch; no barrier, no partials, no scratch). Every row had paid the item's fixed costs
// (its groups each folding a few entries one at a time, then the barrier and the partials), which
// on graphs of many short rows beside their hubs cost more than the entries. On an H100 (2026-12-06,
// the 18 shared matrices x F = 32, 64, 128 in one run against SPARSEPORT_KOKKOS_HUB_ROWS=0, which
// keeps every row an item): hub_split 1.34x faster geomean (email-Enron 1.48-1.62x, cit-HepPh
// 1.55-1.66x, mdual 1.85-3.44x, wing 1.86-2.75x; 0.85-0.98x on 7 of the 54, graphs of 2-4 k rows
// such as bcsstk13 and facebook-combined, where a warp a row had more loads in flight), and the best
// kokkos variant over the cuda plugin's best 0.703 -> 0.782, >= 0.6x on 54 of 54 inputs (40 before;
// benchmarks/results/2026-12-06-h100-s28.md). A row's NK team threads rather than one with NK slots
// a lane: with the slots (8 lanes a row, 4 rows a warp at F = 64) hub_split ran 0.61x / 0.67x the
// speed of every-row-an-item at F = 64 on facebook-combined / bcsstk13 in the run before (0.98x /
// 0.85x now), and the float kernel took 84 registers instead of 80.
constexpr int kGroupItemsPerTeam = 2;
// SPARSEPORT_KOKKOS_GROUP_ITEMS = 1, 2, 4 or 8 sets it where set (read per call, as
// SPARSEPORT_KOKKOS_GROUPS), for A/B runs.
inline int group_items_per_team() {
  if (const char* v = std::getenv("SPARSEPORT_KOKKOS_GROUP_ITEMS"); v != nullptr) {
    const int k = std::atoi(v);
    if (k == 1 || k == 2 || k == 4 || k == 8) return k;
  }
  return kGroupItemsPerTeam;
}
// Lanes of a group at most (group_lanes: 8, 16 under the narrow rule), so tickets per hub in
// hub_split_groups_device.
constexpr int64_t kTicketLanes = 16;

// order (rows_apart only; null: row order): the plan's order of the whole rows (HubPlan::order),
// so that the rows a warp holds side by side are of about one length. On the skewed graphs the
// whole-row kernel ran at 29 % of the warp slots against the cuda plugin's 42 % (cit-HepPh, F = 64,
// H100, Nsight Compute: 49 against 26 us), whose plan takes the rows in this order.
template <int NK, int W, Op op, class I, class V>
void hub_split_groups_device(const Spmm<I, V>& p, const Hubs& h, V* scratch, unsigned* tickets, V start, int64_t t,
                             int64_t vl, bool rows_apart, const int64_t* order) {
  using Part = Kokkos::View<Cols<V, W>*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const int groups = static_cast<int>(Policy::vector_length_max() / vl);
  const int64_t fw = p.f / W;
  const int per_team = group_items_per_team();
  const int ts = per_team * groups;
  // The items the groups share: the hubs' chunks alone where whole rows go to team threads, else
  // every row too (chunk_of).
  const int64_t items = rows_apart ? h.extra + h.count : h.extra + p.m;
  const int64_t hub_teams = (items + per_team - 1) / per_team;
  // Whole rows: NK team threads a row, one column group a lane (below), so ts / NK rows a team.
  const int64_t rows_per_team = ts >= NK ? ts / NK : 1;  // ts < NK: the team threads take turns
  const int64_t row_teams = rows_apart ? (p.m + rows_per_team - 1) / rows_per_team : 0;
  const auto body = KOKKOS_LAMBDA(const Member& team) {
    if (team.league_rank() >= hub_teams) {
      // Whole rows (above): row q / NK, lane l of its (q % NK)-th team thread holding column
      // group l + (q % NK) * vl. A listed hub is the first teams' items.
      const int64_t q0 = static_cast<int64_t>(team.league_rank() - hub_teams) * rows_per_team * NK;
      const int64_t q1 = q0 + rows_per_team * NK < p.m * NK ? q0 + rows_per_team * NK : p.m * NK;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, q0, q1), [&](const int64_t q) {
        const int64_t i = order != nullptr ? order[q / NK] : q / NK, j0 = (q % NK) * vl;
        const int64_t begin = static_cast<int64_t>(p.rp[i]), end = static_cast<int64_t>(p.rp[i + 1]);
        if (listed_hub(h, t, i, end - begin)) return;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vl), [&](const int64_t lane) {
          const int64_t j = j0 + lane;
          if (j >= fw) return;
          Cols<V, W> acc[kLaneCols];
          for (int w = 0; w < W; ++w) acc[0].v[w] = V(0);
          if (end > begin) lane_fold<1, W, op, true>(p, begin, end, j, vl, 1, acc);
          store<W>(p, p.c + i * p.ldc + j * W, acc[0], end - begin);
        });
      });
      return;  // the whole team: no barrier on this side
    }
    const int r = team.team_rank();
    const int g = r % groups;
    const int64_t x = static_cast<int64_t>(team.league_rank()) * per_team + r / groups;
    // Aligned for the 16-byte Cols (a scratch View alone is aligned to 8 bytes in Kokkos 3.4).
    const size_t cells = static_cast<size_t>(team.team_size()) * static_cast<size_t>(vl) * NK;
    Part part(static_cast<Cols<V, W>*>(team.team_scratch(0).get_shmem_aligned(cells * sizeof(Cols<V, W>),
                                                                                alignof(Cols<V, W>))),
              cells);
    Chunk c{0, 0, 0, -1, 0};
    bool live = x < items;
    if (live) c = rows_apart ? hub_chunk_of(p.rp, h, t, x) : chunk_of(p.rp, h, t, x);
    if (c.row < 0) {  // a stale plan's hub, now written whole by its row's team thread
      live = false;
      c = Chunk{0, 0, 0, -1, 0};
    }
    // Cell of team thread q, lane, slot k.
    const auto cell = [&](int q, int64_t lane, int k) { return (static_cast<size_t>(q) * vl + lane) * NK + k; };
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vl), [&](const int64_t lane) {
      const int nk = lane_cols<NK>(fw, lane, vl);
      Cols<V, W> acc[NK];
      for (int k = 0; k < NK; ++k)
        for (int w = 0; w < W; ++w) acc[k].v[w] = V(0);
      int64_t e = c.eb + g;
      for (bool first = true; e < c.ee; e += groups, first = false) {
        const V a = p.av != nullptr ? p.av[e] : V(1);
        const auto* brow = reinterpret_cast<const Cols<V, W>*>(p.b + static_cast<int64_t>(p.ci[e]) * p.ldb) + lane;
        for (int k = 0; k < NK; ++k)
          if (NK == 1 || k < nk) {
            const Cols<V, W> b = brow[k * vl];
            for (int w = 0; w < W; ++w) acc[k].v[w] = first ? a * b.v[w] : fold<op>(acc[k].v[w], a * b.v[w]);
          }
      }
      for (int k = 0; k < NK; ++k) part(cell(r, lane, k)) = acc[k];
    });
    team.team_barrier();  // every team thread gets here: no return above
    if (g != 0 || !live) return;
    const int64_t n = c.ee - c.eb;
    const int used = n < groups ? static_cast<int>(n) : groups;  // groups that folded an entry
    const int64_t count = static_cast<int64_t>(p.rp[c.row + 1]) - static_cast<int64_t>(p.rp[c.row]);
    // A hub's items (its extra chunks, and its row's first chunk while the row is above T; see
    // chunk_of) each draw a ticket per lane once their atomics are out.
    const unsigned expected =
        c.hub < 0 ? 0u : static_cast<unsigned>(h.off[c.hub + 1] - h.off[c.hub] + (count > t ? 1 : 0));
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vl), [&](const int64_t lane) {
      const int nk = lane_cols<NK>(fw, lane, vl);
      for (int k = 0; k < NK && n > 0; ++k) {
        if (NK > 1 && k >= nk) break;
        Cols<V, W> acc = part(cell(r, lane, k));
        for (int q = 1; q < used; ++q) {
          const Cols<V, W> o = part(cell(r + q, lane, k));
          for (int w = 0; w < W; ++w) acc.v[w] = fold<op>(acc.v[w], o.v[w]);
        }
        const int64_t j = lane + k * vl;
        if (c.hub < 0)
          store<W>(p, p.c + c.row * p.ldc + j * W, acc, count);
        else
          for (int w = 0; w < W; ++w) atomic_combine<op>(scratch + c.hub * p.f + j * W + w, acc.v[w], start);
      }
      if (c.hub < 0) {
        if (n == 0)  // an empty row: 0 (the reference's empty row), through alpha, beta
          for (int k = 0; k < NK; ++k)
            if (NK == 1 || k < nk) store<W>(p, p.c + c.row * p.ldc + (lane + k * vl) * W, Cols<V, W>{}, count);
        return;
      }
      // The last of a hub's items to draw this lane's ticket finishes the lane's columns (CUDA's
      // threadFenceReduction pattern, a counter per lane so that no lane waits on another): the
      // fence puts this item's atomics before its ticket, the exchange reads each cell where the
      // atomics landed and leaves the identity for the next call. This is hub_split's finish kernel
      // folded in: one launch fewer a call (on an H200 the finish took 3.6 us of a 25 us call on
      // cora, plus its launch).
      Kokkos::memory_fence();
      unsigned* ticket = tickets + c.hub * kTicketLanes + lane;
      if (Kokkos::atomic_fetch_add(ticket, 1u) + 1u != expected) return;
      Kokkos::memory_fence();
      for (int k = 0; k < NK; ++k)
        if (NK == 1 || k < nk)
          for (int w = 0; w < W; ++w) {
            const int64_t j = (lane + k * vl) * W + w;
            const V done = exchange_bits(scratch + c.hub * p.f + j, start);  // bits: a NaN stays
            if (count > t) store(p, p.c + c.row * p.ldc + j, done, count);  // else the row's item wrote it whole
          }
      *ticket = 0u;
    });
  };
  const int64_t league = hub_teams + row_teams;
  const size_t bytes =
      static_cast<size_t>(ts) * static_cast<size_t>(vl) * NK * sizeof(Cols<V, W>) + alignof(Cols<V, W>);
  Kokkos::parallel_for("sparseport::kokkos::spmm.hub_split(groups)",
                       Policy(static_cast<int>(league), ts, static_cast<int>(vl)).set_scratch_size(0, Kokkos::PerTeam(bytes)),
                       body);
}

// The lanes of a group in hub_split_groups_device for F / W column groups, or 0 where the groups
// do not serve: min(F / W, 8) rounded down to a power of two (the cuda plugin's 8 lanes of a group),
// where the lane slots that cover F / W are at most kLaneCols (F <= 256 in float with 16-byte loads,
// F <= 64 without) and at least two groups share an item. SPARSEPORT_KOKKOS_GROUPS=0 keeps
// hub_split_device; =narrow the rule measured first (2026-12-04): groups only where F / W is a power
// of two below the vector length, one slot a lane (then vl = F / W, 16 lanes at F / W = 16).
inline int64_t group_lanes(int64_t fw) {
  const char* v = std::getenv("SPARSEPORT_KOKKOS_GROUPS");
  if (v != nullptr && std::strcmp(v, "0") == 0) return 0;
  if (v != nullptr && std::strcmp(v, "narrow") == 0) {
    const int64_t vl = vector_length(fw);
    return vl == fw && vl < Policy::vector_length_max() ? vl : 0;
  }
  const int64_t vl = vector_length(fw < 8 ? fw : 8);
  const bool fits = (fw + vl - 1) / vl <= kLaneCols;
  return fits && vl < Policy::vector_length_max() ? vl : 0;
}

// SPARSEPORT_KOKKOS_HUB_ROWS=0: every row an item of the lane groups, as before whole rows went
// apart (read per call, for A/B runs in one build).
// An A/B switch that is on unless the variable is "0" (read per call).
inline bool switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}
inline bool hub_rows_apart() { return switch_on("SPARSEPORT_KOKKOS_HUB_ROWS"); }

// hub_split_groups_device with the fewest lane slots that cover F / W with vl lanes.
template <int W, Op op, class I, class V>
void hub_split_groups(const Spmm<I, V>& p, const Hubs& h, V* scratch, unsigned* tickets, V start, int64_t t,
                      int64_t vl, bool rows_apart, const int64_t* order) {
  switch (lane_slots(p.f / W, vl)) {
    case 1: hub_split_groups_device<1, W, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order); break;
    case 2: hub_split_groups_device<2, W, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order); break;
    case 4: hub_split_groups_device<4, W, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order); break;
    default: hub_split_groups_device<8, W, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order); break;
  }
}

template <Op op, class I, class V>
void hub_split_op(const sparseport_spmm_args& args) {
  const Spmm<I, V> p = unpack<I, V>(args);
  if (p.m == 0 || p.f == 0) return;
  const int64_t t = chunk_length(args.a.nnz, p.m, p.f);
  // Held by this call: an invalidation from another thread cannot free the hub list under it.
  const std::shared_ptr<HubPlan> plan = hub_plan("spmm.hub_split", p.rp, p.m, args.a.nnz, t, kDeviceMemory);
  const Hubs h = plan->hubs;
  Workspace& w = workspace();
  std::lock_guard<std::mutex> guard(w.lock);
  hook(w);
  V* scratch = nullptr;
  const V start = identity<op, V>();
  const int64_t cells = h.count * p.f;
  const int kind = static_cast<int>(op) * 16 + static_cast<int>(sizeof(V));
  int64_t clean_after = cells;  // the identity cells the finish leaves
  if (h.count > 0) {
    const size_t doubles = (static_cast<size_t>(cells) * sizeof(V) + sizeof(double) - 1) / sizeof(double);
    scratch = reinterpret_cast<V*>(grown(w.scratch, doubles, "sparseport::kokkos::hub_scratch"));
    if (w.clean_at == scratch && w.clean_for == kind && w.clean >= cells)
      clean_after = w.clean;  // left as the identity by the last call's finish
    else
      Kokkos::parallel_for(
          "sparseport::kokkos::spmm.hub_split.init", Range(0, cells),
          KOKKOS_LAMBDA(const int64_t x) { scratch[x] = start; });
    w.clean = 0;  // the chunks write into it now
  }
  bool finished = false;  // the kernel wrote the hubs into C and put the scratch back (tickets)
  if constexpr (kDeviceMemory) {
    constexpr int W = static_cast<int>(16 / sizeof(V));
    const int wide = wide_columns(p);
    if (const int64_t vl = group_lanes(wide > 1 ? p.f / W : p.f); vl > 0) {
      const bool rows_apart = hub_rows_apart();
      unsigned* tickets = nullptr;
      if (h.count > 0) {
        const size_t n = static_cast<size_t>(h.count * kTicketLanes);
        if (w.tickets.extent(0) < n) {
          w.tickets = Kokkos::View<unsigned*, MemSpace>();
          w.tickets = Kokkos::View<unsigned*, MemSpace>("sparseport::kokkos::hub_tickets", n);  // zeroed
        }
        tickets = w.tickets.data();
      }
      // SPARSEPORT_KOKKOS_ROW_ORDER=0: the rows in row order (for A/B runs).
      const int64_t* order = rows_apart && switch_on("SPARSEPORT_KOKKOS_ROW_ORDER") ? plan->order.data() : nullptr;
      if (wide > 1)
        hub_split_groups<W, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order);
      else
        hub_split_groups<1, op>(p, h, scratch, tickets, start, t, vl, rows_apart, order);
      finished = true;
    } else if (wide > 1) {
      if (lane_slots(p.f / W, vector_length(p.f / W)) == 1)
        hub_split_device<1, W, op>(p, h, scratch, start, t);
      else
        hub_split_device<2, W, op>(p, h, scratch, start, t);
    } else {
      switch (lane_slots(p.f, vector_length(p.f))) {
        case 1: hub_split_device<1, 1, op>(p, h, scratch, start, t); break;
        case 2: hub_split_device<2, 1, op>(p, h, scratch, start, t); break;
        case 4: hub_split_device<4, 1, op>(p, h, scratch, start, t); break;
        default: hub_split_device<8, 1, op>(p, h, scratch, start, t); break;
      }
    }
  } else {
    hub_split_host<op>(p, h, scratch, start, t);
  }
  if (h.count > 0) {
    // The hubs into C; a listed row no longer above T was written whole (a stale plan). Each cell
    // goes back to the identity for the next call (Workspace::clean).
    if (!finished)
      Kokkos::parallel_for(
          "sparseport::kokkos::spmm.hub_split.finish", Range(0, cells), KOKKOS_LAMBDA(const int64_t x) {
            const int64_t hub = x / p.f, j = x - hub * p.f;
            const int64_t i = h.rows[hub];
            const int64_t count = static_cast<int64_t>(p.rp[i + 1]) - static_cast<int64_t>(p.rp[i]);
            if (count > t) store(p, p.c + i * p.ldc + j, scratch[x], count);
            scratch[x] = start;
          });
    w.clean_at = scratch;
    w.clean_for = kind;
    w.clean = clean_after;
  }
  end_op();
}

template <class I, class V>
void hub_split(const sparseport_spmm_args& args) {
  if (args.reduce == SPARSEPORT_REDUCE_MAX)
    hub_split_op<Op::max, I, V>(args);
  else if (args.reduce == SPARSEPORT_REDUCE_MIN)
    hub_split_op<Op::min, I, V>(args);
  else
    hub_split_op<Op::sum, I, V>(args);
}

}  // namespace

void spmm_team_rows(const sparseport_spmm_args& args) {
  detail::dispatch(args.a.index_type, args.c.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

void spmm_hub_split(const sparseport_spmm_args& args) {
  detail::dispatch(args.a.index_type, args.c.value_type, [&]<class I, class V>() { hub_split<I, V>(args); });
}

}  // namespace sparseport::kokkos
