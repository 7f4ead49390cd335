// Session 36: wing's probe (4 runs of consecutive rows around the entry quantiles) rebuilt outside the
// scheduler; each variant timed 30 times through the public spmm (see ../2026-12-07-s36.md).
//   g++ -O2 -std=c++20 -Iinclude -Ibuild/default/include probe.cpp -Lbuild/default/src/ops -lsparseport
//   OMP_PROC_BIND=false ./a.out wing.mtx 1828
// wing's probe: 4 blocks of consecutive rows around the entry quantiles, rows vs merge_path
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "sparseport/sparseport.hpp"
namespace sp = sparseport;
int main(int argc, char** argv) {
  auto A = sp::read_matrix_market<int, float>(argv[1]);
  int64_t want = atol(argv[2]);  // rows in all
  int F = 64;
  int64_t n = A.rows;
  std::vector<int> rp{0}, ci; std::vector<float> va;
  int blocks = 4;
  for (int b = 0; b < blocks; ++b) {
    int64_t start = n * (2 * b + 1) / 8 - want / blocks / 2;
    for (int64_t r = start; r < start + want / blocks; ++r) {
      for (int e = A.rowptr[r]; e < A.rowptr[r + 1]; ++e) { ci.push_back(A.colind[e]); va.push_back(A.values.empty() ? 1.0f : A.values[e]); }
      rp.push_back(ci.size());
    }
  }
  int64_t m = rp.size() - 1;
  auto ctx = sp::Context::create("openmp");
  ctx.set_threads(2);
  std::vector<float> B(A.cols * F, 1.0f), C(m * F), Cf(n * F);
  auto sub = sp::make_csr<int, float>(m, A.cols, ci.size(), rp.data(), ci.data(), A.values.empty() ? nullptr : va.data());
  auto full = sp::make_csr<int, float>(n, A.cols, A.nnz(), A.rowptr.data(), A.colind.data(), A.values.empty() ? nullptr : A.values.data());
  for (auto [name, a, c, rows] : {std::tuple{"probe", sub, C.data(), m}, std::tuple{"full", full, Cf.data(), n}}) {
    for (const char* v : {"spmm.graphblas", "spmm.merge_path", "spmm.rows", "spmm.merge_path", "spmm.rows"}) {
      sp::SpmmOptions o; o.variant = v;
      sp::DenseView bv{A.cols, F, F, B.data(), sp::ValueType::f32};
      sp::DenseMutView cv{rows, F, F, c, sp::ValueType::f32};
      std::vector<double> ts;
      for (int i = 0; i < 30; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        sp::spmm(ctx, a, bv, cv, o);
        ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ts.begin(), ts.end());
      std::printf("%s %s rows %ld: first %.4f median %.4f ms\n", name, v, (long)rows, ts[0], ts[15]);
    }
  }
}
