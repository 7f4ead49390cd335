// SPDX-License-Identifier: Apache-2.0
// spmm.row_subwarp: for F <= 16, a group of the next power of two >= F lanes per row (so 2 to 16
// rows per warp), one column per lane, pairs staged per group and shared by shuffles.
#include "kernels/cuda/spmm_rows.cuh"

namespace sparseport::cuda {

void spmm_row_subwarp(const State& s, const sparseport_spmm_args& a) {
  const int64_t F = a.b.cols;
  if (F <= 2)
    launch_spmm_rows<1, 2, true>(s, a, "spmm.row_subwarp");
  else if (F <= 4)
    launch_spmm_rows<1, 4, true>(s, a, "spmm.row_subwarp");
  else if (F <= 8)
    launch_spmm_rows<1, 8, true>(s, a, "spmm.row_subwarp");
  else
    launch_spmm_rows<1, 16, true>(s, a, "spmm.row_subwarp");
}

}  // namespace sparseport::cuda
