// SPDX-License-Identifier: Apache-2.0
// Dense rows between a root and the ranks (operands in, results out).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "src/dist/internal.hpp"

namespace sparseport::dist {
namespace {

constexpr int kTag = 0x4452;  // "DR"; the communicator is a private duplicate

std::string check_starts(const std::vector<int64_t>& starts, int ranks) {
  if (starts.size() != static_cast<size_t>(ranks) + 1)
    return "starts has " + std::to_string(starts.size()) + " entries but the communicator has " +
           std::to_string(ranks) + " ranks (need ranks + 1)";
  if (starts.front() != 0) return "starts must begin at 0";
  for (size_t r = 0; r + 1 < starts.size(); ++r)
    if (starts[r + 1] < starts[r]) return "starts decreases at rank " + std::to_string(r);
  return {};
}

// Copies rows [r0, r1) of a strided matrix into a packed buffer (or back).
template <class V>
void pack_rows(const V* src, int64_t ld, int64_t r0, int64_t r1, int64_t cols, V* dst) {
  for (int64_t i = r0; i < r1; ++i)
    std::memcpy(dst + (i - r0) * cols, src + i * ld, static_cast<size_t>(cols) * sizeof(V));
}
template <class V>
void unpack_rows(const V* src, int64_t r0, int64_t r1, int64_t cols, V* dst, int64_t ld) {
  for (int64_t i = r0; i < r1; ++i)
    std::memcpy(dst + i * ld, src + (i - r0) * cols, static_cast<size_t>(cols) * sizeof(V));
}

// A duplicate freed on every way out.
struct Dup {
  MPI_Comm comm;
  Dup(MPI_Comm c, const std::string& w) : comm(detail::duplicate(c, w)) {}
  Dup(const Dup&) = delete;
  Dup& operator=(const Dup&) = delete;
  ~Dup() { detail::free_comm(comm); }
};

}  // namespace

template <class V>
HostDense<V> scatter_rows(MPI_Comm comm_in, const DenseView& global, const std::vector<int64_t>& starts, int root) {
  const std::string w = "sparseport::dist::scatter_rows";
  const Dup dup(comm_in, w);
  const MPI_Comm comm = dup.comm;
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = check_starts(starts, ranks);
  if (error.empty() && rank == root) {
    if (global.value_type != value_type_of<V>())
      error = std::string("global holds ") + name(global.value_type) + " values, not " + name(value_type_of<V>());
    else if (global.rows != starts.back() || global.ld < global.cols ||
             (global.data == nullptr && global.rows * global.cols > 0))
      error = "global is " + std::to_string(global.rows) + "x" + std::to_string(global.cols) + " (ld " +
              std::to_string(global.ld) + ") but starts covers " + std::to_string(starts.back()) + " rows";
  }
  detail::agree(comm, error.empty() ? error : w + ": rank " + std::to_string(rank) + ": " + error);
  int64_t cols = rank == root ? global.cols : 0;
  detail::check_mpi(MPI_Bcast(&cols, 1, MPI_INT64_T, root, comm), "MPI_Bcast", w);
  const size_t me = static_cast<size_t>(rank);
  HostDense<V> mine(starts[me + 1] - starts[me], cols);
  if (rank == root) {
    const V* g = static_cast<const V*>(global.data);
    std::vector<V> buf;
    for (int r = 0; r < ranks; ++r) {
      const size_t q = static_cast<size_t>(r);
      if (r == root) {
        pack_rows(g, global.ld, starts[q], starts[q + 1], cols, mine.data.data());
        continue;
      }
      buf.resize(static_cast<size_t>((starts[q + 1] - starts[q]) * cols));
      pack_rows(g, global.ld, starts[q], starts[q + 1], cols, buf.data());
      detail::send_bytes(comm, buf.data(), static_cast<int64_t>(buf.size() * sizeof(V)), r, kTag, w);
    }
  } else {
    detail::recv_bytes(comm, mine.data.data(), static_cast<int64_t>(mine.data.size() * sizeof(V)), root, kTag, w);
  }
  return mine;
}

template <class V>
void gather_rows(MPI_Comm comm_in, const DenseView& local, const DenseMutView& global,
                 const std::vector<int64_t>& starts, int root) {
  const std::string w = "sparseport::dist::gather_rows";
  const Dup dup(comm_in, w);
  const MPI_Comm comm = dup.comm;
  const int rank = detail::rank_of(comm), ranks = detail::size_of(comm);
  std::string error = check_starts(starts, ranks);
  const size_t me = static_cast<size_t>(rank);
  if (error.empty()) {
    if (local.value_type != value_type_of<V>())
      error = std::string("local holds ") + name(local.value_type) + " values, not " + name(value_type_of<V>());
    else if (local.rows != starts[me + 1] - starts[me] || local.ld < local.cols ||
             (local.data == nullptr && local.rows * local.cols > 0))
      error = "local has " + std::to_string(local.rows) + " rows (ld " + std::to_string(local.ld) +
              ") but starts gives this rank " + std::to_string(starts[me + 1] - starts[me]);
  }
  if (error.empty() && rank == root &&
      (global.value_type != value_type_of<V>() || global.rows != starts.back() || global.cols != local.cols ||
       global.ld < global.cols || (global.data == nullptr && global.rows * global.cols > 0)))
    error = "global is " + std::to_string(global.rows) + "x" + std::to_string(global.cols) + " but must be " +
            std::to_string(starts.back()) + "x" + std::to_string(local.cols) + " of " + name(value_type_of<V>());
  detail::agree(comm, error.empty() ? error : w + ": rank " + std::to_string(rank) + ": " + error);
  const int64_t cols = local.cols;
  if (rank == root) {
    V* g = static_cast<V*>(global.data);
    std::vector<V> buf;
    for (int r = 0; r < ranks; ++r) {
      const size_t q = static_cast<size_t>(r);
      if (r == root) {
        std::vector<V> own(static_cast<size_t>((starts[q + 1] - starts[q]) * cols));
        pack_rows(static_cast<const V*>(local.data), local.ld, 0, starts[q + 1] - starts[q], cols, own.data());
        unpack_rows(own.data(), starts[q], starts[q + 1], cols, g, global.ld);
        continue;
      }
      buf.resize(static_cast<size_t>((starts[q + 1] - starts[q]) * cols));
      detail::recv_bytes(comm, buf.data(), static_cast<int64_t>(buf.size() * sizeof(V)), r, kTag, w);
      unpack_rows(buf.data(), starts[q], starts[q + 1], cols, g, global.ld);
    }
  } else {
    std::vector<V> buf(static_cast<size_t>(local.rows * cols));
    pack_rows(static_cast<const V*>(local.data), local.ld, 0, local.rows, cols, buf.data());
    detail::send_bytes(comm, buf.data(), static_cast<int64_t>(buf.size() * sizeof(V)), root, kTag, w);
  }
}

template HostDense<float> scatter_rows<float>(MPI_Comm, const DenseView&, const std::vector<int64_t>&, int);
template HostDense<double> scatter_rows<double>(MPI_Comm, const DenseView&, const std::vector<int64_t>&, int);
template void gather_rows<float>(MPI_Comm, const DenseView&, const DenseMutView&, const std::vector<int64_t>&, int);
template void gather_rows<double>(MPI_Comm, const DenseView&, const DenseMutView&, const std::vector<int64_t>&, int);

}  // namespace sparseport::dist
