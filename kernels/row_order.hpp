// SPDX-License-Identifier: Apache-2.0
// Host side of spmm.hub_split's plan on a GPU, shared by the cuda plugin (kernels/cuda/spmm_hub.cuh)
// and the kokkos plugin on a device space (kernels/kokkos/spmm.cpp): the order in which the lane
// groups take the regular rows. Plain C++ (no CUDA, no Kokkos), so that tests can check it without a GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparseport::row_order {

// A warp's lane groups walk rows side by side and a CTA keeps its
// slot until its slowest warp ends, so on a skewed graph most lanes wait: with 8-lane groups (F = 32)
// the CTAs of a Chung-Lu graph of mean degree 12-34 in natural order do 28-44 % of the gather
// rounds they hold (a round: kRound gathers a lane), a uniform graph 70-100 %. Sorting the rows by
// length, longest first, within windows of kOrderWindow consecutive rows gives 93-99 % and moves no
// row far from its neighbours (B's rows that neighbouring rows share stay close in time). The
// order is used when it raises that use by kOrderGain or more; otherwise the rows run in natural
// order with no extra load. (Rows of equal length keep their order: a stable sort.)
// The model is one lane shape (F = 32) for every width: wider groups hold fewer rows a warp, but the
// CTA, which decides, still holds 32 to 128 rows.
inline constexpr int64_t kOrderWindow = 1024;
inline constexpr int kCtaWarps = 8;    // kBlock / 32
inline constexpr int kRoundRows = 4;   // rows a warp takes side by side at F = 32 (8-lane groups)
inline constexpr int kRound = 8;       // gathers in flight per lane (spmm_hub_kernel's U)
inline constexpr double kOrderGain = 1.15;

// Gather rounds done over rounds held by CTAs of kCtaWarps warps of kRoundRows rows each, the rows
// of degrees deg taken in that order (a row without entries costs a round).
inline double cta_use(const std::vector<int64_t>& deg) {
  constexpr int64_t kCtaRows = int64_t{kCtaWarps} * kRoundRows;
  double done = 0.0, held = 0.0;
  for (size_t c = 0; c < deg.size(); c += kCtaRows) {
    int64_t most = 0;
    const size_t end = std::min(deg.size(), c + static_cast<size_t>(kCtaRows));
    for (size_t r = c; r < end; ++r) {
      const int64_t rounds = std::max<int64_t>(1, (deg[r] + kRound - 1) / kRound);
      done += static_cast<double>(rounds);
      most = std::max(most, rounds);
    }
    held += static_cast<double>(most) * static_cast<double>(kCtaRows);
  }
  return held > 0.0 ? done / held : 1.0;
}

// The rows of at most `threshold` entries (the others are hub_split's CTA items), longest first
// within each window of kOrderWindow of them; empty when that would not raise cta_use by kOrderGain.
template <class I>
std::vector<I> regular_order(const std::vector<I>& rowptr, int64_t threshold) {
  std::vector<I> rows;
  std::vector<int64_t> deg;
  const int64_t m = static_cast<int64_t>(rowptr.size()) - 1;
  rows.reserve(static_cast<size_t>(std::max<int64_t>(m, 0)));
  deg.reserve(static_cast<size_t>(std::max<int64_t>(m, 0)));
  for (int64_t r = 0; r < m; ++r) {
    const int64_t d = static_cast<int64_t>(rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]);
    if (d > threshold) continue;
    rows.push_back(static_cast<I>(r));
    deg.push_back(d);
  }
  const double natural = cta_use(deg);
  // Longest first within each window, rows of equal length in row order: a counting sort by length
  // (longest first) where the window's longest row is shorter than 4 windows, as every regular row
  // is under the default thresholds (the table of lengths then costs less than the ~10 k
  // comparisons of sorting a window), else a stable comparison sort. The comparison sort
  // and its index array took 157-171 ms on a products-sized graph (chunglu:2449029:25:2.1, 2-core
  // VM), the largest host step of hub_split's plan, which its first call builds; 63-72 ms with the
  // counting sort.
  std::vector<I> order(rows.size());
  std::vector<int64_t> sorted(rows.size());
  std::vector<size_t> start, idx;  // per length: where its rows go; the fallback's window
  for (size_t w = 0; w < rows.size(); w += kOrderWindow) {
    const size_t end = std::min(rows.size(), w + static_cast<size_t>(kOrderWindow));
    const int64_t longest = *std::max_element(deg.begin() + static_cast<std::ptrdiff_t>(w),
                                              deg.begin() + static_cast<std::ptrdiff_t>(end));
    if (longest >= 4 * kOrderWindow) {
      idx.resize(end - w);
      for (size_t i = w; i < end; ++i) idx[i - w] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return deg[x] > deg[y]; });
      for (size_t i = w; i < end; ++i) order[i] = rows[idx[i - w]], sorted[i] = deg[idx[i - w]];
      continue;
    }
    // start[longest - d]: where the window's rows of length d go, after every longer one.
    start.assign(static_cast<size_t>(longest) + 1, 0);
    for (size_t i = w; i < end; ++i) ++start[static_cast<size_t>(longest - deg[i])];
    size_t at = w;
    for (size_t& n : start) {
      const size_t here = n;
      n = at;
      at += here;
    }
    for (size_t i = w; i < end; ++i) {
      const size_t to = start[static_cast<size_t>(longest - deg[i])]++;
      order[to] = rows[i];
      sorted[to] = deg[i];
    }
  }
  if (cta_use(sorted) < kOrderGain * natural) return {};
  return order;
}

// Every row once: regular_order's rows, then the rows above threshold in row order; empty where
// regular_order is. For a kernel whose whole-row workers must still visit every row when its plan
// has gone stale (the kokkos plugin's: they skip a listed hub by its current length, so a hub that
// shrank is written whole by its row's worker, and a row that grew past the threshold too).
template <class I>
std::vector<int64_t> every_row_order(const std::vector<I>& rowptr, int64_t threshold) {
  const std::vector<I> regular = regular_order(rowptr, threshold);
  if (regular.empty()) return {};
  std::vector<int64_t> order(regular.begin(), regular.end());
  const int64_t m = static_cast<int64_t>(rowptr.size()) - 1;
  for (int64_t r = 0; r < m; ++r)
    if (static_cast<int64_t>(rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]) > threshold)
      order.push_back(r);
  return order;
}

}  // namespace sparseport::row_order
