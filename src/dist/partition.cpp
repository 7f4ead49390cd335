// SPDX-License-Identifier: Apache-2.0
// Partitions and the halo prediction: host-only, no MPI calls.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/errors.hpp"
#include "src/dist/csr_access.hpp"

namespace sparseport::dist {
namespace {

using detail::check_structure;
using detail::with_indices;


int owner_in(const std::vector<int64_t>& starts, int64_t i) {
  // The last range whose start is <= i: empty ranges before a non-empty one are skipped.
  const auto it = std::upper_bound(starts.begin(), starts.end() - 1, i);
  return static_cast<int>(it - starts.begin()) - 1;
}

std::vector<int64_t> even_split(int64_t n, int ranks) {
  std::vector<int64_t> s(static_cast<size_t>(ranks) + 1);
  // floor(n * r / ranks) without forming n * r, which overflows for n near 2^62.
  for (int r = 0; r <= ranks; ++r) s[static_cast<size_t>(r)] = n / ranks * r + n % ranks * r / ranks;
  return s;
}

void check_starts(const std::vector<int64_t>& s, int64_t n, const char* what, const char* fn) {
  const std::string w = std::string("sparseport::dist::") + fn + ": ";
  if (s.size() < 2)
    throw InvalidArgument(w + what + " needs ranks + 1 >= 2 entries, but has " + std::to_string(s.size()));
  if (s.front() != 0 || s.back() != n)
    throw InvalidArgument(w + what + " must run from 0 to " + std::to_string(n) + ", but runs from " +
                          std::to_string(s.front()) + " to " + std::to_string(s.back()));
  for (size_t r = 0; r + 1 < s.size(); ++r)
    if (s[r + 1] < s[r])
      throw InvalidArgument(w + what + " decreases at rank " + std::to_string(r) + " (" + std::to_string(s[r]) +
                            " then " + std::to_string(s[r + 1]) + ")");
}

}  // namespace

int Partition::owner_of_row(int64_t row) const { return owner_in(row_starts, row); }
int Partition::owner_of_col(int64_t col) const { return owner_in(col_starts, col); }

namespace {

// Row i weighs deg(i) + w; boundary r is the row boundary nearest to r / ranks of the total weight.
Partition rows_by_weight(const CsrView& a, int ranks, long double w) {
  std::vector<int64_t> starts(static_cast<size_t>(ranks) + 1, 0);
  starts.back() = a.rows;
  with_indices(a, [&](const auto* rp, const auto*) {
    // prefix(i) = weight of rows [0, i) = rowptr[i] + w * i.
    const auto prefix = [&](int64_t i) { return static_cast<long double>(rp[i]) + w * static_cast<long double>(i); };
    const long double total = prefix(a.rows);
    int64_t i = 0;
    for (int r = 1; r < ranks; ++r) {
      const long double target = total * r / ranks;
      while (i < a.rows && prefix(i + 1) <= target) ++i;
      // prefix(i) <= target < prefix(i + 1): the nearer boundary (ties keep the earlier).
      int64_t b = i;
      if (i < a.rows && prefix(i + 1) - target < target - prefix(i)) b = i + 1;
      starts[static_cast<size_t>(r)] = std::max(b, starts[static_cast<size_t>(r) - 1]);
    }
  });
  return partition_from_row_starts(std::move(starts), a.cols);
}

}  // namespace

Partition partition_rows_by_entries(const CsrView& a, int ranks) {
  if (ranks < 1)
    throw InvalidArgument("sparseport::dist::partition_rows_by_entries: ranks is " + std::to_string(ranks) +
                          " but must be at least 1");
  check_structure(a, "partition_rows_by_entries");
  return rows_by_weight(a, ranks, 1);
}

Partition partition_rows_by_cost(const CsrView& a, int ranks, double row_weight) {
  if (ranks < 1)
    throw InvalidArgument("sparseport::dist::partition_rows_by_cost: ranks is " + std::to_string(ranks) +
                          " but must be at least 1");
  if (!(row_weight >= 0) || !std::isfinite(row_weight))
    throw InvalidArgument("sparseport::dist::partition_rows_by_cost: row_weight is " + std::to_string(row_weight) +
                          " but must be finite and at least 0");
  check_structure(a, "partition_rows_by_cost");
  return rows_by_weight(a, ranks, row_weight);
}

namespace {

// The least-squares a, b >= 0 of ms = a * entries + b * rows over the ranks (no intercept: an
// empty block costs nothing); false where the ranks cannot tell the two apart.
bool fit_costs(const std::vector<RankCost>& ranks, double* a, double* b) {
  long double ee = 0, en = 0, nn = 0, et = 0, nt = 0;
  for (const RankCost& r : ranks) {
    if (r.entries < 0 || r.rows < 0 || !(r.ms >= 0) || !std::isfinite(r.ms)) return false;
    const long double e = static_cast<long double>(r.entries), n = static_cast<long double>(r.rows), t = r.ms;
    ee += e * e, en += e * n, nn += n * n, et += e * t, nt += n * t;
  }
  const long double det = ee * nn - en * en;
  // Blocks of one shape (every rank's entries / rows the same ratio) leave the system singular.
  if (!(det > 1e-9L * ee * nn)) return false;
  const long double fa = (et * nn - nt * en) / det, fb = (nt * ee - et * en) / det;
  if (!(fa > 0) || fb < 0) return false;
  *a = static_cast<double>(fa);
  *b = static_cast<double>(fb);
  return true;
}

}  // namespace

double fit_row_weight(const std::vector<RankCost>& ranks, double fallback) {
  double a = 0, b = 0;
  if (!fit_costs(ranks, &a, &b)) return fallback;
  return std::clamp(b / a, 0.0, 1e4);
}

double predicted_imbalance(const CsrView& a, const Partition& p, const std::vector<RankCost>& measured) {
  check_structure(a, "predicted_imbalance");
  double ca = 0, cb = 0;
  if (!fit_costs(measured, &ca, &cb) || p.rows() != a.rows) return 1.0;
  double worst = 0, sum = 0;
  with_indices(a, [&](const auto* rp, const auto*) {
    for (int r = 0; r < p.ranks(); ++r) {
      const int64_t lo = p.row_starts[static_cast<size_t>(r)], hi = p.row_starts[static_cast<size_t>(r) + 1];
      const double t = ca * static_cast<double>(rp[hi] - rp[lo]) + cb * static_cast<double>(hi - lo);
      worst = std::max(worst, t);
      sum += t;
    }
  });
  return sum > 0 ? worst * p.ranks() / sum : 1.0;
}

Partition partition_from_row_starts(std::vector<int64_t> row_starts, int64_t cols) {
  if (row_starts.size() < 2)
    throw InvalidArgument(
        "sparseport::dist::partition_from_row_starts: row_starts needs ranks + 1 >= 2 entries, but has " +
        std::to_string(row_starts.size()));
  check_starts(row_starts, row_starts.back(), "row_starts", "partition_from_row_starts");
  const int ranks = static_cast<int>(row_starts.size()) - 1;
  Partition p;
  p.col_starts = row_starts.back() == cols ? row_starts : even_split(cols, ranks);
  p.row_starts = std::move(row_starts);
  return p;
}

int64_t HaloVolume::total_rows() const {
  int64_t t = 0;
  for (const int64_t n : rows) t += n;
  return t;
}

int64_t HaloVolume::sent_rows(int rank) const {
  int64_t t = 0;
  for (int r = 0; r < ranks; ++r) t += between(rank, r);
  return t;
}

int64_t HaloVolume::received_rows(int rank) const {
  int64_t t = 0;
  for (int s = 0; s < ranks; ++s) t += between(s, rank);
  return t;
}

int64_t HaloPlan::recv_total() const {
  int64_t t = 0;
  for (const int64_t n : recv_counts) t += n;
  return t;
}

// Independent of how DistCsr builds its plan (sort and unique per rank): one pass over the entries
// with a stamp per column, so that the test comparing the two checks something.
HaloVolume predict_halo(const CsrView& a, const Partition& p) {
  check_structure(a, "predict_halo");
  if (p.rows() != a.rows || p.cols() != a.cols)
    throw DimensionMismatch("sparseport::dist::predict_halo: the partition covers " + std::to_string(p.rows()) + " x " +
                            std::to_string(p.cols()) + " but A is " + std::to_string(a.rows) + " x " +
                            std::to_string(a.cols));
  check_starts(p.row_starts, a.rows, "row_starts", "predict_halo");
  check_starts(p.col_starts, a.cols, "col_starts", "predict_halo");
  if (p.col_starts.size() != p.row_starts.size())
    throw InvalidArgument("sparseport::dist::predict_halo: row_starts and col_starts have different lengths");
  HaloVolume h;
  h.ranks = p.ranks();
  h.rows.assign(static_cast<size_t>(h.ranks) * static_cast<size_t>(h.ranks), 0);
  std::vector<int> stamp(static_cast<size_t>(a.cols), -1);  // the last receiver that counted the column
  with_indices(a, [&](const auto* rp, const auto* ci) {
    for (int r = 0; r < h.ranks; ++r) {
      const int64_t c0 = p.col_starts[static_cast<size_t>(r)], c1 = p.col_starts[static_cast<size_t>(r) + 1];
      for (int64_t e = rp[p.row_starts[static_cast<size_t>(r)]]; e < rp[p.row_starts[static_cast<size_t>(r) + 1]];
           ++e) {
        const int64_t c = ci[e];
        if ((c >= c0 && c < c1) || stamp[static_cast<size_t>(c)] == r) continue;
        stamp[static_cast<size_t>(c)] = r;
        ++h.rows[static_cast<size_t>(p.owner_of_col(c)) * static_cast<size_t>(h.ranks) + static_cast<size_t>(r)];
      }
    }
  });
  return h;
}

}  // namespace sparseport::dist
