// SPDX-License-Identifier: Apache-2.0
// What the GPU benchmark programs share (sparseport_bench_cuda, sparseport_bench_values16): CUDA
// error checks, the device's facts, the device copy bandwidth (the floor's denominator), and the
// event timer that queues calls behind ballast so that each event pair brackets GPU work only.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::bench {

inline void cuda_ok(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  throw BackendError(std::string("sparseport benchmark: ") + what + " failed with " + cudaGetErrorName(e) + " (" +
                         cudaGetErrorString(e) + ").",
                     static_cast<int>(e), cudaGetErrorName(e));
}

// ---- device facts, copy bandwidth, ballast ---------------------------------------------------

struct DeviceFacts {
  std::string name;
  int device = 0;
  int sms = 0;
  int64_t l2_bytes = 0;
  size_t free_bytes = 0, total_bytes = 0;
  std::string describe;  // the plugin's describe_devices() line
};

inline DeviceFacts device_facts(const Context& ctx) {
  DeviceFacts f;
  f.device = ctx.device();
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, f.device), "cudaGetDeviceProperties");
  f.name = prop.name;
  f.sms = prop.multiProcessorCount;
  int l2 = 0;
  cuda_ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, f.device), "cudaDeviceGetAttribute(L2 size)");
  f.l2_bytes = l2;
  cuda_ok(cudaMemGetInfo(&f.free_bytes, &f.total_bytes), "cudaMemGetInfo");
  char line[2048] = {0};
  sparseport_status st{};
  if (ctx.plugin().table->describe_devices != nullptr &&
      ctx.plugin().table->describe_devices(line, sizeof line, &st) == SPARSEPORT_OK)
    f.describe = line;
  for (char& c : f.describe)
    if (c == '\n') c = ';';
  return f;
}

// A pair of CUDA events, destroyed with the object.
struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
  EventPair() {
    cuda_ok(cudaEventCreate(&a), "cudaEventCreate");
    cuda_ok(cudaEventCreate(&b), "cudaEventCreate");
  }
  ~EventPair() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  double seconds() const {
    float ms = 0.0f;
    cuda_ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }
};

