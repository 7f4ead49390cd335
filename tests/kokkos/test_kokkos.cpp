// SPDX-License-Identifier: Apache-2.0
// SparsePort initialises Kokkos: nothing before the first kokkos context, running after it, and
// finalised at exit (the process must exit cleanly, which CTest checks). The memory space the
// plugin reports is the one of Kokkos's default execution space.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/conformance.hpp"
#include "common/op_families.hpp"
#include "common/scoped.hpp"
#include "plugins/kokkos/diagnostics.h"
#include "sparseport/sparseport.hpp"

namespace {

TEST(KokkosInit, FirstContextInitialisesKokkos) {
  // gtest_discover_tests lists the tests without running them, so no static initialiser may start
  // Kokkos; before this test nothing has.
  EXPECT_FALSE(Kokkos::is_initialized());
  auto ctx = sparseport::Context::create("kokkos");
  EXPECT_TRUE(Kokkos::is_initialized());
  auto again = sparseport::Context::create("kokkos");  // a second context does not initialise twice
  EXPECT_TRUE(Kokkos::is_initialized());
}

TEST(KokkosInit, MemorySpaceFollowsTheDefaultExecutionSpace) {
  auto ctx = sparseport::Context::create("kokkos");
  const bool host_reads_it =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  EXPECT_EQ(ctx.device_memory(), !host_reads_it) << Kokkos::DefaultExecutionSpace::name();
  std::vector<char> line(1024);
  sparseport_status st{};
  ASSERT_EQ(ctx.plugin().table->describe_devices(line.data(), line.size(), &st), SPARSEPORT_OK) << st.message;
  EXPECT_NE(std::string(line.data()).find("by SparsePort"), std::string::npos) << line.data();
}

TEST(KokkosInit, VendorBaselineIsMarkedAndRefusesMax) {
  auto ctx = sparseport::Context::create("kokkos");
  EXPECT_EQ(ctx.plugin().vendor_variant(SPARSEPORT_OP_SPMM), "spmm.kokkoskernels");
  if (ctx.device_memory()) GTEST_SKIP() << "device-memory Kokkos: the host arrays below cannot be used";
  const std::vector<int32_t> rowptr{0, 1}, colind{0};
  const std::vector<float> values{2}, b{3};
  std::vector<float> c{0};
  sparseport::SpmmOptions opt;
  opt.variant = "spmm.kokkoskernels";
  opt.reduce = sparseport::Reduce::max;
  try {
    sparseport::spmm(ctx, sparseport::make_csr(1, 1, 1, rowptr.data(), colind.data(), values.data()),
                     sparseport::make_dense<float>(1, 1, 1, b.data()), sparseport::make_dense<float>(1, 1, 1, c.data()),
                     opt);
    ADD_FAILURE() << "spmm.kokkoskernels accepted reduce max";
  } catch (const sparseport::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max"), std::string::npos) << e.what();
  }
}

// Kokkos Kernels' single-vector spmv reads x and y as contiguous arrays on Serial, so a strided
// column (spmv with make_vector's stride) is refused, naming the strides; contiguous ones run.
TEST(KokkosInit, VendorBaselineRefusesAStridedSingleColumn) {
  auto ctx = sparseport::Context::create("kokkos");
  if (ctx.device_memory()) GTEST_SKIP() << "device-memory Kokkos: the host arrays below cannot be used";
  const std::vector<int32_t> rowptr{0, 1, 2}, colind{1, 0};
  const std::vector<float> values{2, 3}, x{5, -1, 7, -1};
  std::vector<float> y{0, -1, 0, -1};
  sparseport::SpmvOptions opt;
  opt.variant = "spmm.kokkoskernels";
  const auto a = sparseport::make_csr(2, 2, 2, rowptr.data(), colind.data(), values.data());
  try {
    sparseport::spmv(ctx, a, sparseport::make_vector<float>(2, x.data(), 2),
                     sparseport::make_vector<float>(2, y.data(), 2), opt);
    ADD_FAILURE() << "spmm.kokkoskernels accepted strided vectors";
  } catch (const sparseport::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("B.ld = 2"), std::string::npos) << e.what();
  }
  sparseport::spmv(ctx, a, sparseport::make_vector<float>(2, x.data()), sparseport::make_vector<float>(2, y.data()),
                   opt);
  EXPECT_EQ(y[0], 2 * x[1]);
  EXPECT_EQ(y[1], 3 * x[0]);
}

