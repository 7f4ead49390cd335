// SPDX-License-Identifier: Apache-2.0
// Matrix Market reading (graph.hpp): the entries of a coordinate or array file into COO arrays,
// then a counting sort into the CSR (mirrored for symmetric files, sorted and merged, symmetrized
// on request), and the dense reader. Separate from the header parsing and the writer: this is the
// hot path of reading, and the only code that sizes and builds the result.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "core/registry.hpp"
#include "sparseport/graph.hpp"
#include "core/matrix_market_internal.hpp"

namespace sparseport {

using namespace detail::mm;

namespace {

// A size line asking for more memory than the machine has is refused before any entry is read:
// allocating it would fail late (std::bad_alloc) or be granted lazily and end in the OOM killer.
void check_host_memory(const char* op, const std::string& path, int64_t rows, int64_t cols, long double bytes,
                       const char* what) {
  const long double have = detail::host_memory_bytes();
  if (bytes > have)
    throw InvalidArgument(std::string(op) + ": " + path + " is " + std::to_string(rows) + "x" + std::to_string(cols) +
                          ": " + what + " " + detail::human_bytes(bytes) + ", more than this machine's " + detail::human_bytes(have) +
                          " of memory.");
}

// ---- CSR construction -------------------------------------------------------------------------

template <class I>
[[noreturn]] void too_large_for(const std::string& path, const std::string& what, int64_t n) {
  throw InvalidArgument("read_matrix_market: " + path + " holds " + std::to_string(n) + " " + what + ", more than " +
                        std::to_string(sizeof(I) * 8) + "-bit indices can hold (" +
                        std::to_string(std::numeric_limits<I>::max()) + "); read it with int64_t indices.");
}

// COO (file order) to CSR with a counting sort; entries keep file order within each row. mirror
// adds (c, r) for every off-diagonal (r, c), negated when negate.
template <class I, class V>
HostCsr<I, V> coo_to_csr(int64_t rows, int64_t cols, const std::vector<I>& ri, const std::vector<I>& ci,
                         const std::vector<V>& vals, bool mirror, bool negate, bool drop_diag, int64_t total) {
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, I(0));
  a.colind.resize(static_cast<size_t>(total));
  const bool has_v = !vals.empty();
  if (has_v) a.values.resize(static_cast<size_t>(total));
  const size_t n = ri.size();
  I* ptr = a.rowptr.data();
  for (size_t e = 0; e < n; ++e) {
    const I r = ri[e], c = ci[e];
    if (r == c) {
      if (!drop_diag) ++ptr[r + 1];
    } else {
      ++ptr[r + 1];
      if (mirror) ++ptr[c + 1];
    }
  }
  for (int64_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
  // ptr[r] is row r's insertion point; afterwards it is row r+1's start, shifted back below.
  I* col = a.colind.data();
  V* val = a.values.data();
  for (size_t e = 0; e < n; ++e) {
    const I r = ri[e], c = ci[e];
    if (r == c && drop_diag) continue;
    const I k = ptr[r]++;
    col[k] = c;
    if (has_v) val[k] = vals[e];
    if (mirror && r != c) {
      const I m = ptr[c]++;
      col[m] = r;
      if (has_v) val[m] = negate ? -vals[e] : vals[e];
    }
  }
  for (int64_t i = rows; i > 0; --i) ptr[i] = ptr[i - 1];
  ptr[0] = 0;
  return a;
}

// Sorts each row by column and adds up duplicates in their order (a pattern keeps one).
template <class I, class V>
void sort_and_merge_rows(HostCsr<I, V>& a) {
  const bool has_v = !a.values.empty();
  std::vector<std::pair<I, V>> tmp;
  I w = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    const I b = a.rowptr[static_cast<size_t>(i)], e = a.rowptr[static_cast<size_t>(i) + 1];
    a.rowptr[static_cast<size_t>(i)] = w;
    bool sorted = true;
    for (I k = b + 1; k < e && sorted; ++k) sorted = a.colind[static_cast<size_t>(k)] > a.colind[static_cast<size_t>(k) - 1];
    if (sorted) {
      if (w != b) {
        std::copy(a.colind.begin() + b, a.colind.begin() + e, a.colind.begin() + w);
        if (has_v) std::copy(a.values.begin() + b, a.values.begin() + e, a.values.begin() + w);
      }
      w += e - b;
    } else if (!has_v) {
      std::sort(a.colind.begin() + b, a.colind.begin() + e);
      const auto last = std::unique(a.colind.begin() + b, a.colind.begin() + e);
      w = static_cast<I>(std::copy(a.colind.begin() + b, last, a.colind.begin() + w) - a.colind.begin());
    } else {
      tmp.clear();
      for (I k = b; k < e; ++k) tmp.emplace_back(a.colind[static_cast<size_t>(k)], a.values[static_cast<size_t>(k)]);
      std::stable_sort(tmp.begin(), tmp.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t k = 0; k < tmp.size(); ++k) {
        if (k > 0 && tmp[k].first == tmp[k - 1].first) {
          a.values[static_cast<size_t>(w) - 1] += tmp[k].second;
        } else {
          a.colind[static_cast<size_t>(w)] = tmp[k].first;
          a.values[static_cast<size_t>(w)] = tmp[k].second;
          ++w;
        }
      }
    }
  }
  a.rowptr[static_cast<size_t>(a.rows)] = w;
  a.colind.resize(static_cast<size_t>(w));
  if (has_v) a.values.resize(static_cast<size_t>(w));
}

// Adds (j, i, A[i,j]) for every off-diagonal (i, j) whose mirror A does not hold; each row keeps its
// own entries first, then the added ones by increasing i. Square A.
template <class I, class V>
HostCsr<I, V> symmetrize_pattern(const HostCsr<I, V>& a, const std::string& path) {
  const int64_t n = a.rows;
  const bool has_v = !a.values.empty();
  // A^T by a counting sort over A's rows in order, so each row of A^T lists sources ascending.
  std::vector<I> tptr(static_cast<size_t>(n) + 1, I(0));
  for (const I c : a.colind) ++tptr[static_cast<size_t>(c) + 1];
  for (int64_t i = 0; i < n; ++i) tptr[static_cast<size_t>(i) + 1] += tptr[static_cast<size_t>(i)];
  std::vector<I> next(tptr.begin(), tptr.end() - 1);
  std::vector<I> trow(a.colind.size());
  std::vector<V> tval(has_v ? a.colind.size() : 0);
  for (int64_t i = 0; i < n; ++i)
    for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k) {
      const I pos = next[static_cast<size_t>(a.colind[static_cast<size_t>(k)])]++;
      trow[static_cast<size_t>(pos)] = static_cast<I>(i);
      if (has_v) tval[static_cast<size_t>(pos)] = a.values[static_cast<size_t>(k)];
    }
  next.clear();
  next.shrink_to_fit();

