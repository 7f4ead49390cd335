// SPDX-License-Identifier: Apache-2.0
// spmm.cusparse: cusparseSpMM on CSR with row-major B and C, the vendor baseline. A plan per
// matrix structure (and F, ldb, ldc) holds the descriptors and the buffer. Building it times CSR
// ALG2 against ALG3 (after cusparseSpMM_preprocess) on the real operands and keeps the faster;
// later calls only swap the operand pointers into the descriptors and run, so timed calls pay
// neither descriptor creation nor preprocessing. SPARSEPORT_LOG=cuda prints each choice.
// On A of kSampleNnz entries or more the two are timed on a sample of A's rows first (sample_csr),
// and only a close race is run again at full size (decide_on_sample).
//
// spmm.cusparse_spmv: cusparseSpMV for F == 1 with contiguous vectors, the vendor baseline of
// SpMV (cuSPARSE's SpMM with one column is not its SpMV kernel). The same kind of plan: CSR ALG1
// against ALG2 timed once, alpha and beta passed to cuSPARSE (no epilogue), and no
// cusparseSpMV_preprocess (the SpMM note below: a preprocessed plan called with another beta).
//
// Two things seen on an H100 with cuSPARSE 12.6.3 (tests/cuda, 2026-11) shape this file:
//  - ALG3's preprocessing wrote far out of bounds (an illegal address, inside cusparse's
//    do_reorder_ker) on a matrix whose rows repeat columns (a row longer than A has columns), so
//    ALG3 is tried only on canonical CSR (columns strictly increasing in every row), checked on
//    the GPU when the plan is built;
//  - a plan preprocessed with beta = 0 and then called with beta != 0 gave wrong rows (a hub of
//    600 entries), so cuSPARSE always runs exactly as planned, alpha = 1 and beta = 0; any other
//    alpha or beta goes into scratch and one elementwise pass finishes C = alpha * T + beta * C.
//
// 16-bit values (ABI 1.7): A, B and C as CUDA_R_16F / CUDA_R_16BF with CUSPARSE_COMPUTE_32F
// (compute type CUDA_R_32F, alpha and beta as float), the mixed precision cuSPARSE documents for
// SpMM and SpMV; an algorithm cuSPARSE refuses for them is left out of the timing (the plan's note
// says which). SpMM's alpha and beta: where the kept algorithm is ALG2 (no preprocessing, so the
// beta trap above does not apply) cuSPARSE applies them itself, C rounded once; after ALG3 the
// epilogue finishes C from the 16-bit T in float32, a second rounding. SpMV passes them as always.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/values16.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

// Timed runs per algorithm after one warm-up, the minimum counting: up to kTrialRuns, and no more
// once they have taken kTrialMs between them. A call of milliseconds, timed by events on the GPU,
// resolves ALG2 against ALG3 in one run; the two more cost a products-sized graph's plan 4 of its
// calls (30 ms each at F = 256), where a plan's whole first call was 63-82 calls (H100, session 39).
constexpr int kTrialRuns = 3;
constexpr float kTrialMs = 2.0f;

// The race on a sample. At full size it cost a products-sized graph's plan (123.7M entries) 160 ms
// at F = 47 and 200 ms at F = 256, 8-19 of its calls (H100, session 40): each algorithm's warm-up
// and timed call, and ALG3's preprocessing (38-98 ms), though ALG3 then ran 2.5-3.1x ALG2's time.
// From kSampleNnz entries (where the two algorithms' warm-ups, timed calls and ALG3's preprocessing
// cost tens of milliseconds) they race on kSampleBlocks runs of consecutive rows, 1/kSampleShare of
// A's rows in all, spread over A (its row order's locality kept, hubs at about their share). The
// sample decides where the loser took kSampleMargin x the winner's time or more; a closer race is
// run again at full size, as below kSampleNnz. Measured since (H100, session 40,
// benchmarks/results/2026-12-07-s40.md): the products-sized graph's plans went from 160 and 200 ms
// to 102 and 75 ms (ALG3's preprocessing on the sample still 42-84 ms: mostly a fixed cost); where
// the race was close (rmat:20:16, mesh3d at F = 64) the lost sample race added 23-29 ms; and the
// full size favoured ALG2 more than the sample did on all four inputs tried, by up to 1.38x (mesh3d:
// ALG3 1.11x faster on the sample, ALG2 1.25x at full size), so a sample favouring ALG3 by less
// than ~1.4x may pick it wrongly (none did). SPARSEPORT_CUSPARSE_SAMPLE=0 races at full size
// always (an A/B of this rule).
constexpr int64_t kSampleNnz = int64_t{1} << 22;
constexpr int kSampleBlocks = 16;
constexpr int64_t kSampleShare = 8;
constexpr float kSampleMargin = 1.25f;

