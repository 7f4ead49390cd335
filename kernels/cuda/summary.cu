// SPDX-License-Identifier: Apache-2.0
// The CSR summary on the device (the plugin's summarize_csr slot, plugin_abi.h): the numbers of
// scheduler/summary.cpp bit for bit, from one launch, whose last block writes the result into
// pinned host memory, and one synchronisation; nothing is allocated or cleared per call.
//
// One kernel of 256-thread blocks; every sum is an integer sum, so the result does not depend on
// the launch shape or the order of the atomics.
//  - Stream blocks (at most 8 per SM, grid-stride): the rowptr and colind samples hashed (at most
//    SPARSEPORT_SUMMARY_SAMPLE entries each: the whole signature since issue 35). With FEATURES,
//    DEGREES (ABI 1.9: a shape class's row lengths, nothing per entry) or CHECK (below)
//    rowptr[0..rows] read, 4 loads in flight a thread; with FEATURES or DEGREES the degrees
//    (maximum, histogram), and with FEATURES tiles of consecutive entries, one warp a tile: the row of
//    the tile's first entry is found by a 32-way search of rowptr (4 dependent loads for 1M
//    rows), then the lanes hold a window of 32 row ends (relative to the tile) and diagonals, and
//    each entry finds its row in the window by a 5-step shuffle search. The window moves on by 32
//    rows, or by a search past a run of empty rows. Tiles cut hub rows, so a mega-row is spread
//    over many warps like any other entries.
//  - With FEATURES, after the stream blocks, one block per sampled 32-row block: its first 1024
//    columns (in storage order) sorted in shared memory by cub::BlockRadixSort (4 keys a thread,
//    padded with the largest key; only the low bits a column in [0, cols) can use, unless the
//    block holds a column outside that range), then distinct columns and distinct col >> 5
//    segments counted by comparing neighbours. Why after: blocks start roughly in index order, and
//    the stream blocks (one wave at most, each looping over its share of every row and entry) are
//    the longer chain; placed after up to 2048 sorts, as they were, they started only once most
//    sorts had run. On sampled subgraphs (49.5k rows, 54k entries: ~50 stream blocks, ~1550
//    sorts) the FEATURES launch took 29-33 us of GPU time with the sorts first and 21-22 us with
//    them after (ncu, two H100s; 7.7-7.9 us without FEATURES on both; benchmarks/results/
//    2026-12-06-h100-summary-stage.md).
// Histograms are counted in shared memory (one atomic per distinct bucket of a warp, found with
// __match_any_sync), then added to the global accumulators once per block and nonzero bucket;
// each accumulator has its own 128-byte line, so blocks do not queue on one L2 line. The last
// block to finish (a counter after a fence) takes the accumulators with atomicExch(0), which
// leaves them zero for the next call, and writes the result.
//  - With CHECK (a plan's construction: plugin_abi.h), the index check rides along: the rowptr
//    pass also compares each entry with the next, and every colind entry is read once (4 loads in
//    flight a thread) and compared with [0, cols). A violation's position goes into an accumulator
//    as ~position with atomicMax (so zero, the accumulators' resting value, means none, and the
//    largest word is the first position). rowptr[0] and rowptr[rows] are read by the last block.
//    Only "is there a problem, and which" comes back; check_indices (validate.cu) finds the row
//    and values on the error path. This saves the separate check's launch, copy back and
//    synchronisation (about 20 us of the 21-24 us it cost on a 1M-entry graph, H200): what is
//    left is reading colind once more, about 1 us per 4 MB.
// Inputs: with FEATURES, rowptr valid (monotone from 0 to nnz), as the index check ensures;
// columns may hold any value. With an invalid rowptr the per-row numbers and both hashes still
// equal the host's, the per-entry ones are unspecified, and no read leaves the arrays.
#include <cub/block/block_radix_sort.cuh>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <mutex>

#include "kernels/cuda/common.cuh"
#include "kernels/summary_math.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

