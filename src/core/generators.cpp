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
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
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

uint64_t neg_log2_q56(uint64_t v) {
  std::array<uint64_t, 4> out{};
  neg_log2_q56_batch<1>({v, 0, 0, 0}, out);
  return out[0];
}

// ---- spec parsing ----------------------------------------------------------------------------

struct Kind {
  std::string_view name;
  std::string_view usage;
  std::array<std::string_view, 5> fields;
  size_t field_count;
};
constexpr std::array<Kind, 14> kKinds = {{
    {"er", "er:N:P", {"N", "P"}, 2},
    {"rmat", "rmat:SCALE:EDGEFACTOR", {"SCALE", "EDGEFACTOR"}, 2},
    {"rmatp", "rmatp:SCALE:EDGEFACTOR:A:B:C", {"SCALE", "EDGEFACTOR", "A", "B", "C"}, 5},
    {"hubs", "hubs:N:DEG:NHUBS:HUBDEG", {"N", "DEG", "NHUBS", "HUBDEG"}, 4},
    {"band", "band:N:DEG", {"N", "DEG"}, 2},
    {"megarow", "megarow:N:DEG:FRACTION", {"N", "DEG", "FRACTION"}, 3},
    {"chunglu", "chunglu:N:AVGDEG:EXPONENT", {"N", "AVGDEG", "EXPONENT"}, 3},
    {"sbm", "sbm:N:BLOCKS:DEGIN:DEGOUT", {"N", "BLOCKS", "DEGIN", "DEGOUT"}, 4},
    {"mesh2d", "mesh2d:NX:NY:RENUMBER", {"NX", "NY", "RENUMBER"}, 3},
    {"mesh3d", "mesh3d:NX:NY:NZ:RENUMBER", {"NX", "NY", "NZ", "RENUMBER"}, 4},
    {"mesh3d27", "mesh3d27:NX:NY:NZ:RENUMBER", {"NX", "NY", "NZ", "RENUMBER"}, 4},
    {"road", "road:NX:NY:KEEP", {"NX", "NY", "KEEP"}, 3},
    {"bipartite", "bipartite:ROWS:COLS:DEG", {"ROWS", "COLS", "DEG"}, 3},
    {"powerlaw", "powerlaw", {}, 0},
}};

std::string_view name_part(std::string_view spec) { return spec.substr(0, spec.find(':')); }

// The spec without its seed suffix ("er:10:0.5@7" -> "er:10:0.5").
std::string_view body_part(std::string_view spec) { return spec.substr(0, spec.find('@')); }

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
    const size_t at = text.find('@');
    const std::string_view body = text.substr(0, at);
    kind_ = find_kind(name_part(body));
    if (kind_ == nullptr)
      throw InvalidArgument("sparseport::generate: '" + std::string(text) + "' is not a generator spec (known: " +
                            known_usages() + "; any of them may end in @SEED).");
    size_t pos = kind_->name.size();
    while (pos < body.size()) {  // body[pos] == ':'
      const size_t next = std::min(body.find(':', pos + 1), body.size());
      fields_.push_back(body.substr(pos + 1, next - pos - 1));
      pos = next;
    }
    for (size_t i = 0; i < std::min(fields_.size(), kind_->field_count); ++i)
      if (fields_[i].empty()) refuse("field " + field_name(i) + " is empty");
    if (fields_.size() < kind_->field_count)
      refuse("field " + std::string(kind_->fields[fields_.size()]) + " is missing");
    if (fields_.size() > kind_->field_count)
      refuse("there " + std::string(fields_.size() == 1 ? "is 1 field" : "are " + std::to_string(fields_.size()) + " fields") +
             " after '" + std::string(kind_->name) + "' but it takes " + std::to_string(kind_->field_count));
    if (at != std::string_view::npos) seed_ = parse_seed(text.substr(at + 1));
  }

  std::string_view name() const { return kind_->name; }

  // The K of a "SPEC@K" suffix, which replaces GenOptions::seed.
  std::optional<uint64_t> seed() const { return seed_; }

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

  // 0 or 1, for a yes/no field such as RENUMBER.
  bool flag(size_t i, const std::string& meaning) const {
    const int64_t v = whole(i);
    if (v > 1) refuse("field " + field_name(i) + " is " + std::string(fields_[i]) + ", but it must be 0 or 1 (" + meaning + ")");
    return v == 1;
  }

  // A number in [0, 1] such as "2e-5" or "0.05".
  double fraction(size_t i) const { return number_in(i, 0.0, 1.0, "[0, 1]"); }

  // A number in [lo, hi]; `range` is how the message writes the interval.
  double number_in(size_t i, double lo, double hi, const std::string& range) const {
    const double d = number(i);
    if (!(d >= lo && d <= hi)) refuse("field " + field_name(i) + " is " + std::string(fields_[i]) + ", outside " + range);
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

  // Digits only: the seed is a uint64_t, written out in full.
  uint64_t parse_seed(std::string_view f) const {
    const auto bad = [&](const std::string& problem) {
      throw InvalidArgument("sparseport::generate: in spec '" + std::string(text_) + "', " + problem + " (expected " +
                            std::string(kind_->usage) + "@SEED).");
    };
    if (f.empty()) bad("the seed after '@' is empty");
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size())
      bad("the seed after '@' is '" + std::string(f) + "', which is not a whole number from 0 to " +
          std::to_string(std::numeric_limits<uint64_t>::max()));
    return v;
  }

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

