// SPDX-License-Identifier: Apache-2.0
// Which variants apply, the static choice (requested, else default, else the first that applies)
// and the guardrail's vendor; deterministic mode narrows all three.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/select.hpp"
#include "scheduler/select_internal.hpp"
#include "scheduler/values16.hpp"
#include "sparseport/errors.hpp"

namespace sparseport::scheduler {

using detail::PlanState;

bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why) {
  // 16-bit values reach only the variants that take them; the others serve them through the
  // float32 path (values16.hpp), never by reading 16-bit arrays as float32 ones.
  if (is_values16(args_value_type(op, args))) {
    bool takes16 = false;
    for (const VariantInfo& v : plugin.variants)
      if (v.op == op && v.name == variant) takes16 = v.values16;
    if (!takes16) {
      if (why != nullptr) *why = "takes 16-bit values only through the float32 conversion";
      return false;
    }
  }
  if (plugin.table->applies == nullptr) return true;
  sparseport_status st{};
  if (plugin.table->applies(op, variant.c_str(), args, &st) != 0) return true;
  if (why != nullptr) *why = st.message;
  return false;
}

// Deterministic mode (Context::set_deterministic, SPARSEPORT_DETERMINISTIC=1): only variants
// flagged SPARSEPORT_VARIANT_DETERMINISTIC are candidates, the guardrail's reference included, and
// the choice itself must not depend on timings (decide_by_probe), or two runs could pick variants
// that round differently.
bool deterministic(const sparseport_exec& exec) { return (exec.flags & SPARSEPORT_EXEC_DETERMINISTIC) != 0; }

bool is_deterministic(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return v.is_deterministic;
  return false;
}

bool offers(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return true;
  return false;
}

namespace {

const char* const kDetMode = "deterministic mode (Context::set_deterministic or SPARSEPORT_DETERMINISTIC=1)";

}  // namespace

// select() with deterministic mode: a requested variant that is not deterministic is refused with
// InvalidArgument, and only deterministic ones are chosen.
std::string select_in(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                      const std::string& where, bool det) {
  const std::vector<std::string> offered = plugin.variants_of(op);
  const auto allowed = [&](const std::string& v) { return !det || is_deterministic(plugin, op, v); };
  const auto deterministic_list = [&] {
    std::string list;
    for (const std::string& v : offered)
      if (is_deterministic(plugin, op, v)) list += (list.empty() ? "" : ", ") + v;
    return list.empty() ? std::string("none") : list;
  };
  if (!requested.empty()) {
    for (const std::string& v : offered) {
      if (v != requested) continue;
      if (!allowed(v))
        throw InvalidArgument(where + ": variant '" + v +
                              "' is not deterministic (its results may differ from run to run) and the context is in " +
                              kDetMode + "; the deterministic variants of " + op_name(op) + " on backend '" +
                              plugin.name + "' are: " + deterministic_list());
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
    if (v.op == op && v.is_default && allowed(v.name) && applies(plugin, op, v.name, args, nullptr)) return v.name;
  std::string reasons;
  for (const std::string& v : offered) {
    if (!allowed(v)) {
      reasons += "; " + v + ": not deterministic";
      continue;
    }
    std::string why;
    if (applies(plugin, op, v, args, &why)) return v;
    reasons += "; " + v + ": " + why;
  }
  if (det)
    throw Unsupported(where + ": no deterministic variant of " + op_name(op) + " on backend '" + plugin.name +
                      "' applies to this input, and the context is in " + kDetMode + reasons);
  throw Unsupported(where + ": no variant of backend '" + plugin.name + "' applies to this input" + reasons);
}

std::string select(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                   const std::string& where) {
  return select_in(plugin, op, args, requested, where, false);
}

std::string vendor_of(const PluginInfo& plugin, sparseport_op op, const std::vector<std::string>& applicable) {
  const auto in = [&](const std::string& v) { return std::find(applicable.begin(), applicable.end(), v) != applicable.end(); };
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_vendor && in(v.name)) return v.name;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default && in(v.name)) return v.name;
  return applicable.empty() ? std::string() : applicable.front();
}

// The variants of op that apply to args; in deterministic mode only the deterministic ones.
std::vector<std::string> applicable_variants(const PluginInfo& plugin, sparseport_op op, const void* args, bool det) {
  std::vector<std::string> out;
  for (const std::string& v : plugin.variants_of(op))
    if ((!det || is_deterministic(plugin, op, v)) && applies(plugin, op, v, args, nullptr)) out.push_back(v);
  return out;
}

}  // namespace sparseport::scheduler
