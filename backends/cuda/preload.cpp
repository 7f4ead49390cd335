// SPDX-License-Identifier: Apache-2.0
// The module preload (preload.hpp): a registry filled at load time, and one thread per process that
// loads the registered modules of each device it is asked for, in `order`, then ends.
#include "backends/cuda/preload.hpp"

#include <cuda_runtime_api.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "backends/cuda/runtime.hpp"

namespace sparseport::cuda {
namespace {

struct Anchor {
  std::string file;
  int order;
  const void* kernel;
};

// Filled while the library loads (one thread), read only after; never destroyed, as the modules.
std::vector<Anchor>& anchors() {
  static auto* all = new std::vector<Anchor>;
  return *all;
}

// The plugin's calls in flight and when the last one ended (PluginCall), for the idle test; kept
// only while a preload thread runs (g_watching).
std::atomic<bool> g_watching{false};
std::atomic<int> g_calls{0};
std::atomic<int64_t> g_last_end_ns{0};
constexpr int64_t kIdleNs = 2'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Preloader {
 public:
  // Made by the first context's preload_modules(), after that context made the runtime start: the
  // exit handlers run in reverse order, so this one stops and joins the thread before the
  // runtime's own teardown.
  static Preloader& get() {
    static Preloader p;
    return p;
  }

  ~Preloader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    if (forked_child_) return;  // the thread is the parent's: nothing here to join
    if (thread_.joinable()) thread_.join();
  }

  void start(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || reports_.count(device) != 0) return;
    Report& r = reports_[device];
    r.report.started = true;
    for (const Anchor& a : sorted()) r.report.registered.push_back(a.file);
    queue_.push_back(device);
    if (running_) return;  // the running thread takes this device before it ends
    if (thread_.joinable()) thread_.join();  // ended: it cleared running_ as its last step
    running_ = true;
    g_last_end_ns.store(now_ns());
    g_watching.store(true);
    try {
      thread_ = std::thread(&Preloader::work, this);
    } catch (const std::system_error&) {
      // No thread to spare: each module loads at its first launch, as without the preload.
      running_ = false;
      g_watching.store(false);
      queue_.clear();
      r.finished = true;
      r.report.error = "no thread to preload on";
    }
  }

  PreloadReport wait(int device) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] {
      auto it = reports_.find(device);
      return it == reports_.end() || it->second.finished || !running_;
    });
    auto it = reports_.find(device);
    return it == reports_.end() ? PreloadReport{} : it->second.report;
  }

  // fork(): the child must not inherit either lock held by this thread mid-load, nor try to join
  // a thread that does not exist in it. Registered once, before the first thread starts.
  void prepare_fork() {
    load_mu_.lock();
    mu_.lock();
  }
  void after_fork(bool child) {
    if (child) {
      forked_child_ = true;
      running_ = false;
      g_watching.store(false);
      queue_.clear();
      // The std::thread names a thread of the parent; leaked, never joined nor destroyed here.
      if (thread_.joinable()) new std::thread(std::move(thread_));
    }
    mu_.unlock();
    load_mu_.unlock();
  }

 private:
  struct Report {
    PreloadReport report;
    bool finished = false;
  };

  static std::vector<Anchor> sorted() {
    std::vector<Anchor> all = anchors();
    std::stable_sort(all.begin(), all.end(), [](const Anchor& a, const Anchor& b) { return a.order < b.order; });
    return all;
  }

  void work() {
    for (;;) {
      int device = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.empty() || stop_) {
          running_ = false;
          g_watching.store(false);
          done_.notify_all();
          return;
        }
        device = queue_.front();
        queue_.pop_front();
      }
      load(device);
    }
  }

  // Waits until no plugin call is in flight and none ended in the last kIdleNs; false once stopped.
  bool wait_for_idle() const {
    for (;;) {
      if (stop_.load()) return false;
      if (g_calls.load() == 0 && now_ns() - g_last_end_ns.load() >= kIdleNs) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  void load(int device) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    int loaded = 0;
    const std::vector<Anchor> all = sorted();
    // Relaxed: a load on this thread must not invalidate a graph another thread is capturing in the
    // global mode (PyTorch's default), nor be refused by it.
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&relaxed);
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) error = std::string("cudaSetDevice: ") + cudaGetErrorString(e);
    for (const Anchor& a : all) {
      if (!error.empty()) break;
      if (!wait_for_idle()) break;  // exit waits for one module's load at most
      cudaError_t e = cudaSuccess;
      {
        std::lock_guard<std::mutex> load_lock(load_mu_);
        cudaFuncAttributes attributes{};
        e = cudaFuncGetAttributes(&attributes, a.kernel);
      }
      if (e != cudaSuccess) {
        (void)cudaGetLastError();  // this thread's error only; no op runs on it
        error = a.file + ": " + cudaGetErrorString(e);
        break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      reports_[device].report.loaded.push_back(a.file);
      ++loaded;
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (log_enabled())
      std::fprintf(stderr, "sparseport cuda: preloaded %d of %zu kernel modules on device %d in %.1f ms%s%s\n", loaded,
                   all.size(), device, ms, error.empty() ? "" : "; stopped: ", error.c_str());
    std::lock_guard<std::mutex> lock(mu_);
    Report& r = reports_[device];
    r.report.milliseconds = ms;
    r.report.error = error;
    r.finished = true;
    done_.notify_all();
  }

  std::mutex mu_;  // guards everything below but stop_'s reads in load()
  std::condition_variable done_;
  std::map<int, Report> reports_;
  std::deque<int> queue_;
  std::thread thread_;
  bool running_ = false;
  bool forked_child_ = false;
  std::atomic<bool> stop_{false};
  std::mutex load_mu_;  // held around each module's load (fork waits for it)
};

// Opt-in: a module's load synchronises the device context (preload.hpp).
bool preload_enabled() {
  const char* v = std::getenv("SPARSEPORT_CUDA_PRELOAD");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

ModuleAnchor::ModuleAnchor(const char* file, int order, const void* kernel) {
  const char* slash = std::strrchr(file, '/');
  anchors().push_back(Anchor{slash != nullptr ? slash + 1 : file, order, kernel});
}

void preload_modules(int device) {
  if (!preload_enabled()) return;
  static std::once_flag atfork;
  std::call_once(atfork, [] {
    (void)Preloader::get();  // made here, before any thread of it exists
    (void)pthread_atfork([] { Preloader::get().prepare_fork(); }, [] { Preloader::get().after_fork(false); },
                         [] { Preloader::get().after_fork(true); });
  });
  Preloader::get().start(device);
}

PreloadReport preload_wait(int device) { return Preloader::get().wait(device); }

PluginCall::PluginCall() : counted_(g_watching.load(std::memory_order_relaxed)) {
  if (counted_) g_calls.fetch_add(1);
}
PluginCall::~PluginCall() {
  if (!counted_) return;
  g_last_end_ns.store(now_ns());
  g_calls.fetch_sub(1);
}

}  // namespace sparseport::cuda
