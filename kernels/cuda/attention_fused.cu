// SPDX-License-Identifier: Apache-2.0
// csr_attention.fused: one pass per row with an online softmax (a running maximum m, the running
// sum l of exp(s - m), and the output accumulated and rescaled whenever m grows). Rows up to the
// hub threshold run in fused_kernel, a team of lanes per row.
//
// Rows longer than the hub threshold (SPARSEPORT_HUB_T, as spmm.hub_split) would hold one team
// for their whole length (rmat:20:16 at F = 64: 17 ms against 4.6 ms unfused, H100, 2026-11), so
// they are split like flash-decoding: each item of up to CH entries is one CTA whose warps run
// the online softmax on their share and merge (m, l, acc) in shared memory; a last kernel merges
// the items of each long row. The partition comes from rowptr and is kept in the plan cache.
//
// No atomics anywhere: a row's result depends on its entries and on the partition. Deterministic
// mode fixes the partition too: the threshold is hub_threshold_for's without SPARSEPORT_HUB_T and
// a long row is cut into at most kDetSpread items whatever the SM count, so the bits do not
// change with the knob. (The lane shape still follows F, the alignment of Q, K, V and out, and
// the SM count through row_slices: the same inputs on the same device give the same bits.)
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/attention.cuh"

namespace sparseport::cuda {
namespace {

// One row per team of G * S lanes: S slices of G lanes, slice s taking entries e0 + s, e0 + s + S,
// ... (strided, so the slices' colind reads of one step are contiguous). Each slice keeps its own
// (m, l, acc) and the slices merge them by xor shuffles at the end, as flash-decoding merges
// splits (S from row_slices). Each step of a slice handles U entries: their column indices were
// prefetched by the step before, all their K and V loads are issued before the first shuffle (the
// V rows depend only on the column index), then the U dot products are reduced together and the
// softmax state is updated once. The old loop (U = 2, V loaded after the exps, S = 1) was a chain
// of dependent latencies per step: 130 us against 14.7 us for spmm at astro-ph, F = 32, H100.
//
// Columns come in tiles of G * VEC, NT tiles per pass: NT = 1 or 2 holds all of q and K (F <= NT
// tiles) and the pass's V tiles in registers. NT = 4 is the general case (F or Fv wider than two
// tiles): one tile of K in registers and a loop for the rest, one tile of V loaded early and the
// other three after the exps. A wider Fv takes several passes over the row, each recomputing the
// scores.
template <class I, class V, int VEC, int G, int S, int NT>
__global__ void __launch_bounds__(kBlock) fused_kernel(AttnParams<I, V> p) {
  constexpr bool kGeneral = NT > 2;
  constexpr int KC = kGeneral ? 1 : NT;  // tiles of q and K held in registers
  constexpr int VE = kGeneral ? 1 : NT;  // tiles of V loaded before the shuffles
  // Entries per step: four, whose loads take 32 registers at fp32 and NT = 1 and keep the kernel
  // at 64 to 80 registers (3 or 4 CTAs an SM, as the old loop); two where one entry's loads pass
  // 64 bytes a lane (fp64 at NT = 2), which would need 128 registers for the loads alone. U = 8
  // at fp32 and NT = 1 took 100 registers (2 CTAs an SM) and was 18 % slower over the suite
  // (band:1000000:16 F = 32: 494 -> 760 us, H200, 2026-11-23).
  constexpr int U = sizeof(V) * VEC * (KC + VE) > 64 ? 2 : 4;
  constexpr int T = G * S;
  constexpr int64_t W = int64_t{G} * VEC;  // columns per tile
  static_assert(T <= 32 && (S & (S - 1)) == 0, "a row's team of G * S lanes lies in one warp");
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int sub = lane & (G - 1);
  const int slice = (lane / G) & (S - 1);
  const unsigned mask = group_mask<G>();
  const unsigned team_mask = group_mask<T>();
  const int64_t team = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / T;
  const int64_t nteams = static_cast<int64_t>(gridDim.x) * blockDim.x / T;
  const V neg_inf = red_identity<Red::max, V>();
  const int64_t f_own = int64_t{sub} * VEC;  // this lane's columns in each tile
  for (int64_t row = team; row < p.m; row += nteams) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    if (e1 - e0 > p.skip_above) continue;
    V* orow = p.out + row * p.ldo;
    if (e0 == e1) {
      for (int64_t f = int64_t{slice} * G + sub; f < p.Fv; f += T) orow[f] = V(0);
      continue;
    }
    const V* qrow = p.q + row * p.ldq;
    VecN<V, VEC> qr[KC];
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      vfill(qr[c], V(0));
      if (f_own + c * W < p.F) qr[c] = vload<V, VEC>(qrow + f_own + c * W);
    }
    for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += NT * W) {
      V run_max = neg_inf, run_sum = V(0);
      VecN<V, VEC> acc[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) vfill(acc[t], V(0));
      I next[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t e = e0 + slice + int64_t{u} * S;
        next[u] = e < e1 ? __ldg(p.colind + e) : I(0);
      }
#pragma unroll 1
      for (int64_t e = e0 + slice; e < e1; e += int64_t{U} * S) {
        bool ok[U];
        const V* krow[U];
        const V* vrow[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          ok[u] = e + int64_t{u} * S < e1;
          krow[u] = p.k + static_cast<int64_t>(next[u]) * p.ldk + f_own;
          vrow[u] = p.v + static_cast<int64_t>(next[u]) * p.ldv + fv0 + f_own;
        }
        // Every load of the step goes out before anything waits on one, K first as it is needed
        // first.
        VecN<V, VEC> kt[KC][U], vt[VE][U];
#pragma unroll
        for (int c = 0; c < KC; ++c)
#pragma unroll
          for (int u = 0; u < U; ++u) {
            vfill(kt[c][u], V(0));
            if (ok[u] && f_own + c * W < p.F) kt[c][u] = vload<V, VEC>(krow[u] + c * W);
          }
#pragma unroll
        for (int t = 0; t < VE; ++t)
#pragma unroll
          for (int u = 0; u < U; ++u) {
            vfill(vt[t][u], V(0));
            if (ok[u] && fv0 + f_own + t * W < p.Fv) vt[t][u] = vload<V, VEC>(vrow[u] + t * W);
          }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t en = e + int64_t{U + u} * S;
          next[u] = en < e1 ? __ldg(p.colind + en) : I(0);
        }
        V s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] = V(0);
#pragma unroll
          for (int c = 0; c < KC; ++c)
#pragma unroll
            for (int i = 0; i < VEC; ++i) s[u] += qr[c].x[i] * kt[c][u].x[i];
        }
        if constexpr (kGeneral) {
#pragma unroll 1
          for (int64_t f = f_own + W; f < p.F; f += W) {
            const VecN<V, VEC> qv = vload<V, VEC>(qrow + f);
#pragma unroll
            for (int u = 0; u < U; ++u) {
              vfill(kt[0][u], V(0));
              if (ok[u]) kt[0][u] = vload<V, VEC>(krow[u] + (f - f_own));
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
              for (int i = 0; i < VEC; ++i) s[u] += qv.x[i] * kt[0][u].x[i];
          }
        }
        // The U reductions interleaved, so their shuffle latencies overlap.
#pragma unroll
        for (int o = G / 2; o > 0; o /= 2)
#pragma unroll
          for (int u = 0; u < U; ++u) s[u] += __shfl_xor_sync(mask, s[u], o, G);
        V new_max = run_max;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] *= p.scale;
          if (ok[u] && s[u] > new_max) new_max = s[u];
        }
        // ok[0] holds on every step, so new_max is finite and exp(-inf) = 0 drops the empty
        // history on the first step; an entry past the row's end gets exp(-inf) = 0 too.
        const V corr = vexp(run_max - new_max);
        V pr[U];
        run_sum *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          pr[u] = vexp(ok[u] ? s[u] - new_max : neg_inf);
          run_sum += pr[u];
        }
        run_max = new_max;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (fv0 + f_own + t * W >= p.Fv) continue;
          if (t >= VE) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
              vfill(vt[0][u], V(0));
              if (ok[u]) vt[0][u] = vload<V, VEC>(vrow[u] + t * W);
            }
          }
          const VecN<V, VEC>* vv = vt[t < VE ? t : 0];
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[t].x[i] *= corr;
#pragma unroll
          for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc[t].x[i] += pr[u] * vv[u].x[i];
        }
      }
      // Merge the slices. A slice that saw no entry (a row shorter than S) has m = -inf and
      // l = acc = 0; its factor is set to 0 rather than computed as exp(-inf - -inf) = NaN.
