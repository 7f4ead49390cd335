// SPDX-License-Identifier: Apache-2.0
// `sparseport run --dist`: the op on a graph partitioned over the MPI ranks (sparseport::dist).
// dist_run.cpp implements this with MPI; dist_stub.cpp, built without MPI, refuses it with the
// reason. cmd_run.cpp drives both the same way: only rank 0 loads the graph, reports and verifies.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sparseport/sparseport.hpp"
#include "workloads.hpp"

namespace sparseport::cli {

class DistSession {
 public:
  virtual ~DistSession() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Threads per rank when --threads is not given: 0 (the backend's default) when OMP_NUM_THREADS
  // is set, else this node's cores shared among the ranks on it.
  virtual int default_threads() const = 0;
  // The backend this rank runs: a device backend named without its device ("cuda") becomes this
  // rank's device among the node's, cuda:(node-local rank mod devices): one rank per GPU, ranks
  // sharing GPUs round-robin when there are more ranks than GPUs. Anything else as given.
  virtual std::string backend_of_rank(const std::string& backend) const = 0;
  // Runs the command on this rank. A failure that every rank agreed on (raised inside the
  // workload's collective steps) or a usage error (every rank parses the same arguments) returns
  // or throws on every rank together, and only rank 0 prints it; any other failure is printed by
  // the rank that had it, which then aborts the job (MPI_Abort), since the others may be waiting.
  virtual int run(const std::function<int()>& body) = 0;
  // Runs step on every rank (it may do nothing on some); when it throws anywhere, it throws on
  // every rank: where it failed, its own exception, elsewhere the same kind of error with that
  // rank's message. Such a failure counts as agreed (see run).
  virtual void together(const std::function<void()>& step) = 0;
};

// Initialises MPI for the run; it is finalised when the session goes. Throws NotCompiled when this
// program was built without MPI.
std::unique_ptr<DistSession> start_dist_session();

// What --dist adds to a run.
struct DistOptions {
  // --partition: "auto", "rows" or "metis" (dist::PartitionPolicy); empty: SPARSEPORT_DIST_PARTITION,
  // else auto.
  std::string partition;
  // With the entry-balanced rows, time three calls after a warm-up, fit what a row costs against an
  // entry from the ranks' compute times (dist::fit_row_weight) and scatter again with
  // dist::partition_rows_by_cost where that predicts the slowest rank kRebalanceGain faster. On by
  // default (`run --dist`); --no-rebalance turns it off.
  bool rebalance = true;
  std::string variant;  // the variant those calls run (empty: the scheduler's)
};

// The distributed workload: rank 0 passes the graph (the others an empty one), chooses the
// partition (dist::choose_partition: the entry-balanced rows, or METIS's relabelling, with the
// operands permuted on rank 0 before they are scattered and the result un-permuted after it is
// gathered) and scatters the graph; every rank then runs its part of the op. verify() gathers the
// result on rank 0 and checks it as make_workload's workload does (reference backend, double).
// Ops: those of dist_supports (InvalidArgument for others); sddmm's out and segment_reduce's
// messages are split by the entries of each rank's rows. Collective.
template <class I, class V>
std::unique_ptr<Workload> make_dist_workload(DistSession& session, const Context& ctx, const HostCsr<I, V>& graph,
                                             const WorkloadSpec& spec, const DistOptions& dist);

// The ops --dist runs.
inline bool dist_supports(sparseport_op op) {
  return op == SPARSEPORT_OP_SPMM || op == SPARSEPORT_OP_SDDMM || op == SPARSEPORT_OP_GATHER_SCATTER ||
         op == SPARSEPORT_OP_SEGMENT_REDUCE;
}
inline constexpr const char* kDistOps = "spmm, sddmm, gather_scatter and segment_reduce";

}  // namespace sparseport::cli