  // stamp[c] == j: A's row j holds column c.
  std::vector<I> stamp(static_cast<size_t>(n), I(-1));
  auto mark = [&](int64_t j) {
    for (I k = a.rowptr[static_cast<size_t>(j)]; k < a.rowptr[static_cast<size_t>(j) + 1]; ++k)
      stamp[static_cast<size_t>(a.colind[static_cast<size_t>(k)])] = static_cast<I>(j);
  };
  int64_t total = a.nnz();
  for (int64_t j = 0; j < n; ++j) {
    mark(j);
    for (I k = tptr[static_cast<size_t>(j)]; k < tptr[static_cast<size_t>(j) + 1]; ++k)
      total += stamp[static_cast<size_t>(trow[static_cast<size_t>(k)])] != static_cast<I>(j);
  }
  if (total > static_cast<int64_t>(std::numeric_limits<I>::max()))
    too_large_for<I>(path, "nonzeros after symmetrize", total);

  HostCsr<I, V> s;
  s.rows = s.cols = n;
  s.rowptr.assign(static_cast<size_t>(n) + 1, I(0));
  s.colind.resize(static_cast<size_t>(total));
  if (has_v) s.values.resize(static_cast<size_t>(total));
  std::fill(stamp.begin(), stamp.end(), I(-1));
  I w = 0;
  for (int64_t j = 0; j < n; ++j) {
    mark(j);
    for (I k = a.rowptr[static_cast<size_t>(j)]; k < a.rowptr[static_cast<size_t>(j) + 1]; ++k) {
      s.colind[static_cast<size_t>(w)] = a.colind[static_cast<size_t>(k)];
      if (has_v) s.values[static_cast<size_t>(w)] = a.values[static_cast<size_t>(k)];
      ++w;
    }
    for (I k = tptr[static_cast<size_t>(j)]; k < tptr[static_cast<size_t>(j) + 1]; ++k) {
      if (stamp[static_cast<size_t>(trow[static_cast<size_t>(k)])] == static_cast<I>(j)) continue;
      s.colind[static_cast<size_t>(w)] = trow[static_cast<size_t>(k)];
      if (has_v) s.values[static_cast<size_t>(w)] = tval[static_cast<size_t>(k)];
      ++w;
    }
    s.rowptr[static_cast<size_t>(j) + 1] = w;
  }
  return s;
}

