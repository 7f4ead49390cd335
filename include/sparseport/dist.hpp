// SPDX-License-Identifier: Apache-2.0
// sparseport::dist: a row-partitioned distributed CSR over MPI and the ops that run on it
// (DESIGN.md, src/dist). Built only where MPI is found (SPARSEPORT_ENABLE_MPI); link
// SparsePort::dist, which brings MPI::MPI_CXX. The core library does not depend on MPI, and
// sparseport.hpp does not include this header.
//
// The picture. A is m x k; rank r owns a contiguous range of A's rows (and of C's rows) and a
// contiguous range of B's rows (A's columns; for a square A the same range: a vertex's owner
// holds its features). Each rank's rows are split once into
//   - a local block: the entries whose column this rank owns, columns renumbered from 0, and
//   - a remote block: the other entries, whose columns ("ghosts") are compressed to the distinct
//     ones, sorted by global id (so grouped by owner), and renumbered 0..ghosts-1,
// plus a halo plan: which of its B rows each rank sends to whom, and where the rows it receives
// go in the ghost buffer (counts and displacements per peer). A distributed op posts the halo
// exchange (non-blocking point-to-point, persistent requests), computes the local block with the
// public op on the caller's Context (scheduler and any host backend), waits, computes the remote
// block on the received rows, and combines the two where the reduce needs it.
//
// Collective calls: every function that takes or holds a communicator is collective over it and
// must be called by every rank in the same order (except segment_reduce, which sends nothing).
// Arguments are checked on each rank before any message is posted; a check that fails on one rank
// only (e.g. a wrongly sized local operand) throws there and leaves the other ranks waiting, as a
// mismatched MPI call would.
//
// Partitions: contiguous row ranges (partition_rows_by_entries), or a METIS graph partition made
// contiguous by relabelling the vertices (partition_metis, with permute_symmetric; built only where
// METIS is found, see has_metis()); choose_partition picks one of the two by the predicted halo.
//
// Ops: spmm and gather_scatter (the halo, then the two blocks combined per row), sddmm (the same
// halo for Y, the two blocks' per-entry results put back in the rows' original entry order), and
// segment_reduce (per-edge messages that live with their destination rows: no halo).
// Training: spmm_transpose (A^T x: each rank's rows give partial sums for other ranks' rows, which
// go back to their owners along the halo plan reversed and are added there in a fixed order),
// spmm_backward and sddmm_backward (the gradients of backward.hpp, made of the forward ops and
// spmm_transpose).
//
// Memory: the matrix is built on the host (as above); the ops run on any context. Operands (B, C,
// X, Y, messages) live in the context's memory: host arrays for reference, openmp and host Kokkos,
// device arrays for cuda ("cuda:N": one rank per GPU by default, cuda:LOCAL_RANK). A device
// context gets copies of the blocks and helper matrices in its memory on its first call (kept
// with the matrix) and device buffers for the halo; the send rows are packed on the device by one
// spmm. The halo's transport is agreed by all ranks at the first exchange with a context (see
// CallStats::transport):
//   shm             host buffers (the default for more than one rank): ranks on one node
//                   (MPI_COMM_TYPE_SHARED) pack the rows they send into their segment of an MPI-3
//                   shared-memory window; a rank whose peers are all on its node reads their rows
//                   there in place (CallStats::halo_in_place), else copies them from there;
//                   synchronised by counters in a window (no MPI call, no MPI progress needed);
//                   peers on other nodes as mpi; where no window can be made, mpi;
//   mpi             host buffers, persistent MPI point-to-point;
//   nccl            device buffers, every rank on a GPU of its own, NCCL built in (ncclSend/Recv
//                   in one group on a stream of the transport's, beside the local block's kernel);
//   mpi-cuda-aware  device buffers handed to an MPI that takes them (MPIX_Query_cuda_support);
//   host-staged     device buffers copied to the host, MPI, copied back (e.g. ranks sharing a GPU).
// SPARSEPORT_DIST_TRANSPORT=auto (default), shm, mpi (host contexts), nccl, mpi-cuda-aware or
// host-staged (device contexts) forces one (the same on every rank; a choice some rank cannot make
// throws InvalidArgument on every rank).
// Changing a rank's backend between calls is collective too: every rank changes at the same call
// (segment_reduce, which is not collective, never changes it).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparseport/backward.hpp"
#include "sparseport/context.hpp"
#include "sparseport/ops.hpp"
#include "sparseport/plan.hpp"
#include "sparseport/views.hpp"

