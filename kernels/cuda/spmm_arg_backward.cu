// SPDX-License-Identifier: Apache-2.0
// The gradients of spmm max/min through the forward's arg (sparseport_spmm_arg_backward_args):
// every output element (i, f) sends dC[i, f] to the one entry e = arg[i, f] that won it.
//  - dvalues[e] = sum over the columns f that e won of dC[i, f] * B[col(e), f]. A group of G lanes
//    per row of A holds K columns of arg and dC per lane (strided, so the loads are coalesced) and
//    walks the row's entries; an entry that won none of the tile's columns costs one ballot, one
//    that won some one gather of B where it won and a group sum. Fixed order: deterministic.
//  - dB[col(e), f] += dC[i, f] * A.val[e]. Gather: a group per row j of A^T walks its entries t
//    (the rows i of A holding column j, in A's row order, and their positions e = perm[t] in A) and
//    adds dC[i, f] * A.val[e] where arg[i, f] == e: each dB element summed in A's row order by one
//    lane, no atomics, bitwise reproducible. Scatter: dB zeroed, then a group per row of A adds each
//    won element with atomicAdd (order of arrival).
// Both read arg and dC once per entry of A (gather) or once (scatter, dvalues per tile): the
// traffic of one SpMM over A^T (gather) or of reading dC (scatter), plus the gathers of B.
#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

constexpr int kCols = 4;  // columns per lane per tile: a tile is G * kCols columns of F
constexpr int kUnroll = 4;  // entries of A^T whose arg and dC loads are in flight together (gather)

template <class I, class V>
struct BwdParams {
  int64_t m = 0, F = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const V* val = nullptr;  // null: a pattern
  const V* b = nullptr;
  int64_t ldb = 0;
  const V* dc = nullptr;
  int64_t lddc = 0;
  const I* arg = nullptr;
  int64_t ldarg = 0;
  V* db = nullptr;
  int64_t lddb = 0;
  V* dv = nullptr;
  int64_t lddv = 0;
  // A^T: k rows, the row of A of each entry and its position in A.
  int64_t k = 0;
  const I* at_rowptr = nullptr;
  const I* at_colind = nullptr;
  const I* at_perm = nullptr;
};

template <class I, class V>
BwdParams<I, V> bwd_params(const sparseport_spmm_arg_backward_args& a) {
  BwdParams<I, V> p;
  p.m = a.a.rows;
  p.F = a.dc.cols;
  p.rowptr = static_cast<const I*>(a.a.rowptr);
  p.colind = static_cast<const I*>(a.a.colind);
  p.val = static_cast<const V*>(a.a.values);
  p.b = static_cast<const V*>(a.b.data);
  p.ldb = a.b.ld;
  p.dc = static_cast<const V*>(a.dc.data);
  p.lddc = a.dc.ld;
  p.arg = static_cast<const I*>(a.arg);
  p.ldarg = a.arg_ld;
  p.db = static_cast<V*>(a.db.data);
  p.lddb = a.db.ld;
  p.dv = static_cast<V*>(a.dvalues.data);
  p.lddv = a.dvalues.ld;
  p.k = a.a.cols;
  p.at_rowptr = static_cast<const I*>(a.at_rowptr);
  p.at_colind = static_cast<const I*>(a.at_colind);
  p.at_perm = static_cast<const I*>(a.at_perm);
  return p;
}

__device__ __forceinline__ int64_t group_index(int G) {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
}
__device__ __forceinline__ int64_t group_count(int G) { return static_cast<int64_t>(gridDim.x) * blockDim.x / G; }

