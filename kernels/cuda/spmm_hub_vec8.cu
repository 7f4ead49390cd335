// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's launch shapes for 16-bit values in 16-byte vectors, one lane group a row.
// Why they are a file of their own: spmm_hub.cuh.
#include "kernels/cuda/spmm_hub.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda::hub {

SPARSEPORT_HUB_LAUNCH(8, 4, 1);
SPARSEPORT_HUB_LAUNCH(8, 8, 1);
SPARSEPORT_HUB_LAUNCH(8, 16, 1);
SPARSEPORT_HUB_LAUNCH(8, 32, 1);

}  // namespace sparseport::cuda::hub
