// SPDX-License-Identifier: Apache-2.0
// For the cuda tests that call plugin slots directly (ABI 1.5: spmm's arg, csr_transpose's perm,
// spmm_arg_backward, set_external), next to the reference plugin's slots as the oracle: views as
// ABI structs, a status check that names the call, and a gate that holds a stream's queue shut
// until the test opens it (a host function that waits), to see which stream an op was queued on.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/plugin_abi.h"

namespace cuda_test {

inline sparseport_csr abi_of(const CsrView& v) {
  return {v.rows,   v.cols, v.nnz, v.rowptr, v.colind, v.values, static_cast<int32_t>(v.index_type),
          static_cast<int32_t>(v.value_type)};
}
inline sparseport_dense abi_of(const DenseView& d) {
  return {d.rows, d.cols, d.ld, d.data, static_cast<int32_t>(d.value_type)};
}
inline sparseport_dense_mut abi_of(const DenseMutView& d) {
  return {d.rows, d.cols, d.ld, d.data, static_cast<int32_t>(d.value_type)};
}

inline const sparseport_plugin& cuda_table() { return *plugin("cuda").table; }
// The oracle. Host memory, no state: its slots take a zeroed exec.
inline const sparseport_plugin& reference_table() {
  const PluginInfo& p = plugin("reference");
  if (p.table == nullptr) throw std::runtime_error("the reference plugin is not available: " + p.reason);
  return *p.table;
}

// Throws (GoogleTest then fails the test, naming the call) unless rc is SPARSEPORT_OK.
inline void expect_ok(int rc, const sparseport_status& st, const std::string& what) {
  if (rc != SPARSEPORT_OK)
    throw std::runtime_error(what + " failed with code " + std::to_string(rc) + " (" + st.native_name +
                             "): " + st.message);
}

inline void cuda_ok(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed with " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
}

// The cuda state of a context and its stream of the moment (sparseport_cuda_stream).
inline void* state_of(const Context& ctx) { return ctx.exec().state; }
inline cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(sparseport_cuda_stream(state_of(ctx))); }

// Whether the cuda plugin's variant applies to args (its `applies` slot).
inline bool spmm_variant_applies(const std::string& variant, const sparseport_spmm_args& args) {
  const sparseport_plugin& t = cuda_table();
  if (t.applies == nullptr) return true;
  sparseport_status st{};
  return t.applies(SPARSEPORT_OP_SPMM, variant.c_str(), &args, &st) != 0;
}

// set_external through the table's slot (the front end's Context::set_stream is not this test's).
inline void set_external(const Context& ctx, const sparseport_external* ext) {
  sparseport_status st{};
  expect_ok(cuda_table().set_external(state_of(ctx), ext, &st), st, "set_external");
}

// A stream of the test's own, non-blocking, destroyed with the object.
class TestStream {
 public:
  TestStream() { cuda_ok(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~TestStream() {
    (void)cudaStreamSynchronize(s_);
    (void)cudaStreamDestroy(s_);
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Holds `stream` back: nothing queued on it after close() runs until open(). The destructor opens
// and waits for the stream, so a failing test cannot leave a queue shut. While shut, read device
// memory only through another stream (peek), never through the context's copies.
class Gate {
 public:
  explicit Gate(cudaStream_t stream) : stream_(stream) {}
  ~Gate() {
    open();
    (void)cudaStreamSynchronize(stream_);
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void close() {
    open_.store(false);
    cuda_ok(cudaLaunchHostFunc(stream_, &Gate::wait, this), "cudaLaunchHostFunc (gate)");
  }
  void open() { open_.store(true); }

 private:
  static void CUDART_CB wait(void* self) {
    const auto* g = static_cast<const Gate*>(self);
    while (!g->open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cudaStream_t stream_;
  std::atomic<bool> open_{true};
};

// Runs f on another thread while `gate` holds a stream shut: true when f returned within 60 s
// (it queued its work without waiting for that stream). Otherwise opens the gate, waits for f and
// returns false, so that a wait fails the test instead of hanging it.
template <class F>
bool returns_while_shut(Gate& gate, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  const bool in_time = done.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!in_time) gate.open();
  done.get();
  return in_time;
}

// n values of T at device address p, copied on a stream of the test's own: works while the
// context's stream is held by a Gate. Pageable host memory on purpose: cudaFreeHost (and cudaFree)
// wait for the whole device, so they would wait for the gate too.
template <class T>
std::vector<T> peek(const void* p, size_t n) {
  TestStream probe;
  std::vector<T> out(n);
  cuda_ok(cudaMemcpyAsync(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, probe.get()), "cudaMemcpyAsync (peek)");
  cuda_ok(cudaStreamSynchronize(probe.get()), "cudaStreamSynchronize (peek)");
  return out;
}

}  // namespace cuda_test
