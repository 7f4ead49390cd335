// SPDX-License-Identifier: Apache-2.0
// spmm.row_warp: a warp per row, lanes across F, each lane reading the row's pairs itself. Records
// arg for max and min (it applies to every input, so some arg-recording variant always does).
// Every value type, 16-bit ones included (one value per lane, float32 accumulation).
#include "kernels/cuda/spmm_rows.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {

void spmm_row_warp(const State& s, const sparseport_spmm_args& a) {
  launch_spmm_rows<1, 32, true>(s, a, "spmm.row_warp");
}

}  // namespace sparseport::cuda
