// SPDX-License-Identifier: Apache-2.0
#include "backends/reference/memory.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "core/fault.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {

// 64-byte alignment: a cache line, and enough for every SIMD width a CPU plugin may use.
constexpr size_t kAlignment = 64;

int host_alloc(void*, size_t bytes, void** ptr, sparseport_status* st) {
  return detail::guarded(st, [&] {
    *ptr = nullptr;
    // Rounding up must not wrap around: a size near SIZE_MAX is refused, not turned into a few bytes.
    const bool too_large = bytes > SIZE_MAX - kAlignment;
    const size_t rounded = too_large ? 0 : (bytes + kAlignment - 1) / kAlignment * kAlignment;
    const bool injected = !too_large && detail::fault_armed("host_alloc");
    if (!too_large && !injected) *ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (*ptr == nullptr)
      throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes of host memory (" +
                            (too_large  ? "more than the address space"
                             : injected ? "injected by SPARSEPORT_FAULT_INJECT=host_alloc"
                                        : "aligned_alloc failed") +
                            ")",
                        ENOMEM, "ENOMEM", bytes);
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
