// SPDX-License-Identifier: Apache-2.0
// Matrix Market writing (graph.hpp): the checks of the CSR, the lower triangle of a symmetric or
// skew-symmetric file (after checking that A is one), and the coordinate and array writers.
// Separate from reading: it shares only the file layer (Output) and the field and symmetry names.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "core/matrix_market_internal.hpp"

namespace sparseport {

using namespace detail::mm;

namespace {

inline char* put_int(char* q, int64_t x) { return std::to_chars(q, q + 24, x).ptr; }
template <class V>
inline char* put_real(char* q, V x) {
  return std::to_chars(q, q + 64, x).ptr;  // shortest text that reads back as the same V
}

template <class V>
std::string value_text(V x) {
  char buf[64];
  return std::string(buf, put_real(buf, x));
}

template <class I, class V>
void check_csr(const HostCsr<I, V>& a) {
  const std::string op = "write_matrix_market";
  if (a.rows < 0 || a.cols < 0)
    throw InvalidArgument(op + ": A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                          " (dimensions must be >= 0).");
  if (static_cast<int64_t>(a.rowptr.size()) != a.rows + 1)
    throw InvalidArgument(op + ": A.rowptr has " + std::to_string(a.rowptr.size()) + " entries but A has " +
                          std::to_string(a.rows) + " rows (need rows + 1).");
  if (a.rowptr[0] != 0 || static_cast<int64_t>(a.rowptr.back()) != a.nnz())
    throw InvalidArgument(op + ": A.rowptr runs from " + std::to_string(a.rowptr[0]) + " to " +
                          std::to_string(a.rowptr.back()) + " but must run from 0 to nnz = " + std::to_string(a.nnz()) +
                          ".");
  if (!a.values.empty() && static_cast<int64_t>(a.values.size()) != a.nnz())
    throw InvalidArgument(op + ": A has " + std::to_string(a.values.size()) + " values but " +
                          std::to_string(a.nnz()) + " column indices.");
  for (int64_t i = 0; i < a.rows; ++i)
    if (a.rowptr[static_cast<size_t>(i) + 1] < a.rowptr[static_cast<size_t>(i)])
      throw InvalidArgument(op + ": A.rowptr decreases at row " + std::to_string(i) + ".");
  for (size_t k = 0; k < a.colind.size(); ++k)
    if (a.colind[k] < 0 || a.colind[k] >= a.cols)
      throw InvalidArgument(op + ": A.colind[" + std::to_string(k) + "] = " + std::to_string(a.colind[k]) +
                            " is outside 0.." + std::to_string(a.cols - 1) + ".");
}

struct Triple {
  int64_t r, c;
  double v;
};

// The lower triangle to write for a symmetric or skew-symmetric file, after checking that A
// (duplicates added up) is one.
template <class I, class V>
std::vector<Triple> symmetric_lower(const HostCsr<I, V>& a, MmSymmetry sym, bool pattern) {
  const std::string op = "write_matrix_market";
  if (a.rows != a.cols)
    throw InvalidArgument(op + ": a " + std::string(name(sym)) + " file needs a square matrix, but A is " +
                          std::to_string(a.rows) + "x" + std::to_string(a.cols) + ".");
  std::vector<Triple> t;
  t.reserve(a.colind.size());
  for (int64_t i = 0; i < a.rows; ++i)
    for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
      t.push_back({i, static_cast<int64_t>(a.colind[static_cast<size_t>(k)]),
                   a.values.empty() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(k)])});
  // Already row-major; a stable sort by column within rows keeps the duplicates' order for the sum.
  std::stable_sort(t.begin(), t.end(), [](const Triple& x, const Triple& y) { return x.r != y.r ? x.r < y.r : x.c < y.c; });
  std::vector<Triple> m;  // duplicates added up
  for (const Triple& x : t) {
    if (!m.empty() && m.back().r == x.r && m.back().c == x.c)
      m.back().v = pattern ? 1.0 : m.back().v + x.v;
    else
      m.push_back(x);
  }
  // out: what the file holds; strict: its off-diagonal part; mirrored: the upper part transposed.
  std::vector<Triple> out, strict, mirrored;
  for (const Triple& x : m) {
    if (x.r > x.c) {
      out.push_back(x);
      strict.push_back(x);
    } else if (x.r < x.c) {
      mirrored.push_back({x.c, x.r, x.v});
    } else if (sym == MmSymmetry::symmetric) {
      out.push_back(x);
    } else if (x.v != 0) {
      throw InvalidArgument(op + ": a skew-symmetric matrix has a zero diagonal, but A(" + std::to_string(x.r + 1) +
                            "," + std::to_string(x.c + 1) + ") = " + value_text(x.v) + " (1-based).");
    }
  }
  const auto before = [](const Triple& x, const Triple& y) { return x.r != y.r ? x.r < y.r : x.c < y.c; };
  std::sort(mirrored.begin(), mirrored.end(), before);
  const double sign = sym == MmSymmetry::skew_symmetric ? -1.0 : 1.0;
  const std::string what = sym == MmSymmetry::skew_symmetric ? "skew-symmetric" : "symmetric";
  auto pos = [](int64_t r, int64_t c) { return "A(" + std::to_string(r + 1) + "," + std::to_string(c + 1) + ")"; };
  auto unmatched = [&](int64_t r, int64_t c) {
    throw InvalidArgument(op + ": A is not " + what + ": " + pos(r, c) + " is stored but " + pos(c, r) +
                          " is not (1-based).");
  };
  size_t i = 0, u = 0;
  while (i < strict.size() || u < mirrored.size()) {
    if (u == mirrored.size() || (i < strict.size() && before(strict[i], mirrored[u]))) unmatched(strict[i].r, strict[i].c);
    if (i == strict.size() || before(mirrored[u], strict[i])) unmatched(mirrored[u].c, mirrored[u].r);
    if (!pattern && mirrored[u].v != sign * strict[i].v)
      throw InvalidArgument(op + ": A is not " + what + ": " + pos(strict[i].r, strict[i].c) + " = " +
                            value_text(strict[i].v) + " but " + pos(strict[i].c, strict[i].r) + " = " +
                            value_text(mirrored[u].v) + " (1-based).");
    ++i;
    ++u;
  }
  return out;
}

template <class V>
bool whole(V x) {
  return std::isfinite(x) && std::trunc(x) == x && std::fabs(static_cast<double>(x)) < 9.2e18;
}

}  // namespace

