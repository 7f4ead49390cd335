// SPDX-License-Identifier: Apache-2.0
// spmm.merge_path (F <= 16): the same work per warp whatever the row lengths, without atomics.
// The merge path of CSR (Merrill & Garland, SC'16: row ends merged with the entries, m + nnz
// items) is cut into chunks of L items, one warp each; a cut that falls in a row of fewer than L
// entries moves back to the row's start, so only rows longer than a chunk are ever split between
// warps (a chunk then holds at most 2L - 1 items). Inside a chunk each lane walks an equal share of
// the items, folding entries (all F columns of a product in registers, U gathers in flight) and
// writing every row it walks whole. The pieces of rows that cross lanes are combined by a
// segmented scan over the warp's lanes (shuffles, in lane order); the pieces of a long row that
// crosses chunks are written to slots (its tail in each chunk it continues from, its head in the
// chunk where it ends), and a second kernel folds them in chunk order, a warp per such row, and
// finishes it. Every combination has a fixed order, so the same bits every run.
//
// The chunk boundaries and the slot of each piece depend on rowptr and L only: computed once per
// matrix (a search kernel, one copy back, a host pass over the chunks) and kept in the plan cache
// (merge_plan, here; spmm_merge_plan.cuh). F > 16 uses the same plan with lanes across F instead:
// spmm_merge_path_wide.cu, to which spmm_merge_path hands such calls.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/spmm_merge_plan.cuh"
#include "kernels/cuda/spmm_small_f.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

// Path items per chunk: 8 per lane at F <= 2, where an item costs one gather, 4 per lane above.
// A first choice, not yet tuned on a GPU.
template <int FT>
constexpr int64_t kMergeItems = FT <= 2 ? 256 : 128;
// Warps per block: each keeps the rowptr window of its chunk (2L indices) in shared memory, at
// most 4 x 512 x 8 = 16 KB a block.
constexpr int kMergeWarps = 4;

// A cut of the path: `row` rows ended and `nz` entries taken before it; row_start = rowptr[row].
struct Boundary {
  int64_t row, nz, row_start;
};

template <class I>
__global__ void __launch_bounds__(kBlock)
    bounds_kernel(const I* rowptr, int64_t m, int64_t nnz, int64_t items, int64_t n, Boundary* out) {
  const int64_t total = m + nnz;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = k * items < total ? k * items : total;
    int64_t lo = d > nnz ? d - nnz : 0, hi = d < m ? d : m;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<int64_t>(rowptr[mid + 1]) <= d - mid - 1)
        lo = mid + 1;
      else
        hi = mid;
    }
    Boundary b{lo, d - lo, lo < m ? static_cast<int64_t>(rowptr[lo]) : nnz};
    // A row of fewer than `items` entries is kept whole: the cut moves back to its start.
    if (lo < m && static_cast<int64_t>(rowptr[lo + 1]) - b.row_start < items) b.nz = b.row_start;
    out[k] = b;
  }
}

template <class T>
T* upload_plan_array(const State& s, const std::vector<T>& host, const char* what) {
  if (host.empty()) return nullptr;
  T* d = nullptr;
  check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&d), host.size() * sizeof(T), s.pool(), s.stream()), what);
  check(cudaMemcpyAsync(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, s.stream()), what);
  return d;
}

