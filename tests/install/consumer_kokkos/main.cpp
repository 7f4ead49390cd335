// SPDX-License-Identifier: Apache-2.0
// The installed kokkos component: the program initialises Kokkos, SparsePort's kokkos backend runs
// on it (no second initialise), and the program finalises Kokkos itself afterwards.
#include <Kokkos_Core.hpp>
#include <sparseport/sparseport.hpp>

#include <cstdio>
#include <vector>

#if !defined(SPARSEPORT_HAVE_KOKKOS)
#error "SparsePort::kokkos should define SPARSEPORT_HAVE_KOKKOS"
#endif

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    // A = [[1 0 2], [0 3 0]], B = [[1 1], [2 2], [3 4]]  ->  C = [[7 9], [6 6]]
    const std::vector<int32_t> rowptr{0, 2, 3}, colind{0, 2, 1};
    const std::vector<double> values{1, 2, 3}, b{1, 1, 2, 2, 3, 4};
    std::vector<double> c(4, -1.0);
    auto ctx = sparseport::Context::create("kokkos");
    if (ctx.device_memory()) {
      std::printf("consumer_kokkos: ok (device-memory Kokkos; host check skipped)\n");
    } else {
      for (const char* v : {"spmm.team_rows", "spmm.kokkoskernels"}) {
        sparseport::SpmmOptions opt;
        opt.variant = v;
        sparseport::spmm(ctx, sparseport::make_csr(2, 3, 3, rowptr.data(), colind.data(), values.data()),
                         sparseport::make_dense<double>(3, 2, 2, b.data()),
                         sparseport::make_dense<double>(2, 2, 2, c.data()), opt);
        if (c != std::vector<double>{7, 9, 6, 6}) {
          std::printf("consumer_kokkos: %s gave %g %g %g %g\n", v, c[0], c[1], c[2], c[3]);
          rc = 1;
        }
      }
      if (!Kokkos::is_initialized()) {
        std::printf("consumer_kokkos: Kokkos is no longer initialised after SparsePort ran\n");
        rc = 1;
      }
      if (rc == 0) std::printf("consumer_kokkos: ok (%s)\n", ctx.backend().c_str());
    }
  }
  Kokkos::finalize();
  return rc;
}