// What both vendor plans hold: A's descriptor (a pattern's values: an nnz-long array of ones)
// and cuSPARSE's buffer.
class VendorPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit VendorPlan(const State& s) : state_(&s) {}
  ~VendorPlan() override {
    if (a_ != nullptr) (void)cusparseDestroySpMat(a_);
    if (buffer_ != nullptr) (void)cudaFreeAsync(buffer_, state_->stream());
    if (ones_ != nullptr) (void)cudaFreeAsync(ones_, state_->stream());
  }
  // A's descriptor, on the plan's first call.
  template <class I, class V>
  void describe(const sparseport_csr& A) {
    const void* values = A.values;
    if (values == nullptr) {
      check(cudaMallocFromPoolAsync(&ones_, static_cast<size_t>(A.nnz) * sizeof(V), state_->pool(), state_->stream()),
            "cudaMallocFromPoolAsync (ones for a pattern)");
      fill_ones<V>(ones_, A.nnz);
      values = ones_;
    }
    bound_values_ = A.values;
    const cusparseIndexType_t it = sizeof(I) == 8 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
    check(cusparseCreateCsr(&a_, A.rows, A.cols, A.nnz, const_cast<void*>(A.rowptr), const_cast<void*>(A.colind),
                            const_cast<void*>(values), it, it, CUSPARSE_INDEX_BASE_ZERO, data_type<V>()),
          "cusparseCreateCsr");
  }
  // A's values of this call (the structure is the plan's key, the values are not).
  void bind_values(const sparseport_csr& A) {
    if (A.values == nullptr || A.values == bound_values_) return;
    check(cusparseCsrSetPointers(a_, const_cast<void*>(A.rowptr), const_cast<void*>(A.colind),
                                 const_cast<void*>(A.values)),
          "cusparseCsrSetPointers");
    bound_values_ = A.values;
  }
  template <class V>
  static cudaDataType data_type() {
    if constexpr (std::is_same_v<V, __half>)
      return CUDA_R_16F;
    else if constexpr (std::is_same_v<V, __nv_bfloat16>)
      return CUDA_R_16BF;
    else
      return std::is_same_v<V, double> ? CUDA_R_64F : CUDA_R_32F;
  }
  // The compute type (and the type of alpha and beta): float32 for 16-bit values.
  template <class V>
  static cudaDataType compute_type() {
    return data_type<acc_t<V>>();
  }

  cusparseSpMatDescr_t a_ = nullptr;
  void* buffer_ = nullptr;

 private:
  const State* state_;
  void* ones_ = nullptr;
  const void* bound_values_ = nullptr;

  // n ones of V (dense_fill for float and double; 16-bit values by ones_kernel).
  template <class V>
  void fill_ones(void* p, int64_t n);
};

class SpmmVendorPlan : public VendorPlan {
 public:
  using VendorPlan::VendorPlan;
  ~SpmmVendorPlan() override {
    if (b_ != nullptr) (void)cusparseDestroyDnMat(b_);
    if (c_ != nullptr) (void)cusparseDestroyDnMat(c_);
  }
  cusparseDnMatDescr_t b_ = nullptr, c_ = nullptr;
  cusparseSpMMAlg_t alg_ = CUSPARSE_SPMM_CSR_ALG2;
};

