// SPDX-License-Identifier: Apache-2.0
// spmm.tc_window: SpMM on the tensor cores for f16 and bf16 values (float32 accumulation), sum and
// mean, over the condensed row-window format of tc_window_format.hpp (8-row windows, their distinct
// columns compacted into blocks of 16, dense 8 x 16 tiles, heavy windows split into parts of 4 to 32
// blocks, the length chosen per call from F by tc_part_blocks); spmm.tc_window_tf32 runs float32
// values the same way as TF32 (m16n8k8, 32-bit tiles), only where the caller allows TF32. The format
// is built on the GPU once per plan (a radix sort of (window, column, row) keys, scans, a scatter) and
// held by the plan cache; every call re-reads A's values into the tiles (A's values may change
// between calls at the same address, as a GAT layer's do; the structure may not, as for every plan
// here), then one warp per (part, feature slice) runs the mma with the window on the n = 8 side.
//
// Why this shape:
//  - The CUDA-core 16-bit kernels are bound by chains of dependent gathers, not by bytes: 16-bit SpMM
//    ran at 1.06x of float32 (issue 33), so halving the bytes bought nothing. Here each lane of a warp
//    loads its features of a block's 16 B rows straight into the registers the mma reads, with the
//    next block's loads in flight while the current block's mma run; a part of n blocks is n
//    overlapped round trips. An earlier version staged the rows through shared memory with cp.async,
//    one warp per part over all of F: 18 % occupancy and 0.27-1.16x cuSPARSE on an H200; this one
//    1.1-1.4x faster (benchmarks/results/2026-12-04-h200-issue33-tc-registers.md), still bound by the
//    gathers in flight per SM (docs/tc_window_next.md).
//  - Bytes per output element: each block moves 16 F x 2 bytes of B (mostly L2 hits on graphs with
//    reuse), 256 bytes of tile and 64 (int32) or 128 (int64) of column indices, for 8 x F outputs,
//    i.e. 4 + 40 / F bytes of B per output per block; CSR row_warp moves 2 bytes of B per entry and
//    output. With s slot columns per window of e entries the B bytes fall by e / s (the column reuse
//    inside 8 rows; ~1 on graphs without locality, 2-8 on meshes and reordered graphs) and the
//    structure bytes rise from 6 a entry to (256 + 64) / 16 = 20 a slot column.
//  - mma throughput is not the limit: a block is 16 x 8 x 16 x (F / 16) MACs = 256 F flops for 32 F
//    bytes of B, 8 flop/byte, where an H200 offers ~200 dense 16-bit mma flop per byte of HBM; even a
//    tile 1/8 full leaves the tensor cores idle most of the time. The kernel is bound by the gathers
//    and their latency, as FlashSparse's is.
//  - C is written once: a window of one part from its accumulators (alpha, beta, mean and one rounding
//    to 16 bits in the epilogue); a split window through a float32 scratch row block that its parts add
//    into with L2 reductions (red, 16-byte vectors on sm_90: red_piece), the last part to finish (a
//    ticket, the threadFenceReduction pattern, as hub_split's CTAs) writing C from it. FlashSparse adds
//    into C with atomics and leaves C's zeroing to the caller: that cannot give alpha * AB + beta * C,
//    and 16-bit atomics would round every partial. The float32 reductions make split windows' sums
//    order-dependent in their last bits: not deterministic (not flagged SPARSEPORT_VARIANT_DETERMINISTIC).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernels/cuda/tc_window_format.hpp"
#include "kernels/cuda/values16.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

constexpr int kTcWarps = 4;  // warps a CTA

// The bits of one value in the tiles and in B: 16 for f16 / bf16, 32 for float32 (TF32).
template <class S>
using tc_word_t = std::conditional_t<is16_v<S>, uint16_t, uint32_t>;

struct TcPart {
  int64_t window;
  int64_t first_block;
  int32_t blocks;  // 0 for an empty window
  int32_t split;   // the window's accumulator slot when it has several parts, else -1
  int32_t nparts;  // parts of the window
  int32_t pad;
};

// The parts of one part length, and the plan's note when a call runs them.
struct TcParts {
  const TcPart* parts = nullptr;
  int64_t n = 0;      // parts
  int64_t split = 0;  // split windows (scratch row blocks and tickets)
  std::string note;
};

// The part length depends on F (tc_part_blocks), the plan does not: its key has no F, and the sort,
// the scans, the tiles and the columns are the same at every F. So the build makes the part list
// for each of the four lengths and each call picks one. A length at which no window splits shares the
// list of the length below it; otherwise the lists cost up to 4 x 32 bytes a window (a window of one
// block: 128 bytes beside its 320 of tiles and columns; the split windows' parts add ~1.9x those of
// length 4). Simpler than building a length's parts on its first call: the plan stays immutable once
// built, which the calls that share it through the plan cache, from any thread, rely on.
class TcPlan : public Plan {
 public:
  explicit TcPlan(const State& s) : state_(&s) {}
  ~TcPlan() override {
    for (void* p : {cols_, tiles_, pos_, clean_acc_, clean_tickets_})
      if (p != nullptr) (void)cudaFreeAsync(p, state_->stream());
    for (void* p : parts_mem_)
      if (p != nullptr) (void)cudaFreeAsync(p, state_->stream());
  }
  void* cols_ = nullptr;   // I[blocks * 16], -1 for an empty slot column
  void* tiles_ = nullptr;  // tc_word_t[blocks * 128], tc_frag_pos order
  void* pos_ = nullptr;    // int64[nnz]: each entry's place in tiles_ (null for a pattern)
  void* parts_mem_[kTcPartLengths] = {};  // TcPart[parts], owned (null where shared with a shorter length)
  TcParts by_length_[kTcPartLengths];     // parts of tc_part_length(i) blocks
  TcPartCounts counts_;                   // what tc_part_blocks chooses from
  // The split windows' scratch sums and tickets kept with the plan, put back to zero by the warps
  // that read them (the device summary's pattern, runtime.hpp): a call then sets nothing (two
  // memsets fewer a call). Made by the plan's first call that splits windows, of that call's size
  // (its windows x 8 rows x its slices' features, and a ticket a slice), so the plan keeps no more
  // than that call took as scratch; a later call that needs more takes scratch of its own and
  // zeroes it, so the buffer never grows and a CUDA graph captured with it stays valid as long as
  // the plan. Calls share the plan from any thread but run in the order of the state's one stream,
  // so one call's reads and zeroing end before the next call's sums begin; the mutex guards only
  // the first call's allocation.
  std::mutex clean_mu_;
  void* clean_acc_ = nullptr;      // float[clean_places_]
  void* clean_tickets_ = nullptr;  // unsigned[clean_ticket_count_]
  size_t clean_places_ = 0, clean_ticket_count_ = 0;
  int64_t windows_ = 0, blocks_ = 0, slots_ = 0;

