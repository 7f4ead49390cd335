// SPDX-License-Identifier: Apache-2.0
// spmm.kokkoskernels, int64_t indices and float values (why a file each: spmm_kokkoskernels.hpp).
#include "kernels/kokkos/spmm_kokkoskernels.hpp"

template void sparseport::kokkos::spmm_kokkoskernels_typed<int64_t, float>(const sparseport_spmm_args& args);