template <class I, class V, int G>
__global__ void __launch_bounds__(kBlock) dvalues_kernel(BwdParams<I, V> p) {
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned mask = group_mask<G>();
  for (int64_t row = group_index(G); row < p.m; row += group_count(G)) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    const I* arow = p.arg + row * p.ldarg;
    const V* dcrow = p.dc + row * p.lddc;
    for (int64_t f0 = 0; f0 < p.F; f0 += int64_t{G} * kCols) {
      I won[kCols];
      V g[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int64_t f = f0 + sub + int64_t{c} * G;
        won[c] = f < p.F ? arow[f] : I(-1);
        g[c] = f < p.F ? dcrow[f] : V(0);
      }
      for (int64_t e = e0; e < e1; ++e) {
        bool mine = false;
#pragma unroll
        for (int c = 0; c < kCols; ++c) mine |= won[c] == static_cast<I>(e);
        if (__ballot_sync(mask, mine) == 0) {
          if (f0 == 0 && sub == 0) p.dv[e * p.lddv] = V(0);
          continue;
        }
        V part = V(0);
        if (mine) {
          const V* brow = p.b + static_cast<int64_t>(p.colind[e]) * p.ldb;
#pragma unroll
          for (int c = 0; c < kCols; ++c)
            if (won[c] == static_cast<I>(e)) part = fma_of(g[c], brow[f0 + sub + int64_t{c} * G], part);
        }
        part = group_sum<G>(part, mask);
        if (sub == 0) p.dv[e * p.lddv] = f0 == 0 ? part : p.dv[e * p.lddv] + part;
      }
    }
  }
}

// A group per row j of A^T; lane `sub` owns columns f0 + sub + c * G of each tile.
template <class I, class V, int G>
__global__ void __launch_bounds__(kBlock) db_gather_kernel(BwdParams<I, V> p) {
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  for (int64_t j = group_index(G); j < p.k; j += group_count(G)) {
    const int64_t t0 = p.at_rowptr[j], t1 = p.at_rowptr[j + 1];
    V* dbrow = p.db + j * p.lddb;
    for (int64_t f0 = 0; f0 < p.F; f0 += int64_t{G} * kCols) {
      V acc[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[c] = V(0);
      int64_t t = t0;
      for (; t + kUnroll <= t1; t += kUnroll) {
        int64_t row[kUnroll];
        I pos[kUnroll];
        V w[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          row[u] = p.at_colind[t + u];
          pos[u] = p.at_perm[t + u];
          w[u] = p.val != nullptr ? p.val[pos[u]] : V(1);
        }
        I won[kUnroll][kCols];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int c = 0; c < kCols; ++c) {
            const int64_t f = f0 + sub + int64_t{c} * G;
            won[u][c] = f < p.F ? p.arg[row[u] * p.ldarg + f] : I(-1);
          }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int c = 0; c < kCols; ++c)
            if (won[u][c] == pos[u]) acc[c] = fma_of(p.dc[row[u] * p.lddc + f0 + sub + int64_t{c} * G], w[u], acc[c]);
      }
      for (; t < t1; ++t) {
        const int64_t row = p.at_colind[t];
        const I pos = p.at_perm[t];
        const V w = p.val != nullptr ? p.val[pos] : V(1);
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const int64_t f = f0 + sub + int64_t{c} * G;
          if (f < p.F && p.arg[row * p.ldarg + f] == pos) acc[c] = fma_of(p.dc[row * p.lddc + f], w, acc[c]);
        }
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int64_t f = f0 + sub + int64_t{c} * G;
        if (f < p.F) dbrow[f] = acc[c];
      }
    }
  }
}

// A group per row i of A; dB zeroed before.
template <class I, class V, int G>
__global__ void __launch_bounds__(kBlock) db_scatter_kernel(BwdParams<I, V> p) {
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  for (int64_t row = group_index(G); row < p.m; row += group_count(G)) {
    if (p.rowptr[row] == p.rowptr[row + 1]) continue;  // arg is -1 throughout
    const I* arow = p.arg + row * p.ldarg;
    const V* dcrow = p.dc + row * p.lddc;
    for (int64_t f = sub; f < p.F; f += G) {
      const int64_t e = arow[f];
      if (e < 0) continue;
      const V w = p.val != nullptr ? p.val[e] : V(1);
      atomicAdd(p.db + static_cast<int64_t>(p.colind[e]) * p.lddb + f, dcrow[f] * w);
    }
  }
}

