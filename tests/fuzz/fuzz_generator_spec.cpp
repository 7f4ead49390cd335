// SPDX-License-Identifier: Apache-2.0
// Fuzzes the generator spec parser (er:N:P, rmat:SCALE:EDGEFACTOR, rmatp:SCALE:EDGEFACTOR:A:B:C,
// hubs:N:DEG:NHUBS:HUBDEG, band:N:DEG, megarow:N:DEG:FRACTION, chunglu:N:AVGDEG:EXPONENT,
// sbm:N:BLOCKS:DEGIN:DEGOUT, mesh2d:NX:NY:RENUMBER, mesh3d:NX:NY:NZ:RENUMBER,
// mesh3d27:NX:NY:NZ:RENUMBER, road:NX:NY:KEEP, bipartite:ROWS:COLS:DEG, powerlaw; each may end in
// @SEED). The input is the spec. The harness sizes the graph the spec asks for, with the library's
// own formulas:
//   small (rows and columns <= 2^12, entries <= 2^15): generate and load_graph with both index types
//     and options; a malformed spec must raise a sparseport::Error, a good one give a canonical
//     CSR of the spec's shape (ROWS x COLS for bipartite, N x N for the rest) that honours the
//     options; symmetrize of a rectangular one must raise InvalidArgument; SPEC@K must give what
//     SPEC gives with GenOptions::seed = K;
//   absurd (its row pointers and column indices alone need more than this machine's memory):
//     generate<int64_t> must refuse it with a sparseport::Error before allocating anything;
//   more rows, columns or entries than int32_t can address: generate<int32_t> must refuse it;
//   anything else (powerlaw too) is a valid graph too big to build for every fuzz input: skipped.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

constexpr long double kMaxRows = 1 << 12;
constexpr long double kMaxEntries = 1 << 15;
constexpr long double kMax32 = std::numeric_limits<int32_t>::max();

// A field as the library reads it: an int64 by from_chars, else a finite double by from_chars.
std::optional<long double> number(std::string_view f) {
  int64_t i = 0;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), i);
  if (ec == std::errc() && end == f.data() + f.size()) return static_cast<long double>(i);
  double d = 0;
  auto [end2, ec2] = std::from_chars(f.data(), f.data() + f.size(), d);
  if (ec2 == std::errc() && end2 == f.data() + f.size() && std::isfinite(d)) return d;
  return std::nullopt;
}

struct Size {
  long double rows = 0, cols = 0;
  // entries: at most this many are stored (er: the expected count, not a bound; bound is false);
  // counted: what the library's own checks count (memory, index type), never more than they do:
  // er expected, rmat/rmatp/chunglu drawn, road the kept grid edges, bipartite ROWS*DEG.
  long double entries = 0, counted = 0;
  bool bound = true;
  std::string_view body;          // the spec without its @SEED
  std::optional<uint64_t> seed;   // the K of a valid @K
};

