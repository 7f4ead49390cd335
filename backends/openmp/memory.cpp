// SPDX-License-Identifier: Apache-2.0
#include "backends/openmp/memory.hpp"

#include <omp.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fault.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::openmp {

namespace {

// 64 bytes: a cache line, and enough for every vector width the kernels use.
constexpr size_t kAlignment = 64;

// Below this a copy stays on one thread. On the 2-core dev machine one thread copies at about
// 28 GB/s and two at about 34 GB/s (/tmp bandwidth check, 256 MiB arrays), and starting a team
// costs microseconds, so only copies of megabytes gain.
constexpr size_t kParallelCopyBytes = size_t{4} << 20;

}  // namespace

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
  return detail::guarded(st, [&] {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const bool overlap = d < s + bytes && s < d + bytes;
    if (bytes < kParallelCopyBytes || overlap) {
      std::memmove(dst, src, bytes);
      return;
    }
    const int64_t n = static_cast<int64_t>(bytes);
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t b = n / nt * t + n % nt * t / nt, e = n / nt * (t + 1) + n % nt * (t + 1) / nt;
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    }
  });
}

}  // namespace sparseport::openmp
