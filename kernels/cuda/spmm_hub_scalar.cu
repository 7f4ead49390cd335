// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split's launch shapes for single values a lane (every value type).
// Why they are a file of their own: spmm_hub.cuh.
#include "kernels/cuda/spmm_hub.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda::hub {

SPARSEPORT_HUB_LAUNCH(1, 32, 1);

}  // namespace sparseport::cuda::hub