class SpmvVendorPlan : public VendorPlan {
 public:
  using VendorPlan::VendorPlan;
  ~SpmvVendorPlan() override {
    if (x_ != nullptr) (void)cusparseDestroyDnVec(x_);
    if (y_ != nullptr) (void)cusparseDestroyDnVec(y_);
  }
  cusparseDnVecDescr_t x_ = nullptr, y_ = nullptr;
  cusparseSpMVAlg_t alg_ = CUSPARSE_SPMV_CSR_ALG1;
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
const char* alg_name(cusparseSpMVAlg_t alg) { return alg == CUSPARSE_SPMV_CSR_ALG2 ? "ALG2" : "ALG1"; }

// Clears *ok (set non-zero before) where a row's columns are not strictly increasing: a warp a row, each lane comparing
// entries with their predecessors.
template <class I>
__global__ void __launch_bounds__(kBlock) canonical_kernel(const I* rowptr, const I* colind, int64_t rows, int* ok) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < rows; i += warps) {
    const int64_t e0 = rowptr[i], e1 = rowptr[i + 1];
    bool descent = false;
    for (int64_t e = e0 + 1 + lane; e < e1; e += 32) descent |= colind[e] <= colind[e - 1];
    if (__any_sync(0xffffffffu, descent) && lane == 0) *ok = 0;
  }
}

