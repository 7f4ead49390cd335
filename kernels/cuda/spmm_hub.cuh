// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's plan, kernels and launch (spmm_hub.cu tells the whole story), in a header so that
// the launch shapes compile in translation units of their own: spmm_hub.cu with all of them took
// 132 s on one core (sm_90, the 2-core VM), the longest single step of a CUDA build however many
// cores build it. The shapes are instantiated in spmm_hub_scalar.cu, spmm_hub_vec4.cu,
// spmm_hub_vec8.cu and spmm_hub_vec8_teams.cu (15-45 s each); the extern declarations at the end
// keep spmm_hub.cu, which only chooses among them, from instantiating them again.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/row_order.hpp"
#include "kernels/cuda/spmm_rows.cuh"
#include "sparseport/errors.hpp"

namespace sparseport::cuda::hub {


// H100 (cc 9.0), tests/cuda/cuda_timing, 2026-11, fp32: rmat:20:16 at F = 32 / 64 ran 0.99 / 1.21 ms
// with T = 32, 0.83 / 1.07 with 128, 0.76 / 1.03 with 256 and 512, 0.90 / 1.20 with 2048; er, band
// and megarow did not move with T. SPARSEPORT_HUB_T overrides it.
constexpr int64_t kDefaultHubThreshold = 256;
// Below kSmallNnz entries the kernel is latency-bound (it fills the GPU for a few microseconds),
// and the longest chain of dependent gathers decides: a lower threshold and shorter CTA items cut
// it. H100, benchmarks/hub_experiment.sh, 2026-11-22, F = 64 and 256, hub_split over cuSPARSE,
// geomean over the 18 real matrices (0.01-1 M entries): T = 256 / items of 2048: 0.93x; T = 64 /
// 512: 1.16x; T = 32 / 128: 1.09x. On rmat:20:16 (16 M) T = 64 lost (1.18x -> 0.98x at F = 64),
// so large inputs keep 256 / 2048.
constexpr int64_t kSmallNnz = int64_t{4} << 20;
constexpr int64_t kSmallHubThreshold = 64;
constexpr int64_t kSmallHubChunk = 512;
// Entries per CTA item: 8 warps x 256 entries. A hub longer than 8 items per SM is cut into
// 8 * SMs items instead, so a mega-row always spreads over every SM.
constexpr int64_t kHubChunk = 2048;
constexpr int kHubTile = 128;  // columns of F per pass of an item: 4 per lane

struct HubItem {
  int64_t row, begin, end;
  int32_t split;  // index of the hub's accumulator when the hub has several items, else -1
  int32_t k;      // the item's place among its hub's items (its slot in deterministic mode)
};

// Deterministic mode: a mega-row is cut into at most this many items (8 per SM of a 128-SM GPU),
// a constant rather than 8 x SMs so that the partition, and so the bits, do not depend on the
// device either. det_fold_kernel folds a split row's item partials in kDetRanges fixed ranges of
// items, one warp per range, then the ranges in order: the fold's shape depends on the item count
// only.
constexpr int64_t kDetSpread = 1024;
constexpr int kDetRanges = kBlock / 32;

// The plan depends on rowptr's values only (and the threshold, chunk and spread of the call), so a
// matrix whose rowptr holds the same values at another address shares it (shared_plan): the
// transpose of a symmetric graph, which a GNN's backward multiplies by (the products-sized SAGE
// twin's first epoch built the plan on A^T again, 22 ms, H100 session 40), or a copy of A. The
// owner keeps a copy of the rowptr it was built from to compare against: the caller's array may be
// freed behind the backend's back (torch's allocator), so it is never read once the call is over.
class HubPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit HubPlan(const State& s) : state_(&s) {}
  ~HubPlan() override {
    if (owner_ != nullptr) return;  // a shared plan: the arrays are its owner's
    if (items_ != nullptr) (void)cudaFreeAsync(items_, state_->stream());
    if (split_items_ != nullptr) (void)cudaFreeAsync(split_items_, state_->stream());
    if (split_first_ != nullptr) (void)cudaFreeAsync(split_first_, state_->stream());
    if (split_rows_ != nullptr) (void)cudaFreeAsync(split_rows_, state_->stream());
    if (order_ != nullptr) (void)cudaFreeAsync(order_, state_->stream());
    if (rowptr_ != nullptr) (void)cudaFreeAsync(rowptr_, state_->stream());
  }
  // What the plan was built from: the rowptr (a copy, I[rows_ + 1]), its shape, and the call's
  // threshold, chunk and spread.
  void* rowptr_ = nullptr;
  int64_t rows_ = 0, nnz_ = 0, threshold_ = 0, chunk_ = 0, spread_ = 0;
  size_t index_bytes_ = 0;
  std::shared_ptr<const HubPlan> owner_;  // a shared plan's owner of the arrays; null where it owns them
  HubItem* items_ = nullptr;
  int32_t* split_items_ = nullptr;  // items per split hub
  int32_t* split_first_ = nullptr;  // the first slot of each split hub (deterministic mode)
  int64_t* split_rows_ = nullptr;   // the row of each split hub (deterministic mode)
  void* order_ = nullptr;           // I[norder_]: the regular rows in the order the lane groups take them
  int64_t norder_ = 0;
  int64_t nitems_ = 0;
  int64_t nslots_ = 0;  // items of split hubs
  int32_t nsplit_ = 0;

