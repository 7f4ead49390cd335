// SPDX-License-Identifier: Apache-2.0
// The power-law families: chunglu (expected degrees from power-law weights, edges drawn from an
// alias table) and bipartite (a bag-of-words-like matrix with power-law column popularity).
// Separate because they share the integer-only power-law weights, the exp2 and log2 in fixed
// point and the alias table, which nothing else uses.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/generators_internal.hpp"

namespace sparseport::detail::gen {
namespace {

// ---- power-law weights, alias tables, permutations -------------------------------------------

// log2(x) for x >= 1 in Q.32 (32 fraction bits, truncated), by repeated squaring like neg_log2_q56.
uint64_t log2_q32(uint64_t x) {
  const int e = 63 - std::countl_zero(x);
  uint64_t y = x << (63 - e);  // y / 2^63 in [1, 2)
  uint64_t frac = 0;
  for (int k = 0; k < 32; ++k) {
    const u128 sq = static_cast<u128>(y) * y;
    const auto over = static_cast<unsigned>(sq >> 127);  // (y / 2^63)^2 >= 2
    y = static_cast<uint64_t>(sq >> (63 + over));
    frac = (frac << 1) | over;
  }
  return (static_cast<uint64_t>(e) << 32) | frac;
}

u128 isqrt128(u128 v) {  // floor(sqrt(v)), digit by digit
  u128 r = 0, bit = u128{1} << 126;
  while (bit > v) bit >>= 2;
  while (bit != 0) {
    if (v >= r + bit) {
      v -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

// 2^(-f / 2^32) for f in [0, 2^32) in Q1.63: the product of 2^(-2^-k) over the bits k of f, each
// constant the square root of the one before. Integer-only, so that power-law weights (and the
// graphs drawn from them) are identical everywhere: libm's pow is not correctly rounded.
class Exp2Neg {
 public:
  Exp2Neg() {
    u128 prev = u128{1} << 62;  // 1/2 in Q1.63
    for (uint64_t& c : c_) {
      c = static_cast<uint64_t>(isqrt128(prev << 63));
      prev = c;
    }
  }
  uint64_t operator()(uint32_t f) const {
    uint64_t m = uint64_t{1} << 63;
    for (int k = 0; f != 0; ++k, f <<= 1)
      if ((f >> 31) != 0) m = static_cast<uint64_t>((static_cast<u128>(m) * c_[static_cast<size_t>(k)]) >> 63);
    return m;
  }

 private:
  std::array<uint64_t, 32> c_{};
};

// Integer weights W_r ~ 2^P (r+1)^(-alpha) for r in [0, n), alpha = alpha_q / 2^32 and
// P = 62 - bit_width(n): W_0 = 2^P is the largest, and n * W_r (the alias table's scaled weight)
// and the sum of all of them stay below 2^62. Exact (to 2^-32 in the exponent) below rank 1024
// and at knots 1/512 of the rank apart above it, linear in between (relative error about 1e-6):
// the exact evaluation costs about 60 multiplications, too many for every one of millions of ranks.
std::vector<uint64_t> power_weights(uint64_t n, uint64_t alpha_q) {
  const int p = 62 - static_cast<int>(std::bit_width(n));
  const Exp2Neg exp2_neg;
  const auto exact = [&](uint64_t r) {
    const auto t = static_cast<uint64_t>((static_cast<u128>(alpha_q) * log2_q32(r + 1)) >> 32);  // alpha log2(r+1)
    const uint64_t shift = (63 - static_cast<uint64_t>(p)) + (t >> 32);
    return shift >= 64 ? uint64_t{0} : exp2_neg(static_cast<uint32_t>(t)) >> shift;
  };
  std::vector<uint64_t> w(n);
  uint64_t r = 0, wr = exact(0);
  while (r < n) {
    const int log_step = std::max(0, static_cast<int>(std::bit_width((r + 1) >> 9)) - 1);  // step = 2^log_step <= (r+1)/512
    const uint64_t next = r + (uint64_t{1} << log_step), wn = exact(next);
    const auto drop = static_cast<i128>(wr) - static_cast<i128>(wn);  // >= 0 but for rounding
    for (uint64_t j = 0; r + j < std::min(next, n); ++j)
      w[r + j] = static_cast<uint64_t>(static_cast<i128>(wr) - ((drop * j) >> log_step));
    r = next;
    wr = wn;
  }
  return w;
}

// Alpha = 1/(EXPONENT-1) in Q.32: one IEEE division and an exact scaling, the same everywhere.
uint64_t alpha_q32(double exponent) {
  return static_cast<uint64_t>(std::llround(std::ldexp(1.0 / (exponent - 1.0), 32)));
}

// Walker's alias method with Vose's construction, in integers: slot j keeps its own id with
// probability prob/2^64 and gives `other` otherwise, so a draw is two words and one lookup.
template <class I>
class AliasTable {
 public:
  // Weights w (sum below 2^62, each times w.size() below 2^62, not all zero) for the ids.
  AliasTable(const std::vector<uint64_t>& w, const std::vector<I>& ids) : slots_(w.size()) {
    const uint64_t n = w.size();
    uint64_t total = 0;
    for (const uint64_t x : w) total += x;
    std::vector<uint64_t> q(n);
    std::vector<uint64_t> small, large;
    for (uint64_t r = 0; r < n; ++r) {
      q[r] = w[r] * n;  // slot size in units where each slot holds `total`
      (q[r] < total ? small : large).push_back(r);
    }
    const auto threshold = [&](uint64_t x) { return static_cast<uint64_t>((static_cast<u128>(x) << 64) / total); };
    while (!small.empty() && !large.empty()) {
      const uint64_t sm = small.back(), lg = large.back();
      small.pop_back();
      slots_[sm] = {threshold(q[sm]), ids[sm], ids[lg]};
      q[lg] -= total - q[sm];
      if (q[lg] < total) {
        large.pop_back();
        small.push_back(lg);
      }
    }
    // Exact arithmetic leaves only full slots (sum q = n * total).
    for (const uint64_t r : large) slots_[r] = {~uint64_t{0}, ids[r], ids[r]};
    for (const uint64_t r : small) slots_[r] = {~uint64_t{0}, ids[r], ids[r]};
  }

  // A draw is a slot from one word, by multiply-high (Lemire without the rejection: a bias below
  // n/2^64 buys a draw that is one lookup), and a coin, a second word.
  size_t slot(uint64_t word) const { return static_cast<size_t>((static_cast<u128>(word) * slots_.size()) >> 64); }
  void prefetch(size_t slot) const { __builtin_prefetch(&slots_[slot]); }
  I pick(size_t slot, uint64_t coin) const {
    const Slot& e = slots_[slot];
    return coin < e.prob ? e.self : e.other;
  }
  I draw(Stream& s) const {
    const size_t j = slot(s.next());
    return pick(j, s.next());
  }

 private:
  struct Slot {
    uint64_t prob;
    I self, other;
  };
  std::vector<Slot> slots_;
};
// What an alias table over n ids holds while it is built (slots, scaled weights, work lists).
template <class I>
constexpr long double kAliasBytes = sizeof(uint64_t) + 2 * sizeof(I) + 3 * sizeof(uint64_t);

// Row r of M draws expects M * w_r / sum(w) entries. A row has only N columns, so the largest
// weights are lowered to the level c at which each of them expects exactly N draws: with the top
// k capped, M c = N (k c + tail_k), the smallest k for which c >= w_k.
void cap_expected_degrees(std::vector<uint64_t>& w, uint64_t n, uint64_t m) {
  u128 tail = 0;
  for (const uint64_t x : w) tail += x;
  if (w.empty() || static_cast<u128>(m) * w[0] <= static_cast<u128>(n) * tail) return;
  for (size_t k = 1; k < w.size(); ++k) {
    tail -= w[k - 1];  // the weights from rank k on
    const u128 kn = static_cast<u128>(k) * n;
    if (tail == 0 || kn >= m) {  // nothing left below the top k: those share the draws equally
      std::fill(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k), std::max<uint64_t>(w[k - 1], 1));
      return;
    }
    const u128 c = std::max<u128>(static_cast<u128>(n) * tail / (m - kn), 1);
    if (c >= w[k]) {
      for (size_t r = 0; r < k; ++r) w[r] = static_cast<uint64_t>(std::min<u128>(w[r], c));
      return;
    }
  }
  std::fill(w.begin(), w.end(), w.back() == 0 ? 1 : w.back());
}

// Each edge is a row and a column drawn from the table. A table of millions of vertices is far
// bigger than the caches, and a draw is one random lookup in it: the slots of a batch of draws are
// chosen and prefetched first, then read (about 2x faster at 2.5M vertices).
template <class I, class K>
Pattern<I> chunglu_edges(const AliasTable<I>& vertex, int64_t n, int bits, int64_t draws, uint64_t key) {
  std::vector<K> keys(static_cast<size_t>(draws));
  Stream rng{key};
  constexpr size_t kBatch = 64;
  std::array<size_t, 2 * kBatch> slot{};
  std::array<uint64_t, 2 * kBatch> coin{};
  for (size_t t0 = 0; t0 < keys.size(); t0 += kBatch) {
    const size_t m = std::min(kBatch, keys.size() - t0);
    for (size_t t = 0; t < 2 * m; ++t) {  // row, column, row, column, ...
      slot[t] = vertex.slot(rng.next());
      coin[t] = rng.next();
      vertex.prefetch(slot[t]);
    }
    for (size_t t = 0; t < m; ++t)
      keys[t0 + t] = (static_cast<K>(vertex.pick(slot[2 * t], coin[2 * t])) << bits) |
                     static_cast<K>(vertex.pick(slot[2 * t + 1], coin[2 * t + 1]));
  }
  radix_sort(keys, 2 * bits);
  return pattern_from_sorted_keys<I>(keys, n, bits);
}

// Column c's popularity is (rank(c) + 1)^(-0.8) for a random ranking: a mild power law, like the
// features of a bag-of-words matrix.
constexpr uint64_t kFeatureAlphaQ32 = (uint64_t{4} << 32) / 5;

}  // namespace

template <class I>
Pattern<I> make_chunglu(const Spec& s, uint64_t key) {
  const int64_t n = s.whole(0), avg = s.whole(1);
  const double exponent = s.number_in(2, 1.5, 4.0, "[1.5, 4]");
  check_rows_fit<I>(s, n);
  if (avg > n) s.refuse("AVGDEG = " + std::to_string(avg) + " is more than N = " + std::to_string(n) + ", the columns of a row");
  const long double draws_ld = static_cast<long double>(n) * avg;
  check_nnz_fits<I>(s, "N*AVGDEG = " + fmt_count(draws_ld) + " drawn", draws_ld);
  const int bits = n > 1 ? static_cast<int>(std::bit_width(static_cast<uint64_t>(n - 1))) : 0;
  const long double key_bytes = 2 * bits <= 64 ? 8 : 16;
  check_memory<I>(s, n, draws_ld, draws_ld * 2 * key_bytes + static_cast<long double>(n) * (kAliasBytes<I> + 8 + sizeof(I)));

  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  if (n == 0 || avg == 0) return g;
  const auto un = static_cast<uint64_t>(n);
  const int64_t draws = n * avg;
  std::vector<uint64_t> w = power_weights(un, alpha_q32(exponent));
  cap_expected_degrees(w, un, static_cast<uint64_t>(draws));
  // Rank r (weight w_r) is vertex ids[r]: no locality, and the hubs are anywhere.
  const AliasTable<I> vertex(w, random_permutation<I>(n, detail::derive_key(key, 0)));
  w = {};
  if (2 * bits <= 64) return chunglu_edges<I, uint64_t>(vertex, n, bits, draws, detail::derive_key(key, 1));
  return chunglu_edges<I, u128>(vertex, n, bits, draws, detail::derive_key(key, 1));
}

template <class I>
Pattern<I> make_bipartite(const Spec& s, uint64_t key) {
  const int64_t rows = s.whole(0), cols = s.whole(1), deg = s.whole(2);
  check_count_fits<I>(s, "ROWS", static_cast<long double>(rows), "rows");
  check_count_fits<I>(s, "COLS", static_cast<long double>(cols), "columns");
  if (deg > cols) s.refuse("DEG = " + std::to_string(deg) + " distinct columns do not fit in COLS = " + std::to_string(cols));
  const long double expected = static_cast<long double>(rows) * deg;
  check_nnz_fits<I>(s, "ROWS*DEG = " + fmt_count(expected) + " expected", expected);
  check_memory<I>(s, rows, expected, static_cast<long double>(cols) * (kAliasBytes<I> + 8 + sizeof(I)));

  Pattern<I> g;
  g.n = rows;
  g.cols = cols;
  g.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  if (rows == 0 || deg == 0) return g;
  const AliasTable<I> column(power_weights(static_cast<uint64_t>(cols), kFeatureAlphaQ32),
                             random_permutation<I>(cols, detail::derive_key(key, 0)));
  // Row i draws 1 + Geometric(1/DEG) columns (mean DEG, capped at COLS), the count from word i of
  // one stream (integer-only skipping as in er), the columns from its own stream; repeats merged.
  const uint64_t count_key = detail::derive_key(key, 1), column_key = detail::derive_key(key, 2);
  const auto p64 = static_cast<uint64_t>((u128{1} << 64) / static_cast<uint64_t>(deg));  // 1/DEG in Q0.64
  const uint64_t neg_log_q = deg >= 2 ? neg_log2_q56(0 - p64) : 0;  // -log2(1 - 1/DEG)
  g.colind.reserve(static_cast<size_t>(std::min<long double>(expected * 1.01L + 64, kIndexMax<I>)));
  std::vector<I> buf;
  for (int64_t i = 0; i < rows; ++i) {
    uint64_t draws = 1;
    if (deg >= 2)
      draws += std::min(static_cast<uint64_t>(cols) - 1,
                        neg_log2_q56(detail::word_at(count_key, static_cast<uint64_t>(i)) | 1) / neg_log_q);
    Stream rng{detail::derive_key(column_key, static_cast<uint64_t>(i))};
    buf.resize(draws);
    for (I& c : buf) c = column.draw(rng);
    std::sort(buf.begin(), buf.end());
    const auto distinct = static_cast<int64_t>(std::unique(buf.begin(), buf.end()) - buf.begin());
    if (static_cast<int64_t>(g.colind.size()) > kIndexMax<I> - distinct)
      s.refuse("the draw exceeded " + std::to_string(kIndexMax<I>) + " entries, more than " + kIndexName<I> +
               " indices can address; use int64 indices");
    g.colind.insert(g.colind.end(), buf.begin(), buf.begin() + distinct);
    g.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(g.colind.size());
  }
  return g;
}

template Pattern<int32_t> make_chunglu<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_chunglu<int64_t>(const Spec&, uint64_t);
template Pattern<int32_t> make_bipartite<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_bipartite<int64_t>(const Spec&, uint64_t);

}  // namespace sparseport::detail::gen
