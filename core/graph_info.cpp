// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"

namespace sparseport {
namespace {

[[noreturn]] void invalid(const std::string& problem) {
  throw InvalidArgument("sparseport::graph_info: " + problem + ".");
}

// Index (0-based) of the nearest-rank Q-th percentile among n sorted values: ceil(Q*n/100) - 1,
// written so that Q*n cannot overflow.
int64_t nearest_rank(int64_t n, int64_t q) {
  const int64_t rank = (n / 100) * q + ((n % 100) * q + 99) / 100;
  return std::max<int64_t>(rank, 1) - 1;
}

// The same matrix with each row sorted by column and repeated columns added up; only needed when
// the input is not canonical already, so the usual case pays no sort.
template <class I, class V>
HostCsr<I, V> canonical_copy(const HostCsr<I, V>& a) {
  HostCsr<I, V> c;
  c.rows = a.rows;
  c.cols = a.cols;
  c.rowptr.assign(a.rowptr.size(), 0);
  c.colind.reserve(a.colind.size());
  if (!a.is_pattern()) c.values.reserve(a.values.size());
  std::vector<std::pair<I, V>> row;
  for (int64_t i = 0; i < a.rows; ++i) {
    row.clear();
    for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
      row.emplace_back(a.colind[static_cast<size_t>(k)], a.is_pattern() ? V(1) : a.values[static_cast<size_t>(k)]);
    // Stable, so repeated entries add up in their stored order: the same sum on every run.
    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t t = 0; t < row.size(); ++t) {
      if (t > 0 && row[t].first == row[t - 1].first) {
        if (!a.is_pattern()) c.values.back() += row[t].second;
        continue;
      }
      c.colind.push_back(row[t].first);
      if (!a.is_pattern()) c.values.push_back(row[t].second);
    }
    c.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(c.colind.size());
  }
  return c;
}

// Symmetry of a canonical square matrix: the transpose by counting lists each column's rows in
// ascending order, so A == A^T exactly when the column counts equal the row counts and the two
// arrays agree element by element.
template <class I, class V>
std::pair<bool, bool> symmetry(const HostCsr<I, V>& a) {
  const auto n = static_cast<size_t>(a.rows);
  std::vector<I> count(n + 1, 0);
  for (const I j : a.colind) ++count[static_cast<size_t>(j) + 1];
  for (size_t i = 0; i < n; ++i)
    if (count[i + 1] != a.rowptr[i + 1] - a.rowptr[i]) return {false, false};
  std::vector<I> cursor(a.rowptr.begin(), a.rowptr.end() - 1);  // column starts == row starts now
  std::vector<I> trow(a.colind.size());
  std::vector<V> tval(a.values.size());
  for (size_t i = 0; i < n; ++i)
    for (I k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
      const I p = cursor[static_cast<size_t>(a.colind[static_cast<size_t>(k)])]++;
      trow[static_cast<size_t>(p)] = static_cast<I>(i);
      if (!a.is_pattern()) tval[static_cast<size_t>(p)] = a.values[static_cast<size_t>(k)];
    }
  if (trow != a.colind) return {false, false};
  return {true, a.is_pattern() || tval == a.values};
}

}  // namespace

template <class I, class V>
GraphInfo graph_info(const HostCsr<I, V>& a) {
  GraphInfo g;
  g.rows = a.rows;
  g.cols = a.cols;
  g.nnz = a.nnz();
  if (a.rows < 0 || a.cols < 0)
    invalid("the matrix is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) + " (need non-negative sizes)");
  if (static_cast<int64_t>(a.rowptr.size()) != a.rows + 1)
    invalid("rowptr has " + std::to_string(a.rowptr.size()) + " entries for " + std::to_string(a.rows) +
            " rows (need rows + 1)");
  if (a.rowptr[0] != 0) invalid("rowptr[0] is " + std::to_string(a.rowptr[0]) + " (need 0)");
  if (a.rowptr.back() != a.nnz())
    invalid("rowptr[" + std::to_string(a.rows) + "] is " + std::to_string(a.rowptr.back()) + " but colind has " +
            std::to_string(a.nnz()) + " entries");
  if (!a.is_pattern() && a.values.size() != a.colind.size())
    invalid("values has " + std::to_string(a.values.size()) + " entries but colind has " + std::to_string(a.nnz()));

  // Monotone with rowptr[0] == 0 and rowptr[rows] == nnz keeps every row inside colind.
  for (int64_t i = 0; i < a.rows; ++i) {
    const I b = a.rowptr[static_cast<size_t>(i)], e = a.rowptr[static_cast<size_t>(i) + 1];
    if (e < b)
      invalid("rowptr decreases at row " + std::to_string(i) + " (" + std::to_string(b) + " then " + std::to_string(e) + ")");
  }

  bool canonical = true;  // columns ascending and unique in every row
  std::vector<int64_t> deg(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i) {
    const I b = a.rowptr[static_cast<size_t>(i)], e = a.rowptr[static_cast<size_t>(i) + 1];
    deg[static_cast<size_t>(i)] = e - b;
    g.deg_max = std::max<int64_t>(g.deg_max, e - b);
    if (e == b) ++g.empty_rows;
    for (I k = b; k < e; ++k) {
      const I j = a.colind[static_cast<size_t>(k)];
      if (j < 0 || j >= a.cols)
        invalid("row " + std::to_string(i) + " has column " + std::to_string(j) + ", outside [0, " +
                std::to_string(a.cols) + ")");
      if (j == i) ++g.self_loops;
      if (k > b && j <= a.colind[static_cast<size_t>(k) - 1]) canonical = false;
    }
  }

  if (a.rows > 0) {
    g.deg_mean = static_cast<double>(g.nnz) / static_cast<double>(a.rows);
    g.skew = g.deg_mean > 0 ? static_cast<double>(g.deg_max) / g.deg_mean : 0.0;
    // nth_element leaves everything below the k-th to its left, so each smaller quantile is
    // searched in what is left of the previous one: O(rows) for all three.
    const int64_t k99 = nearest_rank(a.rows, 99), k90 = nearest_rank(a.rows, 90), k50 = nearest_rank(a.rows, 50);
    std::nth_element(deg.begin(), deg.begin() + k99, deg.end());
    std::nth_element(deg.begin(), deg.begin() + k90, deg.begin() + k99 + 1);
    std::nth_element(deg.begin(), deg.begin() + k50, deg.begin() + k90 + 1);
    g.deg_p99 = deg[static_cast<size_t>(k99)];
    g.deg_p90 = deg[static_cast<size_t>(k90)];
    g.deg_p50 = deg[static_cast<size_t>(k50)];
  }
  deg = {};

  if (a.rows == a.cols) {
    const auto [pattern_sym, sym] = canonical ? symmetry(a) : symmetry(canonical_copy(a));
    g.pattern_symmetric = pattern_sym;
    g.symmetric = sym;
  }
  return g;
}

#define SPARSEPORT_INSTANTIATE(I, V) template GraphInfo graph_info<I, V>(const HostCsr<I, V>&);
SPARSEPORT_INSTANTIATE(int32_t, float)
SPARSEPORT_INSTANTIATE(int32_t, double)
SPARSEPORT_INSTANTIATE(int64_t, float)
SPARSEPORT_INSTANTIATE(int64_t, double)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport
