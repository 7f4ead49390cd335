// SPDX-License-Identifier: Apache-2.0
// sparseport_bench_cg: conjugate gradients on the 5-point Laplacian of an N x N grid (4 on the
// diagonal, -1 to each neighbour: symmetric positive definite), the product of each iteration by
// sparseport::spmv through an SpmmPlan(ctx, A, 1), once with the variant the scheduler picks and
// once with each of the backend's vendor variants that apply (cusparseSpMV on cuda; GraphBLAS, Kokkos
// Kernels on the host), the same iterations on the same right-hand side (b = A * ones, x0 = 0).
// Prints per run the time of one iteration, of one spmv alone, the spmv's share and the residual
// reached, then the ratios to the first vendor that ran.
//
// Vector updates and dot products: plain loops on host backends, cuBLAS on the context's stream on
// cuda (a dot product returns to the host, as in any CG). Timings are wall clock over all
// iterations, after one untimed iteration (plans, the scheduler's decision).
//
//   sparseport_bench_cg [--backend=cuda] [--n=2000] [--iters=200] [--f32]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "sparseport/sparseport.hpp"

#if defined(SPARSEPORT_BENCH_CG_CUDA)
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "plugins/cuda/diagnostics.h"
#endif

namespace {

using namespace sparseport;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The 5-point Laplacian on an n x n grid, from the mesh2d generator's pattern.
template <class V>
HostCsr<int32_t, V> laplacian(int64_t n) {
  HostCsr<int32_t, V> a = load_graph<int32_t, V>("mesh2d:" + std::to_string(n) + ":" + std::to_string(n) + ":0");
  a.values.resize(a.colind.size());
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
      a.values[static_cast<size_t>(e)] = a.colind[static_cast<size_t>(e)] == i ? V(4) : V(-1);
  return a;
}

// BLAS-1 on vectors in host memory.
template <class V>
struct HostBlas {
  explicit HostBlas(const Context&) {}
  V dot(const V* x, const V* y, int64_t n) {
    V s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
  }
  void axpy(V a, const V* x, V* y, int64_t n) {  // y += a x
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
  }
  void xpay(const V* x, V a, V* y, int64_t n) {  // y = x + a y
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] + a * y[i];
  }
};

#if defined(SPARSEPORT_BENCH_CG_CUDA)
void cublas_ok(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw BackendError(std::string("sparseport_bench_cg: ") + what + " failed", st, "cublas");
}

// BLAS-1 by cuBLAS on the context's stream, so it orders with the context's spmv.
template <class V>
struct CudaBlas {
  explicit CudaBlas(const Context& ctx) {
    cublas_ok(cublasCreate(&h), "cublasCreate");
    const auto stream = static_cast<cudaStream_t>(sparseport_cuda_stream(ctx.exec().state));
    cublas_ok(cublasSetStream(h, stream), "cublasSetStream");
  }
  ~CudaBlas() { cublasDestroy(h); }
  CudaBlas(const CudaBlas&) = delete;
  CudaBlas& operator=(const CudaBlas&) = delete;
  V dot(const V* x, const V* y, int64_t n) {
    V s = 0;
    if constexpr (std::is_same_v<V, double>)
      cublas_ok(cublasDdot(h, static_cast<int>(n), x, 1, y, 1, &s), "cublasDdot");
    else
      cublas_ok(cublasSdot(h, static_cast<int>(n), x, 1, y, 1, &s), "cublasSdot");
    return s;
  }
  void axpy(V a, const V* x, V* y, int64_t n) {
    if constexpr (std::is_same_v<V, double>)
      cublas_ok(cublasDaxpy(h, static_cast<int>(n), &a, x, 1, y, 1), "cublasDaxpy");
    else
      cublas_ok(cublasSaxpy(h, static_cast<int>(n), &a, x, 1, y, 1), "cublasSaxpy");
  }
  void xpay(const V* x, V a, V* y, int64_t n) {  // y = a y, then y += x
    const V one = 1;
    if constexpr (std::is_same_v<V, double>) {
      cublas_ok(cublasDscal(h, static_cast<int>(n), &a, y, 1), "cublasDscal");
      cublas_ok(cublasDaxpy(h, static_cast<int>(n), &one, x, 1, y, 1), "cublasDaxpy");
    } else {
      cublas_ok(cublasSscal(h, static_cast<int>(n), &a, y, 1), "cublasSscal");
      cublas_ok(cublasSaxpy(h, static_cast<int>(n), &one, x, 1, y, 1), "cublasSaxpy");
    }
  }
  cublasHandle_t h = nullptr;
};
#endif

