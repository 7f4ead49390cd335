// SPDX-License-Identifier: Apache-2.0
// spmm.tc_window: SpMM on the tensor cores for f16 and bf16 values (float32 accumulation), sum and
// mean, over the condensed row-window format of tc_window_format.hpp (8-row windows, their distinct
// columns compacted into blocks of 16, dense 8 x 16 tiles, heavy windows split into parts of 32
// blocks). The format is built on the GPU once per plan (a radix sort of (window, column, row) keys,
// scans, a scatter) and held by the plan cache; every call re-reads A's values into the tiles (A's
// values may change between calls at the same address, as a GAT layer's do; the structure may not,
// as for every plan here), then one warp per part runs mma.m16n8k16 with the window on the n = 8
// side.
//
// Why this shape (H200 numbers from the datasheet, not measured here yet):
//  - The CUDA-core 16-bit kernels are bound by chains of dependent gathers, not by bytes: 16-bit SpMM
//    runs at 1.06x of float32 (issue 33), so halving the bytes bought nothing. Here a warp gathers the
//    16 B rows of a block with cp.async (16 rows x F x 2 bytes, 16-byte requests, up to 8 a lane in
//    flight for F = 128) straight into shared memory, with the next block's copies in flight while the
//    current block's mma run: a part of n blocks is n overlapped round trips, where row_warp walks a
//    row of d entries as d / U dependent rounds per lane.
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
//    into with atomics, the last part to finish (a ticket, the threadFenceReduction pattern, as
//    hub_split's CTAs) writing C from it. FlashSparse adds into C with atomics and leaves C's zeroing to
//    the caller: that cannot give alpha * AB + beta * C, and 16-bit atomics would round every partial.
//    The float32 atomics make split windows' sums order-dependent in their last bits: not deterministic
//    (not flagged SPARSEPORT_VARIANT_DETERMINISTIC).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/cuda/tc_window_format.hpp"
#include "kernels/cuda/values16.cuh"
#include "sparseport/errors.hpp"

namespace sparseport::cuda {
namespace {

constexpr int kTcWarps = 4;  // warps (parts) per CTA; each warp has its own staging buffers
// At least 4 CTAs (16 warps) an SM: at most 128 registers a thread. Without the bound the slot columns
// loaded a block ahead took FT = 8 to 158 registers, 3 CTAs an SM, fewer gathers in flight.
constexpr int kTcMinBlocks = 4;

struct TcPart {
  int64_t window;
  int64_t first_block;
  int32_t blocks;  // 0 for an empty window
  int32_t split;   // the window's accumulator slot when it has several parts, else -1
  int32_t nparts;  // parts of the window
  int32_t pad;
};

class TcPlan : public Plan {
 public:
  explicit TcPlan(const State& s) : state_(&s) {}
  ~TcPlan() override {
    for (void* p : {cols_, tiles_, parts_, pos_})
      if (p != nullptr) (void)cudaFreeAsync(p, state_->stream());
  }
  void* cols_ = nullptr;   // I[blocks * 16], -1 for an empty slot column
  void* tiles_ = nullptr;  // uint16[blocks * 128], tc_frag_pos order
  void* parts_ = nullptr;  // TcPart[parts]
  void* pos_ = nullptr;    // int64[nnz]: each entry's place in tiles_ (null for a pattern)
  int64_t windows_ = 0, blocks_ = 0, parts_n_ = 0, split_ = 0, slots_ = 0;

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

// Per window: blocks, parts, whether split (each array windows + 1 long, scanned next).
template <class I>
__global__ void __launch_bounds__(kBlock)
    tc_window_counts_kernel(const I* rowptr, int64_t m, int64_t windows, const int64_t* slot_scan, int64_t* nb,
                            int64_t* np, int64_t* ns) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w <= windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (w == windows) {
      nb[w] = np[w] = ns[w] = 0;
      continue;
    }
    const int64_t e0 = rowptr[w * kTcWindowRows];
    const int64_t e1 = rowptr[(w + 1) * kTcWindowRows < m ? (w + 1) * kTcWindowRows : m];
    const int64_t slots = slot_scan[e1] - slot_scan[e0];
    const int64_t blocks = (slots + kTcBlockCols - 1) / kTcBlockCols;
    const int64_t parts = blocks > kTcPartBlocks ? (blocks + kTcPartBlocks - 1) / kTcPartBlocks : 1;
    nb[w] = blocks;
    np[w] = parts;
    ns[w] = parts > 1 ? 1 : 0;
  }
}

// Sorted position i: its slot column's index (and the column, written by the slot's first entry),
// and its tile element (a pattern's 1 written now; otherwise the place, for the value refresh).
template <class I>
__global__ void __launch_bounds__(kBlock)
    tc_scatter_kernel(const unsigned long long* keys, const int64_t* perm, int64_t n, const int64_t* slot_scan,
                      const I* rowptr, const int64_t* block_scan, int colbits, I* cols, uint16_t* tiles,
                      int64_t* pos, uint16_t one) {
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
                    TcPart* parts) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < windows;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b0 = nb_scan[w], nb = nb_scan[w + 1] - b0;
    const int64_t p0 = np_scan[w], np = np_scan[w + 1] - p0;
    for (int64_t q = 0; q < np; ++q) {
      TcPart t;
      t.window = w;
      t.first_block = b0 + q * kTcPartBlocks;
      const int64_t left = nb - q * kTcPartBlocks;
      t.blocks = static_cast<int32_t>(left < kTcPartBlocks ? left : kTcPartBlocks);
      t.split = np > 1 ? static_cast<int32_t>(ns_scan[w]) : -1;
      t.nparts = static_cast<int32_t>(np);
      t.pad = 0;
      parts[p0 + q] = t;
    }
  }
}