// spmm.team_rows on a host space walks C in blocks of 64 columns (kernels/kokkos/spmm.cpp); the
// conformance suite's widths stop at 33, so the block edges (64, 65, 130) are checked here against
// the reference plugin, every reduce, with beta != 0 and ld > F.
TEST(KokkosSpmm, TeamRowsColumnBlocksMatchTheReference) {
  auto ctx = sparseport::Context::create("kokkos");
  if (ctx.device_memory()) GTEST_SKIP() << "device-memory Kokkos: the host arrays below cannot be used";
  auto ref = sparseport::Context::create("reference");
  // 7 rows: a long row, an empty row, repeated columns, single entries.
  const std::vector<int32_t> rowptr{0, 9, 9, 12, 13, 17, 18, 20};
  const std::vector<int32_t> colind{0, 1, 2, 3, 4, 5, 6, 7, 8, 2, 2, 5, 0, 8, 7, 6, 5, 3, 1, 4};
  std::vector<double> values(colind.size());
  for (size_t e = 0; e < values.size(); ++e) values[e] = 0.25 * static_cast<double>(e % 7) - 0.6;
  const auto a = sparseport::make_csr(7, 9, static_cast<int64_t>(colind.size()), rowptr.data(), colind.data(),
                                      values.data());
  for (const int64_t f : {64, 65, 130}) {
    const int64_t ld = f + 3;
    std::vector<double> b(static_cast<size_t>(9 * ld)), c0(static_cast<size_t>(7 * ld));
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<double>((k * 37) % 23) / 7.0 - 1.5;
    for (size_t k = 0; k < c0.size(); ++k) c0[k] = static_cast<double>((k * 11) % 13) / 5.0 - 1.0;
    for (const auto r : {sparseport::Reduce::sum, sparseport::Reduce::mean, sparseport::Reduce::max,
                         sparseport::Reduce::min}) {
      SCOPED_TRACE(std::string("F ") + std::to_string(f) + ", " + sparseport::name(r));
      std::vector<double> got = c0, want = c0;
      sparseport::SpmmOptions opt{r, 1.5, -0.5, "spmm.team_rows"};
      sparseport::spmm(ctx, a, sparseport::make_dense<double>(9, f, ld, b.data()),
                       sparseport::make_dense<double>(7, f, ld, got.data()), opt);
      opt.variant = "";
      sparseport::spmm(ref, a, sparseport::make_dense<double>(9, f, ld, b.data()),
                       sparseport::make_dense<double>(7, f, ld, want.data()), opt);
      for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-12) << "element " << k;
    }
  }
}

// ---- spmm.hub_split (and team_rows) on staged inputs, so these run on device-memory Kokkos too --

namespace sp = sparseport;
namespace spt = sparseport::testing;

