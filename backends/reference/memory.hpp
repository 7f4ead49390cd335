// SPDX-License-Identifier: Apache-2.0
// The reference backend's device is the host: plain aligned allocations and memcpy.
#pragma once

#include <cstddef>

#include "sparseport/plugin_abi.h"

namespace sparseport::reference {

int host_alloc(void* state, size_t bytes, void** ptr, sparseport_status* st);
void host_release(void* state, void* ptr);
int host_copy(void* state, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status* st);
int host_describe(char* buf, size_t len, sparseport_status* st);

}  // namespace sparseport::reference
