// SPDX-License-Identifier: Apache-2.0
// spmm.merge_path for F > 16: the plan of the F <= 16 kernels (spmm_merge_plan.cuh: the merge path
// of rows + entries cut into chunks of L items, one warp each, only rows longer than a chunk
// crossing chunks), with the lanes across F instead of across entries.
//  - Lanes: a sub-group of G lanes covers a tile of F, each lane K vectors of VEC consecutive
//    columns (VEC = 4 floats or 2 doubles where B and C allow 16-byte vectors, else 1), so
//    T = G x K x VEC columns per tile; F wider than that is walked tile by tile. With vectors G is
//    the fewest lanes (8, 16 or 32) that cover F at K = 1, and K = 2 above 32 vectors; single
//    values take G = 32 and K = 1, 2 or 4. The S = 32 / G sub-groups of a warp split the chunk:
//    each walks an equal share of its path items (a merge-path search in the chunk's rowptr window
//    in shared memory), so at F = 32 (float4, G = 8) four entries are gathered side by side and at
//    F = 64 two.
//  - The walk: a sub-group folds its share's entries in order into registers (explicit FMAs),
//    U gathers of B rows in flight per lane (U = 8 entries, 4 where a lane holds 8 floats or 4
//    doubles: at most 32 registers of them), writing every row that ends inside the share straight
//    to C (alpha, beta, mean, empty rows).
//  - Pieces: the first row of a share, when it began before the share, is kept aside (its head);
//    what is left at the end belongs to the row the share ends in (its tail). The sub-groups'
//    tails are combined by a segmented scan over the sub-groups in sub-group order (shuffles),
//    which also completes each head: a head begun in this chunk is written to C, one begun in an
//    earlier chunk goes to its head slot, and the last sub-group's tail to the chunk's tail slot.
//  - Fix-up: a row that crosses chunks is finished by merge_wide_fix_kernel, a warp per row (lanes
//    across F): its tails folded in chunk order, then its head, then alpha/beta/mean. When some row
//    has more than kFixPieces tails (a mega-row spans that many chunks), merge_wide_group_kernel
//    first folds each row's tails inside each aligned group of 32 slots into the first of them, a
//    warp per group (again on groups of 32 of those while a row still has more than kFixPieces
//    pieces), so a mega-row's fold is spread over the whole GPU and the fix-up folds at most about
//    kFixPieces pieces a row.
// 16-bit values (ABI 1.7): V is the storage type of A's values, B and C; the walk, the pieces and
// the fix-up are in acc_t<V> (float), vectors are 16 bytes (8 values a lane, VEC = 8), C is
// rounded once when written.
// No atomics and no pass over C; every combination has an order fixed by the plan (rowptr and L)
// and the lane shape (F, alignment): the same bits every run.
#include <algorithm>
#include <cstdint>

#include "kernels/cuda/spmm_merge_plan.cuh"
#include "kernels/cuda/spmm_rows.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

// Path items per chunk, L. Each chunk costs a fixed latency chain before its first gather (its two
// boundaries, its rowptr window, the merge-path search of each sub-group) and a segmented scan
// after its walk, so L should be long; but a warp takes whole chunks, and blocks of equal work
// leave the last wave of the GPU partly idle unless there are several chunks per resident warp.
// L is the longest of 128, 256 and 512 that still gives at least kChunksPerSlot chunks per warp
// slot of a reference GPU (132 SMs x 32 warps; these kernels keep 16 to 20 warps an SM at 100 to
// 130 registers, so in practice twice as many chunks per resident warp): ego-Twitter (2.8 M items)
// and soc-Slashdot (1.0 M) get 128, about 5 and 2 chunks per reference slot, rmat:20:16 (17.8 M)
// 512. It depends on m + nnz only, not on the device, so a matrix is cut (and the sums of its
// crossing rows rounded) the same way on every GPU. A first choice, not yet tuned on a GPU.
constexpr int64_t kRefWarpSlots = int64_t{132} * 32;
constexpr int64_t kChunksPerSlot = 4;
constexpr int64_t kMinItems = 128, kMaxItems = 512;

