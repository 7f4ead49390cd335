// SPDX-License-Identifier: Apache-2.0
// spmm.tc_window's condensed row-window format: its shape constants, where a value lands in a
// block's tile, and a host model of the format's sizes. The GPU builds the format
// (spmm_tc_window.cu); the model says what that build must produce (windows, slot columns, blocks,
// parts, split windows, bytes), so tests can check it on the CPU and on the GPU (the plan's note)
// and the scheduler can price the format before building it. Plain C++ (no CUDA headers).
//
// The format, for an m x k CSR matrix A:
//  - A window is kTcWindowRows = 8 consecutive rows. With mma.m16n8k16 the window is the n = 8 side
//    (FlashSparse's swap-and-transpose: C_w^T (F x 8) = B_w^T (F x 16) * A_w^T (16 x 8)), so B's rows
//    are the 16 x 16 "A" operand of the mma along F and the sparse tile is the 16 x 8 "B" operand. Eight
//    rows rather than sixteen: a window's distinct columns grow with its row count, and on graphs
//    without locality (most GNN inputs) nearly every entry brings its own column, so a 16-row window
//    holds half-empty tile columns twice as often (a 16 x 16 tile of a random graph is ~1/16 full, an
//    8 x 16 one ~1/8); the 16-wide side is then F, which is dense.
//  - A slot column is one column of B that a window uses: each distinct column of the window gets one.
//    A repeated (row, column) entry gets a slot column of its own for each repeat after the first, so
//    every tile element holds one entry of A, exactly as stored (no 16-bit sum of duplicates, whose
//    rounding the float32-accumulation bound does not allow). In sorted (window, column, row) order, an
//    entry starts a new slot column when it is the first of its (window, column) or repeats the
//    previous entry's (row, column); otherwise it joins the current one (its row differs from every row
//    already in it, the rows being ascending there).
//  - A block is kTcBlockCols = 16 consecutive slot columns of a window (the mma's K), the last one of a
//    window padded with empty slot columns (column -1: B's row is read as zeros, never loaded). Each block
//    stores its 16 column indices and a dense 8 x 16 tile of 16-bit values (zeros where A has no entry),
//    in the order the mma's B fragment is held by the warp's lanes (tc_frag_pos): one 8-byte load a lane.
//  - A part is a run of at most part_blocks blocks of one window, the work of one warp; part_blocks
//    (4 to 32, tc_part_blocks) is chosen per plan from the matrix's blocks and the GPU's SMs. Every
//    window has at least one part (an empty window's part writes beta * C). A window of several parts
//    (a split window) sums them in float32 in a scratch accumulator; its last part to finish writes C.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define SPARSEPORT_TC_HD __host__ __device__
#else
#define SPARSEPORT_TC_HD
#endif

namespace sparseport::cuda {

constexpr int kTcWindowRows = 8;   // mma n
constexpr int kTcBlockCols = 16;   // mma k
constexpr int kTcTileValues = kTcWindowRows * kTcBlockCols;  // 128 values, 256 bytes a block
// The longest part, in blocks. FlashSparse's balanced kernels split heavy windows into parts of 32
// blocks; here a part is one warp's serial chain of 32 (16 x F) gathers, about the length of a CSR
// row of 512 entries that a row_warp lane walks, so hubs cost no longer chains than regular rows do.
// Unmeasured. Large matrices keep it (tc_part_blocks).
constexpr int kTcPartBlocks = 32;
// The shortest part, in blocks: each part of a split window adds its 8 x F float32 sums into the
// scratch with atomics (32 F bytes, as many as one block's gathers of B), so at 4 blocks a quarter of
// a part's traffic is already that sum. Unmeasured.
constexpr int kTcMinPartBlocks = 4;
// Warps of spmm_tc_kernel an SM is taken to hold when choosing the part length: half of Hopper's 64
// warp slots; the kernel's registers allow about that. Unmeasured.
constexpr int kTcResidentWarpsPerSm = 32;

// Blocks per part for a matrix of total_blocks blocks on a GPU of `sms` SMs (sms <= 0 counts as 1).
// A part is a serial chain, one block of gathers in flight, so a call takes about max(longest part,
// total_blocks / warps resident) block latencies: on H200, small skewed graphs' main kernel took a
// fixed 29-31 us at F = 32, the 32-block chains of their hub windows on a grid far below the GPU's
// warps (benchmarks/results/2026-12-04-h200-kokkos-wide-tc-small-weak-band.md section 2). Parts of
// about total_blocks / warps resident blocks shorten the chain without leaving warps waiting: that as
// a power of two in [kTcMinPartBlocks, kTcPartBlocks], so matrices of at least 32 x sms x 32 blocks
// (135168 on an H200's 132 SMs) keep 32.
SPARSEPORT_TC_HD constexpr int tc_part_blocks(int64_t total_blocks, int sms) {
  const int64_t per_warp = total_blocks / (int64_t{sms > 0 ? sms : 1} * kTcResidentWarpsPerSm);
  int p = kTcMinPartBlocks;
  while (p < kTcPartBlocks && 2 * p <= per_warp) p *= 2;
  return p;
}

// Where tile element (row r of the window, slot s of the block) is stored among the block's 128
// values. The mma.m16n8k16 B fragment (16 x 8, k x n, "col"): lane = 4 g + t holds b0, b1 = (k = 2t,
// 2t + 1; n = g) and b2, b3 = (k = 2t + 8, 2t + 9; n = g). Here k is the slot and n the window row, so
// lane 4 r + (s % 8) / 2 holds the element, at place (s >= 8 ? 2 : 0) + s % 2 of its 4 values.
SPARSEPORT_TC_HD constexpr int tc_frag_pos(int r, int s) {
  return 4 * (4 * r + (s % 8) / 2) + (s >= 8 ? 2 : 0) + (s % 2);
}

struct TcFormatSize {
  int64_t windows = 0;        // ceil(m / 8)
  int64_t slot_columns = 0;   // slot columns over all windows
  int64_t blocks = 0;         // sum over windows of ceil(slot columns / 16)
  int64_t parts = 0;          // sum over windows of max(1, ceil(blocks / part_blocks))
  int64_t split_windows = 0;  // windows of more than one part
  int64_t max_window_blocks = 0;

