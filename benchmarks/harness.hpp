// SPDX-License-Identifier: Apache-2.0
// What every benchmark suite shares, whatever device it times: the run configuration (environment
// and --sp_* flags), the traffic and work model of each op, the baseline-per-op table, the host
// copy-bandwidth measurement, and the counters every row carries (DESIGN.md section 5).
// A device suite (bench_cuda.cpp) measures its own copy bandwidth and times with device events,
// then calls set_row_counters() with the same model, so rows of all suites read alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "datasets.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::bench {

// The ops the suites time, in registration order.
const std::vector<sparseport_op>& benchmarked_ops();

struct BenchConfig {
  SuiteSize size = SuiteSize::small;      // SPARSEPORT_BENCH_SIZE
  std::vector<int64_t> features;           // SPARSEPORT_BENCH_F, e.g. "1,16,64"
  std::string graph_regex;                 // --sp_graphs=REGEX or SPARSEPORT_BENCH_GRAPHS
  std::string data_dir;                    // SPARSEPORT_DATA_DIR or the configure-time default
  int threads = 0;                         // SPARSEPORT_BENCH_THREADS; 0: each backend's default
  double max_operand_gb = 0.0;             // SPARSEPORT_BENCH_MAX_GB; rows needing more are skipped
  bool check = true;                       // SPARSEPORT_BENCH_CHECK=0 turns the gross check off
  double copy_gbps = 0.0;                  // SPARSEPORT_BENCH_COPY_GBPS: use instead of measuring
  bool list_only = false;                  // --sp_list: print the datasets and exit
};

// Reads the environment, then takes the --sp_* flags out of argv (flags win over the environment),
// leaving the rest for benchmark::Initialize. Throws InvalidArgument naming the variable or flag.
BenchConfig parse_config(int* argc, char** argv);
// One line per flag and variable, for --help.
std::string config_help();
// "16,64" as {16, 64}; InvalidArgument naming `what` for anything but positive integers.
std::vector<int64_t> parse_features(const std::string& what, const std::string& text);

// ---- traffic and work per op --------------------------------------------------------------------
//
// Inputs as the suites build them (fp32 values, int32 indices; m x k graph A with nnz entries,
// r = rows of A holding an entry, c = distinct columns of A holding an entry, V = 4, I = 4):
//
//   op              compulsory bytes (each input read once, each output written once)       flops        gathered bytes
//   spmm            A: (m+1)I + nnz(I+V);  B: c*F*V (only rows of B that A touches);         2*nnz*F      V*F*nnz (rows of B)
//                   C: m*F*V written (beta = 0: C is not read)
//   sddmm           A: (m+1)I + nnz(I+V);  X: r*F*V;  Y: c*F*V;  out: nnz*V written          2*nnz*F      V*F*nnz (rows of Y)
//   segment_reduce  index: E*I;  src: E*F*V;  out: m*F*V written   (E = nnz)                 E*F          V*F*E (message rows)
//   gather_scatter  dst, src: 2*E*I;  w: E*V;  x: c*F*V;  out: m*F*V written                 2*E*F        V*F*E (rows of x)
//   csr_attention   A: (m+1)I + nnz*I (values ignored);  Q: r*F*V;  K, V: 2*c*F*V;           4*nnz*F      2*V*F*nnz (K and V rows)
//                   out: m*F*V written
//   scatter_reduce  as segment_reduce (the same index, in another order)                      E*F          V*F*E
//   csr_transpose   A: (m+1)I + nnz(I+V);  out: (k+1)I + nnz(I+V) written  (F not used)       0            nnz*(I+V) (entries moved)
//
// spmm's mean, max and min (the "spmm_mean", "spmm_max", "spmm_min" rows) read and write what the
// sum does; their model is spmm's.
//
// The row slices (a selection of s rows of A, in the given order, holding e entries together):
//
//   op                    compulsory bytes                                                    flops  gathered bytes
//   csr_slice_rows        rows: s*I;  A.rowptr: 2*s*I (each row's two bounds);                0      e*(I+V) (the rows' entries)
//                         A's selected entries: e*(I+V);  out: (s+1)*I + e*(I+V) written
//   csr_slice_rows_dense  rows: s*I;  A.rowptr: 2*s*I;  A's selected entries: e*(I+V);        0      e*(I+V)
//                         out: s*k*V written (the whole dense s x k output, zeros included)
//   csr_induced_subgraph  vertices: s*I;  A.rowptr: 2*s*I;  their rows' entries: e*(I+V);     0      e*(I+V)
//                         out: (s+1)*I + kept*(I+V) written (kept: entries whose column is a vertex too)
//
// The flop and gathered-byte conventions are those of `sparseport run` (src/cli/workloads.hpp);
// the softmax's exp is not counted. Write-allocate traffic is not counted (the floor is a floor).
struct OpModel {
  double compulsory_bytes = 0;
  double flops = 0;
  double gathered_bytes = 0;
  double operand_bytes = 0;  // what the suite allocates for the op (graph excluded): the memory cap
};
OpModel op_model(sparseport_op op, const Graph& g, int64_t features);

