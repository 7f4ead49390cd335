// SPDX-License-Identifier: Apache-2.0
// A program that initialises Kokkos itself keeps working: SparsePort's kokkos contexts run on the
// program's Kokkos, never initialise it a second time, never finalise it, and the program's own
// Kokkos work and Kokkos::finalize still run after SparsePort did its work.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace {

TEST(KokkosOwnInit, ContextUsesTheProgramsKokkos) {
  ASSERT_TRUE(Kokkos::is_initialized());
  auto ctx = sparseport::Context::create("kokkos");
  std::vector<char> line(1024);
  sparseport_status st{};
  ASSERT_EQ(ctx.plugin().table->describe_devices(line.data(), line.size(), &st), SPARSEPORT_OK) << st.message;
  EXPECT_NE(std::string(line.data()).find("by the program"), std::string::npos) << line.data();
  if (ctx.device_memory()) GTEST_SKIP() << "device-memory Kokkos: the host arrays below cannot be used";

  // A = [[1 0 2], [0 3 0]], B = [[1 1], [2 2], [3 4]]  ->  C = [[7 9], [6 6]]
  const std::vector<int32_t> rowptr{0, 2, 3}, colind{0, 2, 1};
  const std::vector<double> values{1, 2, 3}, b{1, 1, 2, 2, 3, 4};
  for (const char* v : {"spmm.team_rows", "spmm.kokkoskernels"}) {
    std::vector<double> c(4, -1.0);
    sparseport::SpmmOptions opt;
    opt.variant = v;
    sparseport::spmm(ctx, sparseport::make_csr(2, 3, 3, rowptr.data(), colind.data(), values.data()),
                     sparseport::make_dense<double>(3, 2, 2, b.data()), sparseport::make_dense<double>(2, 2, 2, c.data()),
                     opt);
    EXPECT_EQ(c, (std::vector<double>{7, 9, 6, 6})) << v;
  }
  EXPECT_TRUE(Kokkos::is_initialized());
}

// The program's own kernel, in a free function: nvcc refuses KOKKOS_LAMBDA (a __host__ __device__
// lambda) inside a GoogleTest body, which is a private member function.
double program_sum(int n) {
  double sum = 0;
  Kokkos::parallel_reduce(
      "program_sum", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, n),
      KOKKOS_LAMBDA(const int i, double& s) { s += i; }, sum);
  return sum;
}

TEST(KokkosOwnInit, ProgramKokkosStillRunsAfterSparsePort) {
  { auto ctx = sparseport::Context::create("kokkos"); }  // a context created and destroyed
  ASSERT_TRUE(Kokkos::is_initialized());
  EXPECT_EQ(program_sum(100), 4950.0);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (gtest_discover_tests at build time) must not start Kokkos.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  Kokkos::initialize(argc, argv);
  const int rc = RUN_ALL_TESTS();
  Kokkos::finalize();  // the program's own finalise; SparsePort must not have done it already
  return rc;
}
