// SPDX-License-Identifier: Apache-2.0
// sddmm.nnz_balanced: equal chunks of entries per warp whatever the row lengths, groups of lanes
// per dot product (16-byte vectors where F and the alignment allow), rows walked per group.
#include "kernels/cuda/sddmm.cuh"

namespace sparseport::cuda {

void sddmm_nnz_balanced(const State& s, const sparseport_sddmm_args& a) {
  if (vec4_rows(a.x.data, a.x.ld, a.x.cols) && vec4_rows(a.y.data, a.y.ld, a.y.cols)) {
    switch (vec4_group(a.x.cols, 4)) {
      case 4: launch_sddmm<4, 4, true>(s, a, "sddmm.nnz_balanced"); break;
      case 8: launch_sddmm<4, 8, true>(s, a, "sddmm.nnz_balanced"); break;
      case 16: launch_sddmm<4, 16, true>(s, a, "sddmm.nnz_balanced"); break;
      default: launch_sddmm<4, 32, true>(s, a, "sddmm.nnz_balanced"); break;
    }
  } else if (a.x.cols <= 8) {
    launch_sddmm<1, 8, true>(s, a, "sddmm.nnz_balanced");
  } else {
    launch_sddmm<1, 32, true>(s, a, "sddmm.nnz_balanced");
  }
}

}  // namespace sparseport::cuda
