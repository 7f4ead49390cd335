// SPDX-License-Identifier: Apache-2.0
// sddmm.cusparse: cusparseSDDMM, the vendor baseline. X is row-major m x F; Y (k x F row-major) is
// handed over as the column-major F x k matrix it already is, so both operands are read along F
// (the layout cuSPARSE's SDDMM is fast with); if this cuSPARSE refuses that mix, Y goes row-major
// with opB = transpose. cuSPARSE writes the plain dot products; A's values (and a leading
// dimension other than 1) are applied by one elementwise pass. Descriptors, buffer and
// preprocessing live in a plan per structure, F and leading dimensions.
#include <cstdio>
#include <string>

#include "kernels/cuda/common.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(1)

namespace sparseport::cuda {
namespace {

class SddmmVendorPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit SddmmVendorPlan(const State& s) : state_(&s) {}
  ~SddmmVendorPlan() override {
    if (x_ != nullptr) (void)cusparseDestroyDnMat(x_);
    if (y_ != nullptr) (void)cusparseDestroyDnMat(y_);
    if (out_ != nullptr) (void)cusparseDestroySpMat(out_);
    if (buffer_ != nullptr) (void)cudaFreeAsync(buffer_, state_->stream());
  }
  cusparseDnMatDescr_t x_ = nullptr, y_ = nullptr;
  cusparseSpMatDescr_t out_ = nullptr;
  cusparseOperation_t op_y_ = CUSPARSE_OPERATION_NON_TRANSPOSE;
  void* buffer_ = nullptr;

 private:
  const State* state_;
};

template <class V>
__global__ void __launch_bounds__(kBlock) scale_kernel(const V* tmp, const V* val, V* out, int64_t ldo, int64_t nnz) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nnz;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[e * ldo] = (val != nullptr ? val[e] : V(1)) * tmp[e];
}

