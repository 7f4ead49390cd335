// SPDX-License-Identifier: Apache-2.0
// Internal to src/dist: MPI status codes as exceptions, messages of any size, agreement on a
// failure, and the shared state of a DistCsr.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/errors.hpp"
#include "src/dist/transport.hpp"

namespace sparseport::dist::detail {

// Our communicators return MPI errors (MPI_ERRORS_RETURN); this is the one place a code becomes an
// exception: BackendError naming the call, with MPI's own text and error class.
void check_mpi(int code, const char* call, const std::string& where);

// A duplicate of comm that returns errors instead of aborting. Collective.
MPI_Comm duplicate(MPI_Comm comm, const std::string& where);
// Frees a duplicate unless MPI is finalized already. Never throws.
void free_comm(MPI_Comm& comm) noexcept;
bool mpi_finalized() noexcept;

int rank_of(MPI_Comm comm);
int size_of(MPI_Comm comm);

// Point-to-point of any size: MPI counts are int, so more than 1 GiB goes as several messages.
void send_bytes(MPI_Comm comm, const void* data, int64_t bytes, int dest, int tag, const std::string& where);
void recv_bytes(MPI_Comm comm, void* data, int64_t bytes, int source, int tag, const std::string& where);

// Every rank passes its own error ("" when fine). When any rank has one, every rank throws
// InvalidArgument with the message of the lowest such rank, so that all leave the collective
// call together instead of some waiting for messages that never come.
void agree(MPI_Comm comm, const std::string& error);

// An int count for MPI, or Unsupported naming what did not fit.
int to_int(int64_t n, const char* what, const std::string& where);

// "sparseport::dist::spmm[openmp]".
std::string where(const Context& ctx, const char* op);

}  // namespace sparseport::dist::detail

namespace sparseport::dist {

template <class I, class V>
struct DistCsr<I, V>::State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, ranks = 1;
  Partition part;
  int64_t nnz = 0;  // global
  bool pattern = false;
  HostCsr<I, V> local, remote;
  std::vector<int64_t> ghosts;
  HaloPlan plan;
  std::unique_ptr<detail::Transport> transport;

  // Workspace of one call at a time, grown on demand and kept (the transport's persistent requests
  // are bound to these addresses).
  std::vector<V> send_buf, ghost_buf, partials;
  // The combining matrices: rows x 2 rows, entry (i, 2i) when row i has local entries, (i, 2i+1)
  // when it has remote ones; a pattern for sum/max/min, 1/degree(i) for mean. Made on first use.
  std::optional<HostCsr<I, V>> combine_pattern, combine_mean;
  // The blocks' rows as COO destinations, for gather_scatter. Made on first use.
  std::vector<I> local_dst, remote_dst;
  // Per entry of this rank's rows in their original storage order (the order the rows had when
  // the DistCsr was built): true when it went to the remote block. Each block keeps the original
  // relative order of its entries, so this alone merges per-entry results of the two blocks back
  // into the original order (sddmm). Made with the blocks.
  std::vector<bool> remote_entry;
  // The row of each entry in the original order, the segment index of segment_reduce. Made on first use.
  std::vector<I> entry_row;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    transport.reset();  // frees its requests and datatype before the communicator
    detail::free_comm(comm);
  }
};

}  // namespace sparseport::dist
