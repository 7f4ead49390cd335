// SPDX-License-Identifier: Apache-2.0
// Internal to src/dist, without MPI (partition.cpp and relabel.cpp use it): a host CSR's index
// arrays at their own width, and the structural check every partition function makes first.
#pragma once

#include <cstdint>
#include <string>

#include "sparseport/errors.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/views.hpp"

namespace sparseport::dist::detail {

// f(rowptr, colind) with the arrays typed by A's index type.
template <class F>
void with_indices(const CsrView& a, F&& f) {
  if (a.index_type == IndexType::i32)
    f(static_cast<const int32_t*>(a.rowptr), static_cast<const int32_t*>(a.colind));
  else
    f(static_cast<const int64_t*>(a.rowptr), static_cast<const int64_t*>(a.colind));
}

// InvalidArgument "sparseport::dist::FN: A is not a valid CSR: ..." unless validate(a) passes.
inline void check_structure(const CsrView& a, const char* fn) {
  const Validation v = validate(a);
  if (!v.ok()) throw InvalidArgument(std::string("sparseport::dist::") + fn + ": A is not a valid CSR: " + v.message);
}

}  // namespace sparseport::dist::detail
