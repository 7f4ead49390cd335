// SPDX-License-Identifier: Apache-2.0
// Building a DistCsr: each rank's rows (global columns) are split into the local and the remote
// block, and the halo plan comes from one all-to-all of counts and one of column ids.
#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "src/dist/internal.hpp"

namespace sparseport::dist {
namespace {

using detail::check_mpi;

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (sizeof(T) == 8) return MPI_INT64_T;
  return MPI_INT32_T;
}

// My rows of A (global columns) -> the state: blocks, ghosts, halo plan, pack matrix. Collective.
// Takes comm over (sets it to MPI_COMM_NULL): the state frees it, also when this throws.
template <class I, class V>
std::shared_ptr<typename DistCsr<I, V>::State> build(MPI_Comm& owned_comm, const HostCsr<I, V>& mine, Partition part,
                                                     bool pattern, const std::string& w) {
  using State = typename DistCsr<I, V>::State;
  auto s = std::make_shared<State>();
  s->comm = owned_comm;
  owned_comm = MPI_COMM_NULL;
  const MPI_Comm comm = s->comm;
  s->rank = detail::rank_of(comm);
  s->ranks = detail::size_of(comm);
  s->part = std::move(part);
  s->pattern = pattern;
  const size_t me = static_cast<size_t>(s->rank);
  const int64_t c0 = s->part.col_starts[me], c1 = s->part.col_starts[me + 1];
  const int64_t m = mine.rows;
  const bool values = !mine.is_pattern();

  // Distinct remote columns, sorted: grouped by owner, since ownership is contiguous.
  std::vector<int64_t>& ghosts = s->ghosts;
  for (const I c : mine.colind)
    if (c < c0 || c >= c1) ghosts.push_back(c);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());

  HostCsr<I, V>& loc = s->local;
  HostCsr<I, V>& rem = s->remote;
  loc.rows = rem.rows = m;
  loc.cols = c1 - c0;
  rem.cols = static_cast<int64_t>(ghosts.size());
  loc.rowptr.assign(static_cast<size_t>(m) + 1, I(0));
  rem.rowptr.assign(static_cast<size_t>(m) + 1, I(0));
  const size_t remote_entries = static_cast<size_t>(
      std::count_if(mine.colind.begin(), mine.colind.end(), [&](I c) { return c < c0 || c >= c1; }));
  rem.colind.reserve(remote_entries);
  loc.colind.reserve(mine.colind.size() - remote_entries);
  if (values) {
    rem.values.reserve(remote_entries);
    loc.values.reserve(mine.colind.size() - remote_entries);
  }
  s->remote_entry.resize(mine.colind.size());
  for (int64_t i = 0; i < m; ++i) {
    for (I e = mine.rowptr[static_cast<size_t>(i)]; e < mine.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      const I c = mine.colind[static_cast<size_t>(e)];
      const bool local = c >= c0 && c < c1;
      s->remote_entry[static_cast<size_t>(e)] = !local;
      HostCsr<I, V>& blk = local ? loc : rem;
      blk.colind.push_back(
          local ? static_cast<I>(c - c0)
                : static_cast<I>(std::lower_bound(ghosts.begin(), ghosts.end(), int64_t{c}) - ghosts.begin()));
      if (values) blk.values.push_back(mine.values[static_cast<size_t>(e)]);
    }
    loc.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(loc.colind.size());
    rem.rowptr[static_cast<size_t>(i) + 1] = static_cast<I>(rem.colind.size());
  }