// A matrix of the given row degrees over `cols` columns: columns wrap around (a row longer than
// cols repeats columns), values uniform in [lo, hi]; pattern: no values.
template <class I, class V>
sp::HostCsr<I, V> rows_of(const std::vector<int64_t>& degrees, int64_t cols, std::mt19937_64& rng, double lo = -1.0,
                          double hi = 1.0, bool pattern = false) {
  sp::HostCsr<I, V> a;
  a.rows = static_cast<int64_t>(degrees.size());
  a.cols = cols;
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::uniform_real_distribution<double> val(lo, hi);
  for (const int64_t d : degrees) {
    const int64_t first = col(rng);
    for (int64_t e = 0; e < d; ++e) {
      a.colind.push_back(static_cast<I>((first + e) % cols));
      if (!pattern) a.values.push_back(static_cast<V>(val(rng)));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  return a;
}

struct Scaling {
  double alpha, beta;
};

// One spmm of `variant` on the kokkos plugin against the reference in double, as the conformance
// suite compares (tolerance from the sum of |terms|, NaN where the oracle has NaN, padding kept).
// beta == 0 starts from a C full of NaN. nan_b: elements of B set to NaN.
template <class I, class V>
void expect_spmm_matches(const std::string& variant, const sp::HostCsr<I, V>& a, int64_t f, sp::Reduce r, Scaling s,
                         std::mt19937_64& rng, double b_lo = -1.0, double b_hi = 1.0,
                         const std::vector<std::pair<int64_t, int64_t>>& nan_b = {}, int64_t pad_b = 3,
                         int64_t pad_c = 1) {
  auto ctx = sp::Context::create("kokkos");
  const int64_t ld_b = f + pad_b, ld_c = f + pad_c;
  sp::HostDense<V> b = spt::random_dense<V>(a.cols, f, ld_b, rng, b_lo, b_hi);
  for (const auto& [i, j] : nan_b) b(i, j) = std::numeric_limits<V>::quiet_NaN();
  const sp::HostDense<V> c0 =
      s.beta == 0.0 ? spt::nan_dense<V>(a.rows, f, ld_c) : spt::random_dense<V>(a.rows, f, ld_c, rng);
  const std::string oracle_v = spt::oracle_variant(SPARSEPORT_OP_SPMM);
  sp::HostDense<double> want = spt::to_double(c0);
  sp::spmm(spt::oracle(), spt::to_double(a).view(), spt::to_double(b).view(), want.mut(),
           {r, s.alpha, s.beta, oracle_v});
  const sp::Reduce bound_r = (r == sp::Reduce::max || r == sp::Reduce::min) ? sp::Reduce::max : r;
  sp::HostDense<double> bound = spt::to_double(c0, true);
  sp::spmm(spt::oracle(), spt::to_double(a, true).view(), spt::to_double(b, true).view(), bound.mut(),
           {bound_r, std::fabs(s.alpha), std::fabs(s.beta), oracle_v});
  spt::Stage st(ctx);
  const sp::DenseMutView c = st.dense_mut(c0);
  sp::spmm(ctx, st.csr(a), st.dense(b), c, {r, s.alpha, s.beta, variant});
  ctx.synchronize();
  const sp::HostDense<V> got = st.fetch<V>(c);
  const auto terms = [&](int64_t i) {
    const auto row = static_cast<size_t>(i);
    return static_cast<int64_t>(a.rowptr[row + 1] - a.rowptr[row]) + 2;
  };
  spt::expect_close(got, want, bound, terms, variant + " C");
  spt::expect_padding_kept(got, variant + " C");
}

constexpr sp::Reduce kAllReduces[] = {sp::Reduce::sum, sp::Reduce::mean, sp::Reduce::max, sp::Reduce::min};
// beta 0 (C full of NaN, never read), beta != 0, and a negative alpha.
constexpr Scaling kHubScalings[] = {{1.0, 0.0}, {1.5, -0.5}, {-2.0, 0.0}, {0.5, 1.0}};

// With SPARSEPORT_HUB_T = T: a mega-row of 40 T + 3 entries (41 chunks), rows of exactly T (one
// chunk, written directly) and T + 1 (two chunks, the second of one entry), 2 T and 3 T + 1, empty
// rows first, in the middle and last, and single entries; F = 1, 33 (a second lane column on a
// device), 257 (a second block of lane columns with one lane busy), 300; every reduce and scaling.
template <class I, class V>
void check_chunk_edges(int64_t t, std::mt19937_64& rng) {
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", std::to_string(t).c_str());
  const std::vector<int64_t> degrees{0, 40 * t + 3, t, t + 1, 0, 2 * t, 1, 3 * t + 1, t - 1, 0};
  const sp::HostCsr<I, V> a = rows_of<I, V>(degrees, 97, rng);
  int run = 0;
  for (const int64_t f : {1, 33, 257, 300}) {
    for (const sp::Reduce r : kAllReduces) {
      const Scaling s = kHubScalings[run++ % std::size(kHubScalings)];
      SCOPED_TRACE("T " + std::to_string(t) + ", F " + std::to_string(f) + ", " + sp::name(r) + ", alpha " +
                   std::to_string(s.alpha) + ", beta " + std::to_string(s.beta));
      expect_spmm_matches<I, V>("spmm.hub_split", a, f, r, s, rng);
    }
  }
}

TEST(KokkosSpmm, HubSplitChunkEdgesMatchTheReference) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/hub_split/edges");
  std::mt19937_64 rng(seed);
  for (const int64_t t : {1, 8, 37}) {
    check_chunk_edges<int32_t, float>(t, rng);
    check_chunk_edges<int64_t, double>(t, rng);
  }
  check_chunk_edges<int64_t, float>(8, rng);
  check_chunk_edges<int32_t, double>(8, rng);
}

// hub_split puts its scratch rows back to the reduce's identity at the end of a call (Workspace in
// kernels/kokkos/spmm.cpp), and the next call of the same reduce kind (sum and mean alike) and value
// size over no more cells skips the init pass. The same matrix (hubs at T = 8) through calls that
// skip it (the same call again, mean after sum, F shrinking) and calls that must not (F growing,
// max after sum, min after max, double after float), each against the reference.
TEST(KokkosSpmm, HubSplitScratchCarriedOverBetweenCallsMatchesTheReference) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/hub_split/scratch");
  std::mt19937_64 rng(seed);
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "8");
  const std::vector<int64_t> degrees{0, 323, 8, 9, 0, 40, 1, 25, 7, 0, 3, 17};
  const auto a32 = rows_of<int32_t, float>(degrees, 97, rng);
  const auto a64 = rows_of<int64_t, double>(degrees, 97, rng);
  struct Step {
    int64_t f;
    sp::Reduce r;
    bool dbl;
  };
  const Step steps[] = {{32, sp::Reduce::sum, false}, {32, sp::Reduce::sum, false}, {32, sp::Reduce::mean, false},
                        {8, sp::Reduce::sum, false},  {64, sp::Reduce::sum, false}, {64, sp::Reduce::max, false},
                        {64, sp::Reduce::max, false}, {16, sp::Reduce::min, false}, {64, sp::Reduce::sum, true},
                        {64, sp::Reduce::sum, false}, {64, sp::Reduce::mean, false}, {3, sp::Reduce::sum, false}};
  int run = 0;
  for (const Step& st : steps) {
    const Scaling s = kHubScalings[run++ % std::size(kHubScalings)];
    SCOPED_TRACE("call " + std::to_string(run) + ": F " + std::to_string(st.f) + ", " + sp::name(st.r) +
                 (st.dbl ? ", double" : ", float"));
    if (st.dbl)
      expect_spmm_matches<int64_t, double>("spmm.hub_split", a64, st.f, st.r, s, rng);
    else
      expect_spmm_matches<int32_t, float>("spmm.hub_split", a32, st.f, st.r, s, rng);
  }
}

// The T that hub_split picks itself (from nnz and the space's concurrency; at least 32): a mega-row
// of 3000 entries among short rows splits on every space (Serial, 2 OpenMP threads, an H200).
TEST(KokkosSpmm, HubSplitDefaultChunksMatchTheReference) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/hub_split/default");
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", nullptr);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> degrees(300);
  for (size_t i = 0; i < degrees.size(); ++i) degrees[i] = static_cast<int64_t>((i * 7) % 5);
  degrees[13] = 3000;
  degrees[200] = 700;
  const auto a32 = rows_of<int32_t, float>(degrees, 2000, rng);
  const auto a64 = rows_of<int64_t, double>(degrees, 2000, rng);
  const auto pattern = rows_of<int32_t, float>(degrees, 2000, rng, -1.0, 1.0, true);
  int run = 0;
  for (const int64_t f : {1, 33, 300}) {
    for (const sp::Reduce r : kAllReduces) {
      const Scaling s = kHubScalings[run++ % std::size(kHubScalings)];
      SCOPED_TRACE("F " + std::to_string(f) + ", " + sp::name(r) + ", alpha " + std::to_string(s.alpha) + ", beta " +
                   std::to_string(s.beta));
      expect_spmm_matches<int32_t, float>("spmm.hub_split", a32, f, r, s, rng);
      expect_spmm_matches<int64_t, double>("spmm.hub_split", a64, f, r, s, rng);
      expect_spmm_matches<int32_t, float>("spmm.hub_split", pattern, f, r, s, rng);
    }
  }
}