 private:
  const State* state_;
};

// Entries per CTA item: kSmallHubChunk for small inputs, else kHubChunk; SPARSEPORT_HUB_CHUNK
// overrides both (for tuning).
inline int64_t hub_chunk(int64_t nnz) {
  if (const char* v = std::getenv("SPARSEPORT_HUB_CHUNK"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long long c = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || c < 8)
      throw InvalidArgument(std::string("SPARSEPORT_HUB_CHUNK='") + v + "' is not a whole number of entries >= 8");
    return c;
  }
  return nnz <= kSmallNnz ? kSmallHubChunk : kHubChunk;
}

// The item length of deterministic mode: hub_chunk without its environment override.
inline int64_t det_chunk(int64_t nnz) { return nnz <= kSmallNnz ? kSmallHubChunk : kHubChunk; }

// Sets *differs where a[i] != b[i] for some i < n (*differs is 0 before).
template <class I>
__global__ void __launch_bounds__(kBlock) differ_kernel(const I* a, const I* b, int64_t n, unsigned* differs) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < n; i += step)
    if (a[i] != b[i]) {
      *differs = 1;
      return;
    }
}

template <class I>
std::shared_ptr<HubPlan> build_plan(const State& s, const sparseport_csr& a, int64_t threshold, int64_t chunk,
                                    int64_t spread) {
  std::vector<I> rowptr(static_cast<size_t>(a.rows + 1));
  check(cudaMemcpyAsync(rowptr.data(), a.rowptr, rowptr.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (hub_split reads rowptr)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (hub_split reads rowptr)");
  // The regular rows' order and the hubs (rows of more than threshold entries, in row order) in
  // one pass over rowptr, then the hubs' items in vectors sized once: a second pass over all rows
  // and vectors regrown item by item took 5-12 ms of the plan on a products-sized graph (2.4 M
  // rows, 55 k hubs, 68 k items; 2-core VM, the pages faulted in as in a first call).
  std::vector<int64_t> hubs;
  const std::vector<I> order = row_order::regular_order(rowptr, threshold, &hubs);
  size_t nitem = 0, nsplit = 0;
  for (const int64_t r : hubs) {
    const int64_t deg = static_cast<int64_t>(rowptr[static_cast<size_t>(r) + 1]) - static_cast<int64_t>(rowptr[static_cast<size_t>(r)]);
    const int64_t n = ceil_div(deg, std::max(chunk, ceil_div(deg, spread)));
    nitem += static_cast<size_t>(std::max<int64_t>(n, 0));
    nsplit += n > 1 ? 1 : 0;
  }
  std::vector<HubItem> items;
  std::vector<int32_t> split_items, split_first;
  std::vector<int64_t> split_rows;
  items.reserve(nitem);
  split_items.reserve(nsplit);
  split_first.reserve(nsplit);
  split_rows.reserve(nsplit);
  int64_t nslots = 0;
  for (const int64_t r : hubs) {
    const int64_t e0 = rowptr[static_cast<size_t>(r)], e1 = rowptr[static_cast<size_t>(r) + 1];
    const int64_t deg = e1 - e0;
    const int64_t ch = std::max(chunk, ceil_div(deg, spread));
    const int64_t n = ceil_div(deg, ch);
    const int32_t split = n > 1 ? static_cast<int32_t>(split_items.size()) : -1;
    if (n > 1) {
      split_items.push_back(static_cast<int32_t>(n));
      split_first.push_back(static_cast<int32_t>(nslots));
      split_rows.push_back(r);
      nslots += n;
    }
    for (int64_t k = 0; k < n; ++k)
      items.push_back({r, e0 + k * ch, std::min(e1, e0 + (k + 1) * ch), split, static_cast<int32_t>(k)});
  }
  auto plan = std::make_shared<HubPlan>(s);
  plan->nitems_ = static_cast<int64_t>(items.size());
  plan->nsplit_ = static_cast<int32_t>(split_items.size());
  plan->nslots_ = nslots;
  if (!items.empty()) {
    check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&plan->items_), items.size() * sizeof(HubItem), s.pool(),
                                  s.stream()),
          "cudaMallocFromPoolAsync (hub_split items)");
    check(cudaMemcpyAsync(plan->items_, items.data(), items.size() * sizeof(HubItem), cudaMemcpyHostToDevice,
                          s.stream()),
          "cudaMemcpyAsync (hub_split items)");
  }
  if (!split_items.empty()) {
    check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&plan->split_items_), split_items.size() * sizeof(int32_t),
                                  s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (hub_split counts)");
    check(cudaMemcpyAsync(plan->split_items_, split_items.data(), split_items.size() * sizeof(int32_t),
                          cudaMemcpyHostToDevice, s.stream()),
          "cudaMemcpyAsync (hub_split counts)");
    check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&plan->split_first_), split_first.size() * sizeof(int32_t),
                                  s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (hub_split slots)");
    check(cudaMemcpyAsync(plan->split_first_, split_first.data(), split_first.size() * sizeof(int32_t),
                          cudaMemcpyHostToDevice, s.stream()),
          "cudaMemcpyAsync (hub_split slots)");
    check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&plan->split_rows_), split_rows.size() * sizeof(int64_t),
                                  s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (hub_split rows)");
    check(cudaMemcpyAsync(plan->split_rows_, split_rows.data(), split_rows.size() * sizeof(int64_t),
                          cudaMemcpyHostToDevice, s.stream()),
          "cudaMemcpyAsync (hub_split rows)");
  }
  if (!order.empty()) {
    plan->norder_ = static_cast<int64_t>(order.size());
    check(cudaMallocFromPoolAsync(&plan->order_, order.size() * sizeof(I), s.pool(), s.stream()),
          "cudaMallocFromPoolAsync (hub_split row order)");
    check(cudaMemcpyAsync(plan->order_, order.data(), order.size() * sizeof(I), cudaMemcpyHostToDevice, s.stream()),
          "cudaMemcpyAsync (hub_split row order)");
  }
  const size_t rowptr_bytes = static_cast<size_t>(a.rows + 1) * sizeof(I);
  check(cudaMallocFromPoolAsync(&plan->rowptr_, rowptr_bytes, s.pool(), s.stream()),
        "cudaMallocFromPoolAsync (hub_split rowptr copy)");
  check(cudaMemcpyAsync(plan->rowptr_, a.rowptr, rowptr_bytes, cudaMemcpyDeviceToDevice, s.stream()),
        "cudaMemcpyAsync (hub_split rowptr copy)");
  plan->rows_ = a.rows;
  plan->nnz_ = a.nnz;
  plan->threshold_ = threshold;
  plan->chunk_ = chunk;
  plan->spread_ = spread;
  plan->index_bytes_ = sizeof(I);
  // The comparison kernel of shared_plan, loaded now: under the runtime's lazy loading a kernel's
  // first launch loads it, and a load waits for the whole device (preload.hpp), where a build
  // already synchronises. Asking for its attributes loads it.
  cudaFuncAttributes attr{};
  check(cudaFuncGetAttributes(&attr, differ_kernel<I>), "cudaFuncGetAttributes (hub_split rowptr compare)");
  // The host vectors die here; the copies from pageable memory must be done with them.
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (hub_split plan)");
  plan->watch(a.rowptr, rowptr_bytes);
  return plan;
}

