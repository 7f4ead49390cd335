// SPDX-License-Identifier: Apache-2.0
// sddmm.nnz_balanced: the entries are the unit of work, whatever the row lengths. A group of G
// lanes computes one dot product (each lane VEC values per step, 16-byte vectors where F and the
// alignment allow), a warp takes NG * U consecutive entries per step, so every lane has U
// independent dot products, 2 * U * CPL loads, in flight before the first shuffle.
//
// Each entry's row comes from a row index (COO rows) built once per matrix and kept in the plan
// cache: the kernel then reads rowind[e] and colind[e] side by side, coalesced, with no search.
// The first version walked rows from a per-chunk binary search, one chunk of >= 256 entries per
// warp: on small matrices that left the GPU nearly idle (bcsstk13, 84 k entries at F = 32: 41 us
// against cuSPARSE's 10.5 us, H100, benchmarks/results/2026-11-22-h100.md).
#include <string>

#include "kernels/cuda/sddmm.cuh"

SPARSEPORT_CUDA_MODULE(1)

namespace sparseport::cuda {
namespace {

// The row of every entry (nnz values of I), a function of rowptr only.
class RowIndexPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit RowIndexPlan(const State& s) : state_(&s) {}
  ~RowIndexPlan() override {
    if (rows_ != nullptr) (void)cudaFreeAsync(rows_, state_->stream());
  }
  void* rows_ = nullptr;

 private:
  const State* state_;
};

// A warp per row, its lanes striding over the row's entries: coalesced stores, and a mega-row
// costs one warp a loop of deg / 32 stores, once per matrix.
template <class I>
__global__ void __launch_bounds__(kBlock) row_index_kernel(const I* rowptr, int64_t m, I* rows) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t r = warp; r < m; r += nwarps) {
    const int64_t e1 = rowptr[r + 1];
    for (int64_t e = rowptr[r] + lane; e < e1; e += 32) rows[e] = static_cast<I>(r);
  }
}

