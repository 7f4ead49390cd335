// SPDX-License-Identifier: Apache-2.0
// Fuzzes the structure checks on host views. The input encodes sizes, type tags, and the rowptr,
// colind and index arrays (int32 or int64), each allocated with exactly the length its size
// implies, so ASan sees any read past them. A mode byte picks the check:
//   0  sparseport::validate(CsrView): never throws; its verdict must match a plain re-check
//   1  the op front end's CSR check (csr_transpose on the reference backend)
//   2  the front end's index check (segment_reduce: sorted; scatter_reduce: any order)
//   3  the front end's COO check (gather_scatter: rows sorted, rows and columns in range)
//   4  CSR and index together (csr_slice_rows)
// Modes 1-4 must throw a sparseport::Error exactly when the input breaks a documented rule, and
// run otherwise. Sizes too large to allocate are given with null arrays (only the null checks can
// look at them).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

constexpr int64_t kMaxLen = 1 << 12;  // longest array allocated; also the largest dense dimension

// Mostly small sizes, some negative, some anywhere in int64.
int64_t size_value(FuzzedDataProvider& p) {
  const auto b = p.ConsumeIntegral<uint8_t>();
  if (b < 0xd0) return b % 48;
  if (b < 0xe0) return -1 - (b & 0xf);
  if (b < 0xf8) return p.ConsumeIntegralInRange<int64_t>(0, kMaxLen);
  return p.ConsumeIntegral<int64_t>();
}

// An index tag: mostly i32 or i64, sometimes a value that is neither.
int32_t index_tag(FuzzedDataProvider& p) {
  const auto b = p.ConsumeIntegral<uint8_t>();
  if (b < 0x7c) return static_cast<int32_t>(sp::IndexType::i32);
  if (b < 0xf8) return static_cast<int32_t>(sp::IndexType::i64);
  return p.ConsumeIntegral<int32_t>();
}
int32_t value_tag(FuzzedDataProvider& p) {
  const auto b = p.ConsumeIntegral<uint8_t>();
  if (b < 0x7c) return static_cast<int32_t>(sp::ValueType::f32);
  if (b < 0xf8) return static_cast<int32_t>(sp::ValueType::f64);
  return p.ConsumeIntegral<int32_t>();
}
bool is_index_tag(int32_t t) {
  return t == static_cast<int32_t>(sp::IndexType::i32) || t == static_cast<int32_t>(sp::IndexType::i64);
}
bool is_value_tag(int32_t t) {
  return t == static_cast<int32_t>(sp::ValueType::f32) || t == static_cast<int32_t>(sp::ValueType::f64);
}

// n index values: small ones (so that valid structures are easy to reach) or any value of I.
// delta: as steps from the previous value (rowptr, sorted indices) rather than values.
template <class I>
std::vector<int64_t> values(FuzzedDataProvider& p, int64_t n, bool delta) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  int64_t prev = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto b = p.ConsumeIntegral<uint8_t>();
    int64_t x;
    if (b < 0xf0) {
      const __int128 y = delta ? __int128{prev} + (b & 7) - (b >= 0xe8 ? 8 : 0) : (b & 63) - (b >= 0xe0 ? 64 : 0);
      x = static_cast<int64_t>(std::clamp<__int128>(y, std::numeric_limits<I>::min(), std::numeric_limits<I>::max()));
    } else {
      x = p.ConsumeIntegral<I>();
    }
    v[static_cast<size_t>(i)] = prev = x;
  }
  return v;
}

// An array of exactly n elements of the index type a tag names (int32 for an unknown tag, so that
// reading it as int64 would run past its end). Empty when n is negative or too large: null data.
struct Array {
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<int64_t> v;  // the values, for the re-check
  bool present = false;
  const void* data() const {
    if (!present) return nullptr;
    return i64.empty() ? static_cast<const void*>(i32.data()) : static_cast<const void*>(i64.data());
  }
};

