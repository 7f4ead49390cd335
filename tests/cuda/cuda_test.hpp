// SPDX-License-Identifier: Apache-2.0
// Helpers for the cuda plugin's tests: a skip when there is no GPU, device copies of host data,
// adversarial inputs, and a double-precision oracle written from the contract in ops.hpp (plain
// loops, independent of any plugin), so these tests do not wait for the reference plugin.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../common/row_oracle.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/ops.hpp"

namespace cuda_test {

using namespace sparseport;

// Empty when the cuda plugin can run here, else why not (CI: no driver, no GPU).
inline std::string no_gpu_reason() {
  const PluginInfo& p = plugin("cuda");
  if (p.status == PluginStatus::available) return {};
  return std::string("no usable GPU for the cuda plugin (status ") + name(p.status) + "): " + p.reason;
}

#define CUDA_TEST_REQUIRE_GPU()                                          \
  do {                                                                   \
    const std::string why_ = ::cuda_test::no_gpu_reason();               \
    if (!why_.empty()) GTEST_SKIP() << "skipped: " << why_;              \
  } while (0)

// ---- device copies ------------------------------------------------------------------------------

template <class T>
Buffer upload(const Context& ctx, const std::vector<T>& v) {
  Buffer b = ctx.allocate(v.size() * sizeof(T));
  ctx.copy_to_backend(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> download(const Context& ctx, const void* p, size_t n) {
  std::vector<T> v(n);
  ctx.copy_to_host(v.data(), p, n * sizeof(T));
  return v;
}

template <class I, class V>
struct DevCsr {
  Buffer rowptr, colind, values;
  CsrView view;
};

template <class I, class V>
DevCsr<I, V> to_device(const Context& ctx, const HostCsr<I, V>& a) {
  DevCsr<I, V> d;
  d.rowptr = upload(ctx, a.rowptr);
  d.colind = upload(ctx, a.colind);
  if (!a.is_pattern()) d.values = upload(ctx, a.values);
  d.view = make_csr<I, V>(a.rows, a.cols, a.nnz(), static_cast<const I*>(d.rowptr.data()),
                          static_cast<const I*>(d.colind.data()),
                          a.is_pattern() ? nullptr : static_cast<const V*>(d.values.data()));
  return d;
}

// A dense matrix on the device; `offset` elements of slack in front make its start misaligned.
template <class V>
struct DevDense {
  Buffer buf;
  int64_t rows = 0, cols = 0, ld = 0, offset = 0;
  V* data() const { return static_cast<V*>(buf.data()) + offset; }
  DenseView view() const { return make_dense<V>(rows, cols, ld, static_cast<const V*>(data())); }
  DenseMutView mut() const { return make_dense<V>(rows, cols, ld, data()); }
};

template <class V>
DevDense<V> to_device(const Context& ctx, const HostDense<V>& h, int64_t offset = 0) {
  DevDense<V> d;
  d.rows = h.rows;
  d.cols = h.cols;
  d.ld = h.ld;
  d.offset = offset;
  std::vector<V> padded(static_cast<size_t>(offset), V(0));
  padded.insert(padded.end(), h.data.begin(), h.data.end());
  d.buf = upload(ctx, padded);
  return d;
}

template <class V>
HostDense<V> to_host(const Context& ctx, const DevDense<V>& d) {
  HostDense<V> h(d.rows, d.cols, d.ld);
  if (!h.data.empty()) ctx.copy_to_host(h.data.data(), d.data(), h.data.size() * sizeof(V));
  return h;
}

// ---- test scale ---------------------------------------------------------------------------------

// SPARSEPORT_TEST_SCALE, a number in (0, 1], default 1: the factor by which the tests with large
// inputs shrink them (tests/cuda/gpu_check.sh sets 0.1 under compute-sanitizer, where a test's
// time follows the work its kernels do). Each such test keeps what it is about: its sizes have
// floors that keep a mega-row over several CTAs and chunks, a hub above the hub threshold, and so
// on (a comment per test gives the numbers at 0.1); a test whose input size is the point keeps it
// and thins its loops instead (fewer variants, reductions or knob settings, keeping the edge
// cases). Scale 1 (CTest) runs the full tests.
// Unset or empty means 1; anything else but a number in (0, 1] is refused.
inline double parse_test_scale(const char* text) {
  if (text == nullptr || *text == '\0') return 1.0;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(s > 0.0 && s <= 1.0))
    throw InvalidArgument(std::string("SPARSEPORT_TEST_SCALE='") + text +
                          "' is not a number in (0, 1] (the factor by which the CUDA tests shrink their large "
                          "inputs; unset means 1, the full tests)");
  return s;
}

// Read once (an invalid value throws on every call).
inline double test_scale() {
  static const double scale = parse_test_scale(std::getenv("SPARSEPORT_TEST_SCALE"));
  return scale;
}

inline bool full_scale() { return test_scale() == 1.0; }

// n at full scale; below it n times the scale, at least `at_least` (and at most n).
inline int64_t scaled(int64_t n, int64_t at_least) {
  if (full_scale()) return n;
  const auto s = static_cast<int64_t>(std::llround(static_cast<double>(n) * test_scale()));
  return std::min(n, std::max(at_least, s));
}

// The whole loop at full scale; below it only `kept`, the cases the caller picks from `full`.
template <class T>
std::vector<T> thinned(std::vector<T> full, std::vector<T> kept) {
  return full_scale() ? full : kept;
}

// Reads the scale before the first test and prints it once per process, so that a log shows it;
// an invalid value is a fatal failure of the global set-up (GoogleTest then skips every test and
// the program fails). Registered by one source file of each test program
// (::testing::AddGlobalTestEnvironment).
class ScaleEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    double s = 1.0;
    try {
      s = test_scale();
    } catch (const std::exception& e) {
      GTEST_FAIL() << e.what() << "; so every test is skipped";
    }
    std::cout << "[ scale    ] SPARSEPORT_TEST_SCALE=" << s
              << (s == 1.0 ? " (full-size inputs)" : " (large inputs shrunk: tests/cuda/cuda_test.hpp)") << std::endl;
  }
};