// Every call: the tiles get A's values of now (16-bit bits copied as they are).
__global__ void __launch_bounds__(kBlock)
    tc_refresh_kernel(const uint16_t* values, const int64_t* pos, int64_t nnz, uint16_t* tiles) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nnz;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    tiles[pos[e]] = values[e];
}

void read_back(const State& s, const int64_t* p, int64_t* host) {
  check(cudaMemcpyAsync(host, p, sizeof *host, cudaMemcpyDeviceToHost, s.stream()), "cudaMemcpyAsync (tc_window sizes)");
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
  tc_window_counts_kernel<I><<<blocks_for(windows + 1), kBlock, 0, s.stream()>>>(
      rowptr, m, windows, slot_scan.as<int64_t>(), nb.as<int64_t>(), np.as<int64_t>(), ns.as<int64_t>());
  check_launch("spmm.tc_window (window counts)");
  for (Scratch* x : {&nb, &np, &ns}) exclusive_scan_inplace(s, x->get(), windows + 1, SPARSEPORT_I64);
  // The four totals, then one wait: the sizes of the plan's arrays.
  int64_t sizes[4] = {0, 0, 0, 0};
  read_back(s, slot_scan.as<int64_t>() + nnz, &sizes[0]);
  read_back(s, nb.as<int64_t>() + windows, &sizes[1]);
  read_back(s, np.as<int64_t>() + windows, &sizes[2]);
  read_back(s, ns.as<int64_t>() + windows, &sizes[3]);
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (tc_window sizes)");
  plan->slots_ = sizes[0];
  plan->blocks_ = sizes[1];
  plan->parts_n_ = sizes[2];
  plan->split_ = sizes[3];
  if (plan->parts_n_ > int64_t{2147483647} * kTcWarps || plan->split_ > 2147483647)
    throw Unsupported("spmm.tc_window: A has " + std::to_string(plan->parts_n_) +
                      " parts, more than one launch of 2^31 - 1 CTAs takes");

  I* cols = plan_alloc<I>(s, plan->cols_, plan->blocks_ * kTcBlockCols, "cudaMallocFromPoolAsync (tc_window columns)");
  auto* tiles =
      plan_alloc<uint16_t>(s, plan->tiles_, plan->blocks_ * kTcTileValues, "cudaMallocFromPoolAsync (tc_window tiles)");
  auto* parts = plan_alloc<TcPart>(s, plan->parts_, plan->parts_n_, "cudaMallocFromPoolAsync (tc_window parts)");
  int64_t* pos = nullptr;
  if (a.values != nullptr) pos = plan_alloc<int64_t>(s, plan->pos_, nnz, "cudaMallocFromPoolAsync (tc_window places)");
  check(cudaMemsetAsync(cols, 0xff, static_cast<size_t>(plan->blocks_) * kTcBlockCols * sizeof(I), s.stream()),
        "cudaMemsetAsync (tc_window columns)");  // -1: an empty slot column
  check(cudaMemsetAsync(tiles, 0, static_cast<size_t>(plan->blocks_) * kTcTileValues * 2, s.stream()),
        "cudaMemsetAsync (tc_window tiles)");  // +0 in f16 and bf16
  S one_s = S(1.0f);
  uint16_t one = 0;
  std::memcpy(&one, &one_s, sizeof one);
  tc_scatter_kernel<I><<<blocks_for(nnz), kBlock, 0, s.stream()>>>(sk, perm.as<int64_t>(), nnz, slot_scan.as<int64_t>(),
                                                                   rowptr, nb.as<int64_t>(), colbits, cols, tiles, pos,
                                                                   one);
  check_launch("spmm.tc_window (scatter)");
  tc_parts_kernel<<<blocks_for(windows), kBlock, 0, s.stream()>>>(windows, nb.as<int64_t>(), np.as<int64_t>(),
                                                                  ns.as<int64_t>(), parts);
  check_launch("spmm.tc_window (parts)");
  plan->watch(a.rowptr, static_cast<size_t>(m + 1) * sizeof(I));
  plan->watch(a.colind, static_cast<size_t>(nnz) * sizeof(I));
  const std::string note = "spmm.tc_window plan: windows " + std::to_string(windows) + ", slot columns " +
                           std::to_string(plan->slots_) + ", blocks " + std::to_string(plan->blocks_) + ", parts " +
                           std::to_string(plan->parts_n_) + ", split windows " + std::to_string(plan->split_);
  s.set_note(note);
  if (log_enabled()) std::fprintf(stderr, "[sparseport cuda] %s\n", note.c_str());
  return plan;
}

