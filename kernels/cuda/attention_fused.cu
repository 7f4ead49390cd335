// SPDX-License-Identifier: Apache-2.0
// csr_attention.fused: one pass per row with an online softmax (a running maximum m, the running
// sum l of exp(s - m), and the output accumulated and rescaled whenever m grows). A group of G
// lanes owns a row; each step scores U entries (dot products reduced by shuffles) and adds U
// rows of V. The output is held in registers KV tiles of G * VEC columns at a time; a wider Fv
// takes several passes over the row, each recomputing the scores.
//
// Rows longer than the hub threshold (SPARSEPORT_HUB_T, as spmm.hub_split) would hold one group
// for their whole length (rmat:20:16 at F = 64: 17 ms against 4.6 ms unfused, H100, 2026-11), so
// they are split like flash-decoding: each item of up to CH entries is one CTA whose warps run
// the online softmax on their share and merge (m, l, acc) in shared memory; a last kernel merges
// the items of each long row. The partition comes from rowptr and is kept in the plan cache.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/attention.cuh"

namespace sparseport::cuda {
namespace {

template <class I, class V, int VEC, int G>
__global__ void __launch_bounds__(kBlock) fused_kernel(AttnParams<I, V> p) {
  constexpr int KV = 4;
  constexpr int U = 2;
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned mask = group_mask<G>();
  const int64_t group = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const int64_t ngroups = static_cast<int64_t>(gridDim.x) * blockDim.x / G;
  const V neg_inf = red_identity<Red::max, V>();
  for (int64_t row = group; row < p.m; row += ngroups) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    if (e1 - e0 > p.skip_above) continue;
    V* orow = p.out + row * p.ldo;
    if (e0 == e1) {
      for (int64_t f = sub; f < p.Fv; f += G) orow[f] = V(0);
      continue;
    }
    const V* qrow = p.q + row * p.ldq;
    for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += int64_t{KV} * G * VEC) {
      V run_max = neg_inf, run_sum = V(0);
      VecN<V, VEC> acc[KV];
#pragma unroll
      for (int t = 0; t < KV; ++t) vfill(acc[t], V(0));
      for (int64_t e = e0; e < e1; e += U) {
        int64_t c[U];
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          ok[u] = e + u < e1;
          c[u] = ok[u] ? static_cast<int64_t>(p.colind[e + u]) : 0;
        }
        V s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) s[u] = V(0);
        for (int64_t f = int64_t{sub} * VEC; f < p.F; f += int64_t{G} * VEC) {
          const VecN<V, VEC> qv = vload<V, VEC>(qrow + f);
#pragma unroll
          for (int u = 0; u < U; ++u)
            if (ok[u]) {
              const VecN<V, VEC> kv = vload<V, VEC>(p.k + c[u] * p.ldk + f);
#pragma unroll
              for (int i = 0; i < VEC; ++i) s[u] += qv.x[i] * kv.x[i];
            }
        }
        V new_max = run_max;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] = group_sum<G>(s[u], mask) * p.scale;
          if (ok[u] && s[u] > new_max) new_max = s[u];
        }
        // exp(-inf) = 0 drops the empty history on the first step.
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
          const int64_t fv = fv0 + (int64_t{t} * G + sub) * VEC;
          if (fv >= p.Fv) continue;
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[t].x[i] *= corr;
#pragma unroll
          for (int u = 0; u < U; ++u)
            if (ok[u]) {
              const VecN<V, VEC> vv = vload<V, VEC>(p.v + c[u] * p.ldv + fv);
#pragma unroll
              for (int i = 0; i < VEC; ++i) acc[t].x[i] += pr[u] * vv.x[i];
            }
        }
      }
#pragma unroll
      for (int t = 0; t < KV; ++t) {
        const int64_t fv = fv0 + (int64_t{t} * G + sub) * VEC;
        if (fv >= p.Fv) continue;
        VecN<V, VEC> o;
#pragma unroll
        for (int i = 0; i < VEC; ++i) o.x[i] = acc[t].x[i] / run_sum;
        vstore<V, VEC>(orow + fv, o);
      }
    }
  }
}

// ---- the split path for long rows --------------------------------------------------------------

constexpr int64_t kItemChunk = 1024;  // entries per CTA item at least (8 warps x 128)
constexpr int kItemTile = 128;        // output columns per pass of an item: 4 per lane

struct AttnItem {
  int64_t row, begin, end;
};
struct LongRow {
  int64_t row, first, count;  // its items are first .. first + count - 1
};

class AttnPlan : public Plan {
 public:
  explicit AttnPlan(cudaStream_t stream) : stream_(stream) {}
  ~AttnPlan() override {
    if (items_ != nullptr) (void)cudaFreeAsync(items_, stream_);
    if (rows_ != nullptr) (void)cudaFreeAsync(rows_, stream_);
  }
  AttnItem* items_ = nullptr;
  LongRow* rows_ = nullptr;
  int64_t nitems_ = 0, nrows_ = 0;

 private:
  cudaStream_t stream_;
};

template <class T>
T* to_pool(const State& s, const std::vector<T>& v, const char* what) {
  if (v.empty()) return nullptr;
  void* p = nullptr;
  check(cudaMallocFromPoolAsync(&p, v.size() * sizeof(T), s.pool(), s.stream()), what);
  check(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s.stream()), what);
  return static_cast<T*>(p);
}

template <class I>
std::shared_ptr<AttnPlan> build_plan(const State& s, const sparseport_csr& a, int64_t threshold) {
  std::vector<I> rowptr(static_cast<size_t>(a.rows + 1));
  check(cudaMemcpyAsync(rowptr.data(), a.rowptr, rowptr.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (csr_attention.fused reads rowptr)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (csr_attention.fused plan)");
  std::vector<AttnItem> items;
  std::vector<LongRow> rows;
  const int64_t spread = int64_t{8} * s.info().sms;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t e0 = rowptr[static_cast<size_t>(r)], e1 = rowptr[static_cast<size_t>(r) + 1];
    if (e1 - e0 <= threshold) continue;
    const int64_t ch = std::max(kItemChunk, ceil_div(e1 - e0, spread));
    const int64_t first = static_cast<int64_t>(items.size());
    for (int64_t b = e0; b < e1; b += ch) items.push_back({r, b, std::min(e1, b + ch)});
    rows.push_back({r, first, static_cast<int64_t>(items.size()) - first});
  }
  auto plan = std::make_shared<AttnPlan>(s.stream());
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

template <int VEC, int G>
void launch(const State& s, const sparseport_attention_args& a) {
  const int64_t threshold = hub_threshold();
  dispatch_types(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const std::string key = "csr_attention.fused|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                            std::to_string(a.a.rows) + "|" + std::to_string(a.a.nnz) + "|" +
                            std::to_string(sizeof(I)) + "|" + std::to_string(threshold);
    std::shared_ptr<AttnPlan> plan = std::static_pointer_cast<AttnPlan>(s.plans().find(key));
    if (plan == nullptr) {
      plan = build_plan<I>(s, a.a, threshold);
      s.plans().insert(key, plan);
    }
    AttnParams<I, V> p = attn_params<I, V>(a);
    p.skip_above = threshold;
    fused_kernel<I, V, VEC, G><<<blocks_for(a.a.rows * G), kBlock, 0, s.stream()>>>(p);
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

void csr_attention_fused(const State& s, const sparseport_attention_args& a) {
  const bool vec4 = vec4_rows(a.q.data, a.q.ld, a.q.cols) && vec4_rows(a.k.data, a.k.ld, a.k.cols) &&
                    vec4_rows(a.v.data, a.v.ld, a.v.cols) && vec4_rows(a.out.data, a.out.ld, a.out.cols);
  if (!vec4) {
    launch<1, 32>(s, a);
    return;
  }
  switch (vec4_group(a.q.cols, 8)) {
    case 8: launch<4, 8>(s, a); break;
    case 16: launch<4, 16>(s, a); break;
    default: launch<4, 32>(s, a); break;
  }
}

}  // namespace sparseport::cuda
