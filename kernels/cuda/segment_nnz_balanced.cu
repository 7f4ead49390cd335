// SPDX-License-Identifier: Apache-2.0
// segment_reduce.nnz_balanced and gather_scatter.nnz_balanced: the messages (sorted by
// destination) are cut into equal chunks, one per group of lanes, lanes across F with 16-byte
// vectors where F and the alignment allow. A group reduces each run of equal destinations in
// registers and stores it once; only a run that crosses a chunk boundary is combined atomically.
// The work per group is fixed, so the time does not depend on how skewed the destinations are.
// Steps: out = 0; (max, min) runs that cross a boundary set to the identity; the chunks.
//
// The deterministic variants (segment_reduce / gather_scatter .nnz_balanced_deterministic, and
// scatter_reduce.sort_segment after its sort) use no atomics and fix the order of every
// floating-point operation. The chunks have a length that depends on E and F only (det_chunk), and
// each run is summed inside a chunk in message order. A chunk leaves the raw piece of the run that
// enters it (head) and of the run that leaves it (tail) in slots; then fix-up passes combine the
// pieces in message order through a fixed tree: pass L folds, for each unit of 32 units of level L
// (level 0: chunks), the pieces of its children in order, finishes every run that begins and ends
// inside it, and leaves its own head and tail pieces for pass L + 1, until one unit is left. So a
// run's result depends on its messages, E and F only: the same bits for every run, alignment,
// device and launch shape, and a mega-segment is still folded 32 pieces at a time (3 passes at
// most).
#include <algorithm>
#include <vector>

#include "kernels/cuda/segment.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

constexpr int64_t kMinChunk = 128;  // entries per group at least; see spmm_nnz_balanced.cu

// Deterministic mode: about one chunk per resident lane group, as the default variant has on a
// 132-SM GPU (kDetChunks groups of 8 lanes; fewer, wider groups at larger F, with the width the
// vec4 path takes at that F), at least kMinChunk messages: a function of E and F only, never of
// the alignment (which picks the lane shape) or the device. Fix-up units of kDetFanout units of the
// level below. (E / 32768 messages whatever F cost 13% more than the default on
// megarow:2000000:16:0.05 at F = 128, H200: four times the chunks of 32 lanes.)
constexpr int64_t kDetChunks = 32768;
constexpr int64_t kDetFanout = 32;

int64_t det_chunk(int64_t E, int64_t F) {
  return std::max(kMinChunk, ceil_div(E, kDetChunks * 8 / vec4_group(F, 8)));
}

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

// Deterministic mode: a chunk's raw piece of a run that crosses its start (head) or its end (tail)
// goes to its slot; a run crossing both is the head.
template <class V>
struct DetSlots {
  V* head = nullptr;
  V* tail = nullptr;
};