Array make_array(FuzzedDataProvider& p, int64_t n, int32_t tag, bool delta) {
  Array a;
  if (n < 0 || n > kMaxLen || p.ConsumeIntegral<uint8_t>() == 0xff) return a;  // sometimes null
  a.present = true;
  const bool wide = tag == static_cast<int32_t>(sp::IndexType::i64);
  a.v = wide ? values<int64_t>(p, n, delta) : values<int32_t>(p, n, delta);
  // Exact lengths (an empty array may hand out null: with n == 0 nothing may be read).
  if (wide) {
    a.i64.assign(a.v.begin(), a.v.end());
  } else {
    a.i32.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) a.i32[static_cast<size_t>(i)] = static_cast<int32_t>(a.v[static_cast<size_t>(i)]);
  }
  return a;
}

struct Csr {
  int64_t rows = 0, cols = 0, nnz = 0;
  int32_t itag = 0, vtag = 0;
  Array rowptr, colind;
  std::vector<double> vals;  // 8 bytes per value: enough for either value type
  bool with_values = false;

  sp::CsrView view() const {
    sp::CsrView a;
    a.rows = rows;
    a.cols = cols;
    a.nnz = nnz;
    a.rowptr = rowptr.data();
    a.colind = colind.data();
    a.values = with_values ? static_cast<const void*>(vals.data()) : nullptr;
    a.index_type = static_cast<sp::IndexType>(itag);
    a.value_type = static_cast<sp::ValueType>(vtag);
    return a;
  }
};

Csr make_csr(FuzzedDataProvider& p) {
  Csr c;
  c.rows = size_value(p);
  c.cols = size_value(p);
  c.itag = index_tag(p);
  c.vtag = value_tag(p);
  c.rowptr = make_array(p, c.rows < 0 || c.rows > kMaxLen ? -1 : c.rows + 1, c.itag, true);
  // nnz: the last rowptr entry (the consistent case) or a size of its own.
  const bool follow = p.ConsumeBool();
  c.nnz = follow && c.rowptr.present ? std::max<int64_t>(c.rowptr.v.back(), 0) : size_value(p);
  c.colind = make_array(p, c.nnz, c.itag, false);
  c.with_values = p.ConsumeBool() && c.nnz >= 0 && c.nnz <= kMaxLen;
  if (c.with_values) c.vals.assign(static_cast<size_t>(c.nnz) + 1, 1.0);
  return c;
}

// What validate() must conclude, worked out plainly (structure only, as documented).
struct Expected {
  bool ok = true, sorted = true, unique = true;
};

Expected recheck(const Csr& c) {
  Expected x;
  if (c.rows < 0 || c.cols < 0 || c.nnz < 0 || !c.rowptr.present || (c.nnz > 0 && !c.colind.present) ||
      !is_index_tag(c.itag)) {
    x.ok = false;
    return x;
  }
  const auto& rp = c.rowptr.v;
  if (rp[0] != 0 || rp[static_cast<size_t>(c.rows)] != c.nnz) x.ok = false;
  for (int64_t i = 0; i < c.rows && x.ok; ++i)
    if (rp[static_cast<size_t>(i) + 1] < rp[static_cast<size_t>(i)]) x.ok = false;
  if (!x.ok) return x;
  const auto& ci = c.colind.v;
  for (int64_t i = 0; i < c.rows; ++i) {
    std::vector<int64_t> row(ci.begin() + rp[static_cast<size_t>(i)], ci.begin() + rp[static_cast<size_t>(i) + 1]);
    for (size_t k = 0; k < row.size(); ++k) {
      if (row[k] < 0 || row[k] >= c.cols) x.ok = false;
      if (k > 0 && row[k] < row[k - 1]) x.sorted = false;
    }
    std::sort(row.begin(), row.end());
    if (std::adjacent_find(row.begin(), row.end()) != row.end()) x.unique = false;
  }
  return x;
}

// The front end's rules for a host CSR on top of the structure: known tags, and int32 sizes.
bool front_end_accepts(const Csr& c) {
  if (!is_index_tag(c.itag) || !is_value_tag(c.vtag)) return false;
  if (c.itag == static_cast<int32_t>(sp::IndexType::i32) &&
      (c.rows > INT32_MAX || c.cols > INT32_MAX || c.nnz > INT32_MAX))
    return false;
  return recheck(c).ok;
}

