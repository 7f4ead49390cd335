// SPDX-License-Identifier: Apache-2.0
// `sparseport run`'s workloads (workloads.hpp): which options an op uses, the reference backend
// and its variant that compute the expected results, and make_workload, which hands an op to its
// family's factory (workloads_internal.hpp).
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "workloads_internal.hpp"

namespace sparseport::cli {

bool op_uses_features(sparseport_op op) {
  switch (op) {
    case SPARSEPORT_OP_SPMM:
    case SPARSEPORT_OP_SDDMM:
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE:
    case SPARSEPORT_OP_GATHER_SCATTER:
    case SPARSEPORT_OP_CSR_ATTENTION: return true;
    default: return false;
  }
}

bool op_uses_reduce(sparseport_op op) {
  return op == SPARSEPORT_OP_SPMM || op == SPARSEPORT_OP_SEGMENT_REDUCE || op == SPARSEPORT_OP_SCATTER_REDUCE ||
         op == SPARSEPORT_OP_GATHER_SCATTER;
}

namespace workload_impl {

const Context& reference_context() {
  static const Context ctx = Context::create("reference");
  return ctx;
}

// The oracle: the reference's double-accumulating variant where it has one, else its default.
std::string reference_variant(sparseport_op op) {
  const std::string want = std::string(op_name(op)) + ".serial_f64acc";
  for (const std::string& v : plugin("reference").variants_of(op))
    if (v == want) return v;
  return {};
}

std::string reference_label(sparseport_op op) {
  std::string v = reference_variant(op);
  if (!v.empty()) return "reference/" + v;
  for (const VariantInfo& info : plugin("reference").variants)
    if (info.op == op && info.is_default) return "reference/" + info.name;
  return "reference";
}

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// The default sample of the slicing ops: a mini-batch of rows, or the probe's induced subgraph
// (about 3% of the rows, at least 512; DESIGN.md section 4).
int64_t sample_size(sparseport_op op, int64_t requested, int64_t rows) {
  if (requested > rows)
    throw InvalidArgument("sparseport run: --sample " + std::to_string(requested) + " is more than the graph's " +
                          std::to_string(rows) + " rows (the sample is of distinct rows)");
  if (requested > 0) return requested;
  if (op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH)
    return std::min(rows, std::max<int64_t>(512, static_cast<int64_t>(std::ceil(0.03 * static_cast<double>(rows)))));
  return std::min<int64_t>(rows, 1024);
}

}  // namespace workload_impl

using namespace workload_impl;

template <class I, class V>
std::unique_ptr<Workload> make_workload(const Context& ctx, const HostCsr<I, V>& graph, const WorkloadSpec& spec) {
  switch (spec.op) {
    case SPARSEPORT_OP_SPMM: return make_spmm_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_SDDMM: return make_sddmm_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_SEGMENT_REDUCE: return make_segment_work<I, V>(ctx, graph, spec, true);
    case SPARSEPORT_OP_SCATTER_REDUCE: return make_segment_work<I, V>(ctx, graph, spec, false);
    case SPARSEPORT_OP_GATHER_SCATTER: return make_gather_scatter_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_ATTENTION: return make_attention_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_SLICE_ROWS:
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: return make_select_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: return make_slice_dense_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_TRANSPOSE: return make_transpose_work<I, V>(ctx, graph, spec);
    case SPARSEPORT_OP_COUNT: break;
  }
  throw InvalidArgument("sparseport run: op id " + std::to_string(static_cast<int>(spec.op)) + " is not a known op");
}

template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, float>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, double>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, float>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, double>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, half>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, bfloat16>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, half>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, bfloat16>&, const WorkloadSpec&);

}  // namespace sparseport::cli
