// SPDX-License-Identifier: Apache-2.0
// The halo through MPI-3 shared-memory windows for the peers on this rank's node, and through the
// MPI transport for the others. Each rank packs the rows it sends straight into its own segment of
// a data window; a receiver whose peers are all on its node reads their rows where they lie (the
// remote block's columns remapped once to rows of the node's segments, which the window keeps
// contiguous); otherwise it copies each node peer's rows into its ghost buffer with one memcpy.
// Either way no byte goes through the MPI library's shared-memory queues (Open MPI's sm path copies
// every message twice through a bounded FIFO: about 5 GB/s on the node).
//
// Synchronisation never needs MPI progress (nothing calls MPI while the local block runs): a
// counters window gives each rank two counters on cache lines of their own, written only by it and
// read by its node peers, under MPI_Win_lock_all for the window's life with MPI_Win_sync as the
// memory barrier (the MPI-3 pattern for load/store access to a shared window in either memory
// model, made explicit for the unified one by the release/acquire atomics):
//   posted  the number of the last call whose rows the owner packed (readers wait for >= n);
//   done    the number of the last call the owner finished (set when it starts the next one: the
//           remote block may read a peer's rows in place until its call ends).
// The data is double-buffered (call n packs into window n % 2), so a writer at call n waits only
// until its readers are done with call n - 2; in lockstep, as collective calls are, that wait is
// over before it starts.
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "src/dist/internal.hpp"
#include "src/dist/transport.hpp"