namespace sm = sparseport::summary_math;

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarps = kBlock / 32;
constexpr int kBuckets = SPARSEPORT_SUMMARY_BUCKETS;
constexpr int kSortItems = SPARSEPORT_SUMMARY_BLOCK_CAP / kBlock;
static_assert(kSortItems * kBlock == SPARSEPORT_SUMMARY_BLOCK_CAP, "one sort holds a block's cap exactly");
constexpr int kRowsUnroll = 4;  // rowptr loads in flight a thread
constexpr int kTileUnroll = 4;  // colind loads in flight a lane
constexpr int kWindow = 32;     // rows a warp's lanes hold

// Entry tiles: about kTilesPerWarp a warp (so one slow tile is evened out), at least kMinTile
// entries (a tile starts with a ~4-load search), at most kMaxTile. Stream blocks: one wave, at
// most kBlocksPerSm a SM (2048 threads; ptxas: 40 registers without FEATURES, 6 blocks fit, and 64
// with them, 4 fit). First guesses, written
// without a GPU at hand: to be measured on an H200 (tests/cuda/validation_cost times the call).
constexpr int64_t kTilesPerWarp = 2, kMinTile = 256, kMaxTile = 8192, kBlocksPerSm = 8;

// What a launch computes beyond the signature (and the check, which any kind may ride): nothing,
// the row lengths (DEGREES: the maximum and histogram from the rowptr pass alone), or all of
// FEATURES (the row lengths, the entry tiles and the sorted blocks).
constexpr int kSig = 0, kDeg = 1, kAll = 2;

// The global accumulators, one 128-byte line each.
enum Slot : int {
  kRowptrSum,
  kColindSum,
  kMaxDegree,
  kDistanceSum,
  kBlockEntries,
  kBlockDistinct,
  kBlockSegments,
  kDone,  // blocks finished
  kBadRow,    // CHECK: ~(first i with rowptr[i + 1] < rowptr[i]), by atomicMax; 0: none
  kBadEntry,  // CHECK: ~(first e with colind[e] outside [0, cols)); 0: none
  kDegreeHist,
  kDistanceHist = kDegreeHist + kBuckets,
  kSlots = kDistanceHist + kBuckets
};
constexpr int kLineWords = 16;
constexpr size_t kAccBytes = size_t{kSlots} * kLineWords * sizeof(unsigned long long);
static_assert(kAccBytes <= State::kSummaryDeviceBytes, "State::kSummaryDeviceBytes holds the accumulators");
static_assert(sizeof(sparseport_csr_summary) <= State::kSummaryHostBytes, "State::kSummaryHostBytes holds the result");

template <class I>
struct Params {
  const I* rowptr;
  const I* colind;
  int64_t rows, cols, nnz;
  sm::SampleParams rsample, sample;  // the rowptr and colind samples of the signature
  sm::DiagParams diag;
  sm::DistanceParams dist;
  int64_t tile, tiles;       // entries in a warp's tile, and the number of tiles
  int64_t nblocks, sampled;  // 32-row blocks, and those sampled
  int64_t sort_ctas;         // the grid's last sort_ctas blocks sort the sampled blocks (0: none)
  int sort_bits;             // bits of a column in [0, cols) (0: every bit of I)
  bool check;                // CHECK: index contents too
  unsigned long long* acc;   // kSlots lines
  sparseport_csr_summary* out;
};

template <class I>
using Sorter = cub::BlockRadixSort<I, kBlock, kSortItems>;

template <class I>
union Shared {
  struct {
    typename Sorter<I>::TempStorage temp;
    I last[kBlock];  // each thread's largest key after the sort
  } sort;
  struct {
    unsigned long long degree[kBuckets], distance[kBuckets];
  } stream;
};

// The largest value of I (the padding of a full-width sort).
template <class I>
__device__ __forceinline__ I key_max() {
  return static_cast<I>(~0ull >> (65 - 8 * sizeof(I)));
}

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

__device__ __forceinline__ unsigned long long* slot(unsigned long long* acc, int s) { return acc + s * kLineWords; }

