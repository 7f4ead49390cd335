// SPDX-License-Identifier: Apache-2.0
// Context and Buffer: the front end's handle on one plugin's device state. Creating a context
// starts the scheduler's model parse and reads the device signature; destroying it drops the
// scheduler's one-shot plans on it before the plugin frees its state. Part of the front end (not of
// core) because it calls the scheduler, which stands on the registry in core/registry.cpp.
#include "sparseport/context.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "sparseport/errors.hpp"
#include "scheduler/model.hpp"
#include "scheduler/select.hpp"
#include "scheduler/signature.hpp"
#include "scheduler/values16.hpp"
#include "core/convert.hpp"
#include "core/registry.hpp"
#include "core/validated.hpp"

namespace sparseport {

struct Context::Impl {
  std::string backend;
  const PluginInfo* plugin = nullptr;
  int device = 0;
  int threads = 0;
  ValidateMode validate = ValidateMode::once;
  bool deterministic = false;
  bool allow_tf32 = false;
  void* state = nullptr;
  sparseport_external external{};  // what the caller lent (stream, scratch allocator)

  // Hands external to the plugin; a plugin without the slot takes only "nothing lent".
  void lend(const std::string& what, bool lending) {
    if (plugin->table->set_external == nullptr) {
      if (!lending) return;
      throw Unsupported("sparseport::Context[" + backend + "]: " + what + " was given, but backend '" + plugin->name +
                        "' has no stream or scratch memory to share (only a device backend does)");
    }
    sparseport_status st{};
    if (plugin->table->set_external(state, &external, &st) != 0)
      detail::throw_status(st, "sparseport::Context[" + backend + "]: " + what);
  }