 private:
  const State* state_;
};

template <class T>
T* plan_alloc(const State& s, void*& slot, int64_t n, const char* what) {
  check(cudaMallocFromPoolAsync(&slot, static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T), s.pool(), s.stream()),
        what);
  return static_cast<T*>(slot);
}

// ---- the build ---------------------------------------------------------------------------------

// key = (window, column, row in window), one warp per row (lanes over its entries); idx = entry.
template <class I>
__global__ void __launch_bounds__(kBlock)
    tc_keys_kernel(const I* rowptr, const I* colind, int64_t m, int colbits, unsigned long long* keys, int64_t* idx) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < m; r += nwarps) {
    const unsigned long long hi = (static_cast<unsigned long long>(r / kTcWindowRows) << (colbits + 3)) |
                                  static_cast<unsigned long long>(r % kTcWindowRows);
    for (int64_t e = static_cast<int64_t>(rowptr[r]) + lane; e < static_cast<int64_t>(rowptr[r + 1]); e += 32) {
      keys[e] = hi | (static_cast<unsigned long long>(colind[e]) << 3);
      idx[e] = e;
    }
  }
}

// Whether sorted position i starts a slot column: the first of its (window, column), or a repeat of
// the previous entry's (row, column).
__device__ __forceinline__ int64_t starts_slot(const unsigned long long* keys, int64_t i) {
  if (i == 0) return 1;
  const unsigned long long k = keys[i], q = keys[i - 1];
  return ((k >> 3) != (q >> 3) || k == q) ? 1 : 0;
}

__global__ void __launch_bounds__(kBlock) tc_flags_kernel(const unsigned long long* keys, int64_t n, int64_t* x) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i <= n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = i < n ? starts_slot(keys, i) : 0;
}

// Per window: its blocks (windows + 1 long, scanned next).
template <class I>
__global__ void __launch_bounds__(kBlock)
    tc_window_blocks_kernel(const I* rowptr, int64_t m, int64_t windows, const int64_t* slot_scan, int64_t* nb) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w <= windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (w == windows) {
      nb[w] = 0;
      continue;
    }
    const int64_t e0 = rowptr[w * kTcWindowRows];
    const int64_t e1 = rowptr[(w + 1) * kTcWindowRows < m ? (w + 1) * kTcWindowRows : m];
    const int64_t slots = slot_scan[e1] - slot_scan[e0];
    nb[w] = (slots + kTcBlockCols - 1) / kTcBlockCols;
  }
}

// Per window, from its blocks (nb_scan, scanned): parts of at most part_blocks, whether split (each
// array windows + 1 long, scanned next).
__global__ void __launch_bounds__(kBlock)
    tc_window_parts_kernel(int64_t windows, const int64_t* nb_scan, int part_blocks, int64_t* np, int64_t* ns) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w <= windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (w == windows) {
      np[w] = ns[w] = 0;
      continue;
    }
    const int64_t blocks = nb_scan[w + 1] - nb_scan[w];
    const int64_t parts = blocks > part_blocks ? (blocks + part_blocks - 1) / part_blocks : 1;
    np[w] = parts;
    ns[w] = parts > 1 ? 1 : 0;
  }
}

// For every part length tc_part_length(i): the parts of split windows and the split windows, and the
// longest window's blocks, from the windows' blocks (nb_scan, scanned); each warp's sums one 64-bit
// atomic a counter. counts (zeroed): split parts [kTcPartLengths], split windows [kTcPartLengths], the
// longest window. A grid of at most 1024 CTAs (grid-stride), so at most 74k atomics on 9 words.
__global__ void __launch_bounds__(kBlock)
    tc_part_counts_kernel(int64_t windows, const int64_t* nb_scan, unsigned long long* counts) {
  unsigned long long sp[kTcPartLengths] = {}, sw[kTcPartLengths] = {}, longest = 0;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t nb = nb_scan[w + 1] - nb_scan[w];
    longest = nb > static_cast<int64_t>(longest) ? static_cast<unsigned long long>(nb) : longest;
#pragma unroll
    for (int i = 0; i < kTcPartLengths; ++i) {
      const int64_t P = tc_part_length(i);
      if (nb > P) sp[i] += static_cast<unsigned long long>((nb + P - 1) / P), sw[i] += 1;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
#pragma unroll
    for (int i = 0; i < kTcPartLengths; ++i) {
      sp[i] += __shfl_down_sync(0xffffffffu, sp[i], o);
      sw[i] += __shfl_down_sync(0xffffffffu, sw[i], o);
    }
    const unsigned long long l = __shfl_down_sync(0xffffffffu, longest, o);
    longest = l > longest ? l : longest;
  }
  if ((threadIdx.x & 31u) != 0) return;
#pragma unroll
  for (int i = 0; i < kTcPartLengths; ++i) {
    if (sp[i] != 0) atomicAdd(counts + i, sp[i]);
    if (sw[i] != 0) atomicAdd(counts + kTcPartLengths + i, sw[i]);
  }
  if (longest != 0) atomicMax(counts + 2 * kTcPartLengths, longest);
}

