// SPDX-License-Identifier: Apache-2.0
// The atomic baselines: segment_reduce.atomic, scatter_reduce.atomic and gather_scatter.atomic
// (what PyG's scatter and torch's index_add_ do): a warp per message, every element one atomic
// update of its destination row. out starts at 0 (sum, mean) or the identity (max, min); mean,
// max and min also count the messages per row, then a last pass divides (mean) or turns rows
// without messages into 0 (max, min).
#include <cmath>

#include "kernels/cuda/segment.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock) scatter_kernel(SegParams<I, V> p, unsigned* counts) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t e = warp; e < p.E; e += nwarps) {
    const int64_t k = p.key[e];
    const int64_t row = p.pick != nullptr ? static_cast<int64_t>(p.pick[e]) : e;
    const V w = p.w != nullptr ? p.w[e] : V(1);
    for (int64_t f = lane; f < p.F; f += 32) atomic_combine<R>(p.out + k * p.ldo + f, w * __ldg(p.src + row * p.lds + f));
    if (counts != nullptr && lane == 0) atomicAdd(counts + k, 1u);
  }
}

template <class V>
__global__ void __launch_bounds__(kBlock) finish_kernel(V* out, int64_t N, int64_t F, int64_t ldo,
                                                        const unsigned* counts, bool mean) {
  const int64_t total = N * F;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = t / F;
    V& o = out[n * ldo + t % F];
    const unsigned c = counts[n];
    if (c == 0)
      o = V(0);
    else if (mean)
      o = o / static_cast<V>(c);
  }
}

}  // namespace

void reduce_atomic(const State& s, int32_t index_type, int32_t value_type, int32_t reduce, const void* params) {
  dispatch_types(index_type, value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SegParams<I, V>& p = *static_cast<const SegParams<I, V>*>(params);
    dispatch_reduce(reduce, [&](auto r) {
      constexpr Red R = decltype(r)::value;
      const double init = R == Red::sum ? 0.0 : (R == Red::max ? -HUGE_VAL : HUGE_VAL);
      dense_fill(s, p.out, p.N, p.F, p.ldo, value_type, init);
      Scratch counts;
      if (R != Red::sum || p.mean) {
        counts = Scratch(s, static_cast<size_t>(p.N) * sizeof(unsigned));
        check(cudaMemsetAsync(counts.get(), 0, static_cast<size_t>(p.N) * sizeof(unsigned), s.stream()),
              "cudaMemsetAsync (message counts)");
      }
      if (p.E > 0 && p.F > 0) {
        scatter_kernel<R, I, V><<<blocks_for(p.E * 32), kBlock, 0, s.stream()>>>(p, counts.as<unsigned>());
        check_launch("atomic scatter");
      }
      if (counts.get() != nullptr) {
        if (p.F == 0 || p.E == 0) {
          dense_fill(s, p.out, p.N, p.F, p.ldo, value_type, 0.0);
        } else {
          finish_kernel<V><<<blocks_for(p.N * p.F), kBlock, 0, s.stream()>>>(p.out, p.N, p.F, p.ldo,
                                                                             counts.as<unsigned>(), p.mean);
          check_launch("atomic scatter (finish)");
        }
      }
    });
  });
}

void segment_reduce_atomic(const State& s, const sparseport_segment_args& a) {
  dispatch_types(a.index.index_type, a.src.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_atomic(s, a.index.index_type, a.src.value_type, a.reduce, &p);
  });
}

void gather_scatter_atomic(const State& s, const sparseport_gather_scatter_args& a) {
  dispatch_types(a.edges.index_type, a.x.value_type, [&](auto i, auto v) {
    const auto p = seg_params<decltype(i), decltype(v)>(a);
    reduce_atomic(s, a.edges.index_type, a.x.value_type, a.reduce, &p);
  });
}

}  // namespace sparseport::cuda