// RMAT: each draw picks one of four quadrants per level, SCALE levels.
template <class I, class K>
Pattern<I> rmat_from_keys(int64_t n, int64_t scale, int64_t draws, const RmatThresholds& t, uint64_t key) {
  const auto levels = static_cast<int>(scale);
  Stream rng{key};
  return pattern_from_draws<I, K>(n, levels, draws, [&] {
    uint64_t r = 0, c = 0, x = 0;
    for (int l = 0; l < levels; ++l) {
      if ((l & 1) == 0) x = rng.next();  // 32 bits per level
      const auto u = static_cast<uint32_t>(x >> (32 * (l & 1)));
      // Quadrant 0 = a (top left), 1 = b (top right), 2 = c (bottom left), 3 = d; branch-free
      // because the choice is unpredictable.
      const unsigned q = static_cast<unsigned>(u >= t.a) + static_cast<unsigned>(u >= t.ab) +
                         static_cast<unsigned>(u >= t.abc);
      r = (r << 1) | (q >> 1);
      c = (c << 1) | (q & 1u);
    }
    return std::pair<uint64_t, uint64_t>{r, c};
  });
}

// rmat:SCALE:EDGEFACTOR (Graph500 probabilities) and rmatp:SCALE:EDGEFACTOR:A:B:C.
template <class I>
Pattern<I> make_rmat(const Spec& s, uint64_t key) {
  const int64_t scale = s.whole(0);
  const int64_t edge_factor = s.whole(1);
  RmatThresholds t = kGraph500;
  if (s.name() == "rmatp") {
    const double a = s.fraction(2), b = s.fraction(3), c = s.fraction(4);
    // Each sum is one IEEE addition: the same thresholds everywhere. The slack lets A+B+C that are
    // 1 in decimal (0.1+0.2+0.7 = 1.0000000000000002 in binary) through.
    const double ab = a + b, abc = ab + c;
    if (abc > 1.0 + 1e-9) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", abc);
      s.refuse("A+B+C is " + std::string(buf) + ", above 1 (D = 1-A-B-C is the fourth quadrant's probability)");
    }
    const auto threshold = [](double x) {
      return std::min<uint64_t>(static_cast<uint64_t>(std::llround(std::ldexp(x, 32))), uint64_t{1} << 32);
    };
    t = {threshold(a), threshold(ab), threshold(abc)};
  }
  if (scale > 40) s.refuse("SCALE is " + std::to_string(scale) + ", above the limit 40");
  const int64_t n = int64_t{1} << scale;
  check_rows_fit<I>(s, n);
  const long double draws_ld = static_cast<long double>(edge_factor) * static_cast<long double>(n);
  check_nnz_fits<I>(s, "EDGEFACTOR*2^SCALE = " + fmt_count(draws_ld) + " drawn", draws_ld);
  check_memory<I>(s, n, draws_ld, draws_ld * 2 * (2 * scale <= 64 ? 8 : 16));  // the keys, sorted out of place
  const int64_t draws = edge_factor * n;

  if (2 * scale <= 64) return rmat_from_keys<I, uint64_t>(n, scale, draws, t, key);
  return rmat_from_keys<I, u128>(n, scale, draws, t, key);
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

// ---- chunglu, sbm, meshes, road, bipartite ----------------------------------------------------

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