template <class I>
std::shared_ptr<MergePlan> build_plan(const State& s, const sparseport_csr& a, int64_t items) {
  const int64_t nchunks = ceil_div(a.rows + a.nnz, items);
  std::vector<Boundary> bounds(static_cast<size_t>(nchunks + 1));
  {
    Scratch d(s, bounds.size() * sizeof(Boundary));
    bounds_kernel<I><<<blocks_for(nchunks + 1), kBlock, 0, s.stream()>>>(static_cast<const I*>(a.rowptr), a.rows,
                                                                         a.nnz, items, nchunks + 1, d.as<Boundary>());
    check_launch("spmm.merge_path (chunk boundaries)");
    check(cudaMemcpyAsync(bounds.data(), d.get(), bounds.size() * sizeof(Boundary), cudaMemcpyDeviceToHost, s.stream()),
          "cudaMemcpyAsync (spmm.merge_path reads its boundaries)");
    check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (spmm.merge_path plan)");
  }
  std::vector<MergeChunk> chunks(bounds.size());
  std::vector<MergeFix> fixes;
  int64_t ntails = 0, open_row = -1, open_first = 0, open_count = 0;  // the tails of the row being crossed
  for (size_t k = 0; k < bounds.size(); ++k) {
    const Boundary& b0 = bounds[k];
    chunks[k] = {b0.row, b0.nz, -1, -1};
    if (k + 1 == bounds.size()) break;
    const Boundary& b1 = bounds[k + 1];
    if (b0.nz > b0.row_start && b0.row < b1.row) {  // a row begun before this chunk ends in it
      if (b0.row != open_row)
        throw PluginError("spmm.merge_path: chunk " + std::to_string(k) + " ends row " + std::to_string(b0.row) +
                          " but no earlier chunk left a piece of it (internal error)");
      chunks[k].head_slot = static_cast<int64_t>(fixes.size());
      fixes.push_back({b0.row, open_first, open_count, chunks[k].head_slot});
    }
    if (b1.row < a.rows && b1.nz > b1.row_start) {  // the row at the chunk's end continues
      chunks[k].tail_slot = ntails;
      if (b1.row != open_row) open_row = b1.row, open_first = ntails, open_count = 0;
      ++open_count;
      ++ntails;
    }
  }
  auto plan = std::make_shared<MergePlan>(s);
  plan->nchunks_ = nchunks;
  plan->nfix_ = static_cast<int64_t>(fixes.size());
  plan->ntails_ = ntails;
  for (const MergeFix& f : fixes) plan->max_tails_ = std::max(plan->max_tails_, f.tails);
  plan->chunks_ = upload_plan_array(s, chunks, "spmm.merge_path chunks");
  plan->fixes_ = upload_plan_array(s, fixes, "spmm.merge_path fix-ups");
  // The host vectors die here; the copies from pageable memory must be done with them.
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (spmm.merge_path plan)");
  plan->watch(a.rowptr, static_cast<size_t>(a.rows + 1) * sizeof(I));
  return plan;
}

// A row of `count` entries walked whole by one lane, or finished from its pieces: r into C.
template <class I, class V, int FT>
__device__ __forceinline__ void write_row(const SpmmParams<I, V>& p, int64_t row, int64_t count,
                                          const acc_t<V> (&r)[FT]) {
  V* crow = p.c + row * p.ldc;
  if (count == 0) {
#pragma unroll
    for (int j = 0; j < FT; ++j)
      if (j < p.F) st_acc(crow + j, p.fin.empty(ld_acc(crow + j)));
    return;
  }
  SmallShare whole;
  whole.held = FT;
  write_small<V, FT>(crow, p.F, p.fin, r, static_cast<acc_t<V>>(count), whole);
}

// A piece of a row (accumulator values, acc_t of the storage type) into its slot.
template <class A, int FT>
__device__ __forceinline__ void store_piece(A* slot, int64_t F, const A (&r)[FT]) {
#pragma unroll
  for (int j = 0; j < FT; ++j)
    if (j < F) slot[j] = r[j];
}