// Sorted position i: its slot column's index (and the column, written by the slot's first entry),
// and its tile element (a pattern's 1 written now; otherwise the place, for the value refresh).
template <class I, class W>
__global__ void __launch_bounds__(kBlock)
    tc_scatter_kernel(const unsigned long long* keys, const int64_t* perm, int64_t n, const int64_t* slot_scan,
                      const I* rowptr, const int64_t* block_scan, int colbits, I* cols, W* tiles, int64_t* pos,
                      W one) {
  const unsigned long long colmask = (1ull << colbits) - 1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const unsigned long long k = keys[i];
    const int r = static_cast<int>(k & 7u);
    const int64_t col = static_cast<int64_t>((k >> 3) & colmask);
    const int64_t w = static_cast<int64_t>(k >> (colbits + 3));
    const int64_t u = starts_slot(keys, i);
    const int64_t slot = slot_scan[i] + u - 1;  // joins the slot column opened before it when u == 0
    const int64_t rank = slot - slot_scan[rowptr[w * kTcWindowRows]];
    const int64_t block = block_scan[w] + rank / kTcBlockCols;
    const int s = static_cast<int>(rank % kTcBlockCols);
    if (u != 0) cols[block * kTcBlockCols + s] = static_cast<I>(col);
    const int64_t p = block * kTcTileValues + tc_frag_pos(r, s);
    if (pos != nullptr)
      pos[perm[i]] = p;
    else
      tiles[p] = one;
  }
}

__global__ void __launch_bounds__(kBlock)
    tc_parts_kernel(int64_t windows, const int64_t* nb_scan, const int64_t* np_scan, const int64_t* ns_scan,
                    int part_blocks, TcPart* parts) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b0 = nb_scan[w], nb = nb_scan[w + 1] - b0;
    const int64_t p0 = np_scan[w], np = np_scan[w + 1] - p0;
    for (int64_t q = 0; q < np; ++q) {
      TcPart t;
      t.window = w;
      t.first_block = b0 + q * part_blocks;
      const int64_t left = nb - q * part_blocks;
      t.blocks = static_cast<int32_t>(left < part_blocks ? left : part_blocks);
      t.split = np > 1 ? static_cast<int32_t>(ns_scan[w]) : -1;
      t.nparts = static_cast<int32_t>(np);
      t.pad = 0;
      parts[p0 + q] = t;
    }
  }
}

// float32 -> TF32 by rounding to nearest (ties away from zero), as cuBLAS's TF32 mode does; the
// tensor core would otherwise drop the low 13 bits (truncation, twice the error).
__device__ __forceinline__ unsigned to_tf32(unsigned x) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
#else
  return x;
#endif
}

// Every call: the tiles get A's values of now (16-bit bits copied as they are, float32 rounded to
// TF32 once here rather than in every warp that reads the tile).
template <class W>
__global__ void __launch_bounds__(kBlock) tc_refresh_kernel(const W* values, const int64_t* pos, int64_t nnz, W* tiles) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nnz;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (sizeof(W) == 4)
      tiles[pos[e]] = to_tf32(values[e]);
    else
      tiles[pos[e]] = values[e];
  }
}

void read_back(const State& s, const int64_t* p, int64_t* host) {
  check(cudaMemcpyAsync(host, p, sizeof *host, cudaMemcpyDeviceToHost, s.stream()), "cudaMemcpyAsync (tc_window sizes)");
}

// A call's part length, as the index i of tc_part_length(i): SPARSEPORT_TC_PART_BLOCKS (4, 8, 16 or 32)
// where set, as SPARSEPORT_TC_SLICE sets the slice (one plan timed and counted at every part length),
// else tc_part_blocks from the plan's counts, F and the slices. Read at every call.
int part_length_index(const TcPartCounts& c, int64_t F, int64_t slices, int sms) {
  int P = 0;
  if (const char* e = std::getenv("SPARSEPORT_TC_PART_BLOCKS"); e != nullptr && *e != '\0') {
    const int v = std::atoi(e);
    if (v == 4 || v == 8 || v == 16 || v == 32) P = v;
  }
  if (P == 0) P = tc_part_blocks(c, F, slices, sms);
  int i = 0;
  while (i + 1 < kTcPartLengths && tc_part_length(i) < P) ++i;
  return i;
}

