// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

#include <vector>

namespace sparseport::ops {

std::string where(const Context& ctx, sparseport_op op) {
  return std::string("sparseport::") + op_name(op) + "[" + ctx.backend() + "]";
}

sparseport_csr to_abi(const CsrView& v) {
  return {v.rows, v.cols, v.nnz, v.rowptr, v.colind, v.values, static_cast<int32_t>(v.index_type),
          static_cast<int32_t>(v.value_type)};
}
sparseport_coo to_abi(const CooView& v) {
  return {v.rows, v.cols, v.nnz, v.row, v.col, v.values, static_cast<int32_t>(v.index_type),
          static_cast<int32_t>(v.value_type)};
}
sparseport_index_array to_abi(const IndexView& v) { return {v.n, v.data, static_cast<int32_t>(v.index_type)}; }
sparseport_dense to_abi(const DenseView& v) {
  return {v.rows, v.cols, v.ld, v.data, static_cast<int32_t>(v.value_type)};
}
sparseport_dense_mut to_abi(const DenseMutView& v) {
  return {v.rows, v.cols, v.ld, v.data, static_cast<int32_t>(v.value_type)};
}

namespace {

std::string shape(int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

bool valid_tag(ValueType t) { return t == ValueType::f32 || t == ValueType::f64; }
bool valid_tag(IndexType t) { return t == IndexType::i32 || t == IndexType::i64; }

template <class I>
void check_csr_contents(const std::string& w, const char* arg, const CsrView& a) {
  const I* rp = static_cast<const I*>(a.rowptr);
  const I* ci = static_cast<const I*>(a.colind);
  if (rp[0] != 0)
    throw InvalidArgument(w + ": " + arg + ".rowptr[0] is " + std::to_string(rp[0]) + " (need 0)");
  if (static_cast<int64_t>(rp[a.rows]) != a.nnz)
    throw InvalidArgument(w + ": " + arg + ".rowptr[" + std::to_string(a.rows) + "] is " + std::to_string(rp[a.rows]) +
                          " but " + arg + ".nnz is " + std::to_string(a.nnz));
  for (int64_t i = 0; i < a.rows; ++i) {
    if (rp[i + 1] < rp[i])
      throw InvalidArgument(w + ": " + arg + ".rowptr decreases at row " + std::to_string(i) + " (" +
                            std::to_string(rp[i]) + " then " + std::to_string(rp[i + 1]) + ")");
    for (I e = rp[i]; e < rp[i + 1]; ++e)
      if (ci[e] < 0 || static_cast<int64_t>(ci[e]) >= a.cols)
        throw InvalidArgument(w + ": " + arg + " row " + std::to_string(i) + " has column " + std::to_string(ci[e]) +
                              " outside [0, " + std::to_string(a.cols) + ")");
  }
}

template <class I>
void check_index_contents(const std::string& w, const char* arg, const IndexView& idx, int64_t bound, bool sorted) {
  const I* p = static_cast<const I*>(idx.data);
  for (int64_t e = 0; e < idx.n; ++e) {
    if (p[e] < 0 || static_cast<int64_t>(p[e]) >= bound)
      throw InvalidArgument(w + ": " + arg + "[" + std::to_string(e) + "] is " + std::to_string(p[e]) + ", outside [0, " +
                            std::to_string(bound) + ")");
    if (sorted && e > 0 && p[e] < p[e - 1])
      throw InvalidArgument(w + ": " + arg + " must be sorted ascending but " + arg + "[" + std::to_string(e - 1) +
                            "] = " + std::to_string(p[e - 1]) + " > " + arg + "[" + std::to_string(e) +
                            "] = " + std::to_string(p[e]));
  }
}

}  // namespace

void check_dense(const std::string& w, const char* arg, const DenseView& d, int64_t rows, int64_t cols,
                 const char* rule) {
  if (!valid_tag(d.value_type))
    throw InvalidArgument(w + ": " + arg + " has an unknown value type tag " + std::to_string(static_cast<int>(d.value_type)));
  if (d.rows < 0 || d.cols < 0)
    throw InvalidArgument(w + ": " + arg + " has a negative shape " + shape(d.rows, d.cols));
  if (d.ld < d.cols || (d.rows > 1 && d.ld < 1))
    throw InvalidArgument(w + ": " + arg + " has ld " + std::to_string(d.ld) + " smaller than its " +
                          std::to_string(d.cols) + " columns");
  if (d.rows != rows || d.cols != cols)
    throw DimensionMismatch(w + ": " + arg + " is " + shape(d.rows, d.cols) + " but must be " + shape(rows, cols) +
                            " (" + rule + ")");
  if (d.data == nullptr && d.rows > 0 && d.cols > 0) throw InvalidArgument(w + ": " + arg + ".data is null");
}

void check_csr(const Context& ctx, const std::string& w, const char* arg, const CsrView& a) {
  if (!valid_tag(a.index_type) || !valid_tag(a.value_type))
    throw InvalidArgument(w + ": " + arg + " has an unknown index or value type tag");
  if (a.rows < 0 || a.cols < 0 || a.nnz < 0)
    throw InvalidArgument(w + ": " + arg + " has a negative size (" + shape(a.rows, a.cols) + ", nnz " +
                          std::to_string(a.nnz) + ")");
  if (a.index_type == IndexType::i32 && (a.nnz > INT32_MAX || a.rows > INT32_MAX || a.cols > INT32_MAX))
    throw InvalidArgument(w + ": " + arg + " (" + shape(a.rows, a.cols) + ", nnz " + std::to_string(a.nnz) +
                          ") does not fit int32 indices; use int64");
  if (a.rowptr == nullptr) throw InvalidArgument(w + ": " + arg + ".rowptr is null");
  if (a.nnz > 0 && a.colind == nullptr) throw InvalidArgument(w + ": " + arg + ".colind is null");
  if (ctx.device_memory()) return;
  if (a.index_type == IndexType::i32)
    check_csr_contents<int32_t>(w, arg, a);
  else
    check_csr_contents<int64_t>(w, arg, a);
}

void check_index(const Context& ctx, const std::string& w, const char* arg, const IndexView& idx, int64_t bound,
                 bool sorted) {
  if (!valid_tag(idx.index_type)) throw InvalidArgument(w + ": " + arg + " has an unknown index type tag");
  if (idx.n < 0) throw InvalidArgument(w + ": " + arg + " has negative length " + std::to_string(idx.n));
  if (idx.n > 0 && idx.data == nullptr) throw InvalidArgument(w + ": " + arg + ".data is null");
  if (ctx.device_memory()) return;
  if (idx.index_type == IndexType::i32)
    check_index_contents<int32_t>(w, arg, idx, bound, sorted);
  else
    check_index_contents<int64_t>(w, arg, idx, bound, sorted);
}

void check_same_type(const std::string& w, const char* arg, ValueType got, ValueType want) {
  if (got != want)
    throw InvalidArgument(w + ": " + arg + " holds " + name(got) + " values but the op runs in " + name(want) +
                          " (all value arguments must share one type)");
}

void check_same_type(const std::string& w, const char* arg, IndexType got, IndexType want) {
  if (got != want)
    throw InvalidArgument(w + ": " + arg + " has " + name(got) + " indices but the op uses " + name(want) +
                          " (all index arguments must share one type)");
}

void check_reduce(const std::string& w, Reduce r) {
  const int v = static_cast<int>(r);
  if (v < SPARSEPORT_REDUCE_SUM || v > SPARSEPORT_REDUCE_MIN)
    throw InvalidArgument(w + ": reduce " + std::to_string(v) + " is not one of sum, mean, max, min");
}

}  // namespace sparseport::ops