template <class I>
const I* row_index(const State& s, const sparseport_csr& a) {
  const std::string key = "sddmm.rowind|" + std::to_string(reinterpret_cast<uintptr_t>(a.rowptr)) + "|" +
                          std::to_string(a.rows) + "|" + std::to_string(a.nnz) + "|" + std::to_string(sizeof(I));
  std::shared_ptr<RowIndexPlan> plan = std::static_pointer_cast<RowIndexPlan>(s.plans().find(key));
  if (plan == nullptr) {
    plan = std::make_shared<RowIndexPlan>(s);
    check(cudaMallocFromPoolAsync(&plan->rows_, static_cast<size_t>(a.nnz) * sizeof(I), s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (sddmm.nnz_balanced row index)");
    row_index_kernel<I><<<blocks_for(a.rows * 32), kBlock, 0, s.stream()>>>(static_cast<const I*>(a.rowptr), a.rows,
                                                                          static_cast<I*>(plan->rows_));
    check_launch("sddmm.nnz_balanced (row index)");
    plan->watch(a.rowptr, static_cast<size_t>(a.rows + 1) * sizeof(I));
    s.plans().insert(key, plan);
  }
  return static_cast<const I*>(plan->rows_);
}

// CPL > 0: F == CPL * G * VEC exactly, every lane holds CPL vectors of each operand (fully
// unrolled). CPL == 0: any F, walked in steps of G * VEC with a bound check.
template <class I, class V, int VEC, int G, int CPL, int U>
__global__ void __launch_bounds__(kBlock) sddmm_nnz_kernel(SddmmParams<I, V> p, const I* __restrict__ rowind) {
  constexpr int NG = 32 / G;
  constexpr int EW = NG * U;  // entries per warp and step
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int sub = lane & (G - 1), grp = lane / G;
  const unsigned mask = group_mask<G>();
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const I* __restrict__ colind = p.colind;
  for (int64_t base = warp * EW; base < p.nnz; base += nwarps * EW) {
    int64_t r[U], c[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t e = base + int64_t{u} * NG + grp;
      ok[u] = e < p.nnz;
      r[u] = ok[u] ? static_cast<int64_t>(rowind[e]) : 0;
      c[u] = ok[u] ? static_cast<int64_t>(colind[e]) : 0;
    }
    acc_t<V> dot[U];
#pragma unroll
    for (int u = 0; u < U; ++u) dot[u] = acc_t<V>(0);
    if constexpr (CPL > 0) {
      Packed<V, VEC> xv[U][CPL], yv[U][CPL];  // as stored: widened in dot_acc (values16.cuh says why)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) {
#pragma unroll
          for (int k = 0; k < CPL; ++k) {
            const int64_t f = (int64_t{k} * G + sub) * VEC;
            xv[u][k] = pload<V, VEC>(p.x + r[u] * p.ldx + f);
            yv[u][k] = pload<V, VEC>(p.y + c[u] * p.ldy + f);
          }
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) {
#pragma unroll
          for (int k = 0; k < CPL; ++k) dot[u] = dot_acc<V, VEC>(dot[u], xv[u][k], yv[u][k]);
        }
    } else {
      sddmm_walk_dots<I, V, VEC, G, U>(p, r, c, ok, sub, dot);
    }
    sddmm_store<I, V, G, U>(p, base + grp, NG, ok, sub, mask, dot);
  }
}

template <class I, class V, int VEC, int G, int CPL>
void launch(const State& s, const sparseport_sddmm_args& a) {
  // About 16 loads in flight per lane: U entries x CPL vectors x 2 operands.
  constexpr int U = CPL >= 8 ? 1 : (CPL > 0 ? 8 / CPL : 4);
  constexpr int64_t kEntriesPerWarp = 32 / G * U;
  const I* rowind = row_index<I>(s, a.a);
  const int64_t warps = ceil_div(a.a.nnz, kEntriesPerWarp);
  sddmm_nnz_kernel<I, V, VEC, G, CPL, U><<<blocks_for(warps * 32), kBlock, 0, s.stream()>>>(sddmm_params<I, V>(a),
                                                                                            rowind);
  check_launch("sddmm.nnz_balanced");
}

// 16-byte vectors, G = 8 lanes per dot product (128 contiguous bytes of each row per step, a whole
// cache line) or fewer where F is narrower; F = CPL * G * VEC picks the unrolled kernel.
template <class I, class V>
void launch_vec(const State& s, const sparseport_sddmm_args& a) {
  constexpr int VEC = 16 / static_cast<int>(sizeof(V));
  const int64_t F = a.x.cols;
  const int64_t vecs = F / VEC;  // F % VEC == 0 here
  // 16-bit values: at most 4 vectors a lane unrolled (8 would be 64 words of X and Y a lane).
  constexpr bool k16 = is16_v<V>;
  if (vecs >= 8) {
    switch (vecs == 8 ? 1 : vecs == 16 ? 2 : vecs == 32 ? 4 : (vecs == 64 && !k16) ? 8 : 0) {
      case 1: launch<I, V, VEC, 8, 1>(s, a); return;
      case 2: launch<I, V, VEC, 8, 2>(s, a); return;
      case 4: launch<I, V, VEC, 8, 4>(s, a); return;
      case 8:
        if constexpr (!k16) {
          launch<I, V, VEC, 8, 8>(s, a);
          return;
        }
        [[fallthrough]];
      default: launch<I, V, VEC, 8, 0>(s, a); return;
    }
  }
  if (vecs > 2)
    launch<I, V, VEC, 4, 0>(s, a);
  else if (vecs == 2)
    launch<I, V, VEC, 2, 1>(s, a);
  else
    launch<I, V, VEC, 1, 1>(s, a);
}

}  // namespace

void sddmm_nnz_balanced(const State& s, const sparseport_sddmm_args& a) {
  // 16-bit values: 8 a vector, so F % 8 and ld % 8 (vec16_rows).
  const bool vec = is16_tag(a.a.value_type)
                       ? vec16_rows(a.x.data, a.x.ld, a.x.cols, 2) && vec16_rows(a.y.data, a.y.ld, a.y.cols, 2)
                       : vec4_rows(a.x.data, a.x.ld, a.x.cols) && vec4_rows(a.y.data, a.y.ld, a.y.cols);
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    // vec4_rows (F % 4, 16-byte rows) also makes double pairs legal (F % 2, 16-byte rows).
    if (vec)
      launch_vec<I, V>(s, a);
    else if (a.x.cols <= 8)
      launch<I, V, 1, 8, 0>(s, a);
    else
      launch<I, V, 1, 32, 0>(s, a);
  });
}

}  // namespace sparseport::cuda
