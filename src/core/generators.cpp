// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "src/core/registry.hpp"
#include "sparseport/graph.hpp"
#include "src/core/counter_rng.hpp"

namespace sparseport {
namespace {

using detail::Stream;
__extension__ typedef unsigned __int128 u128;

// Separate streams per generator and for the values, so that e.g. hubs and megarow with the same
// seed are not correlated and the values never reuse the draws that chose the columns.
enum : uint64_t { kTagEr = 1, kTagRmat = 2, kTagHubs = 3, kTagMegarow = 4, kTagValues = 5 };

// Graph500 RMAT a = 0.57, a+b = 0.76, a+b+c = 0.95 as thresholds on a uniform 32-bit word
// (round(x * 2^32)), so the quadrant choice is integer-only.
constexpr uint32_t kRmatA = 2448131359u, kRmatAB = 3264175145u, kRmatABC = 4080218931u;

// Whole-number fields go up to 2^62 so that sums of two of them never overflow int64_t.
constexpr int64_t kMaxField = int64_t{1} << 62;

template <class I>
constexpr int64_t kIndexMax = std::numeric_limits<I>::max();
template <class I>
constexpr const char* kIndexName = sizeof(I) == 4 ? "int32" : "int64";

// Uniform in [0, n) for n > 0, exactly: Lemire's multiply-shift with rejection of the biased part
// (Lemire 2019, "Fast random integer generation in an interval").
uint64_t bounded(Stream& s, uint64_t n) {
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
uint64_t neg_log2_q56(uint64_t v) {
  const int lz = std::countl_zero(v);
  uint64_t y = v << lz;  // y / 2^63 in [1, 2)
  uint64_t frac = 0;
  for (int k = 0; k < 56; ++k) {
    const u128 sq = static_cast<u128>(y) * y;
    const auto over = static_cast<unsigned>(sq >> 127);  // (y / 2^63)^2 >= 2
    y = static_cast<uint64_t>(sq >> (63 + over));
    frac = (frac << 1) | over;
  }
  return (static_cast<uint64_t>(lz + 1) << 56) - frac;
}

// ---- spec parsing ----------------------------------------------------------------------------

struct Kind {
  std::string_view name;
  std::string_view usage;
  std::array<std::string_view, 4> fields;
  size_t field_count;
};
constexpr std::array<Kind, 6> kKinds = {{
    {"er", "er:N:P", {"N", "P"}, 2},
    {"rmat", "rmat:SCALE:EDGEFACTOR", {"SCALE", "EDGEFACTOR"}, 2},
    {"hubs", "hubs:N:DEG:NHUBS:HUBDEG", {"N", "DEG", "NHUBS", "HUBDEG"}, 4},
    {"band", "band:N:DEG", {"N", "DEG"}, 2},
    {"megarow", "megarow:N:DEG:FRACTION", {"N", "DEG", "FRACTION"}, 3},
    {"powerlaw", "powerlaw", {}, 0},
}};

std::string_view name_part(std::string_view spec) { return spec.substr(0, spec.find(':')); }

const Kind* find_kind(std::string_view name) {
  for (const Kind& k : kKinds)
    if (k.name == name) return &k;
  return nullptr;
}

std::string known_usages() {
  std::string s;
  for (const Kind& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.usage);
  return s;
}

class Spec {
 public:
  explicit Spec(std::string_view text) : text_(text) {
    kind_ = find_kind(name_part(text));
    if (kind_ == nullptr)
      throw InvalidArgument("sparseport::generate: '" + std::string(text) +
                            "' is not a generator spec (known: " + known_usages() + ").");
    size_t pos = kind_->name.size();
    while (pos < text.size()) {  // text[pos] == ':'
      const size_t next = std::min(text.find(':', pos + 1), text.size());
      fields_.push_back(text.substr(pos + 1, next - pos - 1));
      pos = next;
    }
    for (size_t i = 0; i < std::min(fields_.size(), kind_->field_count); ++i)
      if (fields_[i].empty()) refuse("field " + field_name(i) + " is empty");
    if (fields_.size() < kind_->field_count)
      refuse("field " + std::string(kind_->fields[fields_.size()]) + " is missing");
    if (fields_.size() > kind_->field_count)
      refuse("there " + std::string(fields_.size() == 1 ? "is 1 field" : "are " + std::to_string(fields_.size()) + " fields") +
             " after '" + std::string(kind_->name) + "' but it takes " + std::to_string(kind_->field_count));
  }

  std::string_view name() const { return kind_->name; }

  [[noreturn]] void refuse(const std::string& problem) const {
    throw InvalidArgument("sparseport::generate: in spec '" + std::string(text_) + "', " + problem + " (expected " +
                          std::string(kind_->usage) + ").");
  }

  std::string field_name(size_t i) const { return std::string(kind_->fields[i]); }

  // A whole number in [0, 2^62]; "1000000" and "1e6" both work.
  int64_t whole(size_t i) const {
    const std::string_view f = checked_field(i);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec == std::errc() && end == f.data() + f.size()) {
      if (v < 0) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is negative");
      if (v > kMaxField) refuse("field " + field_name(i) + " is " + std::string(f) + ", above the limit 2^62");
      return v;
    }
    const double d = number(i);
    if (d < 0) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is negative");
    if (d != std::floor(d)) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is not a whole number");
    if (d > static_cast<double>(kMaxField))
      refuse("field " + field_name(i) + " is " + std::string(f) + ", above the limit 2^62");
    return static_cast<int64_t>(d);
  }

  // A number in [0, 1] such as "2e-5" or "0.05".
  double fraction(size_t i) const {
    const double d = number(i);
    if (!(d >= 0.0 && d <= 1.0))
      refuse("field " + field_name(i) + " is " + std::string(fields_[i]) + ", outside [0, 1]");
    return d;
  }

 private:
  std::string_view checked_field(size_t i) const {
    if (fields_[i].empty()) refuse("field " + field_name(i) + " is empty");
    return fields_[i];
  }

  // from_chars is correctly rounded, so the same text gives the same double everywhere.
  double number(size_t i) const {
    const std::string_view f = checked_field(i);
    double d = 0.0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), d);
    if (ec != std::errc() || end != f.data() + f.size() || !std::isfinite(d))
      refuse("field " + field_name(i) + " is '" + std::string(f) + "', which is not a number");
    return d;
  }

