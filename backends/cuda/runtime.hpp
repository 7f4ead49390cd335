// SPDX-License-Identifier: Apache-2.0
// What a device is for the cuda backend: the per-context state (device id, stream, cuSPARSE
// handle, a stream-ordered memory pool for scratch, a plan cache), device memory and copies,
// device discovery and description, and the check that an op's pointers are device memory.
// The stream and the scratch allocator may be lent by the caller (set_external, ABI 1.5).
#pragma once

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cuda/errors.hpp"
#include "core/plan_cache.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::cuda {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  int64_t l2_bytes = 0, memory_bytes = 0;
  double peak_gbps = 0.0;  // 2 x memory clock x bus width (the datasheet number, not a measurement)
};

// Devices the runtime sees; a missing driver or no GPU throws BackendError saying which.
int device_count();
DeviceInfo device_info(int device);
// One line per device: name, compute capability, SMs, L2, memory, peak bandwidth, and the
// driver, runtime and cuSPARSE versions.
std::string describe_devices();
// The scheduler's device signature of one device ("key=value" lines, plugin_abi.h): name,
// compute capability, SMs, L2, memory, peak bandwidth, then driver/runtime/cuSPARSE versions.
std::string signature(int device);

// Plans (vendor descriptors and buffers, hub partitions, formats) and their cache: core/plan_cache.hpp.
using detail::Plan;
using detail::PlanCache;
using detail::PlanStats;

class State {
 public:
  explicit State(int device);
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  int device() const { return device_; }
  const DeviceInfo& info() const { return info_; }
  // The stream every op, copy and scratch allocation is ordered on: the caller's after
  // set_external lent one, else the state's own. Plans read it when they free their memory, so
  // they follow a change of stream.
  cudaStream_t stream() const { return stream_.load(std::memory_order_acquire); }
  cusparseHandle_t sparse() const { return sparse_; }
  cudaMemPool_t pool() const { return pool_; }
  PlanCache& plans() const { return plans_; }

  // Makes the device current for this thread; throws DeviceFault once the context is poisoned.
  void activate() const;
  // Marks the context unusable after a sticky fault; every later op says why.
  void poison(const std::string& why);
  bool poisoned() const;

  // ABI 1.5: runs on ext->stream from now on (null ext or stream: the state's own stream) and takes
  // scratch from ext->alloc / ext->release (null: the state's pool). Work queued before the change
  // stays ordered before work queued after it (the new stream waits on an event of the old one,
  // unless either is being captured into a CUDA graph). Plans keep their memory in the state's
  // pool: they outlive calls, and the caller's allocator lends scratch for one call only.
  void set_external(const sparseport_external* ext);
  // Scratch memory from the caller (set_external), or none (alloc null): the state's pool then.
  struct ScratchAllocator {
    void* (*alloc)(void* user, size_t bytes, void* stream) = nullptr;
    void (*release)(void* user, void* ptr, size_t bytes, void* stream) = nullptr;
    void* user = nullptr;
  };
  ScratchAllocator scratch_allocator() const;

  void* alloc(size_t bytes);
  void release(void* p) noexcept;
  void copy(void* dst, const void* src, size_t bytes, int32_t kind);
  void synchronize() const;

  // The index check's result words (kernels/cuda/validate.cu): 4 x 64 bits on the device, kept
  // at all ones between checks (so a check needs no memset), and their pinned host mirror.
  // Allocated on first use, freed with the state.
  std::pair<unsigned long long*, unsigned long long*> check_words() const;

  // The device summary's words (kernels/cuda/summary.cu): kSummaryDeviceBytes on the device,
  // zeroed once here and put back to zero by the kernel that reads them (so a summary needs no
  // memset), and kSummaryHostBytes of pinned host memory its last block writes the result into. Allocated on
  // first use, freed with the state. A summary holds summary_mutex() while it uses them.
  static constexpr size_t kSummaryDeviceBytes = 16384, kSummaryHostBytes = 1024;
  std::pair<void*, void*> summary_words() const;
  std::mutex& summary_mutex() const { return summary_mu_; }

  // What the last spmm.cusparse plan chose ("ALG2" or "ALG3" with both timings), for logs and tests.
  void set_note(std::string note) const;
  std::string note() const;

  // Device memory this context holds, once the work queued on its stream has run: what alloc() gave
  // and release() has not taken back, and the scratch pool's memory in use (plans, formats, the
  // temporaries of an op). Tests compare it before and after a failed op: nothing may leak.
  struct MemoryInUse {
    uint64_t allocated = 0, scratch = 0;
  };
  MemoryInUse memory_in_use() const;

 private:
  int device_;
  DeviceInfo info_;
  std::atomic<cudaStream_t> stream_{nullptr};  // own_stream_ or the caller's
  cudaStream_t own_stream_ = nullptr;
  cudaEvent_t handoff_ = nullptr;  // orders a new stream after the old one (set_external)
  ScratchAllocator scratch_;       // guarded by mu_
  cusparseHandle_t sparse_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  mutable PlanCache plans_{32};
  mutable std::mutex mu_;
  std::unordered_map<void*, size_t> sizes_;  // allocations made by alloc(), for plan invalidation
  bool poisoned_ = false;
  std::string poison_reason_;
  mutable std::string note_;
  mutable unsigned long long* check_device_ = nullptr;
  mutable unsigned long long* check_host_ = nullptr;
  mutable void* summary_device_ = nullptr;
  mutable void* summary_host_ = nullptr;
  mutable std::mutex summary_mu_;
};

// Stream-ordered scratch from the state's pool, or from the caller's allocator when set_external
// lent one; freed in stream order when it goes out of scope, so kernels queued before the free
// still see it (and a caller's caching allocator may hand the block out again in stream order).
class Scratch {
 public:
  Scratch() = default;
  Scratch(const State& s, size_t bytes);
  Scratch(Scratch&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), stream_(o.stream_), bytes_(o.bytes_), lender_(o.lender_) {}
  Scratch& operator=(Scratch&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      stream_ = o.stream_;
      bytes_ = o.bytes_;
      lender_ = o.lender_;
    }
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { reset(); }

  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void* get() const { return ptr_; }

 private:
  void reset() noexcept;
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
  size_t bytes_ = 0;
  State::ScratchAllocator lender_;  // alloc null: the block came from the state's pool
};

// Throws InvalidArgument naming op and arg unless p is null or memory the state's device can
// read (device memory of that device, or managed memory).
void require_device_pointer(const State& s, const void* p, const char* op, const char* arg);

// Whether SPARSEPORT_LOG names "cuda" (the plugin then prints its plan decisions on stderr).
bool log_enabled();

}  // namespace sparseport::cuda