const sp::Context& reference() {
  static const sp::Context ctx = sp::Context::create("reference");
  return ctx;
}

void check_validate(const Csr& c) {
  sp::Validation v;
  try {
    v = sp::validate(c.view());
  } catch (const std::exception& e) {
    fuzz::finding("validate threw " + fuzz::type_name(e) + ": " + e.what());
  }
  const Expected x = recheck(c);
  fuzz::require(v.ok() == x.ok, std::string("validate says ") + (v.ok() ? "valid" : "invalid (" + v.message + ")") +
                                    " but the re-check says " + (x.ok ? "valid" : "invalid"));
  if (x.ok) {
    fuzz::require(v.sorted == x.sorted, "validate's 'sorted' is wrong: " + v.message);
    fuzz::require(v.unique == x.unique, "validate's 'unique' is wrong: " + v.message);
  }
  fuzz::require(v.message.empty() == v.canonical(), "validate's message and flags disagree: '" + v.message + "'");
  if (!v.in_range) fuzz::require(v.bad_column_row >= 0 && v.bad_column_row < c.rows, "bad_column_row is off");
  if (!v.sorted) fuzz::require(v.unsorted_row >= 0 && v.unsorted_row < c.rows, "unsorted_row is off");
  if (!v.unique) fuzz::require(v.duplicate_row >= 0 && v.duplicate_row < c.rows, "duplicate_row is off");
}

void check_csr_front_end(const Csr& c) {
  if (c.cols > kMaxLen) return;  // csr_transpose allocates cols + 1 row pointers
  std::string e;
  const bool refused = fuzz::rejects(
      "csr_transpose", [&] { (void)sp::csr_transpose(reference(), c.view()); }, &e);
  const bool ok = front_end_accepts(c);
  fuzz::require(refused != ok,
                std::string("csr_transpose ") + (refused ? "refused a valid CSR: " + e : "accepted an invalid CSR"));
}

struct Dense {
  std::vector<double> data;  // 8 bytes per element: enough for either value type
  sp::DenseMutView view(int64_t rows, int64_t cols, int32_t vtag) {
    data.assign(static_cast<size_t>(std::clamp<int64_t>(rows, 0, kMaxLen) * std::clamp<int64_t>(cols, 0, kMaxLen)) + 1,
                0.0);
    return {rows, cols, cols, data.data(), static_cast<sp::ValueType>(vtag)};
  }
};

sp::Reduce reduce(FuzzedDataProvider& p) {
  const auto b = p.ConsumeIntegral<uint8_t>();
  return b < 0xfc ? static_cast<sp::Reduce>(SPARSEPORT_REDUCE_SUM + b % 4)
                  : static_cast<sp::Reduce>(p.ConsumeIntegral<int32_t>());
}
bool valid_reduce(sp::Reduce r) {
  return static_cast<int>(r) >= SPARSEPORT_REDUCE_SUM && static_cast<int>(r) <= SPARSEPORT_REDUCE_MIN;
}

bool in_range(const Array& a, int64_t bound, bool sorted) {
  for (size_t e = 0; e < a.v.size(); ++e) {
    if (a.v[e] < 0 || a.v[e] >= bound) return false;
    if (sorted && e > 0 && a.v[e] < a.v[e - 1]) return false;
  }
  return true;
}