namespace sparseport::dist {

// Contiguous ownership. Rank r owns rows [row_starts[r], row_starts[r+1]) of A and C and rows
// [col_starts[r], col_starts[r+1]) of B. Both have ranks+1 non-decreasing entries from 0 to
// A.rows (A.cols). A rank may own no rows.
struct Partition {
  std::vector<int64_t> row_starts{0};
  std::vector<int64_t> col_starts{0};

  int ranks() const { return static_cast<int>(row_starts.size()) - 1; }
  int64_t rows() const { return row_starts.back(); }
  int64_t cols() const { return col_starts.back(); }
  int64_t rows_of(int r) const { return row_starts[static_cast<size_t>(r) + 1] - row_starts[static_cast<size_t>(r)]; }
  int64_t cols_of(int r) const { return col_starts[static_cast<size_t>(r) + 1] - col_starts[static_cast<size_t>(r)]; }
  int owner_of_row(int64_t row) const;  // the rank whose range holds row (the last such for empty ranges)
  int owner_of_col(int64_t col) const;
};

// Contiguous rows balanced by entries: row i weighs deg(i) + 1 (the 1: an empty row still costs a
// write of C), and boundary r is the row boundary nearest to r/ranks of the total weight. A
// mega-row can leave a rank alone with it and others with nothing. Columns: for a square A the
// same ranges; otherwise k split evenly. Host memory; throws InvalidArgument for ranks < 1 or an
// invalid CSR. Cost O(rows).
Partition partition_rows_by_entries(const CsrView& a, int ranks);

// Contiguous rows balanced by a cost: row i weighs deg(i) + row_weight, that is row_weight entries'
// worth of work per row besides its entries (partition_rows_by_entries is row_weight 1). A row's
// fixed work (writing F values of C, which the CPU also reads for ownership) can cost several
// entries' (whose gathers of B rows hit the cache where columns repeat): on rmat:22:16 at F = 64,
// 2 ranks x 8 threads, the rank with the tail (3.53M rows) took 253 ms and the one with the hubs
// (0.66M rows) 185 ms for the same entries, a row costing ~4.6 entries. fit_row_weight measures it.
// Throws InvalidArgument for ranks < 1, a row_weight that is negative or not finite, or an invalid
// CSR. Cost O(rows).
Partition partition_rows_by_cost(const CsrView& a, int ranks, double row_weight);

// One rank's block and how long its part of an op took (compute only: the exchange excluded).
struct RankCost {
  int64_t entries = 0, rows = 0;
  double ms = 0;
};
// The row weight of partition_rows_by_cost from measured per-rank times: the least-squares fit of
// ms = a * entries + b * rows over the ranks, returned as b / a. Where the ranks' blocks cannot
// separate the two costs (fewer than two ranks with work, blocks of the same shape, a fit with a
// or b negative: noise larger than the difference), `fallback`. Clamped to [0, 1e4].
double fit_row_weight(const std::vector<RankCost>& ranks, double fallback = 1.0);
// The slowest rank's predicted time over the mean for a partition of A, with a and b from the same
// fit (ms = a * entries + b * rows): what rebalancing with a new row weight can gain, predicted.
double predicted_imbalance(const CsrView& a, const Partition& p, const std::vector<RankCost>& measured);

// The given row ranges (ranks+1 boundaries from 0 to rows), with columns as above.
// Throws InvalidArgument for boundaries that are not a partition of [0, rows).
Partition partition_from_row_starts(std::vector<int64_t> row_starts, int64_t cols);

// B rows moved per call, per (sender, receiver): rows[s * ranks + r] is the number of distinct
// columns owned by s that occur in rows owned by r (s != r; the diagonal is 0).
struct HaloVolume {
  int ranks = 0;
  std::vector<int64_t> rows;

