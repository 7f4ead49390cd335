// SPDX-License-Identifier: Apache-2.0
// The generators whose columns are uniform draws: er (Erdos-Renyi by geometric skipping), hubs
// and megarow (uniform rows with a few heavy ones), sbm (uniform within and outside blocks).
// Separate from the other families: they share the per-row streams and distinct sampling of
// fill_random_rows and sample_distinct, and nothing of the power-law or grid machinery.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/generators_internal.hpp"

namespace sparseport::detail::gen {
namespace {

// Fills colind row by row with distinct random columns, the counts given in rowptr; row i draws
// from its own stream so a row's columns do not depend on the other rows.
template <class I>
void fill_random_rows(Pattern<I>& g, uint64_t key) {
  g.colind.resize(static_cast<size_t>(g.rowptr.back()));
  for (int64_t i = 0; i < g.n; ++i) {
    const I b = g.rowptr[static_cast<size_t>(i)], e = g.rowptr[static_cast<size_t>(i) + 1];
    Stream rng{detail::derive_key(key, static_cast<uint64_t>(i))};
    sample_distinct(static_cast<uint64_t>(g.n), static_cast<uint64_t>(e - b), rng, g.colind.data() + b);
  }
}

}  // namespace

template <class I>
Pattern<I> make_er(const Spec& s, uint64_t key) {
  const int64_t n = s.whole(0);
  const double p = s.fraction(1);
  check_rows_fit<I>(s, n);
  const long double expected = static_cast<long double>(p) * n * n;
  check_nnz_fits<I>(s, "N*N*P = " + fmt_count(expected) + " expected", expected);
  check_memory<I>(s, n, expected, 0);

  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  const auto un = static_cast<uint64_t>(n);
  const uint64_t p64 = p >= 1.0 ? 0 : static_cast<uint64_t>(std::ldexp(p, 64));  // p * 2^64, exact scaling
  if (n == 0 || (p < 1.0 && p64 == 0)) return g;  // P below 2^-64: nothing to draw
  if (p >= 1.0) {
    g.colind.resize(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {
      g.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>((i + 1) * n);
      for (int64_t j = 0; j < n; ++j) g.colind[static_cast<size_t>(i * n + j)] = static_cast<I>(j);
    }
    return g;
  }
  g.colind.reserve(static_cast<size_t>(std::min<long double>(expected * 1.01L + 64, kIndexMax<I>)));
  // Geometric skipping (Batagelj & Brandes 2005): the gap to the next entry of a row is
  // floor(log U / log(1-P)), so the cost is O(N + nnz) however sparse the matrix is. Each row has
  // its own stream, so rows could be drawn in any order (or in parallel) with the same result.
  const uint64_t neg_log_q = neg_log2_q56(0 - p64);  // 1 - P in Q0.64; >= 1 since P >= 2^-64
  // The words of a row's stream do not depend on the skips, so their logarithms are taken a batch
  // at a time (the same values; see neg_log2_q56_batch); a row wastes at most a batch less one.
  // Batches of 4 when rows hold a few entries, else 2.
  const int batch = static_cast<long double>(p) * n >= 3 ? 4 : 2;
  for (uint64_t row = 0; row < un; ++row) {
    Stream rng{detail::derive_key(key, row)};
    std::array<uint64_t, 4> logs{};
    int at = batch;
    const auto skip = [&] {
      if (at == batch) {
        std::array<uint64_t, 4> words{};
        for (int j = 0; j < batch; ++j) words[static_cast<size_t>(j)] = rng.next() | 1;
        if (batch == 4) {
          neg_log2_q56_batch<4>(words, logs);
        } else {
          neg_log2_q56_batch<2>(words, logs);
        }
        at = 0;
      }
      return logs[static_cast<size_t>(at++)] / neg_log_q;
    };
    // col + skip < 2^63 + 2^62: no overflow (skip <= 2^62 because neg_log_q >= 1).
    for (uint64_t col = skip(); col < un; col += 1 + skip()) {
      if (static_cast<int64_t>(g.colind.size()) == kIndexMax<I>)
        s.refuse("the draw exceeded " + std::to_string(kIndexMax<I>) + " entries, more than " + kIndexName<I> +
                 " indices can address; use int64 indices");
      g.colind.push_back(static_cast<I>(col));
    }
    g.rowptr[row + 1] = static_cast<I>(g.colind.size());
  }
  return g;
}

template <class I>
Pattern<I> make_hubs(const Spec& s, uint64_t key) {
  const int64_t n = s.whole(0), deg = s.whole(1), hubs = s.whole(2), hub_deg = s.whole(3);
  check_rows_fit<I>(s, n);
  if (deg > n) s.refuse("DEG = " + std::to_string(deg) + " distinct columns do not fit in N = " + std::to_string(n));
  if (hubs > n) s.refuse("NHUBS = " + std::to_string(hubs) + " is more than the N = " + std::to_string(n) + " rows");
  if (hub_deg > n)
    s.refuse("HUBDEG = " + std::to_string(hub_deg) + " distinct columns do not fit in N = " + std::to_string(n));
  const long double nnz = static_cast<long double>(n - hubs) * deg + static_cast<long double>(hubs) * hub_deg;
  check_nnz_fits<I>(s, "(N-NHUBS)*DEG + NHUBS*HUBDEG = " + fmt_count(nnz), nnz);
  check_memory<I>(s, n, nnz, 0);

  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, static_cast<I>(deg));
  g.rowptr[0] = 0;
  // Hub h sits in the middle of the h-th of NHUBS equal stripes: floor((2h+1) N / (2 NHUBS)).
  for (int64_t h = 0; h < hubs; ++h) {
    const auto row = static_cast<uint64_t>(static_cast<u128>(2 * h + 1) * static_cast<u128>(n) / static_cast<u128>(2 * hubs));
    g.rowptr[row + 1] = static_cast<I>(hub_deg);
  }
  prefix_sum(g.rowptr);
  fill_random_rows(g, key);
  return g;
}

template <class I>
Pattern<I> make_megarow(const Spec& s, uint64_t key) {
  const int64_t n = s.whole(0), deg = s.whole(1);
  const double fraction = s.fraction(2);
  if (n < 1) s.refuse("N is 0, but the mega-row is row 0 of an N x N matrix");
  check_rows_fit<I>(s, n);
  const long double total_ld = static_cast<long double>(n) * deg;
  check_nnz_fits<I>(s, "N*DEG = " + fmt_count(total_ld), total_ld);
  check_memory<I>(s, n, total_ld, 0);
  const int64_t total = n * deg;
  // One IEEE multiply and a round: the same count on every machine.
  const auto mega = static_cast<int64_t>(std::llround(fraction * static_cast<double>(total)));
  if (mega > n)
    s.refuse("row 0 would hold FRACTION*N*DEG = " + std::to_string(mega) + " distinct columns, but a row has only N = " +
             std::to_string(n) + " (need FRACTION*N*DEG <= N)");
  const int64_t rest = total - mega;
  const int64_t others = n - 1;
  if (rest > 0 && others == 0)
    s.refuse("the " + std::to_string(rest) + " entries left after row 0 have no other row to go to (N = 1)");
  const int64_t most = rest > 0 ? rest / others + (rest % others != 0 ? 1 : 0) : 0;  // ceil without overflow
  if (most > n)
    s.refuse("the other N-1 = " + std::to_string(others) + " rows would need " + std::to_string(most) +
             " distinct columns each, more than N = " + std::to_string(n));

  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  g.rowptr[1] = static_cast<I>(mega);
  // The rest spread evenly: row r >= 1 ends at floor(r * rest / (N-1)) of them, so the other rows'
  // degrees differ by at most one and the total is exactly N*DEG.
  const auto upto = [&](int64_t x) {
    return static_cast<int64_t>(static_cast<u128>(x) * static_cast<u128>(rest) / static_cast<u128>(others));
  };
  for (int64_t r = 1; r < n; ++r) {
    g.rowptr[static_cast<size_t>(r) + 1] = static_cast<I>(upto(r) - upto(r - 1));
  }
  prefix_sum(g.rowptr);
  fill_random_rows(g, key);
  return g;
}

template <class I>
Pattern<I> make_sbm(const Spec& s, uint64_t key) {
  const int64_t n = s.whole(0), blocks = s.whole(1), deg_in = s.whole(2), deg_out = s.whole(3);
  check_rows_fit<I>(s, n);
  if (blocks == 0) s.refuse("BLOCKS is 0; there must be at least one block");
  if (blocks > std::max<int64_t>(n, 1))
    s.refuse("BLOCKS = " + std::to_string(blocks) + " is more than the N = " + std::to_string(n) + " rows");
  const int64_t smallest = n / blocks, largest = n / blocks + (n % blocks != 0 ? 1 : 0);
  if (deg_in > smallest)
    s.refuse("DEGIN = " + std::to_string(deg_in) + " distinct columns do not fit in the smallest block, of floor(N/BLOCKS) = " +
             std::to_string(smallest) + " rows");
  if (deg_out > n - largest)
    s.refuse("DEGOUT = " + std::to_string(deg_out) + " distinct columns do not fit outside the largest block: N - ceil(N/BLOCKS) = " +
             std::to_string(n - largest));
  const long double nnz = static_cast<long double>(n) * (static_cast<long double>(deg_in) + deg_out);
  check_nnz_fits<I>(s, "N*(DEGIN+DEGOUT) = " + fmt_count(nnz), nnz);
  check_memory<I>(s, n, nnz, 0);

  Pattern<I> g;
  g.n = n;
  g.rowptr.resize(static_cast<size_t>(n) + 1);
  g.colind.resize(static_cast<size_t>(n * (deg_in + deg_out)));
  const auto un = static_cast<uint64_t>(n);
  for (int64_t b = 0; b < blocks; ++b) {
    // Block b holds rows [floor(b N / BLOCKS), floor((b+1) N / BLOCKS)).
    const auto lo = static_cast<int64_t>(static_cast<u128>(b) * un / static_cast<uint64_t>(blocks));
    const auto hi = static_cast<int64_t>(static_cast<u128>(b + 1) * un / static_cast<uint64_t>(blocks));
    const int64_t size = hi - lo;
    for (int64_t i = lo; i < hi; ++i) {
      const auto at = static_cast<size_t>(i * (deg_in + deg_out));
      g.rowptr[static_cast<size_t>(i)] = static_cast<I>(at);
      I* row = g.colind.data() + at;
      Stream rng{detail::derive_key(key, static_cast<uint64_t>(i))};
      // Outside: DEGOUT of the N - size other columns, numbered without the block, then split
      // around it; inside: DEGIN of the block's columns in between.
      sample_distinct(un - static_cast<uint64_t>(size), static_cast<uint64_t>(deg_out), rng, row);
      const auto before = std::lower_bound(row, row + deg_out, static_cast<I>(lo)) - row;
      for (int64_t t = deg_out - 1; t >= before; --t) row[t + deg_in] = static_cast<I>(row[t] + size);
      sample_distinct(static_cast<uint64_t>(size), static_cast<uint64_t>(deg_in), rng, row + before);
      for (int64_t t = before; t < before + deg_in; ++t) row[t] = static_cast<I>(row[t] + lo);
    }
  }
  g.rowptr[static_cast<size_t>(n)] = static_cast<I>(g.colind.size());
  return g;
}

template Pattern<int32_t> make_er<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_er<int64_t>(const Spec&, uint64_t);
template Pattern<int32_t> make_hubs<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_hubs<int64_t>(const Spec&, uint64_t);
template Pattern<int32_t> make_megarow<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_megarow<int64_t>(const Spec&, uint64_t);
template Pattern<int32_t> make_sbm<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_sbm<int64_t>(const Spec&, uint64_t);

}  // namespace sparseport::detail::gen
