// SPDX-License-Identifier: Apache-2.0
// Internal to src/dist: MPI status codes as exceptions, messages of any size, agreement on a
// failure, and the shared state of a DistCsr.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

// Runs one rank's argument checks and agrees on them: when they throw DimensionMismatch,
// InvalidArgument or Unsupported on any rank, every rank throws the same kind with the lowest such
// rank's message (the others with "(reported by rank N)" added). One MPI_Allreduce when all pass.
void agree_on_checks(MPI_Comm comm, const std::function<void()>& checks);

// An int count for MPI, or Unsupported naming what did not fit.
int to_int(int64_t n, const char* what, const std::string& where);

// "sparseport::dist::spmm[openmp]".
std::string where(const Context& ctx, const char* op);

// The memory one call's ops work in. A host context reads the state's host arrays as they are; a
// device context reads copies of them in its memory, each made on first use and kept. The
// workspace (send, ghost and partial buffers) is allocated by the context, grown on demand. All of
// it is made again when a call comes with a context of another backend or device than the last.
class Space {
 public:
  // send, ghost: the forward halo's buffers; partials: the combine and merge steps' per-row and
  // per-entry partial results; values: per-call values of the blocks (the backward's weights);
  // reverse_send, reverse_recv: the transpose path's partial products, sent and received.
  enum Slot { send = 0, ghost = 1, partials = 2, values = 3, reverse_send = 4, reverse_recv = 5, slots = 6 };

  // Binds to ctx. A context of another backend or device than the bound one drops the copies, the
  // workspace and the transport first.
  void use(const Context& ctx);
  bool bound_to(const Context& ctx) const { return ctx_ && backend_ == ctx.backend(); }
  bool device() const { return device_; }
  const Context& context() const { return *ctx_; }

  // A host array in the context's memory: the same pointer on the host, else its copy.
  const void* place(const void* host, size_t bytes);
  template <class T>
  const T* place(const std::vector<T>& v) {
    return static_cast<const T*>(place(v.data(), v.size() * sizeof(T)));
  }
  template <class I, class V>
  CsrView place(const HostCsr<I, V>& a) {
    CsrView v = a.view();
    v.rowptr = place(a.rowptr);
    v.colind = place(a.colind);
    if (!a.is_pattern()) v.values = place(a.values);
    return v;
  }
  // At least bytes of workspace in the context's memory (contents not kept when it grows).
  void* workspace(Slot slot, size_t bytes);

  // The halo's transport for this context's buffers, agreed by every rank at the first exchange
  // after binding (choose_transport; null until then).
  std::unique_ptr<Transport> transport;
  // The transpose path's (transpose.cpp): the same plan with sends and receives swapped, agreed at
  // the first reverse exchange after binding.
  std::unique_ptr<Transport> reverse_transport;