  int64_t between(int sender, int receiver) const {
    return rows[static_cast<size_t>(sender) * static_cast<size_t>(ranks) + static_cast<size_t>(receiver)];
  }
  int64_t total_rows() const;
  int64_t sent_rows(int rank) const;
  int64_t received_rows(int rank) const;
  // Bytes on the wire per call for F features of value_bytes each (4 for float, 8 for double).
  int64_t bytes(int64_t features, int64_t value_bytes) const { return total_rows() * features * value_bytes; }
};

// The halo volume predicted from the matrix and the partition alone (host CSR, no MPI): what a
// DistCsr built with that partition sends per call. Cost O(nnz log ranks) time, O(cols) memory.
HaloVolume predict_halo(const CsrView& a, const Partition& p);

// ---- Graph partitioning (METIS) -----------------------------------------------------------------
// A Partition is contiguous ranges, but a graph partitioner returns arbitrary vertex sets. So the
// METIS path relabels the vertices: it orders them by part (stable within a part, so a part keeps
// whatever locality its ids had), and the parts become contiguous ranges of the new ids. Everything
// contiguous (DistCsr::scatter, from_local_rows, predict_halo, scatter_rows) then works unchanged
// on the permuted matrix permute_symmetric(A, perm).
//
// Order of the operands: with the permuted matrix, B's rows and C's rows are in the NEW order too.
// Either permute B (permute_rows(B, perm)) and un-permute C (unpermute_rows(C, perm)) around the
// distributed calls, or work in the new order throughout (e.g. a GNN whose features and labels are
// permuted once when loaded).
struct Relabelled {
  std::vector<int64_t> perm;  // perm[new] = old: new vertex i is the original vertex perm[i]
  Partition partition;        // contiguous ranges of the new ids: rank r owns part r
};

// True when sparseport::dist was built with METIS (SPARSEPORT_ENABLE_METIS), so partition_metis runs.
bool has_metis();

// METIS k-way partition (METIS_PartGraphKway) of a square A into `ranks` parts, relabelled as above.
// The graph is A's pattern symmetrised (A + A^T) without self loops; vertex i weighs deg(i) + 1
// (stored entries of row i, plus one), so the parts balance entries as partition_rows_by_entries
// does (within METIS's default imbalance of 3%; a part may be empty). Values are ignored. The
// result is deterministic for a given A and ranks (fixed METIS seed). ranks == 1 (or an A without
// vertices) gives the identity without calling METIS.
// Throws InvalidArgument for ranks < 1, a non-square or invalid CSR; Unsupported when built without
// METIS (see has_metis()) or when the symmetrised graph does not fit METIS's index type (idx_t,
// 32 bits in Debian's build); BackendError when METIS fails. Cost: METIS's, plus O(nnz log deg)
// and O(nnz) memory to build the symmetric graph.
Relabelled partition_metis(const CsrView& a, int ranks);

// P A P^T: new row i is old row perm[i], column j becomes new id inv(perm)[j]; the columns of each
// row are sorted (repeats and their values kept). Square A only; perm must be a permutation of
// [0, A.rows). Throws InvalidArgument otherwise. Cost O(nnz log deg).
template <class I, class V>
HostCsr<I, V> permute_symmetric(const HostCsr<I, V>& a, const std::vector<int64_t>& perm);

// Dense rows in the new order (out[i,:] = d[perm[i],:]) and back (out[perm[i],:] = d[i,:]).
// perm must be a permutation of [0, d.rows); the result has ld == cols. Throws InvalidArgument.
template <class V>
HostDense<V> permute_rows(const HostDense<V>& d, const std::vector<int64_t>& perm);
template <class V>
HostDense<V> unpermute_rows(const HostDense<V>& d, const std::vector<int64_t>& perm);

// ---- Choosing the partition ----------------------------------------------------------------------
// Which partition a driver (sparseport run --dist) scatters A with: the entry-balanced contiguous
// rows, or METIS's relabelling when that moves less halo. METIS costs a serial pass over the whole
// graph and a permutation of the operands, and on most graphs it is not worth it: a graph whose
// ids already carry its locality (meshes, bands, road networks in their natural order) is cut
// about as well by contiguous ranges, and on power-law graphs in general the hubs touch every part.
// Where it pays is a skewed graph with communities whose ids are scattered (a social or web graph
// crawled in no particular order): the contiguous ranges then cut nearly every edge.
enum class PartitionPolicy {
  automatic,  // METIS when built, A is square, more than one rank, A's degrees are skewed, and its
              // predicted halo is lower than the entry-balanced one's by the margin below
  rows,       // partition_rows_by_entries
  metis,      // partition_metis (Unsupported when not built, InvalidArgument for a non-square A)
};
std::string_view name(PartitionPolicy p);  // "auto", "rows", "metis"
// "auto", "rows" or "metis"; InvalidArgument naming `what` (e.g. "--partition") otherwise.
PartitionPolicy partition_policy_from_name(std::string_view text, const std::string& what);
// SPARSEPORT_DIST_PARTITION (auto, rows or metis); unset or empty: automatic.
PartitionPolicy partition_policy_from_env();

// The rule of PartitionPolicy::automatic. Skew: max(largest row degree, largest column degree) /
// mean degree (entries / rows), O(nnz) to measure. Measured with this library's generators:
// power-law graphs are far above 8 (rmat:10:8 36, rmat:14:16 181, chunglu:20000:8:2.1 621,
// hubs:20000:8:20:2000 200), graphs without hubs at most 3 (er:20000:4e-4 3.0, sbm:4096:8:16:1
// 2.0, road:100:100:0.8 1.6, band:20000:9 and mesh2d:100:100 1.0). An Erdos-Renyi graph's Poisson
// tail grows as the mean degree falls: 6.5 at mean degree 2 on a million vertices
// (er:1000000:2e-6), 4.0 at 4, 2.4 at 16; so 8 stays above graphs without hubs and far below
// power-law ones. A flat-degree graph is not tried even where its ids hide its locality
// (mesh2d:100:100:1, the mesh renumbered: METIS's halo 420 rows against 20338 on 4 ranks): force
// metis for such a graph.
inline constexpr double kMetisMinSkew = 8.0;
// METIS is kept only when its predicted halo (B rows moved per call, summed over the ranks) is at
// most (1 - kMetisMargin) of the entry-balanced partition's. A smaller gain does not pay for what
// METIS costs besides its run: its parts are balanced only within METIS's 3% load imbalance (the
// entry-balanced rows are within one row's weight of even), the operands are permuted in and out,
// and the ids' locality inside a part is partly lost; while a halo 10% smaller saves at most 10% of
// the exchange, whose wait the shm transport hid entirely behind the interior rows in the 2-core
// VM's runs (benchmarks/results/2026-12-02-cpu-dist-shm.md, in place: wait 0.0 ms). The 10% is a
// judgement, not a measured break-even (no run here weighed METIS's costs against its gain). On 4
// ranks: rmat:10:8 (20% lower), rmat:14:16 (16%) and chunglu:20000:8:2.1 (25%) take METIS;
// hubs:20000:8:20:2000 (7%) keeps the rows.
inline constexpr double kMetisMargin = 0.10;

struct PartitionChoice {
  PartitionPolicy used = PartitionPolicy::rows;  // rows or metis
  std::string reason;                            // one sentence: why this one
  // The partition to scatter with: of A (rows), or of permute_symmetric(A, perm) (metis).
  Partition partition;
  std::vector<int64_t> perm;  // metis: perm[new] = old (see Relabelled); rows: empty
  double degree_skew = 0;     // as for kMetisMinSkew (0 for A without entries)
  HaloVolume rows_halo;       // predict_halo for partition_rows_by_entries(A, ranks)
  bool metis_ran = false;     // METIS was run: the two below are set
  HaloVolume metis_halo;      // predicted for METIS's partition of the relabelled A
  double metis_ms = 0;        // partition_metis's wall time (the symmetric graph and METIS)
};

// The partition for A over `ranks` under `policy` (host CSR, no MPI; meant for the rank that holds
// A). Always predicts the entry-balanced partition's halo; runs METIS when the policy forces it or
// when automatic reaches the halo comparison (see PartitionPolicy). Throws as
// partition_rows_by_entries, and for policy metis as partition_metis. Cost: O(nnz) for the skew and
// each prediction, plus METIS when it runs.
PartitionChoice choose_partition(const CsrView& a, int ranks, PartitionPolicy policy = PartitionPolicy::automatic);

// One rank's halo plan, built once with the DistCsr. Peers are listed in ascending rank order.
struct HaloPlan {
  std::vector<int> send_peers, recv_peers;
  std::vector<int64_t> send_counts, send_displs;  // rows per send peer, and their offset in send_rows
  std::vector<int64_t> send_rows;                 // local B rows to pack, peer after peer
  std::vector<int64_t> recv_counts, recv_displs;  // rows per recv peer, and their first ghost index