// mesh2d (5-point), mesh3d (7-point) and mesh3d27 (27-point) stencils on a grid, vertex
// (x, y, z) = (z NY + y) NX + x in natural order, or a random renumbering of the same graph.
template <class I>
Pattern<I> make_mesh(const Spec& s, uint64_t key) {
  const bool three = s.name() != "mesh2d", box = s.name() == "mesh3d27";
  const int64_t nx = s.whole(0), ny = s.whole(1), nz = three ? s.whole(2) : 1;
  const bool renumber = s.flag(three ? 3 : 2, "0: natural row-major order, 1: random vertex ids");
  const std::string dims = three ? "NX*NY*NZ" : "NX*NY";
  const long double rows_ld = static_cast<long double>(nx) * ny * nz;
  check_count_fits<I>(s, dims, rows_ld, "rows");
  // Star: the diagonal plus two per grid edge (N - N/n_d edges along dimension d); box: the
  // 3 n_d - 2 pairs within 1 along each dimension, multiplied.
  long double nnz = 0;
  if (rows_ld > 0 && box) {
    nnz = (3.0L * nx - 2) * (3.0L * ny - 2) * (3.0L * nz - 2);
  } else if (rows_ld > 0) {
    nnz = rows_ld + 2 * (rows_ld - rows_ld / nx) + 2 * (rows_ld - rows_ld / ny) + 2 * (rows_ld - rows_ld / nz);
  }
  check_nnz_fits<I>(s, "the stencil holds " + fmt_count(nnz), nnz);
  check_memory<I>(s, rows_ld, nnz, renumber ? 2 * rows_ld * sizeof(I) : 0);

  // Offsets in increasing order of their id delta, so natural rows come out sorted.
  struct Offset {
    int dx, dy, dz;
  };
  std::vector<Offset> offsets;
  for (int dz = three ? -1 : 0; dz <= (three ? 1 : 0); ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (box || std::abs(dx) + std::abs(dy) + std::abs(dz) <= 1) offsets.push_back({dx, dy, dz});

  const auto n = static_cast<int64_t>(rows_ld);
  Pattern<I> g;
  g.n = n;
  g.rowptr.resize(static_cast<size_t>(n) + 1);
  g.colind.resize(static_cast<size_t>(nnz));
  std::vector<I> old_of, new_of;  // renumbering: new id -> grid vertex, and back
  if (renumber) {
    old_of = random_permutation<I>(n, detail::derive_key(key, 0));
    new_of.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) new_of[static_cast<size_t>(old_of[static_cast<size_t>(r)])] = static_cast<I>(r);
  }
  size_t k = 0;
  for (int64_t r = 0; r < n; ++r) {
    g.rowptr[static_cast<size_t>(r)] = static_cast<I>(k);
    const int64_t v = renumber ? static_cast<int64_t>(old_of[static_cast<size_t>(r)]) : r;
    const int64_t x = v % nx, y = v / nx % ny, z = v / nx / ny;
    const size_t first = k;
    for (const Offset& o : offsets) {
      const int64_t xx = x + o.dx, yy = y + o.dy, zz = z + o.dz;
      if (xx < 0 || xx >= nx || yy < 0 || yy >= ny || zz < 0 || zz >= nz) continue;
      const int64_t u = (zz * ny + yy) * nx + xx;
      g.colind[k++] = renumber ? new_of[static_cast<size_t>(u)] : static_cast<I>(u);
    }
    if (renumber)  // at most 27 entries: insertion sort
      for (size_t a = first + 1; a < k; ++a)
        for (size_t b = a; b > first && g.colind[b - 1] > g.colind[b]; --b) std::swap(g.colind[b - 1], g.colind[b]);
  }
  g.rowptr[static_cast<size_t>(n)] = static_cast<I>(k);
  return g;
}

