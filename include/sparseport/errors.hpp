// SPDX-License-Identifier: Apache-2.0
// The error tree of STYLE.md. Every message is a whole sentence naming the operator (or file and
// line), the argument and the numbers involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace sparseport {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad arguments: null pointers, out-of-range indices, unsorted where sorted is required, bad specs.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Shapes that do not fit together; the message gives both shapes and the rule.
class DimensionMismatch : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A malformed input file. what() reads "FILE:LINE: problem"; line 0 means the file as a whole.
class ParseError : public InvalidArgument {
 public:
  ParseError(std::string file, int64_t line, const std::string& problem)
      : InvalidArgument(file + ":" + std::to_string(line) + ": " + problem),
        file_(std::move(file)),
        line_(line) {}
  const std::string& file() const noexcept { return file_; }
  int64_t line() const noexcept { return line_; }

 private:
  std::string file_;
  int64_t line_;
};

// The backend cannot do this (a variant that does not apply, an op slot it leaves empty).
class Unsupported : public Error {
 public:
  using Error::Error;
};

// The backend was not built into this library: "not compiled (SPARSEPORT_ENABLE_CUDA=OFF)".
class NotCompiled : public Unsupported {
 public:
  using Unsupported::Unsupported;
};

// A plugin table that is missing, of another ABI version, or broke its contract.
class PluginError : public Error {
 public:
  using Error::Error;
};

// A native library call failed; keeps the native code and its name (cudaError_t, cusparseStatus_t).
class BackendError : public Error {
 public:
  BackendError(const std::string& message, int native_code, std::string native_name)
      : Error(message), native_code_(native_code), native_name_(std::move(native_name)) {}
  int native_code() const noexcept { return native_code_; }
  const std::string& native_name() const noexcept { return native_name_; }

 private:
  int native_code_;
  std::string native_name_;
};

// Memory could not be allocated: device memory (cudaMalloc: native name cudaErrorMemoryAllocation)
// or host memory (a failed aligned_alloc: "ENOMEM"; std::bad_alloc inside an op: "std::bad_alloc").
// Nothing was written to the op's outputs and the context stays usable: free memory or ask for less.
// requested_bytes() is the size that was asked for, 0 when it is not known (a std::bad_alloc).
class OutOfMemory : public BackendError {
 public:
  OutOfMemory(const std::string& message, int native_code, std::string native_name, size_t requested_bytes = 0)
      : BackendError(message, native_code, std::move(native_name)), requested_bytes_(requested_bytes) {}
  size_t requested_bytes() const noexcept { return requested_bytes_; }

 private:
  size_t requested_bytes_;
};

// A sticky device error: the context that raised it is poisoned, the process is not aborted.
class DeviceFault : public BackendError {
 public:
  using BackendError::BackendError;
};

}  // namespace sparseport
