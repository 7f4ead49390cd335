// SPDX-License-Identifier: Apache-2.0
// Value conversion on the host: the front end's float32 path for 16-bit values on host-memory
// plugins, CsrMatrix::to_host of 16-bit results, and tests. Rounds to nearest even (half.hpp).
#pragma once

#include "sparseport/plugin_abi.h"

namespace sparseport::detail {

// dst (src.rows x src.cols, its own ld and type) = src converted element by element.
void convert_host(const sparseport_dense& src, const sparseport_dense_mut& dst);

}  // namespace sparseport::detail