// ---- the kernel --------------------------------------------------------------------------------

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  // .cg: 16 bytes through L2 only (a gathered row of B is reused by other windows through L2, rarely
  // by this SM's L1); bytes past src_bytes are zero-filled and not read.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem), "r"(src_bytes) : "memory");
#else
  (void)smem, (void)gmem, (void)src_bytes;
  __trap();
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// d += a (16 x 16, row) * b (16 x 8, col), float32 accumulators.
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

// The mma's A fragment (16 features x 16 slot columns) of feature tile j from the staged block, which
// holds B's rows as rows: stage[k][f], k the slot column. That is A column-major, so ldmatrix .trans
// gives the row-major fragment: matrix q (lanes 8q..8q+7 give its row addresses) is slot columns
// 8 (q >> 1) + 0..7 at features 16 j + 8 (q & 1) + 0..7, i.e. a0 (features 0-7, k 0-7), a1 (features
// 8-15, k 0-7), a2 (features 0-7, k 8-15), a3 (features 8-15, k 8-15). The plain path reads the same
// elements two at a time (lane 4 g + t: a0 = {A[g][2t], A[g][2t+1]} = {stage[2t][g], stage[2t+1][g]}).
template <int PITCH>
__device__ __forceinline__ void load_a(const uint16_t* stage, int j, int lane, bool ldm, unsigned (&a)[4]) {
  if (ldm) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    const int q = lane >> 3;
    const uint16_t* row = stage + ((lane & 7) + ((q >> 1) << 3)) * PITCH + 16 * j + ((q & 1) << 3);
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(addr));
#endif
    return;
  }
  const int g = lane >> 2, t = lane & 3;
  const auto pair = [&](int k, int f) {
    return static_cast<unsigned>(stage[k * PITCH + f]) | (static_cast<unsigned>(stage[(k + 1) * PITCH + f]) << 16);
  };
  a[0] = pair(2 * t, 16 * j + g);
  a[1] = pair(2 * t, 16 * j + g + 8);
  a[2] = pair(2 * t + 8, 16 * j + g);
  a[3] = pair(2 * t + 8, 16 * j + g + 8);
}

