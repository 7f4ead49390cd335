// SPDX-License-Identifier: Apache-2.0
// sddmm.row_warp: a warp per row, one lane per column of F, each entry's dot product reduced by
// shuffles across the warp.
#include "kernels/cuda/sddmm.cuh"

SPARSEPORT_CUDA_MODULE(1)

namespace sparseport::cuda {

void sddmm_row_warp(const State& s, const sparseport_sddmm_args& a) {
  launch_sddmm_rows<1, 32>(s, a, "sddmm.row_warp");
}

}  // namespace sparseport::cuda