int64_t wide_items(int64_t path) {
  int64_t items = kMinItems;
  while (items < kMaxItems && path / (2 * items) >= kChunksPerSlot * kRefWarpSlots) items *= 2;
  return items;
}

// Warps per block: each keeps its chunk's rowptr window (2L indices) in dynamic shared memory, at
// most 4 x 1024 x 8 = 32 KB a block.
constexpr int kWideWarps = 4;
// The fix-up: the pieces of a row one pass of merge_wide_group_kernel folds into one.
constexpr int64_t kTailGroup = 32;
// The most pieces a row may bring to merge_wide_fix_kernel before group passes run first. Each
// pass is a launch over every slot whose warps walk their group's rows one after another: on an
// H200 at F = 32 it took 29 us of a 109 us call on rmat:17:16 (max 80 pieces a row) and of a 123
// us call on the ego-Twitter twin (117), where the fix-up's own fold of a row, 8 loads in flight,
// costs about 1 us per 8 pieces. So a row of up to 128 pieces is folded by the fix-up alone; a
// longer one (a mega-row: thousands) still goes through the passes. Plan-only: deterministic.
constexpr int64_t kFixPieces = 128;

// Gathers in flight per lane: at most 8 entries and at most 32 registers of gathered values
// (float4: 8 entries at K = 1, 4 at K = 2; scalar floats: 8 at any K up to 4).
template <class V, int VEC, int K>
constexpr int kWideRegs = 32 / (K * VEC * static_cast<int>(sizeof(acc_t<V>) / 4));
template <class V, int VEC, int K>
constexpr int kWideInFlight = kWideRegs<V, VEC, K> < 8 ? kWideRegs<V, VEC, K> : 8;

template <Red R, class V, int VEC>
__device__ __forceinline__ VecN<V, VEC> vcombine(const VecN<V, VEC>& a, const VecN<V, VEC>& b) {
  VecN<V, VEC> r;
#pragma unroll
  for (int i = 0; i < VEC; ++i) r.x[i] = red_combine<R>(a.x[i], b.x[i]);
  return r;
}

// At least 4 blocks (16 warps) an SM, so at most 128 registers a lane: with no minimum ptxas
// chose 96 registers for some shapes and spilled a few values of the chunk loop. Three blocks (168
// registers) for the double shapes of 4 values a lane, where mean spilled at 128.
template <class V, int VEC, int K>
constexpr int kWideMinBlocks = sizeof(V) == 8 && K * VEC >= 4 ? 3 : 4;