template <class I, class S>
std::shared_ptr<TcPlan> build_plan(const State& s, const sparseport_csr& a) {
  const int64_t m = a.rows, nnz = a.nnz;
  const int64_t windows = (m + kTcWindowRows - 1) / kTcWindowRows;
  const int colbits = tc_bits_for(std::max<int64_t>(a.cols, 1));
  const int bits = tc_key_bits(m, a.cols);
  const I* rowptr = static_cast<const I*>(a.rowptr);
  auto plan = std::make_shared<TcPlan>(s);
  plan->windows_ = windows;

  // Sort the entries by (window, column, row): 16 + 16 bytes a entry of temporaries, the sort's own.
  Scratch keys(s, static_cast<size_t>(nnz) * 8), keys_sorted(s, static_cast<size_t>(nnz) * 8);
  Scratch idx(s, static_cast<size_t>(nnz) * 8), perm(s, static_cast<size_t>(nnz) * 8);
  Scratch slot_scan(s, static_cast<size_t>(nnz + 1) * 8);
  Scratch nb(s, static_cast<size_t>(windows + 1) * 8), np(s, static_cast<size_t>(windows + 1) * 8),
      ns(s, static_cast<size_t>(windows + 1) * 8);
  tc_keys_kernel<I><<<blocks_for(m * 32), kBlock, 0, s.stream()>>>(rowptr, static_cast<const I*>(a.colind), m, colbits,
                                                                   keys.as<unsigned long long>(), idx.as<int64_t>());
  check_launch("spmm.tc_window (keys)");
  sort_pairs(s, keys.get(), keys_sorted.get(), idx.get(), perm.get(), nnz, bits, SPARSEPORT_I64);
  const auto* sk = keys_sorted.as<unsigned long long>();
  tc_flags_kernel<<<blocks_for(nnz + 1), kBlock, 0, s.stream()>>>(sk, nnz, slot_scan.as<int64_t>());
  check_launch("spmm.tc_window (slot flags)");
  exclusive_scan_inplace(s, slot_scan.get(), nnz + 1, SPARSEPORT_I64);
  tc_window_blocks_kernel<I><<<blocks_for(windows + 1), kBlock, 0, s.stream()>>>(
      rowptr, m, windows, slot_scan.as<int64_t>(), nb.as<int64_t>());
  check_launch("spmm.tc_window (window blocks)");
  exclusive_scan_inplace(s, nb.get(), windows + 1, SPARSEPORT_I64);
  // One wait: the slot columns, the blocks and every part length's counts, which size the arrays.
  constexpr int kCounts = 2 * kTcPartLengths + 1;
  Scratch counts(s, kCounts * sizeof(unsigned long long));
  check(cudaMemsetAsync(counts.get(), 0, kCounts * sizeof(unsigned long long), s.stream()),
        "cudaMemsetAsync (tc_window part counts)");
  tc_part_counts_kernel<<<std::min(blocks_for(windows), 1024u), kBlock, 0, s.stream()>>>(
      windows, nb.as<int64_t>(), counts.as<unsigned long long>());
  check_launch("spmm.tc_window (part counts)");
  int64_t sizes[2] = {0, 0};
  unsigned long long hc[kCounts] = {};
  read_back(s, slot_scan.as<int64_t>() + nnz, &sizes[0]);
  read_back(s, nb.as<int64_t>() + windows, &sizes[1]);
  check(cudaMemcpyAsync(hc, counts.get(), sizeof hc, cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (tc_window part counts)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (tc_window blocks)");
  plan->slots_ = sizes[0];
  plan->blocks_ = sizes[1];
  plan->counts_.blocks = plan->blocks_;
  plan->counts_.max_window_blocks = static_cast<int64_t>(hc[2 * kTcPartLengths]);
  for (int i = 0; i < kTcPartLengths; ++i) {
    TcParts& q = plan->by_length_[i];
    plan->counts_.split_parts[i] = static_cast<int64_t>(hc[i]);
    q.split = static_cast<int64_t>(hc[kTcPartLengths + i]);
    q.n = windows - q.split + plan->counts_.split_parts[i];  // one part a window that does not split
  }
  // The most parts and split windows are those of the shortest length.
  if (plan->by_length_[0].n > int64_t{2147483647} * kTcWarps || plan->by_length_[0].split > 2147483647)
    throw Unsupported("spmm.tc_window: A has " + std::to_string(plan->by_length_[0].n) +
                      " parts, more than one launch of 2^31 - 1 CTAs takes");

  I* cols = plan_alloc<I>(s, plan->cols_, plan->blocks_ * kTcBlockCols, "cudaMallocFromPoolAsync (tc_window columns)");
  using W = tc_word_t<S>;
  auto* tiles = plan_alloc<W>(s, plan->tiles_, plan->blocks_ * kTcTileValues, "cudaMallocFromPoolAsync (tc_window tiles)");
  int64_t* pos = nullptr;
  if (a.values != nullptr) pos = plan_alloc<int64_t>(s, plan->pos_, nnz, "cudaMallocFromPoolAsync (tc_window places)");
  check(cudaMemsetAsync(cols, 0xff, static_cast<size_t>(plan->blocks_) * kTcBlockCols * sizeof(I), s.stream()),
        "cudaMemsetAsync (tc_window columns)");  // -1: an empty slot column
  check(cudaMemsetAsync(tiles, 0, static_cast<size_t>(plan->blocks_) * kTcTileValues * sizeof(W), s.stream()),
        "cudaMemsetAsync (tc_window tiles)");  // +0 in f16, bf16 and float32
  S one_s = S(1.0f);
  W one = 0;
  std::memcpy(&one, &one_s, sizeof one);
  tc_scatter_kernel<I, W><<<blocks_for(nnz), kBlock, 0, s.stream()>>>(sk, perm.as<int64_t>(), nnz, slot_scan.as<int64_t>(),
                                                                   rowptr, nb.as<int64_t>(), colbits, cols, tiles, pos,
                                                                   one);
  check_launch("spmm.tc_window (scatter)");
  // The part lists, shortest first; np and ns are reused (stream order) by each length.
  const std::string head = "spmm.tc_window plan: windows " + std::to_string(windows) + ", slot columns " +
                           std::to_string(plan->slots_) + ", blocks " + std::to_string(plan->blocks_);
  for (int i = 0; i < kTcPartLengths; ++i) {
    TcParts& q = plan->by_length_[i];
    const int P = tc_part_length(i);
    q.note = head + ", parts " + std::to_string(q.n) + ", split windows " + std::to_string(q.split) +
             ", part blocks " + std::to_string(P);
    if (i > 0 && plan->by_length_[i - 1].split == 0) {  // no window splits: the same parts as the length below
      q.parts = plan->by_length_[i - 1].parts;
      continue;
    }
    tc_window_parts_kernel<<<blocks_for(windows + 1), kBlock, 0, s.stream()>>>(windows, nb.as<int64_t>(), P,
                                                                               np.as<int64_t>(), ns.as<int64_t>());
    check_launch("spmm.tc_window (window parts)");
    for (Scratch* x : {&np, &ns}) exclusive_scan_inplace(s, x->get(), windows + 1, SPARSEPORT_I64);
    auto* parts = plan_alloc<TcPart>(s, plan->parts_mem_[i], q.n, "cudaMallocFromPoolAsync (tc_window parts)");
    tc_parts_kernel<<<blocks_for(windows), kBlock, 0, s.stream()>>>(windows, nb.as<int64_t>(), np.as<int64_t>(),
                                                                    ns.as<int64_t>(), P, parts);
    check_launch("spmm.tc_window (parts)");
    q.parts = parts;
  }
  plan->watch(a.rowptr, static_cast<size_t>(m + 1) * sizeof(I));
  plan->watch(a.colind, static_cast<size_t>(nnz) * sizeof(I));
  if (log_enabled())
    for (const TcParts& q : plan->by_length_) std::fprintf(stderr, "[sparseport cuda] %s\n", q.note.c_str());
  return plan;
}

// ---- the kernel --------------------------------------------------------------------------------

// d += a (16 x 16, row) * b (16 x 8, col): 16-bit inputs, float32 accumulators.
template <class S>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)d, (void)a, (void)b0, (void)b1;
  __trap();
#endif
}

// d += a (16 x 8, row) * b (8 x 8, col): TF32 inputs (float32 bits rounded to 10 mantissa bits),
// float32 accumulators.
__device__ __forceinline__ void mma1688_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)d, (void)a, (void)b0, (void)b1;
  __trap();
#endif
}