template <class I, class S>
struct TcParams {
  int64_t m = 0, F = 0;
  const I* rowptr = nullptr;
  const uint16_t* b = nullptr;  // B's 16-bit values as bits
  int64_t ldb = 0;
  S* c = nullptr;
  int64_t ldc = 0;
  const I* cols = nullptr;
  const uint16_t* tiles = nullptr;
  const TcPart* parts = nullptr;
  int64_t nparts = 0;
  float* acc = nullptr;          // split windows: [split][8][F]
  unsigned* tickets = nullptr;   // split windows: parts finished
  Finish<float> fin{};
  bool ldm = true;               // ldmatrix.trans (else plain shared loads; SPARSEPORT_TC_LDMATRIX=0)
  bool cols_ahead = true;        // slot columns loaded a block ahead (SPARSEPORT_TC_COLS_AHEAD=0: not)
};

// The slot columns of block `blk` that this lane's FT chunks gather (see stage_block). Loaded one block
// ahead of the copies that use them (SPARSEPORT_TC_COLS_AHEAD, on by default): otherwise each block's
// copies wait first for this load, two dependent memory latencies a block instead of one.
template <int FT, class I, class S>
__device__ __forceinline__ void load_cols(const TcParams<I, S>& p, int64_t blk, int lane, I (&col)[FT]) {
  constexpr int kChunksPerRow = 2 * FT;
#pragma unroll
  for (int q = 0; q < FT; ++q)
    col[q] = __ldg(p.cols + blk * kTcBlockCols + (lane + 32 * q) / kChunksPerRow);
}

// Gathers a block's 16 rows of B (slot columns `col`, from load_cols), features [f0, f0 + 16 FT), into
// stage (PITCH values a row). Chunk c (8 features, 16 bytes) of row c / (2 FT) goes to lane c % 32: FT
// chunks a lane. ASYNC: one cp.async each (B 16-byte aligned with ld % 8 == 0, so every chunk start is;
// a chunk past F copies only the bytes before F, zero-filling the rest, and an empty slot column copies
// none); else plain 16-bit loads, zeros past F.
template <bool ASYNC, int FT, int PITCH, class I, class S>
__device__ __forceinline__ void stage_block(const TcParams<I, S>& p, const I (&col)[FT], int64_t f0,
                                            uint16_t* stage, int lane) {
  constexpr int kChunksPerRow = 2 * FT;
#pragma unroll
  for (int q = 0; q < FT; ++q) {
    const int c = lane + 32 * q;
    const int row = c / kChunksPerRow, cc = c % kChunksPerRow;
    const int64_t f = f0 + 8 * cc;
    uint16_t* dst = stage + row * PITCH + 8 * cc;
    const int64_t avail = p.F - f;
    const int64_t left = col[q] < 0 || avail <= 0 ? 0 : (avail < 8 ? avail : 8);
    if constexpr (ASYNC) {
      const uint16_t* src = left > 0 ? p.b + static_cast<int64_t>(col[q]) * p.ldb + f : p.b;
      cp_async16(dst, src, static_cast<int>(left * 2));
    } else {
      const uint16_t* src = p.b + (col[q] < 0 ? int64_t{0} : static_cast<int64_t>(col[q])) * p.ldb + f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dst[i] = i < left ? __ldg(src + i) : uint16_t{0};
    }
  }
}