  // Halo plan. recv_counts[q]: my ghosts that q owns; q learns them as its send list.
  const size_t ranks = static_cast<size_t>(s->ranks);
  std::vector<int64_t> recv_counts(ranks, 0), send_counts(ranks, 0);
  for (size_t q = 0; q < ranks; ++q) {
    const auto lo = std::lower_bound(ghosts.begin(), ghosts.end(), s->part.col_starts[q]);
    const auto hi = std::lower_bound(ghosts.begin(), ghosts.end(), s->part.col_starts[q + 1]);
    recv_counts[q] = hi - lo;
  }
  check_mpi(MPI_Alltoall(recv_counts.data(), 1, MPI_INT64_T, send_counts.data(), 1, MPI_INT64_T, comm), "MPI_Alltoall",
            w);
  std::vector<int> rc(ranks), rd(ranks), sc(ranks), sd(ranks);
  int64_t rtotal = 0, stotal = 0;
  for (size_t q = 0; q < ranks; ++q) {
    rc[q] = detail::to_int(recv_counts[q], "the ghost columns from one rank", w);
    sc[q] = detail::to_int(send_counts[q], "the rows asked of one rank", w);
    rd[q] = detail::to_int(rtotal, "the ghost columns of one rank", w);
    sd[q] = detail::to_int(stotal, "the rows this rank sends", w);
    rtotal += recv_counts[q];
    stotal += send_counts[q];
  }
  std::vector<int64_t> wanted(static_cast<size_t>(stotal));
  check_mpi(MPI_Alltoallv(ghosts.data(), rc.data(), rd.data(), MPI_INT64_T, wanted.data(), sc.data(), sd.data(),
                          MPI_INT64_T, comm),
            "MPI_Alltoallv", w);
  HaloPlan& plan = s->plan;
  for (size_t q = 0; q < ranks; ++q) {
    if (send_counts[q] > 0) {
      plan.send_peers.push_back(static_cast<int>(q));
      plan.send_counts.push_back(send_counts[q]);
      plan.send_displs.push_back(sd[q]);
    }
    if (recv_counts[q] > 0) {
      plan.recv_peers.push_back(static_cast<int>(q));
      plan.recv_counts.push_back(recv_counts[q]);
      plan.recv_displs.push_back(rd[q]);
    }
  }
  plan.send_rows.resize(wanted.size());
  for (size_t k = 0; k < wanted.size(); ++k) {
    if (wanted[k] < c0 || wanted[k] >= c1)  // a broken invariant, not a user error
      throw Error(w + ": internal error: rank " + std::to_string(s->rank) + " was asked for B row " +
                  std::to_string(wanted[k]) + ", which it does not own");
    plan.send_rows[k] = wanted[k] - c0;
  }
  const int64_t mine_nnz = mine.nnz();
  check_mpi(MPI_Allreduce(&mine_nnz, &s->nnz, 1, MPI_INT64_T, MPI_SUM, comm), "MPI_Allreduce", w);
  // One spmm by this matrix packs the rows the plan sends (see State::pack).
  detail::agree(comm, plan.send_total() > static_cast<int64_t>(std::numeric_limits<I>::max())
                          ? w + ": rank " + std::to_string(s->rank) + " sends " + std::to_string(plan.send_total()) +
                                " B rows per call, too many for " + name(index_type_of<I>()) + " indices; use int64"
                          : std::string());
  s->pack.rows = plan.send_total();
  s->pack.cols = c1 - c0;
  s->pack.colind.resize(plan.send_rows.size());
  s->pack.rowptr.resize(plan.send_rows.size() + 1);
  for (size_t k = 0; k <= plan.send_rows.size(); ++k) s->pack.rowptr[k] = static_cast<I>(k);
  for (size_t k = 0; k < plan.send_rows.size(); ++k) s->pack.colind[k] = static_cast<I>(plan.send_rows[k]);
  return s;
}

template <class I, class V>
std::string check_local_csr(const HostCsr<I, V>& a, const char* what) {
  const Validation v = validate(a.view());
  if (!v.ok()) return std::string(what) + " is not a valid CSR: " + v.message;
  if (static_cast<int64_t>(a.rowptr.size()) != a.rows + 1)
    return std::string(what) + " has " + std::to_string(a.rowptr.size()) + " rowptr entries for " +
           std::to_string(a.rows) + " rows";
  if (!a.values.empty() && a.values.size() != a.colind.size())
    return std::string(what) + " has " + std::to_string(a.values.size()) + " values for " +
           std::to_string(a.colind.size()) + " entries";
  return {};
}

