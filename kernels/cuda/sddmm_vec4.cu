// SPDX-License-Identifier: Apache-2.0
// sddmm.vec4: a warp per row, 16-byte vectors along F, a group of F / 4 lanes (4 to 32) per dot
// product, so at small F one warp works on several entries of its row at once. 16-bit values
// (ABI 1.7): 8 values per 16-byte vector, a group of F / 8 lanes (4 to 32); F % 8 == 0 and
// 16-byte aligned rows of X and Y (the plugin's `applies` checks it).
#include "kernels/cuda/sddmm.cuh"

SPARSEPORT_CUDA_MODULE(1)

namespace sparseport::cuda {

void sddmm_vec4(const State& s, const sparseport_sddmm_args& a) {
  if (is16_tag(a.a.value_type)) {
    switch (vecw_group(a.x.cols, 8, 4)) {
      case 4: launch_sddmm_rows<8, 4>(s, a, "sddmm.vec4"); break;
      case 8: launch_sddmm_rows<8, 8>(s, a, "sddmm.vec4"); break;
      case 16: launch_sddmm_rows<8, 16>(s, a, "sddmm.vec4"); break;
      default: launch_sddmm_rows<8, 32>(s, a, "sddmm.vec4"); break;
    }
    return;
  }
  switch (vec4_group(a.x.cols, 4)) {
    case 4: launch_sddmm_rows<4, 4>(s, a, "sddmm.vec4"); break;
    case 8: launch_sddmm_rows<4, 8>(s, a, "sddmm.vec4"); break;
    case 16: launch_sddmm_rows<4, 16>(s, a, "sddmm.vec4"); break;
    default: launch_sddmm_rows<4, 32>(s, a, "sddmm.vec4"); break;
  }
}

}  // namespace sparseport::cuda
