// SPDX-License-Identifier: Apache-2.0
// spmm.row_warp_vec4: row_warp with 16-byte vectors along F. A group of G = F / 4 lanes (at least
// 4, at most 32) owns a row, so at F = 32 a warp serves 4 rows and no lane idles. Records arg for
// max and min, as row_warp. 16-bit values (ABI 1.7): 8 values per 16-byte vector, so the group that
// covers F is half as wide (G = F / 8, at least 4); F % 8 == 0 and 16-byte aligned rows of B and C
// (the plugin's `applies` checks it).
#include "kernels/cuda/spmm_rows.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {

void spmm_row_warp_vec4(const State& s, const sparseport_spmm_args& a) {
  if (is16_tag(a.a.value_type)) {
    switch (vecw_group(a.b.cols, 8, 4)) {
      case 4: launch_spmm_rows<8, 4, true>(s, a, "spmm.row_warp_vec4"); break;
      case 8: launch_spmm_rows<8, 8, true>(s, a, "spmm.row_warp_vec4"); break;
      case 16: launch_spmm_rows<8, 16, true>(s, a, "spmm.row_warp_vec4"); break;
      default: launch_spmm_rows<8, 32, true>(s, a, "spmm.row_warp_vec4"); break;
    }
    return;
  }
  switch (vec4_group(a.b.cols, 4)) {
    case 4: launch_spmm_rows<4, 4, true>(s, a, "spmm.row_warp_vec4"); break;
    case 8: launch_spmm_rows<4, 8, true>(s, a, "spmm.row_warp_vec4"); break;
    case 16: launch_spmm_rows<4, 16, true>(s, a, "spmm.row_warp_vec4"); break;
    default: launch_spmm_rows<4, 32, true>(s, a, "spmm.row_warp_vec4"); break;
  }
}

}  // namespace sparseport::cuda