  int64_t send_total() const { return static_cast<int64_t>(send_rows.size()); }
  int64_t recv_total() const;
};

// What one distributed call did on this rank. Times in milliseconds (steady_clock).
struct CallStats {
  int64_t bytes_sent = 0;      // halo bytes posted to the transport
  int64_t bytes_received = 0;  // halo bytes the transport reported received (MPI_Get_count; nccl: the plan's)
  const char* transport = "";  // the halo's transport: shm, mpi, nccl, mpi-cuda-aware or host-staged ("" if none moved)
  int messages_sent = 0, messages_received = 0;
  double pack_ms = 0;     // copying B rows into the send buffer
  double post_ms = 0;     // starting receives and sends
  double wait_ms = 0;     // waiting for the exchange after the local block (the part not hidden)
  double local_ms = 0;    // the local block's op (overlaps the exchange)
  double remote_ms = 0;   // the remote block's op on the received rows
  double combine_ms = 0;  // merging the two partial results (mean, max, min; gather_scatter)
  double total_ms = 0;
  // The call's timeline on this rank: compute while the halo is in flight (the interior rows, and
  // the local entries of the boundary rows), the exchange from posting to the end of the wait
  // (wait_ms is the part of it not hidden), and compute after the wait (the boundary rows' remote
  // entries and the combine step). interior_ms == local_ms and boundary_ms == remote_ms +
  // combine_ms; kept apart so that the timeline reads alone.
  double interior_ms = 0;
  double exchange_ms = 0;
  double boundary_ms = 0;
  // This rank's rows with no remote entry (they need no halo) and with some (they wait for it).
  int64_t interior_rows = 0, boundary_rows = 0;
  // shm: the remote block read the ghost rows where its node peers packed them (every peer it
  // receives from on its node), instead of copies in the ghost buffer.
  bool halo_in_place = false;
  // How the variant of the local block was chosen (of the remote block where this rank's rows have
  // no local entries): last_decision() right after it ran. After the call, last_decision() holds
  // the last block's or the combine step's.
  Decision local_decision;