struct Run {
  std::string label;
  double iter_s = 0, spmv_s = 0, residual = 0;
};

// `iters` CG iterations from x0 = 0 on A x = A * ones, with spmv through a plan of `variant` ("":
// the scheduler's choice); then `iters` products alone.
template <class V, class Blas>
Run solve(const Context& ctx, const HostCsr<int32_t, V>& host_a, const CsrView& a, const std::string& variant,
          int iters) {
  const int64_t n = host_a.rows;
  const size_t bytes = static_cast<size_t>(n) * sizeof(V);
  Buffer x = ctx.allocate(bytes), r = ctx.allocate(bytes), p = ctx.allocate(bytes), q = ctx.allocate(bytes);
  V* px = static_cast<V*>(x.data());
  V* pr = static_cast<V*>(r.data());
  V* pp = static_cast<V*>(p.data());
  V* pq = static_cast<V*>(q.data());
  const auto vec = [&](V* d) { return make_vector<V>(n, d); };
  SpmmOptions opt;
  opt.variant = variant;
  SpmmPlan plan(ctx, a, 1, opt);
  Blas blas(ctx);
  const std::vector<V> ones(static_cast<size_t>(n), V(1)), zeros(static_cast<size_t>(n), V(0));
  const auto restart = [&] {  // r = p = b = A * ones, x = 0
    ctx.copy_to_backend(pq, ones.data(), bytes);
    plan.run(vec(pq), vec(pr));
    ctx.copy_to_backend(px, zeros.data(), bytes);
    ctx.copy_to_backend(pp, zeros.data(), bytes);
    blas.axpy(V(1), pr, pp, n);
    return blas.dot(pr, pr, n);
  };
  V rr = 0;
  const auto iterate = [&] {
    plan.run(vec(pp), vec(pq));  // q = A p
    const V alpha = rr / blas.dot(pp, pq, n);
    blas.axpy(alpha, pp, px, n);
    blas.axpy(-alpha, pq, pr, n);
    const V next = blas.dot(pr, pr, n);
    blas.xpay(pr, next / rr, pp, n);
    rr = next;
  };
  rr = restart();
  iterate();  // untimed: the plan's decision, kernels loaded, caches warm
  rr = restart();
  const V rr0 = rr;
  const Clock::time_point t0 = Clock::now();
  for (int k = 0; k < iters; ++k) iterate();
  ctx.synchronize();
  Run out;
  out.iter_s = seconds_since(t0) / iters;
  out.residual = std::sqrt(static_cast<double>(rr) / static_cast<double>(rr0));
  const Clock::time_point t1 = Clock::now();
  for (int k = 0; k < iters; ++k) plan.run(vec(pp), vec(pq));
  ctx.synchronize();
  out.spmv_s = seconds_since(t1) / iters;
  out.label = variant.empty() ? "auto (" + plan.decision().variant + ")" : variant;
  return out;
}