// ---- inputs -------------------------------------------------------------------------------------

// rows x cols with one mega-row of about `mega` of the entries, a few hubs (50 to 210 entries,
// some above the hub threshold 256 when hub_deg is set), a fifth of the rows empty, the rest of
// degree 1..8; columns random, unsorted, repeats allowed. While fewer than `min_hubs` rows of
// hub_deg entries have been drawn, a row drawn with entries gets hub_deg instead; the random draws
// stay the same, so min_hubs = 0 gives the inputs of before.
template <class I, class V>
HostCsr<I, V> skewed_csr(int64_t rows, int64_t cols, int64_t nnz_target, double mega, uint64_t seed,
                         bool with_values = true, int64_t hub_deg = 600, int64_t min_hubs = 0) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> deg(static_cast<size_t>(rows), 0);
  const int64_t mega_row = rows / 3;
  int64_t placed = static_cast<int64_t>(mega * static_cast<double>(nnz_target));
  deg[static_cast<size_t>(mega_row)] = placed;
  std::uniform_int_distribution<int64_t> small(1, 8);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int64_t hubs = 0;
  for (int64_t i = 0; i < rows && placed < nnz_target; ++i) {
    if (i == mega_row) continue;
    const double x = u(rng);
    bool hub = x >= 0.22 && x < 0.225;
    int64_t d = x < 0.2 ? 0 : (x < 0.22 ? 50 + small(rng) * 20 : (hub ? hub_deg : small(rng)));
    if (d > 0 && !hub && hubs < min_hubs) {
      d = hub_deg;
      hub = true;
    }
    hubs += hub ? 1 : 0;
    d = std::min(d, nnz_target - placed);
    deg[static_cast<size_t>(i)] = d;
    placed += d;
  }
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, 0);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < deg[static_cast<size_t>(i)]; ++k) {
      a.colind.push_back(static_cast<I>(col(rng)));
      if (with_values) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(a.colind.size());
  }
  return a;
}

// A size at full scale, or its floor.
struct Size {
  int64_t rows, cols, nnz;
};

// The hubs (rows of 600 entries) a skewed_csr must have: none asked for at full scale (the inputs
// of before), two below it (in an input of a few thousand entries a hub would otherwise be luck).
inline int64_t scaled_hubs() { return full_scale() ? 0 : 2; }

// skewed_csr of size `full` at full scale; below it each of rows, cols and nnz times the scale, at
// least its floor, with scaled_hubs() hubs.
template <class I, class V>
HostCsr<I, V> scaled_skewed_csr(Size full, Size at_least, double mega, uint64_t seed, bool with_values = true) {
  return skewed_csr<I, V>(scaled(full.rows, at_least.rows), scaled(full.cols, at_least.cols),
                          scaled(full.nnz, at_least.nnz), mega, seed, with_values, 600, scaled_hubs());
}

using sparseport_test::Expected;
using sparseport_test::random_dense;
using sparseport_test::reduce_rows;

// 32 ulps of slack: the GPU kernels sum in many orders, atomics included.
template <class V>
::testing::AssertionResult close_to(const HostDense<V>& got, const Expected& want, int64_t F) {
  return sparseport_test::close_to(got, want, F, 32.0);
}

template <class I, class V>
std::vector<std::vector<int64_t>> entries_by_row(const HostCsr<I, V>& a) {
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      rows[static_cast<size_t>(i)].push_back(e);
  return rows;
}

template <class I, class V>
double value_of(const HostCsr<I, V>& a, int64_t e) {
  return a.is_pattern() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(e)]);
}

}  // namespace cuda_test
