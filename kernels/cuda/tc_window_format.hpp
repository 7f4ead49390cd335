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
//    (4, 8, 16 or 32) is chosen per call by tc_part_blocks from the plan's counts (TcPartCounts), F and
//    the GPU's SMs; the plan holds the parts for every length (they differ only in the part list).
//    Every window has at least one part (an empty window's part writes beta * C). A window of several
//    parts (a split window) sums them in float32 in a scratch accumulator; its last part to finish
//    writes C.
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
// Large matrices keep it (tc_part_blocks).
constexpr int kTcPartBlocks = 32;
// The shortest part, in blocks: each part of a split window adds 8 x F float32 sums into the scratch
// (32 F bytes, as many as one block's 16-bit gathers of B), a quarter of a part's gathers at 4 blocks.
constexpr int kTcMinPartBlocks = 4;
// The part lengths a plan holds parts for: kTcMinPartBlocks << i, i < kTcPartLengths (4 ... 32).
constexpr int kTcPartLengths = 4;
SPARSEPORT_TC_HD constexpr int tc_part_length(int i) { return kTcMinPartBlocks << i; }
static_assert(tc_part_length(kTcPartLengths - 1) == kTcPartBlocks, "the longest part length is kTcPartBlocks");
// Warps of spmm_tc_kernel an SM is taken to hold: half of Hopper's 64 warp slots; the kernel's
// registers allow about that. Unmeasured.
constexpr int kTcResidentWarpsPerSm = 32;
// One block's round trip in a part's chain (us): a part keeps one block of gathers in flight, and on
// an H200 the small skewed graphs' calls took a fixed 29-31 us with parts of 32 blocks at F = 32
// (benchmarks/results/2026-12-04-h200-kokkos-wide-tc-small-weak-band.md section 2).
constexpr double kTcBlockLatencyUs = 0.9;
// Bytes a microsecond that the split windows' float32 scratch sums (8 rows x F a part) go through
// the L2, fitted to the H200 counter check (benchmarks/results/2026-12-05-h200-kokkos-branches.md
// section 5; email-Enron and facebook-combined at F = 32 and 128, parts of 4 and 32): 188-216 bytes
// a ns from the four pairs' differences, when the sums were scalar L2 atomics (ATOMG, one 4-byte add a
// lane, 4-8x the sectors the bytes need). The kernel now adds them as vector reductions (REDG, 16
// bytes a lane, whole sectors): unmeasured, probably faster, which would favour shorter parts. Re-fit
// from cuda_timing --tc's "parts of P" rows.
constexpr double kTcScratchBytesPerUs = 200e3;

// What the choice of part length needs to know of a matrix's format, counted once per plan for every
// length (on the GPU by its build, on the host by tc_part_counts).
struct TcPartCounts {
  int64_t blocks = 0;
  int64_t max_window_blocks = 0;
  int64_t split_parts[kTcPartLengths] = {};  // parts of split windows, parts of tc_part_length(i) blocks
};

// The main kernel's time (us), modelled, with parts of tc_part_length(i) blocks, for F features in
// `slices` warps a part, on `sms` SMs (<= 0 counts as 1). Two terms that the part length trades:
//  - the gathers: a part is a serial chain, one block of gathers in flight, so a call takes about
//    max(longest part, blocks x slices / warps resident) block round trips. Shorter parts shorten the
//    chain of the longest (hub) windows until the grid's warps are all busy;
//  - the scratch: every part of a split window adds its 8 rows x F float32 sums into the scratch
//    through the L2, split parts x 32 F bytes at kTcScratchBytesPerUs. Shorter parts split more
//    windows into more parts, and the bytes grow with F.
// Against the H200's counter check (parts of 4 / 32, the scratch sums still atomics): email-Enron 23.2 / 30.9 us
// measured, 23.5 / 29.9 modelled at F = 32, 95.0 / 46.4 and 85.7 / 33.2 at F = 128; facebook-combined
// 15.5 / 29.4 and 14.3 / 28.9, 55.9 / 40.2 and 46.2 / 29.0. At F = 128 the model leaves out a fixed
// 10-13 us that no part length changes; the differences it gets within 4 us. It picks parts of 8 at
// F = 32 and 16 at F = 128 on both graphs (neither length measured yet), and 32 on large matrices,
// whose warps are all busy at every length.
SPARSEPORT_TC_HD constexpr double tc_part_cost_us(const TcPartCounts& c, int i, int64_t F, int64_t slices, int sms) {
  const double warps = static_cast<double>(sms > 0 ? sms : 1) * kTcResidentWarpsPerSm;
  const double longest = static_cast<double>(c.max_window_blocks < tc_part_length(i) ? c.max_window_blocks
                                                                                      : tc_part_length(i));
  const double per_warp = static_cast<double>(c.blocks) * static_cast<double>(slices > 0 ? slices : 1) / warps;
  const double chain = kTcBlockLatencyUs * (longest > per_warp ? longest : per_warp);
  const double scratch = static_cast<double>(c.split_parts[i]) * 32.0 * static_cast<double>(F) / kTcScratchBytesPerUs;
  return chain + scratch;
}

// The part length (4, 8, 16 or 32 blocks) of least modelled time; a tie goes to the longer parts
// (fewer parts and no more splits: the lengths at or above the longest window give the same parts).
SPARSEPORT_TC_HD constexpr int tc_part_blocks(const TcPartCounts& c, int64_t F, int64_t slices, int sms) {
  int best = kTcPartLengths - 1;
  double best_us = tc_part_cost_us(c, best, F, slices, sms);
  for (int i = kTcPartLengths - 2; i >= 0; --i) {
    const double us = tc_part_cost_us(c, i, F, slices, sms);
    if (us < best_us) best = i, best_us = us;
  }
  return tc_part_length(best);
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

  int64_t split_parts() const { return parts - (windows - split_windows); }  // parts of split windows

  // Device bytes the plan holds: tiles (2 bytes a value), column indices, the parts, and the
  // position in the tiles of each entry (8 bytes; the per-call value refresh reads it). The parts of
  // one length: the GPU's plan holds a list for each length that splits a window (spmm_tc_window.cu).
  int64_t bytes(int64_t nnz, int64_t index_size, int64_t part_size) const {
    return blocks * (kTcTileValues * 2 + kTcBlockCols * index_size) + parts * part_size + nnz * 8;
  }
};

// The format's sizes for a host CSR (rowptr of rows + 1 entries, colind of rowptr[rows]) cut into
// parts of at most part_blocks (>= 1) blocks, computed the way the GPU build does (sorted (column,
// row) pairs per window).
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

// The counts tc_part_blocks takes, for a host CSR (as tc_format_size).
template <class I>
TcPartCounts tc_part_counts(const std::vector<I>& rowptr, const std::vector<I>& colind, int64_t rows) {
  TcPartCounts c;
  for (int i = 0; i < kTcPartLengths; ++i) {
    const TcFormatSize z = tc_format_size(rowptr, colind, rows, tc_part_length(i));
    c.blocks = z.blocks;
    c.max_window_blocks = z.max_window_blocks;
    c.split_parts[i] = z.split_parts();
  }
  return c;
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
