// SPDX-License-Identifier: Apache-2.0
#include "src/ops/common.hpp"

#include <algorithm>
#include <vector>

#include "core/validated.hpp"

namespace sparseport::ops {

std::string where(const Context& ctx, sparseport_op op) {
  return std::string("sparseport::") + op_name(op) + "[" + ctx.backend() + "]";
}

sparseport_exec exec_for(const Context& ctx, const std::optional<bool>& allow_tf32) {
  sparseport_exec x = ctx.exec();
  if (allow_tf32) x.flags = *allow_tf32 ? (x.flags | SPARSEPORT_EXEC_ALLOW_TF32) : (x.flags & ~SPARSEPORT_EXEC_ALLOW_TF32);
  return x;
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

bool valid_tag(ValueType t) { return t == ValueType::f32 || t == ValueType::f64 || is_16bit(t); }
bool valid_tag(IndexType t) { return t == IndexType::i32 || t == IndexType::i64; }

// The host checks, in the order the device check reports: rowptr[0], rowptr[rows], the first
// decreasing row, then the first entry out of range (columns are only read once rowptr is sound).
template <class I>
sparseport_index_report host_csr_report(const CsrView& a) {
  const I* rp = static_cast<const I*>(a.rowptr);
  const I* ci = static_cast<const I*>(a.colind);
  sparseport_index_report r{};
  if (rp[0] != 0) {
    r.problem = SPARSEPORT_INDEX_ROWPTR_START;
    r.value = rp[0];
    return r;
  }
  if (static_cast<int64_t>(rp[a.rows]) != a.nnz) {
    r.problem = SPARSEPORT_INDEX_ROWPTR_END;
    r.position = r.row = a.rows;
    r.value = rp[a.rows];
    return r;
  }
  for (int64_t i = 0; i < a.rows; ++i)
    if (rp[i + 1] < rp[i]) {
      r.problem = SPARSEPORT_INDEX_ROWPTR_DECREASES;
      r.position = r.row = i;
      r.value = rp[i];
      r.value2 = rp[i + 1];
      return r;
    }
  for (int64_t i = 0; i < a.rows; ++i)
    for (I e = rp[i]; e < rp[i + 1]; ++e)
      if (ci[e] < 0 || static_cast<int64_t>(ci[e]) >= a.cols) {
        r.problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
        r.position = e;
        r.row = i;
        r.value = ci[e];
        return r;
      }
  return r;
}

template <class I>
sparseport_index_report host_index_report(const IndexView& idx, int64_t bound, bool sorted) {
  const I* p = static_cast<const I*>(idx.data);
  sparseport_index_report r{};
  for (int64_t e = 0; e < idx.n; ++e) {
    if (p[e] < 0 || static_cast<int64_t>(p[e]) >= bound) {
      r.problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
      r.position = e;
      r.value = p[e];
      return r;
    }
    if (sorted && e > 0 && p[e] < p[e - 1]) {
      r.problem = SPARSEPORT_INDEX_UNSORTED;
      r.position = e;
      r.value = p[e - 1];
      r.value2 = p[e];
      return r;
    }
  }
  return r;
}

}  // namespace

sparseport_index_report host_report(const sparseport_index_check& c) {
  if (c.kind == SPARSEPORT_CHECK_CSR) {
    const CsrView a{c.csr.rows, c.csr.cols, c.csr.nnz, c.csr.rowptr, c.csr.colind, nullptr,
                    static_cast<IndexType>(c.csr.index_type), ValueType::f32};
    return a.index_type == IndexType::i64 ? host_csr_report<int64_t>(a) : host_csr_report<int32_t>(a);
  }
  const IndexView idx{c.index.n, c.index.data, static_cast<IndexType>(c.index.index_type)};
  const bool sorted = c.kind == SPARSEPORT_CHECK_SORTED_INDEX;
  return idx.index_type == IndexType::i64 ? host_index_report<int64_t>(idx, c.bound, sorted)
                                          : host_index_report<int32_t>(idx, c.bound, sorted);
}

namespace {

// One message per problem, the same wherever the arrays live.
[[noreturn]] void throw_csr_report(const std::string& w, const char* arg, const CsrView& a,
                                   const sparseport_index_report& r) {
  const std::string A = arg;
  switch (r.problem) {
    case SPARSEPORT_INDEX_ROWPTR_START:
      throw InvalidArgument(w + ": " + A + ".rowptr[0] is " + std::to_string(r.value) + " (need 0)");
    case SPARSEPORT_INDEX_ROWPTR_END:
      throw InvalidArgument(w + ": " + A + ".rowptr[" + std::to_string(a.rows) + "] is " + std::to_string(r.value) +
                            " but " + A + ".nnz is " + std::to_string(a.nnz));
    case SPARSEPORT_INDEX_ROWPTR_DECREASES:
      throw InvalidArgument(w + ": " + A + ".rowptr decreases at row " + std::to_string(r.row) + " (" +
                            std::to_string(r.value) + " then " + std::to_string(r.value2) + ")");
    default:
      throw InvalidArgument(w + ": " + A + " row " + std::to_string(r.row) + " has column " + std::to_string(r.value) +
                            " outside [0, " + std::to_string(a.cols) + ") (entry " + std::to_string(r.position) + ")");
  }
}

[[noreturn]] void throw_index_report(const std::string& w, const char* arg, int64_t bound,
                                     const sparseport_index_report& r) {
  const std::string A = arg;
  if (r.problem == SPARSEPORT_INDEX_UNSORTED)
    throw InvalidArgument(w + ": " + A + " must be sorted ascending but " + A + "[" + std::to_string(r.position - 1) +
                          "] = " + std::to_string(r.value) + " > " + A + "[" + std::to_string(r.position) +
                          "] = " + std::to_string(r.value2));
  throw InvalidArgument(w + ": " + A + "[" + std::to_string(r.position) + "] is " + std::to_string(r.value) +
                        ", outside [0, " + std::to_string(bound) + ")");
}

// Whether this call checks index contents (ValidateMode, context.hpp): host memory on every call
// (a bad index there can crash the process); device memory once per operand, on every plan, or
// on every call with `always`. `key` names the operand for the once-per-operand memo.
bool must_check(const Context& ctx, bool plan, const detail::ValidatedKey& key) {
  const ValidateMode mode = ctx.validate();
  if (mode == ValidateMode::off) return false;
  if (!ctx.device_memory() || mode == ValidateMode::always || plan) return true;
  return !detail::validated_before(key);
}

// "spmm" out of "sparseport::spmm[cuda:0] ...": what a plugin's message names.
const char* op_of(const std::string& w) {
  thread_local std::string op;
  const size_t b = w.find("::"), e = w.find('[');
  op = (b != std::string::npos && e != std::string::npos && e > b + 2) ? w.substr(b + 2, e - b - 2) : w;
  return op.c_str();
}

// The plugin's own check where the arrays live; a device plugin without one has them copied here.
sparseport_index_report device_report(const Context& ctx, const std::string& w, const sparseport_index_check& c) {
  const sparseport_plugin* t = ctx.plugin().table;
  if (t->check_indices != nullptr) {
    sparseport_index_report r{};
    sparseport_status st{};
    const sparseport_exec x = ctx.exec();
    if (t->check_indices(&x, &c, &r, &st) != SPARSEPORT_OK) detail::throw_status(st, w + " (checking indices)");
    return r;
  }
  const auto copy = [&](const void* p, int64_t n, int32_t it) {
    std::vector<int64_t> h(static_cast<size_t>(n));  // widened below
    if (it == SPARSEPORT_I64) {
      ctx.copy_to_host(h.data(), p, static_cast<size_t>(n) * 8);
    } else {
      std::vector<int32_t> h32(static_cast<size_t>(n));
      ctx.copy_to_host(h32.data(), p, static_cast<size_t>(n) * 4);
      std::copy(h32.begin(), h32.end(), h.begin());
    }
    return h;
  };
  sparseport_index_check h = c;  // the same check on the host copies
  std::vector<int64_t> rowptr_or_index, colind;
  if (c.kind == SPARSEPORT_CHECK_CSR) {
    rowptr_or_index = copy(c.csr.rowptr, c.csr.rows + 1, c.csr.index_type);
    colind = copy(c.csr.colind, c.csr.nnz, c.csr.index_type);
    h.csr.rowptr = rowptr_or_index.data();
    h.csr.colind = colind.data();
    h.csr.index_type = SPARSEPORT_I64;
  } else {
    rowptr_or_index = copy(c.index.data, c.index.n, c.index.index_type);
    h.index.data = rowptr_or_index.data();
    h.index.index_type = SPARSEPORT_I64;
  }
  return host_report(h);
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

void check_csr_shape(const std::string& w, const char* arg, const CsrView& a) {
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
}

namespace {
detail::ValidatedKey csr_key(const Context& ctx, const CsrView& a) {
  return {ctx.exec().state, SPARSEPORT_CHECK_CSR, static_cast<int32_t>(size_of(a.index_type)), a.rowptr, a.colind,
          a.rows, a.cols, a.nnz};
}
}  // namespace

bool csr_check_can_ride(const Context& ctx) { return ctx.device_memory() && ctx.validate() != ValidateMode::off; }

CsrCheck csr_check_for(const Context& ctx, const CsrView& a, const std::string& requested) {
  if (!must_check(ctx, false, csr_key(ctx, a))) return CsrCheck::none;
  return requested.empty() && csr_check_can_ride(ctx) ? CsrCheck::ride : CsrCheck::here;
}

void csr_after_summary(const Context& ctx, const std::string& w, const CsrView& a, int32_t problem) {
  if (problem == SPARSEPORT_INDEX_OK) {
    csr_checked(ctx, a);
    return;
  }
  check_csr(ctx, w, "A", a, /*plan=*/true);  // throws on a violation, naming its row and values
  if (problem > 0)
    throw Error(w + ": the index check of A's summary found problem " + std::to_string(problem) +
                " but the full check found none");
}

void csr_checked(const Context& ctx, const CsrView& a) {
  const auto isz = static_cast<size_t>(size_of(a.index_type));
  detail::remember_validated(csr_key(ctx, a), static_cast<size_t>(a.rows + 1) * isz, static_cast<size_t>(a.nnz) * isz);
}

void check_csr(const Context& ctx, const std::string& w, const char* arg, const CsrView& a, bool plan) {
  check_csr_shape(w, arg, a);
  if (!must_check(ctx, plan, csr_key(ctx, a))) return;
  sparseport_index_report r{};
  if (!ctx.device_memory()) {
    r = a.index_type == IndexType::i32 ? host_csr_report<int32_t>(a) : host_csr_report<int64_t>(a);
  } else {
    r = device_report(ctx, w, {SPARSEPORT_CHECK_CSR, to_abi(a), {}, 0, op_of(w), arg});
  }
  if (r.problem != SPARSEPORT_INDEX_OK) throw_csr_report(w, arg, a, r);
  if (ctx.device_memory()) csr_checked(ctx, a);
}

void check_index(const Context& ctx, const std::string& w, const char* arg, const IndexView& idx, int64_t bound,
                 bool sorted, bool plan) {
  if (!valid_tag(idx.index_type)) throw InvalidArgument(w + ": " + arg + " has an unknown index type tag");
  if (idx.n < 0) throw InvalidArgument(w + ": " + arg + " has negative length " + std::to_string(idx.n));
  if (idx.n > 0 && idx.data == nullptr) throw InvalidArgument(w + ": " + arg + ".data is null");
  const auto isz = static_cast<int32_t>(size_of(idx.index_type));
  const int32_t kind = sorted ? SPARSEPORT_CHECK_SORTED_INDEX : SPARSEPORT_CHECK_INDEX;
  const detail::ValidatedKey key{ctx.exec().state, kind, isz, idx.data, nullptr, 0, bound, idx.n};
  if (!must_check(ctx, plan, key)) return;
  sparseport_index_report r{};
  if (!ctx.device_memory()) {
    r = idx.index_type == IndexType::i32 ? host_index_report<int32_t>(idx, bound, sorted)
                                         : host_index_report<int64_t>(idx, bound, sorted);
  } else {
    r = device_report(ctx, w, {kind, {}, to_abi(idx), bound, op_of(w), arg});
  }
  if (r.problem != SPARSEPORT_INDEX_OK) throw_index_report(w, arg, bound, r);
  if (ctx.device_memory()) detail::remember_validated(key, static_cast<size_t>(idx.n * isz), 0);
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

size_t bytes_for(const std::string& w, const char* what, int64_t n, size_t size) {
  if (n < 0) throw InvalidArgument(w + ": " + what + " would have a negative length " + std::to_string(n));
  if (size != 0 && static_cast<uint64_t>(n) > SIZE_MAX / size)
    throw OutOfMemory(w + ": " + what + " would need " + std::to_string(n) + " elements of " + std::to_string(size) +
                          " bytes, more bytes than the address space holds",
                      0, "ENOMEM", SIZE_MAX);
  return static_cast<size_t>(n) * size;
}

Buffer allocate_result(const Context& ctx, const std::string& w, const char* what, int64_t n, size_t size) {
  const size_t bytes = bytes_for(w, what, n, size);
  try {
    return ctx.allocate(bytes);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(w + ": " + what + " (" + std::to_string(n) + " elements, " + std::to_string(bytes) +
                          " bytes) could not be allocated: " + e.what(),
                      e.native_code(), e.native_name(), bytes);
  }
}

}  // namespace sparseport::ops
