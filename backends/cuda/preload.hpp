// SPDX-License-Identifier: Apache-2.0
// Loading the cuda plugin's kernels before the first op needs them. Since CUDA 12 the runtime loads
// a module (the device code of one .cu file) when a kernel of it first runs ("lazy loading", the
// default). A first launch then costs about 1 ms per MB of the module's code: on an H100 a 10 MB
// module took 10-18 ms, a 2.7 MB one 2.5 ms, a 4-kernel one 0.3 ms. The plugin's 31 kernel files
// held 71 MB for sm_90 with -lineinfo (now off by default: SPARSEPORT_CUDA_LINEINFO), so a
// process's first decision, which times several variants of different files, spent ~100 ms loading
// them (mdual, F = 64: 110 ms lazy against 6 ms with CUDA_MODULE_LOADING=EAGER, which loads
// everything in every library and made the process 1.3 s slower). With SPARSEPORT_CUDA_PRELOAD=1, a
// thread loads this plugin's modules (all 31 in 200-320 ms on an H100, with -lineinfo) after the
// first context of a device is created, so that a program's set-up (reading its graph, building its
// model) overlaps it: the first decision on mdual then took 7.5-10 ms. Without -lineinfo it takes
// 38-78 ms lazily and 7.5-9.5 ms with the preload (2026-12-05-h100-kokkos-masked-batches.md).
// Opt-in, because loading a module synchronises the device context (the CUDA guide's lazy-loading
// hazards): a load waits for all queued work, and launches on other threads wait for the load. A
// stream held by a host function that waits for the host thread (CudaExternal's gate) then
// deadlocks, and under a cache hit in a new process the loads made the hit's summary 4.0 ms
// instead of 44 us. The thread therefore loads only while the plugin is idle (PluginCall), but a
// caller's own kernels and host functions are beyond its sight.
// benchmarks/results/2026-12-05-h100-module-preload.md has the measurements.
#pragma once

#include <string>
#include <vector>

namespace sparseport::cuda {

// One kernel file's module, registered at load time by SPARSEPORT_CUDA_MODULE (kernels/cuda/
// common.cuh). `kernel` is an empty kernel of that file: asking the runtime for its attributes
// loads the file's whole module. Lower `order` loads first (the families decisions time first).
struct ModuleAnchor {
  ModuleAnchor(const char* file, int order, const void* kernel);
};

// Where SPARSEPORT_CUDA_PRELOAD is 1 (read at each call), starts loading every registered module
// into `device`'s primary context on a thread of its own, once per device and process. Returns at
// once.
// The thread holds a lock around each module's load that fork() takes first, so that a child never
// inherits a runtime lock held mid-load, and the process's exit stops it between two modules and
// waits for it (at most one module's load) before the CUDA runtime tears down.
void preload_modules(int device);

// Held by every call into the cuda plugin (plugins/cuda/plugin.cpp). The preload loads a module only
// while the plugin is idle: no call in flight and none ended in the last 2 ms. A module's load holds
// a lock of the runtime that a launch waits for: loaded under a cache hit in a new process, they
// made its summary 4.0 ms instead of 44 us and its first call 34 ms instead of 2 ms. Now a call
// that arrives mid-load waits for that one module at most, and a decision that starts before the
// preload loads its candidates' modules itself, as without the preload.
// While no preload runs (the default), a PluginCall reads one flag and does nothing else. A call
// already in flight when a preload starts is not seen; the thread waits 2 ms from its start.
class PluginCall {
 public:
  PluginCall();
  ~PluginCall();
  PluginCall(const PluginCall&) = delete;
  PluginCall& operator=(const PluginCall&) = delete;

 private:
  bool counted_;
};

// What a device's preload did, once it has finished (waits for it; for tests and logs): the files
// registered, the files loaded in the order they were loaded, and the first error, if any.
struct PreloadReport {
  bool started = false;
  std::vector<std::string> registered, loaded;
  std::string error;
  double milliseconds = 0.0;
};
PreloadReport preload_wait(int device);

}  // namespace sparseport::cuda