// Road-like: the 4-neighbour grid with each edge kept with probability KEEP (both directions),
// plus diagonal shortcuts: the 2x2 cells at even (x, y) are disjoint, and each gets one of its two
// diagonals with probability 1/25, so there are about N/100 shortcuts and no degree exceeds 5.
template <class I>
Pattern<I> make_road(const Spec& s, uint64_t key) {
  const int64_t nx = s.whole(0), ny = s.whole(1);
  const double keep = s.fraction(2);
  const long double rows_ld = static_cast<long double>(nx) * ny;
  check_count_fits<I>(s, "NX*NY", rows_ld, "rows");
  const long double edges = rows_ld == 0 ? 0 : 2 * rows_ld - nx - ny;
  const long double most = 2 * edges + rows_ld / 2;
  check_nnz_fits<I>(s, "the grid and its shortcuts hold up to " + fmt_count(most), most);
  check_memory<I>(s, rows_ld, 2 * keep * edges + rows_ld / 50, 0);

  const auto n = static_cast<int64_t>(rows_ld);
  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  g.colind.reserve(static_cast<size_t>(std::min<long double>(2 * keep * edges * 1.01L + rows_ld / 40 + 64, most)));
  // Edge (x,y)-(x+1,y) is word 2v of the edge stream, (x,y)-(x,y+1) word 2v+1 (v = y NX + x):
  // both of its rows ask the same word.
  const uint64_t edge_key = detail::derive_key(key, 0), cell_key = detail::derive_key(key, 1);
  const uint64_t threshold = keep >= 1.0 ? 0 : static_cast<uint64_t>(std::ldexp(keep, 64));
  const auto kept = [&](int64_t v, int vertical) {
    return keep >= 1.0 || detail::word_at(edge_key, 2 * static_cast<uint64_t>(v) + static_cast<uint64_t>(vertical)) < threshold;
  };
  constexpr uint64_t kShortcut = (uint64_t{1} << 32) / 25;
  for (int64_t y = 0; y < ny; ++y)
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t v = y * nx + x;
      int sdx = 0, sdy = 0;  // the shortcut's direction, if any
      const int64_t cx = x & ~int64_t{1}, cy = y & ~int64_t{1};
      if (cx + 1 < nx && cy + 1 < ny) {
        const uint64_t w = detail::word_at(cell_key, static_cast<uint64_t>(cy * nx + cx));
        if ((w >> 32) < kShortcut) {
          const bool main = (w & 1) != 0;  // (cx,cy)-(cx+1,cy+1), else (cx+1,cy)-(cx,cy+1)
          const int64_t ox = x - cx, oy = y - cy;
          if (main == (ox == oy)) {
            sdx = ox == 0 ? 1 : -1;
            sdy = oy == 0 ? 1 : -1;
          }
        }
      }
      const auto add = [&](int64_t u) {
        if (static_cast<int64_t>(g.colind.size()) == kIndexMax<I>)
          s.refuse("the graph exceeded " + std::to_string(kIndexMax<I>) + " entries, more than " + kIndexName<I> +
                   " indices can address; use int64 indices");
        g.colind.push_back(static_cast<I>(u));
      };
      if (sdy < 0 && sdx < 0) add(v - nx - 1);
      if (y > 0 && kept(v - nx, 1)) add(v - nx);
      if (sdy < 0 && sdx > 0) add(v - nx + 1);
      if (x > 0 && kept(v - 1, 0)) add(v - 1);
      if (x + 1 < nx && kept(v, 0)) add(v + 1);
      if (sdy > 0 && sdx < 0) add(v + nx - 1);
      if (y + 1 < ny && kept(v, 1)) add(v + nx);
      if (sdy > 0 && sdx > 0) add(v + nx + 1);
      g.rowptr[static_cast<size_t>(v) + 1] = static_cast<I>(g.colind.size());
    }
  return g;
}

// Column c's popularity is (rank(c) + 1)^(-0.8) for a random ranking: a mild power law, like the
// features of a bag-of-words matrix.
constexpr uint64_t kFeatureAlphaQ32 = (uint64_t{4} << 32) / 5;

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
  if (symmetrize && a.rows != a.cols)
    throw InvalidArgument("sparseport::load_graph: cannot symmetrize '" + spec + "': it is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + ", and the union with its transpose needs a square matrix.");
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

bool is_generator_spec(std::string_view spec) { return find_kind(name_part(body_part(spec))) != nullptr; }

namespace {

template <class I, class V>
HostCsr<I, V> generate_unguarded(std::string_view spec_text, const GenOptions& opt) {
  const Spec s(spec_text);
  const uint64_t seed = s.seed().value_or(opt.seed);
  Pattern<I> g;
  const std::string_view name = s.name();
  if (name == "er") {
    g = make_er<I>(s, detail::derive_key(seed, kTagEr));
  } else if (name == "rmat" || name == "rmatp") {
    g = make_rmat<I>(s, detail::derive_key(seed, kTagRmat));
  } else if (name == "powerlaw") {
    g = make_rmat<I>(Spec("rmat:16:8"), detail::derive_key(seed, kTagRmat));
  } else if (name == "hubs") {
    g = make_hubs<I>(s, detail::derive_key(seed, kTagHubs));
  } else if (name == "band") {
    g = make_band<I>(s);
  } else if (name == "megarow") {
    g = make_megarow<I>(s, detail::derive_key(seed, kTagMegarow));
  } else if (name == "chunglu") {
    g = make_chunglu<I>(s, detail::derive_key(seed, kTagChungLu));
  } else if (name == "sbm") {
    g = make_sbm<I>(s, detail::derive_key(seed, kTagSbm));
  } else if (name == "mesh2d" || name == "mesh3d" || name == "mesh3d27") {
    g = make_mesh<I>(s, detail::derive_key(seed, kTagMesh));
  } else if (name == "road") {
    g = make_road<I>(s, detail::derive_key(seed, kTagRoad));
  } else {
    g = make_bipartite<I>(s, detail::derive_key(seed, kTagBipartite));
  }
  HostCsr<I, V> a;
  a.rows = g.n;
  a.cols = g.cols < 0 ? g.n : g.cols;
  if (!opt.pattern) a.values = make_values<I, V>(g, seed);
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
