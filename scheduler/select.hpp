// SPDX-License-Identifier: Apache-2.0
// Variant selection. Today's policy is the static one (an explicit request, else the plugin's
// default variant, else its first that applies); the input-aware scheduler of DESIGN.md §4
// (estimate, probe, guardrail, cache) replaces the body of select() without changing its callers.
#pragma once

#include <string>
#include <string_view>

#include "sparseport/context.hpp"

namespace sparseport::scheduler {

// The variant of `plugin` to run op on args (the op's ABI argument struct).
// requested: a variant name, or empty to let the scheduler choose.
// Throws Unsupported (message starts with `where`) when requested is not offered for op or does
// not apply to args, or when no variant applies.
std::string select(const PluginInfo& plugin, sparseport_op op, const void* args, std::string_view requested,
                   const std::string& where);

// Whether variant applies to args; the reason is written to *why when it does not.
bool applies(const PluginInfo& plugin, sparseport_op op, const std::string& variant, const void* args,
             std::string* why);

}  // namespace sparseport::scheduler
