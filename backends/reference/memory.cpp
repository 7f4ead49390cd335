// SPDX-License-Identifier: Apache-2.0
#include "backends/reference/memory.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "src/core/plugin_support.hpp"

namespace sparseport::reference {

// 64-byte alignment: a cache line, and enough for every SIMD width a CPU plugin may use.
constexpr size_t kAlignment = 64;

int host_alloc(void*, size_t bytes, void** ptr, sparseport_status* st) {
  return detail::guarded(st, [&] {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    *ptr = std::aligned_alloc(kAlignment, rounded);
    if (*ptr == nullptr)
      throw BackendError("cannot allocate " + std::to_string(bytes) + " bytes of host memory", 0, "ENOMEM");
  });
}

void host_release(void*, void* ptr) { std::free(ptr); }

int host_copy(void*, void* dst, const void* src, size_t bytes, int32_t, sparseport_status* st) {
  return detail::guarded(st, [&] { std::memmove(dst, src, bytes); });
}

int host_describe(char* buf, size_t len, sparseport_status* st) {
  return detail::guarded(st, [&] {
    std::snprintf(buf, len, "host: %u hardware threads (serial execution)", std::thread::hardware_concurrency());
  });
}

}  // namespace sparseport::reference