#pragma unroll
      for (int o = G; o < T; o *= 2) {
        const V om = __shfl_xor_sync(team_mask, run_max, o, T);
        const V ol = __shfl_xor_sync(team_mask, run_sum, o, T);
        const V nm = om > run_max ? om : run_max;
        const V ca = run_max > neg_inf ? vexp(run_max - nm) : V(0);
        const V cb = om > neg_inf ? vexp(om - nm) : V(0);
        run_sum = run_sum * ca + ol * cb;
        run_max = nm;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (fv0 + t * W >= p.Fv) continue;  // the same for the whole team
#pragma unroll
          for (int i = 0; i < VEC; ++i)
            acc[t].x[i] = acc[t].x[i] * ca + __shfl_xor_sync(team_mask, acc[t].x[i], o, T) * cb;
        }
      }
      if (slice != 0) continue;
      const V inv = V(1) / run_sum;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int64_t fv = fv0 + f_own + t * W;
        if (fv >= p.Fv) continue;
        VecN<V, VEC> o;
#pragma unroll
        for (int i = 0; i < VEC; ++i) o.x[i] = acc[t].x[i] * inv;
        vstore<V, VEC>(orow + fv, o);
      }
    }
  }
}

// ---- the split path for long rows --------------------------------------------------------------

// Entries per CTA item at least: 8 warps x 128, or x 32 below 4 M entries, where the hub
// threshold is 64 and the items must stay short so that the longest chain stays short.
constexpr int64_t kItemChunk = 1024, kSmallItemChunk = 256, kSmallNnz = int64_t{4} << 20;
constexpr int kItemTile = 128;        // output columns per pass of an item: 4 per lane
constexpr int64_t kDetSpread = 1024;  // deterministic mode: items per long row at most (8 x 128 SMs)

