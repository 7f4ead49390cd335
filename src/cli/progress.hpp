// SPDX-License-Identifier: Apache-2.0
// Progress on stderr for work that takes longer than a second (loads, reference runs, long timing
// loops). Never on stdout, so --json output stays parseable. A background ticker does the
// printing, so steps that report nothing (a generator, a serial reference run) still show that
// the program is alive.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace sparseport::cli {

class Progress {
 public:
  // enabled = false makes every call a no-op (--quiet).
  Progress(std::string label, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void fraction(double f) { fraction_.store(f, std::memory_order_relaxed); }
  void step(int64_t done, int64_t total) {
    total_.store(total, std::memory_order_relaxed);
    done_.store(done, std::memory_order_relaxed);
  }

 private:
  void tick(std::stop_token stop);
  std::string line() const;

  std::string label_;
  bool tty_ = false;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_;
  std::atomic<double> fraction_{-1.0};
  std::atomic<int64_t> done_{-1}, total_{0};
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread ticker_;  // last: it reads every member above
};

}  // namespace sparseport::cli
