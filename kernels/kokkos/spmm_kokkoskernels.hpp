// SPDX-License-Identifier: Apache-2.0
// spmm.kokkoskernels for one (index, value) type pair: KokkosSparse::spmv("N", alpha, A, B, beta,
// C) on rank-2 views, which Kokkos Kernels runs as SpMM; the kokkos plugin's vendor baseline.
//
// No copies of A, B or C: A's arrays are wrapped in an unmanaged CrsMatrix (ordinal and offset are
// our index type), and B and C in unmanaged LayoutStride views (stride ld, 1), so padded leading
// dimensions need no staging. A pattern A has no values, and CrsMatrix needs them: an nnz-long
// array of ones is allocated per call (reported in the variant's doc and plugins/kokkos/README.md).
//
// Types: Debian's Kokkos Kernels 3.4 instantiates spmv ahead of time (ETI) only for double values,
// int ordinals, int/size_t offsets, LayoutLeft, Serial/HostSpace. KOKKOSKERNELS_ETI_ONLY is off
// there, so float, int64_t indices and LayoutStride fall back to the header-only templates, which
// compile (slowly) and give the same results; every f32/f64 x i32/i64 combination is offered.
//
// Each type pair is compiled in a file of its own (spmm_kokkoskernels_<index>_<value>.cpp), so the
// four compile side by side: spmv's header-only templates instantiate every mode and algorithm,
// and with CUDA each of them as device code too; through nvcc_wrapper the four pairs in one file
// took 350 s on 2 cores, the project's longest compile by far and a serial step of every build.
//
// Kokkos Kernels 3.4's SPMV_MV_Transpose_Functor leaves rows_per_team unset on the RangePolicy
// path, and GCC 12 at -O3 reports copying it (-Wmaybe-uninitialized) after inlining, although
// these are system headers (that warning ignores it): silenced for these two headers only.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <KokkosSparse_CrsMatrix.hpp>
#include <KokkosSparse_spmv.hpp>
#pragma GCC diagnostic pop

#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {

template <class I, class V>
void spmm_kokkoskernels_typed(const sparseport_spmm_args& args) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using Matrix = KokkosSparse::CrsMatrix<const V, const I, Device, Unmanaged, const I>;
  const int64_t m = args.a.rows, k = args.a.cols, nnz = args.a.nnz, f = args.c.cols;
  Kokkos::View<V*, MemSpace> ones;
  const V* values = detail::as<V>(args.a.values);
  if (values == nullptr) {
    ones = Kokkos::View<V*, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::ones"),
                                      static_cast<size_t>(nnz));
    Kokkos::deep_copy(ones, V(1));
    values = ones.data();
  }
  typename Matrix::values_type vals(values, static_cast<size_t>(nnz));
  typename Matrix::row_map_type rows(detail::as<I>(args.a.rowptr), static_cast<size_t>(m + 1));
  typename Matrix::index_type cols(detail::as<I>(args.a.colind), static_cast<size_t>(nnz));
  const Matrix a("sparseport::kokkos::A", static_cast<I>(m), static_cast<I>(k), static_cast<I>(nnz), vals, rows, cols);
  Kokkos::View<const V**, Kokkos::LayoutStride, Device, Unmanaged> b(
      detail::as<V>(args.b.data),
      Kokkos::LayoutStride(static_cast<size_t>(k), static_cast<size_t>(args.b.ld), static_cast<size_t>(f), 1));
  Kokkos::View<V**, Kokkos::LayoutStride, Device, Unmanaged> c(
      detail::as_mut<V>(args.c.data),
      Kokkos::LayoutStride(static_cast<size_t>(m), static_cast<size_t>(args.c.ld), static_cast<size_t>(f), 1));
  KokkosSparse::spmv("N", static_cast<V>(args.alpha), a, b, static_cast<V>(args.beta), c);
  end_op();
}

}  // namespace sparseport::kokkos