// hist[b] += the number of lanes holding b (b < 0: none); one shared atomic per distinct b.
// Every lane of the warp calls it.
__device__ __forceinline__ void warp_count(unsigned long long* hist, int b) {
  const unsigned same = __match_any_sync(kFull, b);
  if (b >= 0 && static_cast<int>(threadIdx.x & 31u) == __ffs(same) - 1)
    atomicAdd(hist + b, static_cast<unsigned long long>(__popc(same)));
}

// Block sums of N values and the block maximum of m; thread 0 gets them. Every thread calls it.
template <int N>
__device__ void block_reduce(unsigned long long (&v)[N], int64_t& m, unsigned long long (*part)[N + 1]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(kFull, v[i], o);
    const int64_t other = __shfl_xor_sync(kFull, m, o);
    m = other > m ? other : m;
  }
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) part[warp][i] = v[i];
    part[warp][N] = static_cast<unsigned long long>(m);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) {
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] += part[w][i];
      const auto other = static_cast<int64_t>(part[w][N]);
      m = other > m ? other : m;
    }
  }
  __syncthreads();
}

// The row holding entry e < nnz: the largest r < rows with rowptr[r] <= e (rowptr valid). A warp
// searches together, 32 probes a step; every lane gets the answer. Each step keeps the probe
// interval the answer lies in, so reads stay inside rowptr whatever its contents.
template <class I>
__device__ int64_t find_row(const I* __restrict__ rowptr, int64_t rows, int64_t e, int lane) {
  int64_t lo = 0, len = rows;  // the answer is in [lo, lo + len)
  while (len > 1) {
    const int64_t step = (len + 31) / 32;
    const int64_t at = lo + lane * step;
    const bool le = at < lo + len && static_cast<int64_t>(__ldg(rowptr + at)) <= e;
    const int below = __popc(__ballot_sync(kFull, le));
    const int64_t next = lo + (below > 0 ? below - 1 : 0) * step;
    len = min64(step, lo + len - next);
    lo = next;
  }
  return lo;
}

// Rows [first, first + 32) of a tile's entries [e0, e0 + span): lane k holds where row first + k
// ends, relative to e0 and clamped to [0, span] (rows past the last end at span), and its diagonal.
struct Window {
  int64_t first;
  int end;
  int64_t diag;
};

template <class I>
__device__ Window load_window(const Params<I>& p, int64_t first, int64_t e0, int span, int lane) {
  Window w{first, span, 0};
  const int64_t row = first + lane;
  if (row < p.rows) {
    const int64_t end = static_cast<int64_t>(__ldg(p.rowptr + row + 1)) - e0;
    w.end = static_cast<int>(end < 0 ? 0 : (end > span ? span : end));
    w.diag = sm::diagonal(row, p.diag);
  }
  return w;
}

// Entries e0 + s + lane of the tile (those below e0 + span), their columns in `col`: each one's
// row from the window (moved on as needed), then its distance counted.
template <class I>
__device__ void entry_step(const Params<I>& p, Window& w, int64_t e0, int span, int s, I col, int lane,
                           unsigned long long* hist, unsigned long long& dsum) {
  const int er = s + lane;
  bool pending = er < span;
  while (true) {
    const int last = __shfl_sync(kFull, w.end, 31);
    const bool here = pending && er < last;
    // The window rows ending at or before er: ends grow with the lane, so a binary search.
    int k = 0;
#pragma unroll
    for (int step = 16; step > 0; step >>= 1)
      if (__shfl_sync(kFull, w.end, k + step - 1) <= er) k += step;
    const int64_t diag = __shfl_sync(kFull, w.diag, k);
    int b = -1;
    if (here) {
      const uint64_t x = sm::distance(static_cast<int64_t>(col), diag);
      dsum += sm::distance_term(x, p.dist);
      b = sm::bucket(x);
    }
    warp_count(hist, b);
    pending = pending && !here;
    const unsigned rest = __ballot_sync(kFull, pending);
    if (rest == 0) return;
    // Entries past the window: move it to the row of the first of them. That row is after the
    // window (rowptr[first + 32] <= e), so the next 32 rows usually hold it; past a run of empty
    // rows a search finds it.
    const int64_t e = e0 + s + (__ffs(rest) - 1);
    w = load_window(p, w.first + kWindow, e0, span, lane);
    if (__shfl_sync(kFull, w.end, 31) <= e - e0) {
      w = load_window(p, find_row(p.rowptr, p.rows, e, lane), e0, span, lane);
      if (__shfl_sync(kFull, w.end, 31) <= e - e0) return;  // an invalid rowptr only: the step is dropped
    }
  }
}

