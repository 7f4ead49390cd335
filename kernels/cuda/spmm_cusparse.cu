// SPDX-License-Identifier: Apache-2.0
// spmm.cusparse: cusparseSpMM on CSR with row-major B and C, the vendor baseline. A plan per
// matrix structure (and F, ldb, ldc) holds the descriptors and the buffer. Building it times CSR
// ALG2 against ALG3 (after cusparseSpMM_preprocess) on the real operands and keeps the faster;
// later calls only swap the operand pointers into the descriptors and run, so timed calls pay
// neither descriptor creation nor preprocessing. SPARSEPORT_LOG=cuda prints each choice.
//
// Two things seen on an H100 with cuSPARSE 12.6.3 (tests/cuda, 2026-11) shape this file:
//  - ALG3's preprocessing wrote far out of bounds (an illegal address, inside cusparse's
//    do_reorder_ker) on a matrix whose rows repeat columns (a row longer than A has columns), so
//    ALG3 is tried only on canonical CSR (columns strictly increasing in every row), checked on
//    the host when the plan is built;
//  - a plan preprocessed with beta = 0 and then called with beta != 0 gave wrong rows (a hub of
//    600 entries), so cuSPARSE always runs exactly as planned, alpha = 1 and beta = 0; any other
//    alpha or beta goes into scratch and one elementwise pass finishes C = alpha * T + beta * C.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "sparseport/errors.hpp"

namespace sparseport::cuda {
namespace {

constexpr int kTrialRuns = 3;  // timed runs per algorithm after one warm-up; the minimum counts

class SpmmVendorPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit SpmmVendorPlan(const State& s) : state_(&s) {}
  ~SpmmVendorPlan() override {
    if (a_ != nullptr) (void)cusparseDestroySpMat(a_);
    if (b_ != nullptr) (void)cusparseDestroyDnMat(b_);
    if (c_ != nullptr) (void)cusparseDestroyDnMat(c_);
    if (buffer_ != nullptr) (void)cudaFreeAsync(buffer_, state_->stream());
    if (ones_ != nullptr) (void)cudaFreeAsync(ones_, state_->stream());
  }
  cusparseSpMatDescr_t a_ = nullptr;
  cusparseDnMatDescr_t b_ = nullptr, c_ = nullptr;
  void* buffer_ = nullptr;
  void* ones_ = nullptr;  // the values of a pattern
  const void* bound_values_ = nullptr;
  cusparseSpMMAlg_t alg_ = CUSPARSE_SPMM_CSR_ALG2;

