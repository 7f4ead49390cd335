// SPDX-License-Identifier: Apache-2.0
#include "backends/openmp/device.hpp"

#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <thread>

#ifdef SPARSEPORT_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace sparseport::openmp {

int resolve_threads(const sparseport_exec* exec) {
  if (exec != nullptr && exec->threads > 0) return exec->threads;
  return omp_get_max_threads();
}

void run_parts(const sparseport_exec* exec, int64_t parts, void (*fn)(int64_t part, void* arg), void* arg) {
  const int threads = static_cast<int>(std::clamp<int64_t>(parts, 1, resolve_threads(exec)));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int64_t p = 0; p < parts; ++p) fn(p, arg);
}

namespace {

// The CPU's marketing name where the OS tells it (Linux), else "host".
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "host" : line.substr(start);
  }
  return "host";
}

}  // namespace

std::string describe_host() {
  return cpu_model() + ": " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads, " +
         std::to_string(omp_get_num_procs()) + " available to OpenMP, default " +
         std::to_string(omp_get_max_threads()) + " threads";
}

namespace {

// The widest vector extension the CPU runs (what the kernels' SIMD width follows).
const char* simd_name() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  if (__builtin_cpu_supports("sse4.2")) return "sse4.2";
  return "sse2";
#elif defined(__aarch64__)
  return "neon";
#else
  return "scalar";
#endif
}

struct Topology {
  std::string model;
  long long packages = 1, cores = 0, pus = 0, numa = 1, l1d = 0, l2 = 0, l3 = 0;
  const char* source = "sysconf";
};

Topology read_topology() {
  Topology t;
  t.model = cpu_model();
#ifdef SPARSEPORT_HAVE_HWLOC
  // hwloc knows cores from hardware threads and NUMA nodes, which /proc and sysconf do not say.
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
    t.source = "hwloc";
    t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    t.numa = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
    const auto cache = [&](hwloc_obj_type_t type) -> long long {
      const hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, 0);
      return o != nullptr && o->attr != nullptr ? static_cast<long long>(o->attr->cache.size) : 0;
    };
    t.l1d = cache(HWLOC_OBJ_L1CACHE);
    t.l2 = cache(HWLOC_OBJ_L2CACHE);
    t.l3 = cache(HWLOC_OBJ_L3CACHE);
    if (const hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0)) {
      if (const char* m = hwloc_obj_get_info_by_name(pkg, "CPUModel")) t.model = m;
    }
  }
  if (topo != nullptr) hwloc_topology_destroy(topo);
  if (t.pus > 0) return t;
  t.source = "sysconf";
#endif
  t.pus = std::thread::hardware_concurrency();
  t.cores = t.pus;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  t.l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  t.l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  t.l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return t;
}

}  // namespace

std::string signature(int threads) {
  static const Topology t = read_topology();  // the machine does not change under a process
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "kind=cpu\nmodel=%s\npackages=%lld\ncores=%lld\nhardware_threads=%lld\nnuma_nodes=%lld\n"
                "l1d_bytes=%lld\nl2_bytes=%lld\nl3_bytes=%lld\nsimd=%s\nthreads=%d\ntopology_source=%s\n"
                "openmp_version=%d\n",
                t.model.c_str(), t.packages, t.cores, t.pus, t.numa, t.l1d, t.l2, t.l3, simd_name(), threads,
                t.source, _OPENMP);
  return buf;
}

}  // namespace sparseport::openmp
