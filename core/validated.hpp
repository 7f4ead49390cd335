// SPDX-License-Identifier: Apache-2.0
// Which index arrays in a context's memory passed the front end's content checks, so that
// ValidateMode::once checks device arrays once per operand. An entry is keyed by the context's
// state and the check's kind, pointers, sizes and bound, and is forgotten when memory it covers is
// written or freed through the library (Context::copy_to_backend, Buffer) or its context ends.
// Writes the library cannot see (a user's own cudaMemcpy) are the caller's to announce:
// ValidateMode::always, or clear_plan_memo().
#pragma once

#include <cstddef>
#include <cstdint>

namespace sparseport::detail {

// A plain key (no strings), so that a one-shot call's lookup costs a hash and a compare.
struct ValidatedKey {
  const void* state = nullptr;
  int32_t kind = 0;  // sparseport_index_check_kind
  int32_t index_bytes = 0;
  const void* first = nullptr;   // rowptr, or the index array
  const void* second = nullptr;  // colind, or null
  int64_t rows = 0, cols = 0, n = 0;  // CSR: rows, cols, nnz; index: 0, bound, length
  bool operator==(const ValidatedKey&) const = default;
};

bool validated_before(const ValidatedKey& key);
// Remembers key; its arrays are [first, first + first_bytes) and [second, second + second_bytes).
void remember_validated(const ValidatedKey& key, size_t first_bytes, size_t second_bytes);
// Forgets entries of `state` whose arrays overlap [p, p + bytes); p == nullptr forgets all of state's.
void forget_validated(const void* state, const void* p, size_t bytes);
void forget_all_validated();

}  // namespace sparseport::detail
