// SPDX-License-Identifier: Apache-2.0
// What every plugin needs to implement table slots: exceptions turned into a status (no exception
// may cross the C table), and one type-dispatch helper instead of one slot per type combination.
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#include "sparseport/errors.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::detail {

inline void set_status(sparseport_status* st, int32_t code, std::string_view msg, int native_code = 0,
                       std::string_view native_name = {}) {
  if (st == nullptr) return;
  st->code = code;
  st->native_code = native_code;
  std::snprintf(st->native_name, sizeof st->native_name, "%.*s", static_cast<int>(native_name.size()),
                native_name.data());
  std::snprintf(st->message, sizeof st->message, "%.*s", static_cast<int>(msg.size()), msg.data());
}

// Runs f, mapping each exception of errors.hpp to its status code; returns the code.
template <class F>
int guarded(sparseport_status* st, F&& f) noexcept {
  try {
    f();
    if (st != nullptr) st->code = SPARSEPORT_OK;
    return SPARSEPORT_OK;
  } catch (const DeviceFault& e) {
    set_status(st, SPARSEPORT_ERR_DEVICE_FAULT, e.what(), e.native_code(), e.native_name());
  } catch (const BackendError& e) {
    set_status(st, SPARSEPORT_ERR_BACKEND, e.what(), e.native_code(), e.native_name());
  } catch (const DimensionMismatch& e) {
    set_status(st, SPARSEPORT_ERR_DIMENSION_MISMATCH, e.what());
  } catch (const InvalidArgument& e) {
    set_status(st, SPARSEPORT_ERR_INVALID_ARGUMENT, e.what());
  } catch (const Unsupported& e) {
    set_status(st, SPARSEPORT_ERR_UNSUPPORTED, e.what());
  } catch (const std::bad_alloc&) {
    // The size is not known here; the front end raises OutOfMemory for this native name.
    set_status(st, SPARSEPORT_ERR_BACKEND, "ran out of host memory inside the plugin (std::bad_alloc)", 0,
               "std::bad_alloc");
  } catch (const std::exception& e) {
    set_status(st, SPARSEPORT_ERR_PLUGIN, e.what());
  } catch (...) {
    set_status(st, SPARSEPORT_ERR_PLUGIN, "unknown exception inside a plugin");
  }
  return st != nullptr ? st->code : SPARSEPORT_ERR_PLUGIN;
}

// Only variants flagged SPARSEPORT_VARIANT_VALUES16 see 16-bit arrays, and they dispatch those
// themselves; one reaching a float/double dispatch (this file's `dispatch`, the cuda plugin's
// dispatch_types/dispatch_value) would be read as floats, past the end of the array (the
// scheduler's probe slice did: a crash on openmp, most likely session 12's device fault on
// 32M-entry inputs), so it stops there.
inline void refuse_values16(int32_t value_type) {
  if (value_type == SPARSEPORT_F16 || value_type == SPARSEPORT_BF16)
    throw Unsupported("16-bit values reached a float32/float64 kernel (a variant not flagged for 16-bit values)");
}

// Phase 0 of a structural op that builds a CSR: `total` (counted in int64) entries are about to go
// into a rowptr of index type I. Throws InvalidArgument when they do not fit, before anything is
// stored, e.g. "the selected rows hold 2147549184 entries in all, more than int32 indices can
// address (at most 2147483647); use int64 indices".
template <class I>
void check_result_fits(int64_t total, const char* what) {
  constexpr int64_t kMax = static_cast<int64_t>(std::numeric_limits<I>::max());
  if (total <= kMax) return;
  throw InvalidArgument(std::string(what) + " " + std::to_string(total) + " entries in all, more than " +
                        (sizeof(I) == 4 ? "int32" : "int64") + " indices can address (at most " +
                        std::to_string(kMax) + ")" + (sizeof(I) == 4 ? "; use int64 indices" : ""));
}

// The summarize_csr slot's argument checks (ABI 1.3), the same for every plugin that has the slot:
// a matrix and a result, no negative sizes, the index arrays it reads (A's values are not read).
// Where the arrays must live is the plugin's own check.
inline void check_summary_args(const sparseport_csr* a, const sparseport_csr_summary* out) {
  if (a == nullptr || out == nullptr)
    throw InvalidArgument(std::string("summarize_csr: the ") + (a == nullptr ? "matrix" : "result") +
                          " pointer is null");
  if (a->rows < 0 || a->cols < 0 || a->nnz < 0)
    throw InvalidArgument("summarize_csr: A is " + std::to_string(a->rows) + "x" + std::to_string(a->cols) +
                          " with " + std::to_string(a->nnz) + " entries (need no negative sizes)");
  if (a->rowptr == nullptr || (a->nnz > 0 && a->colind == nullptr))
    throw InvalidArgument(std::string("summarize_csr: A.") + (a->rowptr == nullptr ? "rowptr" : "colind") +
                          " is null");
}

// Calls f.template operator()<I, V>() for the run-time index and value types:
//   dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { kernel<I, V>(args); });
template <class F>
decltype(auto) dispatch(int32_t index_type, int32_t value_type, F&& f) {
  refuse_values16(value_type);
  const bool i64 = index_type == SPARSEPORT_I64;
  const bool f64 = value_type == SPARSEPORT_F64;
  if (i64 && f64) return f.template operator()<int64_t, double>();
  if (i64) return f.template operator()<int64_t, float>();
  if (f64) return f.template operator()<int32_t, double>();
  return f.template operator()<int32_t, float>();
}

template <class T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}
template <class T>
T* as_mut(void* p) {
  return static_cast<T*>(p);
}

}  // namespace sparseport::detail
