// SPDX-License-Identifier: Apache-2.0
// The plugin registry, at the ground of the library: the built-in plugins' tables, accepted by ABI
// version and widened to this build's table size, and what each offers. Context (src/ops/context.cpp)
// and the scheduler stand on it.
#include "sparseport/context.hpp"

#include <cstring>
#include <deque>
#include <utility>

#include "sparseport/errors.hpp"
#include "core/registry.hpp"

namespace sparseport {

std::vector<std::string> PluginInfo::variants_of(sparseport_op op) const {
  std::vector<std::string> out;
  for (const VariantInfo& v : variants)
    if (v.op == op) out.push_back(v.name);
  return out;
}

std::string PluginInfo::vendor_variant(sparseport_op op) const {
  std::string last;  // specialised vendor variants are listed before the general one
  for (const VariantInfo& v : variants)
    if (v.op == op && v.is_vendor) last = v.name;
  return last;
}

int PluginInfo::device_count() const {
  if (status != PluginStatus::available || table == nullptr) return 0;
  if (table->device_count == nullptr) return 1;
  int32_t n = 0;
  sparseport_status st{};
  if (table->device_count(&n, &st) != SPARSEPORT_OK) detail::throw_status(st, "sparseport: " + name);
  return n;
}

namespace {

// Copies of the accepted tables, widened to this build's table size: slots a plugin built against
// an older (smaller) table does not have read as null. Never destroyed, like the list below: an
// object destroyed at exit after them (a plan in the scheduler's memo, a caller's static Context)
// still calls through them (issue 34: the exit crash was such a call through a freed table).
std::deque<sparseport_plugin>& table_copies() {
  static auto* copies = new std::deque<sparseport_plugin>;
  return *copies;
}

PluginInfo load(const detail::BuiltinPlugin& b) {
  PluginInfo info;
  info.name = b.name;
  if (b.entry == nullptr) {
    info.status = PluginStatus::not_compiled;
    info.reason = b.reason;
    return info;
  }
  const sparseport_plugin* t = b.entry();
  if (t == nullptr || (t->abi_version >> 16) != SPARSEPORT_ABI_VERSION_MAJOR) {
    info.status = PluginStatus::broken;
    info.reason = "plugin ABI " + std::to_string(t ? t->abi_version >> 16 : 0) + " but this library speaks ABI " +
                  std::to_string(SPARSEPORT_ABI_VERSION_MAJOR);
    return info;
  }
  sparseport_plugin& copy = table_copies().emplace_back();
  std::memset(&copy, 0, sizeof copy);
  std::memcpy(&copy, t, std::min<size_t>(t->table_size, sizeof copy));
  info.table = &copy;
  info.description = copy.description ? copy.description : "";
  for (int32_t i = 0; i < copy.n_variants; ++i) {
    const sparseport_variant& v = copy.variants[i];
    info.variants.push_back({static_cast<sparseport_op>(v.op), v.name, (v.flags & SPARSEPORT_VARIANT_DEFAULT) != 0,
                             (v.flags & SPARSEPORT_VARIANT_VENDOR) != 0, v.doc ? v.doc : "",
                             (v.flags & SPARSEPORT_VARIANT_DETERMINISTIC) != 0,
                             (v.flags & SPARSEPORT_VARIANT_RECORDS_ARG) != 0,
                             (v.flags & SPARSEPORT_VARIANT_VALUES16) != 0,
                             (v.flags & SPARSEPORT_VARIANT_TF32) != 0});
  }
  info.status = PluginStatus::available;
  if (copy.device_count != nullptr) {
    int32_t n = 0;
    sparseport_status st{};
    if (copy.device_count(&n, &st) != SPARSEPORT_OK) {
      info.status = PluginStatus::no_device;
      info.reason = st.message;
    } else if (n <= 0) {
      info.status = PluginStatus::no_device;
      info.reason = "no device of this kind on this machine";
    }
  }
  return info;
}

}  // namespace

const std::vector<PluginInfo>& plugins() {
  // Never destroyed (see table_copies()).
  static const auto* list = [] {
    auto* v = new std::vector<PluginInfo>;
    for (const detail::BuiltinPlugin& b : detail::builtin_plugins()) v->push_back(load(b));
    return v;
  }();
  return *list;
}

const PluginInfo& plugin(std::string_view token) {
  std::string known;
  for (const PluginInfo& p : plugins()) {
    if (p.name == token) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InvalidArgument("sparseport: unknown backend '" + std::string(token) + "' (known: " + known + ")");
}

}  // namespace sparseport
