// SPDX-License-Identifier: Apache-2.0
// Context: which backend runs the ops, on which device, with how many threads; plus the plugin
// registry and backend-owned memory (Buffer, CsrMatrix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparseport/plugin_abi.h"
#include "sparseport/views.hpp"

namespace sparseport {

enum class PluginStatus {
  available,     // compiled in and usable
  no_device,     // compiled in, but no device of its kind on this machine (reason says why)
  not_compiled,  // not built into this library (reason names the option)
  broken,        // compiled in but its table was refused (ABI mismatch)
};
const char* name(PluginStatus s);

struct VariantInfo {
  sparseport_op op;
  std::string name;  // "spmm.rows"
  bool is_default = false;
  bool is_vendor = false;
  std::string doc;
  // Bitwise-identical results run to run and for any launch configuration or thread count on the
  // same device (SPARSEPORT_VARIANT_DETERMINISTIC); deterministic mode runs only these. Last, so
  // that code initialising the fields above in order keeps compiling.
  bool is_deterministic = false;
  // spmm only: writes the winning entry of max/min when asked (spmm_arg in backward.hpp).
  bool records_arg = false;
  // Takes f16/bf16 values itself (SPARSEPORT_VARIANT_VALUES16); other variants see 16-bit calls
  // through the float32 conversion.
  bool values16 = false;
  // Rounds float32 inputs to TF32 (10 mantissa bits) on tensor cores (SPARSEPORT_VARIANT_TF32): it
  // runs only where the caller allows TF32 (Context::set_allow_tf32, the op's allow_tf32 option,
  // SPARSEPORT_ALLOW_TF32=1); otherwise it is never chosen and a request by name is refused.
  bool tf32 = false;
};

struct PluginInfo {
  std::string name;  // backend token
  PluginStatus status = PluginStatus::not_compiled;
  std::string reason;  // why not available; empty when available
  std::string description;
  std::vector<VariantInfo> variants;
  const sparseport_plugin* table = nullptr;  // null unless compiled in and accepted

  // Variant names this plugin offers for op, in its own order.
  std::vector<std::string> variants_of(sparseport_op op) const;
  // The vendor baseline for op, or "" when there is none. A plugin may flag several vendor
  // variants of an op: specialised ones that apply to fewer inputs first (cuda's
  // spmm.cusparse_spmv, F == 1), the general one last. This names the general one; the scheduler's
  // reference for an input is the first vendor variant that applies to it.
  std::string vendor_variant(sparseport_op op) const;
  // Devices this backend can run on here ("token:0" .. "token:N-1"): the plugin's own count for a
  // device backend, 1 for a host backend, 0 when not available. Throws as the plugin's query does.
  int device_count() const;
};

// Every backend this library knows of, compiled or not, in priority order.
const std::vector<PluginInfo>& plugins();
// One plugin by token; throws InvalidArgument for an unknown token.
const PluginInfo& plugin(std::string_view token);

// Name of an op as in DESIGN.md ("spmm", "csr_slice_rows_dense", ...) and back.
const char* op_name(sparseport_op op);
sparseport_op op_from_name(std::string_view name);  // throws InvalidArgument

class Context;

// How often the front end checks index contents (rowptr, columns, index arrays; O(nnz)).
//   once    host memory: every call; device memory: once per operand (address, shape, types) and
//           context, and whenever a plan is built. A later call with the same device arrays
//           trusts that their contents did not change (use `always` if they do).
//   always  every call, in either memory.
//   off     never (shapes, pointers and type tags are still checked): bad indices are undefined.
// from_env reads SPARSEPORT_VALIDATE=once|always|off (default once).
enum class ValidateMode { from_env, once, always, off };
const char* name(ValidateMode m);

// Memory owned by a context's backend (device memory on a GPU backend). Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  friend class Context;
  void release_now() noexcept;
  std::shared_ptr<void> owner_;  // keeps the backend state alive while the buffer lives
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  const sparseport_plugin* table_ = nullptr;
  void* state_ = nullptr;
};

// A CSR matrix whose arrays live in a context's memory space (results of structural ops).
struct CsrMatrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  IndexType index_type = IndexType::i32;
  ValueType value_type = ValueType::f32;
  bool pattern = false;
  Buffer rowptr, colind, values;

  CsrView view() const {
    return {rows, cols, nnz, rowptr.data(), colind.data(), pattern ? nullptr : values.data(), index_type, value_type};
  }
};

