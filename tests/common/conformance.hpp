// SPDX-License-Identifier: Apache-2.0
// Shared machinery of the conformance suite (tests/conformance/<op>.cpp): the printed seed, test
// matrices built here (no dependence on the generators under test), every (plugin, variant) pair
// found at run time, staging of inputs into a backend's memory, and comparison with the reference
// plugin's *_f64acc variants run on double copies of the inputs.
//
// Nothing here runs at static-initialisation time: plugins() may query devices (CUDA), so the
// plugin list is read inside the tests only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sparseport::testing {

// ---- Seeds -----------------------------------------------------------------------------------

// SPARSEPORT_TEST_SEED when set (to replay a failure), else a fresh seed per process. Printed once.
inline uint64_t base_seed() {
  static const uint64_t seed = [] {
    uint64_t s = 0;
    const char* env = std::getenv("SPARSEPORT_TEST_SEED");
    if (env != nullptr && *env != '\0') {
      s = std::strtoull(env, nullptr, 0);
    } else {
      std::random_device rd;
      s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    std::cout << "[ seed     ] SPARSEPORT_TEST_SEED=" << s << " (set it to replay these inputs)" << std::endl;
    return s;
  }();
  return seed;
}

// A seed for one input case, so each case can be replayed on its own with the same base seed.
inline uint64_t case_seed(std::string_view name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return base_seed() ^ h;
}

// Records the seed in the test's XML properties and in every failure message of the scope.
#define SPARSEPORT_CONFORMANCE_SEED(case_name)                                                 \
  const uint64_t seed = ::sparseport::testing::case_seed(case_name);                           \
  ::testing::Test::RecordProperty("seed", std::to_string(::sparseport::testing::base_seed())); \
  SCOPED_TRACE("case " + std::string(case_name) +                                              \
               ", SPARSEPORT_TEST_SEED=" + std::to_string(::sparseport::testing::base_seed()))

// ---- Types -----------------------------------------------------------------------------------

inline constexpr Reduce kReduces[] = {Reduce::sum, Reduce::mean, Reduce::max, Reduce::min};
inline constexpr int64_t kWidths[] = {1, 3, 5, 17, 33};

struct Types {
  IndexType index = IndexType::i32;
  ValueType value = ValueType::f32;
};
inline std::string name(const Types& t) { return std::string(name(t.index)) + "_" + name(t.value); }
inline constexpr Types kAllTypes[] = {{IndexType::i32, ValueType::f32},
                                      {IndexType::i64, ValueType::f32},
                                      {IndexType::i32, ValueType::f64},
                                      {IndexType::i64, ValueType::f64}};

// Calls f.template operator()<I, V>() for the run-time types.
template <class F>
void with_types(const Types& t, F&& f) {
  if (t.index == IndexType::i32 && t.value == ValueType::f32) f.template operator()<int32_t, float>();
  if (t.index == IndexType::i64 && t.value == ValueType::f32) f.template operator()<int64_t, float>();
  if (t.index == IndexType::i32 && t.value == ValueType::f64) f.template operator()<int32_t, double>();
  if (t.index == IndexType::i64 && t.value == ValueType::f64) f.template operator()<int64_t, double>();
}

// ---- Test matrices ---------------------------------------------------------------------------

enum class Shape {
  random,      // every row about avg_deg entries
  empty_rows,  // about half the rows empty, the first and the last among them
  no_nnz,      // nnz = 0
  dense_row,   // one row holds every column, the others are light
  mega_row,    // one row holds most of the nonzeros
  power_law,   // degrees from a heavy-tailed distribution
  single_row,  // one row
  no_rows,     // zero rows (structural ops still produce an output)
};
inline const char* name(Shape s) {
  switch (s) {
    case Shape::random:
      return "random";
    case Shape::empty_rows:
      return "empty_rows";
    case Shape::no_nnz:
      return "no_nnz";
    case Shape::dense_row:
      return "dense_row";
    case Shape::mega_row:
      return "mega_row";
    case Shape::power_law:
      return "power_law";
    case Shape::single_row:
      return "single_row";
    case Shape::no_rows:
      return "no_rows";
  }
  return "?";
}

struct MatrixSpec {
  Shape shape = Shape::random;
  bool duplicates = false;  // columns may repeat within a row
  bool unsorted = false;    // columns shuffled within a row
  bool pattern = false;     // no values
  bool square = false;
};

inline std::string name(const MatrixSpec& m) {
  std::string s = name(m.shape);
  if (m.duplicates) s += "_dups";
  if (m.unsorted) s += "_unsorted";
  if (m.pattern) s += "_pattern";
  return s;
}

// The row count and column count of each shape; sized so the whole suite stays fast under ASan.
inline void shape_size(const MatrixSpec& m, int64_t& rows, int64_t& cols) {
  switch (m.shape) {
    case Shape::random:
      rows = 257, cols = 190;
      break;
    case Shape::empty_rows:
      rows = 301, cols = 150;
      break;
    case Shape::no_nnz:
      rows = 40, cols = 33;
      break;
    case Shape::dense_row:
      rows = 70, cols = 600;
      break;
    case Shape::mega_row:
      rows = 150, cols = 3000;
      break;
    case Shape::power_law:
      rows = 400, cols = 400;
      break;
    case Shape::single_row:
      rows = 1, cols = 700;
      break;
    case Shape::no_rows:
      rows = 0, cols = 25;
      break;
  }
  if (m.square) cols = rows = m.shape == Shape::no_rows ? 0 : std::max(rows, cols);
}

// Degrees per row for the shape; the mega-row gets most of the entries.
inline std::vector<int64_t> shape_degrees(const MatrixSpec& m, int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::vector<int64_t> deg(static_cast<size_t>(rows), 0);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t cap = m.duplicates ? std::numeric_limits<int64_t>::max() : cols;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t d = 0;
    switch (m.shape) {
      case Shape::random:
        d = uniform(1, 11);
        break;
      case Shape::empty_rows:
        d = (i == 0 || i == rows - 1 || uniform(0, 1) == 0) ? 0 : uniform(1, 9);
        break;
      case Shape::no_nnz:
      case Shape::no_rows:
        d = 0;
        break;
      case Shape::dense_row:
        d = i == rows / 2 ? cols : uniform(0, 4);
        break;
      case Shape::mega_row:
        d = i == 7 ? 2500 : uniform(0, 3);
        break;
      case Shape::power_law: {
        // Pareto-like: most rows short, a few of degree in the hundreds.
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        d = static_cast<int64_t>(1.0 / std::pow(1.0 - u * 0.999, 1.2)) - 1;
        break;
      }
      case Shape::single_row:
        d = 450;
        break;
    }
    deg[static_cast<size_t>(i)] = std::min(d, cap);
  }
  return deg;
}