// MEAN (a sum divided by the degree) is a template parameter so that the other kernels have no
// division: its slow path is a call, around which the registers of the walk would be spilled.
template <Red R, bool MEAN, class I, class V, int VEC, int G, int K>
__global__ void __launch_bounds__(kWideWarps * 32, kWideMinBlocks<V, VEC, K>)
    merge_wide_kernel(SpmmParams<I, V> p, const MergeChunk* chunks, int64_t nchunks, int64_t window,
                      acc_t<V>* tails, acc_t<V>* heads) {
  using A = acc_t<V>;
  static_assert(G == 8 || G == 16 || G == 32, "a sub-group is 8, 16 or 32 lanes");
  static_assert(!MEAN || R == Red::sum, "mean carries a sum");
  constexpr int S = 32 / G;
  constexpr int U = kWideInFlight<V, VEC, K>;
  constexpr int64_t kTile = int64_t{G} * K * VEC;
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int64_t kNever = INT64_MAX;
  extern __shared__ __align__(16) unsigned char merge_wide_smem[];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int grp = lane / G, sub = lane % G;
  I* ends = reinterpret_cast<I*>(merge_wide_smem) + warp * window;  // ends[i] = rowptr[first row + 1 + i]
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const V* __restrict__ b = p.b;
  Finish<A> fin = p.fin;
  fin.mean = MEAN;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kWideWarps + warp; k < nchunks;
       k += static_cast<int64_t>(gridDim.x) * kWideWarps) {
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

    // The sub-group's share: the chunk's path items [items * grp / S, items * (grp + 1) / S),
    // found by a merge-path search in the window; its end is the next sub-group's start.
    const int64_t d = items * grp / S;
    int64_t lo = d > entries ? d - entries : 0, hi = d < rows ? d : rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<int64_t>(ends[mid]) - c0.nz <= d - mid - 1)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t lr_end = __shfl_down_sync(kAll, lo, G), lz_end = __shfl_down_sync(kAll, d - lo, G);
    if (grp == S - 1) lr_end = rows, lz_end = entries;
    const int64_t first_row = c0.row + lo, z0 = c0.nz + d - lo, z1 = c0.nz + lz_end, row_stop = c0.row + lr_end;
    const int64_t first_begin = row_start(first_row);
    const bool head_before = first_begin < z0;  // the share's first row began before it
    const bool head_elsewhere = first_row == c0.row && first_start < c0.nz;  // ... in an earlier chunk

    for (int64_t f0 = 0; f0 < p.F; f0 += kTile) {
      // This lane's columns of the tile: vector j at f0 + (j * G + sub) * VEC (VEC > 1 only when
      // F % VEC == 0, so a vector is in F whole or not at all).
      const auto column = [&](int j) -> int64_t { return f0 + (int64_t{j} * G + sub) * VEC; };
      // C[r, this lane's columns] from the reduction v of a row of `count` entries.
      const auto write_row = [&](int64_t r, int64_t count, const VecN<A, VEC>(&v)[K]) {
        V* crow = p.c + r * p.ldc;
        const A n = static_cast<A>(count);
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int64_t f = column(j);
          if (f >= p.F) continue;
          VecN<A, VEC> old, out;
          if (fin.beta != A(0))
            old = sload_rw<V, VEC>(crow + f);
          else
            vfill(old, A(0));
#pragma unroll
          for (int i = 0; i < VEC; ++i) out.x[i] = count == 0 ? fin.empty(old.x[i]) : fin.value(v[j].x[i], n, old.x[i]);
          sstore<V, VEC>(crow + f, out);
        }
      };
      const auto store_piece = [&](A* slot, const VecN<A, VEC>(&v)[K]) {
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int64_t f = column(j);
          if (f >= p.F) continue;
#pragma unroll
          for (int i = 0; i < VEC; ++i) slot[f + i] = v[j].x[i];
        }
      };

      VecN<A, VEC> acc[K], head[K];
