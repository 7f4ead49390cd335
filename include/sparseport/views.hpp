// SPDX-License-Identifier: Apache-2.0
// Non-owning views of CSR, COO, index and row-major dense data, and small owning host containers
// that hand out such views. Views are type-erased (value and index type are tags), so the same
// view crosses the plugin ABI unchanged; the typed make_* helpers fill the tags for you.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "sparseport/half.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport {

// f16 and bf16 store 16 bits and compute in float32 (half.hpp); every op takes them.
enum class ValueType : int32_t { f32 = SPARSEPORT_F32, f64 = SPARSEPORT_F64, f16 = SPARSEPORT_F16, bf16 = SPARSEPORT_BF16 };
enum class IndexType : int32_t { i32 = SPARSEPORT_I32, i64 = SPARSEPORT_I64 };

template <class V>
constexpr ValueType value_type_of() {
  static_assert(std::is_same_v<V, float> || std::is_same_v<V, double> || std::is_same_v<V, half> ||
                    std::is_same_v<V, bfloat16>,
                "values are float, double, sparseport::half or sparseport::bfloat16");
  if constexpr (std::is_same_v<V, float>) return ValueType::f32;
  if constexpr (std::is_same_v<V, double>) return ValueType::f64;
  if constexpr (std::is_same_v<V, half>) return ValueType::f16;
  return ValueType::bf16;
}
template <class I>
constexpr IndexType index_type_of() {
  static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>, "indices are int32_t or int64_t");
  return std::is_same_v<I, int32_t> ? IndexType::i32 : IndexType::i64;
}
const char* name(ValueType t);  // "f32", "f64", "f16", "bf16"
const char* name(IndexType t);  // "i32", "i64"
inline int64_t size_of(ValueType t) { return t == ValueType::f64 ? 8 : t == ValueType::f32 ? 4 : 2; }
inline bool is_16bit(ValueType t) { return t == ValueType::f16 || t == ValueType::bf16; }
inline int64_t size_of(IndexType t) { return t == IndexType::i32 ? 4 : 8; }

// CSR, rows x cols. values == nullptr is a pattern (every value 1); value_type then names the type
// of the op's dense operands. Columns within a row may be unsorted or repeated unless an op says
// otherwise; repeated entries count separately (they add up for sum).
struct CsrView {
  int64_t rows = 0, cols = 0, nnz = 0;
  const void* rowptr = nullptr;
  const void* colind = nullptr;
  const void* values = nullptr;
  IndexType index_type = IndexType::i32;
  ValueType value_type = ValueType::f32;

  bool is_pattern() const { return values == nullptr; }
};

// COO: nnz (row, col[, value]) triples of a rows x cols matrix.
struct CooView {
  int64_t rows = 0, cols = 0, nnz = 0;
  const void* row = nullptr;
  const void* col = nullptr;
  const void* values = nullptr;
  IndexType index_type = IndexType::i32;
  ValueType value_type = ValueType::f32;
};

// A 1-D array of n indices.
struct IndexView {
  int64_t n = 0;
  const void* data = nullptr;
  IndexType index_type = IndexType::i32;
};

// Row-major dense rows x cols with leading dimension ld >= cols (in elements).
struct DenseView {
  int64_t rows = 0, cols = 0, ld = 0;
  const void* data = nullptr;
  ValueType value_type = ValueType::f32;
};

struct DenseMutView {
  int64_t rows = 0, cols = 0, ld = 0;
  void* data = nullptr;
  ValueType value_type = ValueType::f32;

  operator DenseView() const { return {rows, cols, ld, data, value_type}; }
};

template <class I, class V = float>
CsrView make_csr(int64_t rows, int64_t cols, int64_t nnz, const I* rowptr, const I* colind, const V* values = nullptr) {
  return {rows, cols, nnz, rowptr, colind, values, index_type_of<I>(), value_type_of<V>()};
}
template <class I, class V = float>
CooView make_coo(int64_t rows, int64_t cols, int64_t nnz, const I* row, const I* col, const V* values = nullptr) {
  return {rows, cols, nnz, row, col, values, index_type_of<I>(), value_type_of<V>()};
}
template <class I>
IndexView make_index(int64_t n, const I* data) {
  return {n, data, index_type_of<I>()};
}
template <class V>
DenseView make_dense(int64_t rows, int64_t cols, int64_t ld, const V* data) {
  return {rows, cols, ld, data, value_type_of<V>()};
}
template <class V>
DenseMutView make_dense(int64_t rows, int64_t cols, int64_t ld, V* data) {
  return {rows, cols, ld, data, value_type_of<V>()};
}
// A vector of n values as an n x 1 dense view (spmv's x and y); stride: elements from one value
// to the next (the view's ld), 1 for a contiguous array.
template <class V>
DenseView make_vector(int64_t n, const V* data, int64_t stride = 1) {
  return {n, 1, stride, data, value_type_of<V>()};
}
template <class V>
DenseMutView make_vector(int64_t n, V* data, int64_t stride = 1) {
  return {n, 1, stride, data, value_type_of<V>()};
}

// Owning host containers (std::vector storage). Handy for I/O, generators, tests and tools.
template <class I, class V>
struct HostCsr {
  using index_type = I;
  using value_type = V;
  int64_t rows = 0, cols = 0;
  std::vector<I> rowptr{0};
  std::vector<I> colind;
  std::vector<V> values;  // empty: a pattern

  int64_t nnz() const { return static_cast<int64_t>(colind.size()); }
  bool is_pattern() const { return values.empty(); }
  CsrView view() const {
    return make_csr<I, V>(rows, cols, nnz(), rowptr.data(), colind.data(), is_pattern() ? nullptr : values.data());
  }
};

template <class I, class V>
struct HostCoo {
  int64_t rows = 0, cols = 0;
  std::vector<I> row, col;
  std::vector<V> values;  // empty: a pattern

  int64_t nnz() const { return static_cast<int64_t>(row.size()); }
  CooView view() const {
    return make_coo<I, V>(rows, cols, nnz(), row.data(), col.data(), values.empty() ? nullptr : values.data());
  }
};

template <class V>
struct HostDense {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<V> data;

  HostDense() = default;
  HostDense(int64_t r, int64_t c, int64_t ld_ = -1, V fill = V(0))
      : rows(r), cols(c), ld(ld_ < 0 ? c : ld_), data(static_cast<size_t>(r * (ld_ < 0 ? c : ld_)), fill) {}
  V& operator()(int64_t i, int64_t j) { return data[static_cast<size_t>(i * ld + j)]; }
  const V& operator()(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * ld + j)]; }
  DenseView view() const { return make_dense<V>(rows, cols, ld, data.data()); }
  DenseMutView mut() { return make_dense<V>(rows, cols, ld, data.data()); }
};

}  // namespace sparseport