  double comm_ms() const { return pack_ms + post_ms + wait_ms; }
  double compute_ms() const { return local_ms + remote_ms + combine_ms; }
};

// A row-partitioned CSR over a communicator. Copies share one state (matrix, halo plan, buffers):
// run one distributed call at a time per matrix. The communicator is duplicated, so the halo's
// messages never meet the caller's; the duplicate is freed with the last copy (unless MPI is
// finalized by then). With the shm transport the last copy's destruction is collective over the
// ranks of a node (MPI_Win_free): destroy a matrix that has exchanged at the same point on every
// rank, as the tests and `run --dist` do.
template <class I, class V>
class DistCsr {
 public:
  DistCsr() = default;

  // From a global CSR held by root (others pass nullptr). partition: used when given on root,
  // else partition_rows_by_entries(A, ranks). Root sends each rank its rows; then every rank
  // builds its blocks and the halo plan (one all-to-all of counts and one of column ids).
  // Collective. Throws InvalidArgument on every rank when root's matrix or partition is invalid.
  static DistCsr scatter(MPI_Comm comm, const HostCsr<I, V>* global, int root = 0,
                         const Partition* partition = nullptr);

  // From each rank's own rows: local holds rows [row_starts[r], row_starts[r+1]) of A with global
  // column ids (local.cols == A.cols on every rank). row_starts: the same ranks+1 boundaries on
  // every rank (checked); col_starts: empty for the default (see partition_rows_by_entries).
  // Collective. Throws InvalidArgument on every rank when the ranks disagree or a shape is wrong.
  static DistCsr from_local_rows(MPI_Comm comm, HostCsr<I, V> local, std::vector<int64_t> row_starts,
                                 std::vector<int64_t> col_starts = {});