template <Red R, class I, class V, int FT>
__global__ void __launch_bounds__(kMergeWarps * 32)
    merge_path_kernel(SpmmParams<I, V> p, const MergeChunk* chunks, int64_t nchunks, bool vec, acc_t<V>* tails,
                      acc_t<V>* heads) {
  using A = acc_t<V>;
  constexpr int64_t L = kMergeItems<FT>;
  constexpr int U = kSmallInFlight<FT>;
  constexpr unsigned kAll = 0xffffffffu;
  __shared__ I window[kMergeWarps][2 * L];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  I* ends = window[warp];  // ends[i] = rowptr[first row + 1 + i]
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const V* __restrict__ b = p.b;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kMergeWarps + warp; k < nchunks;
       k += static_cast<int64_t>(gridDim.x) * kMergeWarps) {
    const MergeChunk c0 = chunks[k], c1 = chunks[k + 1];
    const int64_t rows = c1.row - c0.row, entries = c1.nz - c0.nz, items = rows + entries;
    __syncwarp();  // the previous chunk is done with the window
    for (int64_t i = lane; i < rows; i += 32) ends[i] = p.rowptr[c0.row + 1 + i];
    const int64_t first_start = c0.row < p.m ? static_cast<int64_t>(p.rowptr[c0.row]) : c0.nz;
    __syncwarp();
    const auto row_start = [&](int64_t r) -> int64_t {
      return r == c0.row ? first_start : static_cast<int64_t>(ends[r - c0.row - 1]);
    };
    const auto row_end = [&](int64_t r) -> int64_t { return static_cast<int64_t>(ends[r - c0.row]); };

    // The lane's share: the chunk's path items [items * lane / 32, items * (lane + 1) / 32), found
    // by a merge-path search in the window; its end is the next lane's start.
    const int64_t d = items * lane / 32;
    int64_t lo = d > entries ? d - entries : 0, hi = d < rows ? d : rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<int64_t>(ends[mid]) - c0.nz <= d - mid - 1)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t lr_end = __shfl_down_sync(kAll, lo, 1), lz_end = __shfl_down_sync(kAll, d - lo, 1);
    if (lane == 31) lr_end = rows, lz_end = entries;
    const int64_t first_row = c0.row + lo, z0 = c0.nz + d - lo, z1 = c0.nz + lz_end, row_stop = c0.row + lr_end;

    // The walk: rows the lane ends are written, except its first one when it began before the
    // lane (kept in `head` for the scan below); what is left in acc belongs to row_stop (tail).
    A acc[FT], head[FT];
    fill_identity<R>(acc);
    bool has_head = false;
    int64_t row = first_row;
    const auto close_row = [&] {
      if (row == first_row && row_start(row) < z0) {
#pragma unroll
        for (int j = 0; j < FT; ++j) head[j] = acc[j];
        has_head = true;
      } else {
        write_row(p, row, row_end(row) - row_start(row), acc);
      }
      fill_identity<R>(acc);
      ++row;
    };
    for (int64_t z = z0; z < z1; z += U) {
      I cc[U];
      A w[U];
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ok[u] = z + u < z1;
        cc[u] = ok[u] ? colind[z + u] : I(0);
        w[u] = ok[u] ? (val != nullptr ? widen(val[z + u]) : A(1)) : A(0);
      }
      A bv[U][FT];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) load_small<V, FT>(b + static_cast<int64_t>(cc[u]) * p.ldb, p.F, vec, bv[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (!ok[u]) continue;
        // An entry of row_stop (whose end is past the lane) closes nothing.
        while (row < row_stop && row_end(row) <= z + u) close_row();
        fold_small<R>(acc, w[u], bv[u]);
      }
    }
    while (row < row_stop) close_row();

    // Tails of one row over consecutive lanes, combined in lane order (a segmented inclusive scan
    // keyed by the tail's row): lane i - 1's result is the part of lane i's head before it.
    int64_t key = row_stop;
    for (int o = 1; o < 32; o *= 2) {
      const int64_t up_key = __shfl_up_sync(kAll, key, o);
      A up[FT];
#pragma unroll
      for (int j = 0; j < FT; ++j) up[j] = __shfl_up_sync(kAll, acc[j], o);
      if (lane >= o && up_key == key) {
#pragma unroll
        for (int j = 0; j < FT; ++j) acc[j] = red_combine<R>(up[j], acc[j]);
      }
    }
    A before[FT];
#pragma unroll
    for (int j = 0; j < FT; ++j) before[j] = __shfl_up_sync(kAll, acc[j], 1);
    if (has_head) {
      if (lane > 0) {
#pragma unroll
        for (int j = 0; j < FT; ++j) head[j] = red_combine<R>(before[j], head[j]);
      }
      if (first_row == c0.row && first_start < c0.nz)  // begun in an earlier chunk: the fix-up finishes it
        store_piece(heads + c0.head_slot * p.F, p.F, head);
      else
        write_row(p, first_row, row_end(first_row) - row_start(first_row), head);
    }
    if (lane == 31 && c0.tail_slot >= 0) store_piece(tails + c0.tail_slot * p.F, p.F, acc);
  }
}

