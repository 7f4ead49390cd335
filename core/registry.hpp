// SPDX-License-Identifier: Apache-2.0
// Internal: the list of built-in plugins, written by CMake into generated/plugin_list.cpp.
#pragma once

#include <cstddef>
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
// A backend error whose native name says memory ran out (is_out_of_memory) becomes OutOfMemory,
// carrying requested_bytes when the caller knows them (0: unknown).
[[noreturn]] void throw_status(const sparseport_status& st, const std::string& where, size_t requested_bytes = 0);
// Whether st is a backend error for memory that could not be allocated: native name ENOMEM,
// std::bad_alloc, cudaErrorMemoryAllocation, CUSPARSE_STATUS_ALLOC_FAILED or Kokkos::kokkos_malloc.
bool is_out_of_memory(const sparseport_status& st);
// "1.5 GiB", "12.0 MiB", "512 bytes": sizes in messages, next to the exact byte count.
std::string human_bytes(long double bytes);
// Bytes of memory on this machine; 2^47 (the x86-64 user address space) when the system does not say.
long double host_memory_bytes();

}  // namespace sparseport::detail
