// SPDX-License-Identifier: Apache-2.0
#include <utility>
#include <vector>

#include "src/dist/internal.hpp"
#include "src/dist/transport.hpp"

namespace sparseport::dist::detail {
namespace {

constexpr const char* kWhere = "sparseport::dist (mpi transport)";

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, const HaloPlan& plan, const char* name, int tag) : comm_(comm), name_(name), tag_(tag) {
    for (size_t p = 0; p < plan.send_peers.size(); ++p)
      sends_.push_back(
          {plan.send_peers[p], plan.send_displs[p], to_int(plan.send_counts[p], "a halo message (rows)", kWhere)});
    for (size_t p = 0; p < plan.recv_peers.size(); ++p)
      recvs_.push_back(
          {plan.recv_peers[p], plan.recv_displs[p], to_int(plan.recv_counts[p], "a halo message (rows)", kWhere)});
    send_req_.assign(sends_.size(), MPI_REQUEST_NULL);
    recv_req_.assign(recvs_.size(), MPI_REQUEST_NULL);
  }
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;
  ~MpiTransport() override {
    if (mpi_finalized()) return;
    drain();
    free_requests(send_req_);
    free_requests(recv_req_);
    if (row_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_type_);
  }

  const char* name() const override { return name_; }

  void post_receives(void* recv, int64_t row_bytes) override {
    if (recvs_.empty()) return;
    set_row_bytes(row_bytes);
    if (recv != recv_buf_ || recv_req_.front() == MPI_REQUEST_NULL) {
      free_requests(recv_req_);
      char* base = static_cast<char*>(recv);
      for (size_t p = 0; p < recvs_.size(); ++p)
        check_mpi(MPI_Recv_init(base + recvs_[p].displ * row_bytes, recvs_[p].count, row_type_, recvs_[p].peer,
                                tag_, comm_, &recv_req_[p]),
                  "MPI_Recv_init", kWhere);
      recv_buf_ = recv;
    }
    check_mpi(MPI_Startall(static_cast<int>(recv_req_.size()), recv_req_.data()), "MPI_Startall (receives)", kWhere);
    recv_active_ = true;
  }

  void post_sends(const void* send, int64_t row_bytes) override {
    if (sends_.empty()) return;
    set_row_bytes(row_bytes);
    if (send != send_buf_ || send_req_.front() == MPI_REQUEST_NULL) {
      free_requests(send_req_);
      const char* base = static_cast<const char*>(send);
      for (size_t p = 0; p < sends_.size(); ++p)
        check_mpi(MPI_Send_init(base + sends_[p].displ * row_bytes, sends_[p].count, row_type_, sends_[p].peer,
                                tag_, comm_, &send_req_[p]),
                  "MPI_Send_init", kWhere);
      send_buf_ = send;
    }
    check_mpi(MPI_Startall(static_cast<int>(send_req_.size()), send_req_.data()), "MPI_Startall (sends)", kWhere);
    send_active_ = true;
  }

  Done wait() override {
    Done d;
    if (recv_active_) {
      std::vector<MPI_Status> st(recv_req_.size());
      recv_active_ = false;
      check_mpi(MPI_Waitall(static_cast<int>(recv_req_.size()), recv_req_.data(), st.data()), "MPI_Waitall (receives)",
                kWhere);
      for (MPI_Status& s : st) {
        int rows = 0;
        check_mpi(MPI_Get_count(&s, row_type_, &rows), "MPI_Get_count", kWhere);
        d.bytes_received += static_cast<int64_t>(rows) * row_bytes_;
        ++d.messages_received;
      }
    }
    if (send_active_) {
      send_active_ = false;
      check_mpi(MPI_Waitall(static_cast<int>(send_req_.size()), send_req_.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall (sends)", kWhere);
      for (const Peer& p : sends_) {
        d.bytes_sent += static_cast<int64_t>(p.count) * row_bytes_;
        ++d.messages_sent;
      }
    }
    return d;
  }

  void drain() noexcept override {
    if (recv_active_) MPI_Waitall(static_cast<int>(recv_req_.size()), recv_req_.data(), MPI_STATUSES_IGNORE);
    if (send_active_) MPI_Waitall(static_cast<int>(send_req_.size()), send_req_.data(), MPI_STATUSES_IGNORE);
    recv_active_ = send_active_ = false;
  }

 private:
  struct Peer {
    int peer;
    int64_t displ;  // rows
    int count;      // rows
  };

  // One contiguous datatype per row, so that counts are rows (a halo of more than 2^31 bytes to one
  // peer still fits an int). A new row size frees the requests bound to the old type.
  void set_row_bytes(int64_t row_bytes) {
    if (row_bytes == row_bytes_) return;
    free_requests(send_req_);
    free_requests(recv_req_);
    send_buf_ = recv_buf_ = nullptr;
    if (row_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_type_);
    check_mpi(MPI_Type_contiguous(to_int(row_bytes, "a halo row (bytes)", kWhere), MPI_BYTE, &row_type_),
              "MPI_Type_contiguous", kWhere);
    check_mpi(MPI_Type_commit(&row_type_), "MPI_Type_commit", kWhere);
    row_bytes_ = row_bytes;
  }

  static void free_requests(std::vector<MPI_Request>& reqs) noexcept {
    for (MPI_Request& r : reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }

  MPI_Comm comm_;
  const char* name_;
  int tag_;
  std::vector<Peer> sends_, recvs_;
  std::vector<MPI_Request> send_req_, recv_req_;
  MPI_Datatype row_type_ = MPI_DATATYPE_NULL;
  int64_t row_bytes_ = -1;
  const void* send_buf_ = nullptr;
  const void* recv_buf_ = nullptr;
  bool send_active_ = false, recv_active_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm, const HaloPlan& plan, const char* name, int tag) {
  return std::make_unique<MpiTransport>(comm, plan, name, tag);
}

}  // namespace sparseport::dist::detail
