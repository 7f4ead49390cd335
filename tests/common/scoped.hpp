// SPDX-License-Identifier: Apache-2.0
// Test helpers with a scope: a fresh temporary folder, an environment variable set for a while, and
// "f must throw exactly E, saying these words".
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <typeinfo>
#include <vector>

namespace sparseport_test {

// A fresh folder under the system's temporary directory, removed (with its contents) afterwards.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "sparseport-test") {
    path = (std::filesystem::temp_directory_path() /
            (prefix + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())))
               .string();
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// Sets (or, with nullptr, unsets) an environment variable for a scope, restoring what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value != nullptr)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// f must throw exactly E with every one of `parts` in its message (printed, so logs show it).
template <class E, class F>
E expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const E& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << "threw " << typeid(e).name() << " instead of " << typeid(E).name() << ": "
                                    << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
    std::printf("[ info ] %s\n", msg.c_str());
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << " instead of " << typeid(E).name() << ": " << e.what();
    throw;
  }
  ADD_FAILURE() << "no exception; expected " << typeid(E).name();
  throw std::runtime_error("no exception");
}

}  // namespace sparseport_test
