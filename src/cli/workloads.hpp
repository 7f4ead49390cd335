// SPDX-License-Identifier: Apache-2.0
// One workload per op for `sparseport run`: builds the operands from a graph and a seed, stages them
// in the backend's memory, runs one variant, and checks the last result against the reference
// backend computing in double.
//
// Operands (all random values uniform in [-1, 1) from fill_random, one derived seed per operand):
//   spmm                  B: cols x F, C: rows x F
//   sddmm                 X: rows x F, Y: cols x F, out: nnz x 1
//   segment_reduce        the graph's edges sorted by destination (row = dst, column = src);
//                         messages src[e,:] = w[e] * x[col(e),:] materialised E x F (w = 1 for a pattern)
//   scatter_reduce        the same edges and messages in a seeded random order
//   gather_scatter        the same edges as COO (row = dst sorted, col = src, values = w), x: cols x F
//   csr_attention         Q: rows x F, K and V: cols x F (scale 1/sqrt(F))
//   csr_slice_rows(_dense) a seeded sample of distinct rows, in random order
//   csr_induced_subgraph  a seeded sample of distinct vertices, in random order
//   csr_transpose         the graph itself
//
// Work and traffic counted (median time t):
//   GFLOP/s: spmm, gather_scatter, sddmm 2*nnz*F; segment/scatter_reduce E*F; csr_attention 4*nnz*F
//            (the q.k dots and the weighted sum; the softmax's exp is not counted); structural ops none.
//   gathered bytes: dense rows read through the sparse pattern: spmm, gather_scatter sizeof(V)*F*nnz
//            (rows of B / x); sddmm sizeof(V)*F*nnz (rows of Y; X rows are reused along a row);
//            segment/scatter_reduce sizeof(V)*E*F (message rows); csr_attention 2*sizeof(V)*F*nnz (K
//            and V rows); structural ops the selected entries (sizeof(I) + sizeof(V), or sizeof(I)
//            for a pattern, per entry read).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "json.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::cli {

struct WorkloadSpec {
  sparseport_op op = SPARSEPORT_OP_SPMM;
  int64_t features = 64;  // F
  Reduce reduce = Reduce::sum;
  uint64_t seed = 1;
  int64_t sample = 0;  // rows / vertices to select for the slicing ops; 0: the op's default
  bool show_progress = true;
};

struct Verdict {
  bool ok = false;
  double max_abs_err = 0.0;
  double worst_ratio = 0.0;       // the largest |got - want| / tolerance; ok means <= 1
  bool exact = false;             // compared for equality (structural results), not within a tolerance
  std::string reference_variant;  // what computed the expected result
  std::string detail;             // the first mismatch as a sentence; empty when ok
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Readies the output for a fresh variant. Dense outputs are filled with NaN, so a variant that
  // leaves an element unwritten cannot pass by inheriting an earlier variant's answer.
  virtual void reset() = 0;
  // One call of the op; variant empty lets the scheduler choose. Does not synchronise.
  virtual void run(const std::string& variant) = 0;
  // Compares the last run's result with the reference (computed once, on first use).
  virtual Verdict verify() = 0;
  virtual std::optional<double> flops() const = 0;
  virtual double gathered_bytes() const = 0;
  // Rows or vertices selected, for the slicing ops; 0 otherwise.
  virtual int64_t selected() const { return 0; }

  // For a driver that runs the op elsewhere and only verifies here (`run --dist`), on a host
  // context: the dense operand the op reads through the sparse pattern (B of spmm, x of
  // gather_scatter, Y of sddmm) or, for segment_reduce (sorted), the messages (one row per edge in
  // the graph's storage order); the one it reads along the graph's rows (X of sddmm); and the
  // output that verify() checks. nullopt where the op has no such driver.
  virtual std::optional<DenseView> host_input() const { return std::nullopt; }
  virtual std::optional<DenseView> host_row_input() const { return std::nullopt; }
  virtual std::optional<DenseMutView> host_output() { return std::nullopt; }
  // What the report adds for this workload (the distributed one: ranks, halo, times), and the
  // decision behind the last run when the op's last call does not hold it (last_decision()).
  virtual void report(JsonObject&) const {}
  virtual std::string report_line() const { return {}; }
  virtual std::optional<Decision> decision() const { return std::nullopt; }
};

bool op_uses_features(sparseport_op op);
bool op_uses_reduce(sparseport_op op);

// graph must outlive the workload. Throws InvalidArgument for a sample that does not fit the graph.
template <class I, class V>
std::unique_ptr<Workload> make_workload(const Context& ctx, const HostCsr<I, V>& graph, const WorkloadSpec& spec);

}  // namespace sparseport::cli