// The rows a slice op takes: how many, and the entries they hold together.
struct RowSelection {
  int64_t rows = 0;
  int64_t entries = 0;
  int64_t kept = 0;  // csr_induced_subgraph: the selected rows' entries whose column is selected too
};
// The model of csr_slice_rows, csr_slice_rows_dense and csr_induced_subgraph (table above);
// InvalidArgument for other ops.
OpModel op_model(sparseport_op op, const Graph& g, const RowSelection& sel);

// The op field of a row's name: the op's name, with the reduce appended for spmm other than sum
// ("spmm_mean", "spmm_max"), so a report never mixes a mean row with a sum row of the same input.
std::string row_op_label(sparseport_op op, Reduce reduce);

// ---- baselines ----------------------------------------------------------------------------------
//
// Every row reports its time against one baseline variant of the same backend, run in the same
// process on the same input: the backend's vendor variant for the op when it has one
// (PluginInfo::vendor_variant), otherwise the first variant the backend lists from this table,
// otherwise the backend's default variant for the op.
struct Baseline {
  std::string variant;  // "" when the backend offers nothing for the op
  bool vendor = false;
};
Baseline baseline_for(const PluginInfo& plugin, sparseport_op op);
// What a suite tries in order on a row's input, taking the first that runs (as the scheduler's
// guardrail takes the first vendor variant that applies): every vendor variant in the backend's
// order (specialised ones first, e.g. cuda's spmm.cusparse_spmv at F = 1), then baseline_for's
// fallback when there is no vendor.
std::vector<Baseline> baseline_candidates(const PluginInfo& plugin, sparseport_op op);
// The same for a reduce: for spmm with mean, max or min, where no vendor SpMM applies (cuSPARSE and
// MKL compute sums only), the atomic scatter of PyTorch Geometric's scatter path (torch_scatter on
// gathered messages, here gather_scatter's named atomic baseline with the same reduce, run on the
// same operands: the graph's COO form, B as x, C as out), then baseline_for's non-vendor fallback
// (the table's spmm.rows, else the backend's default spmm variant). Other ops and sum: as above.
std::vector<Baseline> baseline_candidates(const PluginInfo& plugin, sparseport_op op, Reduce reduce);
// The table itself (what compilers or users write today), for the README and the context line.
const std::vector<std::string>& named_baselines(sparseport_op op);

// ---- copy bandwidth -----------------------------------------------------------------------------

struct CopyBandwidth {
  double gbps = 0.0;        // STREAM Copy convention: 2 * bytes / t (one read, one write), 1e9 bytes/s
  int64_t buffer_bytes = 0; // each of the two buffers
  int threads = 0;
  int repeats = 0;
  std::string how;          // a sentence saying what was measured
};
// Best of `repeats` copies of a buffer of max(256 MiB, 8 x the last-level cache), at most 1 GiB
// and 1/8 of the physical memory, split evenly over `threads` std::threads. Buffers are touched first by
// the thread that copies them.
CopyBandwidth measure_host_copy_bandwidth(int threads, int repeats = 5);

// ---- counters -----------------------------------------------------------------------------------

struct RowTimes {
  double seconds = 0.0;           // median time of one call of the measured variant
  double baseline_seconds = 0.0;  // time of one call of the baseline (0: none)
};

// Sets median_ms (t), GB/s (gathered bytes / t), GFLOP/s, floor_frac (compulsory bytes / t / copy
// bandwidth), floor_ms (compulsory bytes / copy bandwidth), and when a baseline time is known
// baseline_ms and speedup (baseline time / t).
void set_row_counters(benchmark::State& state, const OpModel& model, const RowTimes& t, double copy_gbps);

// Median of a small sample (copies it).
double median(std::vector<double> v);

// Benchmark names: "op/backend/variant/graph/F".
std::string row_name(sparseport_op op, const std::string& backend, const std::string& variant,
                     const std::string& graph, int64_t features);

// Rows of sparseport::spmv: spmm's variants at F = 1 called through spmv (x and y as vectors),
// named "spmv/backend/variant/graph/1", with spmm's traffic model at F = 1.
inline constexpr const char* kSpmvRow = "spmv";
std::string row_name(const std::string& op, const std::string& backend, const std::string& variant,
                     const std::string& graph, int64_t features);

// Hardware threads, OMP_NUM_THREADS, and the requested count, as one line for the context.
std::string thread_summary(int requested);
// The threads a host backend will use when the context asks for `requested` (0: its default).
int effective_host_threads(int requested);

}  // namespace sparseport::bench
