// SPDX-License-Identifier: Apache-2.0
// detail::Space: the state's arrays and workspace in the memory of the context a call runs on.
#include <utility>

#include "src/dist/internal.hpp"

namespace sparseport::dist::detail {

void Space::use(const Context& ctx) {
  if (bound_to(ctx)) {
    ctx_ = ctx;  // the same backend and device: the copies stay; the caller's settings are its own
    return;
  }
  transport.reset();
  reverse_transport.reset();
  copies_.clear();
  for (Buffer& b : work_) b = Buffer();
  ctx_ = ctx;
  backend_ = ctx.backend();
  device_ = ctx.device_memory();
}

const void* Space::place(const void* host, size_t bytes) {
  if (!device_ || host == nullptr || bytes == 0) return host;
  for (const auto& [h, b] : copies_)
    if (h == host && b.bytes() == bytes) return b.data();
  Buffer b = ctx_->allocate(bytes);
  ctx_->copy_to_backend(b.data(), host, bytes);
  copies_.emplace_back(host, std::move(b));
  return copies_.back().second.data();
}

void* Space::workspace(Slot slot, size_t bytes) {
  Buffer& b = work_[slot];
  if (b.bytes() < bytes || b.data() == nullptr) b = ctx_->allocate(bytes == 0 ? 1 : bytes);
  return b.data();
}

}  // namespace sparseport::dist::detail
