// SPDX-License-Identifier: Apache-2.0
// The one definition of sum/mean/max/min that spmm, segment_reduce and gather_scatter share, so the
// oracle cannot disagree with itself between ops.
#pragma once

#include <cmath>
#include <cstdint>

#include "sparseport/plugin_abi.h"

namespace sparseport::reference {

// Folds term t into acc, which holds the fold of the `seen` terms before it (acc is ignored when
// seen == 0). Terms are folded in the order given. NaN propagates through max and min (a NaN term
// makes the result NaN wherever it sits), as torch.amax does; a plain `a > b ? a : b` would keep
// or drop a NaN depending on its position, which no parallel order could reproduce.
template <class A>
A fold(int32_t reduce, A acc, A t, int64_t seen) {
  if (seen == 0) return t;
  if (reduce == SPARSEPORT_REDUCE_SUM || reduce == SPARSEPORT_REDUCE_MEAN) return acc + t;
  if (std::isnan(acc) || std::isnan(t)) return std::isnan(acc) ? acc : t;
  if (reduce == SPARSEPORT_REDUCE_MAX) return t > acc ? t : acc;
  return t < acc ? t : acc;
}

// The result of `count` folded terms. An empty row or segment gives 0 for every reduce (PyTorch
// Geometric's convention); mean is the sum divided by the number of terms.
template <class A>
A finish(int32_t reduce, A acc, int64_t count) {
  if (count == 0) return A(0);
  if (reduce == SPARSEPORT_REDUCE_MEAN) return acc / static_cast<A>(count);
  return acc;
}

}  // namespace sparseport::reference