  ~Impl() {
    detail::forget_validated(state, nullptr, 0);
    scheduler::forget_state(state);  // one-shot plans' float32 copies of 16-bit operands
    if (plugin != nullptr && plugin->table->context_destroy != nullptr) plugin->table->context_destroy(state);
  }
};

const char* name(ValidateMode m) {
  switch (m) {
    case ValidateMode::once: return "once";
    case ValidateMode::always: return "always";
    case ValidateMode::off: return "off";
    default: return "from_env";
  }
}

namespace {

ValidateMode validate_from_env() {
  const char* env = std::getenv("SPARSEPORT_VALIDATE");
  const std::string_view v = env != nullptr ? env : "";
  if (v.empty() || v == "once") return ValidateMode::once;
  if (v == "always") return ValidateMode::always;
  if (v == "off") return ValidateMode::off;
  throw InvalidArgument("sparseport: SPARSEPORT_VALIDATE is '" + std::string(v) + "' (want once, always or off)");
}

bool deterministic_from_env() {
  const char* env = std::getenv("SPARSEPORT_DETERMINISTIC");
  const std::string_view v = env != nullptr ? env : "";
  if (v.empty() || v == "0") return false;
  if (v == "1") return true;
  throw InvalidArgument("sparseport: SPARSEPORT_DETERMINISTIC is '" + std::string(v) + "' (want 0 or 1)");
}

bool allow_tf32_from_env() {
  const char* env = std::getenv("SPARSEPORT_ALLOW_TF32");
  const std::string_view v = env != nullptr ? env : "";
  if (v.empty() || v == "0") return false;
  if (v == "1") return true;
  throw InvalidArgument("sparseport: SPARSEPORT_ALLOW_TF32 is '" + std::string(v) + "' (want 0 or 1)");
}

}  // namespace

Context Context::create(std::string_view backend) {
  std::string spec(backend);
  if (spec.empty()) {
    const char* env = std::getenv("SPARSEPORT_BACKEND");
    spec = (env != nullptr && *env != '\0') ? env : SPARSEPORT_DEFAULT_BACKEND;
  }
  std::string token = spec;
  int device = 0;
  if (const size_t colon = spec.find(':'); colon != std::string::npos) {
    token = spec.substr(0, colon);
    const char* first = spec.data() + colon + 1;
    const char* last = spec.data() + spec.size();
    auto [ptr, ec] = std::from_chars(first, last, device);
    if (ec != std::errc() || ptr != last || device < 0 || first == last)
      throw InvalidArgument("sparseport: backend '" + spec + "' has a bad device number (want NAME or NAME:N)");
  }
  const PluginInfo& p = sparseport::plugin(token);
  if (p.status == PluginStatus::not_compiled) throw NotCompiled("sparseport: backend '" + token + "' is " + p.reason);
  if (p.status == PluginStatus::broken) throw PluginError("sparseport: backend '" + token + "' was refused: " + p.reason);
  if (p.status == PluginStatus::no_device)
    throw Unsupported("sparseport: backend '" + token + "' cannot run here: " + p.reason);
  if (p.table->device_count != nullptr) {
    const int n = p.device_count();
    if (device >= n)
      throw InvalidArgument("sparseport: backend '" + spec + "' names device " + std::to_string(device) +
                            " but only " + std::to_string(n) + " exist");
  } else if (device != 0) {
    throw InvalidArgument("sparseport: backend '" + token + "' has one device (0), not " + std::to_string(device));
  }

  // The scheduler's cost models for this backend and kind of device (device memory: a GPU's) parse
  // on a thread of their own while the first context is created (once per process), so that its
  // first decision does not wait for them; other models parse when first needed.
  static std::once_flag models;
  std::call_once(models, [&p] { scheduler::preload_models(p.name, p.table->memory_space == SPARSEPORT_MEMORY_DEVICE); });
  auto impl = std::make_shared<Impl>();
  impl->validate = validate_from_env();
  impl->deterministic = deterministic_from_env();
  impl->allow_tf32 = allow_tf32_from_env();
  impl->plugin = &p;
  impl->device = device;
  impl->backend = p.table->device_count != nullptr ? token + ":" + std::to_string(device) : token;
  if (p.table->context_create != nullptr) {
    sparseport_status st{};
    if (p.table->context_create(device, &impl->state, &st) != SPARSEPORT_OK) {
      impl->plugin = nullptr;  // nothing to destroy
      detail::throw_status(st, "sparseport: creating a context on " + spec);
    }
  }
  // The device signature the scheduler keys its decisions by (device properties, library
  // versions, hwloc's topology on a CPU: up to a millisecond), now rather than inside the first
  // op's cache lookup.
  try {
    (void)scheduler::device_signature(p, {impl->state, 0, 0});
    // And what the first decision reads and runs (the cache file, the summary's code): a cache
    // hit in a new process then costs the lookup, not the first touch of everything it uses.
    scheduler::warm_up(p, {impl->state, 0, 0});
  } catch (const Error&) {
    // Reported by the first op that needs it.
  }
  Context ctx;
  ctx.impl_ = std::move(impl);
  return ctx;
}

const std::string& Context::backend() const { return impl_->backend; }
const PluginInfo& Context::plugin() const { return *impl_->plugin; }
int Context::device() const { return impl_->device; }
bool Context::device_memory() const { return impl_->plugin->table->memory_space == SPARSEPORT_MEMORY_DEVICE; }

void Context::set_threads(int threads) {
  if (threads < 0) throw InvalidArgument("sparseport: thread count " + std::to_string(threads) + " is negative");
  impl_->threads = threads;
  // The scheduler keys decisions by a signature that includes the thread count: made here, as
  // create() makes the default count's, not inside the first op's decision (a new process's cache
  // hit on openmp with --threads 2 spent 41-46 of its 77 us there; 2-3 us with the default count).
  try {
    if (threads > 0) (void)scheduler::device_signature(*impl_->plugin, exec());
  } catch (const Error&) {
    // Reported by the first op that needs it.
  }
}
int Context::threads() const { return impl_->threads; }

void Context::set_validate(ValidateMode mode) {
  impl_->validate = mode == ValidateMode::from_env ? validate_from_env() : mode;
}
ValidateMode Context::validate() const { return impl_->validate; }

void Context::set_deterministic(bool on) { impl_->deterministic = on; }
void Context::set_allow_tf32(bool on) { impl_->allow_tf32 = on; }

void Context::set_stream(void* stream) {
  impl_->external.stream = stream;
  impl_->lend("set_stream", stream != nullptr || impl_->external.alloc != nullptr);
}
void* Context::stream() const { return impl_->external.stream; }

void Context::set_scratch_allocator(const ScratchAllocator& a) {
  if ((a.alloc == nullptr) != (a.release == nullptr))
    throw InvalidArgument("sparseport::Context[" + impl_->backend +
                          "]: set_scratch_allocator needs both alloc and release, or neither");
  impl_->external.alloc = a.alloc;
  impl_->external.release = a.release;
  impl_->external.user = a.user;
  impl_->lend("set_scratch_allocator", a.alloc != nullptr || impl_->external.stream != nullptr);
}
bool Context::deterministic() const { return impl_->deterministic; }
bool Context::allow_tf32() const { return impl_->allow_tf32; }

sparseport_exec Context::exec() const {
  return {impl_->state, impl_->threads,
          (impl_->deterministic ? SPARSEPORT_EXEC_DETERMINISTIC : 0) | (impl_->allow_tf32 ? SPARSEPORT_EXEC_ALLOW_TF32 : 0)};
}

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release_now();
    owner_ = std::move(o.owner_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    table_ = o.table_;
    state_ = o.state_;
  }
  return *this;
}
Buffer::~Buffer() { release_now(); }

