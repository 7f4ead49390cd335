// SPDX-License-Identifier: Apache-2.0
// spmm.kokkoskernels: KokkosSparse::spmv on rank-2 views (spmm_kokkoskernels.hpp), dispatched here
// to the type pair's instantiation, each compiled in a file of its own (spmm_kokkoskernels_*.cpp);
// this file includes no Kokkos.
#include <string>

#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {

void spmm_kokkoskernels(const sparseport_spmm_args& args) {
  detail::dispatch(args.a.index_type, args.c.value_type,
                   [&]<class I, class V>() { spmm_kokkoskernels_typed<I, V>(args); });
}

bool spmm_kokkoskernels_applies(const sparseport_spmm_args& args, std::string* why) {
  if (args.reduce != SPARSEPORT_REDUCE_SUM) {
    if (why != nullptr)
      *why = std::string("spmm.kokkoskernels does not apply to reduce ") +
             (args.reduce == SPARSEPORT_REDUCE_MEAN  ? "mean"
              : args.reduce == SPARSEPORT_REDUCE_MAX ? "max"
                                                     : "min") +
             ": KokkosSparse::spmv computes sums only (reduce " + std::to_string(args.reduce) + ")";
    return false;
  }
  // One column goes to Kokkos Kernels' single-vector spmv, whose Serial path (3.4,
  // KokkosSparse_spmv_impl.hpp) indexes x.data() and y.data() as contiguous arrays: a strided
  // column gave wrong values there (tests/conformance/spmv.cpp, Debian's Serial Kokkos).
  const bool strided = (args.b.ld != 1 && args.b.rows > 1) || (args.c.ld != 1 && args.c.rows > 1);
  if (args.b.cols == 1 && strided) {
    if (why != nullptr)
      *why = "spmm.kokkoskernels does not apply to one strided column (F = 1 with B.ld = " + std::to_string(args.b.ld) +
             " and C.ld = " + std::to_string(args.c.ld) + "): Kokkos Kernels' single-vector spmv reads x and y as "
             "contiguous arrays on Serial";
    return false;
  }
  return true;
}

}  // namespace sparseport::kokkos