void check_index(FuzzedDataProvider& p) {
  const int64_t n = size_value(p), bound = size_value(p), f = p.ConsumeIntegralInRange<int64_t>(1, 3);
  if (n < 0 || n > kMaxLen || bound < 0 || bound > kMaxLen) return;  // dense operands to allocate
  const int32_t itag = index_tag(p), vtag = p.ConsumeBool() ? static_cast<int32_t>(sp::ValueType::f64)
                                                            : static_cast<int32_t>(sp::ValueType::f32);
  const bool sorted = p.ConsumeBool();
  const Array idx = make_array(p, n, itag, sorted);
  const sp::Reduce r = reduce(p);
  Dense src, out;
  const sp::DenseMutView s = src.view(n, f, vtag), o = out.view(bound, f, vtag);
  const sp::IndexView iv{n, idx.data(), static_cast<sp::IndexType>(itag)};
  sp::ReduceOptions opt;
  opt.reduce = r;
  std::string e;
  const bool refused = fuzz::rejects(
      sorted ? "segment_reduce" : "scatter_reduce",
      [&] {
        if (sorted)
          sp::segment_reduce(reference(), iv, s, o, opt);
        else
          sp::scatter_reduce(reference(), iv, s, o, opt);
      },
      &e);
  const bool ok = is_index_tag(itag) && valid_reduce(r) && (n == 0 || idx.present) && in_range(idx, bound, sorted);
  fuzz::require(refused != ok, std::string(sorted ? "segment_reduce " : "scatter_reduce ") +
                                   (refused ? "refused a valid index: " + e : "accepted an invalid index"));
}

void check_coo(FuzzedDataProvider& p) {
  const int64_t rows = size_value(p), cols = size_value(p), nnz = size_value(p),
                f = p.ConsumeIntegralInRange<int64_t>(1, 3);
  if (std::max(rows, cols) > kMaxLen) return;  // dense operands to allocate
  const int32_t itag = index_tag(p), vtag = value_tag(p);
  const Array row = make_array(p, nnz, itag, true), col = make_array(p, nnz, itag, false);
  const sp::Reduce r = reduce(p);
  Dense x, out;
  const sp::DenseMutView xv = x.view(cols, f, vtag), ov = out.view(rows, f, vtag);
  std::vector<double> w(static_cast<size_t>(std::clamp<int64_t>(nnz, 0, kMaxLen)) + 1, 1.0);
  sp::CooView coo{rows,
                  cols,
                  nnz,
                  row.data(),
                  col.data(),
                  p.ConsumeBool() ? w.data() : nullptr,
                  static_cast<sp::IndexType>(itag),
                  static_cast<sp::ValueType>(vtag)};
  if (nnz > kMaxLen) coo.values = nullptr;
  sp::ReduceOptions opt;
  opt.reduce = r;
  std::string e;
  const bool refused = fuzz::rejects(
      "gather_scatter", [&] { sp::gather_scatter(reference(), coo, xv, ov, opt); }, &e);
  const bool ok = rows >= 0 && cols >= 0 && nnz >= 0 && is_index_tag(itag) && is_value_tag(vtag) && valid_reduce(r) &&
                  (nnz == 0 || (row.present && col.present)) && in_range(row, rows, true) && in_range(col, cols, false);
  fuzz::require(refused != ok,
                std::string("gather_scatter ") + (refused ? "refused valid edges: " + e : "accepted invalid edges"));
}

void check_slice(FuzzedDataProvider& p) {
  const Csr c = make_csr(p);
  const int64_t n = p.ConsumeIntegralInRange<int64_t>(0, 64);
  const Array idx = make_array(p, n, c.itag, false);
  const sp::IndexView iv{n, idx.data(), static_cast<sp::IndexType>(c.itag)};
  std::string e;
  const bool refused = fuzz::rejects(
      "csr_slice_rows", [&] { (void)sp::csr_slice_rows(reference(), c.view(), iv); }, &e);
  const bool ok = front_end_accepts(c) && (n == 0 || idx.present) && in_range(idx, c.rows, false);
  fuzz::require(refused != ok, std::string("csr_slice_rows ") +
                                   (refused ? "refused valid arguments: " + e : "accepted invalid arguments"));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("SPARSEPORT_SCHEDULER", "off", 1);
  ::setenv("SPARSEPORT_VALIDATE", "always", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  switch (p.ConsumeIntegralInRange<int>(0, 4)) {
    case 0:
      check_validate(make_csr(p));
      break;
    case 1:
      check_csr_front_end(make_csr(p));
      break;
    case 2:
      check_index(p);
      break;
    case 3:
      check_coo(p);
      break;
    default:
      check_slice(p);
      break;
  }
  return 0;
}
