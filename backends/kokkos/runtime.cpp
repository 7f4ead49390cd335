// SPDX-License-Identifier: Apache-2.0
#include "backends/kokkos/runtime.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/kokkos/space.hpp"
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#include "core/fault.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {

namespace {

std::mutex& init_mutex() {
  static std::mutex m;
  return m;
}
bool g_initialized_here = false;

// Registered with atexit right after Kokkos::initialize, so it runs before the destructors of
// statics constructed earlier and after those of statics constructed later (a static Context made
// after this point is destroyed first, while Kokkos still runs).
void finalize_at_exit() {
  if (g_initialized_here && Kokkos::is_initialized()) Kokkos::finalize();
}

// Kokkos prints its warnings with std::cout (Kokkos-OpenMP: "OMP_PROC_BIND environment variable
// not set ..."), on the program's standard output, where `sparseport devices --json` and a user's
// program write their results: file descriptor 1 points at stderr while Kokkos initialises. (Another
// thread writing to stdout in that moment writes to stderr too.)
struct StdoutToStderr {
  int saved = -1;
  StdoutToStderr() {
    std::cout.flush();
    std::fflush(stdout);
    saved = ::dup(1);
    if (saved >= 0 && ::dup2(2, 1) < 0) {
      ::close(saved);
      saved = -1;
    }
  }
  ~StdoutToStderr() {
    std::cout.flush();
    std::fflush(stdout);
    if (saved >= 0) {
      (void)::dup2(saved, 1);
      ::close(saved);
    }
  }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;
};

std::string version_string() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100);
}

using HostBytes = Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstHostBytes = Kokkos::View<const char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using SpaceBytes = Kokkos::View<char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstSpaceBytes = Kokkos::View<const char*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace

void ensure_initialized() {
  std::lock_guard<std::mutex> lock(init_mutex());
  if (Kokkos::is_initialized()) return;
#if KOKKOS_VERSION >= 40000
  if (Kokkos::is_finalized())
    throw BackendError("sparseport kokkos: Kokkos " + version_string() +
                           " was already finalised in this process and cannot be initialised again; keep Kokkos "
                           "initialised while SparsePort contexts on the kokkos backend are created",
                       0, "Kokkos::is_finalized");
#endif
  if (g_initialized_here)
    throw BackendError("sparseport kokkos: Kokkos " + version_string() +
                           " was finalised by someone else after SparsePort initialised it; it cannot be restarted",
                       0, "Kokkos::is_initialized");
  // No arguments: Kokkos reads its own environment (KOKKOS_NUM_THREADS, OMP_NUM_THREADS, ...).
  {
    const StdoutToStderr quiet;
    Kokkos::initialize();
  }
  g_initialized_here = true;
  std::atexit(&finalize_at_exit);
}

bool initialized_here() {
  std::lock_guard<std::mutex> lock(init_mutex());
  return g_initialized_here;
}

int context_create(int32_t, void** state, sparseport_status* st) {
  return detail::guarded(st, [&] {
    ensure_initialized();
    *state = nullptr;  // no per-context state: Kokkos's default instance serves every context
  });
}

void context_destroy(void*) {}

int alloc(void*, size_t bytes, void** ptr, sparseport_status* st) {
  return detail::guarded(st, [&] {
    ensure_initialized();
    *ptr = nullptr;
    try {
      // The message names the site, as the other plugins' do.
      if (detail::fault_armed(kDeviceMemory ? "device_alloc" : "host_alloc"))
        throw std::runtime_error(kDeviceMemory ? "injected by SPARSEPORT_FAULT_INJECT=device_alloc"
                                               : "injected by SPARSEPORT_FAULT_INJECT=host_alloc");
      // Kokkos adds its own header and alignment to the size: keep that sum from wrapping around.
      if (bytes > SIZE_MAX / 2) throw std::length_error("more than half the address space");
      *ptr = Kokkos::kokkos_malloc<MemSpace>("sparseport", bytes == 0 ? 1 : bytes);
    } catch (const std::exception& e) {
      *ptr = nullptr;
      std::string why = e.what();  // Kokkos appends a blank line and a traceback note: one line is enough
      why = why.substr(0, why.find('\n'));
      while (!why.empty() && why.back() == ' ') why.pop_back();
      throw OutOfMemory("cannot allocate " + std::to_string(bytes) + " bytes in Kokkos's " + MemSpace::name() + ": " + why,
                        0, "Kokkos::kokkos_malloc", bytes);
    }
  });
}