template <class I, class S>
struct TcParams {
  using W = tc_word_t<S>;
  int64_t m = 0, F = 0;
  const I* rowptr = nullptr;
  const W* b = nullptr;  // B's values as bits
  int64_t ldb = 0;
  S* c = nullptr;
  int64_t ldc = 0;
  const I* cols = nullptr;
  const W* tiles = nullptr;
  const TcPart* parts = nullptr;
  int64_t nparts = 0;
  int64_t slices = 1;            // warps a part: feature slices of 16 T
  float* acc = nullptr;          // split windows: [split][8][acc_ld]
  int64_t acc_ld = 0;            // slices x 16 T: every lane's 2 T features have a place, past F too
  unsigned* tickets = nullptr;   // split windows: [split][slices] warps finished
  Finish<float> fin{};
  bool bvec = false;             // B's rows 16-byte aligned: vector loads
  bool cvec = false;             // C's rows 16-byte aligned: vector stores
  bool clean = false;            // acc and tickets are the plan's: the warps that read them zero them
  bool accvec = false;           // the scratch 16-byte aligned: vector reductions (sm_90)
};

// The slot columns of block `blk` whose tile values lane (g, t) holds (tc_frag_pos): slots 2t,
// 2t + 1, 2t + 8, 2t + 9, as two 2-element loads.
template <class I, class S>
__device__ __forceinline__ void load_cols(const TcParams<I, S>& p, int64_t blk, int t, int64_t (&c)[4]) {
  const I* q = p.cols + blk * kTcBlockCols + 2 * t;
  if constexpr (sizeof(I) == 4) {
    const int2 lo = __ldg(reinterpret_cast<const int2*>(q)), hi = __ldg(reinterpret_cast<const int2*>(q + 8));
    c[0] = lo.x, c[1] = lo.y, c[2] = hi.x, c[3] = hi.y;
  } else {
    const longlong2 lo = __ldg(reinterpret_cast<const longlong2*>(q)), hi = __ldg(reinterpret_cast<const longlong2*>(q + 8));
    c[0] = lo.x, c[1] = lo.y, c[2] = hi.x, c[3] = hi.y;
  }
}

// This lane's NW 32-bit words of B's row c from feature fl on (2 T features: T words of 16-bit
// pairs, or 2 T floats); zeros for an empty slot column (c < 0) and past F. One 4-, 8- or 16-byte
// load per 16 bytes where B's rows are aligned (p.bvec) and all 2 T features lie inside F.
template <int NW, class I, class S>
__device__ __forceinline__ void load_row(const TcParams<I, S>& p, int64_t c, int64_t fl, bool full, unsigned (&w)[NW]) {
  using W = tc_word_t<S>;
#pragma unroll
  for (int i = 0; i < NW; ++i) w[i] = 0u;
  if (c < 0) return;
  const W* src = p.b + c * p.ldb + fl;
  if (p.bvec && full) {
    if constexpr (NW == 1) {
      w[0] = __ldg(reinterpret_cast<const unsigned*>(src));
    } else if constexpr (NW == 2) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(src));
      w[0] = v.x, w[1] = v.y;
    } else {
#pragma unroll
      for (int q = 0; q < NW / 4; ++q) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(src) + q);
        w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
      }
    }
    return;
  }
  constexpr int kPer = 4 / static_cast<int>(sizeof(W));  // elements a word
#pragma unroll
  for (int e = 0; e < NW * kPer; ++e)
    if (fl + e < p.F) w[e / kPer] |= static_cast<unsigned>(__ldg(src + e)) << (16 * (e % kPer));
}

// The tile values lane `lane` holds of block blk (slots 2t, 2t + 1, 2t + 8, 2t + 9 of window row g):
// one 8-byte (16-bit) or 16-byte (TF32) load.
template <class I, class S>
__device__ __forceinline__ uint4 load_tile(const TcParams<I, S>& p, int64_t blk, int lane) {
  if constexpr (is16_v<S>) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p.tiles + blk * kTcTileValues) + lane);
    return make_uint4(v.x, v.y, 0u, 0u);
  } else {
    return __ldg(reinterpret_cast<const uint4*>(p.tiles + blk * kTcTileValues) + lane);
  }
}

// One block's products into the T feature tiles' accumulators. Lane (g, t) holds, from the B rows of
// slots 2t, 2t + 1, 2t + 8, 2t + 9 (r[0..3]), features fl + [0, 2 T). Mma row m = g of tile j is
// feature fl + 2 j and m = g + 8 is fl + 2 j + 1: a permutation of the 16 features of a tile that
// lets each lane read its features of a row in one load (the epilogue writes them back in order).
//  - 16-bit, m16n8k16: a0 = {A[g][2t], A[g][2t+1]} = the low halves of word j of r[0] and r[1], a1
//    the high halves (m = g + 8), a2 / a3 the same from r[2], r[3] (k = 2t + 8, 2t + 9); the tile's
//    b0 / b1 are its 8 bytes.
//  - TF32, m16n8k8, two k-steps a block: within a step, k = t is slot 2t and k = t + 4 slot 2t + 1
//    (step 2: 2t + 8, 2t + 9). Any bijection of k works when the A and B fragments use the same one,
//    and this one gives TF32 the 16-bit format's tile layout: lane (g, t) holds the same 4 values.
template <int T, class S, int NW>
__device__ __forceinline__ void mma_block(float (&acc)[T][4], const unsigned (&r)[4][NW], const uint4& tf) {
  if constexpr (is16_v<S>) {
#pragma unroll
    for (int j = 0; j < T; ++j) {
      const unsigned a[4] = {__byte_perm(r[0][j], r[1][j], 0x5410), __byte_perm(r[0][j], r[1][j], 0x7632),
                             __byte_perm(r[2][j], r[3][j], 0x5410), __byte_perm(r[2][j], r[3][j], 0x7632)};
      mma16816<S>(acc[j], a, tf.x, tf.y);
    }
  } else {
#pragma unroll
    for (int j = 0; j < T; ++j) {
      const unsigned a0[4] = {to_tf32(r[0][2 * j]), to_tf32(r[0][2 * j + 1]), to_tf32(r[1][2 * j]),
                              to_tf32(r[1][2 * j + 1])};
      mma1688_tf32(acc[j], a0, tf.x, tf.y);
      const unsigned a1[4] = {to_tf32(r[2][2 * j]), to_tf32(r[2][2 * j + 1]), to_tf32(r[3][2 * j]),
                              to_tf32(r[3][2 * j + 1])};
      mma1688_tf32(acc[j], a1, tf.z, tf.w);
    }
  }
}

