// SPDX-License-Identifier: Apache-2.0
#include "backends/cuda/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "sparseport/errors.hpp"
#include "core/fault.hpp"

namespace sparseport::cuda {

namespace {

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

std::string version_string(int v) {  // CUDA's 1000 * major + 10 * minor
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string with_gib(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%zu bytes (%.2f GiB)", bytes, static_cast<double>(bytes) / 1073741824.0);
  return buf;
}

// An allocation of device memory failed with err (cudaErrorMemoryAllocation: not sticky). Clears
// it, so the context stays usable, and says how much was asked for and how much the device has.
[[noreturn]] void out_of_memory(cudaError_t err, const char* what, size_t bytes, int device, bool injected) {
  (void)cudaGetLastError();
  size_t free_bytes = 0, total_bytes = 0;
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  (void)cudaGetLastError();
  std::string msg = std::string(what) + " of " + with_gib(bytes) + " on device " + std::to_string(device) +
                    " failed with " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (known) msg += "; the device has " + with_gib(free_bytes) + " free of " + with_gib(total_bytes);
  if (injected) msg += " [injected by SPARSEPORT_FAULT_INJECT=device_alloc]";
  throw OutOfMemory(msg, static_cast<int>(err), cudaGetErrorName(err), bytes);
}

}  // namespace

int device_count() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError(std::string("no usable CUDA device: cudaGetDeviceCount failed with ") + cudaGetErrorName(err) +
                           " (" + cudaGetErrorString(err) + ")",
                       static_cast<int>(err), cudaGetErrorName(err));
  }
  return n;
}

DeviceInfo device_info(int device) {
  DeviceInfo d;
  d.id = device;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sms = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  int clock_khz = 0, bus_bits = 0;
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device), "cudaDeviceGetAttribute(memory clock)");
  check(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device), "cudaDeviceGetAttribute(bus width)");
  d.peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  return d;
}

std::string describe_devices() {
  const int n = device_count();
  int driver = 0, runtime = 0, sp_major = 0, sp_minor = 0, sp_patch = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check(cusparseGetProperty(MAJOR_VERSION, &sp_major), "cusparseGetProperty(MAJOR_VERSION)");
  check(cusparseGetProperty(MINOR_VERSION, &sp_minor), "cusparseGetProperty(MINOR_VERSION)");
  check(cusparseGetProperty(PATCH_LEVEL, &sp_patch), "cusparseGetProperty(PATCH_LEVEL)");
  const std::string versions = "driver " + version_string(driver) + ", runtime " + version_string(runtime) +
                               ", cuSPARSE " + std::to_string(sp_major) + "." + std::to_string(sp_minor) + "." +
                               std::to_string(sp_patch);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const DeviceInfo d = device_info(i);
    char line[512];
    std::snprintf(line, sizeof line, "cuda:%d: %s, cc %d.%d, %d SMs, L2 %.1f MiB, %.1f GiB, peak %.0f GB/s; %s", i,
                  d.name.c_str(), d.cc_major, d.cc_minor, d.sms, d.l2_bytes / 1048576.0,
                  d.memory_bytes / 1073741824.0, d.peak_gbps, versions.c_str());
    if (!out.empty()) out += "\n";
    out += line;
  }
  if (n == 0) out = "no CUDA device (" + versions + ")";
  return out;
}

std::string signature(int device) {
  const DeviceInfo d = device_info(device);
  int driver = 0, runtime = 0, sp_major = 0, sp_minor = 0, sp_patch = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check(cusparseGetProperty(MAJOR_VERSION, &sp_major), "cusparseGetProperty(MAJOR_VERSION)");
  check(cusparseGetProperty(MINOR_VERSION, &sp_minor), "cusparseGetProperty(MINOR_VERSION)");
  check(cusparseGetProperty(PATCH_LEVEL, &sp_patch), "cusparseGetProperty(PATCH_LEVEL)");
  char buf[1024];
  // Hardware first (stable for one GPU model), then the versions that invalidate decisions.
  std::snprintf(buf, sizeof buf,
                "kind=gpu\nname=%s\ncompute_capability=%d.%d\nsms=%d\nl2_bytes=%lld\nmemory_bytes=%lld\n"
                "peak_gbps=%.0f\ndriver_version=%s\nruntime_version=%s\ncusparse_version=%d.%d.%d\n",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sms, static_cast<long long>(d.l2_bytes),
                static_cast<long long>(d.memory_bytes), d.peak_gbps, version_string(driver).c_str(),
                version_string(runtime).c_str(), sp_major, sp_minor, sp_patch);
  return buf;
}


