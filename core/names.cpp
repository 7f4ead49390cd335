// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include "sparseport/context.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/version.hpp"
#include "core/registry.hpp"

namespace sparseport {

const char* version() { return SPARSEPORT_VERSION_STRING; }

const char* name(ValueType t) {
  switch (t) {
    case ValueType::f64: return "f64";
    case ValueType::f16: return "f16";
    case ValueType::bf16: return "bf16";
    default: return "f32";
  }
}
const char* name(IndexType t) { return t == IndexType::i32 ? "i32" : "i64"; }

const char* name(PluginStatus s) {
  switch (s) {
    case PluginStatus::available: return "available";
    case PluginStatus::no_device: return "no device";
    case PluginStatus::not_compiled: return "not compiled";
    case PluginStatus::broken: return "broken";
  }
  return "?";
}

namespace {
constexpr std::array<const char*, SPARSEPORT_OP_COUNT> kOpNames = {
    "spmm",           "sddmm",          "segment_reduce",       "scatter_reduce",       "gather_scatter",
    "csr_attention",  "csr_slice_rows", "csr_slice_rows_dense", "csr_induced_subgraph", "csr_transpose"};
constexpr std::array<const char*, 4> kReduceNames = {"sum", "mean", "max", "min"};

template <size_t N>
std::string joined(const std::array<const char*, N>& names) {
  std::string s;
  for (const char* n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}
}  // namespace

const char* op_name(sparseport_op op) {
  return op >= 0 && op < SPARSEPORT_OP_COUNT ? kOpNames[static_cast<size_t>(op)] : "?";
}

sparseport_op op_from_name(std::string_view n) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (n == kOpNames[i]) return static_cast<sparseport_op>(i);
  throw InvalidArgument("sparseport: unknown op '" + std::string(n) + "' (known: " + joined(kOpNames) + ")");
}

const char* name(Reduce r) { return kReduceNames[static_cast<size_t>(r)]; }

Reduce reduce_from_name(std::string_view n) {
  for (size_t i = 0; i < kReduceNames.size(); ++i)
    if (n == kReduceNames[i]) return static_cast<Reduce>(i);
  throw InvalidArgument("sparseport: unknown reduce '" + std::string(n) + "' (known: " + joined(kReduceNames) + ")");
}

namespace detail {

std::string human_bytes(long double bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(kUnits)) bytes /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0Lf %s" : "%.1Lf %s", bytes, kUnits[u]);
  return buf;
}

long double host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0x1p47L;
  return static_cast<long double>(pages) * static_cast<long double>(page);
}

bool is_out_of_memory(const sparseport_status& st) {
  if (st.code != SPARSEPORT_ERR_BACKEND) return false;
  const std::string_view n = st.native_name;
  return n == "ENOMEM" || n == "std::bad_alloc" || n == "cudaErrorMemoryAllocation" ||
         n == "CUSPARSE_STATUS_ALLOC_FAILED" || n == "Kokkos::kokkos_malloc";
}

void throw_status(const sparseport_status& st, const std::string& where, size_t requested_bytes) {
  const std::string msg = where + ": " + st.message;
  switch (st.code) {
    case SPARSEPORT_ERR_INVALID_ARGUMENT: throw InvalidArgument(msg);
    case SPARSEPORT_ERR_DIMENSION_MISMATCH: throw DimensionMismatch(msg);
    case SPARSEPORT_ERR_UNSUPPORTED: throw Unsupported(msg);
    case SPARSEPORT_ERR_BACKEND:
      if (is_out_of_memory(st)) throw OutOfMemory(msg, st.native_code, st.native_name, requested_bytes);
      throw BackendError(msg, st.native_code, st.native_name);
    case SPARSEPORT_ERR_DEVICE_FAULT: throw DeviceFault(msg, st.native_code, st.native_name);
    default: throw PluginError(msg + " (plugin status " + std::to_string(st.code) + ")");
  }
}

}  // namespace detail
}  // namespace sparseport
