// SPDX-License-Identifier: Apache-2.0
// spmm.vector_rows (F <= 16): CSR-vector generalised to a few columns. A group of G lanes owns a
// row; lane `sub` takes the row's entries sub, sub + G, ... (so the group reads colind and values
// coalesced), U at a time with their rows of B gathered before the first is used, and folds all
// F columns of each product into its registers; the group's partials are then combined by
// recursive halving (spmm_small_f.cuh) and each lane writes the columns it ends up holding.
// G (2 to 32) follows the mean row length: the fewest lanes that take a mean row in one round of U
// entries per lane, so short rows do not leave lanes idle and longer ones keep U x G gathers in
// flight. SPARSEPORT_SMALLF_LANES overrides it (for tuning; ignored in deterministic mode). A long
// row still holds one group: spmm.merge_path is the variant for skewed rows.
#include <cstdlib>
#include <string>

#include "kernels/cuda/spmm_small_f.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

template <Red R, class I, class V, int FT>
__global__ void __launch_bounds__(kBlock) vector_rows_kernel(SpmmParams<I, V> p, int log2g, bool vec) {
  constexpr int U = kSmallInFlight<FT>;
  const int G = 1 << log2g;
  const int sub = static_cast<int>(threadIdx.x) & (G - 1);
  const unsigned lane = threadIdx.x & 31u;
  const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1u) << (lane & ~unsigned(G - 1));
  const int64_t ngroups = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> log2g;
  using A = acc_t<V>;
  const I* __restrict__ colind = p.colind;
  const V* __restrict__ val = p.val;
  const V* __restrict__ b = p.b;
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> log2g; row < p.m;
       row += ngroups) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    V* crow = p.c + row * p.ldc;
    if (e0 == e1) {
      for (int64_t f = sub; f < p.F; f += G) st_acc(crow + f, p.fin.empty(ld_acc(crow + f)));
      continue;
    }
    A acc[FT];
    fill_identity<R>(acc);
    for (int64_t e = e0 + sub; e < e1; e += int64_t{U} * G) {
      I cc[U];
      A w[U];
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t eu = e + int64_t{u} * G;
        ok[u] = eu < e1;
        cc[u] = ok[u] ? colind[eu] : I(0);
        w[u] = ok[u] ? (val != nullptr ? widen(val[eu]) : A(1)) : A(0);
      }
      A bv[U][FT];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) load_small<V, FT>(b + static_cast<int64_t>(cc[u]) * p.ldb, p.F, vec, bv[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) fold_small<R>(acc, w[u], bv[u]);
    }
    const SmallShare share = group_reduce_small<R>(acc, log2g, sub, mask);
    if (share.writer) write_small<V, FT>(crow, p.F, p.fin, acc, static_cast<A>(e1 - e0), share);
  }
}

// log2 of the lanes per row: SPARSEPORT_SMALLF_LANES (2, 4, 8, 16 or 32) unless deterministic,
// else the fewest lanes (at least 2) that hold a mean row in one round of U entries each.
int log2_lanes(int64_t rows, int64_t nnz, int in_flight, bool deterministic) {
  if (const char* v = std::getenv("SPARSEPORT_SMALLF_LANES"); !deterministic && v != nullptr && *v != '\0') {
    const std::string s = v;
    for (int l = 1; l <= 5; ++l)
      if (s == std::to_string(1 << l)) return l;
    throw InvalidArgument("SPARSEPORT_SMALLF_LANES='" + s + "' is not one of 2, 4, 8, 16, 32 (lanes per row of "
                          "spmm.vector_rows)");
  }
  const double mean = static_cast<double>(nnz) / static_cast<double>(rows > 0 ? rows : 1);
  int l = 1;
  while (l < 5 && static_cast<double>((1 << l) * in_flight) < mean) ++l;
  return l;
}

}  // namespace

void spmm_vector_rows(const State& s, const sparseport_spmm_args& a, bool deterministic) {
  dispatch_types_all(a.a.index_type, a.a.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const SpmmParams<I, V> p = spmm_params<I, V>(a);
    dispatch_small_f(p.F, [&](auto ft) {
      constexpr int FT = decltype(ft)::value;
      const bool vec = small_vector_rows<V, FT>(a.b.data, a.b.ld, p.F);
      const int log2g = log2_lanes(a.a.rows, a.a.nnz, kSmallInFlight<FT>, deterministic);
      dispatch_reduce(a.reduce, [&](auto r) {
        constexpr Red R = decltype(r)::value;
        vector_rows_kernel<R, I, V, FT><<<blocks_for(p.m << log2g), kBlock, 0, s.stream()>>>(p, log2g, vec);
      });
    });
  });
  check_launch("spmm.vector_rows");
}

}  // namespace sparseport::cuda