// A's entries as COO edges (row = the entry's row), in A's order.
template <class I, class V>
HostCoo<I, V> to_coo(const HostCsr<I, V>& a) {
  HostCoo<I, V> c;
  c.rows = a.rows;
  c.cols = a.cols;
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      c.row.push_back(static_cast<I>(i));
  c.col = a.colind;
  c.values = a.values;
  return c;
}

template <class I, class V>
HostCsr<I, V> make_matrix(const MatrixSpec& m, std::mt19937_64& rng) {
  int64_t rows = 0, cols = 0;
  shape_size(m, rows, cols);
  const std::vector<int64_t> deg = shape_degrees(m, rows, cols, rng);
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  std::uniform_int_distribution<int64_t> col(0, std::max<int64_t>(cols - 1, 0));
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::vector<int64_t> all(static_cast<size_t>(cols));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t d = deg[static_cast<size_t>(i)];
    std::vector<int64_t> row;
    if (m.duplicates) {
      for (int64_t t = 0; t < d; ++t) row.push_back(col(rng));
      // Make sure repeats really occur in any row of two or more entries.
      if (d >= 2) row[1] = row[0];
    } else if (d * 3 > cols) {
      std::shuffle(all.begin(), all.end(), rng);
      row.assign(all.begin(), all.begin() + d);
    } else {
      std::vector<char> used(static_cast<size_t>(cols), 0);
      while (static_cast<int64_t>(row.size()) < d) {
        const int64_t c = col(rng);
        if (used[static_cast<size_t>(c)] == 0) used[static_cast<size_t>(c)] = 1, row.push_back(c);
      }
    }
    if (m.unsorted)
      std::shuffle(row.begin(), row.end(), rng);
    else
      std::sort(row.begin(), row.end());
    for (int64_t c : row) {
      a.colind.push_back(static_cast<I>(c));
      if (!m.pattern) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

// What the padding between cols and ld of every dense operand holds.
template <class V>
inline constexpr V kPadding = V(-7777.0);

template <class V>
HostDense<V> random_dense(int64_t rows, int64_t cols, int64_t ld, std::mt19937_64& rng, double lo = -1.0,
                          double hi = 1.0) {
  HostDense<V> d(rows, cols, ld);
  std::uniform_real_distribution<double> val(lo, hi);
  // Padding beyond cols holds a sentinel, so a kernel reading it shows up in the results and a
  // kernel writing it is caught by expect_padding_kept.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) d(i, j) = j < cols ? static_cast<V>(val(rng)) : kPadding<V>;
  return d;
}

template <class V>
HostDense<V> filled_dense(int64_t rows, int64_t cols, int64_t ld, V fill) {
  HostDense<V> d(rows, cols, ld);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) d(i, j) = j < cols ? fill : kPadding<V>;
  return d;
}

template <class V>
HostDense<V> nan_dense(int64_t rows, int64_t cols, int64_t ld) {
  return filled_dense<V>(rows, cols, ld, std::numeric_limits<V>::quiet_NaN());
}

// An input case of the value-parameterised suites: a matrix shape and the index/value types.
struct MatrixCase {
  MatrixSpec matrix;
  Types types;
};
inline std::string name(const MatrixCase& c) { return name(c.matrix) + "_" + name(c.types); }

// Every spec with every combination of index and value type.
inline std::vector<MatrixCase> with_all_types(const std::vector<MatrixSpec>& specs) {
  std::vector<MatrixCase> out;
  for (const MatrixSpec& m : specs)
    for (const Types& t : kAllTypes) out.push_back({m, t});
  return out;
}

struct CaseName {
  template <class P>
  std::string operator()(const ::testing::TestParamInfo<P>& info) const {
    return name(info.param);
  }
};

inline std::vector<int64_t> row_degrees(const CsrView& a) {
  std::vector<int64_t> d(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i) {
    if (a.index_type == IndexType::i32) {
      const auto* rp = static_cast<const int32_t*>(a.rowptr);
      d[static_cast<size_t>(i)] = rp[i + 1] - rp[i];
    } else {
      const auto* rp = static_cast<const int64_t*>(a.rowptr);
      d[static_cast<size_t>(i)] = rp[i + 1] - rp[i];
    }
  }
  return d;
}

// ---- Conversions for the oracle --------------------------------------------------------------

template <class To, class From>
std::vector<To> convert(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}
template <class To, class From>
std::vector<To> abs_of(const std::vector<From>& v) {
  std::vector<To> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(static_cast<To>(v[i]));
  return out;
}

template <class I, class V>
HostCsr<I, double> to_double(const HostCsr<I, V>& a, bool absolute = false) {
  HostCsr<I, double> d;
  d.rows = a.rows;
  d.cols = a.cols;
  d.rowptr = a.rowptr;
  d.colind = a.colind;
  d.values = absolute ? abs_of<double>(a.values) : convert<double>(a.values);
  return d;
}
template <class V>
HostDense<double> to_double(const HostDense<V>& a, bool absolute = false) {
  HostDense<double> d;
  d.rows = a.rows;
  d.cols = a.cols;
  d.ld = a.ld;
  d.data = absolute ? abs_of<double>(a.data) : convert<double>(a.data);
  return d;
}

// ---- Plugins and variants --------------------------------------------------------------------

struct Target {
  std::string plugin;
  std::string variant;
  std::shared_ptr<Context> ctx;
};

// One context per available plugin, created on first use (never at static-init time) and never
// destroyed: a device runtime may already be torn down when static destructors run.
inline std::shared_ptr<Context> context_for(const std::string& plugin) {
  static auto* contexts = new std::map<std::string, std::shared_ptr<Context>>();
  auto it = contexts->find(plugin);
  if (it == contexts->end()) it = contexts->emplace(plugin, std::make_shared<Context>(Context::create(plugin))).first;
  return it->second;
}

// Every variant of every available plugin that lists op, the reference's own included, but those that
// round float32 to TF32 (VariantInfo::tf32): they run only with the caller's consent and are held to
// the TF32 bound, not the float32 tolerances here (tests/cuda/test_cuda_tc.cpp, CudaTcTf32).
inline std::vector<Target> targets(sparseport_op op) {
  std::vector<Target> out;
  for (const PluginInfo& p : plugins()) {
    if (p.status != PluginStatus::available) continue;
    for (const VariantInfo& v : p.variants)
      if (v.op == op && !v.tf32) out.push_back({p.name, v.name, context_for(p.name)});
  }
  return out;
}

inline const Context& oracle() { return *context_for("reference"); }

// The oracle variant of op: the reference's *_f64acc where it has one, else its only variant.
inline std::string oracle_variant(sparseport_op op) {
  std::string pick;
  for (const std::string& v : plugin("reference").variants_of(op))
    if (pick.empty() || v.find("_f64acc") != std::string::npos) pick = v;
  return pick;
}

// Prints, once per op and process, which plugin variants the suite checks.
inline void list_targets_once(sparseport_op op, const std::vector<Target>& all) {
  static bool listed[SPARSEPORT_OP_COUNT] = {};
  if (listed[op]) return;
  listed[op] = true;
  std::cout << "[ targets  ] " << op_name(op) << ":";
  for (const Target& t : all) std::cout << " " << t.plugin << "/" << t.variant;
  std::cout << std::endl;
  static bool skipped_listed = false;
  if (skipped_listed) return;
  skipped_listed = true;
  for (const PluginInfo& p : plugins())
    if (p.status != PluginStatus::available)
      std::cout << "[ skipped  ] plugin " << p.name << " (" << name(p.status) << "): " << p.reason << std::endl;
}

// A variant that does not apply to an input is no failure. It is printed once per test and
// variant (with the first reason; one test runs many widths and reduces) and kept in the XML.
inline void note_not_applicable(const Target& t, const char* why) {
  static std::map<std::string, int>* seen = new std::map<std::string, int>();
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string key = (info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "") + "|" +
                          t.plugin + "/" + t.variant;
  if ((*seen)[key]++ > 0) return;
  std::cout << "[ n/a      ] " << t.plugin << "/" << t.variant << ": " << why << std::endl;
  ::testing::Test::RecordProperty("not_applicable." + t.plugin + "." + t.variant, why);
}

// Runs body(target) for every target of op. A variant that says it does not apply to the input
// is noted on stdout and in the XML properties; any other exception fails the test.
template <class F>
void for_each_target(sparseport_op op, F&& body) {
  const std::vector<Target> all = targets(op);
  ASSERT_FALSE(all.empty()) << "no available plugin lists " << op_name(op) << " (the reference always should)";
  list_targets_once(op, all);
  for (const Target& t : all) {
    SCOPED_TRACE("backend " + t.plugin + ", variant " + t.variant);
    try {
      body(t);
    } catch (const Unsupported& e) {
      if (std::strstr(e.what(), "does not apply") == nullptr) {
        ADD_FAILURE() << t.plugin << "/" << t.variant << " threw Unsupported: " << e.what();
        continue;
      }
      note_not_applicable(t, e.what());
    } catch (const std::exception& e) {
      ADD_FAILURE() << t.plugin << "/" << t.variant << " threw: " << e.what();
    }
  }
}

// ---- Staging into a backend's memory ---------------------------------------------------------

// Copies host inputs into a context's memory (ctx.allocate + copy_to_backend on device-memory
// backends; an exact-size host copy otherwise, so AddressSanitizer sees any overrun) and brings
// results back. Owns everything it hands out.
class Stage {
 public:
  explicit Stage(const Context& ctx) : ctx_(ctx) {}

  template <class T>
  T* put(const std::vector<T>& host) {
    if (host.empty()) return nullptr;
    const size_t bytes = host.size() * sizeof(T);
    if (ctx_.device_memory()) {
      buffers_.push_back(ctx_.allocate(bytes));
      ctx_.copy_to_backend(buffers_.back().data(), host.data(), bytes);
      return static_cast<T*>(buffers_.back().data());
    }
    auto copy = std::make_shared<std::vector<T>>(host);
    keep_.push_back(copy);
    return copy->data();
  }

  template <class T>
  std::vector<T> get(const T* p, size_t n) const {
    std::vector<T> out(n);
    if (n > 0) ctx_.copy_to_host(out.data(), p, n * sizeof(T));
    return out;
  }

  template <class I, class V>
  CsrView csr(const HostCsr<I, V>& a) {
    return make_csr<I, V>(a.rows, a.cols, a.nnz(), put(a.rowptr), put(a.colind),
                          a.is_pattern() ? nullptr : put(a.values));
  }
  template <class I, class V>
  CooView coo(const HostCoo<I, V>& a) {
    return make_coo<I, V>(a.rows, a.cols, a.nnz(), put(a.row), put(a.col), a.values.empty() ? nullptr : put(a.values));
  }
  template <class I>
  IndexView index(const std::vector<I>& v) {
    return make_index<I>(static_cast<int64_t>(v.size()), put(v));
  }
  template <class V>
  DenseView dense(const HostDense<V>& d) {
    return make_dense<V>(d.rows, d.cols, d.ld, static_cast<const V*>(put(d.data)));
  }
  template <class V>
  DenseMutView dense_mut(const HostDense<V>& d) {
    return make_dense<V>(d.rows, d.cols, d.ld, put(d.data));
  }
  // The whole rows x ld block of a staged output, padding included.
  template <class V>
  HostDense<V> fetch(const DenseMutView& d) const {
    HostDense<V> h(d.rows, d.cols, d.ld);
    h.data = get(static_cast<const V*>(d.data), static_cast<size_t>(d.rows * d.ld));
    return h;
  }

 private:
  const Context& ctx_;
  std::vector<Buffer> buffers_;
  std::vector<std::shared_ptr<void>> keep_;
};

// ---- Comparison ------------------------------------------------------------------------------

// Relative tolerance for one result whose rounding error grows with `terms` additions, against
// `bound`, the sum of the magnitudes of its terms (float ~1e-4, double ~1e-10, plus the length).
template <class V>
double tolerance(double bound, int64_t terms) {
  const double eps = std::numeric_limits<V>::epsilon();
  const double base = std::is_same_v<V, float> ? 1e-4 : 1e-10;
  return (base + 2.0 * eps * static_cast<double>(terms)) * bound;
}

// got (a plugin's result, in V) against want (the oracle, in double) over the cols x rows block,
// with bound(i, j) and terms(i) as in tolerance(). Reports the first few mismatches and a count.
template <class V, class Terms>
void expect_close(const HostDense<V>& got, const HostDense<double>& want, const HostDense<double>& bound, Terms&& terms,
                  const std::string& what) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  int64_t bad = 0;
  for (int64_t i = 0; i < got.rows; ++i) {
    for (int64_t j = 0; j < got.cols; ++j) {
      const double g = static_cast<double>(got(i, j)), w = want(i, j);
      const double tol = tolerance<V>(bound(i, j), terms(i));
      const bool ok = (std::isnan(w) && std::isnan(g)) || std::fabs(g - w) <= tol;
      if (ok) continue;
      if (++bad <= 5)
        ADD_FAILURE() << what << "[" << i << "," << j << "] is " << g << " but the oracle says " << w << " (|diff| "
                      << std::fabs(g - w) << " > tolerance " << tol << ", " << terms(i) << " terms)";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.rows * got.cols << " values differ from the oracle";
}

// Elements between cols and ld of every row must still hold the sentinel the test put there.
template <class V>
void expect_padding_kept(const HostDense<V>& got, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = got.cols; j < got.ld; ++j) bad += got(i, j) == kPadding<V> ? 0 : 1;
  EXPECT_EQ(bad, 0) << what << ": " << bad << " padding elements beyond cols were overwritten";
}

// Structural results must match exactly.
template <class I, class V>
void expect_same_csr(const HostCsr<I, V>& got, const HostCsr<I, double>& want, const std::string& what) {
  EXPECT_EQ(got.rows, want.rows) << what;
  EXPECT_EQ(got.cols, want.cols) << what;
  EXPECT_EQ(got.rowptr, want.rowptr) << what << ": rowptr differs";
  EXPECT_EQ(got.colind, want.colind) << what << ": colind differs";
  EXPECT_EQ(got.is_pattern(), want.is_pattern()) << what << ": one result has values, the other not";
  EXPECT_EQ(convert<double>(got.values), want.values) << what << ": values differ";
}

}  // namespace sparseport::testing