namespace sparseport::dist::detail {
namespace {

constexpr const char* kWhere = "sparseport::dist (shm transport)";
using Counter = std::atomic<uint64_t>;
static_assert(Counter::is_always_lock_free, "the window's counters are shared between processes");
// Each counter on a line of its own: the owner writes posted while its readers poll it.
constexpr size_t kLine = 64;
constexpr size_t kHeader = 2 * kLine;  // posted, done

class ShmTransport final : public Transport {
 public:
  ShmTransport(MPI_Comm comm, MPI_Comm node, const HaloPlan& plan, int tag) : node_(node) {
    const int ranks = size_of(comm);
    me_node_ = rank_of(node);
    node_ranks_ = size_of(node);
    // Which ranks of comm share this node, and their rank in node.
    std::vector<int> all(static_cast<size_t>(ranks)), in_node(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) all[static_cast<size_t>(r)] = r;
    MPI_Group g_comm, g_node;
    check_mpi(MPI_Comm_group(comm, &g_comm), "MPI_Comm_group", kWhere);
    check_mpi(MPI_Comm_group(node, &g_node), "MPI_Comm_group", kWhere);
    const int rc = MPI_Group_translate_ranks(g_comm, ranks, all.data(), g_node, in_node.data());
    MPI_Group_free(&g_comm);
    MPI_Group_free(&g_node);
    check_mpi(rc, "MPI_Group_translate_ranks", kWhere);

    // Where the rows for me start in each sender's packed buffer, and how many rows each packs.
    std::vector<int64_t> displ_for(static_cast<size_t>(ranks), 0), displ_from(static_cast<size_t>(ranks), 0);
    for (size_t p = 0; p < plan.send_peers.size(); ++p)
      displ_for[static_cast<size_t>(plan.send_peers[p])] = plan.send_displs[p];
    check_mpi(MPI_Alltoall(displ_for.data(), 1, MPI_INT64_T, displ_from.data(), 1, MPI_INT64_T, comm), "MPI_Alltoall",
              kWhere);
    send_rows_ = plan.send_total();
    node_send_rows_.resize(static_cast<size_t>(node_ranks_));
    check_mpi(MPI_Allgather(&send_rows_, 1, MPI_INT64_T, node_send_rows_.data(), 1, MPI_INT64_T, node),
              "MPI_Allgather", kWhere);
    // Node rank r's segment starts at row first_row[r] of the node's rows (the windows are contiguous).
    std::vector<int64_t> first_row(static_cast<size_t>(node_ranks_) + 1, 0);
    for (int r = 0; r < node_ranks_; ++r)
      first_row[static_cast<size_t>(r) + 1] = first_row[static_cast<size_t>(r)] + node_send_rows_[static_cast<size_t>(r)];
    node_rows_ = first_row.back();

    HaloPlan far;  // the peers on other nodes, at the same displacements: the MPI transport's plan
    ghost_rows_.assign(static_cast<size_t>(plan.recv_total()), 0);
    for (size_t p = 0; p < plan.recv_peers.size(); ++p) {
      const int q = plan.recv_peers[p];
      const int nq = in_node[static_cast<size_t>(q)];
      if (nq != MPI_UNDEFINED && nq != me_node_) {
        const Near n{nq, displ_from[static_cast<size_t>(q)], plan.recv_displs[p], plan.recv_counts[p]};
        near_.push_back(n);
        for (int64_t j = 0; j < n.count; ++j)
          ghost_rows_[static_cast<size_t>(n.recv_displ + j)] = first_row[static_cast<size_t>(nq)] + n.send_displ + j;
      } else {
        far.recv_peers.push_back(q);
        far.recv_counts.push_back(plan.recv_counts[p]);
        far.recv_displs.push_back(plan.recv_displs[p]);
      }
    }
    all_near_ = far.recv_peers.empty();
    if (!all_near_) ghost_rows_.clear();
    for (size_t p = 0; p < plan.send_peers.size(); ++p) {
      const int q = plan.send_peers[p];
      const int nq = in_node[static_cast<size_t>(q)];
      if (nq != MPI_UNDEFINED && nq != me_node_) {
        readers_.push_back(nq);
        near_sent_rows_ += plan.send_counts[p];
        ++near_sends_;
      } else {
        far.send_peers.push_back(q);
        far.send_counts.push_back(plan.send_counts[p]);
        far.send_displs.push_back(plan.send_displs[p]);
      }
    }
    far.send_rows.assign(static_cast<size_t>(plan.send_total()), 0);  // only its size is read
    if (!far.send_peers.empty() || !far.recv_peers.empty()) far_ = make_mpi_transport(comm, far, "mpi", tag);

    // The counters, for the transport's life; every rank can map its node peers' memory, or this throws.
    void* mine = nullptr;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");  // a page each, on the owner's NUMA node
    const int rw = MPI_Win_allocate_shared(static_cast<MPI_Aint>(kHeader), 1, info, node_, &mine, &ctr_win_);
    MPI_Info_free(&info);
    check_mpi(rw, "MPI_Win_allocate_shared", kWhere);
    MPI_Win_set_errhandler(ctr_win_, MPI_ERRORS_RETURN);  // windows abort on errors by default
    ctr_bases_ = query(ctr_win_);
    new (static_cast<char*>(mine)) Counter(0);
    new (static_cast<char*>(mine) + kLine) Counter(0);
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, ctr_win_), "MPI_Win_lock_all", kWhere);
    MPI_Win_sync(ctr_win_);
    // Nobody reads a peer's counters before the peer has set them.
    check_mpi(MPI_Barrier(node_), "MPI_Barrier", kWhere);
    MPI_Win_sync(ctr_win_);
  }
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;
  ~ShmTransport() override {
    if (mpi_finalized()) return;
    drain();
    far_.reset();
    release_data();
    if (ctr_win_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(ctr_win_);
      MPI_Win_free(&ctr_win_);
    }
    free_comm(node_);
  }

  const char* name() const override { return "shm"; }

  void* send_buffer(int64_t row_bytes) override {
    // The previous call is over: its rows may be overwritten two calls from now.
    mark_done();
    // F is the same on every rank at every call, so every rank of the node reallocates together
    // (and every one is between calls, done reading).
    if (row_bytes != row_bytes_data_) allocate_data(row_bytes);
    ++call_;
    // Window call_ % 2 was last read at call_ - 2: wait for its readers (see the file comment).
    for (const int r : readers_) spin_until(counter(r, 1), call_ >= 2 ? call_ - 2 : 0);
    return segment(me_node_, call_);
  }

