// SPDX-License-Identifier: Apache-2.0
// choose_partition: the entry-balanced rows or METIS, by the predicted halo (dist.hpp says the
// rule and where its constants come from). Host-only, no MPI calls.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/errors.hpp"
#include "src/dist/csr_access.hpp"

namespace sparseport::dist {
namespace {

using detail::with_indices;

// max(largest row degree, largest column degree) / (entries / rows); 0 without entries.
double degree_skew(const CsrView& a) {
  if (a.nnz == 0 || a.rows == 0) return 0.0;
  int64_t max_row = 0, max_col = 0;
  std::vector<int64_t> col(static_cast<size_t>(a.cols), 0);
  with_indices(a, [&](const auto* rp, const auto* ci) {
    for (int64_t i = 0; i < a.rows; ++i) max_row = std::max<int64_t>(max_row, static_cast<int64_t>(rp[i + 1] - rp[i]));
    for (int64_t e = 0; e < a.nnz; ++e) max_col = std::max(max_col, ++col[static_cast<size_t>(ci[e])]);
  });
  const double mean = static_cast<double>(a.nnz) / static_cast<double>(a.rows);
  return static_cast<double>(std::max(max_row, max_col)) / mean;
}

// predict_halo of permute_symmetric(A, perm) under p, without building the permuted matrix: new
// row i is old row perm[i], column j becomes inv[j] (the same count: a column's owner and whether
// a receiver counted it do not depend on the order of a row's entries).
HaloVolume predict_relabelled(const CsrView& a, const std::vector<int64_t>& perm, const Partition& p) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  HaloVolume h;
  h.ranks = p.ranks();
  h.rows.assign(static_cast<size_t>(h.ranks) * static_cast<size_t>(h.ranks), 0);
  std::vector<int> stamp(static_cast<size_t>(a.cols), -1);
  with_indices(a, [&](const auto* rp, const auto* ci) {
    for (int r = 0; r < h.ranks; ++r) {
      const int64_t c0 = p.col_starts[static_cast<size_t>(r)], c1 = p.col_starts[static_cast<size_t>(r) + 1];
      for (int64_t i = p.row_starts[static_cast<size_t>(r)]; i < p.row_starts[static_cast<size_t>(r) + 1]; ++i) {
        const int64_t o = perm[static_cast<size_t>(i)];
        for (int64_t e = rp[o]; e < rp[o + 1]; ++e) {
          const int64_t c = inv[static_cast<size_t>(ci[e])];
          if ((c >= c0 && c < c1) || stamp[static_cast<size_t>(c)] == r) continue;
          stamp[static_cast<size_t>(c)] = r;
          ++h.rows[static_cast<size_t>(p.owner_of_col(c)) * static_cast<size_t>(h.ranks) + static_cast<size_t>(r)];
        }
      }
    }
  });
  return h;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string_view name(PartitionPolicy p) {
  switch (p) {
    case PartitionPolicy::rows: return "rows";
    case PartitionPolicy::metis: return "metis";
    default: return "auto";
  }
}

PartitionPolicy partition_policy_from_name(std::string_view text, const std::string& what) {
  if (text == "auto") return PartitionPolicy::automatic;
  if (text == "rows") return PartitionPolicy::rows;
  if (text == "metis") return PartitionPolicy::metis;
  throw InvalidArgument("sparseport::dist: " + what + " is '" + std::string(text) + "'; expected auto, rows or metis");
}

PartitionPolicy partition_policy_from_env() {
  const char* env = std::getenv("SPARSEPORT_DIST_PARTITION");
  if (env == nullptr || *env == '\0') return PartitionPolicy::automatic;
  return partition_policy_from_name(env, "SPARSEPORT_DIST_PARTITION");
}

PartitionChoice choose_partition(const CsrView& a, int ranks, PartitionPolicy policy) {
  PartitionChoice c;
  c.partition = partition_rows_by_entries(a, ranks);  // checks ranks and A
  c.rows_halo = predict_halo(a, c.partition);
  c.degree_skew = degree_skew(a);
  const int64_t rows_total = c.rows_halo.total_rows();
  const std::string skew = fixed(c.degree_skew, 1);

  const auto run_metis = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    Relabelled r = partition_metis(a, ranks);
    c.metis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    c.metis_ran = true;
    c.metis_halo = predict_relabelled(a, r.perm, r.partition);
    return r;
  };
  const auto use_metis = [&](Relabelled r, std::string why) {
    c.used = PartitionPolicy::metis;
    c.partition = std::move(r.partition);
    c.perm = std::move(r.perm);
    c.reason = std::move(why);
  };

  if (policy == PartitionPolicy::rows) {
    c.reason = "rows forced (entry-balanced contiguous rows)";
    return c;
  }
  if (policy == PartitionPolicy::metis) {
    Relabelled r = run_metis();
    use_metis(std::move(r), "metis forced");
    return c;
  }
  if (ranks == 1) {
    c.reason = "one rank: no halo";
  } else if (a.rows != a.cols) {
    c.reason = "A is not square (METIS partitions a graph's vertices)";
  } else if (rows_total == 0) {
    c.reason = "the entry-balanced rows move no halo";
  } else if (c.degree_skew < kMetisMinSkew) {
    c.reason = "degree skew " + skew + " is below " + fixed(kMetisMinSkew, 0) + ": METIS not tried";
  } else if (!has_metis()) {
    // Last: the reason names what decided, and a build without METIS decides only where METIS would run.
    c.reason = "degree skew " + skew + " would try METIS, but sparseport::dist is built without METIS (SPARSEPORT_ENABLE_METIS=OFF)";
  } else {
    Relabelled r = run_metis();
    const int64_t metis_total = c.metis_halo.total_rows();
    const double gain = 1.0 - static_cast<double>(metis_total) / static_cast<double>(rows_total);
    const std::string compared = "degree skew " + skew + "; METIS's halo " + std::to_string(metis_total) +
                                 " rows against " + std::to_string(rows_total) + " (" +
                                 (gain >= 0 ? fixed(100.0 * gain, 1) + "% lower"
                                            : fixed(-100.0 * gain, 1) + "% higher");
    if (static_cast<double>(metis_total) <= (1.0 - kMetisMargin) * static_cast<double>(rows_total))
      use_metis(std::move(r), compared + ", at least " + fixed(100.0 * kMetisMargin, 0) + "%)");
    else
      c.reason = compared + ", less than the " + fixed(100.0 * kMetisMargin, 0) + "% needed): rows kept";
  }
  return c;
}

}  // namespace sparseport::dist