// One warp per part. FT feature tiles of 16 (16 FT features of F) per pass; F wider than that takes
// several passes over the part's blocks (the tiles are re-read, 256 bytes a block a pass).
template <bool ASYNC, int FT, class I, class S>
__global__ void __launch_bounds__(kTcWarps * 32, kTcMinBlocks) spmm_tc_kernel(TcParams<I, S> p) {
  constexpr int CW = 16 * FT;
  // +8 values (16 bytes) a row: ldmatrix's 8 row addresses of a matrix then fall in 8 different
  // groups of 4 banks (a pitch of 256 bytes would put them all in the same banks, 8-way conflicts).
  constexpr int PITCH = CW + 8;
  __shared__ alignas(16) uint16_t stage_all[kTcWarps][2][kTcBlockCols * PITCH];
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t part_id = static_cast<int64_t>(blockIdx.x) * kTcWarps + warp;
  if (part_id >= p.nparts) return;
  const TcPart pt = p.parts[part_id];
  const int64_t r0 = pt.window * kTcWindowRows;
  const int g = lane >> 2, t = lane & 3;
  uint16_t* st0 = stage_all[warp][0];
  uint16_t* st1 = stage_all[warp][1];
  const uint2* tiles = reinterpret_cast<const uint2*>(p.tiles);

  for (int64_t f0 = 0; f0 < p.F; f0 += CW) {
    const int64_t tiles_left = (p.F - f0 + 15) / 16;
    const int nt = tiles_left < FT ? static_cast<int>(tiles_left) : FT;
    float acc[FT][4];
#pragma unroll
    for (int j = 0; j < FT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    if (pt.blocks > 0) {
      // Two stages: block k + 1's gathers are in flight while block k's mma run, and (cols ahead)
      // block k + 2's slot columns are being loaded.
      I col[FT];
      load_cols<FT>(p, pt.first_block, lane, col);
      stage_block<ASYNC, FT, PITCH>(p, col, f0, st0, lane);
      if constexpr (ASYNC) cp_async_commit();
      if (p.cols_ahead && pt.blocks > 1) load_cols<FT>(p, pt.first_block + 1, lane, col);
      uint2 tf = __ldg(tiles + pt.first_block * (kTcTileValues / 4) + lane);
      for (int k = 0; k < pt.blocks; ++k) {
        uint16_t* cur = (k & 1) ? st1 : st0;
        uint16_t* nxt = (k & 1) ? st0 : st1;
        uint2 tf_next = make_uint2(0u, 0u);
        if (k + 1 < pt.blocks) {
          if (!p.cols_ahead) load_cols<FT>(p, pt.first_block + k + 1, lane, col);
          stage_block<ASYNC, FT, PITCH>(p, col, f0, nxt, lane);
          if (p.cols_ahead && k + 2 < pt.blocks) load_cols<FT>(p, pt.first_block + k + 2, lane, col);
          tf_next = __ldg(tiles + (pt.first_block + k + 1) * (kTcTileValues / 4) + lane);
        }
        if constexpr (ASYNC) {
          cp_async_commit();  // an empty group on the last block keeps the count of groups in flight
          cp_async_wait<1>();  // this lane's copies of block k have landed
        }
        __syncwarp();  // ... and every lane's are visible to the warp
#pragma unroll
        for (int j = 0; j < FT; ++j) {
          if (j < nt) {
            unsigned a[4];
            load_a<PITCH>(cur, j, lane, p.ldm, a);
            mma16816<S>(acc[j], a, tf.x, tf.y);
          }
        }
        __syncwarp();  // every lane has read `cur` before the next iteration's copies overwrite it
        tf = tf_next;
      }
    }
    // acc[j][q]: feature f0 + 16 j + g + 8 (q >> 1) of window row 2 t + (q & 1).
#pragma unroll
    for (int j = 0; j < FT; ++j) {
      if (j >= nt) continue;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int n = 2 * t + (q & 1);
        const int64_t row = r0 + n, f = f0 + 16 * j + g + 8 * (q >> 1);
        if (row >= p.m || f >= p.F) continue;
        if (pt.split >= 0) {
          atomicAdd(p.acc + (static_cast<int64_t>(pt.split) * kTcWindowRows + n) * p.F + f, acc[j][q]);
        } else {
          const float count = static_cast<float>(p.rowptr[row + 1] - p.rowptr[row]);
          S* cp = p.c + row * p.ldc + f;
          const float old = p.fin.beta != 0.0f ? widen(*cp) : 0.0f;
          *cp = narrow<S>(count > 0.0f ? p.fin.value(acc[j][q], count, old) : p.fin.empty(old));
        }
      }
    }
  }
  if (pt.split < 0) return;
  // A split window: the last of its parts to finish writes its 8 rows of C from the accumulator.
  __threadfence();
  __syncwarp();
  unsigned ticket = 0;
  if (lane == 0) ticket = atomicAdd(p.tickets + pt.split, 1u);
  ticket = __shfl_sync(0xffffffffu, ticket, 0);
  if (ticket != static_cast<unsigned>(pt.nparts - 1)) return;
  __threadfence();
  const float* accw = p.acc + static_cast<int64_t>(pt.split) * kTcWindowRows * p.F;
  for (int64_t idx = lane; idx < kTcWindowRows * p.F; idx += 32) {
    const int64_t n = idx / p.F, f = idx % p.F, row = r0 + n;
    if (row >= p.m) break;
    const float count = static_cast<float>(p.rowptr[row + 1] - p.rowptr[row]);
    S* cp = p.c + row * p.ldc + f;
    const float old = p.fin.beta != 0.0f ? widen(*cp) : 0.0f;
    *cp = narrow<S>(count > 0.0f ? p.fin.value(__ldcg(accw + idx), count, old) : p.fin.empty(old));
  }
}