  void post_receives(void* recv, int64_t row_bytes) override {
    recv_ = static_cast<char*>(recv);
    row_bytes_ = row_bytes;
    if (far_) far_->post_receives(recv, row_bytes);
    receiving_ = true;
  }

  void post_sends(const void* send, int64_t row_bytes) override {
    publish();
    if (far_) far_->post_sends(send, row_bytes);
  }

  const void* ghosts_in_place(int64_t* rows) const override {
    if (!in_place_) return nullptr;
    *rows = node_rows_;
    return data_base_[call_ % 2];
  }
  const std::vector<int64_t>& ghost_rows() const override { return ghost_rows_; }

  Done wait() override {
    Done d;
    if (far_) d = far_->wait();
    if (!receiving_) return d;
    receiving_ = false;
    for (const Near& n : near_) {
      spin_until(counter(n.node_rank, 0), call_);
      const size_t bytes = static_cast<size_t>(n.count * row_bytes_);
      if (!in_place_)
        std::memcpy(recv_ + n.recv_displ * row_bytes_, segment(n.node_rank, call_) + n.send_displ * row_bytes_, bytes);
      d.bytes_received += static_cast<int64_t>(bytes);
      ++d.messages_received;
    }
    d.bytes_sent += near_sent_rows_ * row_bytes_;
    d.messages_sent += near_sends_;
    return d;
  }

  void drain() noexcept override {
    if (far_) far_->drain();
    // The peers' calls must end too: what was not posted counts as posted (its rows are whatever
    // the buffer held).
    if (published_ < call_) publish();
    receiving_ = false;
  }

 private:
  struct Near {
    int node_rank;
    int64_t send_displ;  // rows, in the sender's packed buffer
    int64_t recv_displ;  // rows, in the ghost buffer
    int64_t count;
  };

  std::vector<char*> query(MPI_Win win) const {
    std::vector<char*> bases(static_cast<size_t>(node_ranks_), nullptr);
    for (int r = 0; r < node_ranks_; ++r) {
      MPI_Aint size = 0;
      int disp = 0;
      void* base = nullptr;
      check_mpi(MPI_Win_shared_query(win, r, &size, &disp, &base), "MPI_Win_shared_query", kWhere);
      bases[static_cast<size_t>(r)] = static_cast<char*>(base);
    }
    return bases;
  }