struct AttnItem {
  int64_t row, begin, end;
};
struct LongRow {
  int64_t row, first, count;  // its items are first .. first + count - 1
};

class AttnPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit AttnPlan(const State& s) : state_(&s) {}
  ~AttnPlan() override {
    if (items_ != nullptr) (void)cudaFreeAsync(items_, state_->stream());
    if (rows_ != nullptr) (void)cudaFreeAsync(rows_, state_->stream());
  }
  AttnItem* items_ = nullptr;
  LongRow* rows_ = nullptr;
  int64_t nitems_ = 0, nrows_ = 0;
  int64_t threshold_ = 0;  // rows with more entries take the split path

 private:
  const State* state_;
};

template <class T>
T* to_pool(const State& s, const std::vector<T>& v, const char* what) {
  if (v.empty()) return nullptr;
  void* p = nullptr;
  check(cudaMallocFromPoolAsync(&p, v.size() * sizeof(T), s.pool(), s.stream()), what);
  check(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s.stream()), what);
  return static_cast<T*>(p);
}

// The threshold: SPARSEPORT_HUB_T when set. Otherwise 256, or, below 4 M entries (latency-bound
// inputs, where the longest chain decides) and only when some row is longer than 256 anyway, 64
// (hub_threshold_for): the split path costs two more launches (items, merge), which a graph whose
// rows all fit 256 should not pay. H200, 2026-11-23: threshold 64 everywhere made wiki-Vote,
// facebook and email-Enron 1.6-2.6x faster but cora, pubmed, citeseer and bcsstk16 (longest rows
// 99-200) 1.1-2.9x slower than 256.
template <class I>
std::shared_ptr<AttnPlan> build_plan(const State& s, const sparseport_csr& a, bool det) {
  std::vector<I> rowptr(static_cast<size_t>(a.rows + 1));
  check(cudaMemcpyAsync(rowptr.data(), a.rowptr, rowptr.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (csr_attention.fused reads rowptr)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (csr_attention.fused plan)");
  int64_t longest = 0;
  for (int64_t r = 0; r < a.rows; ++r)
    longest = std::max<int64_t>(longest, rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]);
  const int64_t base = det ? int64_t{256} : hub_threshold();
  const int64_t small_nnz_threshold = a.nnz <= kSmallNnz ? 64 : 256;  // hub_threshold_for without the environment
  const int64_t threshold = longest > base ? (det ? small_nnz_threshold : hub_threshold_for(a.nnz)) : base;
  std::vector<AttnItem> items;
  std::vector<LongRow> rows;
  const int64_t spread = det ? kDetSpread : int64_t{8} * s.info().sms;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t e0 = rowptr[static_cast<size_t>(r)], e1 = rowptr[static_cast<size_t>(r) + 1];
    if (e1 - e0 <= threshold) continue;
    const int64_t ch = std::max(a.nnz <= kSmallNnz ? kSmallItemChunk : kItemChunk, ceil_div(e1 - e0, spread));
    const int64_t first = static_cast<int64_t>(items.size());
    for (int64_t b = e0; b < e1; b += ch) items.push_back({r, b, std::min(e1, b + ch)});
    rows.push_back({r, first, static_cast<int64_t>(items.size()) - first});
  }
  auto plan = std::make_shared<AttnPlan>(s);
  plan->threshold_ = threshold;
  plan->nitems_ = static_cast<int64_t>(items.size());
  plan->nrows_ = static_cast<int64_t>(rows.size());
  plan->items_ = to_pool(s, items, "csr_attention.fused items");
  plan->rows_ = to_pool(s, rows, "csr_attention.fused long rows");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (csr_attention.fused plan)");
  plan->watch(a.rowptr, static_cast<size_t>(a.rows + 1) * sizeof(I));
  return plan;
}

