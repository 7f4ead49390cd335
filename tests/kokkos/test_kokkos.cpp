// SPDX-License-Identifier: Apache-2.0
// SparsePort initialises Kokkos: nothing before the first kokkos context, running after it, and
// finalised at exit (the process must exit cleanly, which CTest checks). The memory space the
// plugin reports is the one of Kokkos's default execution space.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
