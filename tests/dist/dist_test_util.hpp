// SPDX-License-Identifier: Apache-2.0
// What the sparseport::dist test programs (test_dist, test_dist_backward) share: seeded inputs,
// the reference context and double copies for the single-process result, each rank's rows of a
// global matrix and the two ways to build a DistCsr, collectives over the ranks, the backends and
// contexts to test, host operands in a context's memory, the check of a refusal's message, and the
// MPI main (one seed for every rank; ranks other than 0 print only their failures; non-zero exit
// when any rank failed). Header-only: everything is inline or a template.
//
// Every rank runs every test in the same order (the collectives must match): no ASSERT_ that
// returns before a collective.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport_dist_test {

namespace sp = ::sparseport;
namespace dist = ::sparseport::dist;

// This rank, the number of ranks, and the seed every rank shares (set by run_all_tests).
inline int g_rank = 0, g_ranks = 1;
inline uint64_t g_seed = 0;

// ---- inputs ----------------------------------------------------------------------------------

// A CSR with the given columns in each row, values in [0.5, 1.5) (none for a pattern).
template <class I, class V>
sp::HostCsr<I, V> from_rows(int64_t rows, int64_t cols, const std::vector<std::vector<int64_t>>& cols_of, bool pattern,
                            std::mt19937_64& rng) {
  std::uniform_real_distribution<double> val(0.5, 1.5);
  sp::HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  for (const auto& r : cols_of) {
    for (const int64_t c : r) {
      a.colind.push_back(static_cast<I>(c));
      if (!pattern) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

// rows x cols, 1..max_deg draws a row, a share of rows empty; repeats: columns in random order,
// repeated (else sorted and unique).
template <class I, class V>
sp::HostCsr<I, V> random_csr(int64_t rows, int64_t cols, int max_deg, double empty, bool pattern, bool repeats,
                             std::mt19937_64& rng) {
  std::vector<std::vector<int64_t>> c(static_cast<size_t>(rows));
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::uniform_int_distribution<int> deg(1, max_deg);
  std::uniform_real_distribution<double> u(0, 1);
  for (auto& r : c) {
    if (u(rng) < empty) continue;
    const int d = deg(rng);
    for (int k = 0; k < d; ++k) r.push_back(col(rng));
    if (!repeats) {
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
    }
  }
  return from_rows<I, V>(rows, cols, c, pattern, rng);
}

// Rows [r0, r1) of a global dense matrix (every rank has the whole one: the inputs are seeded alike).
template <class V>
sp::HostDense<V> rows_of(const sp::HostDense<V>& g, int64_t r0, int64_t r1) {
  sp::HostDense<V> m(r1 - r0, g.cols);
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < g.cols; ++j) m(i - r0, j) = g(i, j);
  return m;
}

// Rows [r0, r1) of a global CSR, for from_local_rows.
template <class I, class V>
sp::HostCsr<I, V> rows_of(const sp::HostCsr<I, V>& a, int64_t r0, int64_t r1) {
  sp::HostCsr<I, V> m;
  m.rows = r1 - r0;
  m.cols = a.cols;
  const I e0 = a.rowptr[static_cast<size_t>(r0)], e1 = a.rowptr[static_cast<size_t>(r1)];
  m.rowptr.clear();
  for (int64_t i = r0; i <= r1; ++i) m.rowptr.push_back(a.rowptr[static_cast<size_t>(i)] - e0);
  m.colind.assign(a.colind.begin() + e0, a.colind.begin() + e1);
  if (!a.is_pattern()) m.values.assign(a.values.begin() + e0, a.values.begin() + e1);
  return m;
}

// Both ways in: scattered from rank 0 (balanced by entries), and each rank's own rows (split at
// row_starts, or evenly where row_starts is empty).
template <class I, class V>
std::vector<std::pair<std::string, dist::DistCsr<I, V>>> both_builds(const sp::HostCsr<I, V>& a,
                                                                     std::vector<int64_t> row_starts = {}) {
  if (row_starts.empty()) {
    row_starts.resize(static_cast<size_t>(g_ranks) + 1);
    for (int r = 0; r <= g_ranks; ++r) row_starts[static_cast<size_t>(r)] = a.rows * r / g_ranks;
  }
  const int64_t r0 = row_starts[static_cast<size_t>(g_rank)], r1 = row_starts[static_cast<size_t>(g_rank) + 1];
  std::vector<std::pair<std::string, dist::DistCsr<I, V>>> builds;
  builds.emplace_back("scattered", dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, g_rank == 0 ? &a : nullptr));
  builds.emplace_back("from local rows",
                      dist::DistCsr<I, V>::from_local_rows(MPI_COMM_WORLD, rows_of(a, r0, r1), row_starts));
  return builds;
}

// ---- the single-process result, in double ------------------------------------------------------

inline const sp::Context& reference_ctx() {
  static const sp::Context ctx = sp::Context::create("reference");
  return ctx;
}

// A copy in double; absolute: of the absolute values (for the rounding bound).
template <class I, class V>
sp::HostCsr<I, double> to_f64(const sp::HostCsr<I, V>& a, bool absolute) {
  sp::HostCsr<I, double> d;
  d.rows = a.rows;
  d.cols = a.cols;
  d.rowptr = a.rowptr;
  d.colind = a.colind;
  for (const V v : a.values) d.values.push_back(absolute ? std::fabs(double(v)) : double(v));
  return d;
}
template <class V>
sp::HostDense<double> to_f64(const sp::HostDense<V>& m, bool absolute) {
  sp::HostDense<double> d(m.rows, m.cols);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) d(i, j) = absolute ? std::fabs(double(m(i, j))) : double(m(i, j));
  return d;
}

