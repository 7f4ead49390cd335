// SPDX-License-Identifier: Apache-2.0
// The halo over NCCL: one ncclGroupStart/End per call holding every ncclRecv and ncclSend of the
// plan, on a stream of the transport's own, so the exchange runs beside the local block's kernel
// on the context's stream. Built where NCCL is found (SPARSEPORT_HAVE_NCCL).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "src/dist/internal.hpp"
#include "src/dist/transport.hpp"

namespace sparseport::dist::detail {
namespace {

void check_cuda(cudaError_t e, const char* call, const std::string& where) {
  if (e != cudaSuccess)
    throw BackendError(where + ": " + call + " failed: " + cudaGetErrorString(e), static_cast<int>(e),
                       cudaGetErrorName(e));
}

void check_nccl(ncclResult_t r, const char* call, const std::string& where) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw BackendError(where + ": " + call + " failed: " + ncclGetErrorString(r), static_cast<int>(r), "ncclResult_t");
}

class NcclTransport final : public Transport {
 public:
  NcclTransport(MPI_Comm comm, const HaloPlan& plan, int device, const std::string& where)
      : device_(device), where_(where + " (nccl transport)") {
    for (size_t p = 0; p < plan.send_peers.size(); ++p)
      sends_.push_back({plan.send_peers[p], plan.send_displs[p], plan.send_counts[p]});
    for (size_t p = 0; p < plan.recv_peers.size(); ++p)
      recvs_.push_back({plan.recv_peers[p], plan.recv_displs[p], plan.recv_counts[p]});
    check_cuda(cudaSetDevice(device_), "cudaSetDevice", where_);
    // Rank 0 makes the id; every rank joins with it. A failure anywhere is agreed before NCCL's
    // collective init, which would otherwise wait for the rank that failed.
    ncclUniqueId id{};
    std::string error;
    if (rank_of(comm) == 0) {
      const ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) error = where_ + ": ncclGetUniqueId failed: " + ncclGetErrorString(r);
    }
    agree(comm, error);
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast (NCCL id)", where_);
    check_nccl(ncclCommInitRank(&comm_, size_of(comm), id, rank_of(comm)), "ncclCommInitRank", where_);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", where_);
    check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreateWithFlags", where_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;
  ~NcclTransport() override {
    drain();
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  const char* name() const override { return "nccl"; }

  // NCCL wants a call's sends and receives in one group (else two ranks sending to each other
  // deadlock), so the receives wait here for post_sends.
  void post_receives(void* recv, int64_t row_bytes) override {
    recv_ = static_cast<char*>(recv);
    row_bytes_ = row_bytes;
  }

  void post_sends(const void* send, int64_t row_bytes) override {
    const char* s = static_cast<const char*>(send);
    check_cuda(cudaSetDevice(device_), "cudaSetDevice", where_);
    check_nccl(ncclGroupStart(), "ncclGroupStart", where_);
    for (const Peer& p : recvs_)
      check_nccl(ncclRecv(recv_ + p.displ * row_bytes, static_cast<size_t>(p.count * row_bytes), ncclChar, p.peer,
                          comm_, stream_),
                 "ncclRecv", where_);
    for (const Peer& p : sends_)
      check_nccl(ncclSend(s + p.displ * row_bytes, static_cast<size_t>(p.count * row_bytes), ncclChar, p.peer, comm_,
                          stream_),
                 "ncclSend", where_);
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", where_);
    check_cuda(cudaEventRecord(done_, stream_), "cudaEventRecord", where_);
    active_ = true;
  }

  Done wait() override {
    Done d;
    if (!active_) return d;
    active_ = false;
    check_cuda(cudaEventSynchronize(done_), "cudaEventSynchronize (halo)", where_);
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", where_);
    check_nccl(async, "the halo exchange (asynchronous error)", where_);
    for (const Peer& p : sends_) {
      d.bytes_sent += p.count * row_bytes_;
      ++d.messages_sent;
    }
    for (const Peer& p : recvs_) {
      d.bytes_received += p.count * row_bytes_;
      ++d.messages_received;
    }
    return d;
  }

  void drain() noexcept override {
    if (active_) cudaEventSynchronize(done_);
    active_ = false;
  }

 private:
  struct Peer {
    int peer;
    int64_t displ, count;  // rows
  };
  int device_;
  std::string where_;
  std::vector<Peer> sends_, recvs_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  char* recv_ = nullptr;
  int64_t row_bytes_ = 0;
  bool active_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(MPI_Comm comm, const HaloPlan& plan, int device,
                                               const std::string& where) {
  return std::make_unique<NcclTransport>(comm, plan, device, where);
}

std::string cuda_device_identity(int device) {
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return "unknown device " + std::to_string(device);
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + bus;
}

}  // namespace sparseport::dist::detail
