// SPDX-License-Identifier: Apache-2.0
// What the generator files share: the stream tags and limits, the exact integer helpers (bounded
// draws, the fixed-point logarithm), the parsed Spec (generators_spec.cpp), the Pattern every
// family returns with its size and memory checks, the sorting of drawn edges, and one make_<family>
// per generator. Each family lives in its own file (generators_uniform.cpp: er, hubs, megarow, sbm;
// generators_rmat.cpp: rmat, rmatp, powerlaw; generators_power_law.cpp: chunglu, bipartite;
// generators_grid.cpp: band, meshes, road); generators.cpp dispatches a spec to one of them and
// adds the values. Everything is integer-only or correctly rounded, so that a spec and a seed give
// the same graph on every machine.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "core/registry.hpp"
#include "sparseport/graph.hpp"
#include "core/counter_rng.hpp"

namespace sparseport::detail::gen {

using detail::Stream;
__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

// Separate streams per generator and for the values, so that e.g. hubs and megarow with the same
// seed are not correlated and the values never reuse the draws that chose the columns.
// rmatp shares rmat's tag, so rmatp with the Graph500 probabilities is rmat.
enum : uint64_t {
  kTagEr = 1, kTagRmat = 2, kTagHubs = 3, kTagMegarow = 4, kTagValues = 5,
  kTagChungLu = 6, kTagSbm = 7, kTagMesh = 8, kTagRoad = 9, kTagBipartite = 10,
};

// RMAT quadrant probabilities as thresholds on a uniform 32-bit word: a, a+b, a+b+c, each
// round(x * 2^32), so the quadrant choice is integer-only (2^32: that quadrant and those after it
// are never chosen).
struct RmatThresholds {
  uint64_t a, ab, abc;
};
// Graph500: a = 0.57, a+b = 0.76, a+b+c = 0.95.
constexpr RmatThresholds kGraph500 = {2448131359u, 3264175145u, 4080218931u};

// Whole-number fields go up to 2^62 so that sums of two of them never overflow int64_t.
constexpr int64_t kMaxField = int64_t{1} << 62;

template <class I>
constexpr int64_t kIndexMax = std::numeric_limits<I>::max();
template <class I>
constexpr const char* kIndexName = sizeof(I) == 4 ? "int32" : "int64";

// Uniform in [0, n) for n > 0, exactly: Lemire's multiply-shift with rejection of the biased part
// (Lemire 2019, "Fast random integer generation in an interval").
inline uint64_t bounded(Stream& s, uint64_t n) {
  u128 m = static_cast<u128>(s.next()) * n;
  auto low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<u128>(s.next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// -log2(v / 2^64) for v >= 1, in Q8.56 fixed point, by repeated squaring (one bit per step).
// Integer-only so that the Erdos-Renyi skips are identical everywhere (libm's log is not
// correctly rounded on every platform, and one ulp can move a floor()).
//
// This for the first B of four words at once, step by step for all of them: one logarithm is a
// chain of 56 dependent multiplications, and B independent chains side by side keep the
// multiplier busy (er:625000:5.12e-05, 2e7 entries: 3.3 s -> 1.5 s with B = 4; B = 8 gained
// nothing more).
template <int B>
void neg_log2_q56_batch(const std::array<uint64_t, 4>& v, std::array<uint64_t, 4>& out) {
  std::array<uint64_t, B> y{}, frac{};
  std::array<int, B> lz{};
  for (int j = 0; j < B; ++j) {
    lz[j] = std::countl_zero(v[j]);
    y[j] = v[j] << lz[j];  // y / 2^63 in [1, 2)
  }
  for (int k = 0; k < 56; ++k)
    for (int j = 0; j < B; ++j) {
      const u128 sq = static_cast<u128>(y[j]) * y[j];
      const auto over = static_cast<unsigned>(sq >> 127);  // (y / 2^63)^2 >= 2
      y[j] = static_cast<uint64_t>(sq >> (63 + over));
      frac[j] = (frac[j] << 1) | over;
    }
  for (int j = 0; j < B; ++j) out[j] = (static_cast<uint64_t>(lz[j] + 1) << 56) - frac[j];
}

inline uint64_t neg_log2_q56(uint64_t v) {
  std::array<uint64_t, 4> out{};
  neg_log2_q56_batch<1>({v, 0, 0, 0}, out);
  return out[0];
}

// ---- spec parsing (generators_spec.cpp) ---------------------------------------------------------

struct Kind;

class Spec {
 public:
  explicit Spec(std::string_view text);

  std::string_view name() const;

  // The K of a "SPEC@K" suffix, which replaces GenOptions::seed.
  std::optional<uint64_t> seed() const { return seed_; }

  [[noreturn]] void refuse(const std::string& problem) const;

  std::string field_name(size_t i) const;

  // A whole number in [0, 2^62]; "1000000" and "1e6" both work.
  int64_t whole(size_t i) const;

  // 0 or 1, for a yes/no field such as RENUMBER.
  bool flag(size_t i, const std::string& meaning) const;

  // A number in [0, 1] such as "2e-5" or "0.05".
  double fraction(size_t i) const { return number_in(i, 0.0, 1.0, "[0, 1]"); }

  // A number in [lo, hi]; `range` is how the message writes the interval.
  double number_in(size_t i, double lo, double hi, const std::string& range) const;

 private:
  std::string_view checked_field(size_t i) const;

  // from_chars is correctly rounded, so the same text gives the same double everywhere.
  double number(size_t i) const;

  // Digits only: the seed is a uint64_t, written out in full.
  uint64_t parse_seed(std::string_view f) const;

  std::string_view text_;
  const Kind* kind_ = nullptr;
  std::vector<std::string_view> fields_;
  std::optional<uint64_t> seed_;
};

// ---- structure -------------------------------------------------------------------------------

template <class I>
struct Pattern {
  int64_t n = 0;      // rows
  int64_t cols = -1;  // -1: n, a square matrix (every generator but bipartite)
  std::vector<I> rowptr, colind;
};

template <class I>
void check_rows_fit(const Spec& s, int64_t n) {
  if (n > kIndexMax<I>)
    s.refuse("N = " + std::to_string(n) + " rows do not fit " + kIndexName<I> + " indices (at most " +
             std::to_string(kIndexMax<I>) + ")" + (sizeof(I) < 8 ? "; use int64 indices" : ""));
}

std::string fmt_count(long double x);

// For a count that is a product of fields (NX*NY rows, COLS columns): `what` names it.
template <class I>
void check_count_fits(const Spec& s, const std::string& what, long double count, const std::string& unit) {
  if (count > static_cast<long double>(kIndexMax<I>))
    s.refuse(what + " = " + fmt_count(count) + " " + unit + " do not fit " + kIndexName<I> + " indices (at most " +
             std::to_string(kIndexMax<I>) + ")" + (sizeof(I) < 8 ? "; use int64 indices" : ""));
}

template <class I>
void check_nnz_fits(const Spec& s, const std::string& what, long double nnz) {
  if (nnz > static_cast<long double>(kIndexMax<I>))
    s.refuse(what + " entries, more than " + kIndexName<I> + " indices can address (at most " +
             std::to_string(kIndexMax<I>) + ")" + (sizeof(I) < 8 ? "; use int64 indices" : ""));
}

// A spec can fit the index type and still ask for more than the machine holds (rmat:40:16 draws
// 2^44 edges: 512 TiB of keys while sorting). Refused here, before any allocation, with the numbers:
// allocating would fail late or be granted lazily and end in the OOM killer. `scratch` is what
// the generator holds besides the result's row pointers and column indices (values come on top).
template <class I>
void check_memory(const Spec& s, long double rows, long double entries, long double scratch) {
  const long double need = (rows + 1 + entries) * sizeof(I) + scratch;
  const long double have = detail::host_memory_bytes();
  if (need > have)
    s.refuse("the graph needs at least " + detail::human_bytes(need) + " (" + fmt_count(rows) + " rows, " + fmt_count(entries) +
             " entries), more than this machine's " + detail::human_bytes(have) + " of memory");
}

// Sorted distinct k values of [0, n) from one stream, written to out[0..k).
template <class I>
void sample_distinct(uint64_t n, uint64_t k, Stream& s, I* out) {
  if (k == 0) return;
  if (k > n / 8) {
    // Dense: selection sampling (Knuth's Algorithm S), one draw per candidate, exact and sorted.
    uint64_t left = k;
    for (uint64_t j = 0; left > 0; ++j)
      if (bounded(s, n - j) < left) {
        out[k - left] = static_cast<I>(j);
        --left;
      }
    return;
  }
  // Sparse: draw, sort, drop repeats, redraw the missing ones (few: k <= n/8).
  uint64_t have = 0;
  while (have < k) {
    for (uint64_t t = have; t < k; ++t) out[t] = static_cast<I>(bounded(s, n));
    std::sort(out, out + k);
    have = static_cast<uint64_t>(std::unique(out, out + k) - out);
  }
}

// Fills rowptr from per-row counts already stored in rowptr[1..n].
template <class I>
void prefix_sum(std::vector<I>& rowptr) {
  for (size_t i = 1; i < rowptr.size(); ++i) rowptr[i] = static_cast<I>(rowptr[i] + rowptr[i - 1]);
}

// LSD radix sort on the low `bits` bits: passes of at most 11 bits, so the 2048 output streams
// stay in cache and every pass reads and writes memory in order (a counting sort by row and a
// per-row sort scatter randomly over the whole column array instead: 2-3x slower here).
template <class K>
void radix_sort(std::vector<K>& keys, int bits) {
  if (bits == 0 || keys.size() < 2) return;
  const int passes = (bits + 10) / 11;
  const int digit = (bits + passes - 1) / passes;
  const auto mask = (size_t{1} << digit) - 1;
  std::vector<K> tmp(keys.size());
  std::vector<size_t> start(mask + 1);
  for (int p = 0; p < passes; ++p) {
    const int shift = p * digit;
    std::fill(start.begin(), start.end(), 0);
    for (const K k : keys) ++start[static_cast<size_t>(k >> shift) & mask];
    if (start[static_cast<size_t>(keys[0] >> shift) & mask] == keys.size()) continue;  // one bucket: nothing moves
    size_t sum = 0;
    for (size_t& c : start) sum += std::exchange(c, sum);
    for (const K k : keys) tmp[start[static_cast<size_t>(k >> shift) & mask]++] = k;
    keys.swap(tmp);
  }
}

// Sorted keys (row << bits | col) as a pattern of n rows, each distinct key once.
template <class I, class K>
Pattern<I> pattern_from_sorted_keys(const std::vector<K>& keys, int64_t n, int bits) {
  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  size_t distinct = 0;
  for (size_t t = 0; t < keys.size(); ++t) distinct += (t == 0 || keys[t] != keys[t - 1]) ? 1 : 0;
  g.colind.resize(distinct);
  const K col_mask = (static_cast<K>(1) << bits) - 1;
  size_t w = 0;
  for (size_t t = 0; t < keys.size(); ++t) {
    if (t > 0 && keys[t] == keys[t - 1]) continue;
    ++g.rowptr[static_cast<size_t>(keys[t] >> bits) + 1];
    g.colind[w++] = static_cast<I>(keys[t] & col_mask);
  }
  prefix_sum(g.rowptr);
  return g;
}

// `draws` edges from draw() (a {row, col} pair each, both below 2^bits) as keys, sorted and merged.
// K holds 2*bits bits: uint64_t up to 32 bits per index, u128 above.
template <class I, class K, class Draw>
Pattern<I> pattern_from_draws(int64_t n, int bits, int64_t draws, Draw&& draw) {
  std::vector<K> keys(static_cast<size_t>(draws));
  for (K& k : keys) {
    const auto [r, c] = draw();
    k = (static_cast<K>(r) << bits) | static_cast<K>(c);
  }
  radix_sort(keys, 2 * bits);
  return pattern_from_sorted_keys<I>(keys, n, bits);
}

// A uniformly random permutation of [0, n) (Fisher-Yates from one stream).
template <class I>
std::vector<I> random_permutation(int64_t n, uint64_t key) {
  std::vector<I> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = static_cast<I>(i);
  Stream rng{key};
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(p[static_cast<size_t>(i)], p[bounded(rng, static_cast<uint64_t>(i) + 1)]);
  return p;
}

// ---- the families ------------------------------------------------------------------------------

// generators_uniform.cpp
template <class I>
Pattern<I> make_er(const Spec& s, uint64_t key);
template <class I>
Pattern<I> make_hubs(const Spec& s, uint64_t key);
template <class I>
Pattern<I> make_megarow(const Spec& s, uint64_t key);
template <class I>
Pattern<I> make_sbm(const Spec& s, uint64_t key);
// generators_rmat.cpp
template <class I>
Pattern<I> make_rmat(const Spec& s, uint64_t key);
// generators_power_law.cpp
template <class I>
Pattern<I> make_chunglu(const Spec& s, uint64_t key);
template <class I>
Pattern<I> make_bipartite(const Spec& s, uint64_t key);
// generators_grid.cpp
template <class I>
Pattern<I> make_band(const Spec& s);
template <class I>
Pattern<I> make_mesh(const Spec& s, uint64_t key);
template <class I>
Pattern<I> make_road(const Spec& s, uint64_t key);

}  // namespace sparseport::detail::gen
