// SPDX-License-Identifier: Apache-2.0
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace sparseport::cli {

namespace {
// Quiet for the first second: short steps print nothing at all.
constexpr auto kQuietStart = std::chrono::seconds(1);
// A terminal line is rewritten in place, so it can refresh often; a log file gets a line per
// update, so it refreshes rarely.
constexpr auto kTtyPeriod = std::chrono::milliseconds(250);
constexpr auto kLogPeriod = std::chrono::seconds(5);
}  // namespace

Progress::Progress(std::string label, bool enabled) : label_(std::move(label)) {
  if (!enabled) return;
  tty_ = ::isatty(::fileno(stderr)) != 0;
  start_ = std::chrono::steady_clock::now();
  ticker_ = std::jthread([this](std::stop_token stop) { tick(std::move(stop)); });
}

Progress::~Progress() {
  if (!ticker_.joinable()) return;
  ticker_.request_stop();
  ticker_.join();
  if (printed_) {
    std::string text = tty_ ? "\r" : "";
    text += line();
    text += " done\n";
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
  }
}

std::string Progress::line() const {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string s = label_;
  const int64_t done = done_.load(std::memory_order_relaxed);
  const int64_t total = total_.load(std::memory_order_relaxed);
  const double f = fraction_.load(std::memory_order_relaxed);
  // snprintf rather than string concatenation: GCC 12 warns falsely (-Wrestrict) on "x" + std::string&&.
  char buf[96];
  if (done >= 0 && total > 0) {
    std::snprintf(buf, sizeof buf, " %lld/%lld", static_cast<long long>(done), static_cast<long long>(total));
    s += buf;
  }
  if (f >= 0) {
    std::snprintf(buf, sizeof buf, ": %d%%", static_cast<int>(f * 100.0));
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " (%.1f s)", secs);
  return s + buf;
}

void Progress::tick(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  if (wake_.wait_for(lock, stop, kQuietStart, [] { return false; }) || stop.stop_requested()) return;
  while (!stop.stop_requested()) {
    std::string text = tty_ ? "\r" : "";
    text += line();
    text += tty_ ? "\033[K" : "\n";
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    printed_ = true;
    wake_.wait_for(lock, stop, tty_ ? std::chrono::duration_cast<std::chrono::milliseconds>(kTtyPeriod)
                                    : std::chrono::duration_cast<std::chrono::milliseconds>(kLogPeriod),
                   [] { return false; });
  }
}

}  // namespace sparseport::cli