// ---- state -------------------------------------------------------------------------------------

State::State(int device) : device_(device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  info_ = device_info(device);
  check(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_.store(own_stream_, std::memory_order_release);
  try {
    check(cudaEventCreateWithFlags(&handoff_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cusparseCreate(&sparse_), "cusparseCreate");
    check(cusparseSetStream(sparse_, own_stream_), "cusparseSetStream");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    // Keep freed scratch in the pool: the default threshold (0) hands it back to the driver at
    // every synchronisation, and the next op would map it again.
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  } catch (...) {
    if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
    if (sparse_ != nullptr) (void)cusparseDestroy(sparse_);
    if (handoff_ != nullptr) (void)cudaEventDestroy(handoff_);
    (void)cudaStreamDestroy(own_stream_);
    throw;
  }
}

State::~State() {
  // Errors are ignored: after a sticky fault every call fails, and a destructor cannot report.
  // A context destroyed during exit after the CUDA runtime's own teardown (a caller's static
  // Context) releases nothing: the runtime has already dropped the device context with everything
  // in it, and cuSPARSE's handle must not be touched past that point.
  if (cudaSetDevice(device_) == cudaErrorCudartUnloading) return;
  // A lent stream is only waited for: the plans' memory is freed on the state's own stream, once
  // nothing queued on the lent one can still read it.
  const cudaStream_t current = stream();
  (void)cudaStreamSynchronize(current);
  stream_.store(own_stream_, std::memory_order_release);
  plans_.clear();
  (void)cudaStreamSynchronize(own_stream_);
  if (check_device_ != nullptr) (void)cudaFree(check_device_);
  if (check_host_ != nullptr) (void)cudaFreeHost(check_host_);
  if (summary_device_ != nullptr) (void)cudaFree(summary_device_);
  if (summary_host_ != nullptr) (void)cudaFreeHost(summary_host_);
  if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
  if (sparse_ != nullptr) (void)cusparseDestroy(sparse_);
  if (handoff_ != nullptr) (void)cudaEventDestroy(handoff_);
  (void)cudaStreamDestroy(own_stream_);
  (void)cudaGetLastError();
}

namespace {

bool capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(s, &status), "cudaStreamIsCapturing");
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

void State::set_external(const sparseport_external* ext) {
  activate();
  const bool lends_alloc = ext != nullptr && ext->alloc != nullptr, lends_release = ext != nullptr && ext->release != nullptr;
  if (lends_alloc != lends_release)
    throw InvalidArgument(std::string("set_external[cuda]: ") + (lends_alloc ? "alloc" : "release") +
                          " is given but " + (lends_alloc ? "release" : "alloc") +
                          " is null (a scratch allocator needs both, or neither for the plugin's own pool)");
  const cudaStream_t next = ext != nullptr && ext->stream != nullptr ? static_cast<cudaStream_t>(ext->stream) : own_stream_;
  std::lock_guard<std::mutex> lock(mu_);
  const cudaStream_t prev = stream();
  if (next != prev) {
    // Work queued on the old stream (kernels still reading a plan's memory, an op whose result the
    // next op reads) comes before anything queued on the new one, without waiting on the host. A
    // stream under CUDA-graph capture cannot take part in such a dependency: its ordering is the
    // capturing caller's to make.
    if (!capturing(prev) && !capturing(next)) {
      check(cudaEventRecord(handoff_, prev), "cudaEventRecord (set_external: the old stream)");
      check(cudaStreamWaitEvent(next, handoff_, 0), "cudaStreamWaitEvent (set_external: the new stream)");
    }
    check(cusparseSetStream(sparse_, next), "cusparseSetStream (set_external)");
    stream_.store(next, std::memory_order_release);
  }
  scratch_ = lends_alloc ? ScratchAllocator{ext->alloc, ext->release, ext->user} : ScratchAllocator{};
}

State::ScratchAllocator State::scratch_allocator() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scratch_;
}

std::pair<unsigned long long*, unsigned long long*> State::check_words() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (check_device_ == nullptr) {
    void* d = nullptr;
    check(cudaMalloc(&d, 4 * sizeof(unsigned long long)), "cudaMalloc of the index check's 32 bytes");
    // On the state's stream (as summary_words below): a plain cudaMemset runs on the legacy stream,
    // which the state's non-blocking stream does not wait for.
    if (const cudaError_t err = cudaMemsetAsync(d, 0xff, 4 * sizeof(unsigned long long), stream()); err != cudaSuccess) {
      (void)cudaFree(d);
      raise(err, "cudaMemset of the index check's 32 bytes");
    }
    void* h = nullptr;
    if (const cudaError_t err = cudaMallocHost(&h, 4 * sizeof(unsigned long long)); err != cudaSuccess) {
      (void)cudaFree(d);
      raise(err, "cudaMallocHost of the index check's 32 bytes");
    }
    check_device_ = static_cast<unsigned long long*>(d);
    check_host_ = static_cast<unsigned long long*>(h);
  }
  return {check_device_, check_host_};
}

