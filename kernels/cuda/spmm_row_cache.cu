// SPDX-License-Identifier: Apache-2.0
// spmm.row_cache: GE-SpMM's coalesced row caching. A warp owns a row, stages 32 (column, value)
// pairs with one coalesced load, and broadcasts them by shuffles to the lanes that own F.
#include "kernels/cuda/spmm_rows.cuh"

namespace sparseport::cuda {

void spmm_row_cache(const State& s, const sparseport_spmm_args& a) {
  launch_spmm_rows<1, 32, true>(s, a, "spmm.row_cache");
}

}  // namespace sparseport::cuda
