// SPDX-License-Identifier: Apache-2.0
// The halo exchange's transport: moves B rows, packed by each sender in its halo plan's order, into
// the receivers' ghost buffers. One object per DistCsr, made with its plan.
//
// The seam for later work: the MPI transport below works on host buffers. A device transport
// (CUDA-aware MPI, or NCCL with ncclSend/ncclRecv in one group on the context's stream) implements
// the same four calls on device buffers; ops.cpp then allocates the send and ghost buffers with
// Context::allocate and packs with a device gather instead of its host loop. Nothing else changes:
// the blocks already run through the public ops on the caller's context.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "sparseport/dist.hpp"

namespace sparseport::dist::detail {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;

  // Posts a receive per recv peer into recv: row_bytes per row, at the plan's displacements.
  virtual void post_receives(void* recv, int64_t row_bytes) = 0;
  // Posts a send per send peer from send, packed peer after peer in the plan's order.
  virtual void post_sends(const void* send, int64_t row_bytes) = 0;

  struct Done {
    int64_t bytes_sent = 0, bytes_received = 0;
    int messages_sent = 0, messages_received = 0;
  };
  // Waits for everything posted; the received bytes are those the transport counted on arrival.
  virtual Done wait() = 0;
  // After an error between posting and waiting: completes what was posted. Never throws.
  virtual void drain() noexcept = 0;
};

// Persistent point-to-point requests (MPI_Recv_init / MPI_Send_init), made once per buffer
// address and row size and started each call. comm must outlive the transport.
std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm, const HaloPlan& plan);

}  // namespace sparseport::dist::detail