std::pair<void*, void*> State::summary_words() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (summary_device_ == nullptr) {
    void* d = nullptr;
    check(cudaMalloc(&d, kSummaryDeviceBytes), "cudaMalloc of the CSR summary's words");
    // On the state's stream: a plain cudaMemset runs on the legacy stream, which the state's
    // non-blocking stream does not wait for, so the first summary could read the words unset.
    if (const cudaError_t err = cudaMemsetAsync(d, 0, kSummaryDeviceBytes, stream()); err != cudaSuccess) {
      (void)cudaFree(d);
      raise(err, "cudaMemset of the CSR summary's words");
    }
    void* h = nullptr;
    if (const cudaError_t err = cudaMallocHost(&h, kSummaryHostBytes); err != cudaSuccess) {
      (void)cudaFree(d);
      raise(err, "cudaMallocHost of the CSR summary's result");
    }
    summary_device_ = d;
    summary_host_ = h;
  }
  return {summary_device_, summary_host_};
}

void State::activate() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (poisoned_)
      throw DeviceFault("the cuda context on device " + std::to_string(device_) +
                            " is poisoned by an earlier device fault (" + poison_reason_ +
                            "); start a new process to use the GPU again",
                        static_cast<int>(cudaErrorIllegalState), "cudaErrorIllegalState");
  }
  check(cudaSetDevice(device_), "cudaSetDevice");
}

void State::poison(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!poisoned_) poison_reason_ = why;
  poisoned_ = true;
}

bool State::poisoned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return poisoned_;
}

void* State::alloc(size_t bytes) {
  activate();
  void* p = nullptr;
  const bool injected = detail::fault_armed("device_alloc");
  const cudaError_t err = injected ? cudaErrorMemoryAllocation : cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) out_of_memory(err, "cudaMalloc", bytes, device_, injected);
  if (err != cudaSuccess) raise(err, "cudaMalloc of " + std::to_string(bytes) + " bytes on device " + std::to_string(device_));
  std::lock_guard<std::mutex> lock(mu_);
  sizes_[p] = bytes;
  return p;
}

void State::release(void* p) noexcept {
  if (p == nullptr) return;
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = sizes_.find(p); it != sizes_.end()) {
      bytes = it->second;
      sizes_.erase(it);
    }
  }
  plans_.invalidate(p, bytes);
  (void)cudaSetDevice(device_);
  (void)cudaFree(p);  // synchronises the device, so no queued kernel still reads p
  (void)cudaGetLastError();
}

void State::copy(void* dst, const void* src, size_t bytes, int32_t kind) {
  activate();
  const char* what = kind == 0 ? "copy_to_backend" : kind == 1 ? "copy_to_host" : "device-to-device copy";
  if (kind == 0 || kind == 2) require_device_pointer(*this, dst, what, "dst");
  if (kind == 1 || kind == 2) require_device_pointer(*this, src, what, "src");
  if (kind == 0 || kind == 2) plans_.invalidate(dst, bytes);
  const cudaMemcpyKind k = kind == 0 ? cudaMemcpyHostToDevice : kind == 1 ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
  // Host sides go through cudaMemcpyDefault: the host buffer may be pageable or pinned, and a
  // device pointer handed as the host side of a copy still copies correctly.
  const cudaStream_t st = stream();
  check(cudaMemcpyAsync(dst, src, bytes, kind == 2 ? k : cudaMemcpyDefault, st),
        (std::string("cudaMemcpyAsync (") + what + " of " + std::to_string(bytes) + " bytes)").c_str());
  check(cudaStreamSynchronize(st), "cudaStreamSynchronize after a copy");
}

