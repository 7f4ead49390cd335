// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's launch shapes for float and double in 16-byte vectors.
// Why they are a file of their own: spmm_hub.cuh.
#include "kernels/cuda/spmm_hub.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda::hub {

SPARSEPORT_HUB_LAUNCH(4, 4, 1);
SPARSEPORT_HUB_LAUNCH(4, 8, 1);
SPARSEPORT_HUB_LAUNCH(4, 16, 1);
SPARSEPORT_HUB_LAUNCH(4, 32, 1);
SPARSEPORT_HUB_LAUNCH(4, 8, 4);
SPARSEPORT_HUB_LAUNCH(4, 8, 2);
SPARSEPORT_HUB_LAUNCH(4, 16, 2);

}  // namespace sparseport::cuda::hub