// Tile t of the entries, on one warp.
template <class I>
__device__ void tile_entries(const Params<I>& p, int64_t t, int lane, unsigned long long* hist,
                             unsigned long long& dsum) {
  const int64_t e0 = t * p.tile;
  const int span = static_cast<int>(min64(p.nnz - e0, p.tile));
  Window w = load_window(p, find_row(p.rowptr, p.rows, e0, lane), e0, span, lane);
  for (int s = 0; s < span; s += kTileUnroll * 32) {
    I col[kTileUnroll];
#pragma unroll
    for (int u = 0; u < kTileUnroll; ++u) {
      const int k = s + u * 32 + lane;
      col[u] = k < span ? __ldg(p.colind + e0 + k) : I(0);
    }
#pragma unroll
    for (int u = 0; u < kTileUnroll; ++u)
      if (s + u * 32 < span) entry_step(p, w, e0, span, s + u * 32, col[u], lane, hist, dsum);
  }
}

// A stream block (block of `blocks`): hashes, degrees and entry tiles, then its totals added to
// the accumulators.
template <class I, int K>
__device__ void stream_block(const Params<I>& p, int64_t block, int64_t blocks, Shared<I>& sh,
                             unsigned long long (*part)[4]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (K >= kDeg) {
    for (int t = threadIdx.x; t < kBuckets; t += kBlock) sh.stream.degree[t] = sh.stream.distance[t] = 0;
    __syncthreads();
  }
  const int64_t stride = blocks * kBlock;
  unsigned long long hrow = 0, hcol = 0, dsum = 0;
  int64_t max_degree = 0;

  // With DEGREES, FEATURES or CHECK, rowptr[i], i <= rows, and with CHECK colind[i], i < nnz, in the same
  // loop: the column loads are in flight with the rowptr loads (a second loop after this one cost
  // a second round of memory latency: 8 us on a 1M-row band). The loop runs by warps, so every
  // lane reaches warp_count. The signature alone reads only the samples below.
  const int64_t n = p.rows + 1;
  const int64_t span = K == kSig && !p.check ? 0 : (p.check && p.nnz > n ? p.nnz : n);
  for (int64_t base = block * kBlock + warp * 32; base < span; base += kRowsUnroll * stride) {
    I v[kRowsUnroll], next[kRowsUnroll], col[kRowsUnroll];
#pragma unroll
    for (int u = 0; u < kRowsUnroll; ++u) {
      const int64_t i = base + u * stride + lane;
      v[u] = i < n ? __ldg(p.rowptr + i) : I(0);
      // The next entry: the same lines the warp just read, but one word further (an L1 hit).
      if (K >= kDeg || p.check) next[u] = i < p.rows ? __ldg(p.rowptr + i + 1) : I(0);
      if (p.check) col[u] = i < p.nnz ? __ldg(p.colind + i) : I(0);
    }
#pragma unroll
    for (int u = 0; u < kRowsUnroll; ++u) {
      const int64_t i = base + u * stride + lane;
      if (p.check && i < p.rows && next[u] < v[u]) atomicMax(slot(p.acc, kBadRow), ~static_cast<unsigned long long>(i));
      if (p.check && i < p.nnz && (col[u] < 0 || static_cast<int64_t>(col[u]) >= p.cols))
        atomicMax(slot(p.acc, kBadEntry), ~static_cast<unsigned long long>(i));
      if constexpr (K >= kDeg) {
        const bool row = i < p.rows;
        const int64_t d = static_cast<int64_t>(next[u]) - static_cast<int64_t>(v[u]);
        if (row && d > max_degree) max_degree = d;
        warp_count(sh.stream.degree, row ? sm::bucket(static_cast<uint64_t>(d)) : -1);
      }
    }
  }
  // The signature's samples: each term is the entry with its position (summary.cpp, sample_hash).
  for (int64_t j = block * kBlock + threadIdx.x; j < p.rsample.samples; j += stride) {
    const int64_t i = sm::sample_position(j, p.rsample);
    hrow += sm::hash_term(static_cast<int64_t>(__ldg(p.rowptr + i)), i);
  }
  for (int64_t j = block * kBlock + threadIdx.x; j < p.sample.samples; j += stride) {
    const int64_t e = sm::sample_position(j, p.sample);
    hcol += sm::hash_term(static_cast<int64_t>(__ldg(p.colind + e)), e);
  }
  // The entries, a tile per warp.
  if constexpr (K == kAll) {
    for (int64_t t = block * kWarps + warp; t < p.tiles; t += blocks * kWarps)
      tile_entries(p, t, lane, sh.stream.distance, dsum);
  }

  unsigned long long v[3] = {hrow, hcol, dsum};
  block_reduce<3>(v, max_degree, part);  // also orders the shared histograms before their reads
  if (threadIdx.x == 0) {
    if (v[0] != 0) atomicAdd(slot(p.acc, kRowptrSum), v[0]);
    if (v[1] != 0) atomicAdd(slot(p.acc, kColindSum), v[1]);
    if constexpr (K >= kDeg) {  // DEGREES: no distances were counted (zeros)
      if (v[2] != 0) atomicAdd(slot(p.acc, kDistanceSum), v[2]);
      if (max_degree > 0) atomicMax(reinterpret_cast<long long*>(slot(p.acc, kMaxDegree)), static_cast<long long>(max_degree));
    }
  }
  if constexpr (K >= kDeg) {
    if (threadIdx.x < static_cast<unsigned>(kBuckets)) {
      const unsigned long long dg = sh.stream.degree[threadIdx.x], ds = sh.stream.distance[threadIdx.x];
      if (dg != 0) atomicAdd(slot(p.acc, kDegreeHist + threadIdx.x), dg);
      if (ds != 0) atomicAdd(slot(p.acc, kDistanceHist + threadIdx.x), ds);
    }
  }
}