// Max and min of products of one sign (0 or the other infinity must not leak from the scratch
// row's start), and NaN in B: a NaN in a hub's first chunk must survive larger values in later
// chunks (Kokkos 3.4's atomic max would drop it), one in its last chunk must win over earlier
// ones, and a NaN in a whole row propagates as well. Every reduce: sums and means give NaN too.
template <class I, class V>
void check_signs_and_nan(std::mt19937_64& rng) {
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "16");
  // Row 0: columns 0..499 (32 chunks); row 1: columns 50..52; row 2: 40 entries from column 480
  // (wrapping to 0..19; 3 chunks); row 3: empty.
  sp::HostCsr<I, V> a;
  a.rows = 4, a.cols = 500;
  auto add_row = [&](int64_t first, int64_t n) {
    for (int64_t e = 0; e < n; ++e) {
      a.colind.push_back(static_cast<I>((first + e) % a.cols));
      a.values.push_back(static_cast<V>(0.5 + 0.001 * static_cast<double>(e % 1000)));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  };
  add_row(0, 500);
  add_row(50, 3);
  add_row(480, 40);
  add_row(0, 0);
  // B(3, 0) and B(3, 5): row 0's first chunk and row 2's second; B(498, 7): row 0's last chunk
  // and row 2's first; B(51, 2): row 1 (whole).
  const std::vector<std::pair<int64_t, int64_t>> nans{{3, 0}, {3, 5}, {498, 7}, {51, 2}};
  for (const int64_t f : {1, 33}) {
    for (const sp::Reduce r : kAllReduces) {
      for (const bool negative : {true, false}) {
        const Scaling s = negative ? Scaling{1.0, 0.0} : Scaling{-1.0, 0.5};
        SCOPED_TRACE("F " + std::to_string(f) + ", " + sp::name(r) + (negative ? ", B < 0" : ", B > 0"));
        std::vector<std::pair<int64_t, int64_t>> here;
        for (const auto& [i, j] : nans)
          if (j < f) here.push_back({i, j});
        expect_spmm_matches<I, V>("spmm.hub_split", a, f, r, s, rng, negative ? -3.0 : 1.0, negative ? -1.0 : 3.0,
                                  here);
        expect_spmm_matches<I, V>("spmm.team_rows", a, f, r, s, rng, negative ? -3.0 : 1.0, negative ? -1.0 : 3.0,
                                  here);
      }
    }
  }
}

TEST(KokkosSpmm, HubSplitMaxMinKeepSignsAndNaN) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/hub_split/nan");
  std::mt19937_64 rng(seed);
  check_signs_and_nan<int32_t, float>(rng);
  check_signs_and_nan<int64_t, double>(rng);
}

// team_rows on the same edges: on a device space each lane holds up to 8 columns (F = 257 and 300
// take a second walk of the row, with one lane busy at 257); every reduce, both type pairs.
TEST(KokkosSpmm, TeamRowsLaneColumnsMatchTheReference) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/team_rows/lanes");
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> degrees{0, 323, 8, 9, 0, 16, 1, 25, 7, 0};
  const auto a32 = rows_of<int32_t, float>(degrees, 97, rng);
  const auto a64 = rows_of<int64_t, double>(degrees, 97, rng);
  int run = 0;
  for (const int64_t f : {1, 33, 257, 300}) {
    for (const sp::Reduce r : kAllReduces) {
      const Scaling s = kHubScalings[run++ % std::size(kHubScalings)];
      SCOPED_TRACE("F " + std::to_string(f) + ", " + sp::name(r));
      expect_spmm_matches<int32_t, float>("spmm.team_rows", a32, f, r, s, rng);
      expect_spmm_matches<int64_t, double>("spmm.team_rows", a64, f, r, s, rng);
    }
  }
}

// 16-byte loads on a device space (wide_columns in kernels/kokkos/spmm.cpp: 4 float or 2 double
// columns a lane) where F and both lds are multiples of the width: F from one lane's load (4) to two
// loads a lane (256), 12 and 33 (lanes with fewer slots than others), lds equal to F, padded by a
// multiple of the width, and padded by 3 (the scalar kernel); team_rows and hub_split with hubs split into chunks (T = 8), every reduce, both type pairs;
// and again with SPARSEPORT_KOKKOS_WIDE=0 (the scalar kernels on the same aligned inputs). On a host
// space the same inputs run the host kernels.
void check_wide_columns() {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/spmm/wide");
  std::mt19937_64 rng(seed);
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "8");
  const std::vector<int64_t> degrees{0, 323, 8, 9, 0, 16, 1, 25, 7, 0, 3};
  const auto a32 = rows_of<int32_t, float>(degrees, 97, rng);
  const auto a64 = rows_of<int64_t, double>(degrees, 97, rng);
  int run = 0;
  for (const int64_t f : {4, 8, 12, 32, 33, 64, 128, 256, 260})
    for (const int64_t pad : {0, 4, 3})
      for (const sp::Reduce r : kAllReduces)
        for (const char* v : {"spmm.team_rows", "spmm.hub_split"}) {
          const Scaling s = kHubScalings[run++ % std::size(kHubScalings)];
          SCOPED_TRACE(std::string(v) + ", F " + std::to_string(f) + ", lds F + " + std::to_string(pad) + ", " +
                       sp::name(r));
          expect_spmm_matches<int32_t, float>(v, a32, f, r, s, rng, -1.0, 1.0, {}, pad, pad);
          expect_spmm_matches<int64_t, double>(v, a64, f, r, s, rng, -1.0, 1.0, {}, pad, pad);
        }
}