// 2 T finished values of one row of C from feature fl on: one vector store where C's rows are
// aligned, beta is 0 and all lie inside F; else one value at a time.
template <int T, class I, class S>
__device__ __forceinline__ void store_row(const TcParams<I, S>& p, int64_t row, int64_t fl, bool full,
                                          const float (&v)[2 * T]) {
  S* cp = p.c + row * p.ldc + fl;
  const float count = static_cast<float>(p.rowptr[row + 1] - p.rowptr[row]);
  if (p.cvec && full && p.fin.beta == 0.0f) {
    float o[2 * T];
#pragma unroll
    for (int e = 0; e < 2 * T; ++e) o[e] = count > 0.0f ? p.fin.value(v[e], count, 0.0f) : 0.0f;
    if constexpr (is16_v<S>) {
      store16<S, 2 * T>(cp, o);
    } else {
#pragma unroll
      for (int q = 0; q < 2 * T; q += 2) *reinterpret_cast<float2*>(cp + q) = make_float2(o[q], o[q + 1]);
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 2 * T; ++e) {
    if (fl + e >= p.F) break;
    const float old = p.fin.beta != 0.0f ? widen(cp[e]) : 0.0f;
    cp[e] = narrow<S>(count > 0.0f ? p.fin.value(v[e], count, old) : p.fin.empty(old));
  }
}

// *p += v in the L2 with no value returned (red, not atom: nvcc compiles an atomicAdd whose result is
// unused as ATOMG here, and the H200's counters saw only atomics). Relaxed, GPU scope, as atomicAdd.
__device__ __forceinline__ void red_add(float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(p), "f"(v) : "memory");
}

// One lane's 2 T sums of a split window's scratch row (features fl .. fl + 2 T - 1, all with a place
// in the row: p.acc_ld covers the slice). sm_90 (PTX 8.1) adds 8 or 16 bytes in one reduction where
// the scratch is 16-byte aligned (p.accvec; the row stride and fl are multiples of 2 T floats):
//  - T = 1 and 2: one .v2 / .v4 a lane; the 8 lanes of a row (g = 0 ... 7) cover 64 / 128 contiguous
//    bytes, whole 32-byte sectors;
//  - T = 4: a lane's 8 floats are one whole sector, but two .v4 from each lane would touch 8 sectors a
//    row, each half, per instruction. So lanes g and g ^ 1 (lane ^ 4) swap halves first: in the first
//    reduction the pair fills the even lane's sector (the even lane its low half, the odd lane the
//    even lane's high half), in the second the odd lane's: 4 whole sectors a row per instruction, as
//    with T = 2. The shuffles run in warp-uniform flow (split and accvec are the warp's).
// Elsewhere one scalar reduction a float.
template <int T>
__device__ __forceinline__ void red_piece(float* row, int64_t fl, const float (&v)[2 * T], bool vec, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (vec) {
    if constexpr (T == 1) {
      asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(row + fl), "f"(v[0]), "f"(v[1]) : "memory");
    } else if constexpr (T == 2) {
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(row + fl), "f"(v[0]), "f"(v[1]),
                   "f"(v[2]), "f"(v[3])
                   : "memory");
    } else {
      static_assert(T == 4, "slices of 16, 32 or 64 features");
      const bool even = (lane & 4) == 0;  // g even
      float r[4], lo[4], hi[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // The even lane sends its high half (features fl + 4 ...), the odd lane its low half.
        r[e] = __shfl_xor_sync(0xffffffffu, even ? v[4 + e] : v[e], 4);
        lo[e] = even ? v[e] : r[e];      // the even lane's sector: its low half, the partner's high half
        hi[e] = even ? r[e] : v[4 + e];  // the odd lane's sector: the partner's low half, its high half
      }
      float* p0 = row + fl + (even ? 0 : -4);  // the even lane's sector (fl - 4: its high half)
      float* p1 = row + fl + (even ? 8 : 4);   // the odd lane's sector (fl + 8: its low half)
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p0), "f"(lo[0]), "f"(lo[1]), "f"(lo[2]),
                   "f"(lo[3])
                   : "memory");
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p1), "f"(hi[0]), "f"(hi[1]), "f"(hi[2]),
                   "f"(hi[3])
                   : "memory");
    }
    return;
  }
#else
  (void)vec, (void)lane;
#endif
#pragma unroll
  for (int e = 0; e < 2 * T; ++e) red_add(row + fl + e, v[e]);
}