// Cross-checks and A/B switches of the timing table: on unless the variable is "0".
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

template <bool ASYNC, int FT, class I, class S>
void launch(const State& s, const TcParams<I, S>& p) {
  const int64_t grid = ceil_div(p.nparts, kTcWarps);
  spmm_tc_kernel<ASYNC, FT, I, S><<<static_cast<unsigned>(grid), kTcWarps * 32, 0, s.stream()>>>(p);
  check_launch("spmm.tc_window");
}

template <bool ASYNC, class I, class S>
void launch_ft(const State& s, const TcParams<I, S>& p) {
  const int64_t tiles = (p.F + 15) / 16;
  if (tiles <= 1)
    launch<ASYNC, 1>(s, p);
  else if (tiles <= 2)
    launch<ASYNC, 2>(s, p);
  else if (tiles <= 4)
    launch<ASYNC, 4>(s, p);
  else
    launch<ASYNC, 8>(s, p);
}

}  // namespace

void spmm_tc_window(const State& s, const sparseport_spmm_args& a) {
  if (s.info().cc_major < 8)
    throw Unsupported("spmm.tc_window needs mma.sync m16n8k16 on 16-bit values and cp.async (compute capability 8.0 "
                      "or newer), but device " + std::to_string(s.device()) + " has " +
                      std::to_string(s.info().cc_major) + "." + std::to_string(s.info().cc_minor));
  dispatch_types16(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using S = decltype(v);
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
    if (a.a.values != nullptr && a.a.nnz > 0) {
      // Values may have changed since the plan was built (same arrays, new weights): nnz x 12 bytes
      // a call, against at least nnz x 2 F bytes of B gathered (8% at F = 64 with int64 places).
      tc_refresh_kernel<<<blocks_for(a.a.nnz), kBlock, 0, s.stream()>>>(
          static_cast<const uint16_t*>(a.a.values), static_cast<const int64_t*>(plan->pos_), a.a.nnz,
          static_cast<uint16_t*>(plan->tiles_));
      check_launch("spmm.tc_window (values)");
    }
    TcParams<I, S> p;
    p.m = a.a.rows;
    p.F = a.b.cols;
    p.rowptr = static_cast<const I*>(a.a.rowptr);
    p.b = static_cast<const uint16_t*>(a.b.data);
    p.ldb = a.b.ld;
    p.c = static_cast<S*>(a.c.data);
    p.ldc = a.c.ld;
    p.cols = static_cast<const I*>(plan->cols_);
    p.tiles = static_cast<const uint16_t*>(plan->tiles_);
    p.parts = static_cast<const TcPart*>(plan->parts_);
    p.nparts = plan->parts_n_;
    p.fin = {static_cast<float>(a.alpha), static_cast<float>(a.beta), a.reduce == SPARSEPORT_REDUCE_MEAN};
    p.ldm = env_on("SPARSEPORT_TC_LDMATRIX");
    p.cols_ahead = env_on("SPARSEPORT_TC_COLS_AHEAD");
    Scratch acc, tickets;
    if (plan->split_ > 0) {
      const size_t n = static_cast<size_t>(plan->split_) * kTcWindowRows * static_cast<size_t>(p.F);
      acc = Scratch(s, n * sizeof(float));
      tickets = Scratch(s, static_cast<size_t>(plan->split_) * sizeof(unsigned));
      check(cudaMemsetAsync(acc.get(), 0, n * sizeof(float), s.stream()), "cudaMemsetAsync (tc_window accumulators)");
      check(cudaMemsetAsync(tickets.get(), 0, static_cast<size_t>(plan->split_) * sizeof(unsigned), s.stream()),
            "cudaMemsetAsync (tc_window tickets)");
      p.acc = acc.as<float>();
      p.tickets = tickets.as<unsigned>();
    }
    if (aligned16(a.b.data) && a.b.ld % 8 == 0)
      launch_ft<true>(s, p);
    else
      launch_ft<false>(s, p);
  });
}

}  // namespace sparseport::cuda