// And on a device space hub_split's lane groups (hub_split_groups_device: groups of up to 8 lanes,
// each lane 1-8 column groups, F = 12 and 33 leaving some lanes a slot short) against the first,
// narrow rule (SPARSEPORT_KOKKOS_GROUPS=narrow) and the one-thread-an-item kernel (=0).
TEST(KokkosSpmm, WideColumnLoadsMatchTheReference) {
  for (const char* wide : {"1", "0"})
    for (const char* groups : {static_cast<const char*>(nullptr), "narrow", "0"}) {
      SCOPED_TRACE(std::string("SPARSEPORT_KOKKOS_WIDE=") + wide + ", SPARSEPORT_KOKKOS_GROUPS=" +
                   (groups != nullptr ? groups : "(unset)"));
      const sparseport_test::ScopedEnv knob("SPARSEPORT_KOKKOS_WIDE", wide);
      const sparseport_test::ScopedEnv lanes("SPARSEPORT_KOKKOS_GROUPS", groups);
      check_wide_columns();
    }
}

// hub_split sums in a run-dependent order (atomics): it must not claim determinism; team_rows does.
TEST(KokkosSpmm, HubSplitIsListedAndNotDeterministic) {
  auto ctx = sp::Context::create("kokkos");
  const sparseport_plugin* table = ctx.plugin().table;
  bool hub = false, rows = false;
  for (int32_t v = 0; v < table->n_variants; ++v) {
    const sparseport_variant& var = table->variants[v];
    if (std::string(var.name) == "spmm.hub_split") {
      hub = true;
      EXPECT_EQ(var.flags & SPARSEPORT_VARIANT_DETERMINISTIC, 0u);
      EXPECT_EQ(var.op, SPARSEPORT_OP_SPMM);
    }
    if (std::string(var.name) == "spmm.team_rows") {
      rows = true;
      EXPECT_NE(var.flags & SPARSEPORT_VARIANT_DETERMINISTIC, 0u);
    }
  }
  EXPECT_TRUE(hub);
  EXPECT_TRUE(rows);
}

TEST(KokkosSpmm, HubSplitRefusesAMalformedThreshold) {
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "0");
  std::mt19937_64 rng(1);
  const auto a = rows_of<int32_t, float>({3, 1}, 4, rng);
  auto ctx = sp::Context::create("kokkos");
  spt::Stage st(ctx);
  const sp::HostDense<float> b = spt::random_dense<float>(4, 2, 2, rng), c0 = spt::random_dense<float>(2, 2, 2, rng);
  try {
    sp::spmm(ctx, st.csr(a), st.dense(b), st.dense_mut(c0), {sp::Reduce::sum, 1.0, 0.0, "spmm.hub_split"});
    ADD_FAILURE() << "SPARSEPORT_HUB_T=0 was accepted";
  } catch (const sp::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("SPARSEPORT_HUB_T='0'"), std::string::npos) << e.what();
  }
}

// The atomic message reductions (segment_reduce.atomic, scatter_reduce.atomic,
// gather_scatter.atomic) combine max and min through atomic_combine: a NaN that arrives first stays
// when larger (smaller) values follow, and a NaN that arrives last wins. Kokkos 3.4's
// atomic_fetch_max replaced a stored NaN by the next value; this failed then.
TEST(KokkosAtomics, MaxMinKeepANaNWhateverComesAfter) {
  auto ctx = sp::Context::create("kokkos");
  spt::Stage st(ctx);
  // 64 messages to row 0: NaN first in column 0, NaN last in column 1, none in column 2; then row
  // 1 with one message, and row 2 with none (0 in the result).
  const int64_t e = 65, f = 3;
  std::vector<int32_t> index(static_cast<size_t>(e), 0);
  index.back() = 1;
  sp::HostDense<float> src(e, f);
  for (int64_t i = 0; i < e; ++i)
    for (int64_t j = 0; j < f; ++j) src(i, j) = static_cast<float>(i % 7) - 3.0f;
  src(0, 0) = std::numeric_limits<float>::quiet_NaN();
  src(63, 1) = std::numeric_limits<float>::quiet_NaN();
  for (const sp::Reduce r : {sp::Reduce::max, sp::Reduce::min}) {
    for (const char* v : {"segment_reduce.atomic", "scatter_reduce.atomic"}) {
      SCOPED_TRACE(std::string(v) + (r == sp::Reduce::max ? " max" : " min"));
      const sp::HostDense<float> out0(3, f);
      const sp::DenseMutView out = st.dense_mut(out0);
      const sp::IndexView idx = st.index(index);
      if (std::string(v).rfind("segment", 0) == 0)
        sp::segment_reduce(ctx, idx, st.dense(src), out, {r, v});
      else
        sp::scatter_reduce(ctx, idx, st.dense(src), out, {r, v});
      ctx.synchronize();
      const sp::HostDense<float> got = st.fetch<float>(out);
      EXPECT_TRUE(std::isnan(got(0, 0)));
      EXPECT_TRUE(std::isnan(got(0, 1)));
      EXPECT_EQ(got(0, 2), r == sp::Reduce::max ? 3.0f : -3.0f);
      EXPECT_EQ(got(1, 0), src(64, 0));
      EXPECT_EQ(got(2, 0), 0.0f);
    }
  }
}