// nullopt when the spec does not even parse (the library must refuse it, cheaply).
std::optional<Size> size_of(std::string_view spec) {
  Size s;
  // "SPEC@K": K all digits, 0 to 2^64-1, after the first '@' (the library reads it so).
  const size_t at = spec.find('@');
  s.body = spec.substr(0, at);
  if (at != std::string_view::npos) {
    const std::string_view k = spec.substr(at + 1);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), v);
    if (k.empty() || ec != std::errc() || end != k.data() + k.size()) return std::nullopt;
    s.seed = v;
  }
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (;;) {
    const size_t c = s.body.find(':', pos);
    parts.push_back(s.body.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  const std::string_view name = parts[0];
  std::vector<long double> f;
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto x = number(parts[i]);
    if (!x) return std::nullopt;
    f.push_back(std::max<long double>(*x, 0));
  }
  if (name == "powerlaw" && f.empty()) {
    s.rows = 65536;
    s.entries = 8 * 65536;
  } else if (name == "er" && f.size() == 2) {
    s.rows = std::floor(f[0]);
    const auto p = static_cast<long double>(static_cast<double>(std::min<long double>(f[1], 1)));  // as a double
    s.entries = p * s.rows * s.rows;
    s.bound = false;
  } else if ((name == "rmat" && f.size() == 2) || (name == "rmatp" && f.size() == 5)) {
    s.rows = std::exp2(std::min<long double>(std::floor(f[0]), 1000));
    s.entries = f[1] * s.rows;  // drawn; repeats merged
  } else if (name == "hubs" && f.size() == 4) {
    s.rows = f[0];
    s.entries = std::max<long double>(f[0] - f[2], 0) * f[1] + f[2] * f[3];
  } else if (name == "band" && f.size() == 2) {
    s.rows = f[0];
    const long double h = std::min(std::floor(f[1] / 2), std::max<long double>(s.rows - 1, 0));
    s.entries = s.rows * (2 * h + 1) - h * (h + 1);
  } else if (name == "megarow" && f.size() == 3) {
    s.rows = f[0];
    s.entries = f[0] * f[1];
  } else if (name == "chunglu" && f.size() == 3) {
    s.rows = f[0];
    s.entries = f[0] * f[1];  // N*AVGDEG drawn; repeats merged
  } else if (name == "sbm" && f.size() == 4) {
    s.rows = f[0];
    s.entries = f[0] * (f[2] + f[3]);  // exactly DEGIN + DEGOUT per row
  } else if ((name == "mesh2d" && f.size() == 3) || ((name == "mesh3d" || name == "mesh3d27") && f.size() == 4)) {
    const long double nx = f[0], ny = f[1], nz = name == "mesh2d" ? 1 : f[2];
    s.rows = nx * ny * nz;
    if (s.rows > 0 && name == "mesh3d27") {
      s.entries = (3.0L * nx - 2) * (3.0L * ny - 2) * (3.0L * nz - 2);  // exact
    } else if (s.rows > 0) {  // the diagonal and two per grid edge: exact
      s.entries = s.rows + 2 * (s.rows - s.rows / nx) + 2 * (s.rows - s.rows / ny) + 2 * (s.rows - s.rows / nz);
    }
  } else if (name == "road" && f.size() == 3) {
    s.rows = f[0] * f[1];
    const long double edges = s.rows == 0 ? 0 : 2 * s.rows - f[0] - f[1];
    s.entries = 2 * edges + s.rows / 2;  // every grid edge kept, a shortcut in every 2x2 cell
    s.counted = 2 * std::min<long double>(f[2], 1) * edges + s.rows / 50;  // what its memory check counts
  } else if (name == "bipartite" && f.size() == 3) {
    s.rows = f[0];
    s.cols = f[1];
    // A row draws 1 + Geometric(1/DEG) columns: DEG 1 one, else 1 + floor(-log2 U / -log2(1 - 1/DEG))
    // with U >= 2^-64 (+1 for the fixed-point logarithms), at most COLS of them distinct.
    const long double q = f[2] >= 2 ? -std::log2(1 - 1 / f[2]) : 0;
    const long double per_row = f[2] == 0 ? 0 : f[2] < 2 ? 1 : q > 0 ? 2 + 64 / q : f[1];
    s.entries = f[0] * std::min(f[1], per_row);
    s.counted = f[0] * f[2];  // ROWS*DEG expected
  } else {
    return std::nullopt;
  }
  if (name != "bipartite") s.cols = s.rows;
  if (name != "road" && name != "bipartite") s.counted = s.entries;
  return s;
}

