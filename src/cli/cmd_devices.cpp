// SPDX-License-Identifier: Apache-2.0
// `sparseport devices`: every backend this library knows, compiled or not, with its devices and the
// variants it offers per op (the names --variant accepts).
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "json.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::cli {
namespace {

// The plugin's own description of its devices, one line each; a failure is reported in place of
// the list rather than aborting the listing of the other backends.
std::vector<std::string> device_lines(const PluginInfo& p, std::string* error) {
  std::vector<std::string> lines;
  if (p.table == nullptr || p.table->describe_devices == nullptr) return lines;
  std::string buf(8192, '\0');
  sparseport_status st{};
  if (p.table->describe_devices(buf.data(), buf.size(), &st) != SPARSEPORT_OK) {
    *error = st.message;
    return lines;
  }
  buf.resize(buf.find('\0'));
  size_t start = 0;
  while (start < buf.size()) {
    size_t end = buf.find('\n', start);
    if (end == std::string::npos) end = buf.size();
    if (end > start) lines.push_back(buf.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// "not compiled (SPARSEPORT_ENABLE_CUDA=OFF)" already starts with the status; do not repeat it.
std::string status_text(const PluginInfo& p) {
  const std::string s = name(p.status);
  if (p.reason.empty()) return s;
  if (p.reason.compare(0, s.size(), s) == 0) return p.reason;
  return s + " (" + p.reason + ")";
}

void print_text(const PluginInfo& p) {
  std::printf("%s: %s\n", p.name.c_str(), status_text(p).c_str());
  if (p.table == nullptr) return;
  if (!p.description.empty()) std::printf("  %s\n", p.description.c_str());
  std::printf("  memory: %s\n", p.table->memory_space == SPARSEPORT_MEMORY_DEVICE ? "device" : "host");
  std::string error;
  const std::vector<std::string> devices = device_lines(p, &error);
  std::printf("  devices:\n");
  if (!error.empty()) std::printf("    (cannot describe them: %s)\n", error.c_str());
  for (const std::string& d : devices) std::printf("    %s\n", d.c_str());
  if (devices.empty() && error.empty()) std::printf("    (none described)\n");
  // The scheduler's device signature (what decisions are cached under), for the first device.
  try {
    const std::string sig = device_signature(Context::create(p.name));
    std::printf("  signature:\n");
    size_t start = 0;
    while (start < sig.size()) {
      const size_t end = sig.find('\n', start);
      std::printf("    %s\n", sig.substr(start, end - start).c_str());
      if (end == std::string::npos) break;
      start = end + 1;
    }
  } catch (const Error& e) {
    std::printf("  signature: (unavailable: %s)\n", e.what());
  }
  std::printf("  variants:\n");
  // Tags: default, vendor, deterministic (what deterministic mode may run, SPARSEPORT_DETERMINISTIC=1),
  // tf32 (rounds float32 inputs to TF32: runs only where the caller allows it, SPARSEPORT_ALLOW_TF32=1).
  const auto tags_of = [](const VariantInfo& v) {
    std::string tags;
    for (const auto& [on, tag] : {std::pair{v.is_default, "default"}, std::pair{v.is_vendor, "vendor"},
                                  std::pair{v.is_deterministic, "deterministic"}, std::pair{v.tf32, "tf32"}})
      if (on) tags += (tags.empty() ? "" : ", ") + std::string(tag);
    return tags.empty() ? tags : "[" + tags + "]";
  };
  size_t width = 0, tag_width = 9;
  for (const VariantInfo& v : p.variants) {
    width = std::max(width, v.name.size());
    tag_width = std::max(tag_width, tags_of(v).size());
  }
  for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op) {
    bool any = false;
    for (const VariantInfo& v : p.variants) {
      if (v.op != op) continue;
      if (!any) std::printf("    %s\n", op_name(static_cast<sparseport_op>(op)));
      any = true;
      std::printf("      %-*s  %-*s  %s\n", static_cast<int>(width), v.name.c_str(), static_cast<int>(tag_width),
                  tags_of(v).c_str(), v.doc.c_str());
    }
    if (!any) std::printf("    %s: (not provided)\n", op_name(static_cast<sparseport_op>(op)));
  }
}

void print_json(const PluginInfo& p) {
  std::string error;
  const std::vector<std::string> devices = device_lines(p, &error);
  std::vector<std::string> dev_items, var_items;
  for (const std::string& d : devices) dev_items.push_back(json_string(d));
  for (const VariantInfo& v : p.variants) {
    JsonObject o;
    o.add("op", op_name(v.op)).add("name", v.name).add("default", v.is_default).add("vendor", v.is_vendor);
    o.add("deterministic", v.is_deterministic).add("tf32", v.tf32).add("doc", v.doc);
    var_items.push_back(o.str());
  }
  JsonObject o;
  o.add("backend", p.name).add("status", name(p.status)).add("reason", p.reason).add("description", p.description);
  if (p.table != nullptr)
    o.add("memory", p.table->memory_space == SPARSEPORT_MEMORY_DEVICE ? "device" : "host");
  else
    o.null("memory");
  o.raw("devices", json_array(dev_items));
  if (p.table != nullptr && p.status == PluginStatus::available) {
    try {
      o.add("signature", device_signature(Context::create(p.name)));
    } catch (const Error& e) {
      o.add("signature_error", e.what());
    }
  }
  if (!error.empty()) o.add("devices_error", error);
  o.raw("variants", json_array(var_items));
  std::printf("%s\n", o.str().c_str());
}

}  // namespace

int cmd_devices(const std::vector<std::string>& argv) {
  Args args("sparseport devices", "[--json]",
            "Lists every backend this library knows, in priority order, with its status (available,\n"
            "no device, not compiled, broken) and why, its devices, and its variants per op with their\n"
            "one-line docs. Variant names are what 'sparseport run --variant' accepts.");
  args.flag("--json", "one JSON object per backend");
  if (!args.parse(argv)) return 0;
  const bool json = args.has("--json");
  for (const PluginInfo& p : plugins()) {
    if (json)
      print_json(p);
    else
      print_text(p);
  }
  if (!json) {
    // What a program that names no backend gets (SPARSEPORT_BACKEND, else the build's default).
    try {
      std::printf("default backend: %s\n", Context::create().backend().c_str());
    } catch (const Error& e) {
      std::printf("default backend: unusable (%s)\n", e.what());
    }
  }
  return 0;
}

}  // namespace sparseport::cli