// The plan of a matrix whose rowptr holds the same values as a cached plan's (same shape and
// parameters), sharing that plan's arrays, or null where there is none. One comparison on the
// device (a pass over two rowptrs and a 4-byte read back: tens of microseconds) against the
// plan's build, a pass over rowptr on the host. It watches a's rowptr, as a plan of its own would.
template <class I>
std::shared_ptr<HubPlan> shared_plan(const State& s, const sparseport_csr& a, int64_t threshold, int64_t chunk,
                                     int64_t spread) {
  const std::shared_ptr<Plan> found = s.plans().find_if([&](const Plan& p) {
    const auto* h = dynamic_cast<const HubPlan*>(&p);
    return h != nullptr && h->rowptr_ != nullptr && h->rows_ == a.rows && h->nnz_ == a.nnz &&
           h->index_bytes_ == sizeof(I) && h->threshold_ == threshold && h->chunk_ == chunk && h->spread_ == spread;
  });
  if (found == nullptr) return nullptr;
  const auto& other = static_cast<const HubPlan&>(*found);
  const int64_t n = a.rows + 1;
  Scratch flag(s, sizeof(unsigned));
  check(cudaMemsetAsync(flag.get(), 0, sizeof(unsigned), s.stream()), "cudaMemsetAsync (hub_split rowptr compare)");
  const unsigned grid = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, kBlock), 1, int64_t{8} * s.info().sms));
  differ_kernel<I><<<grid, kBlock, 0, s.stream()>>>(static_cast<const I*>(other.rowptr_),
                                                    static_cast<const I*>(a.rowptr), n, flag.as<unsigned>());
  check_launch("spmm.hub_split (rowptr compare)");
  unsigned differs = 1;
  check(cudaMemcpyAsync(&differs, flag.get(), sizeof(unsigned), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (hub_split rowptr compare)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (hub_split rowptr compare)");
  if (differs != 0) return nullptr;
  auto plan = std::make_shared<HubPlan>(s);
  plan->owner_ = other.owner_ != nullptr ? other.owner_ : std::static_pointer_cast<const HubPlan>(found);
  const HubPlan& o = *plan->owner_;
  plan->items_ = o.items_;
  plan->split_items_ = o.split_items_;
  plan->split_first_ = o.split_first_;
  plan->split_rows_ = o.split_rows_;
  plan->order_ = o.order_;
  plan->norder_ = o.norder_;
  plan->nitems_ = o.nitems_;
  plan->nslots_ = o.nslots_;
  plan->nsplit_ = o.nsplit_;
  plan->rowptr_ = o.rowptr_;
  plan->rows_ = o.rows_;
  plan->nnz_ = o.nnz_;
  plan->threshold_ = o.threshold_;
  plan->chunk_ = o.chunk_;
  plan->spread_ = o.spread_;
  plan->index_bytes_ = o.index_bytes_;
  plan->watch(a.rowptr, static_cast<size_t>(n) * sizeof(I));
  return plan;
}

// Deterministic mode, a split hub after all its items ran: its n item partials (slots[i * F + f])
// folded, warp q taking items [n q / 8, n (q + 1) / 8) in order, then the 8 range results in order
// by warp 0; the row is then finished. 32 columns per pass, one per lane.
template <Red R, class I, class V>
__device__ __forceinline__ void det_finish(const SpmmParams<I, V>& p, const acc_t<V>* slots, int64_t n,
                                           acc_t<V> count, V* crow) {
  static_assert(kDetRanges * 32 == kBlock, "one warp per range");
  using A = acc_t<V>;
  __shared__ A ranges[kDetRanges][32];
  const int q = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t i0 = n * q / kDetRanges, i1 = n * (q + 1) / kDetRanges;
  for (int64_t f0 = 0; f0 < p.F; f0 += 32) {
    const int64_t f = f0 + lane;
    if (f < p.F && i0 < i1) {
      A r = __ldcg(slots + i0 * p.F + f);
#pragma unroll 8
      for (int64_t i = i0 + 1; i < i1; ++i) r = red_combine<R>(r, __ldcg(slots + i * p.F + f));
      ranges[q][lane] = r;
    }
    __syncthreads();
    if (q == 0 && f < p.F) {
      A r = red_identity<R, A>();
      bool first = true;
      for (int k = 0; k < kDetRanges; ++k) {
        if (n * k / kDetRanges == n * (k + 1) / kDetRanges) continue;  // an empty range (n < 8)
        r = first ? ranges[k][lane] : red_combine<R>(r, ranges[k][lane]);
        first = false;
      }
      st_acc(crow + f, p.fin.value(r, count, p.fin.beta != A(0) ? ld_acc(crow + f) : A(0)));
    }
    __syncthreads();
  }
}

// The last CTA of a split hub in default mode: the accumulator its items combined with atomics, into C.
// (A function of its own: in the deterministic instantiation the call follows a return that is
// always taken, and nvcc calls a loop written there unreachable, warning #128.)
template <class I, class V>
__device__ __forceinline__ void atomic_finish(const SpmmParams<I, V>& p, const acc_t<V>* acc, acc_t<V> count,
                                              V* crow) {
  using A = acc_t<V>;
  for (int64_t f = threadIdx.x; f < p.F; f += blockDim.x) {
    const A r = __ldcg(acc + f);
    st_acc(crow + f, p.fin.value(r, count, p.fin.beta != A(0) ? ld_acc(crow + f) : A(0)));
  }
}

template <Red R, bool kDet, class I, class V>
__device__ __forceinline__ void hub_item(const SpmmParams<I, V>& p, const HubItem& it, acc_t<V>* acc,
                                         unsigned* counters, const int32_t* split_items, const int32_t* split_first) {
  using A = acc_t<V>;
  __shared__ A part[kBlock / 32][kHubTile];
  __shared__ bool last;
  constexpr int kWarps = kBlock / 32;
  constexpr int U = 4;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t n = it.end - it.begin;
  const int64_t w0 = it.begin + n * warp / kWarps, w1 = it.begin + n * (warp + 1) / kWarps;
  const int64_t row = it.row;
  const A count = static_cast<A>(p.rowptr[row + 1] - p.rowptr[row]);
  V* crow = p.c + row * p.ldc;
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const V* __restrict__ b = p.b;
  for (int64_t f0 = 0; f0 < p.F; f0 += kHubTile) {
    A a[kHubTile / 32];
#pragma unroll
    for (int k = 0; k < kHubTile / 32; ++k) a[k] = red_identity<R, A>();
    int64_t e = w0;
    for (; e + U <= w1; e += U) {
      A bv[U][kHubTile / 32];
      A w[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t cc = colind[e + u];
        w[u] = val != nullptr ? widen(val[e + u]) : A(1);
#pragma unroll
        for (int k = 0; k < kHubTile / 32; ++k) {
          const int64_t f = f0 + lane + 32 * k;
          bv[u][k] = f < p.F ? widen(__ldg(b + cc * p.ldb + f)) : A(0);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < kHubTile / 32; ++k) a[k] = red_step<R>(a[k], w[u], bv[u][k]);
    }
    for (; e < w1; ++e) {
      const int64_t cc = colind[e];
      const A w = val != nullptr ? widen(val[e]) : A(1);
#pragma unroll
      for (int k = 0; k < kHubTile / 32; ++k) {
        const int64_t f = f0 + lane + 32 * k;
        if (f < p.F) a[k] = red_step<R>(a[k], w, widen(__ldg(b + cc * p.ldb + f)));
      }
    }
#pragma unroll
    for (int k = 0; k < kHubTile / 32; ++k) part[warp][lane + 32 * k] = a[k];
    __syncthreads();
    if (threadIdx.x < kHubTile) {
      const int64_t f = f0 + threadIdx.x;
      if (f < p.F) {
        A r = part[0][threadIdx.x];
        for (int k = 1; k < kWarps; ++k) r = red_combine<R>(r, part[k][threadIdx.x]);
        if (it.split < 0)
          st_acc(crow + f, p.fin.value(r, count, p.fin.beta != A(0) ? ld_acc(crow + f) : A(0)));
        else if constexpr (kDet)
          acc[(static_cast<int64_t>(split_first[it.split]) + it.k) * p.F + f] = r;  // the item's own slot
        else
          atomic_combine<R>(acc + it.split * p.F + f, r);
      }
    }
    __syncthreads();
  }
  // Deterministic mode: det_fold_kernel finishes the split hubs once every item has run. (No last-
  // CTA fold here: it would add its registers and shared memory to every CTA of this kernel, the
  // regular rows' too; 25% slower on er:200000:2e-5, H200.)
  if (kDet || it.split < 0) return;
  // The last CTA of a split hub finishes it (CUDA's threadFenceReduction pattern): the fence makes
  // this CTA's atomics visible before its ticket is counted.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counters + it.split, 1u) == static_cast<unsigned>(split_items[it.split] - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  atomic_finish(p, acc + it.split * p.F, count, crow);
}

// Deterministic mode: one CTA per split hub (grid-stride), after spmm_hub_kernel.
template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock)
    det_fold_kernel(SpmmParams<I, V> p, const int64_t* split_rows, const int32_t* split_items,
                    const int32_t* split_first, const acc_t<V>* slots, int64_t nsplit) {
  for (int64_t h = blockIdx.x; h < nsplit; h += gridDim.x) {
    const int64_t row = split_rows[h];
    const acc_t<V> count = static_cast<acc_t<V>>(p.rowptr[row + 1] - p.rowptr[row]);
    det_finish<R>(p, slots + static_cast<int64_t>(split_first[h]) * p.F, split_items[h], count, p.c + row * p.ldc);
  }
}

// Whether the regular rows of a launch shape end in masked batches (spmm_hub_kernel).
template <bool kDet, int VEC, int S, bool STRIDED = false>
inline constexpr bool kMaskedRows = !kDet && (STRIDED || (VEC == 4 && S == 1));

template <Red R, bool kDet, class I, class V, int VEC, int G, int S, bool STRIDED>
__global__ void __launch_bounds__(kBlock)
    spmm_hub_kernel(SpmmParams<I, V> p, const HubItem* items, int64_t nitems, acc_t<V>* acc, unsigned* counters,
                    const int32_t* split_items, const int32_t* split_first) {
  if (blockIdx.x < nitems) {
    hub_item<R, kDet>(p, items[blockIdx.x], acc, counters, split_items, split_first);
    return;
  }
  const int64_t blk = blockIdx.x - nitems, nblk = gridDim.x - nitems;
  const int64_t group = (blk * blockDim.x + threadIdx.x) / (G * S);
  const int64_t ngroups = nblk * blockDim.x / (G * S);
  // 8 vectors in flight per lane (row_warp_vec4 keeps 4): half the dependent rounds on the
  // longest regular rows, which decide latency-bound launches; a row's last entries in masked
  // batches of 4 (spmm_rows.cuh) where a group walks its row alone, float and double in vectors.
  // Deterministic mode keeps the one-at-a-time loop (the same bits; its kernels stay as checked).
  spmm_rows_body<R, I, V, VEC, G, false, S, 8, false, kMaskedRows<kDet, VEC, S, STRIDED>, STRIDED>(p, group, ngroups);
}

// The value types a launch shape takes: VEC's (dispatch_types_vec); for STRIDED float and the
// 16-bit types (double keeps the scalar lanes: a third more kernels to compile, for a type GNNs
// do not use).
template <int VEC, bool STRIDED, class F>
void dispatch_shape_types(const sparseport_spmm_args& a, F&& f) {
  if constexpr (STRIDED)
    dispatch_index(a.a.index_type, [&](auto i) {
      if (is16_tag(a.a.value_type))
        dispatch_value16(a.a.value_type, [&](auto v) { f(i, v); });
      else
        f(i, float{});
    });
  else
    dispatch_types_vec<VEC>(a.a.index_type, a.a.value_type, f);
}

// STRIDED: VEC columns a lane at a stride of G (spmm_rows.cuh), one slice, default mode only.
template <int VEC, int G, int S = 1, bool STRIDED = false>
void launch(const State& s, const sparseport_spmm_args& a, int64_t threshold, bool det) {
  static_assert(S == 1 || G * S <= 32, "a team fits in a warp");
  static_assert(!STRIDED || S == 1, "strided columns: one slice");
  const int64_t chunk = det ? det_chunk(a.a.nnz) : hub_chunk(a.a.nnz);
  const int64_t spread = det ? kDetSpread : int64_t{8} * s.info().sms;
  dispatch_shape_types<VEC, STRIDED>(a, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    using A = acc_t<V>;
    const std::string key = "spmm.hub_split|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(a.a.rows) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(sizeof(I)) + "|" + std::to_string(threshold) + "|" +
                            std::to_string(chunk) + "|" + std::to_string(spread);
    std::shared_ptr<HubPlan> plan = std::static_pointer_cast<HubPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = shared_plan<I>(s, a.a, threshold, chunk, spread);
      if (plan == nullptr) plan = build_plan<I>(s, a.a, threshold, chunk, spread);
      s.plans().insert(key, plan);
    }
    SpmmParams<I, V> p = spmm_params<I, V>(a);
    p.skip_above = threshold;
    p.order = static_cast<const I*>(plan->order_);
    p.norder = plan->norder_;
    dispatch_reduce(a.reduce, [&](auto r) {
      constexpr Red R = decltype(r)::value;
      Scratch acc, counters;
      if (plan->nsplit_ > 0) {
        // Deterministic mode: a slot per item of a split hub, each written whole by its item.
        const int64_t accs = det ? plan->nslots_ : int64_t{plan->nsplit_};
        acc = Scratch(s, static_cast<size_t>(accs) * static_cast<size_t>(p.F) * sizeof(A));
        if (!det) {
          counters = Scratch(s, static_cast<size_t>(plan->nsplit_) * sizeof(unsigned));
          const double identity = R == Red::sum ? 0.0 : (R == Red::max ? -HUGE_VAL : HUGE_VAL);
          dense_fill(s, acc.get(), plan->nsplit_, p.F, p.F, kAccTag<V>, identity);
          check(cudaMemsetAsync(counters.get(), 0, static_cast<size_t>(plan->nsplit_) * sizeof(unsigned), s.stream()),
                "cudaMemsetAsync (hub_split counters)");
        }
      }
      const int64_t work = p.order != nullptr ? p.norder : p.m;
      const int64_t regular = std::min<int64_t>(blocks_for(work * G * S), 2147483647 - plan->nitems_);
      const unsigned grid = static_cast<unsigned>(plan->nitems_ + regular);
      if (det) {
        if constexpr (!STRIDED)
          spmm_hub_kernel<R, true, I, V, VEC, G, S, false><<<grid, kBlock, 0, s.stream()>>>(
              p, plan->items_, plan->nitems_, acc.as<A>(), counters.as<unsigned>(), plan->split_items_,
              plan->split_first_);
      } else {
        spmm_hub_kernel<R, false, I, V, VEC, G, S, STRIDED><<<grid, kBlock, 0, s.stream()>>>(
            p, plan->items_, plan->nitems_, acc.as<A>(), counters.as<unsigned>(), plan->split_items_,
            plan->split_first_);
      }
      check_launch("spmm.hub_split");
      // Which path the regular rows took, for tests and cuda_timing.
      const bool masked = det ? kMaskedRows<true, VEC, S, STRIDED> : kMaskedRows<false, VEC, S, STRIDED>;
      s.set_note(std::string("spmm.hub_split: ") +
                 (masked ? "a row's last entries in masked batches" : "a row's last entries one at a time") +
                 (STRIDED ? ", " + std::to_string(VEC) + " strided columns a lane" : std::string()) +
                 (plan->owner_ != nullptr ? ", the plan shared with an equal rowptr's" : ""));
      if (det && plan->nsplit_ > 0) {
        const unsigned folds = static_cast<unsigned>(std::min<int64_t>(plan->nsplit_, 65535));
        det_fold_kernel<R, I, V><<<folds, kBlock, 0, s.stream()>>>(p, plan->split_rows_, plan->split_items_,
                                                                   plan->split_first_, acc.as<A>(), plan->nsplit_);
        check_launch("spmm.hub_split (deterministic fold)");
      }
    });
  });
}