  // The two data windows for rows of row_bytes (collective over the node), each rank's segment
  // exactly its send rows, contiguous (MPI's default), so that the node's rows form one matrix.
  void allocate_data(int64_t row_bytes) {
    release_data();
    bool contiguous = true;
    for (int h = 0; h < 2; ++h) {
      void* mine = nullptr;
      check_mpi(MPI_Win_allocate_shared(static_cast<MPI_Aint>(send_rows_ * row_bytes), 1, MPI_INFO_NULL, node_, &mine,
                                        &data_win_[h]),
                "MPI_Win_allocate_shared", kWhere);
      MPI_Win_set_errhandler(data_win_[h], MPI_ERRORS_RETURN);
      data_bases_[h] = query(data_win_[h]);
      check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, data_win_[h]), "MPI_Win_lock_all", kWhere);
      // In place needs segment r at row first_row[r] of one base; an MPI that pads them gets copies.
      data_base_[h] = nullptr;
      int64_t row = 0;
      for (int r = 0; r < node_ranks_; ++r) {
        const int64_t n = node_send_rows_[static_cast<size_t>(r)];
        if (n > 0) {
          char* base = data_bases_[h][static_cast<size_t>(r)] - row * row_bytes;
          if (data_base_[h] == nullptr) data_base_[h] = base;
          contiguous = contiguous && base == data_base_[h];
        }
        row += n;
      }
    }
    row_bytes_data_ = row_bytes;
    // Remapped column ids must fit any index type. SPARSEPORT_DIST_SHM_IN_PLACE=0 copies instead:
    // on the 2-core VM the two measured alike (benchmarks/results/2026-12-02-cpu-dist-shm.md), so
    // a many-core node has to decide.
    const char* env = std::getenv("SPARSEPORT_DIST_SHM_IN_PLACE");
    const bool allowed = env == nullptr || std::string(env) != "0";
    in_place_ = allowed && all_near_ && contiguous && !near_.empty() &&
                node_rows_ <= std::numeric_limits<int32_t>::max();
  }

  void release_data() noexcept {
    for (MPI_Win& w : data_win_) {
      if (w == MPI_WIN_NULL) continue;
      MPI_Win_unlock_all(w);
      MPI_Win_free(&w);  // collective: every node rank is here, between calls
      w = MPI_WIN_NULL;
    }
    row_bytes_data_ = -1;
    in_place_ = false;
  }

  Counter& counter(int node_rank, int which) const {
    return *std::launder(reinterpret_cast<Counter*>(ctr_bases_[static_cast<size_t>(node_rank)] + which * kLine));
  }
  char* segment(int node_rank, uint64_t call) const { return data_bases_[call % 2][static_cast<size_t>(node_rank)]; }

  void publish() noexcept {
    if (data_win_[call_ % 2] != MPI_WIN_NULL) MPI_Win_sync(data_win_[call_ % 2]);
    MPI_Win_sync(ctr_win_);
    counter(me_node_, 0).store(call_, std::memory_order_release);
    published_ = call_;
  }
  void mark_done() noexcept { counter(me_node_, 1).store(call_, std::memory_order_release); }

  void spin_until(const Counter& c, uint64_t at_least) const noexcept {
    // Ranks may share cores (tests oversubscribe): yield after a short spin.
    for (int k = 0; c.load(std::memory_order_acquire) < at_least; ++k)
      if (k > 64) sched_yield();
    MPI_Win_sync(ctr_win_);
    if (data_win_[call_ % 2] != MPI_WIN_NULL) MPI_Win_sync(data_win_[call_ % 2]);
  }

  MPI_Comm node_;
  int node_ranks_ = 1, me_node_ = 0;
  MPI_Win ctr_win_ = MPI_WIN_NULL;
  std::vector<char*> ctr_bases_;
  MPI_Win data_win_[2] = {MPI_WIN_NULL, MPI_WIN_NULL};
  std::vector<char*> data_bases_[2];
  char* data_base_[2] = {nullptr, nullptr};  // row 0 of the node's rows, when contiguous
  std::vector<int64_t> node_send_rows_;
  int64_t send_rows_ = 0, node_rows_ = 0, row_bytes_data_ = -1, row_bytes_ = 0;
  std::vector<Near> near_;
  std::vector<int64_t> ghost_rows_;  // per ghost, its row among the node's rows (all_near_ only)
  bool all_near_ = false, in_place_ = false;
  std::vector<int> readers_;  // node ranks that read my segment
  int64_t near_sent_rows_ = 0;
  int near_sends_ = 0;
  std::unique_ptr<Transport> far_;
  char* recv_ = nullptr;
  uint64_t call_ = 0, published_ = 0;
  bool receiving_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_shm_transport(MPI_Comm comm, const HaloPlan& plan, std::string& why_not, int tag) {
  // Collective over comm; every rank learns whether every rank could set it up.
  MPI_Comm node = MPI_COMM_NULL;
  std::unique_ptr<Transport> t;
  std::string error;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    error = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed";
  else
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  // A failure inside the constructor happens on every rank of that node (its calls are collective
  // over the node), so the agreement below cannot leave another rank inside one of them.
  int ok = 1;
  if (error.empty()) {
    try {
      t = std::make_unique<ShmTransport>(comm, node, plan, tag);
    } catch (const std::exception& e) {
      error = e.what();
      ok = 0;
    }
  } else {
    ok = 0;
  }
  int all = 0;
  check_mpi(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", kWhere);
  if (all == 1) return t;
  t.reset();  // frees node with it (collective over the node, which every rank of it does here)
  if (!ok && node != MPI_COMM_NULL) free_comm(node);
  why_not = error.empty() ? "another rank could not map a shared-memory window" : error;
  return nullptr;
}

}  // namespace sparseport::dist::detail
