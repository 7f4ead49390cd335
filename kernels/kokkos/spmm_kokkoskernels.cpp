// SPDX-License-Identifier: Apache-2.0
// spmm.kokkoskernels: KokkosSparse::spmv on rank-2 views (spmm_kokkoskernels.hpp), dispatched here
// to the type pair's instantiation, each compiled in a file of its own (spmm_kokkoskernels_*.cpp);
// this file includes no Kokkos.
#include <string>

#include "kernels/kokkos/kernels.hpp"
#include "src/core/plugin_support.hpp"

namespace sparseport::kokkos {

void spmm_kokkoskernels(const sparseport_spmm_args& args) {
  detail::dispatch(args.a.index_type, args.c.value_type,
                   [&]<class I, class V>() { spmm_kokkoskernels_typed<I, V>(args); });
}

bool spmm_kokkoskernels_applies(const sparseport_spmm_args& args, std::string* why) {
  if (args.reduce == SPARSEPORT_REDUCE_SUM) return true;
  if (why != nullptr)
    *why = std::string("spmm.kokkoskernels does not apply to reduce ") +
           (args.reduce == SPARSEPORT_REDUCE_MEAN  ? "mean"
            : args.reduce == SPARSEPORT_REDUCE_MAX ? "max"
                                                   : "min") +
           ": KokkosSparse::spmv computes sums only (reduce " + std::to_string(args.reduce) + ")";
  return false;
}

}  // namespace sparseport::kokkos