template <class V, class Blas>
int bench(const std::string& backend, int64_t grid, int iters) {
  Context ctx = Context::create(backend);
  if (ctx.device_memory() && std::is_same_v<Blas, HostBlas<V>>)
    throw Unsupported("sparseport_bench_cg: backend " + ctx.backend() + " keeps its data in device memory, and this "
                      "program has vector updates for host memory and for cuda only");
  const HostCsr<int32_t, V> host_a = laplacian<V>(grid);
  std::vector<Buffer> keep;
  CsrView a = host_a.view();
  if (ctx.device_memory()) {
    const auto up = [&](const auto& v) {
      keep.push_back(ctx.allocate(v.size() * sizeof(v[0])));
      ctx.copy_to_backend(keep.back().data(), v.data(), v.size() * sizeof(v[0]));
      return keep.back().data();
    };
    a.rowptr = up(host_a.rowptr);
    a.colind = up(host_a.colind);
    a.values = up(host_a.values);
  }
  std::printf("sparseport_bench_cg: backend %s, mesh2d:%lld:%lld:0 Laplacian (%lld rows, %lld entries), %s, %d "
              "iterations\n",
              ctx.backend().c_str(), static_cast<long long>(grid), static_cast<long long>(grid),
              static_cast<long long>(host_a.rows), static_cast<long long>(host_a.nnz()),
              std::is_same_v<V, double> ? "f64" : "f32", iters);
  std::vector<Run> runs;
  std::vector<std::string> labels = {""};
  for (const VariantInfo& v : ctx.plugin().variants)
    if (v.op == SPARSEPORT_OP_SPMM && v.is_vendor) labels.push_back(v.name);
  for (const std::string& variant : labels) {
    try {
      runs.push_back(solve<V, Blas>(ctx, host_a, a, variant, iters));
    } catch (const Unsupported& e) {
      std::printf("  %s: not run (%s)\n", variant.c_str(), e.what());
    }
  }
  std::printf("  %-34s %12s %12s %7s %12s\n", "spmv", "ms/iter", "spmv ms", "share", "|r|/|r0|");
  for (const Run& r : runs)
    std::printf("  %-34s %12.4f %12.4f %6.1f%% %12.3e\n", r.label.c_str(), r.iter_s * 1e3, r.spmv_s * 1e3,
                100.0 * r.spmv_s / r.iter_s, r.residual);
  if (runs.size() > 1)  // runs[1]: the first vendor variant that applied
    std::printf("  auto against %s: %.2fx per iteration, %.2fx per spmv\n", runs[1].label.c_str(),
                runs[1].iter_s / runs[0].iter_s, runs[1].spmv_s / runs[0].spmv_s);
  return 0;
}

int64_t flag_value(const std::string& arg, const std::string& name, int64_t fallback) {
  if (arg.rfind(name, 0) != 0) return fallback;
  const std::string v = arg.substr(name.size());
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x <= 0)
    throw InvalidArgument("sparseport_bench_cg: " + arg + " is not " + name + "POSITIVE_INTEGER");
  return x;
}

int real_main(int argc, char** argv) {
  std::string backend;
  int64_t grid = 0, iters = 200;
  bool f32 = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--backend=", 0) == 0) {
      backend = arg.substr(10);
    } else if (arg == "--f32") {
      f32 = true;
    } else if (arg.rfind("--n=", 0) == 0 || arg.rfind("--iters=", 0) == 0) {
      grid = flag_value(arg, "--n=", grid);
      iters = flag_value(arg, "--iters=", iters);
    } else {
      std::printf("usage: sparseport_bench_cg [--backend=TOKEN] [--n=GRID_SIDE] [--iters=N] [--f32]\n"
                  "  default: the cuda backend where a GPU is usable (n = 2000: 4M rows), else openmp (n = 1000)\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (backend.empty()) backend = plugin("cuda").status == PluginStatus::available ? "cuda" : "";
  const bool on_gpu = backend.rfind("cuda", 0) == 0;
  if (grid == 0) grid = on_gpu ? 2000 : 1000;
#if defined(SPARSEPORT_BENCH_CG_CUDA)
  if (on_gpu) return f32 ? bench<float, CudaBlas<float>>(backend, grid, static_cast<int>(iters))
                         : bench<double, CudaBlas<double>>(backend, grid, static_cast<int>(iters));
#else
  if (on_gpu) throw Unsupported("sparseport_bench_cg: built without CUDA, so it runs host backends only");
#endif
  return f32 ? bench<float, HostBlas<float>>(backend, grid, static_cast<int>(iters))
             : bench<double, HostBlas<double>>(backend, grid, static_cast<int>(iters));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
