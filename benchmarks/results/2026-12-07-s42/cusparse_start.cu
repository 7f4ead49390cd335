// Session 42 (issue 35): what a cuSPARSE SpMM plan's start costs, step by step, in a new process:
// the first use of ALG2 and ALG3 against later uses, on a tiny matrix and on larger ones, so that a
// fixed per-plan cost can be told from a first-use (module load) cost.
//   nvcc -O2 -arch=sm_90 cusparse_start.cu -lcusparse -o /tmp/cs && /tmp/cs
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include <cuda_runtime.h>
#include <cusparse.h>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("error %d at %s:%d\n", (int)e_, __FILE__, __LINE__); return 1; } } while (0)

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static int run(cusparseHandle_t h, int n, int deg, int F, cusparseSpMMAlg_t alg, const char* tag) {
  std::mt19937 rng(n + deg);
  std::vector<int> rowptr(n + 1), col(static_cast<size_t>(n) * deg);
  for (int i = 0; i <= n; ++i) rowptr[i] = i * deg;
  for (auto& c : col) c = static_cast<int>(rng() % n);
  for (int i = 0; i < n; ++i) std::sort(col.begin() + static_cast<size_t>(i) * deg, col.begin() + static_cast<size_t>(i + 1) * deg);
  const size_t nnz = col.size();
  int *drp, *dcol; float *dval, *dB, *dC;
  CK(cudaMalloc(&drp, (n + 1) * 4)); CK(cudaMalloc(&dcol, nnz * 4)); CK(cudaMalloc(&dval, nnz * 4));
  CK(cudaMalloc(&dB, size_t(n) * F * 4)); CK(cudaMalloc(&dC, size_t(n) * F * 4));
  CK(cudaMemcpy(drp, rowptr.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dcol, col.data(), nnz * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(dval, 0, nnz * 4)); CK(cudaMemset(dB, 0, size_t(n) * F * 4));
  CK(cudaDeviceSynchronize());
  float alpha = 1, beta = 0;
  double t0 = now_ms();
  cusparseSpMatDescr_t A; cusparseDnMatDescr_t B, C;
  CK(cusparseCreateCsr(&A, n, n, nnz, drp, dcol, dval, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CK(cusparseCreateDnMat(&B, n, F, F, dB, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CK(cusparseCreateDnMat(&C, n, F, F, dC, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  size_t bytes = 0;
  CK(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C, CUDA_R_32F, alg, &bytes));
  double t1 = now_ms();
  void* buf = nullptr;
  CK(cudaMalloc(&buf, bytes > 0 ? bytes : 1));
  double t2 = now_ms();
  if (alg == CUSPARSE_SPMM_CSR_ALG3)
    CK(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C, CUDA_R_32F, alg, buf));
  CK(cudaDeviceSynchronize());
  double t3 = now_ms();
  double call[3];
  for (double& c : call) {
    double s = now_ms();
    CK(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, B, &beta, C, CUDA_R_32F, alg, buf));
    CK(cudaDeviceSynchronize());
    c = now_ms() - s;
  }
  std::printf("%-6s n %8d nnz %9zu F %3d: descr+bufferSize %7.2f ms, malloc %6.2f (%.1f MB), preprocess %7.2f, calls %7.3f %7.3f %7.3f ms\n",
              tag, n, nnz, F, t1 - t0, t2 - t1, bytes / 1e6, t3 - t2, call[0], call[1], call[2]);
  cusparseDestroySpMat(A); cusparseDestroyDnMat(B); cusparseDestroyDnMat(C);
  cudaFree(buf); cudaFree(drp); cudaFree(dcol); cudaFree(dval); cudaFree(dB); cudaFree(dC);
  return 0;
}

int main() {
  CK(cudaFree(nullptr));
  double t = now_ms();
  cusparseHandle_t h;
  CK(cusparseCreate(&h));
  std::printf("cusparseCreate %.2f ms\n", now_ms() - t);
  const cusparseSpMMAlg_t a2 = CUSPARSE_SPMM_CSR_ALG2, a3 = CUSPARSE_SPMM_CSR_ALG3;
  // First uses on a tiny matrix, then again; then larger ones, ALG3 twice at each size.
  if (run(h, 1024, 4, 47, a2, "ALG2") || run(h, 1024, 4, 47, a3, "ALG3") || run(h, 1024, 4, 47, a2, "ALG2") ||
      run(h, 1024, 4, 47, a3, "ALG3") || run(h, 1024, 4, 256, a3, "ALG3"))
    return 1;
  for (int n : {65536, 300000, 2000000})
    if (run(h, n, 50, 47, a2, "ALG2") || run(h, n, 50, 47, a3, "ALG3") || run(h, n, 50, 47, a3, "ALG3") ||
        run(h, n, 50, 256, a3, "ALG3"))
      return 1;
  cusparseDestroy(h);
  return 0;
}
