// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's launch shapes for 16-bit values in 16-byte vectors, teams of lane groups a row (small matrices).
// Why they are a file of their own: spmm_hub.cuh.
#include "kernels/cuda/spmm_hub.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda::hub {

SPARSEPORT_HUB_LAUNCH(8, 8, 4);
SPARSEPORT_HUB_LAUNCH(8, 8, 2);
SPARSEPORT_HUB_LAUNCH(8, 16, 2);
SPARSEPORT_HUB_LAUNCH(8, 4, 8);
SPARSEPORT_HUB_LAUNCH(8, 4, 4);
SPARSEPORT_HUB_LAUNCH(8, 4, 2);

}  // namespace sparseport::cuda::hub
