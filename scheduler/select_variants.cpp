// SPDX-License-Identifier: Apache-2.0
// Which variants apply, the static choice (requested, else default, else the first that applies)
// and the guardrail's vendor; deterministic mode and the lack of TF32 consent narrow all three.
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

// TF32 consent (Context::set_allow_tf32, SpmmOptions::allow_tf32, SPARSEPORT_ALLOW_TF32=1): a
// variant flagged SPARSEPORT_VARIANT_TF32 rounds float32 inputs to 10 mantissa bits, an accuracy the
// caller must ask for (as with torch.backends.cuda.matmul.allow_tf32). Without consent it is not a
// candidate, never the static choice, and refused by name; it is never the guardrail's reference.
bool allows_tf32(const sparseport_exec& exec) { return (exec.flags & SPARSEPORT_EXEC_ALLOW_TF32) != 0; }

bool is_tf32(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return v.tf32;
  return false;
}

bool tf32_in_play(const PluginInfo& plugin, sparseport_op op, const sparseport_exec& exec) {
  if (!allows_tf32(exec)) return false;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.tf32) return true;
  return false;
}

bool may_run(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const sparseport_exec& exec) {
  return (!deterministic(exec) || is_deterministic(plugin, op, variant)) &&
         (allows_tf32(exec) || !is_tf32(plugin, op, variant));
}

bool offers(const PluginInfo& plugin, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.name == variant) return true;
  return false;
}

bool offers_choice(const PluginInfo& plugin, sparseport_op op) {
  int n = 0;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && ++n > 1) return true;
  return false;
}

namespace {

const char* const kDetMode = "deterministic mode (Context::set_deterministic or SPARSEPORT_DETERMINISTIC=1)";

// How a caller gives TF32 consent: the ways that exist for op.
std::string tf32_remedy(sparseport_op op) {
  return std::string("allow TF32 with Context::set_allow_tf32(true)") +
         (op == SPARSEPORT_OP_SPMM ? ", the op's option SpmmOptions::allow_tf32 = true" : "") +
         " or SPARSEPORT_ALLOW_TF32=1";
}

}  // namespace

// select() with exec's mode and consent: a requested variant that is not deterministic in
// deterministic mode, or that rounds to TF32 without consent, is refused with InvalidArgument, and
// only the variants that may run are chosen.
std::string select_in(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                      const std::string& where, const sparseport_exec& exec) {
  const bool det = deterministic(exec);
  const std::vector<std::string> offered = plugin.variants_of(op);
  const auto allowed = [&](const std::string& v) { return may_run(plugin, op, v, exec); };
  const auto deterministic_list = [&] {
    std::string list;
    for (const std::string& v : offered)
      if (is_deterministic(plugin, op, v)) list += (list.empty() ? "" : ", ") + v;
    return list.empty() ? std::string("none") : list;
  };
  if (!requested.empty()) {
    for (const std::string& v : offered) {
      if (v != requested) continue;
      if (det && !is_deterministic(plugin, op, v))
        throw InvalidArgument(where + ": variant '" + v +
                              "' is not deterministic (its results may differ from run to run) and the context is in " +
                              kDetMode + "; the deterministic variants of " + op_name(op) + " on backend '" +
                              plugin.name + "' are: " + deterministic_list());
      if (!allows_tf32(exec) && is_tf32(plugin, op, v))
        throw InvalidArgument(where + ": variant '" + v + "' of " + op_name(op) +
                              " rounds float32 inputs to TF32 (10 mantissa bits) and the caller has not allowed "
                              "TF32; " + tf32_remedy(op));
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
      reasons += "; " + v + ": " +
                 (det && !is_deterministic(plugin, op, v) ? std::string("not deterministic")
                                                          : "rounds to TF32, which the caller has not allowed (" +
                                                                tf32_remedy(op) + ")");
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
  return select_in(plugin, op, args, requested, where, sparseport_exec{nullptr, 0, 0});
}

// Never a TF32 variant: the reference is what a caller gets at float32 accuracy (only if every
// applicable variant rounds to TF32 is the first of them returned, so that a caller who allowed
// TF32 still runs).
std::string vendor_of(const PluginInfo& plugin, sparseport_op op, const std::vector<std::string>& applicable) {
  const auto in = [&](const VariantInfo& v) {
    return !v.tf32 && std::find(applicable.begin(), applicable.end(), v.name) != applicable.end();
  };
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_vendor && in(v)) return v.name;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default && in(v)) return v.name;
  for (const std::string& v : applicable)
    if (!is_tf32(plugin, op, v)) return v;
  return applicable.empty() ? std::string() : applicable.front();
}

// The variants of op that apply to args and may run under exec (may_run: deterministic mode's
// flagged ones only, TF32 ones only with consent).
std::vector<std::string> applicable_variants(const PluginInfo& plugin, sparseport_op op, const void* args,
                                             const sparseport_exec& exec) {
  std::vector<std::string> out;
  for (const std::string& v : plugin.variants_of(op))
    if (may_run(plugin, op, v, exec) && applies(plugin, op, v, args, nullptr)) out.push_back(v);
  return out;
}

}  // namespace sparseport::scheduler
