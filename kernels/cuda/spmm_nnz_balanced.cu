// SPDX-License-Identifier: Apache-2.0
// spmm.nnz_balanced: the sorted atomic-reduce. The row-major nonzeros are cut into equal chunks,
// one per group of lanes (lanes across F); a group walks its chunk, reducing in registers, and
// writes each row it finishes. Only a row that crosses a chunk boundary is combined with atomics
// (sum, mean) or through a per-chunk slot (max, min), so the work per group is the same whatever
// the degree distribution. Three steps, all on the stream:
//  1. prepare: empty rows are written; boundary rows are set to beta * C (sum, mean) or their
//     slot to the identity (max, min);
//  2. the chunks;
//  3. (max, min) boundary rows finished from their slots.
#include <algorithm>

#include "kernels/cuda/spmm_rows.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

// At least this many entries per group, so the row search at a chunk start (log2 m dependent
// loads) stays small against the chunk; larger matrices get one chunk per resident group.
constexpr int64_t kMinChunk = 128;

int64_t chunk_for(const State& s, int64_t nnz, int G) {
  const int64_t resident = int64_t{s.info().sms} * (2048 / G);
  return std::max(kMinChunk, ceil_div(nnz, resident));
}

__device__ __forceinline__ bool crosses(int64_t rs, int64_t re, int64_t chunk) {
  return re > rs && rs / chunk != (re - 1) / chunk;
}

template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock) prepare_kernel(SpmmParams<I, V> p, int64_t chunk, V* slots) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t base = warp * 32; base < p.m; base += nwarps * 32) {
    const int64_t r = base + lane;
    int64_t rs = 0, re = 0;
    bool todo = false;
    if (r < p.m) {
      rs = p.rowptr[r];
      re = p.rowptr[r + 1];
      todo = rs == re || crosses(rs, re, chunk);
    }
    unsigned pending = __ballot_sync(0xffffffffu, todo);
    while (pending != 0) {
      const int j = __ffs(pending) - 1;
      pending &= pending - 1;
      const int64_t jrs = __shfl_sync(0xffffffffu, rs, j), jre = __shfl_sync(0xffffffffu, re, j);
      V* crow = p.c + (base + j) * p.ldc;
      if (jrs == jre) {
        for (int64_t f = lane; f < p.F; f += 32) crow[f] = p.fin.empty(crow[f]);
      } else if constexpr (R == Red::sum) {
        for (int64_t f = lane; f < p.F; f += 32) crow[f] = p.fin.beta != V(0) ? p.fin.beta * crow[f] : V(0);
      } else {
        V* slot = slots + (jrs / chunk) * p.F;
        for (int64_t f = lane; f < p.F; f += 32) slot[f] = red_identity<R, V>();
      }
    }
  }
}

template <Red R, class I, class V>
__global__ void __launch_bounds__(kBlock) finish_kernel(SpmmParams<I, V> p, int64_t chunk, const V* slots) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t nwarps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t base = warp * 32; base < p.m; base += nwarps * 32) {
    const int64_t r = base + lane;
    int64_t rs = 0, re = 0;
    bool todo = false;
    if (r < p.m) {
      rs = p.rowptr[r];
      re = p.rowptr[r + 1];
      todo = crosses(rs, re, chunk);
    }
    unsigned pending = __ballot_sync(0xffffffffu, todo);
    while (pending != 0) {
      const int j = __ffs(pending) - 1;
      pending &= pending - 1;
      const int64_t jrs = __shfl_sync(0xffffffffu, rs, j), jre = __shfl_sync(0xffffffffu, re, j);
      V* crow = p.c + (base + j) * p.ldc;
      const V* slot = slots + (jrs / chunk) * p.F;
      const V count = static_cast<V>(jre - jrs);
      for (int64_t f = lane; f < p.F; f += 32)
        crow[f] = p.fin.value(slot[f], count, p.fin.beta != V(0) ? crow[f] : V(0));
    }
  }
}

template <Red R, class I, class V, int VEC>
__device__ __forceinline__ void flush_row(const SpmmParams<I, V>& p, int64_t row, int64_t rs, int64_t re,
                                          int64_t chunk, int64_t f, const VecN<V, VEC>& acc, V* slots) {
  V* c = p.c + row * p.ldc + f;
  const V count = static_cast<V>(re - rs);
  if (!crosses(rs, re, chunk)) {
    VecN<V, VEC> out;
    if (p.fin.beta != V(0)) {
      const VecN<V, VEC> old = vload_rw<V, VEC>(c);
#pragma unroll
      for (int i = 0; i < VEC; ++i) out.x[i] = p.fin.value(acc.x[i], count, old.x[i]);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) out.x[i] = p.fin.value(acc.x[i], count, V(0));
    }
    vstore<V, VEC>(c, out);
  } else if constexpr (R == Red::sum) {
    // Linear, so each chunk adds its own share: alpha * sum / count. C was set to beta * C.
#pragma unroll
    for (int i = 0; i < VEC; ++i) atomicAdd(c + i, p.fin.alpha * (p.fin.mean ? acc.x[i] / count : acc.x[i]));
  } else {
    V* slot = slots + (rs / chunk) * p.F + f;
#pragma unroll
    for (int i = 0; i < VEC; ++i) atomic_combine<R>(slot + i, acc.x[i]);
  }
}