// One CTA per item: every warp runs the online softmax over its share of the item's entries, then
// the warps' (m, l, acc) are merged in shared memory into the item's partial.
template <class I, class V>
__global__ void __launch_bounds__(kBlock) item_kernel(AttnParams<I, V> p, const AttnItem* items, V* pm, V* pl,
                                                      V* pacc) {
  constexpr int kWarps = kBlock / 32, KV = kItemTile / 32, U = 2;
  __shared__ V sm_m[kWarps], sm_l[kWarps];
  __shared__ V sm_acc[kWarps][kItemTile];
  const AttnItem it = items[blockIdx.x];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t n = it.end - it.begin;
  const int64_t w0 = it.begin + n * warp / kWarps, w1 = it.begin + n * (warp + 1) / kWarps;
  const V* qrow = p.q + it.row * p.ldq;
  const V neg_inf = red_identity<Red::max, V>();
  for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += kItemTile) {
    V run_max = neg_inf, run_sum = V(0), acc[KV];
#pragma unroll
    for (int t = 0; t < KV; ++t) acc[t] = V(0);
    for (int64_t e = w0; e < w1; e += U) {
      int64_t c[U];
      bool ok[U];
      V s[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ok[u] = e + u < w1;
        c[u] = ok[u] ? static_cast<int64_t>(p.colind[e + u]) : 0;
        s[u] = V(0);
      }
      for (int64_t f = lane; f < p.F; f += 32) {
        const V qv = __ldg(qrow + f);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) s[u] += qv * __ldg(p.k + c[u] * p.ldk + f);
      }
      V new_max = run_max;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        s[u] = group_sum<32>(s[u], 0xffffffffu) * p.scale;
        if (ok[u] && s[u] > new_max) new_max = s[u];
      }
      const V corr = vexp(run_max - new_max);
      V pr[U];
      run_sum *= corr;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        pr[u] = ok[u] ? vexp(s[u] - new_max) : V(0);
        run_sum += pr[u];
      }
      run_max = new_max;