// Sampled block j: summarize_host's b = j * nblocks / sampled, its first min(entries, cap)
// columns sorted, distinct columns and segments counted.
template <class I>
__device__ void sort_block(const Params<I>& p, int64_t j, Shared<I>& sh, unsigned long long (*part)[3]) {
  const int64_t b = j * p.nblocks / p.sampled;
  const int64_t first = static_cast<int64_t>(__ldg(p.rowptr + 32 * b));
  const int64_t last = static_cast<int64_t>(__ldg(p.rowptr + min64(32 * b + 32, p.rows)));
  int64_t n = min64(last - first, SPARSEPORT_SUMMARY_BLOCK_CAP);
  if (first < 0 || first > p.nnz) n = 0;  // invalid rowptr only: stay inside colind
  n = min64(n, p.nnz - first);
  if (n <= 0) return;  // the same in every thread

  // Keys striped (coalesced loads; a sort does not care where keys start). A narrow sort needs
  // every key in [0, 2^sort_bits); padding with the largest key keeps the n smallest keys, the
  // block's own, first.
  const I narrow_max = p.sort_bits > 0 ? static_cast<I>((1ull << p.sort_bits) - 1) : key_max<I>();
  I key[kSortItems];
  bool outside = false;
#pragma unroll
  for (int i = 0; i < kSortItems; ++i) {
    const int k = threadIdx.x + i * kBlock;
    key[i] = narrow_max;
    if (k < n) {
      key[i] = __ldg(p.colind + first + k);
      outside = outside || key[i] < 0 || key[i] > narrow_max;
    }
  }
  const bool narrow = p.sort_bits > 0 && __syncthreads_or(outside) == 0;
  if (!narrow) {
#pragma unroll
    for (int i = 0; i < kSortItems; ++i)
      if (threadIdx.x + i * kBlock >= n) key[i] = key_max<I>();
  }
  Sorter<I>(sh.sort.temp).Sort(key, 0, narrow ? p.sort_bits : static_cast<int>(8 * sizeof(I)));
  // Blocked now: thread t holds sorted keys 4t .. 4t + 3.
  sh.sort.last[threadIdx.x] = key[kSortItems - 1];
  __syncthreads();
  I prev = threadIdx.x > 0 ? sh.sort.last[threadIdx.x - 1] : key[0];
  unsigned long long v[2] = {0, 0};  // distinct, segments
#pragma unroll
  for (int i = 0; i < kSortItems; ++i) {
    const int64_t k = static_cast<int64_t>(threadIdx.x) * kSortItems + i;
    if (k < n) {
      const bool head = k == 0;
      v[0] += head || key[i] != prev;
      v[1] += head || (key[i] >> 5) != (prev >> 5);
    }
    prev = key[i];
  }
  int64_t unused = 0;
  block_reduce<2>(v, unused, part);
  if (threadIdx.x == 0) {
    atomicAdd(slot(p.acc, kBlockEntries), static_cast<unsigned long long>(n));
    atomicAdd(slot(p.acc, kBlockDistinct), v[0]);
    atomicAdd(slot(p.acc, kBlockSegments), v[1]);
  }
}

