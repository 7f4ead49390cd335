// SPDX-License-Identifier: Apache-2.0
// The METIS partition and the relabelling that makes it contiguous: host-only, no MPI calls.
// METIS is optional (SPARSEPORT_HAVE_METIS, linked PRIVATE into the dist library only).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/errors.hpp"
#include "src/dist/csr_access.hpp"

#if defined(SPARSEPORT_HAVE_METIS)
#include <metis.h>
#endif

namespace sparseport::dist {
namespace {

using detail::check_structure;
using detail::with_indices;


// inv[perm[i]] = i; InvalidArgument unless perm is a permutation of [0, n).
std::vector<int64_t> inverse_of(const std::vector<int64_t>& perm, int64_t n, const char* fn) {
  const std::string w = std::string("sparseport::dist::") + fn + ": ";
  if (static_cast<int64_t>(perm.size()) != n)
    throw InvalidArgument(w + "perm has " + std::to_string(perm.size()) + " entries but the matrix has " +
                          std::to_string(n) + " rows");
  std::vector<int64_t> inv(static_cast<size_t>(n), -1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = perm[static_cast<size_t>(i)];
    if (o < 0 || o >= n)
      throw InvalidArgument(w + "perm[" + std::to_string(i) + "] is " + std::to_string(o) + ", outside [0, " +
                            std::to_string(n) + ")");
    if (inv[static_cast<size_t>(o)] >= 0)
      throw InvalidArgument(w + "perm is not a permutation: " + std::to_string(o) + " occurs at " +
                            std::to_string(inv[static_cast<size_t>(o)]) + " and at " + std::to_string(i));
    inv[static_cast<size_t>(o)] = i;
  }
  return inv;
}

#if defined(SPARSEPORT_HAVE_METIS)
// The pattern of A + A^T without self loops (sorted, distinct), in METIS's index type, and the
// vertex weights deg(i) + 1.
void symmetric_graph(const CsrView& a, std::vector<idx_t>& xadj, std::vector<idx_t>& adj, std::vector<idx_t>& vwgt) {
  const int64_t n = a.rows;
  constexpr int64_t kMax = std::numeric_limits<idx_t>::max();
  const auto too_big = [&](const std::string& what, long double v) {
    throw Unsupported("sparseport::dist::partition_metis: the symmetrised graph has " + what + " " +
                      std::to_string(static_cast<long long>(v)) + ", more than METIS's idx_t holds (" +
                      std::to_string(kMax) + "; METIS was built with IDXTYPEWIDTH " +
                      std::to_string(IDXTYPEWIDTH) + ")");
  };
  if (n > kMax) too_big("vertices", static_cast<long double>(n));
  // METIS sums the vertex weights (entries + rows) in idx_t too.
  if (static_cast<long double>(a.nnz) + static_cast<long double>(n) > static_cast<long double>(kMax))
    too_big("a total vertex weight (entries + rows) of", static_cast<long double>(a.nnz) + static_cast<long double>(n));
  std::vector<int64_t> cnt(static_cast<size_t>(n) + 1, 0);
  with_indices(a, [&](const auto* rp, const auto* ci) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t deg = static_cast<int64_t>(rp[i + 1] - rp[i]);
      if (deg + 1 > kMax) too_big("a vertex weight", static_cast<long double>(deg + 1));
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
        const int64_t j = ci[e];
        if (j == i) continue;
        ++cnt[static_cast<size_t>(i) + 1];
        ++cnt[static_cast<size_t>(j) + 1];
      }
    }
  });
  for (int64_t i = 0; i < n; ++i) cnt[static_cast<size_t>(i) + 1] += cnt[static_cast<size_t>(i)];
  std::vector<int64_t> both(static_cast<size_t>(cnt.back()));
  std::vector<int64_t> pos(cnt.begin(), cnt.end() - 1);
  vwgt.assign(static_cast<size_t>(n), 1);
  with_indices(a, [&](const auto* rp, const auto* ci) {
    for (int64_t i = 0; i < n; ++i) {
      vwgt[static_cast<size_t>(i)] = static_cast<idx_t>(rp[i + 1] - rp[i] + 1);
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
        const int64_t j = ci[e];
        if (j == i) continue;
        both[static_cast<size_t>(pos[static_cast<size_t>(i)]++)] = j;
        both[static_cast<size_t>(pos[static_cast<size_t>(j)]++)] = i;
      }
    }
  });
  // Sort and deduplicate each row in place, then compact.
  xadj.assign(static_cast<size_t>(n) + 1, 0);
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto b = both.begin() + cnt[static_cast<size_t>(i)], e = both.begin() + cnt[static_cast<size_t>(i) + 1];
    std::sort(b, e);
    const auto u = std::unique(b, e);
    for (auto it = b; it != u; ++it) both[static_cast<size_t>(out++)] = *it;
    if (out > kMax) too_big("adjacency entries (2 per edge) of at least", static_cast<long double>(out));
    xadj[static_cast<size_t>(i) + 1] = static_cast<idx_t>(out);
  }
  adj.resize(static_cast<size_t>(out));
  for (int64_t k = 0; k < out; ++k) adj[static_cast<size_t>(k)] = static_cast<idx_t>(both[static_cast<size_t>(k)]);
}