// The launch shapes spmm_hub.cu uses, each compiled once, in the file named.
#define SPARSEPORT_HUB_LAUNCH(VEC, G, S) \
  template void launch<VEC, G, S>(const State&, const sparseport_spmm_args&, int64_t, bool)
#define SPARSEPORT_HUB_LAUNCH_STRIDED(VEC, G) \
  template void launch<VEC, G, 1, true>(const State&, const sparseport_spmm_args&, int64_t, bool)
// spmm_hub_scalar.cu
extern SPARSEPORT_HUB_LAUNCH(1, 32, 1);
// spmm_hub_vec4.cu (float and double in 16-byte vectors)
extern SPARSEPORT_HUB_LAUNCH(4, 4, 1);
extern SPARSEPORT_HUB_LAUNCH(4, 8, 1);
extern SPARSEPORT_HUB_LAUNCH(4, 16, 1);
extern SPARSEPORT_HUB_LAUNCH(4, 32, 1);
extern SPARSEPORT_HUB_LAUNCH(4, 8, 4);
extern SPARSEPORT_HUB_LAUNCH(4, 8, 2);
extern SPARSEPORT_HUB_LAUNCH(4, 16, 2);
// spmm_hub_strided.cu (float and 16-bit values, columns strided by G)
extern SPARSEPORT_HUB_LAUNCH_STRIDED(3, 16);
extern SPARSEPORT_HUB_LAUNCH_STRIDED(2, 32);
extern SPARSEPORT_HUB_LAUNCH_STRIDED(3, 32);
extern SPARSEPORT_HUB_LAUNCH_STRIDED(4, 32);
// spmm_hub_vec8.cu (16-bit values in 16-byte vectors)
extern SPARSEPORT_HUB_LAUNCH(8, 4, 1);
extern SPARSEPORT_HUB_LAUNCH(8, 8, 1);
extern SPARSEPORT_HUB_LAUNCH(8, 16, 1);
extern SPARSEPORT_HUB_LAUNCH(8, 32, 1);
// spmm_hub_vec8_teams.cu
extern SPARSEPORT_HUB_LAUNCH(8, 8, 4);
extern SPARSEPORT_HUB_LAUNCH(8, 8, 2);
extern SPARSEPORT_HUB_LAUNCH(8, 16, 2);
extern SPARSEPORT_HUB_LAUNCH(8, 4, 8);
extern SPARSEPORT_HUB_LAUNCH(8, 4, 4);
extern SPARSEPORT_HUB_LAUNCH(8, 4, 2);

}  // namespace sparseport::cuda::hub