// Columns strictly increasing within every row (so no repeats), checked on the GPU once per plan.
// (On the host it read A back: 500 MB of colind for a products-sized graph, ~0.3 s of the 0.5-0.7 s
// a first call of this variant took there, H100 2026-12-07, benchmarks/results/2026-12-07-s39.md.)
template <class I>
bool canonical(const State& s, const sparseport_csr& a) {
  if (a.rows == 0 || a.nnz == 0) return true;
  Scratch flag(s, sizeof(int));
  check(cudaMemsetAsync(flag.get(), 1, sizeof(int), s.stream()), "cudaMemsetAsync (spmm.cusparse canonical check)");
  const unsigned grid = std::min<unsigned>(blocks_for(a.rows * 32), static_cast<unsigned>(s.info().sms) * 16u);
  canonical_kernel<I><<<grid, kBlock, 0, s.stream()>>>(static_cast<const I*>(a.rowptr), static_cast<const I*>(a.colind),
                                                        a.rows, static_cast<int*>(flag.get()));
  check_launch("spmm.cusparse (canonical check)");
  int ok = 0;
  check(cudaMemcpyAsync(&ok, flag.get(), sizeof(int), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (spmm.cusparse canonical check)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (spmm.cusparse canonical check)");
  return ok != 0;
}

template <class V>
__global__ void __launch_bounds__(kBlock) ones_kernel(V* p, int64_t n) {
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[k] = narrow<V>(1.0f);
}

template <class V>
void VendorPlan::fill_ones(void* p, int64_t n) {
  if constexpr (is16_v<V>) {
    ones_kernel<V><<<blocks_for(n), kBlock, 0, state_->stream()>>>(static_cast<V*>(p), n);
    check_launch("ones for a pattern");
  } else {
    dense_fill(*state_, p, n, 1, 1, std::is_same_v<V, double> ? SPARSEPORT_F64 : SPARSEPORT_F32, 1.0);
  }
}

// C = alpha * T + beta * C (beta == 0: C not read), in acc_t<V>, one rounding into V.
template <class V>
__global__ void __launch_bounds__(kBlock) epilogue_kernel(const V* t, V* c, int64_t rows, int64_t cols, int64_t ld,
                                                          acc_t<V> alpha, acc_t<V> beta) {
  using A = acc_t<V>;
  const int64_t total = rows * cols;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = (k / cols) * ld + k % cols;
    const A tv = ld_acc(t + at);
    st_acc(c + at, beta != A(0) ? alpha * tv + beta * ld_acc(c + at) : alpha * tv);
  }
}

// The fastest algorithm's best timed run and the runner-up's (-1: none ran).
struct Race {
  float best_ms = -1.0f, runner_up_ms = -1.0f;
};

// Times each algorithm of `algs` on the plan's descriptors and keeps the fastest in plan->alg_
// and plan->buffer_. bytes(alg, &n) sizes its buffer; start(alg, buffer) preprocesses where the
// algorithm wants it and runs it once (the warm-up); run(alg, buffer) is one timed call. The
// timings and the algorithms cuSPARSE refused are appended to the plan note's `report` and
// `refused`; throws Unsupported when every algorithm was refused.
template <class P, class Alg, class Bytes, class Start, class Run>
Race keep_fastest(const State& s, P& plan, std::initializer_list<Alg> algs, Bytes bytes, Start start, Run run,
                  const char* call, std::string& report, std::string& refused) {
  Events ev;
  Race race;
  float& best_ms = race.best_ms;
  for (Alg alg : algs) {
    size_t n = 0;
    // The start's wall time (buffer, preprocessing, the warm-up call), for the note: what a plan's
    // first call costs beyond its timed runs.
    const auto t0 = std::chrono::steady_clock::now();
    cusparseStatus_t st = bytes(alg, &n);
    void* buffer = nullptr;
    if (st == CUSPARSE_STATUS_SUCCESS && n > 0)
      check(cudaMallocFromPoolAsync(&buffer, n, s.pool(), s.stream()), "cudaMallocFromPoolAsync (cuSPARSE buffer)");
    if (st == CUSPARSE_STATUS_SUCCESS) st = start(alg, buffer);
    if (st == CUSPARSE_STATUS_SUCCESS)
      check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (cuSPARSE start)");
    const double start_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (st != CUSPARSE_STATUS_SUCCESS) {
      if (is_sticky(cudaPeekAtLastError())) raise(st, std::string(call) + " " + alg_name(alg));
      refused += std::string(refused.empty() ? "" : "; ") + alg_name(alg) + ": " + cusparseGetErrorName(st);
      if (buffer != nullptr) (void)cudaFreeAsync(buffer, s.stream());
      continue;
    }
    float ms = 0.0f, best_run = 0.0f, spent = 0.0f;
    for (int t = 0; t < kTrialRuns && spent < kTrialMs; ++t) {
      check(cudaEventRecord(ev.start, s.stream()), "cudaEventRecord");
      check(run(alg, buffer), call);
      check(cudaEventRecord(ev.stop, s.stream()), "cudaEventRecord");
      check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
      check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime");
      best_run = t == 0 ? ms : std::min(best_run, ms);
      spent += ms;
    }
    char line[128];
    const bool first = report.empty() || report.back() == ' ';
    std::snprintf(line, sizeof line, "%s%s %.4f ms (start %.1f ms, %.1f MB buffer)", first ? "" : ", ", alg_name(alg),
                  best_run, start_ms, static_cast<double>(n) / 1e6);
    report += line;
    if (best_ms < 0.0f || best_run < best_ms) {
      if (plan.buffer_ != nullptr) (void)cudaFreeAsync(plan.buffer_, s.stream());
      plan.buffer_ = buffer;
      plan.alg_ = alg;
      if (best_ms >= 0.0f) race.runner_up_ms = best_ms;
      best_ms = best_run;
    } else {
      if (race.runner_up_ms < 0.0f || best_run < race.runner_up_ms) race.runner_up_ms = best_run;
      if (buffer != nullptr) (void)cudaFreeAsync(buffer, s.stream());
    }
  }
  if (best_ms < 0.0f)
    throw Unsupported(std::string(call) + " runs none of its CSR algorithms on this input (" + refused + ")");
  return race;
}

// ---- the sample of a large A (kSampleNnz) ---------------------------------------------------------

// Block b of the sample is A's rows [first(b), first(b) + len): first(b) = b * rows / blocks.
__host__ __device__ inline int64_t sample_first(int b, int64_t rows) { return b * rows / kSampleBlocks; }

// meta[b] = the sample's first entry of block b (meta[kSampleBlocks]: the sample's nnz) and
// meta[kSampleBlocks + 1 + b] = A's first entry of block b. One thread: 16 blocks.
template <class I>
__global__ void sample_meta_kernel(const I* rowptr, int64_t rows, int64_t len, int64_t* meta) {
  int64_t at = 0;
  for (int b = 0; b < kSampleBlocks; ++b) {
    const int64_t first = sample_first(b, rows);
    meta[b] = at;
    meta[kSampleBlocks + 1 + b] = rowptr[first];
    at += static_cast<int64_t>(rowptr[first + len]) - static_cast<int64_t>(rowptr[first]);
  }
  meta[kSampleBlocks] = at;
}

// The sample's rowptr (kSampleBlocks * len + 1 entries) and colind.
template <class I>
__global__ void __launch_bounds__(kBlock) sample_rowptr_kernel(const I* rowptr, int64_t rows, int64_t len,
                                                               const int64_t* meta, I* out) {
  const int64_t n = kSampleBlocks * len;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k <= n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int b = static_cast<int>(k == n ? kSampleBlocks - 1 : k / len);
    const int64_t row = sample_first(b, rows) + (k - b * len);
    out[k] = static_cast<I>(meta[b] + static_cast<int64_t>(rowptr[row]) - meta[kSampleBlocks + 1 + b]);
  }
}