std::vector<int> metis_parts(const CsrView& a, int ranks) {
  std::vector<idx_t> xadj, adj, vwgt;
  symmetric_graph(a, xadj, adj, vwgt);
  idx_t nvtxs = static_cast<idx_t>(a.rows), ncon = 1, nparts = static_cast<idx_t>(ranks), objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = 1;  // deterministic
  std::vector<idx_t> part(static_cast<size_t>(a.rows), 0);
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adj.empty() ? nullptr : adj.data(), vwgt.data(),
                                     nullptr, nullptr, &nparts, nullptr, nullptr, options, &objval, part.data());
  if (rc != METIS_OK) {
    const char* name = rc == METIS_ERROR_INPUT    ? "METIS_ERROR_INPUT"
                       : rc == METIS_ERROR_MEMORY ? "METIS_ERROR_MEMORY"
                                                  : "METIS_ERROR";
    throw BackendError("sparseport::dist::partition_metis: METIS_PartGraphKway of " + std::to_string(a.rows) +
                           " vertices into " + std::to_string(ranks) + " parts failed with " + name,
                       rc, name);
  }
  std::vector<int> p(static_cast<size_t>(a.rows));
  for (int64_t i = 0; i < a.rows; ++i) {
    const idx_t q = part[static_cast<size_t>(i)];
    if (q < 0 || q >= nparts)
      throw BackendError("sparseport::dist::partition_metis: METIS put vertex " + std::to_string(i) + " in part " +
                             std::to_string(q) + ", outside [0, " + std::to_string(ranks) + ")",
                         METIS_OK, "METIS_OK");
    p[static_cast<size_t>(i)] = static_cast<int>(q);
  }
  return p;
}
#endif

}  // namespace

bool has_metis() {
#if defined(SPARSEPORT_HAVE_METIS)
  return true;
#else
  return false;
#endif
}

