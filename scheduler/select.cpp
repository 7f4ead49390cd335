// SPDX-License-Identifier: Apache-2.0
#include "scheduler/select.hpp"

#include "sparseport/errors.hpp"

namespace sparseport::scheduler {

bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why) {
  if (plugin.table->applies == nullptr) return true;
  sparseport_status st{};
  if (plugin.table->applies(op, variant.c_str(), args, &st) != 0) return true;
  if (why != nullptr) *why = st.message;
  return false;
}

std::string select(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                   const std::string& where) {
  const std::vector<std::string> offered = plugin.variants_of(op);
  if (!requested.empty()) {
    for (const std::string& v : offered) {
      if (v != requested) continue;
      std::string why;
      if (!applies(plugin, op, v, args, &why))
        throw Unsupported(where + ": variant '" + v + "' does not apply to this input: " + why);
      return v;
    }
    std::string list;
    for (const std::string& v : offered) list += (list.empty() ? "" : ", ") + v;
    throw Unsupported(where + ": backend '" + plugin.name + "' has no variant '" + std::string(requested) +
                      "' (it offers: " + (list.empty() ? "none" : list) + ")");
  }
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default && applies(plugin, op, v.name, args, nullptr)) return v.name;
  std::string reasons;
  for (const std::string& v : offered) {
    std::string why;
    if (applies(plugin, op, v, args, &why)) return v;
    reasons += "; " + v + ": " + why;
  }
  throw Unsupported(where + ": no variant of backend '" + plugin.name + "' applies to this input" + reasons);
}

}  // namespace sparseport::scheduler
