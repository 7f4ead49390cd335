// SPDX-License-Identifier: Apache-2.0
// Uses the installed headers and library: a 2x3 SpMM on the reference backend, checked by hand.
#include <sparseport/sparseport.hpp>

#include <cstdio>
#include <vector>

int main() {
  // A = [[1 0 2], [0 3 0]], B = [[1 1], [2 2], [3 4]]  ->  C = [[7 9], [6 6]]
  const std::vector<int32_t> rowptr{0, 2, 3}, colind{0, 2, 1};
  const std::vector<float> values{1, 2, 3}, b{1, 1, 2, 2, 3, 4};
  std::vector<float> c(4, -1.0f);
  auto ctx = sparseport::Context::create("reference");
  sparseport::spmm(ctx, sparseport::make_csr(2, 3, 3, rowptr.data(), colind.data(), values.data()),
                   sparseport::make_dense<float>(3, 2, 2, b.data()), sparseport::make_dense<float>(2, 2, 2, c.data()));
  const std::vector<float> want{7, 9, 6, 6};
  if (c != want) {
    std::printf("consumer: wrong result %g %g %g %g\n", c[0], c[1], c[2], c[3]);
    return 1;
  }
  std::printf("consumer: ok (SparsePort %s, %zu backends known)\n", sparseport::version(), sparseport::plugins().size());
  return 0;
}