Relabelled partition_metis(const CsrView& a, int ranks) {
  if (ranks < 1)
    throw InvalidArgument("sparseport::dist::partition_metis: ranks is " + std::to_string(ranks) +
                          " but must be at least 1");
  if (a.rows != a.cols)
    throw InvalidArgument("sparseport::dist::partition_metis: A is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + " but a graph partition needs a square A");
  check_structure(a, "partition_metis");
#if !defined(SPARSEPORT_HAVE_METIS)
  throw Unsupported(
      "sparseport::dist::partition_metis: sparseport::dist was built without METIS (SPARSEPORT_ENABLE_METIS=OFF: "
      "metis.h or libmetis not found; Debian: libmetis-dev); use partition_rows_by_entries");
#else
  const int64_t n = a.rows;
  Relabelled r;
  r.perm.resize(static_cast<size_t>(n));
  std::iota(r.perm.begin(), r.perm.end(), int64_t{0});
  std::vector<int64_t> starts(static_cast<size_t>(ranks) + 1, 0);
  if (ranks == 1 || n == 0) {
    for (int q = 1; q <= ranks; ++q) starts[static_cast<size_t>(q)] = n;
    r.partition = partition_from_row_starts(std::move(starts), n);
    return r;
  }
  const std::vector<int> part = metis_parts(a, ranks);
  // Counting sort by part, stable within a part.
  for (int64_t i = 0; i < n; ++i) ++starts[static_cast<size_t>(part[static_cast<size_t>(i)]) + 1];
  for (int q = 0; q < ranks; ++q) starts[static_cast<size_t>(q) + 1] += starts[static_cast<size_t>(q)];
  std::vector<int64_t> next(starts.begin(), starts.end() - 1);
  for (int64_t i = 0; i < n; ++i) r.perm[static_cast<size_t>(next[static_cast<size_t>(part[static_cast<size_t>(i)])]++)] = i;
  r.partition = partition_from_row_starts(std::move(starts), n);
  return r;
#endif
}

template <class I, class V>
HostCsr<I, V> permute_symmetric(const HostCsr<I, V>& a, const std::vector<int64_t>& perm) {
  if (a.rows != a.cols)
    throw InvalidArgument("sparseport::dist::permute_symmetric: A is " + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + " but a symmetric permutation needs a square A");
  check_structure(a.view(), "permute_symmetric");
  const std::vector<int64_t> inv = inverse_of(perm, a.rows, "permute_symmetric");
  const bool pattern = a.is_pattern();
  HostCsr<I, V> b;
  b.rows = a.rows;
  b.cols = a.cols;
  b.rowptr.assign(static_cast<size_t>(a.rows) + 1, 0);
  b.colind.resize(a.colind.size());
  if (!pattern) b.values.resize(a.values.size());
  std::vector<std::pair<I, V>> row;
  I at = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    const size_t o = static_cast<size_t>(perm[static_cast<size_t>(i)]);
    const I e0 = a.rowptr[o], e1 = a.rowptr[o + 1];
    row.clear();
    for (I e = e0; e < e1; ++e)
      row.emplace_back(static_cast<I>(inv[static_cast<size_t>(a.colind[static_cast<size_t>(e)])]),
                       pattern ? V(1) : a.values[static_cast<size_t>(e)]);
    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [c, val] : row) {
      b.colind[static_cast<size_t>(at)] = c;
      if (!pattern) b.values[static_cast<size_t>(at)] = val;
      ++at;
    }
    b.rowptr[static_cast<size_t>(i) + 1] = at;
  }
  return b;
}

namespace {
// out row perm[i] <- d row i (scatter) or out row i <- d row perm[i] (gather).
template <class V>
HostDense<V> move_rows(const HostDense<V>& d, const std::vector<int64_t>& perm, bool gather, const char* fn) {
  inverse_of(perm, d.rows, fn);
  HostDense<V> out(d.rows, d.cols);
  for (int64_t i = 0; i < d.rows; ++i) {
    const int64_t p = perm[static_cast<size_t>(i)];
    for (int64_t j = 0; j < d.cols; ++j) {
      if (gather)
        out(i, j) = d(p, j);
      else
        out(p, j) = d(i, j);
    }
  }
  return out;
}
}  // namespace

template <class V>
HostDense<V> permute_rows(const HostDense<V>& d, const std::vector<int64_t>& perm) {
  return move_rows(d, perm, true, "permute_rows");
}

template <class V>
HostDense<V> unpermute_rows(const HostDense<V>& d, const std::vector<int64_t>& perm) {
  return move_rows(d, perm, false, "unpermute_rows");
}

template HostCsr<int32_t, float> permute_symmetric(const HostCsr<int32_t, float>&, const std::vector<int64_t>&);
template HostCsr<int32_t, double> permute_symmetric(const HostCsr<int32_t, double>&, const std::vector<int64_t>&);
template HostCsr<int64_t, float> permute_symmetric(const HostCsr<int64_t, float>&, const std::vector<int64_t>&);
template HostCsr<int64_t, double> permute_symmetric(const HostCsr<int64_t, double>&, const std::vector<int64_t>&);
template HostDense<float> permute_rows(const HostDense<float>&, const std::vector<int64_t>&);
template HostDense<double> permute_rows(const HostDense<double>&, const std::vector<int64_t>&);
template HostDense<float> unpermute_rows(const HostDense<float>&, const std::vector<int64_t>&);
template HostDense<double> unpermute_rows(const HostDense<double>&, const std::vector<int64_t>&);

}  // namespace sparseport::dist
