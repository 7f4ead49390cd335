// SPDX-License-Identifier: Apache-2.0
// Internal: the list of built-in plugins, written by CMake into generated/plugin_list.cpp.
#pragma once

#include <string>
#include <vector>

#include "sparseport/plugin_abi.h"

namespace sparseport::detail {

struct BuiltinPlugin {
  const char* name;
  sparseport_plugin_entry entry;  // null when not compiled
  const char* reason;             // why not compiled
};

const std::vector<BuiltinPlugin>& builtin_plugins();

// Throws the error class matching st->code, prefixed with what was being done ("sparseport::spmm[openmp]").
[[noreturn]] void throw_status(const sparseport_status& st, const std::string& where);

}  // namespace sparseport::detail