  std::string_view text_;
  const Kind* kind_ = nullptr;
  std::vector<std::string_view> fields_;
};

// ---- structure -------------------------------------------------------------------------------

template <class I>
struct Pattern {
  int64_t n = 0;  // every generator makes an n x n matrix
  std::vector<I> rowptr, colind;
};

template <class I>
void check_rows_fit(const Spec& s, int64_t n) {
  if (n > kIndexMax<I>)
    s.refuse("N = " + std::to_string(n) + " rows do not fit " + kIndexName<I> + " indices (at most " +
             std::to_string(kIndexMax<I>) + ")" + (sizeof(I) < 8 ? "; use int64 indices" : ""));
}

template <class I>
void check_nnz_fits(const Spec& s, const std::string& what, long double nnz) {
  if (nnz > static_cast<long double>(kIndexMax<I>))
    s.refuse(what + " entries, more than " + kIndexName<I> + " indices can address (at most " +
             std::to_string(kIndexMax<I>) + ")" + (sizeof(I) < 8 ? "; use int64 indices" : ""));
}

std::string fmt_count(long double x) {
  if (x < 1e18L) return std::to_string(static_cast<int64_t>(x));
  char buf[64];  // a whole number, not "13835058055282163712.000000"
  std::snprintf(buf, sizeof buf, x < 1e30L ? "%.0Lf" : "%.3Le", x);
  return buf;
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
  for (uint64_t row = 0; row < un; ++row) {
    Stream rng{detail::derive_key(key, row)};
    // col + skip < 2^63 + 2^62: no overflow (skip <= 2^62 because neg_log_q >= 1).
    for (uint64_t col = neg_log2_q56(rng.next() | 1) / neg_log_q; col < un;
         col += 1 + neg_log2_q56(rng.next() | 1) / neg_log_q) {
      if (static_cast<int64_t>(g.colind.size()) == kIndexMax<I>)
        s.refuse("the draw exceeded " + std::to_string(kIndexMax<I>) + " entries, more than " + kIndexName<I> +
                 " indices can address; use int64 indices");
      g.colind.push_back(static_cast<I>(col));
    }
    g.rowptr[row + 1] = static_cast<I>(g.colind.size());
  }
  return g;
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

// Draws the edges as keys (row << SCALE | col), sorts them, and writes each distinct one once.
// K holds 2*SCALE bits: uint64_t up to SCALE 32, u128 above.
template <class I, class K>
Pattern<I> rmat_from_keys(int64_t n, int64_t scale, int64_t draws, uint64_t key) {
  const auto levels = static_cast<int>(scale);
  std::vector<K> keys(static_cast<size_t>(draws));
  Stream rng{key};
  for (K& k : keys) {
    uint64_t r = 0, c = 0, x = 0;
    for (int l = 0; l < levels; ++l) {
      if ((l & 1) == 0) x = rng.next();  // 32 bits per level
      const auto u = static_cast<uint32_t>(x >> (32 * (l & 1)));
      // Quadrant 0 = a (top left), 1 = b (top right), 2 = c (bottom left), 3 = d; branch-free
      // because the choice is unpredictable.
      const unsigned q = static_cast<unsigned>(u >= kRmatA) + static_cast<unsigned>(u >= kRmatAB) +
                         static_cast<unsigned>(u >= kRmatABC);
      r = (r << 1) | (q >> 1);
      c = (c << 1) | (q & 1u);
    }
    k = (static_cast<K>(r) << levels) | static_cast<K>(c);
  }
  radix_sort(keys, 2 * levels);

  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  size_t distinct = 0;
  for (size_t t = 0; t < keys.size(); ++t) distinct += (t == 0 || keys[t] != keys[t - 1]) ? 1 : 0;
  g.colind.resize(distinct);
  const K col_mask = (static_cast<K>(1) << levels) - 1;
  size_t w = 0;
  for (size_t t = 0; t < keys.size(); ++t) {
    if (t > 0 && keys[t] == keys[t - 1]) continue;
    ++g.rowptr[static_cast<size_t>(keys[t] >> levels) + 1];
    g.colind[w++] = static_cast<I>(keys[t] & col_mask);
  }
  prefix_sum(g.rowptr);
  return g;
}

template <class I>
Pattern<I> make_rmat(const Spec& s, uint64_t key) {
  const int64_t scale = s.whole(0);
  const int64_t edge_factor = s.whole(1);
  if (scale > 40) s.refuse("SCALE is " + std::to_string(scale) + ", above the limit 40");
  const int64_t n = int64_t{1} << scale;
  check_rows_fit<I>(s, n);
  const long double draws_ld = static_cast<long double>(edge_factor) * static_cast<long double>(n);
  check_nnz_fits<I>(s, "EDGEFACTOR*2^SCALE = " + fmt_count(draws_ld) + " drawn", draws_ld);
  check_memory<I>(s, n, draws_ld, draws_ld * 2 * (2 * scale <= 64 ? 8 : 16));  // the keys, sorted out of place
  const int64_t draws = edge_factor * n;

  if (2 * scale <= 64) return rmat_from_keys<I, uint64_t>(n, scale, draws, key);
  return rmat_from_keys<I, u128>(n, scale, draws, key);
}

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
Pattern<I> make_band(const Spec& s) {
  const int64_t n = s.whole(0), deg = s.whole(1);
  check_rows_fit<I>(s, n);
  const int64_t h = std::min(deg / 2, std::max<int64_t>(n - 1, 0));
  // Rows away from the edges hold 2h+1 columns, the first and last h rows fewer.
  const long double nnz = static_cast<long double>(n) * (2 * h + 1) - static_cast<long double>(h) * (h + 1);
  check_nnz_fits<I>(s, "the band holds " + fmt_count(nnz), nnz);
  check_memory<I>(s, n, nnz, 0);

  Pattern<I> g;
  g.n = n;
  g.rowptr.resize(static_cast<size_t>(n) + 1);
  g.colind.resize(static_cast<size_t>(nnz));
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    g.rowptr[static_cast<size_t>(i)] = static_cast<I>(k);
    for (int64_t j = std::max<int64_t>(0, i - h); j <= std::min(n - 1, i + h); ++j) g.colind[k++] = static_cast<I>(j);
  }
  g.rowptr[static_cast<size_t>(n)] = static_cast<I>(k);
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

// v(i, j) = v(j, i), uniform in [0.5, 1.5): a symmetric pattern gives a symmetric matrix, values
// stay away from 0 (no cancellation in sums), and each is exact in V (see unit_exact).
template <class I, class V>
std::vector<V> make_values(const Pattern<I>& g, uint64_t seed) {
  const uint64_t key = detail::derive_key(seed, kTagValues);
  std::vector<V> v(g.colind.size());
  for (int64_t i = 0; i < g.n; ++i) {
    const uint64_t row_key = detail::derive_key(key, static_cast<uint64_t>(i));
    for (I k = g.rowptr[static_cast<size_t>(i)]; k < g.rowptr[static_cast<size_t>(i) + 1]; ++k) {
      const auto j = static_cast<uint64_t>(g.colind[static_cast<size_t>(k)]);
      const uint64_t r = j >= static_cast<uint64_t>(i) ? detail::word_at(row_key, j)
                                                       : detail::word_at(detail::derive_key(key, j), static_cast<uint64_t>(i));
      v[static_cast<size_t>(k)] = V(0.5) + detail::unit_exact<V>(r);
    }
  }
  return v;
}

// load_graph's options on a generated (sorted, merged) matrix: the union with A^T and/or no
// diagonal. Generated values are symmetric, so a position present in both keeps its one value.
template <class I, class V>
HostCsr<I, V> restructure(const HostCsr<I, V>& a, bool symmetrize, bool drop_self_loops, const std::string& spec) {
  const int64_t n = a.rows;
  const bool vals = !a.is_pattern();
  std::vector<I> tptr(static_cast<size_t>(n) + 1, 0), trow;
  std::vector<V> tval;
  if (symmetrize) {
    for (const I j : a.colind) ++tptr[static_cast<size_t>(j) + 1];
    prefix_sum(tptr);
    trow.resize(a.colind.size());
    if (vals) tval.resize(a.colind.size());
    std::vector<I> cur(tptr.begin(), tptr.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k) {
        const I p = cur[static_cast<size_t>(a.colind[static_cast<size_t>(k)])]++;
        trow[static_cast<size_t>(p)] = static_cast<I>(i);
        if (vals) tval[static_cast<size_t>(p)] = a.values[static_cast<size_t>(k)];
      }
  }
  // Two passes over the merged rows: count (to check the index type), then write.
  HostCsr<I, V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  int64_t total = 0;
  for (int pass = 0; pass < 2; ++pass) {
    int64_t w = 0;
    for (int64_t i = 0; i < n; ++i) {
      I x = a.rowptr[static_cast<size_t>(i)], xe = a.rowptr[static_cast<size_t>(i) + 1];
      I y = tptr[static_cast<size_t>(i)], ye = tptr[static_cast<size_t>(i) + 1];
      while (x < xe || y < ye) {
        const bool take_a = y >= ye || (x < xe && a.colind[static_cast<size_t>(x)] <= trow[static_cast<size_t>(y)]);
        const I col = take_a ? a.colind[static_cast<size_t>(x)] : trow[static_cast<size_t>(y)];
        V val = V(1);
        if (vals) val = take_a ? a.values[static_cast<size_t>(x)] : tval[static_cast<size_t>(y)];
        if (take_a) {
          if (y < ye && trow[static_cast<size_t>(y)] == col) ++y;
          ++x;
        } else {
          ++y;
        }
        if (drop_self_loops && col == static_cast<I>(i)) continue;
        if (pass == 1) {
          out.colind[static_cast<size_t>(w)] = col;
          if (vals) out.values[static_cast<size_t>(w)] = val;
        }
        ++w;
      }
      if (pass == 1) out.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(w);
    }
    if (pass == 0) {
      total = w;
      if (total > kIndexMax<I>)
        throw InvalidArgument("sparseport::load_graph: symmetrizing '" + spec + "' gives " + std::to_string(total) +
                              " entries, more than " + kIndexName<I> + " indices can address (at most " +
                              std::to_string(kIndexMax<I>) + "); use int64 indices.");
      out.colind.resize(static_cast<size_t>(total));
      if (vals) out.values.resize(static_cast<size_t>(total));
    }
  }
  return out;
}

}  // namespace