// Lanes per group: enough for one tile of kCols columns per lane to cover F, 4 to 32.
int group_for(int64_t F) { return vec4_group(F, 4); }

template <template <class, class, int> class Kernel, class I, class V>
void launch_grouped(const State& s, const BwdParams<I, V>& p, int64_t groups, const char* what) {
  switch (group_for(p.F)) {
    case 4: Kernel<I, V, 4>::launch(s, p, groups); break;
    case 8: Kernel<I, V, 8>::launch(s, p, groups); break;
    case 16: Kernel<I, V, 16>::launch(s, p, groups); break;
    default: Kernel<I, V, 32>::launch(s, p, groups); break;
  }
  check_launch(what);
}

template <class I, class V, int G>
struct DValues {
  static void launch(const State& s, const BwdParams<I, V>& p, int64_t groups) {
    dvalues_kernel<I, V, G><<<blocks_for(groups * G), kBlock, 0, s.stream()>>>(p);
  }
};
template <class I, class V, int G>
struct DbGather {
  static void launch(const State& s, const BwdParams<I, V>& p, int64_t groups) {
    db_gather_kernel<I, V, G><<<blocks_for(groups * G), kBlock, 0, s.stream()>>>(p);
  }
};
template <class I, class V, int G>
struct DbScatter {
  static void launch(const State& s, const BwdParams<I, V>& p, int64_t groups) {
    db_scatter_kernel<I, V, G><<<blocks_for(groups * G), kBlock, 0, s.stream()>>>(p);
  }
};

}  // namespace

void spmm_arg_backward(const State& s, const sparseport_spmm_arg_backward_args& a, bool deterministic) {
  const bool want_db = a.db.data != nullptr && a.db.rows > 0 && a.db.cols > 0;
  const bool want_dv = a.dvalues.data != nullptr && a.a.nnz > 0;
  const int64_t F = a.dc.cols;
  dispatch_types(a.a.index_type, a.dc.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    BwdParams<I, V> p = bwd_params<I, V>(a);
    if (want_dv) {
      if (F == 0 || a.a.rows == 0)
        dense_fill(s, a.dvalues.data, a.a.nnz, 1, a.dvalues.ld, a.dc.value_type, 0.0);
      else
        launch_grouped<DValues>(s, p, p.m, "spmm_arg_backward (dvalues)");
    }
    if (!want_db) return;
    if (a.a.nnz == 0 || a.a.rows == 0) {
      dense_fill(s, a.db.data, a.db.rows, a.db.cols, a.db.ld, a.dc.value_type, 0.0);
      return;
    }
    const bool given = a.at_rowptr != nullptr;
    if (given || deterministic) {
      // Without the caller's A^T, build it here: its rows, and the position in A of each entry.
      Scratch at_rowptr, at_colind, at_perm;
      if (!given) {
        const size_t isz = sizeof(I), n = static_cast<size_t>(a.a.nnz);
        at_rowptr = Scratch(s, static_cast<size_t>(a.a.cols + 1) * isz);
        at_colind = Scratch(s, n * isz);
        at_perm = Scratch(s, n * isz);
        sparseport_csr pattern = a.a;
        pattern.values = nullptr;
        const sparseport_transpose_args t{
            pattern,
            {a.a.cols, a.a.rows, a.a.nnz, at_rowptr.get(), at_colind.get(), nullptr, a.a.index_type, a.a.value_type},
            at_perm.get()};
        csr_transpose(s, t);
        p.at_rowptr = at_rowptr.as<I>();
        p.at_colind = at_colind.as<I>();
        p.at_perm = at_perm.as<I>();
      }
      launch_grouped<DbGather>(s, p, p.k, "spmm_arg_backward (dB, gather over A^T)");
    } else {
      dense_fill(s, a.db.data, a.db.rows, a.db.cols, a.db.ld, a.dc.value_type, 0.0);
      launch_grouped<DbScatter>(s, p, p.m, "spmm_arg_backward (dB, atomic scatter)");
    }
  });
}

}  // namespace sparseport::cuda