template <class I, class V>
HostCsr<I, V> read_matrix_market_unguarded(const std::string& path, const MmReadOptions& opt, MmHeader* header) {
  Parser ps(path, kChunkBytes, opt.progress ? &opt.progress : nullptr);
  ps.read_header();
  const MmHeader h = ps.header();
  if (header != nullptr) *header = h;
  constexpr int64_t kMaxI = std::numeric_limits<I>::max();
  if (h.rows > kMaxI || h.cols > kMaxI)
    throw InvalidArgument("read_matrix_market: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ", more rows or columns than " + std::to_string(sizeof(I) * 8) +
                          "-bit indices can hold (" + std::to_string(kMaxI) + "); read it with int64_t indices.");
  if (h.format == MmFormat::coordinate && h.entries > kMaxI && !opt.drop_self_loops)
    too_large_for<I>(path, "entries", h.entries);
  if (opt.symmetrize && h.symmetry == MmSymmetry::general && h.rows != h.cols)
    throw InvalidArgument("read_matrix_market: symmetrize needs a square matrix, but " + path + " is " +
                          std::to_string(h.rows) + "x" + std::to_string(h.cols) + ".");
  check_host_memory("read_matrix_market", path, h.rows, h.cols,
                    (static_cast<long double>(h.rows) + 1) * sizeof(I), "its row pointers alone need");

  const bool values = opt.keep_values && h.field != MmField::pattern;
  const bool array = h.format == MmFormat::array;
  std::vector<I> ri, ci;
  std::vector<V> vals;
  const int64_t reserve = array ? std::min<int64_t>(ps.entries_to_reserve(), int64_t{1} << 22) : ps.entries_to_reserve();
  ri.reserve(static_cast<size_t>(reserve));
  ci.reserve(static_cast<size_t>(reserve));
  if (values) vals.reserve(static_cast<size_t>(reserve));
  int64_t diag = 0;
  int64_t kept = 0;  // entries of the result so far: stop reading as soon as they cannot fit I
  const bool mirrored = h.symmetry != MmSymmetry::general;
  ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
    if (array && v == V(0)) return;  // array files keep their nonzeros
    kept += r == c ? (opt.drop_self_loops ? 0 : 1) : (mirrored ? 2 : 1);
    if (kept > kMaxI)
      throw InvalidArgument("read_matrix_market: " + path + " holds more than " + std::to_string(kMaxI) +
                            (mirrored ? " nonzeros after symmetric expansion" : " nonzeros") + " (counted after " +
                            std::to_string(ri.size() + 1) + " stored entries), more than " +
                            std::to_string(sizeof(I) * 8) + "-bit indices can hold; read it with int64_t indices.");
    ri.push_back(static_cast<I>(r));
    ci.push_back(static_cast<I>(c));
    if (values) vals.push_back(v);
    diag += r == c;
  });

  const int64_t stored = static_cast<int64_t>(ri.size());
  const bool mirror = h.symmetry != MmSymmetry::general;
  const int64_t total = stored - (opt.drop_self_loops ? diag : 0) + (mirror ? stored - diag : 0);
  if (total > kMaxI) too_large_for<I>(path, mirror ? "nonzeros after symmetric expansion" : "nonzeros", total);
  HostCsr<I, V> a = coo_to_csr<I, V>(h.rows, h.cols, ri, ci, vals, mirror, h.symmetry == MmSymmetry::skew_symmetric,
                                     opt.drop_self_loops, total);
  std::vector<I>().swap(ri);
  std::vector<I>().swap(ci);
  std::vector<V>().swap(vals);
  if (opt.sort_and_merge) sort_and_merge_rows(a);
  if (opt.symmetrize && h.symmetry == MmSymmetry::general) {
    a = symmetrize_pattern(a, path);
    // The mirrors were appended after each row's own entries; there are no new duplicates.
    if (opt.sort_and_merge) sort_and_merge_rows(a);
  }
  if (opt.progress) opt.progress(1.0);
  return a;
}

}  // namespace

