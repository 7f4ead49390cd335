// SPDX-License-Identifier: Apache-2.0
// spmm.row_warp_vec4: row_warp with 16-byte vectors along F. A group of G = F / 4 lanes (at least
// 4, at most 32) owns a row, so at F = 32 a warp serves 4 rows and no lane idles. Records arg for
// max and min, as row_warp.
#include "kernels/cuda/spmm_rows.cuh"

namespace sparseport::cuda {

void spmm_row_warp_vec4(const State& s, const sparseport_spmm_args& a) {
  switch (vec4_group(a.b.cols, 4)) {
    case 4: launch_spmm_rows<4, 4, true>(s, a, "spmm.row_warp_vec4"); break;
    case 8: launch_spmm_rows<4, 8, true>(s, a, "spmm.row_warp_vec4"); break;
    case 16: launch_spmm_rows<4, 16, true>(s, a, "spmm.row_warp_vec4"); break;
    default: launch_spmm_rows<4, 32, true>(s, a, "spmm.row_warp_vec4"); break;
  }
}

}  // namespace sparseport::cuda