// The deterministic instantiations are held to the default ones' occupancy (3 CTAs an SM at fp32,
// 2 at fp64): left alone, ptxas gave them 96-102 registers against 80 (2 CTAs), and they ran 20%
// slower (megarow:2000000:16:0.05, F = 32, H200: 1.71 ms against 1.42 ms for the chunks).
template <Red R, bool kDet, class I, class V, int VEC, int G>
__global__ void __launch_bounds__(kBlock, kDet ? (sizeof(V) == 4 ? 3 : 2) : 1)
    chunk_kernel(SegParams<I, V> p, int64_t chunk, DetSlots<V> slots) {
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
    auto flush = [&]() {
      if constexpr (kDet) {
        if (seg == head || seg == tail)  // one store either way, as the default's one atomic path
          vstore<V, VEC>((seg == head ? slots.head : slots.tail) + worker * p.F + f, acc);
        else
          flush_run<R>(p, seg, false, f, acc, count);
      } else {
        flush_run<R>(p, seg, seg == head || seg == tail, f, acc, count);
      }
    };
    auto step = [&](int64_t k, V w, const VecN<V, VEC>& bv) {
      if (k != seg) {
        if (seg >= 0 && active) flush();
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
    if (seg >= 0 && active) flush();
  }
}

// Deterministic mode, one fix-up pass: a warp per unit U of level L + 1 (kDetFanout = 32 units of
// level L, each `len` messages long) and per 32 columns, a column per lane. It walks U's children
// in order: the head piece of a child continues the run of the child before it (or, for the first
// child, the run entering U); a run that ends inside U and began inside U is finished into out,
// the piece of the run entering U becomes U's head, and the piece of the run leaving U its tail.
// `head` and `tail` are level L's slots, `up_head` and `up_tail` level L + 1's. Lane c first reads
// child c's boundaries (and, for mean, the length of the run ending in it); the warp shares them
// as bit masks, and every lane loads its column's pieces before folding them: the pass is a few
// memory latencies, not 32 children's worth of dependent loads per column.
template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock) fixup_kernel(SegParams<I, V> p, int64_t len, int64_t nunits,
                                                       int64_t nparents, const V* head, const V* tail, V* up_head,
                                                       V* up_tail) {
  static_assert(kDetFanout == 32, "a child per lane");
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const int64_t tiles = (p.F + 31) / 32;
  const I* __restrict__ key = p.key;
  for (int64_t w = warp; w < nparents * tiles; w += nwarps) {
    const int64_t up = w / tiles, f = (w % tiles) * 32 + lane;
    const bool column = f < p.F;
    const int64_t c0 = up * kDetFanout;
    const int64_t n = c0 + kDetFanout < nunits ? kDetFanout : nunits - c0;
    bool has_head = false, has_tail = false, through = false;
    long long seg = 0;  // the key at the child's start: the run that enters it
    V count = V(1);
    if (lane < n) {
      const int64_t sc = (c0 + lane) * len, ec = sc + len < p.E ? sc + len : p.E;
      const int64_t first = key[sc], last = key[ec - 1];
      has_head = sc > 0 && static_cast<int64_t>(key[sc - 1]) == first;
      has_tail = ec < p.E && static_cast<int64_t>(key[ec]) == last;
      through = has_head && has_tail && first == last;
      seg = first;
      if (p.mean && has_head && !through) count = static_cast<V>(run_length(key, p.E, first));
    }
    const unsigned heads = __ballot_sync(kAll, has_head), throughs = __ballot_sync(kAll, through);
    const unsigned tails = __ballot_sync(kAll, has_tail) & ~throughs;  // a through child's piece is its head
    V hv[kDetFanout], tv[kDetFanout];
#pragma unroll
    for (int c = 0; c < kDetFanout; ++c) {
      hv[c] = column && ((heads >> c) & 1u) ? head[(c0 + c) * p.F + f] : V(0);
      tv[c] = column && ((tails >> c) & 1u) ? tail[(c0 + c) * p.F + f] : V(0);
    }
    V acc = V(0);
    bool active = false, entering = false;  // a run in progress; it entered U from before
#pragma unroll
    for (int c = 0; c < kDetFanout; ++c) {
      const long long run = __shfl_sync(kAll, seg, c);
      const V cnt = __shfl_sync(kAll, count, c);
      if ((heads >> c) & 1u) {
        acc = c == 0 ? hv[c] : red_combine<R>(acc, hv[c]);
        entering = entering || c == 0;
        active = true;
        if (!((throughs >> c) & 1u)) {
          if (column) {
            if (entering)
              up_head[up * p.F + f] = acc;
            else
              p.out[run * p.ldo + f] = p.mean ? acc / cnt : acc;
          }
          active = entering = false;
        }
      }
      if ((tails >> c) & 1u) {
        acc = tv[c];
        active = true;
        entering = false;
      }
    }
    if (active && column) (entering ? up_head : up_tail)[up * p.F + f] = acc;
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
    chunk_kernel<R, false, I, V, VEC, G><<<blocks_for(nchunks * G), kBlock, 0, s.stream()>>>(p, chunk, {});
    check_launch("sorted reduction");
  });
}