void release(void*, void* ptr) {
  // Kokkos's allocation does not say its size here; a plan watches the start of each array it
  // depends on, so the first byte is enough to find it.
  plans().invalidate(ptr, 1);
  // After Kokkos::finalize the allocation records are gone; a buffer that outlives Kokkos leaks
  // rather than crashing the exit path.
  if (ptr != nullptr && Kokkos::is_initialized()) Kokkos::kokkos_free<MemSpace>(ptr);
}

int copy(void*, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status* st) {
  return detail::guarded(st, [&] {
    if (bytes == 0) return;
    plans().invalidate(dst, bytes);
    if constexpr (!kDeviceMemory) {
      std::memmove(dst, src, bytes);
    } else {
      auto* d = static_cast<char*>(dst);
      const auto* s = static_cast<const char*>(src);
      if (kind == SPARSEPORT_COPY_HOST_TO_DEVICE)
        Kokkos::deep_copy(SpaceBytes(d, bytes), ConstHostBytes(s, bytes));
      else if (kind == SPARSEPORT_COPY_DEVICE_TO_HOST)
        Kokkos::deep_copy(HostBytes(d, bytes), ConstSpaceBytes(s, bytes));
      else
        Kokkos::deep_copy(SpaceBytes(d, bytes), ConstSpaceBytes(s, bytes));
      Kokkos::fence();
    }
  });
}

int synchronize(void*, sparseport_status* st) {
  return detail::guarded(st, [] {
    if (Kokkos::is_initialized()) Kokkos::fence();
  });
}

// ---- plan cache --------------------------------------------------------------------------------

PlanCache& plans() {
  // Never destroyed: the finalize hook may run from the atexit handler after statics are gone.
  static PlanCache* cache = new PlanCache(32, [] { Kokkos::push_finalize_hook([] { plans().clear(); }); });
  return *cache;
}

void run_parts(int64_t parts, void (*fn)(int64_t part, void* arg), void* arg) {
  Kokkos::parallel_for("sparseport::run_parts",
                       Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<int64_t>>(0, parts),
                       [=](int64_t p) { fn(p, arg); });
  Kokkos::DefaultHostExecutionSpace().fence();
}

std::string describe() {
  std::string line = "Kokkos " + version_string() + ", execution space " + ExecSpace::name();
  if (Kokkos::is_initialized())
    line += " (concurrency " + std::to_string(ExecSpace().concurrency()) + ", fixed when Kokkos was initialised" +
            (g_initialized_here ? " by SparsePort" : " by the program") + ")";
  else
    line += " (not initialised yet: the first kokkos context does it)";
  line += ", memory space " + std::string(MemSpace::name()) + (kDeviceMemory ? " (device memory)" : " (host memory)");
  return line;
}

#if defined(KOKKOS_ENABLE_CUDA)
// On Kokkos-CUDA the device's kind and what the scheduler's roofline reads of a GPU, named as the
// cuda plugin names them (backends/cuda/runtime.cpp). Without them the scheduler takes the GPU for
// one host thread (scheduler/estimate.cpp: 12 GB/s and a 1 MiB cache): its memory floor is ~340x
// an H200's (0.85 x 4.8 TB/s against 12 GB/s), which by the code's rules sends decisions that fit a
// full-size timing to the probe sample, and the class's model (kokkos-sm90, trained on Kokkos-CUDA
// records of the H200; cuda-sm90's where it is absent) reads inputs unlike those it was trained on.
// The device is the one Kokkos made current.
std::string gpu_signature() {
  int device = 0, clock_khz = 0, bus_bits = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess)
    return "kind=gpu\n";  // the class stays a GPU's; the roofline takes its defaults
  char buf[256];
  std::snprintf(buf, sizeof buf, "kind=gpu\ncompute_capability=%d.%d\nsms=%d\nl2_bytes=%lld\npeak_gbps=%.0f\n", prop.major,
                prop.minor, prop.multiProcessorCount, static_cast<long long>(prop.l2CacheSize),
                2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9);
  return buf;
}
#endif

std::string signature() {
  std::string s = std::string("exec_space=") + ExecSpace::name() + "\n";
  // A space whose memory the host cannot read is a GPU's (CUDA, HIP, SYCL): the scheduler's roofline
  // reads the kind (scheduler/estimate.cpp), with the device's numbers where this build can ask
  // for them (CUDA) and a GPU's defaults otherwise.
  std::string kind = kDeviceMemory ? "kind=gpu\n" : "";
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>)
    if (Kokkos::is_initialized()) kind = gpu_signature();
#endif
  s += kind;
  if (Kokkos::is_initialized()) s += "concurrency=" + std::to_string(ExecSpace().concurrency()) + "\n";
  s += std::string("memory_space=") + MemSpace::name() + "\n";
  s += "kokkos_version=" + version_string() + "\n";
  return s;
}

}  // namespace sparseport::kokkos