// ---- plans: what depends only on A (hub_split's hub list, team_rows' row blocks on a host space) --

sparseport_kokkos_diagnostics plan_counts() {
  sparseport_kokkos_diagnostics d{};
  EXPECT_EQ(sparseport_kokkos_get_diagnostics(&d), 0);
  return d;
}

// C (staged in st) against the reference's sum A * B in double, as expect_spmm_matches compares.
void expect_sum_matches(const sp::Context& ctx, spt::Stage& st, const sp::DenseMutView& c, const sp::HostCsr<int32_t, float>& a,
                        const sp::HostDense<float>& b, const std::string& what) {
  const std::string oracle_v = spt::oracle_variant(SPARSEPORT_OP_SPMM);
  sp::HostDense<double> want(a.rows, b.cols, b.cols), bound(a.rows, b.cols, b.cols);
  sp::spmm(spt::oracle(), spt::to_double(a).view(), spt::to_double(b).view(), want.mut(),
           {sp::Reduce::sum, 1.0, 0.0, oracle_v});
  sp::spmm(spt::oracle(), spt::to_double(a, true).view(), spt::to_double(b, true).view(), bound.mut(),
           {sp::Reduce::sum, 1.0, 0.0, oracle_v});
  ctx.synchronize();
  const auto terms = [&](int64_t i) {
    const auto row = static_cast<size_t>(i);
    return static_cast<int64_t>(a.rowptr[row + 1] - a.rowptr[row]) + 2;
  };
  spt::expect_close(st.fetch<float>(c), want, bound, terms, what);
}

// Two matrices of one shape (rows, columns, entries) whose hubs above T = 16 differ: a1's are rows
// 1 (200 entries), 3 (40) and 5 (17); a2's are 3 (100: more chunks than a1's plan numbered), 5,
// 6 (20) and 7 (120), none of them listed by a1's plan, and row 1 is short.
constexpr int64_t kPlanCols = 300;
const std::vector<int64_t> kPlanDegrees1{0, 200, 3, 40, 0, 17, 5, 15};
const std::vector<int64_t> kPlanDegrees2{3, 5, 15, 100, 0, 17, 20, 120};

// Built at the first call on a matrix, reused by the next (another B), dropped when A's arrays are
// written through the backend (copy_to_backend) or freed, and rebuilt at the next call.
TEST(KokkosPlans, BuiltOnceReusedAndRebuiltWhenTheMatrixChanges) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/plans/built_once");
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "16");
  std::mt19937_64 rng(seed);
  const auto a1 = rows_of<int32_t, float>(kPlanDegrees1, kPlanCols, rng);
  const auto a2 = rows_of<int32_t, float>(kPlanDegrees2, kPlanCols, rng);
  ASSERT_EQ(a1.nnz(), a2.nnz());
  auto ctx = sp::Context::create("kokkos");
  auto rp = std::make_unique<sp::Buffer>(ctx.allocate(a1.rowptr.size() * sizeof(int32_t)));
  sp::Buffer ci = ctx.allocate(a1.colind.size() * sizeof(int32_t));
  sp::Buffer va = ctx.allocate(a1.values.size() * sizeof(float));
  const auto load = [&](const sp::HostCsr<int32_t, float>& a) {
    ctx.copy_to_backend(rp->data(), a.rowptr.data(), a.rowptr.size() * sizeof(int32_t));
    ctx.copy_to_backend(ci.data(), a.colind.data(), a.colind.size() * sizeof(int32_t));
    ctx.copy_to_backend(va.data(), a.values.data(), a.values.size() * sizeof(float));
  };
  load(a1);
  const sp::CsrView av = sp::make_csr<int32_t, float>(a1.rows, a1.cols, a1.nnz(), static_cast<const int32_t*>(rp->data()),
                                                      static_cast<const int32_t*>(ci.data()),
                                                      static_cast<const float*>(va.data()));
  spt::Stage st(ctx);
  const int64_t f = 33;
  const sp::HostDense<float> b1 = spt::random_dense<float>(a1.cols, f, f, rng);
  const sp::HostDense<float> b2 = spt::random_dense<float>(a1.cols, f, f, rng);
  const sp::DenseView db1 = st.dense(b1), db2 = st.dense(b2);
  const sp::DenseMutView c = st.dense_mut(spt::nan_dense<float>(a1.rows, f, f));
  const char* variants[] = {"spmm.hub_split", "spmm.team_rows"};
  // team_rows keeps a plan on host spaces only (device spaces use a fixed TeamPolicy).
  const uint64_t planned = ctx.device_memory() ? 1 : 2;

  // Every variant with B1 then B2 against A's contents `a` (named `tag`): a plan's build, then its use.
  const auto run_variants = [&](const auto& a, const std::string& tag) {
    for (const char* v : variants) {
      sp::spmm(ctx, av, db1, c, {sp::Reduce::sum, 1.0, 0.0, v});
      expect_sum_matches(ctx, st, c, a, b1, std::string(v) + ", " + tag + ", b1");
      sp::spmm(ctx, av, db2, c, {sp::Reduce::sum, 1.0, 0.0, v});
      expect_sum_matches(ctx, st, c, a, b2, std::string(v) + ", " + tag + ", b2");
    }
  };
  const sparseport_kokkos_diagnostics d0 = plan_counts();
  run_variants(a1, "a1");
  const sparseport_kokkos_diagnostics d1 = plan_counts();
  EXPECT_EQ(d1.plan_misses - d0.plan_misses, planned);
  EXPECT_EQ(d1.plan_hits - d0.plan_hits, planned);

  // New contents through the backend: both plans watch rowptr and go.
  load(a2);
  const sparseport_kokkos_diagnostics d2 = plan_counts();
  EXPECT_EQ(d2.plan_invalidated - d1.plan_invalidated, planned);
  run_variants(a2, "a2");
  const sparseport_kokkos_diagnostics d3 = plan_counts();
  EXPECT_EQ(d3.plan_misses - d2.plan_misses, planned);
  EXPECT_EQ(d3.plan_hits - d2.plan_hits, planned);

  // Freeing rowptr drops them too.
  rp.reset();
  EXPECT_EQ(plan_counts().plan_invalidated - d3.plan_invalidated, planned);
}

