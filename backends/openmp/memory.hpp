// SPDX-License-Identifier: Apache-2.0
// Host memory for the openmp backend: cache-line aligned allocations, and copies that use several
// threads when they are large enough to gain from a second core's bandwidth.
#pragma once

#include <cstddef>

#include "sparseport/plugin_abi.h"

namespace sparseport::openmp {

int host_alloc(void* state, size_t bytes, void** ptr, sparseport_status* st);
void host_release(void* state, void* ptr);
int host_copy(void* state, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status* st);

}  // namespace sparseport::openmp