template <Red R, class I, class V, int VEC, int G>
__global__ void __launch_bounds__(kBlock) chunk_kernel(SpmmParams<I, V> p, int64_t nnz, int64_t chunk, V* slots) {
  constexpr int U = VEC == 1 ? 8 : 4;
  const int64_t worker = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const int64_t z0 = worker * chunk;
  if (z0 >= nnz) return;  // the whole group leaves together
  const int64_t z1 = z0 + chunk < nnz ? z0 + chunk : nnz;
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned mask = group_mask<G>();
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const V* __restrict__ b = p.b;
  const int64_t first_row = row_of(p.rowptr, p.m, z0);
  for (int64_t f0 = 0; f0 < p.F; f0 += int64_t{G} * VEC) {
    const int64_t f = f0 + int64_t{sub} * VEC;
    const bool active = f < p.F;
    int64_t row = first_row, rs = p.rowptr[row], re = p.rowptr[row + 1];
    VecN<V, VEC> acc;
    vfill(acc, red_identity<R, V>());
    for (int64_t base = z0; base < z1; base += G) {
      const int n = static_cast<int>(z1 - base < G ? z1 - base : G);
      I my_c = 0;
      V my_w = V(0);
      if (sub < n) {
        my_c = colind[base + sub];
        my_w = val != nullptr ? val[base + sub] : V(1);
      }
      // Entry e joins the accumulator; a row change first writes the finished row.
      auto step = [&](int64_t e, V w, const VecN<V, VEC>& bv) {
        if (e >= re) {
          if (active) flush_row<R>(p, row, rs, re, chunk, f, acc, slots);
          do {
            ++row;
            rs = re;
            re = p.rowptr[row + 1];
          } while (e >= re);
          vfill(acc, red_identity<R, V>());
        }
        if (active) vaccumulate<R>(acc, w, bv);
      };
      int j = 0;
      for (; j + U <= n; j += U) {
        VecN<V, VEC> bv[U];
        V w[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const I cc = __shfl_sync(mask, my_c, j + u, G);
          w[u] = __shfl_sync(mask, my_w, j + u, G);
          if (active) bv[u] = vload<V, VEC>(b + static_cast<int64_t>(cc) * p.ldb + f);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) step(base + j + u, w[u], bv[u]);
      }
      for (; j < n; ++j) {
        const I cc = __shfl_sync(mask, my_c, j, G);
        const V w = __shfl_sync(mask, my_w, j, G);
        VecN<V, VEC> bv;
        if (active) bv = vload<V, VEC>(b + static_cast<int64_t>(cc) * p.ldb + f);
        step(base + j, w, bv);
      }
    }
    if (active) flush_row<R>(p, row, rs, re, chunk, f, acc, slots);
  }
}

template <int VEC, int G>
void launch(const State& s, const sparseport_spmm_args& a) {
  const int64_t nnz = a.a.nnz;
  const int64_t chunk = chunk_for(s, nnz, G);
  const int64_t workers = ceil_div(nnz, chunk);
  dispatch_types(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SpmmParams<I, V> p = spmm_params<I, V>(a);
    dispatch_reduce(a.reduce, [&](auto r) {
      constexpr Red R = decltype(r)::value;
      Scratch slots;
      if constexpr (R != Red::sum) slots = Scratch(s, static_cast<size_t>(workers * p.F) * sizeof(V));
      const unsigned row_blocks = blocks_for(ceil_div(p.m, 32) * 32);
      prepare_kernel<R, I, V><<<row_blocks, kBlock, 0, s.stream()>>>(p, chunk, slots.as<V>());
      check_launch("spmm.nnz_balanced (prepare)");
      chunk_kernel<R, I, V, VEC, G><<<blocks_for(workers * G), kBlock, 0, s.stream()>>>(p, nnz, chunk, slots.as<V>());
      check_launch("spmm.nnz_balanced");
      if constexpr (R != Red::sum) {
        finish_kernel<R, I, V><<<row_blocks, kBlock, 0, s.stream()>>>(p, chunk, slots.as<V>());
        check_launch("spmm.nnz_balanced (finish)");
      }
    });
  });
}

}  // namespace

void spmm_nnz_balanced(const State& s, const sparseport_spmm_args& a) {
  if (vec4_rows(a.b.data, a.b.ld, a.b.cols) && vec4_rows(a.c.data, a.c.ld, a.c.cols)) {
    switch (vec4_group(a.b.cols, 8)) {
      case 8: launch<4, 8>(s, a); break;
      case 16: launch<4, 16>(s, a); break;
      default: launch<4, 32>(s, a); break;
    }
  } else {
    launch<1, 32>(s, a);
  }
}

}  // namespace sparseport::cuda