// Host memory can be rewritten without the backend seeing it: the plan is then stale (same
// address, same shape) and is used, and the results must still be right (kernels/kokkos/spmm.cpp).
TEST(KokkosPlans, AStalePlanCostsBalanceNotCorrectness) {
  SPARSEPORT_CONFORMANCE_SEED("kokkos/plans/stale");
  auto ctx = sp::Context::create("kokkos");
  if (ctx.device_memory()) GTEST_SKIP() << "device memory is written through the backend only";
  const sparseport_test::ScopedEnv env("SPARSEPORT_HUB_T", "16");
  std::mt19937_64 rng(seed);
  const auto a1 = rows_of<int32_t, float>(kPlanDegrees1, kPlanCols, rng);
  const auto a2 = rows_of<int32_t, float>(kPlanDegrees2, kPlanCols, rng);
  sp::HostCsr<int32_t, float> mine = a1;  // the caller's arrays, rewritten in place below
  const sp::CsrView av = mine.view();
  spt::Stage st(ctx);
  for (const int64_t f : {1, 33, 64}) {
    const sp::HostDense<float> b = spt::random_dense<float>(a1.cols, f, f, rng);
    const sp::DenseMutView c = st.dense_mut(spt::nan_dense<float>(a1.rows, f, f));
    std::copy(a1.rowptr.begin(), a1.rowptr.end(), mine.rowptr.begin());
    std::copy(a1.colind.begin(), a1.colind.end(), mine.colind.begin());
    std::copy(a1.values.begin(), a1.values.end(), mine.values.begin());
    for (const char* v : {"spmm.hub_split", "spmm.team_rows"}) {
      sp::spmm(ctx, av, st.dense(b), c, {sp::Reduce::sum, 1.0, 0.0, v});
      expect_sum_matches(ctx, st, c, a1, b, std::string(v) + ", F " + std::to_string(f) + ", a1");
    }
    std::copy(a2.rowptr.begin(), a2.rowptr.end(), mine.rowptr.begin());
    std::copy(a2.colind.begin(), a2.colind.end(), mine.colind.begin());
    std::copy(a2.values.begin(), a2.values.end(), mine.values.begin());
    const sparseport_kokkos_diagnostics d0 = plan_counts();
    for (const char* v : {"spmm.hub_split", "spmm.team_rows"}) {
      sp::spmm(ctx, av, st.dense(b), c, {sp::Reduce::sum, 1.0, 0.0, v});
      expect_sum_matches(ctx, st, c, a2, b, std::string(v) + ", F " + std::to_string(f) + ", a2 under a1's plan");
    }
    const sparseport_kokkos_diagnostics d1 = plan_counts();
    EXPECT_EQ(d1.plan_misses - d0.plan_misses, 0u) << "the stale plans were not used: nothing was tested";
  }
}