// The last block to finish takes the accumulators (leaving them zero) and writes the result
// (DEGREES: FEATURES's other accumulators were not touched, so they give zeros, which the host
// does not pass on).
template <class I, int K>
__device__ void finish(const Params<I>& p, int& last_block) {
  __threadfence();  // this block's atomics before its count
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(slot(p.acc, kDone), 1ull) == gridDim.x - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  const auto take = [&](int s) { return atomicExch(slot(p.acc, s), 0ull); };
  sparseport_csr_summary* o = p.out;
  if (threadIdx.x == 0) {
    o->rows = p.rows;
    o->cols = p.cols;
    o->nnz = p.nnz;
    o->rowptr_hash = sm::hash_finish(take(kRowptrSum), p.rsample.samples);
    o->colind_hash = sm::hash_finish(take(kColindSum), p.sample.samples);
    if constexpr (K >= kDeg) {
      o->max_degree = static_cast<int64_t>(take(kMaxDegree));
      o->distance_sum = take(kDistanceSum);
      o->block_entries = static_cast<int64_t>(take(kBlockEntries));
      o->block_distinct = static_cast<int64_t>(take(kBlockDistinct));
      o->block_segments = static_cast<int64_t>(take(kBlockSegments));
      o->blocks = p.sampled;
    }
    if (p.check) {
      // The order of check_indices' report: where rowptr starts, where it ends, then the first
      // decreasing row, then the first column out of range.
      const unsigned long long bad_row = take(kBadRow), bad_entry = take(kBadEntry);
      int32_t problem = SPARSEPORT_INDEX_OK;
      if (__ldg(p.rowptr) != I(0))
        problem = SPARSEPORT_INDEX_ROWPTR_START;
      else if (static_cast<int64_t>(__ldg(p.rowptr + p.rows)) != p.nnz)
        problem = SPARSEPORT_INDEX_ROWPTR_END;
      else if (bad_row != 0)
        problem = SPARSEPORT_INDEX_ROWPTR_DECREASES;
      else if (bad_entry != 0)
        problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
      o->index_checked = 1;
      o->index_problem = problem;
    }
    atomicExch(slot(p.acc, kDone), 0ull);
  }
  if constexpr (K >= kDeg) {
    if (threadIdx.x < static_cast<unsigned>(kBuckets)) {
      o->degree_hist[threadIdx.x] = static_cast<int64_t>(take(kDegreeHist + threadIdx.x));
      o->distance_hist[threadIdx.x] = static_cast<int64_t>(take(kDistanceHist + threadIdx.x));
    }
  }
}

