// SPDX-License-Identifier: Apache-2.0
// Host side of spmm.hub_split's plan on a GPU, shared by the cuda plugin (kernels/cuda/spmm_hub.cuh)
// and the kokkos plugin on a device space (kernels/kokkos/spmm.cpp): the order in which the lane
// groups take the regular rows. Plain C++ (no CUDA, no Kokkos), so that tests can check it without a GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
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

// A row's gather rounds: ceil(deg / kRound), at least 1 (a row without entries costs a round).
// Nondecreasing in deg, so a CTA's slowest row is its longest.
inline int64_t row_rounds(int64_t deg) { return std::max<int64_t>(1, (deg + kRound - 1) / kRound); }

// Gather rounds done over rounds held by CTAs of kCtaWarps warps of kRoundRows rows each, the rows
// of degrees deg taken in that order (a row without entries costs a round). Both sums are whole
// numbers, summed exactly in int64 (as they were in double while below 2^53, so the quotient is the
// same bits).
inline double cta_use(const std::vector<int64_t>& deg) {
  constexpr int64_t kCtaRows = int64_t{kCtaWarps} * kRoundRows;
  int64_t done = 0, held = 0;
  for (size_t c = 0; c < deg.size(); c += kCtaRows) {
    int64_t most = 0;
    const size_t end = std::min(deg.size(), c + static_cast<size_t>(kCtaRows));
    for (size_t r = c; r < end; ++r) {
      const int64_t rounds = row_rounds(deg[r]);
      done += rounds;
      most = std::max(most, rounds);
    }
    held += most * kCtaRows;
  }
  return held > 0 ? static_cast<double>(done) / static_cast<double>(held) : 1.0;
}

