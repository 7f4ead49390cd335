// SPDX-License-Identifier: Apache-2.0
// Loading the cuda plugin's kernels before the first op needs them. Since CUDA 12 the runtime loads
// a module (the device code of one .cu file) when a kernel of it first runs ("lazy loading", the
// default). A first launch then costs about 1 ms per MB of the module's code: on an H100 a 10 MB
// module took 10-18 ms, a 2.7 MB one 2.5 ms, a 4-kernel one 0.3 ms. The plugin's 31 kernel files
// hold 71 MB for sm_90, so a process's first decision, which times several variants of different
// files, spent ~100 ms loading them (mdual, F = 64: 110 ms lazy against 6 ms with
// CUDA_MODULE_LOADING=EAGER, which loads everything in every library and made the process
// 1.3 s slower). Here a thread loads only this plugin's modules when the first context of a
// device is created, so that a program's set-up overlaps it.
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

// Starts loading every registered module into `device`'s primary context on a thread of its own:
// once per device and process, and never where SPARSEPORT_CUDA_PRELOAD is 0. Returns at once.
// The thread holds a lock around each module's load that fork() takes first, so that a child never
// inherits a runtime lock held mid-load, and the process's exit stops it between two modules and
// waits for it (at most one module's load) before the CUDA runtime tears down.
void preload_modules(int device);

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