template <class I, int K>
__global__ void __launch_bounds__(kBlock) summary_kernel(const Params<I> p) {
  __shared__ Shared<I> sh;
  __shared__ unsigned long long part[kWarps][4];
  __shared__ int last_block;
  // The stream blocks first, the sorts after them (below).
  const int64_t stream = static_cast<int64_t>(gridDim.x) - p.sort_ctas;
  bool sorts = false;
  if constexpr (K == kAll) sorts = static_cast<int64_t>(blockIdx.x) >= stream;
  if (sorts) {
    if constexpr (K == kAll) sort_block(p, blockIdx.x - stream, sh, reinterpret_cast<unsigned long long(*)[3]>(&part[0][0]));
  } else {
    stream_block<I, K>(p, blockIdx.x, stream, sh, part);
  }
  finish<I, K>(p, last_block);
}

// Blocks of the kernel one SM holds (at most kBlocksPerSm), asked once per instantiation.
template <class I, int K>
int64_t resident_per_sm() {
  static const int64_t n = [] {
    int b = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, summary_kernel<I, K>, kBlock, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor (CSR summary)");
    return std::clamp<int64_t>(b, 1, kBlocksPerSm);
  }();
  return n;
}

}  // namespace

namespace {

int bit_width(uint64_t x) {
  int w = 0;
  for (; x != 0; x >>= 1) ++w;
  return w;
}

template <class I>
sparseport_csr_summary summarize_typed(const State& s, const sparseport_csr& a, uint32_t want) {
  const bool features = (want & SPARSEPORT_SUMMARY_FEATURES) != 0;
  const bool degrees = !features && (want & SPARSEPORT_SUMMARY_DEGREES) != 0;
  Params<I> p{};
  p.check = (want & SPARSEPORT_SUMMARY_CHECK) != 0;
  p.rowptr = static_cast<const I*>(a.rowptr);
  p.colind = static_cast<const I*>(a.colind);
  p.rows = a.rows;
  p.cols = a.cols;
  p.nnz = a.nnz;
  p.rsample = sm::sample_params(a.rows + 1);
  p.sample = sm::sample_params(a.nnz);

  // Enough stream blocks for one sample a thread, with FEATURES or CHECK for 4 rowptr entries a
  // thread, and with FEATURES for kTilesPerWarp tiles of kMinTile entries a warp; at most one wave
  // (the blocks the SMs hold at once), loops take the rest.
  const int64_t sms = s.info().sms > 0 ? s.info().sms : 1;
  const int64_t per_sm = features  ? resident_per_sm<I, kAll>()
                         : degrees ? resident_per_sm<I, kDeg>()
                                   : resident_per_sm<I, kSig>();
  int64_t need = ceil_div(std::max(p.rsample.samples, p.sample.samples), kBlock);
  if (features || degrees || p.check) need = std::max(need, ceil_div(a.rows + 1, kRowsUnroll * kBlock));
  if (features) need = std::max(need, ceil_div(a.nnz, kMinTile * kWarps * kTilesPerWarp));
  if (p.check) need = std::max(need, ceil_div(a.nnz, kRowsUnroll * kBlock));
  const int64_t blocks = std::clamp<int64_t>(need, 1, per_sm * sms);
  if (features) {
    p.diag = sm::diag_params(a.rows, a.cols);
    p.dist = sm::distance_params(a.cols);
    if (a.nnz > 0) {
      const int64_t unit = kTileUnroll * 32;
      const int64_t tile = ceil_div(ceil_div(a.nnz, kTilesPerWarp * kWarps * blocks), unit) * unit;
      p.tile = std::clamp(tile, kMinTile, kMaxTile);
      p.tiles = ceil_div(a.nnz, p.tile);
    }
    p.nblocks = ceil_div(a.rows, 32);
    p.sampled = std::min<int64_t>(p.nblocks, SPARSEPORT_SUMMARY_BLOCKS);
    p.sort_ctas = a.nnz > 0 ? p.sampled : 0;
    const int bits = std::max(1, bit_width(a.cols > 1 ? static_cast<uint64_t>(a.cols - 1) : 0));
    p.sort_bits = bits < static_cast<int>(8 * sizeof(I)) - 1 ? bits : 0;
  }

  std::lock_guard<std::mutex> lock(s.summary_mutex());
  const auto [dev, host] = s.summary_words();
  p.acc = static_cast<unsigned long long*>(dev);
  // The last block writes the result straight into the pinned host words (cudaMallocHost memory is
  // mapped at the same address on every device under unified addressing, which 64-bit processes
  // always have): no copy back after the kernel. On an H100, sampled subgraphs of 50k entries, the
  // call took 14-18 us against 20-22 us with the copy (benchmarks/results/2026-12-06-h100-summary-stage.md).
  p.out = static_cast<sparseport_csr_summary*>(host);
  const auto grid = static_cast<unsigned>(p.sort_ctas + blocks);
  if (features)
    summary_kernel<I, kAll><<<grid, kBlock, 0, s.stream()>>>(p);
  else if (degrees)
    summary_kernel<I, kDeg><<<grid, kBlock, 0, s.stream()>>>(p);
  else
    summary_kernel<I, kSig><<<grid, kBlock, 0, s.stream()>>>(p);
  check_launch("summarize_csr");
  // The signature alone is the first 40 bytes; DEGREES, FEATURES and CHECK fill fields further on.
  const size_t bytes =
      features || degrees || p.check ? sizeof(sparseport_csr_summary) : offsetof(sparseport_csr_summary, max_degree);
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (CSR summary)");
  sparseport_csr_summary r{};
  std::memcpy(&r, host, bytes);
  // Only what was asked: the result words may hold an earlier call's other fields.
  if (!features && (degrees || p.check)) {
    sparseport_csr_summary sig{};
    std::memcpy(&sig, &r, offsetof(sparseport_csr_summary, max_degree));
    if (degrees) {
      sig.max_degree = r.max_degree;
      std::memcpy(sig.degree_hist, r.degree_hist, sizeof sig.degree_hist);
    }
    sig.index_checked = r.index_checked;
    sig.index_problem = r.index_problem;
    r = sig;
  }
  if (!p.check) r.index_checked = r.index_problem = 0;
  return r;
}

}  // namespace