// A warp per row that crosses chunks: its tails folded (lane-strided, then a fixed tree), then its
// head, then finished.
template <Red R, class I, class V, int FT>
__global__ void __launch_bounds__(kBlock)
    merge_fix_kernel(SpmmParams<I, V> p, const MergeFix* fixes, int64_t nfix, const acc_t<V>* tails,
                     const acc_t<V>* heads) {
  using A = acc_t<V>;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < nfix; i += nwarps) {
    const MergeFix fx = fixes[i];
    A acc[FT];
    fill_identity<R>(acc);
    for (int64_t t = lane; t < fx.tails; t += 32) {
      const A* piece = tails + (fx.first_tail + t) * p.F;
#pragma unroll
      for (int j = 0; j < FT; ++j)
        if (j < p.F) acc[j] = red_combine<R>(acc[j], piece[j]);
    }
    const SmallShare share = group_reduce_small<R>(acc, 5, lane, 0xffffffffu);
    if (!share.writer) continue;
    const A* head = heads + fx.head_slot * p.F;
#pragma unroll
    for (int j = 0; j < FT; ++j)
      if (j < share.held && share.first + j < p.F) acc[j] = red_combine<R>(acc[j], head[share.first + j]);
    const int64_t count = static_cast<int64_t>(p.rowptr[fx.row + 1]) - static_cast<int64_t>(p.rowptr[fx.row]);
    write_small<V, FT>(p.c + fx.row * p.ldc, p.F, p.fin, acc, static_cast<A>(count), share);
  }
}

}  // namespace

std::shared_ptr<MergePlan> merge_plan(const State& s, const sparseport_csr& a, int64_t items) {
  const size_t index_size = a.index_type == SPARSEPORT_I64 ? sizeof(int64_t) : sizeof(int32_t);
  const std::string key = "spmm.merge_path|" + std::to_string(reinterpret_cast<uintptr_t>(a.rowptr)) + "|" +
                          std::to_string(a.rows) + "|" + std::to_string(a.nnz) + "|" + std::to_string(index_size) +
                          "|" + std::to_string(items);
  std::shared_ptr<MergePlan> plan = std::static_pointer_cast<MergePlan>(s.plans().find(key));
  if (plan == nullptr) {
    dispatch_index(a.index_type, [&](auto i) { plan = build_plan<decltype(i)>(s, a, items); });
    s.plans().insert(key, plan);
  }
  return plan;
}

void spmm_merge_path(const State& s, const sparseport_spmm_args& a) {
  if (a.b.cols > kSmallFMaxF) {
    spmm_merge_path_wide(s, a);
    return;
  }
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    using A = acc_t<V>;
    const SpmmParams<I, V> p = spmm_params<I, V>(a);
    dispatch_small_f(p.F, [&](auto ft) {
      constexpr int FT = decltype(ft)::value;
      constexpr int64_t L = kMergeItems<FT>;
      const std::shared_ptr<MergePlan> plan = merge_plan(s, a.a, L);
      const bool vec = small_vector_rows<V, FT>(a.b.data, a.b.ld, p.F);
      Scratch tails, heads;
      if (plan->nfix_ > 0) {
        tails = Scratch(s, static_cast<size_t>(plan->ntails_ * p.F) * sizeof(A));
        heads = Scratch(s, static_cast<size_t>(plan->nfix_ * p.F) * sizeof(A));
      }
      const auto grid = static_cast<unsigned>(std::min<int64_t>(ceil_div(plan->nchunks_, kMergeWarps), 2147483647));
      dispatch_reduce(a.reduce, [&](auto r) {
        constexpr Red R = decltype(r)::value;
        merge_path_kernel<R, I, V, FT><<<grid, kMergeWarps * 32, 0, s.stream()>>>(
            p, plan->chunks_, plan->nchunks_, vec, tails.as<A>(), heads.as<A>());
        check_launch("spmm.merge_path");
        if (plan->nfix_ > 0) {
          merge_fix_kernel<R, I, V, FT><<<blocks_for(plan->nfix_ * 32), kBlock, 0, s.stream()>>>(
              p, plan->fixes_, plan->nfix_, tails.as<A>(), heads.as<A>());
          check_launch("spmm.merge_path (rows across chunks)");
        }
      });
    });
  });
}

}  // namespace sparseport::cuda