// STREAM-Copy-like device bandwidth: cudaMemcpyAsync device to device on the context's stream of
// a buffer of max(256 MiB, 8 x L2), at most 1 GiB, timed with events, best of `repeats`, counted as
// 2 x bytes / t (one read, one write).
inline CopyBandwidth measure_device_copy_bandwidth(const Context& ctx, cudaStream_t stream, int64_t l2_bytes,
                                            int repeats = 10) {
  int64_t bytes = std::max<int64_t>(int64_t{256} << 20, 8 * l2_bytes);
  bytes = std::min<int64_t>(bytes, int64_t{1} << 30);
  Buffer src = ctx.allocate(static_cast<size_t>(bytes)), dst = ctx.allocate(static_cast<size_t>(bytes));
  cuda_ok(cudaMemsetAsync(src.data(), 1, static_cast<size_t>(bytes), stream), "cudaMemsetAsync");
  cuda_ok(cudaMemsetAsync(dst.data(), 0, static_cast<size_t>(bytes), stream), "cudaMemsetAsync");
  EventPair ev;
  double best = 1e300;
  for (int r = 0; r < repeats + 1; ++r) {  // the first copy is a warm-up
    cuda_ok(cudaEventRecord(ev.a, stream), "cudaEventRecord");
    cuda_ok(cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (copy bandwidth)");
    cuda_ok(cudaEventRecord(ev.b, stream), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(ev.b), "cudaEventSynchronize");
    if (r > 0) best = std::min(best, ev.seconds());
  }
  CopyBandwidth bw;
  bw.buffer_bytes = bytes;
  bw.threads = 0;
  bw.repeats = repeats;
  bw.gbps = 2.0 * static_cast<double>(bytes) / best / 1e9;
  std::ostringstream how;
  how << "device-to-device cudaMemcpyAsync of " << (bytes >> 20) << " MiB on the context's stream, CUDA events, best of "
      << repeats << " after one warm-up, counted as STREAM Copy (2 x bytes / t)";
  bw.how = how.str();
  return bw;
}

// Per (row) what the timer learns: the host's time to queue one call and the GPU's time of one.
struct CallCost {
  double host_s = 50e-6;  // a generous first guess; replaced after the first batch
  double gpu_s = 0.0;     // 0: unknown
};

// Times calls one by one with CUDA events on the context's stream. Calls are queued in batches of
// at most kBatch behind "ballast" (device-to-device copies of a 64 MiB buffer), sized so that the
// host finishes queueing the batch before the GPU gets past the ballast: the GPU then runs the
// calls back to back and each event pair brackets GPU work only.
class EventTimer {
 public:
  static constexpr int kBatch = 32;
  static constexpr int kMaxBallastUnits = 256;

  EventTimer(const Context& ctx, cudaStream_t stream) : stream_(stream), pairs_(kBatch) {
    const size_t bytes = size_t{64} << 20;
    src_ = ctx.allocate(bytes);
    dst_ = ctx.allocate(bytes);
    cuda_ok(cudaMemsetAsync(src_.data(), 0, bytes, stream_), "cudaMemsetAsync (ballast)");
    cuda_ok(cudaEventCreate(&ballast_done_), "cudaEventCreate");
    ballast(1);
    EventPair ev;
    cuda_ok(cudaEventRecord(ev.a, stream_), "cudaEventRecord");
    ballast(8);
    cuda_ok(cudaEventRecord(ev.b, stream_), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(ev.b), "cudaEventSynchronize");
    unit_s_ = std::max(ev.seconds() / 8, 1e-6);
  }
  ~EventTimer() { cudaEventDestroy(ballast_done_); }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  double ballast_unit_seconds() const { return unit_s_; }

  // GPU seconds of n calls of call(); cost is updated with what was seen. idle (when given) gets
  // the fraction of the batches' GPU span in which no timed call was running (about 0 when the
  // ballast hid the host's queueing, as intended).
  std::vector<double> time_calls(int64_t n, const std::function<void()>& call, CallCost& cost,
                                 double* idle = nullptr) {
    std::vector<double> out;
    out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
    double gaps = 0.0, span = 0.0;
    while (static_cast<int64_t>(out.size()) < n) {
      const int b = static_cast<int>(std::min<int64_t>(kBatch, n - static_cast<int64_t>(out.size())));
      // The GPU must not catch up with the host: b calls take the host b * host_s to queue, during
      // which the GPU runs the ballast and the b - 1 calls before the last.
      double need = 1.5 * cost.host_s * b - cost.gpu_s * (b - 1);
      need = std::max(need, 1.5 * cost.host_s + 20e-6);
      ballast(static_cast<int>(std::min<double>(std::ceil(need / unit_s_), kMaxBallastUnits)));
      cuda_ok(cudaEventRecord(ballast_done_, stream_), "cudaEventRecord");
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < b; ++i) {
        cuda_ok(cudaEventRecord(pairs_[static_cast<size_t>(i)].a, stream_), "cudaEventRecord");
        call();
        cuda_ok(cudaEventRecord(pairs_[static_cast<size_t>(i)].b, stream_), "cudaEventRecord");
      }
      const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / b;
      cuda_ok(cudaEventSynchronize(pairs_[static_cast<size_t>(b - 1)].b), "cudaEventSynchronize");
      std::vector<double> batch;
      for (int i = 0; i < b; ++i) batch.push_back(pairs_[static_cast<size_t>(i)].seconds());
      float ms = 0.0f;
      cuda_ok(cudaEventElapsedTime(&ms, ballast_done_, pairs_[0].a), "cudaEventElapsedTime");
      gaps += static_cast<double>(ms) * 1e-3;
      for (int i = 1; i < b; ++i) {
        cuda_ok(cudaEventElapsedTime(&ms, pairs_[static_cast<size_t>(i - 1)].b, pairs_[static_cast<size_t>(i)].a),
                "cudaEventElapsedTime");
        gaps += static_cast<double>(ms) * 1e-3;
      }
      cuda_ok(cudaEventElapsedTime(&ms, ballast_done_, pairs_[static_cast<size_t>(b - 1)].b), "cudaEventElapsedTime");
      span += static_cast<double>(ms) * 1e-3;
      cost.host_s = host;
      cost.gpu_s = median(batch);
      out.insert(out.end(), batch.begin(), batch.end());
    }
    if (idle != nullptr) *idle = span > 0 ? gaps / span : 0.0;
    return out;
  }

 private:
  void ballast(int units) {
    for (int u = 0; u < units; ++u)
      cuda_ok(cudaMemcpyAsync(dst_.data(), src_.data(), src_.bytes(), cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpyAsync (ballast)");
  }

  cudaStream_t stream_;
  Buffer src_, dst_;
  std::vector<EventPair> pairs_;
  cudaEvent_t ballast_done_ = nullptr;
  double unit_s_ = 1e-4;
};

}  // namespace sparseport::bench