template <class I, class V>
void write_matrix_market(const std::string& path, const HostCsr<I, V>& a, const MmWriteOptions& opt) {
  check_csr(a);
  const MmField field = opt.field.value_or(a.is_pattern() ? MmField::pattern : MmField::real);
  if (field == MmField::integer)
    for (size_t k = 0; k < a.values.size(); ++k)
      if (!whole(a.values[k])) {
        const auto row = std::upper_bound(a.rowptr.begin(), a.rowptr.end(), static_cast<I>(k)) - a.rowptr.begin();
        throw InvalidArgument("write_matrix_market: field integer needs whole values, but A(" + std::to_string(row) +
                              "," + std::to_string(static_cast<int64_t>(a.colind[k]) + 1) +
                              ") = " + value_text(a.values[k]) + " (1-based).");
      }
  if (opt.symmetry == MmSymmetry::skew_symmetric && field == MmField::pattern)
    throw InvalidArgument("write_matrix_market: a skew-symmetric file cannot have field 'pattern'.");

  std::vector<Triple> lower;
  const bool general = opt.symmetry == MmSymmetry::general;
  if (!general) lower = symmetric_lower(a, opt.symmetry, field == MmField::pattern);

  Output out(path, "write_matrix_market");
  out.put(std::string("%%MatrixMarket matrix coordinate ") + name(field) + " " + name(opt.symmetry) + "\n");
  out.put(std::to_string(a.rows) + " " + std::to_string(a.cols) + " " +
          std::to_string(general ? a.nnz() : static_cast<int64_t>(lower.size())) + "\n");
  auto line = [&](int64_t r, int64_t c, auto v) {
    char* q = out.room();
    q = put_int(q, r + 1);
    *q++ = ' ';
    q = put_int(q, c + 1);
    if (field == MmField::real) {
      *q++ = ' ';
      q = put_real(q, v);
    } else if (field == MmField::integer) {
      *q++ = ' ';
      q = put_int(q, static_cast<int64_t>(v));
    }
    *q++ = '\n';
    out.done(q);
  };
  if (general) {
    for (int64_t i = 0; i < a.rows; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
        line(i, a.colind[static_cast<size_t>(k)], a.values.empty() ? V(1) : a.values[static_cast<size_t>(k)]);
  } else {
    // Sums of V were taken in double; write them back as V so they read back as the same V.
    for (const Triple& t : lower) line(t.r, t.c, static_cast<V>(t.v));
  }
  out.close();
}

template <class V>
void write_matrix_market_dense(const std::string& path, const HostDense<V>& a) {
  if (a.rows < 0 || a.cols < 0 || a.ld < a.cols ||
      (a.rows > 0 && static_cast<int64_t>(a.data.size()) < (a.rows - 1) * a.ld + a.cols))
    throw InvalidArgument("write_matrix_market_dense: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                          " with ld " + std::to_string(a.ld) + " but holds " + std::to_string(a.data.size()) +
                          " elements (need ld >= cols and (rows-1)*ld + cols elements).");
  Output out(path, "write_matrix_market_dense");
  out.put("%%MatrixMarket matrix array real general\n");
  out.put(std::to_string(a.rows) + " " + std::to_string(a.cols) + "\n");
  for (int64_t j = 0; j < a.cols; ++j)
    for (int64_t i = 0; i < a.rows; ++i) {
      char* q = put_real(out.room(), a(i, j));
      *q++ = '\n';
      out.done(q);
    }
  out.close();
}


#define SPARSEPORT_MM_WRITE(I, V) \
  template void write_matrix_market<I, V>(const std::string&, const HostCsr<I, V>&, const MmWriteOptions&);
SPARSEPORT_MM_WRITE(int32_t, float)
SPARSEPORT_MM_WRITE(int32_t, double)
SPARSEPORT_MM_WRITE(int64_t, float)
SPARSEPORT_MM_WRITE(int64_t, double)
#undef SPARSEPORT_MM_WRITE

template void write_matrix_market_dense<float>(const std::string&, const HostDense<float>&);
template void write_matrix_market_dense<double>(const std::string&, const HostDense<double>&);

}  // namespace sparseport