// Threads and processes (README, "Threads and processes"): a Context may be used by several
// threads at once, and by the process that made it only (a forked child makes its own). A plan is
// used by one thread at a time. The process may exit at any point between ops, with contexts alive.
class Context {
 public:
  // backend: "reference", "openmp", "kokkos", "cuda" or "cuda:N". Empty: the SPARSEPORT_BACKEND
  // environment variable, else the configure-time default (SPARSEPORT_DEFAULT_BACKEND).
  // Throws NotCompiled for a backend not built in, InvalidArgument for an unknown name or device.
  static Context create(std::string_view backend = {});

  const std::string& backend() const;  // as resolved, e.g. "cuda:0" or "reference"
  const PluginInfo& plugin() const;
  int device() const;
  bool device_memory() const;  // true when op pointers must be device pointers

  // Threads for CPU backends; 0 (the default) means the backend's own default (OMP_NUM_THREADS).
  // Decisions are cached per thread count: a new count's device signature is made here (tens of
  // microseconds on a small VM), not in the first op's decision.
  void set_threads(int threads);
  int threads() const;

  // Index checks (see ValidateMode); the default comes from SPARSEPORT_VALIDATE. Throws
  // InvalidArgument for from_env after an invalid SPARSEPORT_VALIDATE value.
  void set_validate(ValidateMode mode);
  ValidateMode validate() const;  // as resolved: once, always or off

  // Deterministic mode: every scheduled op runs only variants that give bitwise-identical results
  // run to run and for any launch configuration or thread count on the same device. The default
  // is SPARSEPORT_DETERMINISTIC=1 (on) or unset/0 (off).
  void set_deterministic(bool on);
  bool deterministic() const;

  // TF32 consent: variants that round float32 inputs to TF32 (10 mantissa bits; VariantInfo::tf32)
  // may run, as torch.backends.cuda.matmul.allow_tf32 allows for matmuls. Off by default: the
  // default is SPARSEPORT_ALLOW_TF32=1 (on) or unset/0 (off); another value makes create() throw
  // InvalidArgument. An op's allow_tf32 option (SpmmOptions) overrides it for one call. Copies of
  // this context share it.
  void set_allow_tf32(bool on);
  bool allow_tf32() const;

  // Memory in this context's space. Throws OutOfMemory (requested_bytes() == bytes; on cuda the
  // message also gives the device's free and total memory) when it cannot be had; the context
  // stays usable.
  Buffer allocate(size_t bytes) const;
  // Copies between host memory and this context's memory space (plain memcpy on host backends).
  void copy_to_backend(void* dst, const void* src, size_t bytes) const;
  void copy_to_host(void* dst, const void* src, size_t bytes) const;
  // On a device (the cuda plugin; the kokkos plugin on a GPU) an op may return before its kernels
  // finish, queued in order on the context's stream; copy_to_host waits for them, and so does this,
  // for every op queued so far (before the host reads device memory by other means, or times it).
  // Host backends finish each op before it returns.
  void synchronize() const;

  // Bring a backend CSR result to the host, converting its types.
  template <class I, class V>
  HostCsr<I, V> to_host(const CsrMatrix& m) const;

  // Work on a caller's stream and memory: a PyTorch, Kokkos or solver code that owns the device's
  // queues and a caching allocator lends them, so that our work is ordered with its own without
  // synchronising, and our scratch comes from its pool. stream: a cudaStream_t on cuda; every op,
  // copy and scratch allocation of this context (and of its copies, which share it) is ordered on
  // it from then on; null returns to the context's own stream. The caller keeps the stream alive
  // while the context uses it. Host backends take only null (they have no queue): Unsupported.
  void set_stream(void* stream);
  void* stream() const;  // as set; null: the backend's own
  // Scratch (temporary) memory from the caller: alloc(user, bytes, stream) returns null when it
  // cannot (OutOfMemory follows); release(user, ptr, bytes, stream) takes back a block, ordered on
  // the stream, before the op that used it returns. All null: the backend's own pool. Results
  // (Buffer, CsrMatrix) still come from allocate().
  struct ScratchAllocator {
    void* (*alloc)(void* user, size_t bytes, void* stream) = nullptr;
    void (*release)(void* user, void* ptr, size_t bytes, void* stream) = nullptr;
    void* user = nullptr;
  };
  void set_scratch_allocator(const ScratchAllocator& allocator);

  sparseport_exec exec() const;  // for the front end and the scheduler

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sparseport