void State::synchronize() const {
  activate();
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void State::set_note(std::string note) const {
  std::lock_guard<std::mutex> lock(mu_);
  note_ = std::move(note);
}

State::MemoryInUse State::memory_in_use() const {
  activate();
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize (memory_in_use)");
  MemoryInUse m;
  check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &m.scratch),
        "cudaMemPoolGetAttribute (UsedMemCurrent)");
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [p, bytes] : sizes_) m.allocated += bytes;
  return m;
}

std::string State::note() const {
  std::lock_guard<std::mutex> lock(mu_);
  return note_;
}

// ---- scratch -----------------------------------------------------------------------------------

Scratch::Scratch(const State& s, size_t bytes) : stream_(s.stream()), bytes_(bytes) {
  if (bytes == 0) return;
  if (const State::ScratchAllocator lender = s.scratch_allocator(); lender.alloc != nullptr) {
    ptr_ = lender.alloc(lender.user, bytes, static_cast<void*>(stream_));
    if (ptr_ == nullptr)
      throw OutOfMemory("the caller's scratch allocator (set_external) gave no memory for " + with_gib(bytes) +
                            " of scratch on device " + std::to_string(s.device()),
                        static_cast<int>(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation", bytes);
    lender_ = lender;
    return;
  }
  // The fault site covers the pool as well: plans, formats and temporaries come from it.
  const bool injected = detail::fault_armed("device_alloc");
  const cudaError_t err = injected ? cudaErrorMemoryAllocation : cudaMallocFromPoolAsync(&ptr_, bytes, s.pool(), stream_);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    if (err == cudaErrorMemoryAllocation)
      out_of_memory(err, "cudaMallocFromPoolAsync (scratch)", bytes, s.device(), injected);
    raise(err, "cudaMallocFromPoolAsync of " + std::to_string(bytes) + " bytes of scratch");
  }
}

void Scratch::reset() noexcept {
  if (ptr_ != nullptr) {
    if (lender_.release != nullptr)
      lender_.release(lender_.user, ptr_, bytes_, static_cast<void*>(stream_));
    else
      (void)cudaFreeAsync(ptr_, stream_);
  }
  ptr_ = nullptr;
  lender_ = {};
}

// ---- pointers ----------------------------------------------------------------------------------

void require_device_pointer(const State& s, const void* p, const char* op, const char* arg) {
  if (p == nullptr) return;
  cudaPointerAttributes at{};
  const cudaError_t err = cudaPointerGetAttributes(&at, p);
  if (err != cudaSuccess) {
    if (err != cudaErrorInvalidValue) raise(err, std::string("cudaPointerGetAttributes on ") + op + " argument " + arg);
    (void)cudaGetLastError();
    at.type = cudaMemoryTypeUnregistered;
  }
  if (at.type == cudaMemoryTypeManaged) return;
  if (at.type == cudaMemoryTypeDevice) {
    if (at.device == s.device()) return;
    throw InvalidArgument(std::string(op) + ": " + arg + " (" + hex(p) + ") is memory of device " +
                          std::to_string(at.device) + " but this cuda context runs on device " +
                          std::to_string(s.device()));
  }
  const char* kind = at.type == cudaMemoryTypeHost ? "page-locked host memory" : "host memory";
  throw InvalidArgument(std::string(op) + ": " + arg + " (" + hex(p) + ") is " + kind +
                        ", but the cuda backend needs device memory of device " + std::to_string(s.device()) +
                        " (allocate it with Context::allocate and fill it with Context::copy_to_backend)");
}

bool log_enabled() {
  const char* v = std::getenv("SPARSEPORT_LOG");
  return v != nullptr && std::strstr(v, "cuda") != nullptr;
}

}  // namespace sparseport::cuda