// The rows of at most `threshold` entries (the others are hub_split's CTA items), longest first
// within each window of kOrderWindow of them, rows of equal length in row order; empty when that
// would not raise cta_use by kOrderGain. With hubs, also the other rows (those of more than
// `threshold` entries), in row order, whatever the order: the plan's CTA items come from the same
// pass over rowptr instead of a second one (a products-sized rowptr is 10 MB, read from memory).
//
// One pass over rowptr, a window at a time in buffers that stay in L1, with no array of degrees or
// of sorted degrees: a counting sort whose table is filled as the rows are read, each row noting its
// place among its length's rows (so that the scatter only reads the table), and cta_use's sums of
// both orders taken from the window and the table (a window holds whole CTAs, a sorted window's CTA
// is as slow as its first row, and a length's rows do its rounds each). A window holding a row of 4
// windows' length or more (a threshold that high) or of a negative one (a rowptr that decreases)
// takes a stable comparison sort instead: its table would cost more than the ~10 k comparisons.
// The version before kept rows, degrees (int64), the order and the sorted degrees of the whole graph,
// 24 bytes a row, and summed cta_use in double: 48-91 ms on a products-sized graph (2.4 M rows,
// 124 M entries; 2-core VM shared with other runs, best of 11), 10-30 ms of it first-touch page
// faults; this one 14-23 ms, the same order bit for bit.
template <class I>
std::vector<I> regular_order(const std::vector<I>& rowptr, int64_t threshold, std::vector<int64_t>* hubs = nullptr) {
  using U = std::make_unsigned_t<I>;
  constexpr size_t kC = static_cast<size_t>(kCtaWarps) * kRoundRows;
  constexpr size_t kWin = static_cast<size_t>(kOrderWindow);
  static_assert(kWin % kC == 0, "a window holds whole CTAs, so cta_use sums window by window");
  const int64_t m = static_cast<int64_t>(rowptr.size()) - 1;
  std::vector<I> order;
  if (m <= 0) return order;
  order.reserve(static_cast<size_t>(m));
  if (hubs != nullptr && threshold >= 0 && threshold < INT64_MAX) {
    // Room for every hub at once (a hub holds threshold + 1 entries or more): reserving touches no
    // page, where regrowing faults in and copies twice as much.
    const int64_t nnz = static_cast<int64_t>(rowptr.back()) - static_cast<int64_t>(rowptr.front());
    hubs->reserve(hubs->size() + static_cast<size_t>(std::clamp<int64_t>(nnz / (threshold + 1), 0, m)));
  }
  // Lengths 0 .. L - 1 have a slot in the table; slot L takes the hubs and the rows that send their
  // window to the comparison sort.
  const size_t L = static_cast<size_t>(std::clamp<int64_t>(threshold, -1, 4 * kOrderWindow - 1) + 1);
  std::vector<uint32_t> table(L + 1, 0);  // per length: its rows so far, then where they go
  std::vector<I> rows(kWin), deg(kWin);
  std::vector<uint32_t> place(kWin);  // a row's place among its window's rows of its length
  int64_t done = 0, natural = 0, sorted = 0;
  const auto window = [&](size_t n, bool outside) {
    // The window's order goes straight into order's tail (reserved: no reallocation).
    const size_t base = order.size();
    order.resize(base + n);
    I* out = order.data() + base;
    // Natural order: each CTA as slow as its longest row.
    I longest = 0;
    for (size_t c = 0; c < n; c += kC) {
      const size_t end = std::min(n, c + kC);
      I most = deg[c];
      for (size_t i = c + 1; i < end; ++i) most = std::max(most, deg[i]);
      natural += row_rounds(most);
      longest = std::max(longest, most);
    }
    if (outside) {
      std::iota(place.begin(), place.begin() + static_cast<std::ptrdiff_t>(n), 0U);
      std::stable_sort(place.begin(), place.begin() + static_cast<std::ptrdiff_t>(n),
                       [&](uint32_t x, uint32_t y) { return deg[x] > deg[y]; });
      for (size_t i = 0; i < n; ++i) {
        out[i] = rows[place[i]];
        done += row_rounds(deg[place[i]]);
      }
      for (size_t c = 0; c < n; c += kC) sorted += row_rounds(deg[place[c]]);
      std::fill(table.begin(), table.end(), 0U);
    } else {
      // Longest first: table[d] becomes where the rows of length d go, after every longer one. The
      // CTAs that begin among them (at multiples of kC) are as slow as a row of length d.
      uint32_t at = 0;
      for (size_t d = static_cast<size_t>(longest) + 1; d-- > 0;) {
        const uint32_t here = table[d];
        table[d] = at;
        if (here == 0) continue;
        const int64_t rounds = row_rounds(static_cast<int64_t>(d));
        done += rounds * here;
        sorted += rounds * static_cast<int64_t>((at + here + kC - 1) / kC - (at + kC - 1) / kC);
        at += here;
      }
      for (size_t i = 0; i < n; ++i) out[table[static_cast<size_t>(deg[i])] + place[i]] = rows[i];
      std::fill(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(longest) + 1, 0U);
      table[L] = 0;
    }
  };
  const I* rp = rowptr.data();
  size_t n = 0;
  bool outside = false;
  for (int64_t r = 0; r < m; ++r) {
    const I d = static_cast<I>(rp[r + 1] - rp[r]);
    const size_t slot = std::min(static_cast<size_t>(static_cast<U>(d)), L);
    const bool keep = static_cast<int64_t>(d) <= threshold;
    // Written whatever d, kept when d <= threshold: no branch to mispredict on the hubs (their
    // slot is L, and so is the slot of any row that sends the window to the comparison sort).
    rows[n] = static_cast<I>(r);
    deg[n] = d;
    place[n] = table[slot]++;
    outside |= keep && slot == L;
    n += keep ? 1 : 0;
    if (!keep && hubs != nullptr) hubs->push_back(r);
    if (n == kWin) {
      window(n, outside);
      n = 0;
      outside = false;
    }
  }
  if (n > 0) window(n, outside);
  // cta_use of either order: done / held, the same bits as summing in double (whole numbers < 2^53).
  constexpr int64_t kCtaRows = static_cast<int64_t>(kC);
  const double natural_use = natural > 0 ? static_cast<double>(done) / static_cast<double>(natural * kCtaRows) : 1.0;
  const double sorted_use = sorted > 0 ? static_cast<double>(done) / static_cast<double>(sorted * kCtaRows) : 1.0;
  if (sorted_use < kOrderGain * natural_use) return {};
  return order;
}

// Every row once: regular_order's rows, then the rows above threshold in row order; empty where
// regular_order is. For a kernel whose whole-row workers must still visit every row when its plan
// has gone stale (the kokkos plugin's: they skip a listed hub by its current length, so a hub that
// shrank is written whole by its row's worker, and a row that grew past the threshold too).
template <class I>
std::vector<int64_t> every_row_order(const std::vector<I>& rowptr, int64_t threshold) {
  std::vector<int64_t> hubs;
  const std::vector<I> regular = regular_order(rowptr, threshold, &hubs);
  if (regular.empty()) return {};
  std::vector<int64_t> order;
  order.reserve(regular.size() + hubs.size());
  order.assign(regular.begin(), regular.end());
  order.insert(order.end(), hubs.begin(), hubs.end());
  return order;
}

}  // namespace sparseport::row_order
