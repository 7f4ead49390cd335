// SPDX-License-Identifier: Apache-2.0
// The halo's transports for device buffers: which one the ranks agree on, and the host-staged one
// (the NCCL one is nccl_transport.cpp, built where NCCL is found).
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support (after mpi.h, which it needs)
#endif

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/dist/internal.hpp"
#include "src/dist/transport.hpp"

namespace sparseport::dist::detail {
namespace {

// Device rows staged through host memory: the MPI transport moves host copies. post_sends copies the
// packed rows to the host first (the caller synchronised its context after packing); wait copies
// the received rows into the device ghost buffer once MPI is done with them.
class HostStagedTransport final : public Transport {
 public:
  HostStagedTransport(MPI_Comm comm, const HaloPlan& plan, const Context& ctx, int tag)
      : ctx_(ctx), mpi_(make_mpi_transport(comm, plan, "mpi", tag)), send_rows_(plan.send_total()),
        recv_rows_(plan.recv_total()) {}

  const char* name() const override { return "host-staged"; }

  void post_receives(void* recv, int64_t row_bytes) override {
    recv_dev_ = recv;
    recv_host_.resize(static_cast<size_t>(recv_rows_ * row_bytes));
    recv_bytes_ = recv_host_.size();
    mpi_->post_receives(recv_host_.data(), row_bytes);
  }

  void post_sends(const void* send, int64_t row_bytes) override {
    send_host_.resize(static_cast<size_t>(send_rows_ * row_bytes));
    if (!send_host_.empty()) ctx_.copy_to_host(send_host_.data(), send, send_host_.size());
    mpi_->post_sends(send_host_.data(), row_bytes);
  }

  Done wait() override {
    const Done d = mpi_->wait();
    if (recv_bytes_ > 0) ctx_.copy_to_backend(recv_dev_, recv_host_.data(), recv_bytes_);
    recv_bytes_ = 0;
    return d;
  }

  void drain() noexcept override {
    mpi_->drain();
    recv_bytes_ = 0;
  }

 private:
  Context ctx_;
  std::unique_ptr<Transport> mpi_;
  int64_t send_rows_, recv_rows_;
  std::vector<char> send_host_, recv_host_;  // pageable: pinned memory would need the backend's allocator
  void* recv_dev_ = nullptr;
  size_t recv_bytes_ = 0;
};

bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

enum Choice : int { automatic = 0, nccl = 1, cuda_aware = 2, host_staged = 3, shm = 4, mpi = 5 };

Choice requested(const std::string& where) {
  const char* env = std::getenv("SPARSEPORT_DIST_TRANSPORT");
  const std::string v = env != nullptr ? env : "";
  if (v.empty() || v == "auto") return automatic;
  if (v == "nccl") return nccl;
  if (v == "mpi-cuda-aware") return cuda_aware;
  if (v == "host-staged") return host_staged;
  if (v == "shm") return shm;
  if (v == "mpi") return mpi;
  throw InvalidArgument(where + ": SPARSEPORT_DIST_TRANSPORT is '" + v +
                        "'; expected auto, shm, mpi (host memory), nccl, mpi-cuda-aware or host-staged (device memory)");
}

}  // namespace

std::unique_ptr<Transport> choose_transport(MPI_Comm comm, const HaloPlan& plan, const Context& ctx,
                                            const std::string& where, int tag) {
  std::string error;
  Choice want = automatic;
  try {
    want = requested(where);
  } catch (const InvalidArgument& e) {
    error = e.what();
  }
  agree(comm, error);

  // What every rank can do, agreed in one all-gather of fixed-size records.
  struct Can {
    int device_memory, nccl, want;
    char identity[120];
  };
  Can mine{};
  mine.device_memory = ctx.device_memory() ? 1 : 0;
  mine.want = want;
#ifdef SPARSEPORT_HAVE_NCCL
  if (ctx.device_memory()) {
    mine.nccl = 1;
    std::strncpy(mine.identity, cuda_device_identity(ctx.device()).c_str(), sizeof mine.identity - 1);
  }
#endif
  const int ranks = size_of(comm);
  std::vector<Can> all(static_cast<size_t>(ranks));
  check_mpi(MPI_Allgather(&mine, sizeof(Can), MPI_BYTE, all.data(), sizeof(Can), MPI_BYTE, comm), "MPI_Allgather",
            where);
  std::string why_not_nccl;
  for (int r = 0; r < ranks && why_not_nccl.empty(); ++r) {
    const Can& c = all[static_cast<size_t>(r)];
    if (c.want != want) error = "SPARSEPORT_DIST_TRANSPORT differs between ranks (rank " + std::to_string(r) + ")";
    if (!c.device_memory)
      why_not_nccl = "rank " + std::to_string(r) + " runs on host memory";
    else if (!c.nccl)
      why_not_nccl = "rank " + std::to_string(r) + " was built without NCCL";
    for (int q = 0; q < r && why_not_nccl.empty(); ++q)
      if (std::strcmp(all[static_cast<size_t>(q)].identity, c.identity) == 0)
        why_not_nccl = "ranks " + std::to_string(q) + " and " + std::to_string(r) + " share a GPU (" + c.identity +
                       "), which NCCL refuses";
  }
  if (error.empty() && want == nccl && !why_not_nccl.empty())
    error = where + ": SPARSEPORT_DIST_TRANSPORT=nccl, but " + why_not_nccl;
  if (error.empty() && want == cuda_aware && ctx.device_memory() && !mpi_is_cuda_aware())
    error = where + ": SPARSEPORT_DIST_TRANSPORT=mpi-cuda-aware, but this MPI does not take device pointers "
                    "(MPIX_Query_cuda_support)";
  if (error.empty() && (want == shm || want == mpi) && ctx.device_memory())
    error = where + ": SPARSEPORT_DIST_TRANSPORT=" + (want == shm ? "shm" : "mpi") +
            " moves host buffers, but this rank's context (" + ctx.backend() +
            ") works in device memory; use nccl, mpi-cuda-aware or host-staged";
  agree(comm, error);

  if (!ctx.device_memory()) {
    // One rank moves nothing: no window for it.
    if (!(want == shm || (want == automatic && ranks > 1))) return make_mpi_transport(comm, plan, "mpi", tag);
    std::string why_not;
    std::unique_ptr<Transport> t = make_shm_transport(comm, plan, why_not, tag);
    if (t) return t;
    if (want == shm) agree(comm, where + ": SPARSEPORT_DIST_TRANSPORT=shm, but " + why_not);
    return make_mpi_transport(comm, plan, "mpi", tag);
  }
#ifdef SPARSEPORT_HAVE_NCCL
  if (why_not_nccl.empty() && (want == automatic || want == nccl))
    return make_nccl_transport(comm, plan, ctx.device(), where);
#endif
  if (want != host_staged && mpi_is_cuda_aware()) return make_mpi_transport(comm, plan, "mpi-cuda-aware", tag);
  return std::make_unique<HostStagedTransport>(comm, plan, ctx, tag);
}

}  // namespace sparseport::dist::detail