 private:
  std::optional<Context> ctx_;
  std::string backend_;
  bool device_ = false;
  std::vector<std::pair<const void*, Buffer>> copies_;  // by host address; few entries
  Buffer work_[slots];
};

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
  // Where the last exchanging call's ops worked: the arrays below in its context's memory, the
  // workspace of one call at a time (the transport's persistent requests are bound to its
  // addresses) and the transport. Its transport goes before the communicator (see ~State).
  detail::Space space;

  // The pack matrix: send_total x local_cols, row k a 1 at column send_rows[k], so that one spmm
  // gathers the B rows the plan sends into the send buffer, on any backend. Made with the plan.
  HostCsr<I, V> pack;
  // The combining matrices of the boundary rows (see split): (hi - lo) x 2 boundary rows, entry
  // (i - lo, 2t) when boundary row t (this rank's row i) has local entries, (i - lo, 2t+1) for its
  // remote ones; a pattern for sum/max/min, 1/degree(i) for mean. Made on first use.
  std::optional<HostCsr<I, V>> combine_pattern, combine_mean;
  // The blocks' rows as COO destinations, for gather_scatter. Made on first use.
  std::vector<I> local_dst, remote_dst;
  // The rows split by whether they need the halo, for the reduces that combine (made on first use):
  // interior: all rows, with the local entries of the rows that have no remote entry (the others
  // empty); boundary_local / boundary_remote: the rows with remote entries (boundary_rows[t] is
  // this rank's row of the t-th), with their local and their remote entries; the boundary rows lie
  // in [boundary_lo, boundary_hi). The combining matrices then are (hi - lo) x 2 boundary rows.
  struct RowSplit {
    HostCsr<I, V> interior, boundary_local, boundary_remote;
    std::vector<I> interior_dst, boundary_local_dst, boundary_remote_dst;
    std::vector<int64_t> boundary_rows;
    int64_t boundary_lo = 0, boundary_hi = 0;
    std::optional<HostCsr<I, V>> boundary_remote_in_place;  // see remote_in_place
  };
  std::optional<RowSplit> split;
  // The remote blocks with their columns renumbered to rows of the node's shared window, for a
  // transport that lets them read the ghost rows in place (Transport::ghosts_in_place). Made on
  // first use; the same rowptr (and COO destinations) as the blocks they come from.
  std::optional<HostCsr<I, V>> remote_in_place;
  // Per entry of this rank's rows in their original storage order (the order the rows had when
  // the DistCsr was built): true when it went to the remote block. Each block keeps the original
  // relative order of its entries, so this alone merges per-entry results of the two blocks back
  // into the original order (sddmm). Made with the blocks.
  std::vector<bool> remote_entry;
  // sddmm's merge as a matrix: local_nnz x local_nnz, entry e's row a 1 at column l (its index in
  // the local block) or nl + r (in the remote block), applied by one spmm to the blocks' results
  // side by side. Made on first use.
  std::optional<HostCsr<I, V>> merge;
  // The row of each entry in the original order, the segment index of segment_reduce. Made on first use.
  std::vector<I> entry_row;

  // The transpose path (spmm_transpose, spmm_backward's dB, sddmm_backward's dY; transpose.cpp),
  // made on first use. The products with A^T are split as the forward's: this rank's rows of A
  // times its rows of x give, through L^T, its own rows of A^T x and, through R^T, partial sums for
  // the ghost rows, which go back to their owners (the halo plan reversed) and are added there.
  struct Reverse {
    HostCsr<I, V> local_t;   // L^T: local_cols x local_rows, A's values (none for a pattern)
    HostCsr<I, V> remote_t;  // R^T: ghosts x local_rows, ghost g's row = ghost g's partial sum
    // Per entry of L, R, L^T, R^T: the entry's place in this rank's rows' original order (the
    // order of sddmm's out_local), so that per-entry arrays of the caller's are gathered into them.
    std::vector<I> local_orig, remote_orig, local_t_orig, remote_t_orig;
    std::vector<I> iota;  // 0 .. max(local_nnz, 1): the rows of those gathers
    // mean: A's value / deg(row) (1 / deg(row) for a pattern) per entry of L^T and R^T, and
    // 1 / deg(row) per entry of L and R; deg is the row's full degree (both blocks).
    std::vector<V> local_t_mean, remote_t_mean, local_inv_deg, remote_inv_deg;
    HaloPlan plan;  // the halo plan with send and receive swapped
    // The received partial sums are added in layers: layer t holds, for each of this rank's rows
    // that receives at least t + 1 of them, the (t+1)-th in the order of the reverse plan (by
    // sender rank), a 1 at its place in the receive buffer; rows [layer_lo[t], layer_lo[t] +
    // layers[t].rows) of the result. One entry per row makes every layer's add exact whatever the
    // spmm variant, so the sum's order, and its bits, are the same on every transport.
    std::vector<HostCsr<I, V>> layers;
    std::vector<int64_t> layer_lo;
    std::vector<std::optional<HostCsr<I, V>>> layers_in_place;  // columns as rows of the node's window
    int64_t boundary_rows = 0;  // rows of this rank's A^T x that receive partial sums
  };
  std::optional<Reverse> reverse;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    space.transport.reset();  // MPI requests and datatype, or NCCL's communicator, before the communicator
    space.reverse_transport.reset();
    detail::free_comm(comm);
  }
};

}  // namespace sparseport::dist