#pragma unroll
      for (int j = 0; j < K; ++j) {
        vfill(acc[j], red_identity<R, A>());
        vfill(head[j], red_identity<R, A>());
      }
      bool has_head = false;
      // The row being walked, its first entry and its end (kNever for row_stop, which the share
      // leaves unfinished).
      int64_t row = first_row, start = first_begin, end = first_row < row_stop ? row_end(first_row) : kNever;
      const auto close_row = [&] {
        if (row == first_row && head_before) {
#pragma unroll
          for (int j = 0; j < K; ++j) head[j] = acc[j];
          has_head = true;
        } else {
          write_row(row, end - start, acc);
        }
#pragma unroll
        for (int j = 0; j < K; ++j) vfill(acc[j], red_identity<R, A>());
        ++row;
        start = end;
        end = row < row_stop ? row_end(row) : kNever;
      };

      // Batches of U entries, gathered before any is folded. A batch inside one row is folded
      // whole; one that crosses row ends is folded a row's run at a time (the same unrolled,
      // predicated fold), closing rows between runs, so that closing a row (the division of mean,
      // the stores) is one piece of code rather than U.
      for (int64_t z = z0; z < z1;) {
        const int n = z1 - z < U ? static_cast<int>(z1 - z) : U;
        I cc[U];
        A w[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          cc[u] = u < n ? colind[z + u] : I(0);
          w[u] = u < n ? (val != nullptr ? widen(val[z + u]) : A(1)) : A(0);
        }
        VecN<A, VEC> bv[U][K];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int j = 0; j < K; ++j) {
            const int64_t f = column(j);
            if (u < n && f < p.F)
              bv[u][j] = sload<V, VEC>(b + static_cast<int64_t>(cc[u]) * p.ldb + f);
            else
              vfill(bv[u][j], A(0));
          }
        // Entries [u0, u1) of the batch into acc.
        const auto fold = [&](int u0, int u1) {
#pragma unroll
          for (int u = 0; u < U; ++u)
            if (u >= u0 && u < u1) {
#pragma unroll
              for (int j = 0; j < K; ++j) vaccumulate<R>(acc[j], w[u], bv[u][j]);
            }
        };
        if (end >= z + n) {  // (end > z always holds here, or end == z for a row that ends now)
          fold(0, n);
        } else {
          for (int u = 0;;) {
            const int stop = end - z < n ? static_cast<int>(end - z) : n;
            fold(u, stop);
            if (stop == n) break;
            u = stop;
            do close_row();  // the rows ending before entry z + u (empty ones too)
            while (end <= z + u);
          }
        }
        z += n;
      }
      while (row < row_stop) close_row();

      // Tails of one row over consecutive sub-groups, combined in sub-group order (a segmented
      // inclusive scan keyed by the row each share ends in); sub-group g - 1's result is then the
      // part of sub-group g's head before it.
      if constexpr (S > 1) {
        const int64_t key = row_stop;
#pragma unroll
        for (int o = 1; o < S; o *= 2) {
          const int64_t up_key = __shfl_up_sync(kAll, key, o * G);
          VecN<A, VEC> up[K];
#pragma unroll
          for (int j = 0; j < K; ++j)
#pragma unroll
            for (int i = 0; i < VEC; ++i) up[j].x[i] = __shfl_up_sync(kAll, acc[j].x[i], o * G);
          if (grp >= o && up_key == key) {
#pragma unroll
            for (int j = 0; j < K; ++j) acc[j] = vcombine<R>(up[j], acc[j]);
          }
        }
        VecN<A, VEC> before[K];
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
          for (int i = 0; i < VEC; ++i) before[j].x[i] = __shfl_up_sync(kAll, acc[j].x[i], G);
        if (has_head && grp > 0) {
#pragma unroll
          for (int j = 0; j < K; ++j) head[j] = vcombine<R>(before[j], head[j]);
        }
      }
      if (has_head) {
        if (head_elsewhere)  // begun in an earlier chunk: the fix-up finishes it
          store_piece(heads + c0.head_slot * p.F, head);
        else
          write_row(first_row, row_end(first_row) - first_begin, head);
      }
      if (grp == S - 1 && c0.tail_slot >= 0) store_piece(tails + c0.tail_slot * p.F, acc);
    }
  }
}

// The pieces of a crossing row, after `levels` passes of merge_wide_group_kernel: its first tail
// slot ft, then every slot in (ft, ft + tails) that is a multiple of 32^levels (every slot when
// levels is 0). A pass folds each row's pieces inside each aligned group of 32 x 32^level slots
// into the first of them, so that after it the pieces are spaced 32 times wider; the passes stop
// when no row has more than about kFixPieces left for the fix-up.
struct Pieces {
  int64_t first, next, end;  // pieces: first, then next, next + spacing, ... below end
  int shift;                 // log2 of the spacing
  __device__ __forceinline__ int64_t count() const {
    return 1 + (next >= end ? 0 : ((end - 1 - next) >> shift) + 1);
  }
  __device__ __forceinline__ int64_t slot(int64_t j) const {
    return j == 0 ? first : next + ((j - 1) << shift);
  }
};

// Pieces of the slots [first, end) of one row spaced 2^shift apart.
__device__ __forceinline__ Pieces pieces_of(int64_t first, int64_t end, int shift) {
  return {first, ((first >> shift) + 1) << shift, end, shift};
}