bool is_generator_spec(std::string_view spec) {
  const std::string_view name = name_part(spec);
  return find_kind(name) != nullptr;
}

namespace {

template <class I, class V>
HostCsr<I, V> generate_unguarded(std::string_view spec_text, const GenOptions& opt) {
  const Spec s(spec_text);
  Pattern<I> g;
  const std::string_view name = s.name();
  if (name == "er") {
    g = make_er<I>(s, detail::derive_key(opt.seed, kTagEr));
  } else if (name == "rmat") {
    g = make_rmat<I>(s, detail::derive_key(opt.seed, kTagRmat));
  } else if (name == "powerlaw") {
    g = make_rmat<I>(Spec("rmat:16:8"), detail::derive_key(opt.seed, kTagRmat));
  } else if (name == "hubs") {
    g = make_hubs<I>(s, detail::derive_key(opt.seed, kTagHubs));
  } else if (name == "band") {
    g = make_band<I>(s);
  } else {
    g = make_megarow<I>(s, detail::derive_key(opt.seed, kTagMegarow));
  }
  HostCsr<I, V> a;
  a.rows = a.cols = g.n;
  if (!opt.pattern) a.values = make_values<I, V>(g, opt.seed);
  a.rowptr = std::move(g.rowptr);
  a.colind = std::move(g.colind);
  return a;
}

}  // namespace