// Two threads sharing one context call every op family at once, 40 rounds in lock step (README,
// "Threads and processes": one Context, many threads); every result is checked. The plugin holds
// one lock per kernel launch because Kokkos's host spaces keep one team/scan scratch pool per space
// and abort ("HostThreadTeamData::organize_pool ERROR pool already exists") when two threads
// resize it at once. That happens only while the pool still grows, in a process's first launches:
// CI caught it in ExitAfterOp.kokkos.structural's thread ending (a fresh process per ending; there
// 1 run in 160 failed without the lock, 0 in 460 with it). This test, in one process, does not
// reproduce the abort: it holds concurrent calls to their results. On Kokkos-OpenMP it caught that
// no thread but the one that initialised Kokkos 3.4 could launch at all ("parallel_scan ERROR: in
// parallel or not initialized"): such a thread now borrows that thread's instance under the lock.
TEST(KokkosThreads, TwoThreadsSharingAContextRunEveryOpFamilyAtOnce) {
  const sp::Context ctx = sp::Context::create("kokkos");
  const sparseport::test::Graph g = sparseport::test::make_graph(11);
  // A barrier before each call, so that the two threads' calls overlap.
  std::barrier step(2);
  std::string errors[2];
  const auto body = [&](int k) {
    for (int round = 0; round < 40; ++round)
      for (const char* family : sparseport::test::kOpFamilies) {
        step.arrive_and_wait();
        try {
          if (errors[k].empty()) sparseport::test::run_family(ctx, family, g);
        } catch (const std::exception& e) {
          errors[k] = std::string(family) + ": " + e.what();
        }
      }
  };
  std::thread t0(body, 0), t1(body, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// ---- the convert slot (ABI 1.7): the front end's float32 path for 16-bit values -----------------

// The source values as each ABI value type stores them (16-bit ones rounded by half.hpp), and each
// stored value read back as double: the definition the slot must meet bit for bit.
std::vector<unsigned char> encode(int32_t type, const std::vector<double>& v) {
  const size_t width = type == SPARSEPORT_F64 ? 8 : type == SPARSEPORT_F32 ? 4 : 2;
  std::vector<unsigned char> out(v.size() * width);
  for (size_t k = 0; k < v.size(); ++k) {
    const float f = static_cast<float>(v[k]);
    const uint16_t h = type == SPARSEPORT_F16 ? sparseport::half(f).bits : sparseport::bfloat16(f).bits;
    const void* from = type == SPARSEPORT_F64 ? static_cast<const void*>(&v[k])
                       : type == SPARSEPORT_F32 ? static_cast<const void*>(&f)
                                                : static_cast<const void*>(&h);
    std::memcpy(out.data() + k * width, from, width);
  }
  return out;
}

double decode(int32_t type, const unsigned char* p) {
  if (type == SPARSEPORT_F64) return *reinterpret_cast<const double*>(p);
  if (type == SPARSEPORT_F32) return *reinterpret_cast<const float*>(p);
  uint16_t h;
  std::memcpy(&h, p, 2);
  return type == SPARSEPORT_F16 ? static_cast<float>(sparseport::half::from_bits(h))
                                : static_cast<float>(sparseport::bfloat16::from_bits(h));
}

// Every pair of value types, strided on both sides, in the space's own memory (so on Kokkos-CUDA
// this is device code; on a host space the front end never calls the slot, which is why it is
// called here directly): rounding ties to even, overflow to infinity, subnormals, signed zero, NaN;
// the padding between rows untouched.
TEST(KokkosConvert, EveryPairOfValueTypesRoundsAsHalfHpp) {
  auto ctx = sparseport::Context::create("kokkos");
  const std::vector<double> special{0.0, -0.0, 1.0, 1.0 + std::ldexp(1.0, -11), 1.0 + 3 * std::ldexp(1.0, -11),
                                    1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), 65504.0, 65520.0,
                                    -70000.0, 1e-8, -6e-8, 3e-39, 3.4e38, 1e300,
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(), 3.14159265358979, -2.5e-5, 0.1};
  const int64_t rows = 3, cols = 7, src_ld = 9, dst_ld = 8;
  std::vector<double> v(static_cast<size_t>(rows * src_ld), 0.0);
  for (size_t k = 0; k < v.size(); ++k) v[k] = special[k % special.size()];
  const int32_t types[] = {SPARSEPORT_F32, SPARSEPORT_F64, SPARSEPORT_F16, SPARSEPORT_BF16};
  const auto width = [](int32_t t) -> size_t { return t == SPARSEPORT_F64 ? 8 : t == SPARSEPORT_F32 ? 4 : 2; };
  for (const int32_t st : types)
    for (const int32_t dt : types) {
      SCOPED_TRACE("from type " + std::to_string(st) + " to type " + std::to_string(dt));
      const std::vector<unsigned char> src = encode(st, v);
      std::vector<unsigned char> dst(static_cast<size_t>(rows * dst_ld) * width(dt), 0xab);
      Kokkos::View<unsigned char*> src_dev("convert src", src.size()), dst_dev("convert dst", dst.size());
      Kokkos::deep_copy(src_dev, Kokkos::View<const unsigned char*, Kokkos::HostSpace>(src.data(), src.size()));
      Kokkos::deep_copy(dst_dev, Kokkos::View<const unsigned char*, Kokkos::HostSpace>(dst.data(), dst.size()));
      const sparseport_dense s{rows, cols, src_ld, src_dev.data(), st};
      const sparseport_dense_mut d{rows, cols, dst_ld, dst_dev.data(), dt};
      const sparseport_exec exec{};
      sparseport_status status{};
      ASSERT_EQ(ctx.plugin().table->convert(&exec, &s, &d, &status), SPARSEPORT_OK) << status.message;
      Kokkos::deep_copy(Kokkos::View<unsigned char*, Kokkos::HostSpace>(dst.data(), dst.size()), dst_dev);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < dst_ld; ++j) {
          const unsigned char* got = dst.data() + static_cast<size_t>(i * dst_ld + j) * width(dt);
          if (j >= cols) {
            for (size_t b = 0; b < width(dt); ++b) ASSERT_EQ(got[b], 0xab) << "padding of row " << i << " written";
            continue;
          }
          const double x = decode(st, src.data() + static_cast<size_t>(i * src_ld + j) * width(st));
          const std::vector<unsigned char> want = encode(dt, {x});
          const double w = decode(dt, want.data()), g = decode(dt, got);
          // A NaN's payload is the hardware's (a GPU's double -> float gives its canonical NaN).
          if (std::isnan(w)) {
            ASSERT_TRUE(std::isnan(g)) << "row " << i << " column " << j << ": NaN became " << g;
            continue;
          }
          ASSERT_EQ(std::memcmp(got, want.data(), width(dt)), 0)
              << "row " << i << " column " << j << ": " << x << " became " << g << ", want " << w;
        }
    }
}

}  // namespace