// Deterministic mode: the chunks, then one fix-up pass per level until one unit is left. Slots of
// level L: head and tail pieces of F values per unit, all levels in one scratch buffer.
template <int VEC, int G, class I, class V>
void launch_deterministic(const State& s, int32_t reduce, const SegParams<I, V>& p) {
  const int64_t chunk = det_chunk(p.E, p.F);
  const int64_t nchunks = ceil_div(p.E, chunk);
  std::vector<int64_t> units{nchunks};  // units per level
  while (units.back() > 1) units.push_back(ceil_div(units.back(), kDetFanout));
  std::vector<int64_t> offset(units.size(), 0);  // first unit of each level in the slot arrays
  for (size_t l = 1; l < units.size(); ++l) offset[l] = offset[l - 1] + units[l - 1];
  const int64_t total = offset.back() + units.back();
  if (nchunks == 1) {
    dispatch_reduce(reduce, [&](auto r) {
      constexpr Red R = decltype(r)::value;
      chunk_kernel<R, true, I, V, VEC, G><<<blocks_for(G), kBlock, 0, s.stream()>>>(p, chunk, {});
    });
    check_launch("sorted reduction (deterministic)");
    return;
  }
  const size_t slot_bytes = static_cast<size_t>(total * p.F) * sizeof(V);
  Scratch heads(s, slot_bytes), tails(s, slot_bytes);
  V* h = heads.as<V>();
  V* t = tails.as<V>();
  dispatch_reduce(reduce, [&](auto r) {
    constexpr Red R = decltype(r)::value;
    chunk_kernel<R, true, I, V, VEC, G><<<blocks_for(nchunks * G), kBlock, 0, s.stream()>>>(p, chunk,
                                                                                              {h, t});
    check_launch("sorted reduction (deterministic)");
    int64_t len = chunk;
    for (size_t l = 0; l + 1 < units.size(); ++l) {
      fixup_kernel<R, I, V><<<blocks_for(units[l + 1] * ceil_div(p.F, 32) * 32), kBlock, 0, s.stream()>>>(
          p, len, units[l], units[l + 1], h + offset[l] * p.F, t + offset[l] * p.F, h + offset[l + 1] * p.F,
          t + offset[l + 1] * p.F);
      check_launch("sorted reduction (deterministic fix-up)");
      len *= kDetFanout;
    }
  });
}

}  // namespace

void reduce_sorted(const State& s, int32_t index_type, int32_t value_type, int32_t reduce, const void* params,
                   bool deterministic) {
  dispatch_types(index_type, value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SegParams<I, V>& p = *static_cast<const SegParams<I, V>*>(params);
    dense_fill(s, p.out, p.N, p.F, p.ldo, value_type, 0.0);  // empty segments give 0
    if (p.E == 0 || p.F == 0) return;
    const bool vec4 = vec4_rows(p.src, p.lds, p.F) && vec4_rows(p.out, p.ldo, p.F);
    if (deterministic) {
      // The lane shape changes which lane holds a column, never the order a column is summed in.
      if (!vec4) {
        launch_deterministic<1, 32>(s, reduce, p);
        return;
      }
      switch (vec4_group(p.F, 8)) {
        case 8: launch_deterministic<4, 8>(s, reduce, p); break;
        case 16: launch_deterministic<4, 16>(s, reduce, p); break;
        default: launch_deterministic<4, 32>(s, reduce, p); break;
      }
      return;
    }
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

void segment_reduce_nnz_balanced_deterministic(const State& s, const sparseport_segment_args& a) {
  dispatch_types(a.index.index_type, a.src.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_sorted(s, a.index.index_type, a.src.value_type, a.reduce, &p, true);
  });
}

void gather_scatter_nnz_balanced_deterministic(const State& s, const sparseport_gather_scatter_args& a) {
  dispatch_types(a.edges.index_type, a.x.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_sorted(s, a.edges.index_type, a.x.value_type, a.reduce, &p, true);
  });
}

namespace {
template <class I>
__global__ void __launch_bounds__(kBlock) iota_kernel(I* out, int64_t n) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[e] = static_cast<I>(e);
}
}  // namespace

// scatter_reduce.sort_segment: (index, position) pairs sorted by index with CUB's stable radix sort
// (integers only, so the permutation is the same every run), then the deterministic sorted
// reduction with the sorted index as destinations and the permutation picking src rows: messages
// of one destination are reduced in their original order, and E x F is never copied.
void scatter_reduce_sort_segment(const State& s, const sparseport_segment_args& a) {
  dispatch_types(a.index.index_type, a.src.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    SegParams<I, V> p = seg_params<I, V>(a);
    if (p.E == 0 || p.F == 0) {
      reduce_sorted(s, a.index.index_type, a.src.value_type, a.reduce, &p, true);  // out = 0
      return;
    }
    const size_t bytes = static_cast<size_t>(p.E) * sizeof(I);
    Scratch keys(s, bytes), positions(s, bytes), perm(s, bytes);
    iota_kernel<I><<<blocks_for(p.E), kBlock, 0, s.stream()>>>(positions.as<I>(), p.E);
    check_launch("scatter_reduce.sort_segment (positions)");
    int bits = 1;  // destinations lie in [0, N)
    while (bits < 8 * static_cast<int>(sizeof(I)) - 1 && (int64_t{1} << bits) < p.N) ++bits;
    sort_pairs(s, p.key, keys.get(), positions.get(), perm.get(), p.E, bits, a.index.index_type);
    p.key = keys.as<I>();
    p.pick = perm.as<I>();
    reduce_sorted(s, a.index.index_type, a.src.value_type, a.reduce, &p, true);
  });
}

}  // namespace sparseport::cuda