// Rows that cross more than kTailGroup chunks (mega-rows) only: one pass, a warp per aligned group
// of kTailGroup << shift slots, folding in slot order the pieces (spaced 1 << shift apart) of each
// row inside the group into the first of them. A row's tails are consecutive slots and the rows'
// ranges follow each other (fixes[i + 1].first_tail == fixes[i].first_tail + fixes[i].tails), so
// the rows of a group are found from the fix-ups alone. A mega-row's fold is so spread over the
// GPU, 32 pieces a warp.
template <Red R, class V>
__global__ void __launch_bounds__(kBlock)
    merge_wide_group_kernel(const MergeFix* fixes, int64_t nfix, int64_t ntails, int64_t F, int shift, V* tails) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t span = kTailGroup << shift;
  const int64_t ngroups = (ntails + span - 1) / span;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t g = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; g < ngroups; g += nwarps) {
    const int64_t s0 = g * span, s1 = s0 + span < ntails ? s0 + span : ntails;
    // The row holding slot s0: the last fix-up whose first tail is at or before it.
    int64_t lo = 0, hi = nfix - 1;
    while (lo < hi) {
      const int64_t mid = hi - (hi - lo) / 2;
      if (fixes[mid].first_tail <= s0)
        lo = mid;
      else
        hi = mid - 1;
    }
    for (int64_t f = lane; f < F; f += 32) {
      int64_t fix = lo;
      for (int64_t r0 = s0; r0 < s1; ++fix) {
        const int64_t fend = fixes[fix].first_tail + fixes[fix].tails;
        const int64_t r1 = fend < s1 ? fend : s1;
        // The run's pieces: r0 (the row's first slot, or the group's), then the multiples of the
        // spacing; at most kTailGroup, all loaded at once and combined in order.
        const Pieces run = pieces_of(r0, r1, shift);
        const int64_t n = run.count();
        V r = tails[r0 * F + f];
#pragma unroll
        for (int t = 1; t < kTailGroup; ++t)
          if (t < n) r = red_combine<R>(r, tails[run.slot(t) * F + f]);
        tails[r0 * F + f] = r;
        r0 = r1;
      }
    }
  }
}

// A warp per row that crosses chunks: its pieces (at most about kFixPieces) folded in
// chunk order, then its head, then finished; lanes across F. The fold's shape depends on the plan
// alone (the number of passes follows the plan's longest row).
template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock)
    merge_wide_fix_kernel(SpmmParams<I, V> p, const MergeFix* fixes, int64_t nfix, const acc_t<V>* tails,
                          const acc_t<V>* heads, int shift) {
  using A = acc_t<V>;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < nfix; i += nwarps) {
    const MergeFix fx = fixes[i];
    const Pieces pc = pieces_of(fx.first_tail, fx.first_tail + fx.tails, shift);
    const int64_t n = pc.count();
    const A count = static_cast<A>(static_cast<int64_t>(p.rowptr[fx.row + 1]) - static_cast<int64_t>(p.rowptr[fx.row]));
    V* crow = p.c + fx.row * p.ldc;
    const A* head = heads + fx.head_slot * p.F;
    for (int64_t f = lane; f < p.F; f += 32) {
      A r = tails[pc.first * p.F + f];
#pragma unroll 8
      for (int64_t j = 1; j < n; ++j) r = red_combine<R>(r, tails[pc.slot(j) * p.F + f]);
      r = red_combine<R>(r, head[f]);
      st_acc(crow + f, p.fin.value(r, count, p.fin.beta != A(0) ? ld_acc(crow + f) : A(0)));
    }
  }
}

// Whether the rows of B and C can be read and written as 16-byte vectors of VEC values.
template <class V>
bool wide_vector_rows(const sparseport_spmm_args& a) {
  constexpr int64_t W = 16 / sizeof(V);
  return a.b.cols % W == 0 && a.b.ld % W == 0 && a.c.ld % W == 0 && aligned16(a.b.data) && aligned16(a.c.data);
}