std::string check_partition(const Partition& p, int ranks, int64_t rows, int64_t cols) {
  const auto bad = [](const std::vector<int64_t>& s, int64_t n) {
    if (s.empty() || s.front() != 0 || s.back() != n) return true;
    for (size_t r = 0; r + 1 < s.size(); ++r)
      if (s[r + 1] < s[r]) return true;
    return false;
  };
  if (p.ranks() != ranks || p.col_starts.size() != p.row_starts.size())
    return "the partition is for " + std::to_string(p.ranks()) + " ranks but the communicator has " +
           std::to_string(ranks);
  if (bad(p.row_starts, rows))
    return "the partition's row_starts are not ranks+1 non-decreasing boundaries from 0 to " + std::to_string(rows);
  if (bad(p.col_starts, cols))
    return "the partition's col_starts are not ranks+1 non-decreasing boundaries from 0 to " + std::to_string(cols);
  return {};
}

template <class T>
void bcast(MPI_Comm comm, std::vector<T>& v, int root, const std::string& w) {
  int64_t n = static_cast<int64_t>(v.size());
  check_mpi(MPI_Bcast(&n, 1, MPI_INT64_T, root, comm), "MPI_Bcast", w);
  v.resize(static_cast<size_t>(n));
  check_mpi(MPI_Bcast(v.data(), detail::to_int(n, "a broadcast vector", w), mpi_type<T>(), root, comm), "MPI_Bcast", w);
}

}  // namespace

template <class I, class V>
DistCsr<I, V> DistCsr<I, V>::scatter(MPI_Comm comm_in, const HostCsr<I, V>* global, int root,
                                     const Partition* partition) {
  const std::string w = "sparseport::dist::DistCsr::scatter";
  MPI_Comm comm = detail::duplicate(comm_in, w);
  try {
    const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
    if (root < 0 || root >= ranks)  // the same on every rank (or the caller's bug everywhere)
      throw InvalidArgument(w + ": root is " + std::to_string(root) + " but the communicator has " +
                            std::to_string(ranks) + " ranks");
    // Root checks its matrix and the partition; everyone learns the verdict.
    Partition part;
    std::vector<int64_t> header(4, 0);  // rows, cols, pattern, 0
    std::string error;
    if (rank == root) {
      if (global == nullptr) {
        error = w + ": root passed no matrix";
      } else {
        error = check_local_csr(*global, "A");
        if (error.empty()) {
          part = partition != nullptr ? *partition : partition_rows_by_entries(global->view(), ranks);
          error = check_partition(part, ranks, global->rows, global->cols);
        }
        if (!error.empty()) error = w + ": " + error;
        header = {global->rows, global->cols, global->is_pattern() ? 1 : 0, 0};
      }
    }
    detail::agree(comm, error);
    bcast(comm, header, root, w);
    bcast(comm, part.row_starts, root, w);
    bcast(comm, part.col_starts, root, w);
    const bool pattern = header[2] != 0;

    // Root sends each rank its rows: rowptr rebased to 0, then columns, then values.
    HostCsr<I, V> mine;
    mine.cols = header[1];
    const auto slice = [&](int r, HostCsr<I, V>& out) {
      const int64_t r0 = part.row_starts[static_cast<size_t>(r)], r1 = part.row_starts[static_cast<size_t>(r) + 1];
      const I e0 = global->rowptr[static_cast<size_t>(r0)], e1 = global->rowptr[static_cast<size_t>(r1)];
      out.rows = r1 - r0;
      out.rowptr.resize(static_cast<size_t>(r1 - r0) + 1);
      for (int64_t i = r0; i <= r1; ++i)
        out.rowptr[static_cast<size_t>(i - r0)] = global->rowptr[static_cast<size_t>(i)] - e0;
      out.colind.assign(global->colind.begin() + e0, global->colind.begin() + e1);
      if (!pattern) out.values.assign(global->values.begin() + e0, global->values.begin() + e1);
    };
    constexpr int kTag = 0x4353;  // "CS"
    if (rank == root) {
      HostCsr<I, V> part_r;
      for (int r = 0; r < ranks; ++r) {
        if (r == root) continue;
        slice(r, part_r);
        detail::send_bytes(comm, part_r.rowptr.data(), static_cast<int64_t>(part_r.rowptr.size() * sizeof(I)), r, kTag,
                           w);
        detail::send_bytes(comm, part_r.colind.data(), static_cast<int64_t>(part_r.colind.size() * sizeof(I)), r, kTag,
                           w);
        if (!pattern)
          detail::send_bytes(comm, part_r.values.data(), static_cast<int64_t>(part_r.values.size() * sizeof(V)), r,
                             kTag, w);
      }
      slice(root, mine);
    } else {
      const int64_t m = part.rows_of(rank);
      mine.rows = m;
      mine.rowptr.resize(static_cast<size_t>(m) + 1);
      detail::recv_bytes(comm, mine.rowptr.data(), static_cast<int64_t>(mine.rowptr.size() * sizeof(I)), root, kTag, w);
      const I nnz = mine.rowptr.back();
      mine.colind.resize(static_cast<size_t>(nnz));
      detail::recv_bytes(comm, mine.colind.data(), static_cast<int64_t>(nnz) * static_cast<int64_t>(sizeof(I)), root,
                         kTag, w);
      if (!pattern) {
        mine.values.resize(static_cast<size_t>(nnz));
        detail::recv_bytes(comm, mine.values.data(), static_cast<int64_t>(nnz) * static_cast<int64_t>(sizeof(V)), root,
                           kTag, w);
      }
    }
    return DistCsr(build<I, V>(comm, mine, std::move(part), pattern, w));
  } catch (...) {
    detail::free_comm(comm);  // still ours unless build() took it
    throw;
  }
}