#pragma unroll
      for (int t = 0; t < KV; ++t) {
        const int64_t fv = fv0 + t * 32 + lane;
        if (fv >= p.Fv) continue;
        acc[t] *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) acc[t] += pr[u] * __ldg(p.v + c[u] * p.ldv + fv);
      }
    }
    if (lane == 0) {
      sm_m[warp] = run_max;
      sm_l[warp] = run_sum;
    }
#pragma unroll
    for (int t = 0; t < KV; ++t) sm_acc[warp][t * 32 + lane] = acc[t];
    __syncthreads();
    if (threadIdx.x < kItemTile) {
      V m = neg_inf;
      for (int w = 0; w < kWarps; ++w) m = sm_m[w] > m ? sm_m[w] : m;
      V l = V(0), a = V(0);
      for (int w = 0; w < kWarps; ++w) {
        if (!(sm_m[w] > neg_inf)) continue;  // a warp without entries
        const V scale = vexp(sm_m[w] - m);
        l += sm_l[w] * scale;
        a += sm_acc[w][threadIdx.x] * scale;
      }
      const int64_t fv = fv0 + threadIdx.x;
      if (fv < p.Fv) pacc[blockIdx.x * p.Fv + fv] = a;
      if (threadIdx.x == 0 && fv0 == 0) {
        pm[blockIdx.x] = m;
        pl[blockIdx.x] = l;
      }
    }
    __syncthreads();
  }
}

// One CTA per long row: its items' partials merged and divided.
template <class I, class V>
__global__ void __launch_bounds__(kBlock) merge_kernel(AttnParams<I, V> p, const LongRow* rows, const V* pm,
                                                       const V* pl, const V* pacc) {
  const LongRow r = rows[blockIdx.x];
  V m = red_identity<Red::max, V>();
  for (int64_t i = r.first; i < r.first + r.count; ++i) m = pm[i] > m ? pm[i] : m;
  V l = V(0);
  for (int64_t i = r.first; i < r.first + r.count; ++i) l += pl[i] * vexp(pm[i] - m);
  V* orow = p.out + r.row * p.ldo;
  for (int64_t f = threadIdx.x; f < p.Fv; f += blockDim.x) {
    V a = V(0);
    for (int64_t i = r.first; i < r.first + r.count; ++i) a += pacc[i * p.Fv + f] * vexp(pm[i] - m);
    orow[f] = a / l;
  }
}

// Slices per row. Rows alone fill the device only from sms * 2048 threads (astro-ph, 18.6k rows at
// G = 8, is 149k threads against 270k resident on an H100's 132 SMs); below that the rows are
// split into S slices, while a slice still averages 4 entries or more: fewer leave most of the
// U = 4 slots of its one step empty and the merge costs about as much as the entries (first
// guesses; the suite measures the variant as a whole).
int row_slices(const State& s, int64_t m, int64_t nnz, int G, int max_slices) {
  constexpr int64_t kThreadsPerSm = 2048;  // cc 8.0 and 9.0
  const int64_t resident = int64_t{s.info().sms} * kThreadsPerSm;
  // A graph so small that full teams still leave the GPU half empty gets them whatever its mean
  // degree: idle slices cost nothing there, and the longest row's chain is what the launch waits
  // for (cora, mean degree 4, a row of 168 entries).
  if (m > 0 && m * G * max_slices <= resident / 2) return max_slices;
  int S = 1;
  while (S < max_slices && m > 0 && m * G * S < resident && nnz >= m * 4 * (S * 2)) S *= 2;
  return S;
}