// Index arrays checked in this memory must be checked again once it is freed (and reused).
void Buffer::release_now() noexcept {
  if (ptr_ == nullptr) return;
  detail::forget_validated(state_, ptr_, bytes_);
  table_->release(state_, ptr_);
}

Buffer Context::allocate(size_t bytes) const {
  Buffer b;
  b.owner_ = impl_;
  b.table_ = impl_->plugin->table;
  b.state_ = impl_->state;
  b.bytes_ = bytes;
  if (bytes == 0) return b;
  sparseport_status st{};
  if (b.table_->alloc(impl_->state, bytes, &b.ptr_, &st) != SPARSEPORT_OK) {
    b.ptr_ = nullptr;  // nothing to release; the context stays usable
    // An out-of-memory status becomes OutOfMemory carrying `bytes`.
    detail::throw_status(st, "sparseport: allocating " + std::to_string(bytes) + " bytes (" + detail::human_bytes(bytes) +
                                 ") on " + impl_->backend, bytes);
  }
  return b;
}

void Context::copy_to_backend(void* dst, const void* src, size_t bytes) const {
  if (bytes == 0) return;
  detail::forget_validated(impl_->state, dst, bytes);
  sparseport_status st{};
  if (impl_->plugin->table->copy(impl_->state, dst, src, bytes, SPARSEPORT_COPY_HOST_TO_DEVICE, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport: copying " + std::to_string(bytes) + " bytes to " + impl_->backend);
}

void Context::copy_to_host(void* dst, const void* src, size_t bytes) const {
  if (bytes == 0) return;
  sparseport_status st{};
  if (impl_->plugin->table->copy(impl_->state, dst, src, bytes, SPARSEPORT_COPY_DEVICE_TO_HOST, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport: copying " + std::to_string(bytes) + " bytes from " + impl_->backend);
}

void Context::synchronize() const {
  if (impl_->plugin->table->synchronize == nullptr) return;
  sparseport_status st{};
  if (impl_->plugin->table->synchronize(impl_->state, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport: synchronising " + impl_->backend);
}

namespace {
template <class To, class From>
void append_converted(std::vector<To>& out, const std::vector<From>& in) {
  out.assign(in.begin(), in.end());
}

template <class T>
std::vector<T> fetch(const Context& ctx, const Buffer& b, int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  ctx.copy_to_host(v.data(), b.data(), static_cast<size_t>(n) * sizeof(T));
  return v;
}

template <class To, class A, class B>
std::vector<To> fetch_as(const Context& ctx, const Buffer& b, int64_t n, bool first_type) {
  std::vector<To> out;
  if (first_type)
    append_converted(out, fetch<A>(ctx, b, n));
  else
    append_converted(out, fetch<B>(ctx, b, n));
  return out;
}
}  // namespace

template <class I, class V>
HostCsr<I, V> Context::to_host(const CsrMatrix& m) const {
  HostCsr<I, V> h;
  h.rows = m.rows;
  h.cols = m.cols;
  const bool i32 = m.index_type == IndexType::i32;
  h.rowptr = fetch_as<I, int32_t, int64_t>(*this, m.rowptr, m.rows + 1, i32);
  h.colind = fetch_as<I, int32_t, int64_t>(*this, m.colind, m.nnz, i32);
  if (!m.pattern && m.nnz > 0) {
    // Raw bytes in the matrix's type, converted to V on the host (16-bit types included).
    std::vector<char> raw(static_cast<size_t>(m.nnz * size_of(m.value_type)));
    copy_to_host(raw.data(), m.values.data(), raw.size());
    h.values.resize(static_cast<size_t>(m.nnz));
    detail::convert_host({m.nnz, 1, 1, raw.data(), static_cast<int32_t>(m.value_type)},
                         {m.nnz, 1, 1, h.values.data(), static_cast<int32_t>(value_type_of<V>())});
  }
  return h;
}

template HostCsr<int32_t, float> Context::to_host(const CsrMatrix&) const;
template HostCsr<int32_t, double> Context::to_host(const CsrMatrix&) const;
template HostCsr<int64_t, float> Context::to_host(const CsrMatrix&) const;
template HostCsr<int64_t, double> Context::to_host(const CsrMatrix&) const;
template HostCsr<int32_t, half> Context::to_host(const CsrMatrix&) const;
template HostCsr<int32_t, bfloat16> Context::to_host(const CsrMatrix&) const;
template HostCsr<int64_t, half> Context::to_host(const CsrMatrix&) const;
template HostCsr<int64_t, bfloat16> Context::to_host(const CsrMatrix&) const;

}  // namespace sparseport