template <class I, class V>
void check_graph(const sp::HostCsr<I, V>& a, const Size& s, const sp::MmReadOptions& o, bool pattern,
                 const std::string& spec) {
  const std::string w = "'" + spec + "'";
  fuzz::require(static_cast<long double>(a.rows) == s.rows && static_cast<long double>(a.cols) == s.cols &&
                    static_cast<int64_t>(a.rowptr.size()) == a.rows + 1,
                w + ": not a CSR of the spec's shape");
  const sp::Validation v = sp::validate(a.view());
  fuzz::require(v.canonical(), w + ": the generated CSR is not canonical: " + v.message);
  if (s.bound && !o.symmetrize)
    fuzz::require(static_cast<long double>(a.colind.size()) <= s.entries, w + ": more entries than the spec allows");
  fuzz::require(pattern ? a.values.empty() : a.values.size() == a.colind.size(),
                w + ": values do not match the pattern option");
  for (const V x : a.values) fuzz::require(x >= V(0.5) && x < V(1.5), w + ": a value outside [0.5, 1.5)");
  if (o.drop_self_loops)
    for (int64_t i = 0; i < a.rows; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
        fuzz::require(a.colind[static_cast<size_t>(k)] != i, w + ": drop_self_loops kept a diagonal entry");
  if (o.symmetrize) fuzz::require(sp::graph_info(a).symmetric, w + ": symmetrize did not give a symmetric matrix");
}

template <class I, class V>
std::optional<sp::HostCsr<I, V>> generate(const std::string& spec, const Size& s, bool pattern) {
  std::optional<sp::HostCsr<I, V>> a;
  sp::GenOptions g;
  g.pattern = pattern;
  if (!fuzz::rejects("generate", [&] { a = sp::generate<I, V>(spec, g); })) check_graph(*a, s, {}, pattern, spec);
  return a;
}

// rectangular: the spec generated a ROWS x COLS graph with ROWS != COLS, whose union with its
// transpose load_graph must refuse (InvalidArgument).
template <class I, class V>
void load(const std::string& spec, const Size& s, bool rectangular, bool symmetrize, bool drop, bool keep) {
  sp::MmReadOptions o;
  o.symmetrize = symmetrize;
  o.drop_self_loops = drop;
  o.keep_values = keep;
  std::optional<sp::HostCsr<I, V>> a;
  if (symmetrize && rectangular) {
    bool invalid = false;
    std::string why;
    const bool refused = fuzz::rejects("load_graph", [&] {
      try {
        a = sp::load_graph<I, V>(spec, o);
      } catch (const sp::InvalidArgument&) {
        invalid = true;
        throw;
      }
    }, &why);
    fuzz::require(invalid, "load_graph symmetrized '" + spec + "', which is rectangular: " +
                               (refused ? "refused with another error than InvalidArgument: " + why : "not refused"));
    return;
  }
  if (!fuzz::rejects("load_graph", [&] { a = sp::load_graph<I, V>(spec, o); })) check_graph(*a, s, o, !keep, spec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return 0;  // a spec is a short line
  const std::string spec(reinterpret_cast<const char*>(data), size);
  // A path is never a spec; load_graph would open it (and "/dev/stdin" would wait forever).
  if (!sp::is_generator_spec(spec)) {
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int32_t, float>(spec); }),
                  "generate accepted '" + spec + "', which is_generator_spec says is not a spec");
    return 0;
  }
  const std::optional<Size> s = size_of(spec);
  if (!s) {
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int64_t, double>(spec); }),
                  "generate accepted '" + spec + "', which does not parse");
    return 0;
  }
  if (s->rows <= kMaxRows && s->cols <= kMaxRows && s->entries <= kMaxEntries) {
    const auto a = generate<int32_t, float>(spec, *s, false);
    const auto b = generate<int64_t, double>(spec, *s, true);
    fuzz::require(a.has_value() == b.has_value(), "'" + spec + "' generates with one index type but not the other");
    if (a)
      fuzz::require(std::equal(a->rowptr.begin(), a->rowptr.end(), b->rowptr.begin(), b->rowptr.end()) &&
                        std::equal(a->colind.begin(), a->colind.end(), b->colind.begin(), b->colind.end()),
                    "'" + spec + "' gives different graphs with int32_t and int64_t indices");
    if (a && s->seed) {  // SPEC@K is SPEC with GenOptions::seed = K
      const std::string body(s->body);
      sp::GenOptions g;
      g.seed = *s->seed;
      std::optional<sp::HostCsr<int32_t, float>> c;
      fuzz::require(!fuzz::rejects("generate", [&] { c = sp::generate<int32_t, float>(body, g); }),
                    "'" + spec + "' generates but '" + body + "' with GenOptions::seed = K does not");
      fuzz::require(a->rowptr == c->rowptr && a->colind == c->colind && a->values == c->values,
                    "'" + spec + "' differs from '" + body + "' with GenOptions::seed = K");
    }
    const bool rectangular = a && a->rows != a->cols;
    load<int32_t, double>(spec, *s, rectangular, true, true, true);
    load<int64_t, float>(spec, *s, rectangular, true, false, false);
    load<int32_t, float>(spec, *s, rectangular, false, true, true);
    return 0;
  }
  const long double bytes = (s->rows + 1 + s->counted) * sizeof(int64_t);
  if (bytes > fuzz::host_memory_bytes())
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int64_t, double>(spec); }),
                  "generate<int64_t> accepted '" + spec + "', which needs more memory than this machine has");
  if (s->rows > kMax32 || s->cols > kMax32 || s->counted > kMax32)
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int32_t, float>(spec); }),
                  "generate<int32_t> accepted '" + spec + "', which int32_t indices cannot address");
  return 0;
}