template <class V>
std::shared_ptr<SddmmVendorPlan> build_plan(const State& s, const sparseport_sddmm_args& a, size_t isz, void* target) {
  const cudaDataType vt = std::is_same_v<V, double> ? CUDA_R_64F : CUDA_R_32F;
  const cusparseIndexType_t it = isz == 8 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  auto plan = std::make_shared<SddmmVendorPlan>(s);
  const int64_t F = a.x.cols;
  check(cusparseCreateDnMat(&plan->x_, a.x.rows, F, a.x.ld, const_cast<void*>(a.x.data), vt, CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (X)");
  check(cusparseCreateCsr(&plan->out_, a.a.rows, a.a.cols, a.a.nnz, const_cast<void*>(a.a.rowptr),
                          const_cast<void*>(a.a.colind), target, it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
        "cusparseCreateCsr (out)");
  const V one = 1, zero = 0;
  const cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t bytes = 0;
  check(cusparseCreateDnMat(&plan->y_, F, a.y.rows, a.y.ld, const_cast<void*>(a.y.data), vt, CUSPARSE_ORDER_COL),
        "cusparseCreateDnMat (Y as F x k column-major)");
  cusparseStatus_t st =
      cusparseSDDMM_bufferSize(s.sparse(), N, N, &one, plan->x_, plan->y_, &zero, plan->out_, vt,
                               CUSPARSE_SDDMM_ALG_DEFAULT, &bytes);
  if (st != CUSPARSE_STATUS_SUCCESS) {
    if (is_sticky(cudaPeekAtLastError())) raise(st, "cusparseSDDMM_bufferSize");
    (void)cusparseDestroyDnMat(plan->y_);
    plan->y_ = nullptr;
    check(cusparseCreateDnMat(&plan->y_, a.y.rows, F, a.y.ld, const_cast<void*>(a.y.data), vt, CUSPARSE_ORDER_ROW),
          "cusparseCreateDnMat (Y row-major)");
    plan->op_y_ = CUSPARSE_OPERATION_TRANSPOSE;
    check(cusparseSDDMM_bufferSize(s.sparse(), N, plan->op_y_, &one, plan->x_, plan->y_, &zero, plan->out_, vt,
                                   CUSPARSE_SDDMM_ALG_DEFAULT, &bytes),
          "cusparseSDDMM_bufferSize");
  }
  if (bytes > 0)
    check(cudaMallocFromPoolAsync(&plan->buffer_, bytes, s.pool(), s.stream()), "cudaMallocFromPoolAsync (SDDMM buffer)");
  check(cusparseSDDMM_preprocess(s.sparse(), N, plan->op_y_, &one, plan->x_, plan->y_, &zero, plan->out_, vt,
                                 CUSPARSE_SDDMM_ALG_DEFAULT, plan->buffer_),
        "cusparseSDDMM_preprocess");
  if (log_enabled())
    std::fprintf(stderr, "sparseport cuda: sddmm.cusparse plan for %lldx%lld, nnz %lld, F %lld: Y %s\n",
                 static_cast<long long>(a.a.rows), static_cast<long long>(a.a.cols), static_cast<long long>(a.a.nnz),
                 static_cast<long long>(F),
                 plan->op_y_ == CUSPARSE_OPERATION_NON_TRANSPOSE ? "as column-major F x k" : "row-major, transposed");
  plan->watch(a.a.rowptr, static_cast<size_t>(a.a.rows + 1) * isz);
  plan->watch(a.a.colind, static_cast<size_t>(a.a.nnz) * isz);
  return plan;
}

}  // namespace

void sddmm_cusparse(const State& s, const sparseport_sddmm_args& a) {
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const cudaDataType vt = std::is_same_v<V, double> ? CUDA_R_64F : CUDA_R_32F;
    // cuSPARSE writes nnz contiguous values: straight into out when its stride is 1.
    Scratch tmp;
    void* target = a.out.data;
    if (a.out.ld != 1) {
      tmp = Scratch(s, static_cast<size_t>(a.a.nnz) * sizeof(V));
      target = tmp.get();
    }
    const std::string key = "sddmm.cusparse|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(reinterpret_cast<uintptr_t>(a.a.colind)) + "|" + std::to_string(a.a.rows) +
                            "|" + std::to_string(a.a.cols) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(a.x.cols) + "|" + std::to_string(a.x.ld) + "|" + std::to_string(a.y.ld) +
                            "|" + std::to_string(sizeof(I)) + "|" + std::to_string(sizeof(V));
    std::shared_ptr<SddmmVendorPlan> plan = std::static_pointer_cast<SddmmVendorPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = build_plan<V>(s, a, sizeof(I), target);
      s.plans().insert(key, plan);
    }
    check(cusparseDnMatSetValues(plan->x_, const_cast<void*>(a.x.data)), "cusparseDnMatSetValues (X)");
    check(cusparseDnMatSetValues(plan->y_, const_cast<void*>(a.y.data)), "cusparseDnMatSetValues (Y)");
    check(cusparseCsrSetPointers(plan->out_, const_cast<void*>(a.a.rowptr), const_cast<void*>(a.a.colind), target),
          "cusparseCsrSetPointers (out)");
    const V one = 1, zero = 0;
    check(cusparseSDDMM(s.sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE, plan->op_y_, &one, plan->x_, plan->y_, &zero,
                        plan->out_, vt, CUSPARSE_SDDMM_ALG_DEFAULT, plan->buffer_),
          "cusparseSDDMM");
    if (a.a.values != nullptr || a.out.ld != 1) {
      scale_kernel<V><<<blocks_for(a.a.nnz), kBlock, 0, s.stream()>>>(
          static_cast<const V*>(target), static_cast<const V*>(a.a.values), static_cast<V*>(a.out.data), a.out.ld,
          a.a.nnz);
      check_launch("sddmm.cusparse (apply A's values)");
    }
  });
}

}  // namespace sparseport::cuda