template <class V>
constexpr double kRelTol = std::is_same_v<V, float> ? 2e-5 : 1e-12;

// ---- MPI and contexts --------------------------------------------------------------------------

inline bool all_ranks(bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

inline int64_t sum_over_ranks(int64_t v) {
  int64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

// Backends compiled in and usable here: the host ones, and cuda where a GPU is (every rank on the
// same node sees the same plugins, so the list is the same on every rank). Device contexts take
// their operands through InContext, and pick "cuda:(rank mod GPUs)" as `run --dist` does.
inline std::vector<std::string> test_backends() {
  std::vector<std::string> out;
  for (const sp::PluginInfo& p : sp::plugins())
    if (p.status == sp::PluginStatus::available) out.push_back(p.name);
  return out;
}

inline sp::Context make_context(const std::string& backend) {
  sp::Context ctx = sp::Context::create(backend);
  if (!ctx.device_memory()) return ctx;
  return sp::Context::create(backend + ":" + std::to_string(g_rank % std::max(ctx.plugin().device_count(), 1)));
}

// Host operands in a context's memory: the arrays themselves for a host context; for a device
// context, copies (inputs, and outputs with their starting values), the outputs copied back by
// done(). Keeps the device buffers until it goes.
class InContext {
 public:
  explicit InContext(const sp::Context& ctx) : ctx_(ctx) {}
  template <class V>
  sp::DenseView in(const sp::HostDense<V>& h) {
    if (!ctx_.device_memory()) return h.view();
    return sp::make_dense<V>(h.rows, h.cols, h.ld, static_cast<const V*>(copy(h.data.data(), h.data.size() * sizeof(V))));
  }
  template <class V>
  sp::DenseMutView out(sp::HostDense<V>& h) {
    if (!ctx_.device_memory()) return h.mut();
    V* dev = static_cast<V*>(copy(h.data.data(), h.data.size() * sizeof(V)));
    back_.push_back({h.data.data(), dev, h.data.size() * sizeof(V)});
    return sp::make_dense<V>(h.rows, h.cols, h.ld, dev);
  }
  void done() {
    for (const Back& b : back_)
      if (b.bytes > 0) ctx_.copy_to_host(b.host, b.dev, b.bytes);
    back_.clear();
  }

 private:
  void* copy(const void* host, size_t bytes) {
    held_.push_back(ctx_.allocate(std::max<size_t>(bytes, 1)));
    if (bytes > 0) ctx_.copy_to_backend(held_.back().data(), host, bytes);
    return held_.back().data();
  }
  struct Back {
    void* host;
    const void* dev;
    size_t bytes;
  };
  sp::Context ctx_;
  std::vector<sp::Buffer> held_;
  std::vector<Back> back_;
};

// ---- checks ------------------------------------------------------------------------------------

// Runs fn, which must throw E (exactly that kind, or a subclass) whose message names the op
// ("sparseport::dist::op"; just "sparseport::dist" for an empty op) and the argument. Returns the
// message of the E it threw; nothing (and a failure) when it threw nothing or another kind.
template <class E, class Fn>
std::optional<std::string> refusal_message(Fn&& fn, const std::string& op, const std::string& arg) {
  try {
    fn();
    ADD_FAILURE() << op << ": no exception for a bad " << arg;
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(op.empty() ? std::string("sparseport::dist") : "sparseport::dist::" + op), std::string::npos)
        << msg;
    EXPECT_NE(msg.find(arg), std::string::npos) << msg;
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << op << ": a bad " << arg << " threw the wrong kind of error: " << e.what();
  }
  return std::nullopt;
}

// GoogleTest names for typed tests over std::pair<index type, value type>: "int32_float".
class TypeNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::string(sp::name(sp::index_type_of<typename T::first_type>())) + "_" +
           sp::name(sp::value_type_of<typename T::second_type>());
  }
};

// ---- main --------------------------------------------------------------------------------------

// Prints only failures, with the rank: ranks other than 0 use it instead of the default printer.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", g_rank, r.file_name() ? r.file_name() : "?", r.line_number(),
                 r.summary());
  }
};

// The whole of main: MPI up, one seed for every rank, every test on every rank, MPI down. Returns
// non-zero when any rank failed.
inline int run_all_tests(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
  ::testing::InitGoogleTest(&argc, argv);
  // One seed for every rank: SPARSEPORT_TEST_SEED when set, else a fresh one from rank 0.
  if (g_rank == 0) {
    const char* env = std::getenv("SPARSEPORT_TEST_SEED");
    g_seed = env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("[ seed     ] SPARSEPORT_TEST_SEED=%llu (set it to replay these inputs); %d ranks\n",
                static_cast<unsigned long long>(g_seed), g_ranks);
  }
  MPI_Bcast(&g_seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (g_rank != 0) {
    ::testing::TestEventListeners& l = ::testing::UnitTest::GetInstance()->listeners();
    delete l.Release(l.default_result_printer());
    l.Append(new RankFailurePrinter);
  }
  const int mine = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (g_rank == 0 && any != 0 && mine == 0) std::printf("FAILED on another rank (see its [rank N] lines)\n");
  MPI_Finalize();
  return any;
}

}  // namespace sparseport_dist_test
