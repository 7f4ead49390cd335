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

}  // namespace