  bool empty() const { return state_ == nullptr; }
  MPI_Comm comm() const;  // the duplicate
  int rank() const;
  int ranks() const;
  const Partition& partition() const;
  int64_t rows() const;  // global shape and entries
  int64_t cols() const;
  int64_t nnz() const;
  bool is_pattern() const;
  int64_t first_row() const;   // this rank's first global row of A and C
  int64_t local_rows() const;  // ... and how many
  int64_t first_col() const;   // this rank's first global row of B
  int64_t local_cols() const;  // ... and how many
  // Entries of this rank's rows (both blocks): the length of dist::sddmm's out_local and of
  // dist::segment_reduce's src_local. In the global CSR they are entries
  // [rowptr[first_row()], rowptr[first_row() + local_rows()]), in that order.
  int64_t local_nnz() const;

  const HostCsr<I, V>& local_block() const;        // local_rows x local_cols
  const HostCsr<I, V>& remote_block() const;       // local_rows x ghosts
  const std::vector<int64_t>& ghost_cols() const;  // global column of each remote-block column
  const HaloPlan& halo() const;
  // Halo bytes this rank sends per call for F features (value_bytes: sizeof(V) unless the dense
  // operands are of another type).
  int64_t halo_bytes(int64_t features, int64_t value_bytes = sizeof(V)) const;

  // Internal: the shared state, defined in src/dist.
  struct State;
  explicit DistCsr(std::shared_ptr<State> s) : state_(std::move(s)) {}
  State& state() const;