// What fits the index type can still be more than the host can hold.
template <class I, class V>
HostCsr<I, V> read_matrix_market(const std::string& path, const MmReadOptions& opt, MmHeader* header) {
  try {
    return read_matrix_market_unguarded<I, V>(path, opt, header);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("read_matrix_market: " + path +
                          " needs more host memory than could be allocated (std::bad_alloc) for its entries and CSR",
                      ENOMEM, "std::bad_alloc");
  }
}

template <class V>
HostDense<V> read_matrix_market_dense(const std::string& path) {
  Parser ps(path, kChunkBytes, nullptr);
  ps.read_header();
  const MmHeader h = ps.header();
  if (h.cols != 0 && h.rows > static_cast<int64_t>(std::numeric_limits<ptrdiff_t>::max() / sizeof(V)) / h.cols)
    throw InvalidArgument("read_matrix_market_dense: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ", too large for a dense matrix.");
  // The dense matrix is allocated before the values are read: a size line the file cannot back
  // (truncated, or junk) must not cost rows x cols of memory first.
  if (const int64_t room = ps.entries_file_can_hold(2); h.format == MmFormat::array && room >= 0 && h.entries > room)
    ps.fail(ps.size_line(), "the size line announces " + std::to_string(h.entries) + " values, but the file (" +
                                std::to_string(ps.file_bytes()) + (ps.gzip() ? " bytes of gzip data" : " bytes") +
                                ") can hold at most " + std::to_string(room) +
                                "; it is truncated or the size line is wrong.");
  check_host_memory("read_matrix_market_dense", path, h.rows, h.cols,
                    static_cast<long double>(h.rows) * static_cast<long double>(h.cols) * sizeof(V),
                    "a dense matrix needs");
  HostDense<V> d;
  try {
    d = HostDense<V>(h.rows, h.cols);
  } catch (const std::bad_alloc&) {
    const size_t bytes = static_cast<size_t>(h.rows) * static_cast<size_t>(h.cols) * sizeof(V);
    throw OutOfMemory("read_matrix_market_dense: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ": " + std::to_string(bytes) +
                          " bytes of host memory could not be allocated (std::bad_alloc)",
                      ENOMEM, "std::bad_alloc", bytes);
  }
  const V sign = h.symmetry == MmSymmetry::skew_symmetric ? V(-1) : V(1);
  const bool mirror = h.symmetry != MmSymmetry::general;
  if (h.format == MmFormat::array) {
    ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
      d(r, c) = v;
      if (mirror && r != c) d(c, r) = sign * v;
    });
  } else {
    ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
      d(r, c) += v;
      if (mirror && r != c) d(c, r) += sign * v;
    });
  }
  return d;
}

#define SPARSEPORT_MM_READ(I, V) \
  template HostCsr<I, V> read_matrix_market<I, V>(const std::string&, const MmReadOptions&, MmHeader*);
SPARSEPORT_MM_READ(int32_t, float)
SPARSEPORT_MM_READ(int32_t, double)
SPARSEPORT_MM_READ(int64_t, float)
SPARSEPORT_MM_READ(int64_t, double)
#undef SPARSEPORT_MM_READ

template HostDense<float> read_matrix_market_dense<float>(const std::string&);
template HostDense<double> read_matrix_market_dense<double>(const std::string&);

}  // namespace sparseport