template <class I>
__global__ void __launch_bounds__(kBlock) sample_colind_kernel(const I* colind, const int64_t* meta, I* out) {
  __shared__ int64_t m[2 * kSampleBlocks + 1];
  if (threadIdx.x < 2 * kSampleBlocks + 1) m[threadIdx.x] = meta[threadIdx.x];
  __syncthreads();
  const int64_t n = m[kSampleBlocks];
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int b = 0;
    while (b + 1 < kSampleBlocks && m[b + 1] <= e) ++b;
    out[e] = colind[m[kSampleBlocks + 1 + b] + (e - m[b])];
  }
}

// The sample's structure, on the GPU (one host wait, for its size).
template <class I>
struct SampleCsr {
  Scratch rowptr, colind;
  sparseport_csr csr{};
};

template <class I>
SampleCsr<I> sample_csr(const State& s, const sparseport_csr& A) {
  const int64_t len = std::max<int64_t>(1, A.rows / (kSampleBlocks * kSampleShare));
  SampleCsr<I> out;
  Scratch meta(s, (2 * kSampleBlocks + 1) * sizeof(int64_t));
  const I* rowptr = static_cast<const I*>(A.rowptr);
  sample_meta_kernel<I><<<1, 1, 0, s.stream()>>>(rowptr, A.rows, len, meta.as<int64_t>());
  check_launch("spmm.cusparse (sample)");
  int64_t nnz = 0;
  check(cudaMemcpyAsync(&nnz, meta.as<int64_t>() + kSampleBlocks, sizeof nnz, cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (spmm.cusparse sample size)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (spmm.cusparse sample size)");
  const int64_t rows = kSampleBlocks * len;
  out.rowptr = Scratch(s, static_cast<size_t>(rows + 1) * sizeof(I));
  out.colind = Scratch(s, static_cast<size_t>(std::max<int64_t>(nnz, 1)) * sizeof(I));
  sample_rowptr_kernel<I><<<blocks_for(rows + 1), kBlock, 0, s.stream()>>>(rowptr, A.rows, len, meta.as<int64_t>(),
                                                                          out.rowptr.template as<I>());
  check_launch("spmm.cusparse (sample rowptr)");
  if (nnz > 0) {
    sample_colind_kernel<I><<<blocks_for(nnz), kBlock, 0, s.stream()>>>(static_cast<const I*>(A.colind),
                                                                       meta.as<int64_t>(), out.colind.template as<I>());
    check_launch("spmm.cusparse (sample colind)");
  }
  out.csr = {rows, A.cols, nnz, out.rowptr.get(), out.colind.get(), nullptr, A.index_type, A.value_type};
  return out;
}

bool sample_enabled() {
  const char* v = std::getenv("SPARSEPORT_CUSPARSE_SAMPLE");
  return v == nullptr || std::string(v) != "0";
}

// The plan's note (SPARSEPORT_LOG=cuda, diagnostics): what was timed and what runs.
template <class Alg>
void announce(const State& s, const char* variant, const sparseport_csr& A, int64_t F, const std::string& report,
              Alg chosen, const std::string& refused) {
  char head[192];
  std::snprintf(head, sizeof head, "%s plan for %lldx%lld, nnz %lld, F %lld: ", variant, static_cast<long long>(A.rows),
                static_cast<long long>(A.cols), static_cast<long long>(A.nnz), static_cast<long long>(F));
  std::string note = head + report + " -> " + alg_name(chosen);
  if (!refused.empty()) note += " (refused: " + refused + ")";
  if (log_enabled()) std::fprintf(stderr, "sparseport cuda: %s\n", note.c_str());
  s.set_note(note);
}

// The key of a plan over A's structure and the dense operands' shapes.
std::string plan_key(const char* variant, const sparseport_spmm_args& a, size_t isz, size_t vsz) {
  return std::string(variant) + "|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
         std::to_string(reinterpret_cast<uintptr_t>(a.a.colind)) + "|" + std::to_string(a.a.rows) + "|" +
         std::to_string(a.a.cols) + "|" + std::to_string(a.a.nnz) + "|" + std::to_string(a.b.cols) + "|" +
         std::to_string(a.b.ld) + "|" + std::to_string(a.c.ld) + "|" + std::to_string(isz) + "|" +
         std::to_string(vsz) + "|" + std::to_string(a.c.value_type) + "|" +  // f16 and bf16 share vsz
         (a.a.values == nullptr ? "pattern" : "values");
}

// ALG2 against ALG3 on `plan`'s descriptors (ALG3 only where A is canonical), the faster kept.
template <class V>
Race race_spmm(const State& s, SpmmVendorPlan& plan, bool alg3_ok, std::string& report, std::string& refused) {
  const cudaDataType ct = VendorPlan::compute_type<V>();
  const acc_t<V> one = 1, zero = 0;
  const cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const auto bytes = [&](cusparseSpMMAlg_t alg, size_t* n) {
    return cusparseSpMM_bufferSize(s.sparse(), N, N, &one, plan.a_, plan.b_, &zero, plan.c_, ct, alg, n);
  };
  const auto run = [&](cusparseSpMMAlg_t alg, void* buffer) {
    return cusparseSpMM(s.sparse(), N, N, &one, plan.a_, plan.b_, &zero, plan.c_, ct, alg, buffer);
  };
  const auto start = [&](cusparseSpMMAlg_t alg, void* buffer) {
    cusparseStatus_t st = CUSPARSE_STATUS_SUCCESS;
    if (alg == CUSPARSE_SPMM_CSR_ALG3)
      st = cusparseSpMM_preprocess(s.sparse(), N, N, &one, plan.a_, plan.b_, &zero, plan.c_, ct, alg, buffer);
    return st == CUSPARSE_STATUS_SUCCESS ? run(alg, buffer) : st;
  };
  if (alg3_ok)
    return keep_fastest(s, plan, {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_CSR_ALG3}, bytes, start, run, "cusparseSpMM",
                        report, refused);
  return keep_fastest(s, plan, {CUSPARSE_SPMM_CSR_ALG2}, bytes, start, run, "cusparseSpMM", report, refused);
}

// The sample's race (kSampleNnz): where its loser took kSampleMargin x the winner's time or more,
// `plan` takes the winner with its buffer sized (and ALG3 preprocessed) at full size, no call run,
// and this returns true; else false (the race runs again at full size).
template <class I, class V>
bool decide_on_sample(const State& s, SpmmVendorPlan& plan, const sparseport_spmm_args& args, std::string& report,
                      std::string& refused) {
  const auto t0 = std::chrono::steady_clock::now();
  const SampleCsr<I> sample = sample_csr<I>(s, args.a);
  SpmmVendorPlan trial(s);
  trial.describe<I, V>(sample.csr);  // a pattern of ones: a timing does not depend on the values
  const cudaDataType vt = VendorPlan::data_type<V>();
  Scratch c(s, static_cast<size_t>(sample.csr.rows * args.c.ld) * sizeof(V));
  check(cusparseCreateDnMat(&trial.b_, args.b.rows, args.b.cols, args.b.ld, const_cast<void*>(args.b.data), vt,
                            CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (B, sample)");
  check(cusparseCreateDnMat(&trial.c_, sample.csr.rows, args.c.cols, args.c.ld, c.get(), vt, CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (C, sample)");
  std::string raced;
  const Race r = race_spmm<V>(s, trial, true, raced, refused);
  // (A runner-up of -1: cuSPARSE refused the other algorithm for these types, at any size.)
  const bool decided = r.runner_up_ms < 0.0f || r.runner_up_ms >= kSampleMargin * r.best_ms;
  char head[160];
  std::snprintf(head, sizeof head, "sample of %lld rows (nnz %lld) %.1f ms: ", static_cast<long long>(sample.csr.rows),
                static_cast<long long>(sample.csr.nnz),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  report += head + raced + (decided ? "; decided by the sample" : "; too close, raced at full size: ");
  if (!decided) return false;
  // The winner at full size: its buffer, and ALG3's preprocessing (no warm-up: cuSPARSE took the
  // algorithm for these types on the sample, and the plan's first call is the caller's).
  const auto t1 = std::chrono::steady_clock::now();
  const cudaDataType ct = VendorPlan::compute_type<V>();
  const acc_t<V> one = 1, zero = 0;
  const cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  plan.alg_ = trial.alg_;
  size_t n = 0;
  cusparseStatus_t st = cusparseSpMM_bufferSize(s.sparse(), N, N, &one, plan.a_, plan.b_, &zero, plan.c_, ct, plan.alg_, &n);
  if (st == CUSPARSE_STATUS_SUCCESS && n > 0)
    check(cudaMallocFromPoolAsync(&plan.buffer_, n, s.pool(), s.stream()), "cudaMallocFromPoolAsync (cuSPARSE buffer)");
  if (st == CUSPARSE_STATUS_SUCCESS && plan.alg_ == CUSPARSE_SPMM_CSR_ALG3)
    st = cusparseSpMM_preprocess(s.sparse(), N, N, &one, plan.a_, plan.b_, &zero, plan.c_, ct, plan.alg_, plan.buffer_);
  if (st != CUSPARSE_STATUS_SUCCESS) raise(st, std::string("cusparseSpMM ") + alg_name(plan.alg_) + " (full size)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (cuSPARSE start)");
  char tail[96];
  std::snprintf(tail, sizeof tail, "; full-size start %.1f ms, %.1f MB buffer",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count(),
                static_cast<double>(n) / 1e6);
  report += tail;
  return true;
}

template <class I, class V>
std::shared_ptr<SpmmVendorPlan> build_spmm_plan(const State& s, const sparseport_spmm_args& args) {
  const sparseport_csr& A = args.a;
  const cudaDataType vt = VendorPlan::data_type<V>();
  auto plan = std::make_shared<SpmmVendorPlan>(s);
  plan->describe<I, V>(A);
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
  check(cusparseCreateDnMat(&plan->c_, args.c.rows, args.c.cols, args.c.ld, target, vt, CUSPARSE_ORDER_ROW),
        "cusparseCreateDnMat (C)");
  std::string report, refused;
  const auto tc = std::chrono::steady_clock::now();
  const bool alg3_ok = canonical<I>(s, A);
  char checked[64];
  std::snprintf(checked, sizeof checked, "canonical check %.2f ms; ",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tc).count());
  report = checked;
  if (!alg3_ok) refused = "ALG3: not tried, columns not strictly increasing in every row";
  // A sample's rows are A's rows, so canonical where A is. From kSampleBlocks * kSampleShare rows
  // its runs do not overlap, so it holds at most A's entries (no index overflow in a few giant rows).
  const bool sampled = alg3_ok && A.nnz >= kSampleNnz && A.rows >= kSampleBlocks * kSampleShare && sample_enabled() &&
                       decide_on_sample<I, V>(s, *plan, args, report, refused);
  if (!sampled) race_spmm<V>(s, *plan, alg3_ok, report, refused);
  announce(s, "spmm.cusparse", A, args.b.cols, report, plan->alg_, refused);
  plan->watch(A.rowptr, static_cast<size_t>(A.rows + 1) * sizeof(I));
  plan->watch(A.colind, static_cast<size_t>(A.nnz) * sizeof(I));
  return plan;
}

template <class I, class V>
std::shared_ptr<SpmvVendorPlan> build_spmv_plan(const State& s, const sparseport_spmm_args& args) {
  const sparseport_csr& A = args.a;
  const cudaDataType vt = VendorPlan::data_type<V>();
  const cudaDataType ct = VendorPlan::compute_type<V>();
  auto plan = std::make_shared<SpmvVendorPlan>(s);
  plan->describe<I, V>(A);
  check(cusparseCreateDnVec(&plan->x_, args.b.rows, const_cast<void*>(args.b.data), vt), "cusparseCreateDnVec (x)");
  // Trials write a vector of their own: y keeps its contents until the call proper.
  Scratch trial_y(s, static_cast<size_t>(args.c.rows) * sizeof(V));
  check(cusparseCreateDnVec(&plan->y_, args.c.rows, trial_y.get(), vt), "cusparseCreateDnVec (y)");
  const acc_t<V> one = 1, zero = 0;
  const cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const auto bytes = [&](cusparseSpMVAlg_t alg, size_t* n) {
    return cusparseSpMV_bufferSize(s.sparse(), N, &one, plan->a_, plan->x_, &zero, plan->y_, ct, alg, n);
  };
  const auto run = [&](cusparseSpMVAlg_t alg, void* buffer) {
    return cusparseSpMV(s.sparse(), N, &one, plan->a_, plan->x_, &zero, plan->y_, ct, alg, buffer);
  };
  std::string report, refused;
  keep_fastest(s, *plan, {CUSPARSE_SPMV_CSR_ALG1, CUSPARSE_SPMV_CSR_ALG2}, bytes, run, run, "cusparseSpMV", report,
               refused);
  announce(s, "spmm.cusparse_spmv", A, 1, report, plan->alg_, refused);
  plan->watch(A.rowptr, static_cast<size_t>(A.rows + 1) * sizeof(I));
  plan->watch(A.colind, static_cast<size_t>(A.nnz) * sizeof(I));
  return plan;
}

// The vendor plan of `key`, built on first use.
template <class P, class Build>
std::shared_ptr<P> vendor_plan(const State& s, const std::string& key, Build build) {
  std::shared_ptr<P> plan = std::static_pointer_cast<P>(s.plans().find(key));
  if (plan == nullptr) {
    plan = build();
    s.plans().insert(key, plan);
  }
  return plan;
}

}  // namespace

void spmm_cusparse(const State& s, const sparseport_spmm_args& a) {
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    using A = acc_t<V>;
    const auto plan = vendor_plan<SpmmVendorPlan>(s, plan_key("spmm.cusparse", a, sizeof(I), sizeof(V)),
                                                  [&] { return build_spmm_plan<I, V>(s, a); });
    plan->bind_values(a.a);
    check(cusparseDnMatSetValues(plan->b_, const_cast<void*>(a.b.data)), "cusparseDnMatSetValues (B)");
    // cuSPARSE runs as planned (alpha 1, beta 0); other scalars are applied by the epilogue, except
    // for 16-bit values under ALG2 (see the top of the file): cuSPARSE applies them, one rounding.
    const bool direct = is16_v<V> && plan->alg_ == CUSPARSE_SPMM_CSR_ALG2;
    const bool plain = (a.alpha == 1.0 && a.beta == 0.0) || direct;
    Scratch t;
    if (!plain) t = Scratch(s, static_cast<size_t>(a.c.rows * a.c.ld) * sizeof(V));
    check(cusparseDnMatSetValues(plan->c_, plain ? a.c.data : t.get()), "cusparseDnMatSetValues (C)");
    const A one = 1, zero = 0;
    const A alpha = direct ? static_cast<A>(a.alpha) : one, beta = direct ? static_cast<A>(a.beta) : zero;
    check(cusparseSpMM(s.sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                       plan->a_, plan->b_, &beta, plan->c_, VendorPlan::compute_type<V>(), plan->alg_, plan->buffer_),
          "cusparseSpMM");
    if (!plain) {
      epilogue_kernel<V><<<blocks_for(a.c.rows * a.c.cols), kBlock, 0, s.stream()>>>(
          t.as<V>(), static_cast<V*>(a.c.data), a.c.rows, a.c.cols, a.c.ld, static_cast<A>(a.alpha),
          static_cast<A>(a.beta));
      check_launch("spmm.cusparse (alpha, beta)");
    }
  });
}

void spmm_cusparse_spmv(const State& s, const sparseport_spmm_args& a) {
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const auto plan = vendor_plan<SpmvVendorPlan>(s, plan_key("spmm.cusparse_spmv", a, sizeof(I), sizeof(V)),
                                                  [&] { return build_spmv_plan<I, V>(s, a); });
    plan->bind_values(a.a);
    check(cusparseDnVecSetValues(plan->x_, const_cast<void*>(a.b.data)), "cusparseDnVecSetValues (x)");
    check(cusparseDnVecSetValues(plan->y_, a.c.data), "cusparseDnVecSetValues (y)");
    // beta == 0: cuSPARSE does not read y (NaN in it stays out; tests/conformance/spmv.cpp checks it).
    const acc_t<V> alpha = static_cast<acc_t<V>>(a.alpha), beta = static_cast<acc_t<V>>(a.beta);
    check(cusparseSpMV(s.sparse(), CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, plan->a_, plan->x_, &beta, plan->y_,
                       VendorPlan::compute_type<V>(), plan->alg_, plan->buffer_),
          "cusparseSpMV");
  });
}

}  // namespace sparseport::cuda
