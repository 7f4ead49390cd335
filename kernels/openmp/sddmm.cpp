// SPDX-License-Identifier: Apache-2.0
// sddmm: out[e] = A.val[e] * dot(X[row(e),:], Y[col(e),:]). sddmm.rows walks rows, and each
// thread takes an equal share of the nonzeros (a row may be shared; every output is its own), so a
// mega-row does not serialise. X's row stays in L1 across its row's nonzeros; dots are SIMD over F.
// 16-bit values (SPARSEPORT_VARIANT_VALUES16): X, Y, A's values and out in 16 bits, rows widened in
// registers (Convert, common.hpp), the dot and the scaling in float32, one rounding per output.
#include "kernels/openmp/common.hpp"
#include "core/plugin_support.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {
namespace {

template <class I, class V, class C, bool kWeighted>
void rows(const sparseport_sddmm_args& args, int threads) {
  const int64_t m = args.a.rows, nnz = args.a.nnz, F = args.x.cols;
  const I* rowptr = detail::as<I>(args.a.rowptr);
  const I* colind = detail::as<I>(args.a.colind);
  const V* val = detail::as<V>(args.a.values);
  const V* x = detail::as<V>(args.x.data);
  const V* y = detail::as<V>(args.y.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t ldx = args.x.ld, ldy = args.y.ld, ldo = args.out.ld;
#pragma omp parallel num_threads(threads)
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t z0 = split_point(nnz, t, nt), z1 = split_point(nnz, t + 1, nt);
    if (z0 < z1) {
      int64_t e = z0;
      for (int64_t i = row_of(z0, rowptr, m); e < z1; ++i) {
        const int64_t end = std::min<int64_t>(rowptr[i + 1], z1);
        const V* xi = x + i * ldx;
        for (; e < end; ++e) {
          if (e + kPrefetchDistance < nnz) prefetch_row(y + static_cast<int64_t>(colind[e + kPrefetchDistance]) * ldy, F);
          const auto d = dot<V, C>(xi, y + static_cast<int64_t>(colind[e]) * ldy, F);
          out[e * ldo] = C::narrow(kWeighted ? C::widen(val[e]) * d : d);
        }
      }
    }
  }
}

}  // namespace

// sddmm.rows is flagged SPARSEPORT_VARIANT_VALUES16: f16 and bf16 come here.
void sddmm(const sparseport_sddmm_args& args, int threads) {
  dispatch_values16(args.a.index_type, args.a.value_type, [&]<class I, class V, class C>() {
    with_weights(args.a.values, [&]<bool kWeighted>() { rows<I, V, C, kWeighted>(args, threads); });
  });
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
