// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's launch shapes for rows that vectors cannot take (F, ld or an offset not a
// multiple of the vector), wider than 32 columns: columns strided by G, float and 16-bit values
// (spmm_rows.cuh, STRIDED). Why they are a file of their own: spmm_hub.cuh.
#include "kernels/cuda/spmm_hub.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda::hub {

SPARSEPORT_HUB_LAUNCH_STRIDED(3, 16);
SPARSEPORT_HUB_LAUNCH_STRIDED(2, 32);
SPARSEPORT_HUB_LAUNCH_STRIDED(3, 32);
SPARSEPORT_HUB_LAUNCH_STRIDED(4, 32);

}  // namespace sparseport::cuda::hub