// One lane's 2 T sums of a split window's scratch row from feature fl on (the places red_piece added
// into), read from the L2 (other SMs' reductions): one 8- or 16-byte load per 16 bytes where the
// scratch is 16-byte aligned.
template <int T>
__device__ __forceinline__ void load_piece(const float* row, int64_t fl, bool vec, float (&v)[2 * T]) {
  if (vec) {
    if constexpr (T == 1) {
      const float2 x = __ldcg(reinterpret_cast<const float2*>(row + fl));
      v[0] = x.x, v[1] = x.y;
    } else {
#pragma unroll
      for (int q = 0; q < 2 * T; q += 4) {
        const float4 x = __ldcg(reinterpret_cast<const float4*>(row + fl + q));
        v[q] = x.x, v[q + 1] = x.y, v[q + 2] = x.z, v[q + 3] = x.w;
      }
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 2 * T; ++e) v[e] = __ldcg(row + fl + e);
}

// Zeros over one lane's 2 T places of a split window's scratch row from feature fl on (the places
// load_piece read), past the L1 (the next call's reductions run in the L2).
template <int T>
__device__ __forceinline__ void zero_piece(float* row, int64_t fl, bool vec) {
  if (vec) {
    if constexpr (T == 1) {
      __stcg(reinterpret_cast<float2*>(row + fl), make_float2(0.0f, 0.0f));
    } else {
#pragma unroll
      for (int q = 0; q < 2 * T; q += 4)
        __stcg(reinterpret_cast<float4*>(row + fl + q), make_float4(0.0f, 0.0f, 0.0f, 0.0f));
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 2 * T; ++e) __stcg(row + fl + e, 0.0f);
}

// One warp per (part, slice of 16 T features), the slices of a part in adjacent warps (they share its
// tiles and slot columns through L1). No shared memory: each lane loads its pieces of the block's B
// rows straight into the registers the mma reads, and the next block's loads are in flight while this
// block's mma run (its slot columns two blocks ahead). Small register and no shared-memory footprint,
// so many warps an SM keep many gathers in flight: the kernel is bound by gather latency (the staged
// kernel it replaced, one warp per part over all of F through shared memory, ran at 18 % occupancy
// and 0.27-1.16x cuSPARSE; docs/tc_window_next.md).
template <int T, class I, class S>
__global__ void __launch_bounds__(kTcWarps * 32) spmm_tc_kernel(TcParams<I, S> p) {
  constexpr int NW = is16_v<S> ? T : 2 * T;  // 32-bit words a lane reads from one B row
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t wid = static_cast<int64_t>(blockIdx.x) * kTcWarps + static_cast<int64_t>(threadIdx.x >> 5);
  const int64_t part_id = wid / p.slices;
  if (part_id >= p.nparts) return;
  const int64_t f0 = (wid % p.slices) * 16 * T;
  const TcPart pt = p.parts[part_id];
  const int64_t r0 = pt.window * kTcWindowRows;
  const int g = lane >> 2, t = lane & 3;
  const int64_t fl = f0 + 2 * T * g;  // this lane's first feature
  const bool full = fl + 2 * T <= p.F;
  float acc[T][4];
#pragma unroll
  for (int j = 0; j < T; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  if (pt.blocks > 0) {
    const int64_t b0 = pt.first_block;
    int64_t c[4];
    unsigned r[4][NW];
    load_cols(p, b0, t, c);
#pragma unroll
    for (int i = 0; i < 4; ++i) load_row<NW>(p, c[i], fl, full, r[i]);
    uint4 tf = load_tile(p, b0, lane);
    if (pt.blocks > 1) load_cols(p, b0 + 1, t, c);
    for (int k = 0; k < pt.blocks; ++k) {
      const bool more = k + 1 < pt.blocks;
      unsigned rn[4][NW];
      uint4 tn = make_uint4(0u, 0u, 0u, 0u);
      if (more) {
#pragma unroll
        for (int i = 0; i < 4; ++i) load_row<NW>(p, c[i], fl, full, rn[i]);
        tn = load_tile(p, b0 + k + 1, lane);
        if (k + 2 < pt.blocks) load_cols(p, b0 + k + 2, t, c);
      }
      mma_block<T, S>(acc, r, tf);
      if (more) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int q = 0; q < NW; ++q) r[i][q] = rn[i][q];
        tf = tn;
      }
    }
  }

  // acc[j][q]: window row 2t + (q & 1), feature fl + 2 j + (q >> 1).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = 2 * t + h;
    const int64_t row = r0 + n;
    float v[2 * T];
#pragma unroll
    for (int j = 0; j < T; ++j) v[2 * j] = acc[j][h], v[2 * j + 1] = acc[j][2 + h];
    if (pt.split < 0) {
      if (row < p.m && fl < p.F) store_row<T>(p, row, fl, full, v);
    } else {
      // Every lane, rows past m and features past F included (zeros, into places never read): no
      // bounds tests, and the T = 4 shuffles see the whole warp.
      red_piece<T>(p.acc + (static_cast<int64_t>(pt.split) * kTcWindowRows + n) * p.acc_ld, fl, v, p.accvec, lane);
    }
  }
  if (pt.split < 0) return;
  // A split window: the last of a slice's parts to finish writes that slice of C from the
  // accumulator, each lane the 2 rows x 2 T places it added into, as the unsplit path stores them
  // (the threadFenceReduction pattern: each lane's reductions, then its fence, are ordered before
  // lane 0's ticket; the last warp fences before it reads). A ticket a (window, slice), not a window:
  // with one a window, its last warp wrote all 8 x F places alone, 8 F / 32 scalar stores a lane
  // after every other part, on graphs that split most windows (facebook-combined 481 of 505).
  __threadfence();
  __syncwarp();
  unsigned ticket = 0;
  unsigned* const tk = p.tickets + pt.split * p.slices + wid % p.slices;
  if (lane == 0) ticket = atomicAdd(tk, 1u);
  ticket = __shfl_sync(0xffffffffu, ticket, 0);
  if (ticket != static_cast<unsigned>(pt.nparts - 1)) return;
  __threadfence();
  const float* accw = p.acc + static_cast<int64_t>(pt.split) * kTcWindowRows * p.acc_ld;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = 2 * t + h;
    const int64_t row = r0 + n;
    if (row >= p.m || fl >= p.F) continue;
    float v[2 * T];
    load_piece<T>(accw + n * p.acc_ld, fl, p.accvec, v);
    store_row<T>(p, row, fl, full, v);
  }
  if (!p.clean) return;
  // Back to zero for the plan's next call: every place this lane's pair added into (rows past m and
  // features past F included, as red_piece adds there), after this lane read its own.
#pragma unroll
  for (int h = 0; h < 2; ++h)
    zero_piece<T>(p.acc + (static_cast<int64_t>(pt.split) * kTcWindowRows + 2 * t + h) * p.acc_ld, fl, p.accvec);
  if (lane == 0) *tk = 0u;
}

// Features a warp covers (16 T): SPARSEPORT_TC_SLICE (16, 32 or 64) where set, else the smallest
// that covers F, at most 64 for 16-bit values and 32 for TF32. Wider slices mean fewer warps, each
// with more bytes a load and fewer instructions a byte; a slice wider than F leaves lanes idle.
// Measured on an H200 (2026-12-04): slices of 32 and 64 within 2 % of each other at F = 64 and 128 for
// bf16, 16 up to 1.4x slower; TF32 at 32 1-2 % faster than at 64 (124 registers, 4 CTAs an SM).
int slice_tiles(int64_t F, bool values16) {
  if (const char* e = std::getenv("SPARSEPORT_TC_SLICE"); e != nullptr && *e != '\0') {
    const int v = std::atoi(e);
    if (v == 16 || v == 32 || v == 64) return v / 16;
  }
  return F <= 16 ? 1 : F <= 32 || !values16 ? 2 : 4;
}

template <int T, class I, class S>
void launch(const State& s, TcParams<I, S> p) {
  const int64_t warps = p.nparts * p.slices;
  const int64_t grid = ceil_div(warps, kTcWarps);
  if (grid > 2147483647)
    throw Unsupported("spmm.tc_window: A's " + std::to_string(p.nparts) + " parts x " + std::to_string(p.slices) +
                      " feature slices need more than one launch of 2^31 - 1 CTAs");
  spmm_tc_kernel<T, I, S><<<static_cast<unsigned>(grid), kTcWarps * 32, 0, s.stream()>>>(p);
  check_launch("spmm.tc_window");
}

}  // namespace