// The specs' own checks refuse what the index type cannot address; what fits it can still be more
// than the host can hold (int64 indices, or N rows of int32 on a small machine).
template <class I, class V>
HostCsr<I, V> generate(std::string_view spec_text, const GenOptions& opt) {
  try {
    return generate_unguarded<I, V>(spec_text, opt);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("sparseport::generate: '" + std::string(spec_text) +
                          "' needs more host memory than could be allocated (std::bad_alloc); generate a smaller graph",
                      ENOMEM, "std::bad_alloc");
  }
}

template <class I, class V>
HostCsr<I, V> load_graph(const std::string& spec_or_path, const MmReadOptions& opt) {
  const std::string spec = spec_or_path.empty() ? std::string("powerlaw") : spec_or_path;
  if (!is_generator_spec(spec)) return read_matrix_market<I, V>(spec, opt);
  GenOptions gen;
  gen.pattern = !opt.keep_values;
  HostCsr<I, V> a = generate<I, V>(spec, gen);
  if (opt.symmetrize || opt.drop_self_loops) a = restructure(a, opt.symmetrize, opt.drop_self_loops, spec);
  if (opt.progress) opt.progress(1.0);
  return a;
}

#define SPARSEPORT_INSTANTIATE(I, V)                                                    \
  template HostCsr<I, V> generate<I, V>(std::string_view, const GenOptions&);           \
  template HostCsr<I, V> load_graph<I, V>(const std::string&, const MmReadOptions&);
SPARSEPORT_INSTANTIATE(int32_t, float)
SPARSEPORT_INSTANTIATE(int32_t, double)
SPARSEPORT_INSTANTIATE(int64_t, float)
SPARSEPORT_INSTANTIATE(int64_t, double)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport
