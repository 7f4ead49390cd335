// SPDX-License-Identifier: Apache-2.0
// segment_reduce.nnz_balanced and gather_scatter.nnz_balanced: the messages (sorted by
// destination) are cut into equal chunks, one per group of lanes, lanes across F with 16-byte
// vectors where F and the alignment allow. A group reduces each run of equal destinations in
// registers and stores it once; only a run that crosses a chunk boundary is combined atomically.
// The work per group is fixed, so the time does not depend on how skewed the destinations are.
// Steps: out = 0; (max, min) runs that cross a boundary set to the identity; the chunks.
#include <algorithm>

#include "kernels/cuda/segment.cuh"

namespace sparseport::cuda {
namespace {

constexpr int64_t kMinChunk = 128;  // entries per group at least; see spmm_nnz_balanced.cu

// Number of messages with destination k (binary searches over the sorted keys).
template <class I>
__device__ int64_t run_length(const I* key, int64_t E, int64_t k) {
  int64_t lo = 0, hi = E;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(key[mid]) < k) lo = mid + 1; else hi = mid;
  }
  const int64_t first = lo;
  hi = E;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(key[mid]) <= k) lo = mid + 1; else hi = mid;
  }
  return lo - first;
}

template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock) boundary_init_kernel(SegParams<I, V> p, int64_t chunk, int64_t nchunks) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t k = warp + 1; k < nchunks; k += nwarps) {
    const int64_t z = k * chunk;
    const int64_t seg = p.key[z];
    if (static_cast<int64_t>(p.key[z - 1]) != seg) continue;
    // Every boundary inside one run writes the same identity: the overlap is harmless.
    for (int64_t f = lane; f < p.F; f += 32) p.out[seg * p.ldo + f] = red_identity<R, V>();
  }
}

template <Red R, class I, class V, int VEC>
__device__ __forceinline__ void flush_run(const SegParams<I, V>& p, int64_t seg, bool boundary, int64_t f,
                                          const VecN<V, VEC>& acc, int64_t count) {
  V* o = p.out + seg * p.ldo + f;
  if (!boundary) {
    VecN<V, VEC> r = acc;
    if (p.mean) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) r.x[i] = acc.x[i] / static_cast<V>(count);
    }
    vstore<V, VEC>(o, r);
  } else if constexpr (R == Red::sum) {
    const V total = p.mean ? static_cast<V>(run_length(p.key, p.E, seg)) : V(1);
#pragma unroll
    for (int i = 0; i < VEC; ++i) atomicAdd(o + i, p.mean ? acc.x[i] / total : acc.x[i]);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) atomic_combine<R>(o + i, acc.x[i]);
  }
}

template <Red R, class I, class V, int VEC, int G>
__global__ void __launch_bounds__(kBlock) chunk_kernel(SegParams<I, V> p, int64_t chunk) {
  constexpr int U = VEC == 1 ? 8 : 4;
  const int64_t worker = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const int64_t z0 = worker * chunk;
  if (z0 >= p.E) return;  // the whole group leaves together
  const int64_t z1 = z0 + chunk < p.E ? z0 + chunk : p.E;
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned mask = group_mask<G>();
  const int64_t head = z0 > 0 ? static_cast<int64_t>(p.key[z0 - 1]) : -1;
  const int64_t tail = z1 < p.E ? static_cast<int64_t>(p.key[z1]) : -1;
  const I* __restrict__ key = p.key;
  const I* __restrict__ pick = p.pick;
  const V* __restrict__ wt = p.w;
  const V* __restrict__ src = p.src;
  for (int64_t f0 = 0; f0 < p.F; f0 += int64_t{G} * VEC) {
    const int64_t f = f0 + int64_t{sub} * VEC;
    const bool active = f < p.F;
    int64_t seg = -1, count = 0;
    VecN<V, VEC> acc;
    vfill(acc, red_identity<R, V>());
    auto step = [&](int64_t k, V w, const VecN<V, VEC>& bv) {
      if (k != seg) {
        if (seg >= 0 && active) flush_run<R>(p, seg, seg == head || seg == tail, f, acc, count);
        seg = k;
        count = 0;
        vfill(acc, red_identity<R, V>());
      }
      ++count;
      if (active) vaccumulate<R>(acc, w, bv);
    };
    for (int64_t base = z0; base < z1; base += G) {
      const int n = static_cast<int>(z1 - base < G ? z1 - base : G);
      I my_k = 0, my_c = 0;
      V my_w = V(1);
      if (sub < n) {
        my_k = key[base + sub];
        if (pick != nullptr) my_c = pick[base + sub];
        if (wt != nullptr) my_w = wt[base + sub];
      }
      int j = 0;
      for (; j + U <= n; j += U) {
        VecN<V, VEC> bv[U];
        V w[U];
        int64_t k[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          k[u] = __shfl_sync(mask, my_k, j + u, G);
          w[u] = __shfl_sync(mask, my_w, j + u, G);
          const int64_t row = pick != nullptr ? static_cast<int64_t>(__shfl_sync(mask, my_c, j + u, G)) : base + j + u;
          if (active) bv[u] = vload<V, VEC>(src + row * p.lds + f);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) step(k[u], w[u], bv[u]);
      }
      for (; j < n; ++j) {
        const int64_t k = __shfl_sync(mask, my_k, j, G);
        const V w = __shfl_sync(mask, my_w, j, G);
        const int64_t row = pick != nullptr ? static_cast<int64_t>(__shfl_sync(mask, my_c, j, G)) : base + j;
        VecN<V, VEC> bv;
        if (active) bv = vload<V, VEC>(src + row * p.lds + f);
        step(k, w, bv);
      }
    }
    if (seg >= 0 && active) flush_run<R>(p, seg, seg == head || seg == tail, f, acc, count);
  }
}

template <int VEC, int G, class I, class V>
void launch(const State& s, int32_t reduce, const SegParams<I, V>& p) {
  const int64_t resident = int64_t{s.info().sms} * (2048 / G);
  const int64_t chunk = std::max(kMinChunk, ceil_div(p.E, resident));
  const int64_t nchunks = ceil_div(p.E, chunk);
  dispatch_reduce(reduce, [&](auto r) {
    constexpr Red R = decltype(r)::value;
    if constexpr (R != Red::sum) {
      if (nchunks > 1) {
        boundary_init_kernel<R, I, V><<<blocks_for((nchunks - 1) * 32), kBlock, 0, s.stream()>>>(p, chunk, nchunks);
        check_launch("sorted reduction (boundary init)");
      }
    }
    chunk_kernel<R, I, V, VEC, G><<<blocks_for(nchunks * G), kBlock, 0, s.stream()>>>(p, chunk);
    check_launch("sorted reduction");
  });
}

}  // namespace

void reduce_sorted(const State& s, int32_t index_type, int32_t value_type, int32_t reduce, const void* params) {
  dispatch_types(index_type, value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SegParams<I, V>& p = *static_cast<const SegParams<I, V>*>(params);
    dense_fill(s, p.out, p.N, p.F, p.ldo, value_type, 0.0);  // empty segments give 0
    if (p.E == 0 || p.F == 0) return;
    const bool vec4 = vec4_rows(p.src, p.lds, p.F) && vec4_rows(p.out, p.ldo, p.F);
    if (vec4) {
      switch (vec4_group(p.F, 8)) {
        case 8: launch<4, 8>(s, reduce, p); break;
        case 16: launch<4, 16>(s, reduce, p); break;
        default: launch<4, 32>(s, reduce, p); break;
      }
    } else {
      launch<1, 32>(s, reduce, p);
    }
  });
}

void segment_reduce_nnz_balanced(const State& s, const sparseport_segment_args& a) {
  dispatch_types(a.index.index_type, a.src.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_sorted(s, a.index.index_type, a.src.value_type, a.reduce, &p);
  });
}

void gather_scatter_nnz_balanced(const State& s, const sparseport_gather_scatter_args& a) {
  dispatch_types(a.edges.index_type, a.x.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_sorted(s, a.edges.index_type, a.x.value_type, a.reduce, &p);
  });
}

}  // namespace sparseport::cuda