void spmm_tc_window(const State& s, const sparseport_spmm_args& a) {
  if (s.info().cc_major < 8)
    throw Unsupported("spmm.tc_window needs mma.sync m16n8k16 on 16-bit values and m16n8k8 on TF32 (compute "
                      "capability 8.0 or newer), but device " + std::to_string(s.device()) + " has " +
                      std::to_string(s.info().cc_major) + "." + std::to_string(s.info().cc_minor));
  // f16 / bf16, or float32 run as TF32 (the plugin offers that only with the caller's consent).
  const auto dispatch = [&](auto&& f) {
    if (a.a.value_type == SPARSEPORT_F32)
      dispatch_index(a.a.index_type, [&](auto i) { f(i, float{}); });
    else
      dispatch_types16(a.a.index_type, a.a.value_type, f);
  };
  dispatch([&](auto i, auto v) {
    using I = decltype(i);
    using S = decltype(v);
    using W = tc_word_t<S>;
    const std::string key = "spmm.tc_window|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(reinterpret_cast<uintptr_t>(a.a.colind)) + "|" + std::to_string(a.a.rows) +
                            "|" + std::to_string(a.a.cols) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(sizeof(I)) + "|" + std::to_string(a.a.value_type) + "|" +
                            (a.a.values != nullptr ? "values" : "pattern");
    std::shared_ptr<TcPlan> plan = std::static_pointer_cast<TcPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = build_plan<I, S>(s, a.a);
      s.plans().insert(key, plan);
    }
    if (a.b.cols == 0 || plan->windows_ == 0) return;  // no output element
    if (a.a.values != nullptr && a.a.nnz > 0) {
      // Values may have changed since the plan was built (same arrays, new weights): nnz x (8 + 2
      // sizeof(W)) bytes a call, against at least nnz x F sizeof(W) bytes of B gathered.
      tc_refresh_kernel<W><<<blocks_for(a.a.nnz), kBlock, 0, s.stream()>>>(
          static_cast<const W*>(a.a.values), static_cast<const int64_t*>(plan->pos_), a.a.nnz,
          static_cast<W*>(plan->tiles_));
      check_launch("spmm.tc_window (values)");
    }
    TcParams<I, S> p;
    p.m = a.a.rows;
    p.F = a.b.cols;
    p.rowptr = static_cast<const I*>(a.a.rowptr);
    p.b = static_cast<const W*>(a.b.data);
    p.ldb = a.b.ld;
    p.c = static_cast<S*>(a.c.data);
    p.ldc = a.c.ld;
    p.cols = static_cast<const I*>(plan->cols_);
    p.tiles = static_cast<const W*>(plan->tiles_);
    p.fin = {static_cast<float>(a.alpha), static_cast<float>(a.beta), a.reduce == SPARSEPORT_REDUCE_MEAN};
    // Vector loads and stores: 16-byte aligned rows (a lane's 2 T values then never cross 16 bytes).
    p.bvec = aligned16(a.b.data) && (a.b.ld * static_cast<int64_t>(sizeof(W))) % 16 == 0;
    p.cvec = aligned16(a.c.data) && (a.c.ld * static_cast<int64_t>(sizeof(S))) % 16 == 0;
    const int T = slice_tiles(p.F, is16_v<S>);
    p.slices = ceil_div(p.F, 16 * T);
    // The part length for this F (the plan holds the parts of every length); the note says which ran.
    const TcParts& q = plan->by_length_[part_length_index(plan->counts_, p.F, p.slices, s.info().sms)];
    s.set_note(q.note);
    p.parts = q.parts;
    p.nparts = q.n;
    Scratch acc, tickets;
    if (q.split > 0) {
      p.acc_ld = p.slices * 16 * T;
      const size_t n = static_cast<size_t>(q.split) * kTcWindowRows * static_cast<size_t>(p.acc_ld);
      const size_t nt = static_cast<size_t>(q.split) * static_cast<size_t>(p.slices);
      {  // the plan's kept scratch, made by its first split call (TcPlan)
        std::lock_guard<std::mutex> lock(plan->clean_mu_);
        if (plan->clean_acc_ == nullptr) {
          plan_alloc<float>(s, plan->clean_acc_, static_cast<int64_t>(n),
                            "cudaMallocFromPoolAsync (tc_window kept scratch)");
          plan_alloc<unsigned>(s, plan->clean_tickets_, static_cast<int64_t>(nt),
                               "cudaMallocFromPoolAsync (tc_window kept tickets)");
          check(cudaMemsetAsync(plan->clean_acc_, 0, n * sizeof(float), s.stream()),
                "cudaMemsetAsync (tc_window kept scratch)");
          check(cudaMemsetAsync(plan->clean_tickets_, 0, nt * sizeof(unsigned), s.stream()),
                "cudaMemsetAsync (tc_window kept tickets)");
          plan->clean_places_ = n;
          plan->clean_ticket_count_ = nt;
        }
        p.clean = n <= plan->clean_places_ && nt <= plan->clean_ticket_count_;
      }
      if (p.clean) {
        p.acc = static_cast<float*>(plan->clean_acc_);
        p.tickets = static_cast<unsigned*>(plan->clean_tickets_);
      } else {
        acc = Scratch(s, n * sizeof(float));
        tickets = Scratch(s, nt * sizeof(unsigned));
        check(cudaMemsetAsync(acc.get(), 0, n * sizeof(float), s.stream()), "cudaMemsetAsync (tc_window accumulators)");
        check(cudaMemsetAsync(tickets.get(), 0, nt * sizeof(unsigned), s.stream()), "cudaMemsetAsync (tc_window tickets)");
        p.acc = acc.as<float>();
        p.tickets = tickets.as<unsigned>();
      }
      p.accvec = aligned16(p.acc);  // the pool's blocks are; a caller's scratch allocator's may not be
    }
    switch (T) {
      case 1: return launch<1>(s, p);
      case 2: return launch<2>(s, p);
      default: return launch<4>(s, p);
    }
  });
}

}  // namespace sparseport::cuda
