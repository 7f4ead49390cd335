// SPDX-License-Identifier: Apache-2.0
// The halo exchange's transport: moves B rows, packed by each sender in its halo plan's order, into
// the receivers' ghost buffers. Host buffers go by MPI; device buffers (a cuda context) by NCCL,
// by CUDA-aware MPI, or staged through host memory and MPI (choose_device_transport says which).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparseport/context.hpp"
#include "sparseport/dist.hpp"

namespace sparseport::dist::detail {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Posts a receive per recv peer into recv: row_bytes per row, at the plan's displacements.
  virtual void post_receives(void* recv, int64_t row_bytes) = 0;
  // Where this call's send rows are to be packed (send_total rows of row_bytes), when the transport
  // owns that memory (shm: the rank's segment of the shared window, which its node peers read);
  // null: the caller's workspace. Called once per call, after post_receives, by every rank.
  virtual void* send_buffer(int64_t /*row_bytes*/) { return nullptr; }
  // After post_sends: where the remote block may read this call's ghost rows in place (valid until
  // the next call starts), a matrix of *rows rows of row_bytes whose row ghost_rows()[g] is ghost
  // g; null when they arrive in the ghost buffer (which wait() then has filled).
  virtual const void* ghosts_in_place(int64_t* /*rows*/) const { return nullptr; }
  virtual const std::vector<int64_t>& ghost_rows() const {
    static const std::vector<int64_t> none;
    return none;
  }
  // Posts a send per send peer from send, packed peer after peer in the plan's order.
  virtual void post_sends(const void* send, int64_t row_bytes) = 0;

  struct Done {
    int64_t bytes_sent = 0, bytes_received = 0;
    int messages_sent = 0, messages_received = 0;
  };
  // Waits for everything posted; the received bytes are those the transport counted on arrival
  // (MPI_Get_count; NCCL counts nothing, so its are the plan's).
  virtual Done wait() = 0;
  // After an error between posting and waiting: completes what was posted. Never throws.
  virtual void drain() noexcept = 0;
};

// The tags of the halo's messages (the communicator is a private duplicate): the forward exchange's,
// and the transpose path's, whose plan is the forward one reversed (transpose.cpp), so that a
// message of one can never match a receive of the other.
constexpr int kHaloTag = 0x4841;     // "HA"
constexpr int kReverseTag = 0x4852;  // "HR"

// Persistent point-to-point requests (MPI_Recv_init / MPI_Send_init), made once per buffer
// address and row size and started each call. comm must outlive the transport. name: "mpi" for
// host buffers, "mpi-cuda-aware" when the buffers are device memory handed to a CUDA-aware MPI.
std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm, const HaloPlan& plan, const char* name = "mpi",
                                              int tag = kHaloTag);

// Host buffers: node peers (MPI_COMM_TYPE_SHARED) read each other's packed rows from an MPI-3
// shared-memory window; peers on other nodes go through make_mpi_transport. Collective over comm.
// Null, with why_not set on every rank, when some rank cannot map a shared window.
std::unique_ptr<Transport> make_shm_transport(MPI_Comm comm, const HaloPlan& plan, std::string& why_not,
                                              int tag = kHaloTag);

// The transport every rank agrees on, for buffers in ctx's memory. For a host context, from
// SPARSEPORT_DIST_TRANSPORT: shm (the default: auto or unset) or mpi; where a shared window cannot
// be made, the default falls back to mpi and a forced shm throws InvalidArgument on every rank. For a
// device context the choice below (shm and mpi are refused there). Collective over comm: every rank calls it at the same call
// (the first exchange after it bound a context, whatever its backend), so that ranks may run
// different backends and still agree. For device memory, from SPARSEPORT_DIST_TRANSPORT (auto,
// the default; nccl; mpi-cuda-aware; host-staged; read on every rank, must agree):
//   nccl            every rank has a device context, NCCL was built in, and no two ranks share a
//                   GPU (NCCL refuses that): ncclSend/ncclRecv in one group on a stream of its own;
//   mpi-cuda-aware  this rank's MPI says it takes device pointers (MPIX_Query_cuda_support);
//   host-staged     otherwise: device -> host copy of the send rows, MPI on host buffers, host ->
//                   device copy of the ghost rows after the wait.
// A forced choice that some rank cannot make throws InvalidArgument on every rank (detail::agree).
// tag: the MPI messages' (kHaloTag, or kReverseTag for the transpose path's plan).
std::unique_ptr<Transport> choose_transport(MPI_Comm comm, const HaloPlan& plan, const Context& ctx,
                                            const std::string& where, int tag = kHaloTag);

#ifdef SPARSEPORT_HAVE_NCCL
// NCCL on ctx's device: the communicator made from comm (ncclGetUniqueId on rank 0, broadcast,
// ncclCommInitRank; collective), a non-blocking stream and an event of its own. Buffers must be
// ready when post_sends is called (the caller synchronised its context after packing).
std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm, const HaloPlan& plan, int device,
                                               const std::string& where);
// "host/PCI bus id" of a CUDA device: two ranks with the same one share a GPU.
std::string cuda_device_identity(int device);
#endif

}  // namespace sparseport::dist::detail