template <class I, class V>
DistCsr<I, V> DistCsr<I, V>::from_local_rows(MPI_Comm comm_in, HostCsr<I, V> local, std::vector<int64_t> row_starts,
                                             std::vector<int64_t> col_starts) {
  const std::string w = "sparseport::dist::DistCsr::from_local_rows";
  MPI_Comm comm = detail::duplicate(comm_in, w);
  int rank = 0, ranks = 1;
  try {
    rank = detail::rank_of(comm);
    ranks = detail::size_of(comm);
  } catch (...) {
    detail::free_comm(comm);
    throw;
  }
  // Every rank checks its own part; the shared arguments are compared across ranks.
  std::string error = check_local_csr(local, "this rank's rows");
  Partition part;
  if (error.empty() && row_starts.size() != static_cast<size_t>(ranks) + 1)
    error = "row_starts has " + std::to_string(row_starts.size()) + " entries but the communicator has " +
            std::to_string(ranks) + " ranks (need ranks + 1)";
  if (error.empty()) {
    try {
      part = partition_from_row_starts(row_starts, local.cols);
    } catch (const InvalidArgument& e) {
      error = e.what();
    }
  }
  if (error.empty() && !col_starts.empty()) part.col_starts = col_starts;
  if (error.empty()) error = check_partition(part, ranks, part.rows(), local.cols);
  if (error.empty() && local.rows != part.rows_of(rank))
    error = "this rank passed " + std::to_string(local.rows) + " rows but row_starts gives it " +
            std::to_string(part.rows_of(rank)) + " (rows " +
            std::to_string(part.row_starts[static_cast<size_t>(rank)]) + " to " +
            std::to_string(part.row_starts[static_cast<size_t>(rank) + 1]) + ")";
  if (!error.empty()) error = w + ": rank " + std::to_string(rank) + ": " + error;
  try {
    detail::agree(comm, error);
    // The same shape, boundaries and pattern-ness on every rank.
    std::vector<int64_t> mine = {local.cols, local.nnz() > 0 && local.is_pattern() ? 1 : 0,
                                 local.nnz() > 0 && !local.is_pattern() ? 1 : 0};
    mine.insert(mine.end(), part.row_starts.begin(), part.row_starts.end());
    mine.insert(mine.end(), part.col_starts.begin(), part.col_starts.end());
    std::vector<int64_t> lo(mine.size()), hi(mine.size());
    check_mpi(MPI_Allreduce(mine.data(), lo.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_MIN, comm),
              "MPI_Allreduce", w);
    check_mpi(MPI_Allreduce(mine.data(), hi.data(), static_cast<int>(mine.size()), MPI_INT64_T, MPI_MAX, comm),
              "MPI_Allreduce", w);
    if (lo[0] != hi[0])
      throw InvalidArgument(w + ": the ranks' rows have different column counts (" + std::to_string(lo[0]) + " to " +
                            std::to_string(hi[0]) + "); each must be the global A.cols");
    if (hi[1] == 1 && hi[2] == 1) throw InvalidArgument(w + ": some ranks passed values and others a pattern");
    for (size_t k = 3; k < mine.size(); ++k)
      if (lo[k] != hi[k]) throw InvalidArgument(w + ": the ranks passed different row_starts or col_starts");
    const bool pattern = hi[2] == 0;
    if (pattern) local.values.clear();
    return DistCsr(build<I, V>(comm, local, std::move(part), pattern, w));
  } catch (...) {
    detail::free_comm(comm);  // still ours unless build() took it
    throw;
  }
}

