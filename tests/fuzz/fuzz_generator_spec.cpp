// SPDX-License-Identifier: Apache-2.0
// Fuzzes the generator spec parser (er:N:P, rmat:SCALE:EDGEFACTOR, hubs:N:DEG:NHUBS:HUBDEG,
// band:N:DEG, megarow:N:DEG:FRACTION, powerlaw). The input is the spec. The harness sizes the
// graph the spec asks for, with the library's own formulas:
//   small (N <= 2^12, entries <= 2^15): generate and load_graph with both index types and options;
//     a malformed spec must raise a sparseport::Error, a good one give a canonical N x N CSR
//     that honours the options;
//   absurd (its row pointers and column indices alone need more than this machine's memory):
//     generate<int64_t> must refuse it with a sparseport::Error before allocating anything;
//   more rows or entries than int32_t can address: generate<int32_t> must refuse it;
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
  long double rows = 0, entries = 0;  // entries: stored (er: expected), rmat: drawn
};

// nullopt when the spec does not even parse (the library must refuse it, cheaply).
std::optional<Size> size_of(std::string_view spec) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (;;) {
    const size_t c = spec.find(':', pos);
    parts.push_back(spec.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
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
  Size s;
  if (name == "powerlaw" && f.empty()) return Size{65536, 8 * 65536};
  if (name == "er" && f.size() == 2) {
    s.rows = std::floor(f[0]);
    const auto p = static_cast<long double>(static_cast<double>(std::min<long double>(f[1], 1)));  // as a double
    s.entries = p * s.rows * s.rows;
  } else if (name == "rmat" && f.size() == 2) {
    s.rows = std::exp2(std::min<long double>(std::floor(f[0]), 1000));
    s.entries = f[1] * s.rows;
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
  } else {
    return std::nullopt;
  }
  return s;
}

template <class I, class V>
void check_graph(const sp::HostCsr<I, V>& a, const sp::MmReadOptions& o, bool pattern, const std::string& spec) {
  const std::string w = "'" + spec + "'";
  fuzz::require(a.rows == a.cols && static_cast<int64_t>(a.rowptr.size()) == a.rows + 1, w + ": not a square CSR");
  const sp::Validation v = sp::validate(a.view());
  fuzz::require(v.canonical(), w + ": the generated CSR is not canonical: " + v.message);
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
std::optional<sp::HostCsr<I, V>> generate(const std::string& spec, bool pattern) {
  std::optional<sp::HostCsr<I, V>> a;
  sp::GenOptions g;
  g.pattern = pattern;
  if (!fuzz::rejects("generate", [&] { a = sp::generate<I, V>(spec, g); })) check_graph(*a, {}, pattern, spec);
  return a;
}

template <class I, class V>
void load(const std::string& spec, bool symmetrize, bool drop, bool keep) {
  sp::MmReadOptions o;
  o.symmetrize = symmetrize;
  o.drop_self_loops = drop;
  o.keep_values = keep;
  std::optional<sp::HostCsr<I, V>> a;
  if (!fuzz::rejects("load_graph", [&] { a = sp::load_graph<I, V>(spec, o); })) check_graph(*a, o, !keep, spec);
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
  if (s->rows <= kMaxRows && s->entries <= kMaxEntries) {
    const auto a = generate<int32_t, float>(spec, false);
    const auto b = generate<int64_t, double>(spec, true);
    fuzz::require(a.has_value() == b.has_value(), "'" + spec + "' generates with one index type but not the other");
    if (a)
      fuzz::require(std::equal(a->rowptr.begin(), a->rowptr.end(), b->rowptr.begin(), b->rowptr.end()) &&
                        std::equal(a->colind.begin(), a->colind.end(), b->colind.begin(), b->colind.end()),
                    "'" + spec + "' gives different graphs with int32_t and int64_t indices");
    load<int32_t, double>(spec, true, true, true);
    load<int64_t, float>(spec, true, false, false);
    load<int32_t, float>(spec, false, true, true);
    return 0;
  }
  const long double bytes = (s->rows + 1 + s->entries) * sizeof(int64_t);
  if (bytes > fuzz::host_memory_bytes())
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int64_t, double>(spec); }),
                  "generate<int64_t> accepted '" + spec + "', which needs more memory than this machine has");
  if (s->rows > kMax32 || s->entries > kMax32)
    fuzz::require(fuzz::rejects("generate", [&] { (void)sp::generate<int32_t, float>(spec); }),
                  "generate<int32_t> accepted '" + spec + "', which int32_t indices cannot address");
  return 0;
}
