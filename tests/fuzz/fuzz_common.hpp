// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz targets: what counts as a finding, the expected-error check, and a scratch
// folder for targets whose API reads files.
#pragma once

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>

#include "sparseport/errors.hpp"

namespace fuzz {

// A finding: print why and abort, so libFuzzer saves the input as a crash.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==== FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const std::string& what) {
  if (!ok) finding(what);
}

inline std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(typeid(e).name());
}

// Runs f. Returns false when it returns normally, true when it throws a sparseport::Error (the
// library's answer to a bad input; *message gets what()). Any other exception is a finding: the
// library must turn it into a clear sparseport error.
template <class F>
bool rejects(const char* call, F&& f, std::string* message = nullptr) {
  try {
    f();
    return false;
  } catch (const sparseport::Error& e) {
    if (message != nullptr) *message = e.what();
    return true;
  } catch (const std::exception& e) {
    finding(std::string(call) + " threw " + type_name(e) + " instead of a sparseport::Error: " + e.what());
  } catch (...) {
    finding(std::string(call) + " threw something that is not a std::exception");
  }
}

// Bytes of memory on this machine, as the library judges them (sysconf; 2^47 when unknown): a
// size that needs more must be refused up front, never allocated.
inline long double host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0x1p47L;
  return static_cast<long double>(pages) * static_cast<long double>(page);
}

// A private folder for this process (under TMPDIR, else /dev/shm, else /tmp), removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* env = std::getenv("TMPDIR");
    std::string base = env != nullptr && *env != '\0' ? env : "";
    if (base.empty()) base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string templ = base + "/sparseport-fuzz-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) finding("cannot create a scratch folder under " + base);
    static std::string made;
    made = templ;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return templ;
  }();
  return dir;
}

// Writes bytes to scratch_dir()/name and returns the path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) finding("cannot write " + path);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) finding("cannot write " + path);
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

}  // namespace fuzz