template <class I, class V>
typename DistCsr<I, V>::State& DistCsr<I, V>::state() const {
  if (state_ == nullptr) throw InvalidArgument("sparseport::dist: the DistCsr is empty (default-constructed)");
  return *state_;
}

template <class I, class V>
MPI_Comm DistCsr<I, V>::comm() const {
  return state().comm;
}
template <class I, class V>
int DistCsr<I, V>::rank() const {
  return state().rank;
}
template <class I, class V>
int DistCsr<I, V>::ranks() const {
  return state().ranks;
}
template <class I, class V>
const Partition& DistCsr<I, V>::partition() const {
  return state().part;
}
template <class I, class V>
int64_t DistCsr<I, V>::rows() const {
  return state().part.rows();
}
template <class I, class V>
int64_t DistCsr<I, V>::cols() const {
  return state().part.cols();
}
template <class I, class V>
int64_t DistCsr<I, V>::nnz() const {
  return state().nnz;
}
template <class I, class V>
bool DistCsr<I, V>::is_pattern() const {
  return state().pattern;
}
template <class I, class V>
int64_t DistCsr<I, V>::first_row() const {
  return state().part.row_starts[static_cast<size_t>(state().rank)];
}
template <class I, class V>
int64_t DistCsr<I, V>::local_rows() const {
  return state().part.rows_of(state().rank);
}
template <class I, class V>
int64_t DistCsr<I, V>::first_col() const {
  return state().part.col_starts[static_cast<size_t>(state().rank)];
}
template <class I, class V>
int64_t DistCsr<I, V>::local_cols() const {
  return state().part.cols_of(state().rank);
}
template <class I, class V>
int64_t DistCsr<I, V>::local_nnz() const {
  return state().local.nnz() + state().remote.nnz();
}
template <class I, class V>
const HostCsr<I, V>& DistCsr<I, V>::local_block() const {
  return state().local;
}
template <class I, class V>
const HostCsr<I, V>& DistCsr<I, V>::remote_block() const {
  return state().remote;
}
template <class I, class V>
const std::vector<int64_t>& DistCsr<I, V>::ghost_cols() const {
  return state().ghosts;
}
template <class I, class V>
const HaloPlan& DistCsr<I, V>::halo() const {
  return state().plan;
}
template <class I, class V>
int64_t DistCsr<I, V>::halo_bytes(int64_t features, int64_t value_bytes) const {
  return state().plan.send_total() * features * value_bytes;
}

template class DistCsr<int32_t, float>;
template class DistCsr<int32_t, double>;
template class DistCsr<int64_t, float>;
template class DistCsr<int64_t, double>;

}  // namespace sparseport::dist