 private:
  std::shared_ptr<State> state_;
};

// C = alpha * reduce_j(A[i,j] * B[j,:]) + beta * C on this rank's rows, as sparseport::spmm.
// b_local: this rank's rows of B (local_cols x F); c_local: its rows of C (local_rows x F).
// sum: the local block into C (alpha, beta), then the remote block added (alpha, beta = 1).
// mean, max, min: the rows are split once per matrix into interior rows (no remote entry) and
// boundary rows. While the halo is in flight, the interior rows are computed straight into C with
// the caller's reduce (their degree is the full one) and the boundary rows' local entries into a
// partial buffer (mean as sums); after the wait, their remote entries beside them, and one
// combining spmm adds the boundary rows into C (beta = 1 over C's rows from the first boundary row
// to the last): per row, the blocks that have entries (a row with entries only in one block never
// sees a 0 from the other), mean divided by the row's full degree; rows with no entries give 0 as
// in sparseport::spmm. A block that is empty on this rank is skipped (no combine). opt.variant runs
// both blocks; the combine step lets the scheduler choose. Collective over a.comm(), with the same
// F (b_local.cols) on every rank; b_local and c_local must not alias.
// Cost: halo_bytes(F) sent by this rank, the two blocks' ops, and for mean/max/min a boundary rows
// x 2F partial buffer (kept with the matrix) and one spmm with at most 2 entries per boundary row.
// Throws as sparseport::spmm (shapes, types),
// BackendError for an MPI failure; stats (optional) receives this rank's volumes and times.
template <class I, class V>
void spmm(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseMutView& c_local,
          const SpmmOptions& opt = {}, CallStats* stats = nullptr);

// out[dst,:] (reduce)= w * x[src,:] over the edges of A (row = dst, column = src, value = w), as
// sparseport::gather_scatter on each block's edges in COO form: x_local is this rank's rows of x
// (local_cols x F), out_local its rows of out (local_rows x F, overwritten). The partial results
// of the two blocks are combined as for spmm (sum too, since gather_scatter has no beta).
template <class I, class V>
void gather_scatter(const Context& ctx, const DistCsr<I, V>& edges, const DenseView& x_local,
                    const DenseMutView& out_local, const ReduceOptions& opt = {}, CallStats* stats = nullptr);

// out[e] = A.val[e] * dot(X[row(e),:], Y[col(e),:]) for every entry e of this rank's rows, as
// sparseport::sddmm (a pattern A gives the plain dot products). x_local: this rank's rows of X
// (local_rows x F); y_local: its rows of Y (local_cols x F; Y is k x F, its rows owned as B's are
// in spmm); out_local: local_nnz x 1, entry e in this rank's rows' original storage order, i.e.
// the order its rows had in the global CSR (or in the local rows) the DistCsr was built from, so
// that rank r's out_local is entries [rowptr[first_row()], ...) of the single-process result.
// The remote entries' Y rows come by the same halo exchange as B's in spmm: posted, the local
// block's sddmm on the context while it flies, wait, the remote block's on the ghost rows; when
// this rank's rows have entries in both blocks, the two per-entry results are merged back into the
// original order (the mapping is kept with the matrix), else the one block writes out directly.
// opt.variant runs both blocks. Collective over a.comm(), with the same F on every rank; outputs
// must not alias inputs. Cost: halo_bytes(F) sent by this rank (as spmm), the two blocks' sddmm,
// and for the merge a local_nnz buffer (kept with the matrix) and one pass over it.
// Throws InvalidArgument (DimensionMismatch for shapes) naming the operand for a wrong type, shape,
// ld or null data, before anything is posted; as
// sparseport::sddmm from the blocks; BackendError for an MPI failure.
template <class I, class V>
void sddmm(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
           const DenseMutView& out_local, const OpOptions& opt = {}, CallStats* stats = nullptr);

// out[i,:] = reduce over the entries e of row i of src[e,:]: sparseport::segment_reduce with the
// segments the rows of the partition (segment i = row i = a destination vertex) and one message per
// entry (edge) of the row. src_local: this rank's messages, local_nnz x F, in the same original
// storage order as dist::sddmm's out_local (so sddmm's per-edge scores, F = 1, or messages made
// per edge from them or from edge features, reduce with no reordering); out_local: local_rows x F
// (overwritten; rows without entries give 0, mean divides by the row's full degree). A's columns
// and values are not used: the messages are already materialised and weighted.
// Why no halo: with rows partitioned by destination, every message of a segment lives on the
// segment's owner (where the edge is), which is how PyTorch Geometric's scatter over edge_index[1]
// runs per partition. Messages that still need remote source rows are dist::gather_scatter's job
// (fused, never materialising E x F). So this sends nothing and is not collective: each rank may
// call it on its own. Cost: one sparseport::segment_reduce on the rank's messages; the first call
// makes the segment index (local_nnz entries, kept with the matrix). Throws InvalidArgument
// (DimensionMismatch for shapes) naming the operand, and
// as sparseport::segment_reduce.
template <class I, class V>
void segment_reduce(const Context& ctx, const DistCsr<I, V>& segments, const DenseView& src_local,
                    const DenseMutView& out_local, const ReduceOptions& opt = {}, CallStats* stats = nullptr);

// ---- Training: A^T and the gradients -------------------------------------------------------------
// The gradients of backward.hpp over the row partition. Where a single process multiplies by A^T
// (dB of spmm, dY of sddmm), a rank holds only rows of A: through its local block it makes its own
// rows of A^T x, through its remote block partial sums for the rows of A^T x that other ranks own
// (its ghost columns). Those go back to the owners along the halo plan reversed (the rows a rank
// received in the forward exchange are the rows it sends back, in the same order; the same
// transport choice, see CallStats::transport, on a transport of its own), and each owner adds
// them into its rows: its own part first, then the partial sums one at a time in sender-rank
// order, each add a separate exact-up-to-one-rounding step. So the result is bitwise the same on
// every transport (shm in place or copied, mpi) and at every call, given the same variants for the
// block products (with SPARSEPORT_SCHEDULER=auto a cold decision may differ between runs, as for
// the forward ops). It matches the single-process backward to rounding: the sums are associated
// differently (own rows and each rank's partial sum apart).
//
// Arguments are checked on every rank and agreed (one MPI_Allreduce): a bad argument on any rank
// throws on every rank, the same kind (DimensionMismatch for shapes, InvalidArgument, Unsupported)
// with the lowest failing rank's message (the others add "(reported by rank N)"); F must be the
// same on every rank (checked the same way). A gradient is computed when some rank asks for it
// (its data not null); a rank whose part of it is empty may pass null data.
//
// Memory: host contexts only. A device context (cuda) throws Unsupported naming the op, on every
// rank: every step is written as the forward's are (public ops on the context, the state's arrays
// copied to its memory, the forward's device transports), but the path has not been run on a GPU
// yet, so it is not offered (see src/dist/README.md). The first call of any of these on a matrix
// makes, on the host and kept with it, the blocks' transposes L^T and R^T with the
// entries' original positions, mean's weights and the reverse plan: O(local_nnz) indices and
// values per rank.

// out = alpha * A^T x + beta * out on this rank's rows of out (A's columns, B's rows): x_local is
// this rank's rows of x (local_rows x F, as C's rows in spmm), out_local its rows of A^T x
// (local_cols x F). opt.reduce must be sum (InvalidArgument otherwise); opt.variant runs the two
// block products (the adds of the received partial sums let the scheduler choose). Collective.
// Cost: per rank one spmm with R^T (ghosts x F, straight into the send buffer), one with L^T, and
// per layer (a row receiving k partial sums is in k layers; at most ranks - 1 layers) one spmm
// with one entry per receiving row; ghosts x F values sent by each rank, the forward's halo_bytes
// received. CallStats: remote_ms the partial sums (made before the sends, not hidden), local_ms
// this rank's own rows (while they fly), combine_ms the adds; interior/boundary rows are this
// rank's rows of out that receive no / some partial sum. Throws (on every rank) DimensionMismatch
// naming x_local or out_local with their shapes, InvalidArgument for a value type, ld, null data
// or reduce; BackendError for an MPI failure.
template <class I, class V>
void spmm_transpose(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseMutView& out_local,
                    const SpmmOptions& opt = {}, CallStats* stats = nullptr);

// Gradients of c_local = spmm(a, b_local) (alpha 1, beta 0) given dc_local (local_rows x F), as
// sparseport::spmm_backward (backward.hpp) on the whole matrix:
//   sum:  dB = A^T dC,            dA[e] = dC[i,:] . B[j,:]
//   mean: dB = (D^-1 A)^T dC,     dA[e] = dC[i,:] . B[j,:] / deg(i)      (deg: row i's full degree)
// grads.db: this rank's rows of dB (local_cols x F); grads.dvalues: dL/dA.values for this rank's
// entries (local_nnz x 1, in the rows' original order, as dist::sddmm's out_local). b_local (this
// rank's rows of B) is read for dvalues only. dB is spmm_transpose on A's values (mean: A's values
// / deg(i)); dvalues is dist::sddmm(dC, B) on A's pattern (mean: 1 / deg(i) as the values), with
// its own exchange of B's rows. opt.variant runs the products with A^T; opt.transpose must be null
// (the DistCsr keeps its transposes: InvalidArgument), opt.arg is not read. Reduce max and min
// throw Unsupported (their backward needs the forward's winners, which dist::spmm does not
// record). Collective. stats: the steps' times, bytes and messages added up.
template <class I, class V>
void spmm_backward(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseView& dc_local,
                   const SpmmGrads& grads, const SpmmBackwardOptions& opt = {}, CallStats* stats = nullptr);

// Gradients of out_local = sddmm(a, x_local, y_local) given dout_local (local_nnz x 1, in the rows'
// original order as sddmm's out_local), as sparseport::sddmm_backward on the whole matrix:
//   dX = (A o dout) Y      (grads.dx, local_rows x F: dist::spmm with A.val o dout as the values)
//   dY = (A o dout)^T X    (grads.dy, local_cols x F: spmm_transpose with the same values)
//   dA[e] = dout[e] * X[i,:] . Y[j,:]   (grads.dvalues, local_nnz x 1: dist::sddmm with dout as the values)
// Each asked-for gradient is one distributed step: dX and dA each exchange Y's rows, dY the partial
// sums. The per-entry values are gathered into each block's order per call (one gather_scatter per
// block, in a workspace of 3 local_nnz values kept with the matrix). Collective; throws as
// spmm_backward does. stats: the steps' times, bytes and messages added up.
template <class I, class V>
void sddmm_backward(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
                    const DenseView& dout_local, const SddmmGrads& grads, CallStats* stats = nullptr);

// Dense rows between root and the ranks: rank r gets (gives) global rows [starts[r], starts[r+1]).
// scatter_rows: root passes the global matrix (others an empty view), every rank gets its rows in
// a new HostDense (ld == cols). gather_rows: every rank passes its rows, root receives them into
// global (others pass an empty view). Collective; messages over 1 GiB are split.
template <class V>
HostDense<V> scatter_rows(MPI_Comm comm, const DenseView& global, const std::vector<int64_t>& starts, int root = 0);
template <class V>
void gather_rows(MPI_Comm comm, const DenseView& local, const DenseMutView& global, const std::vector<int64_t>& starts,
                 int root = 0);

// True when sparseport::dist was built with NCCL (the nccl transport for device contexts).
bool has_nccl();

}  // namespace sparseport::dist