sparseport_csr_summary summarize_csr(const State& s, const sparseport_csr& a, uint32_t want) {
  sparseport_csr_summary r{};
  dispatch_index(a.index_type, [&](auto i) { r = summarize_typed<decltype(i)>(s, a, want); });
  return r;
}

void prepare_summary(const State& s) {
  // The occupancy queries load the signature kernels' module (lazy loading would do it on their
  // first launch, inside a new process's first cache lookup) and allocate the result words.
  (void)resident_per_sm<int32_t, kSig>();
  (void)resident_per_sm<int64_t, kSig>();
  void* const dev = s.summary_words().first;
  // Then one launch of each kind a new matrix's first call makes with 32-bit indices (a cache hit
  // or a plan: SIGNATURE | CHECK; a shape class: with DEGREES), on a two-row matrix placed in the
  // device words past the accumulators: a process's first launch of a kernel costs more than the
  // next ones, and on an H100 a cache hit's summary in a new process took 42-69 us against 15-18 us
  // in a warm one (benchmarks/results/2026-12-06-h100-summary-stage.md). Only this state's stream is
  // waited for (no allocation, no device-wide synchronisation).
  static const int32_t tiny[] = {0, 1, 3, /* colind */ 1, 0, 1};
  static_assert(kAccBytes + sizeof tiny <= State::kSummaryDeviceBytes, "the two-row matrix fits past the accumulators");
  auto* rows = reinterpret_cast<int32_t*>(static_cast<char*>(dev) + kAccBytes);
  check(cudaMemcpyAsync(rows, tiny, sizeof tiny, cudaMemcpyHostToDevice, s.stream()), "cudaMemcpyAsync (CSR summary warm-up)");
  const sparseport_csr a{2, 2, 3, rows, rows + 3, nullptr, SPARSEPORT_I32, SPARSEPORT_F32};
  for (const uint32_t want : {SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK,
                              SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK | SPARSEPORT_SUMMARY_DEGREES})
    (void)summarize_typed<int32_t>(s, a, want);
}

}  // namespace sparseport::cuda