// fused_kernel<.., S, NT> for the first S >= slices that the build holds: G * S <= 32, and only
// at NT = 1 (S > 1 needs G < 32, and G < 32 always has F within one tile).
template <class I, class V, int VEC, int G, int NT, int S = 1>
void launch_rows(const State& s, const AttnParams<I, V>& p, int slices) {
  if constexpr (NT == 1 && G * S < 32) {
    if (S < slices) {
      launch_rows<I, V, VEC, G, NT, S * 2>(s, p, slices);
      return;
    }
  }
  fused_kernel<I, V, VEC, G, S, NT><<<blocks_for(p.m * G * S), kBlock, 0, s.stream()>>>(p);
}

template <int VEC, int G>
void launch(const State& s, const sparseport_attention_args& a, bool det) {
  // With the graph, these decide the plan's threshold; deterministic mode reads no environment.
  const std::string knobs = det ? std::string("det") : std::to_string(hub_threshold()) + "|" +
                                                           std::to_string(hub_threshold_for(a.a.nnz));
  dispatch_types(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const std::string key = "csr_attention.fused|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(a.a.rows) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(sizeof(I)) + "|" + knobs;
    std::shared_ptr<AttnPlan> plan = std::static_pointer_cast<AttnPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = build_plan<I>(s, a.a, det);
      s.plans().insert(key, plan);
    }
    AttnParams<I, V> p = attn_params<I, V>(a);
    p.skip_above = plan->threshold_;
    // Tiles of G * VEC columns: q and K take tf, V takes tv. G < 32 has tf = 1 (vec4_group) and
    // runs a wide V in passes of one tile; G = 32 holds up to two tiles, then the general kernel.
    const int64_t tf = ceil_div(p.F, int64_t{G} * VEC), tv = ceil_div(p.Fv, int64_t{G} * VEC);
    if constexpr (G < 32) {
      launch_rows<I, V, VEC, G, 1>(s, p, row_slices(s, a.a.rows, a.a.nnz, G, 32 / G));
    } else {
      if (tf <= 1 && tv <= 1)
        launch_rows<I, V, VEC, G, 1>(s, p, 1);
      else if (tf <= 2 && tv <= 2)
        launch_rows<I, V, VEC, G, 2>(s, p, 1);
      else
        launch_rows<I, V, VEC, G, 4>(s, p, 1);
    }
    check_launch("csr_attention.fused");
    if (plan->nitems_ == 0) return;
    Scratch pm(s, static_cast<size_t>(plan->nitems_) * sizeof(V)), pl(s, static_cast<size_t>(plan->nitems_) * sizeof(V)),
        pacc(s, static_cast<size_t>(plan->nitems_ * p.Fv) * sizeof(V));
    item_kernel<I, V><<<static_cast<unsigned>(plan->nitems_), kBlock, 0, s.stream()>>>(p, plan->items_, pm.as<V>(),
                                                                                       pl.as<V>(), pacc.as<V>());
    check_launch("csr_attention.fused (long-row items)");
    merge_kernel<I, V><<<static_cast<unsigned>(plan->nrows_), kBlock, 0, s.stream()>>>(p, plan->rows_, pm.as<V>(),
                                                                                       pl.as<V>(), pacc.as<V>());
    check_launch("csr_attention.fused (long-row merge)");
  });
}

}  // namespace

void csr_attention_fused(const State& s, const sparseport_attention_args& a, bool deterministic) {
  const bool vec4 = vec4_rows(a.q.data, a.q.ld, a.q.cols) && vec4_rows(a.k.data, a.k.ld, a.k.cols) &&
                    vec4_rows(a.v.data, a.v.ld, a.v.cols) && vec4_rows(a.out.data, a.out.ld, a.out.cols);
  if (!vec4) {
    launch<1, 32>(s, a, deterministic);
    return;
  }
  switch (vec4_group(a.q.cols, 8)) {
    case 8: launch<4, 8>(s, a, deterministic); break;
    case 16: launch<4, 16>(s, a, deterministic); break;
    default: launch<4, 32>(s, a, deterministic); break;
  }
}

}  // namespace sparseport::cuda