 private:
  const State* state_;
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Events() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
};

const char* alg_name(cusparseSpMMAlg_t alg) { return alg == CUSPARSE_SPMM_CSR_ALG3 ? "ALG3" : "ALG2"; }

// Columns strictly increasing within every row (so no repeats); read back once per plan.
template <class I>
bool canonical(const State& s, const sparseport_csr& a) {
  std::vector<I> rowptr(static_cast<size_t>(a.rows + 1)), colind(static_cast<size_t>(a.nnz));
  check(cudaMemcpyAsync(rowptr.data(), a.rowptr, rowptr.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (spmm.cusparse reads rowptr)");
  check(cudaMemcpyAsync(colind.data(), a.colind, colind.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (spmm.cusparse reads colind)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (spmm.cusparse plan)");
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = rowptr[static_cast<size_t>(i)] + 1; e < rowptr[static_cast<size_t>(i) + 1]; ++e)
      if (colind[static_cast<size_t>(e)] <= colind[static_cast<size_t>(e) - 1]) return false;
  return true;
}

template <class V>
__global__ void __launch_bounds__(kBlock) epilogue_kernel(const V* t, V* c, int64_t rows, int64_t cols, int64_t ld,
                                                          V alpha, V beta) {
  const int64_t total = rows * cols;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = (k / cols) * ld + k % cols;
    c[at] = beta != V(0) ? alpha * t[at] + beta * c[at] : alpha * t[at];
  }
}

template <class I, class V>
std::shared_ptr<SpmmVendorPlan> build_plan(const State& s, const sparseport_spmm_args& args) {
  const size_t isz = sizeof(I);
  const sparseport_csr& A = args.a;
  const cudaDataType vt = std::is_same_v<V, double> ? CUDA_R_64F : CUDA_R_32F;
  const cusparseIndexType_t it = isz == 8 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  auto plan = std::make_shared<SpmmVendorPlan>(s);
  const void* values = A.values;
  if (values == nullptr) {
    check(cudaMallocFromPoolAsync(&plan->ones_, static_cast<size_t>(A.nnz) * sizeof(V), s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (ones for a pattern)");
    dense_fill(s, plan->ones_, A.nnz, 1, 1, args.a.value_type, 1.0);
    values = plan->ones_;
  }
  plan->bound_values_ = A.values;
  check(cusparseCreateCsr(&plan->a_, A.rows, A.cols, A.nnz, const_cast<void*>(A.rowptr), const_cast<void*>(A.colind),
                          const_cast<void*>(values), it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
        "cusparseCreateCsr");
  check(cusparseCreateDnMat(&plan->b_, args.b.rows, args.b.cols, args.b.ld, const_cast<void*>(args.b.data), vt,
                            CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (B)");
  // Trials write C; with beta != 0 that would change the answer, so they go to scratch then.
  Scratch trial_c;
  void* target = args.c.data;
  if (args.beta != 0.0) {
    trial_c = Scratch(s, static_cast<size_t>(args.c.rows * args.c.ld) * sizeof(V));
    target = trial_c.get();
  }
  const bool alg3_ok = canonical<I>(s, A);
  check(cusparseCreateDnMat(&plan->c_, args.c.rows, args.c.cols, args.c.ld, target, vt, CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (C)");
  const V one = 1, zero = 0;
  const cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  Events ev;
  double best_ms = -1.0;
  std::string report, refused;
  for (cusparseSpMMAlg_t alg : {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3}) {
    if (alg == CUSPARSE_SPMM_CSR_ALG3 && !alg3_ok) {
      refused += std::string(refused.empty() ? "" : "; ") + "ALG3: not tried, columns not strictly increasing in every row";
      continue;
    }
    size_t bytes = 0;
    cusparseStatus_t st = cusparseSpMM_bufferSize(s.sparse(), N, N, &one, plan->a_, plan->b_, &zero, plan->c_, vt,
                                                  alg, &bytes);
    void* buffer = nullptr;
    if (st == CUSPARSE_STATUS_SUCCESS && bytes > 0)
      check(cudaMallocFromPoolAsync(&buffer, bytes, s.pool(), s.stream()), "cudaMallocFromPoolAsync (cuSPARSE buffer)");
    if (st == CUSPARSE_STATUS_SUCCESS && alg == CUSPARSE_SPMM_CSR_ALG3)
      st = cusparseSpMM_preprocess(s.sparse(), N, N, &one, plan->a_, plan->b_, &zero, plan->c_, vt, alg, buffer);
    if (st == CUSPARSE_STATUS_SUCCESS)
      st = cusparseSpMM(s.sparse(), N, N, &one, plan->a_, plan->b_, &zero, plan->c_, vt, alg, buffer);  // warm-up
    if (st != CUSPARSE_STATUS_SUCCESS) {
      if (is_sticky(cudaPeekAtLastError())) raise(st, std::string("cusparseSpMM ") + alg_name(alg));
      refused += std::string(refused.empty() ? "" : "; ") + alg_name(alg) + ": " + cusparseGetErrorName(st);
      if (buffer != nullptr) (void)cudaFreeAsync(buffer, s.stream());
      continue;
    }
    float ms = 0.0f, best_run = 0.0f;
    for (int t = 0; t < kTrialRuns; ++t) {
      check(cudaEventRecord(ev.start, s.stream()), "cudaEventRecord");
      check(cusparseSpMM(s.sparse(), N, N, &one, plan->a_, plan->b_, &zero, plan->c_, vt, alg, buffer),
            "cusparseSpMM (timing trial)");
      check(cudaEventRecord(ev.stop, s.stream()), "cudaEventRecord");
      check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
      check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
      best_run = t == 0 ? ms : std::min(best_run, ms);
    }
    char line[96];
    std::snprintf(line, sizeof line, "%s%s %.4f ms", report.empty() ? "" : ", ", alg_name(alg), best_run);
    report += line;
    if (best_ms < 0.0 || best_run < best_ms) {
      if (plan->buffer_ != nullptr) (void)cudaFreeAsync(plan->buffer_, s.stream());
      plan->buffer_ = buffer;
      plan->alg_ = alg;
      best_ms = best_run;
    } else if (buffer != nullptr) {
      (void)cudaFreeAsync(buffer, s.stream());
    }
  }
  if (best_ms < 0.0)
    throw Unsupported("cusparseSpMM runs neither CSR ALG2 nor ALG3 on this input (" + refused + ")");
  char head[160];
  std::snprintf(head, sizeof head, "spmm.cusparse plan for %lldx%lld, nnz %lld, F %lld: ",
                static_cast<long long>(A.rows), static_cast<long long>(A.cols), static_cast<long long>(A.nnz),
                static_cast<long long>(args.b.cols));
  std::string note = head + report + " -> " + alg_name(plan->alg_);
  if (!refused.empty()) note += " (refused: " + refused + ")";
  if (log_enabled()) std::fprintf(stderr, "sparseport cuda: %s\n", note.c_str());
  s.set_note(note);
  plan->watch(A.rowptr, static_cast<size_t>(A.rows + 1) * isz);
  plan->watch(A.colind, static_cast<size_t>(A.nnz) * isz);
  return plan;
}

}  // namespace

void spmm_cusparse(const State& s, const sparseport_spmm_args& a) {
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const std::string key = "spmm.cusparse|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(reinterpret_cast<uintptr_t>(a.a.colind)) + "|" + std::to_string(a.a.rows) +
                            "|" + std::to_string(a.a.cols) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(a.b.cols) + "|" + std::to_string(a.b.ld) + "|" + std::to_string(a.c.ld) +
                            "|" + std::to_string(sizeof(I)) + "|" + std::to_string(sizeof(V)) + "|" +
                            (a.a.values == nullptr ? "pattern" : "values");
    std::shared_ptr<SpmmVendorPlan> plan = std::static_pointer_cast<SpmmVendorPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = build_plan<I, V>(s, a);
      s.plans().insert(key, plan);
    }
    const cudaDataType vt = std::is_same_v<V, double> ? CUDA_R_64F : CUDA_R_32F;
    if (a.a.values != nullptr && a.a.values != plan->bound_values_) {
      check(cusparseCsrSetPointers(plan->a_, const_cast<void*>(a.a.rowptr), const_cast<void*>(a.a.colind),
                                   const_cast<void*>(a.a.values)),
            "cusparseCsrSetPointers");
      plan->bound_values_ = a.a.values;
    }
    check(cusparseDnMatSetValues(plan->b_, const_cast<void*>(a.b.data)), "cusparseDnMatSetValues (B)");
    // cuSPARSE runs as planned (alpha 1, beta 0); other scalars are applied by the epilogue.
    const bool plain = a.alpha == 1.0 && a.beta == 0.0;
    Scratch t;
    if (!plain) t = Scratch(s, static_cast<size_t>(a.c.rows * a.c.ld) * sizeof(V));
    check(cusparseDnMatSetValues(plan->c_, plain ? a.c.data : t.get()), "cusparseDnMatSetValues (C)");
    const V one = 1, zero = 0;
    check(cusparseSpMM(s.sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, plan->a_,
                       plan->b_, &zero, plan->c_, vt, plan->alg_, plan->buffer_),
          "cusparseSpMM");
    if (!plain) {
      epilogue_kernel<V><<<blocks_for(a.c.rows * a.c.cols), kBlock, 0, s.stream()>>>(
          t.as<V>(), static_cast<V*>(a.c.data), a.c.rows, a.c.cols, a.c.ld, static_cast<V>(a.alpha),
          static_cast<V>(a.beta));
      check_launch("spmm.cusparse (alpha, beta)");
    }
  });
}

}  // namespace sparseport::cuda