  // Device bytes the plan holds: tiles (2 bytes a value), column indices, the parts, and the
  // position in the tiles of each entry (8 bytes; the per-call value refresh reads it).
  int64_t bytes(int64_t nnz, int64_t index_size, int64_t part_size) const {
    return blocks * (kTcTileValues * 2 + kTcBlockCols * index_size) + parts * part_size + nnz * 8;
  }
};

// The format's sizes for a host CSR (rowptr of rows + 1 entries, colind of rowptr[rows]) cut into
// parts of at most part_blocks (>= 1) blocks, computed the way the GPU build does (sorted (column,
// row) pairs per window). The GPU's plan uses tc_part_blocks(blocks, its SMs).
template <class I>
TcFormatSize tc_format_size(const std::vector<I>& rowptr, const std::vector<I>& colind, int64_t rows,
                            int part_blocks = kTcPartBlocks) {
  TcFormatSize z;
  z.windows = (rows + kTcWindowRows - 1) / kTcWindowRows;
  std::vector<std::pair<int64_t, int64_t>> e;  // (column, row in window)
  for (int64_t w = 0; w < z.windows; ++w) {
    e.clear();
    const int64_t r0 = w * kTcWindowRows, r1 = std::min<int64_t>(rows, r0 + kTcWindowRows);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t k = static_cast<int64_t>(rowptr[static_cast<size_t>(r)]);
           k < static_cast<int64_t>(rowptr[static_cast<size_t>(r) + 1]); ++k)
        e.push_back({static_cast<int64_t>(colind[static_cast<size_t>(k)]), r - r0});
    std::sort(e.begin(), e.end());
    int64_t slots = 0;
    for (size_t i = 0; i < e.size(); ++i)
      if (i == 0 || e[i].first != e[i - 1].first || e[i] == e[i - 1]) ++slots;
    const int64_t blocks = (slots + kTcBlockCols - 1) / kTcBlockCols;
    const int64_t parts = std::max<int64_t>(1, (blocks + part_blocks - 1) / part_blocks);
    z.slot_columns += slots;
    z.blocks += blocks;
    z.parts += parts;
    z.split_windows += parts > 1 ? 1 : 0;
    z.max_window_blocks = std::max(z.max_window_blocks, blocks);
  }
  return z;
}

// Bits of the build's sort key (window, column, row in window): it must fit 64 bits.
SPARSEPORT_TC_HD constexpr int tc_bits_for(int64_t n) {
  int b = 0;
  while (b < 63 && (int64_t{1} << b) < n) ++b;
  return b;
}
inline int tc_key_bits(int64_t rows, int64_t cols) {
  const int64_t windows = (rows + kTcWindowRows - 1) / kTcWindowRows;
  return tc_bits_for(std::max<int64_t>(windows, 1)) + tc_bits_for(std::max<int64_t>(cols, 1)) + 3;
}

}  // namespace sparseport::cuda