template <class I, class V, int VEC, int G, int K>
void launch_wide(const State& s, const sparseport_spmm_args& a, const SpmmParams<I, V>& p, const MergePlan& plan,
                 int64_t items) {
  using A = acc_t<V>;
  Scratch tails, heads;
  if (plan.nfix_ > 0) {
    tails = Scratch(s, static_cast<size_t>(plan.ntails_ * p.F) * sizeof(A));
    heads = Scratch(s, static_cast<size_t>(plan.nfix_ * p.F) * sizeof(A));
  }
  const int64_t window = 2 * items;
  const size_t smem = static_cast<size_t>(kWideWarps * window) * sizeof(I);
  const auto grid = static_cast<unsigned>(std::min<int64_t>(ceil_div(plan.nchunks_, kWideWarps), 2147483647));
  dispatch_reduce(a.reduce, [&](auto r) {
    constexpr Red R = decltype(r)::value;
    if constexpr (R == Red::sum) {
      if (p.fin.mean)
        merge_wide_kernel<R, true, I, V, VEC, G, K><<<grid, kWideWarps * 32, smem, s.stream()>>>(
            p, plan.chunks_, plan.nchunks_, window, tails.as<A>(), heads.as<A>());
      else
        merge_wide_kernel<R, false, I, V, VEC, G, K><<<grid, kWideWarps * 32, smem, s.stream()>>>(
            p, plan.chunks_, plan.nchunks_, window, tails.as<A>(), heads.as<A>());
    } else {
      merge_wide_kernel<R, false, I, V, VEC, G, K><<<grid, kWideWarps * 32, smem, s.stream()>>>(
          p, plan.chunks_, plan.nchunks_, window, tails.as<A>(), heads.as<A>());
    }
    check_launch("spmm.merge_path");
    if (plan.nfix_ == 0) return;
    // Group passes (spacing 32^levels) until no row brings more than about kFixPieces pieces.
    int shift = 0;
    while ((plan.max_tails_ >> shift) > kFixPieces) {
      const int64_t span = kTailGroup << shift;
      merge_wide_group_kernel<R, A><<<blocks_for(ceil_div(plan.ntails_, span) * 32), kBlock, 0, s.stream()>>>(
          plan.fixes_, plan.nfix_, plan.ntails_, p.F, shift, tails.as<A>());
      check_launch("spmm.merge_path (tail groups of long rows)");
      shift += 5;
    }
    merge_wide_fix_kernel<R, I, V><<<blocks_for(plan.nfix_ * 32), kBlock, 0, s.stream()>>>(
        p, plan.fixes_, plan.nfix_, tails.as<A>(), heads.as<A>(), shift);
    check_launch("spmm.merge_path (rows across chunks)");
  });
}

}  // namespace

void spmm_merge_path_wide(const State& s, const sparseport_spmm_args& a) {
  const int64_t items = wide_items(a.a.rows + a.a.nnz);
  const std::shared_ptr<MergePlan> plan = merge_plan(s, a.a, items);
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SpmmParams<I, V> p = spmm_params<I, V>(a);
    if (wide_vector_rows<V>(a)) {
      constexpr int W = static_cast<int>(16 / sizeof(V));
      const int64_t vectors = p.F / W;
      if constexpr (W >= 4) {
        // float, F <= 32; 16-bit values (8 a vector), F <= 64
        if (vectors <= 8) return launch_wide<I, V, W, 8, 1>(s, a, p, *plan, items);
      }
      if (vectors <= 16) return launch_wide<I, V, W, 16, 1>(s, a, p, *plan, items);
      if (vectors <= 32) return launch_wide<I, V, W, 32, 1>(s, a, p, *plan, items);
      return launch_wide<I, V, W, 32, 2>(s, a, p, *plan, items);  // tiles of 256 floats / 128 doubles / 512 halves
    }
    if (p.F <= 32) return launch_wide<I, V, 1, 32, 1>(s, a, p, *plan, items);
    if (p.F <= 64) return launch_wide<I, V, 1, 32, 2>(s, a, p, *plan, items);
    return launch_wide<I, V, 1, 32, 4>(s, a, p, *plan, items);  // tiles of 128 columns
  });
}

}  // namespace sparseport::cuda
