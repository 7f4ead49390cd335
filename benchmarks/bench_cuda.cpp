// SPDX-License-Identifier: Apache-2.0
// sparseport_bench_cuda: the GPU suite of issue 4. One Google Benchmark row per (op, variant, graph,
// F) for every variant the cuda plugin lists, named "op/cuda/variant/graph/F" like the CPU suite's
// rows, with the same counters (harness.hpp), so report.py reads both.
//
// How a row is timed (README.md, "The CUDA suite"):
//  - operands live in device memory (Context::allocate, Context::copy_to_backend); the dense
//    operands and the output are allocated in several copies, so that the copies together exceed
//    a few times the L2, and each call uses the next copy: no call finds its dense inputs in the L2
//    because the previous call left them there. The graph's arrays (CSR, COO row index) are one copy.
//  - every call is bracketed by its own pair of CUDA events on the context's stream
//    (plugins/cuda/diagnostics.h); calls are queued in batches behind a device-to-device copy
//    ("ballast") long enough that the host has queued the whole batch before the GPU reaches it,
//    so an event pair measures GPU time, not the host's time to queue the call. The row's counters
//    use the median per call.
//  - each variant's first call (plans, lazy module loading) is an untimed warm-up whose output is
//    checked against the baseline's (spmm, sddmm: the vendor variant, cuSPARSE; the others: the
//    atomic variant or the unfused attention), so a wrong kernel never gets a time.
//  - the copy bandwidth of the floor is measured on the device in the same run.
// Without a usable CUDA device the program says why and exits 0 (nothing to time).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>

#include "datasets.hpp"
#include "cuda_timing.hpp"
#include "harness.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;
using namespace sparseport::bench;
using Clock = std::chrono::steady_clock;

const Clock::time_point kProgramStart = Clock::now();

// Seeds of the dense operands (as in the CPU suite): fixed, so every run times the same numbers.
constexpr uint64_t kSeedRows = 11, kSeedCols = 12, kSeedCols2 = 13, kSeedMessages = 14;

// The generated graphs of issue 4's GPU suite, taken from the registry's full list; real matrices
// come from SPARSEPORT_DATA_DIR as in every suite.
const std::set<std::string>& gpu_full_generators() {
  static const std::set<std::string> s = {"er:200000:2e-5", "rmat:20:16", "megarow:2000000:16:0.05",
                                          "band:1000000:16"};
  return s;
}

// Inputs the graphs above do not give, full size only, each timed for the ops it lists (every
// variant of each), registered after every graph: issue 4's, the seed report's slice, the probe
// slice of rmat:20:16, the twins, then the twins' probe slices. A regex of --sp_graphs applies to
// their names as to the graphs (--sp_graphs=twin: the twins and their probe slices; =slice: the
// slices); so does the F of --sp_f (intersected with an input's own F).
//
// Issue 4's targets:
//  - "The nnz-balanced segment reduction sustains >= 3 TB/s effective on 60M sorted messages at
//    F = 64, for uniform and for hub-dominated indices alike": seg60m:uniform and seg60m:hubs, the
//    indices of segment_suite in tests/cuda/cuda_timing.cpp (so the numbers compare), F = 64 only;
//    their rows add the counter eff_TB/s, 4*(E + E*F + N*F) bytes / time, as cuda_timing prints.
//  - "The mega-row graph runs within 1.2x of a uniform random graph with the same n and nnz":
//    er:2000000:8e-6 (2M rows, N*N*P = 32M entries expected; 32,008,095 drawn) beside
//    megarow:2000000:16:0.05 (2M rows, 32M entries), for spmm at the suite's F.
// Issue 14, item 5, the GNN-scale twins (datasets.hpp, twin_datasets): products-twin and
// reddit-twin at F = 64, 128, 256 for spmm (sum against cuSPARSE; mean and max, rows "spmm_mean"
// and "spmm_max", against the atomic gather-scatter with the same reduce, harness.hpp's
// baseline_candidates), sddmm, csr_attention (fused and unfused) and segment_reduce (whose E x F
// messages need 128 GB on products-twin and 117 GB on reddit-twin at F = 256: over the default cap
// of 70 % of the free device memory, so those rows are skipped unless SPARSEPORT_BENCH_MAX_GB
// raises it; an H200 holds them with SPARSEPORT_BENCH_MAX_GB=135).
// Issue 14, item 6, csr_slice_rows (rows named ".../0": no feature width; no baseline, floor_frac
// is the figure):
//  - slice-report:5000x1000: the workload of ../shared/reference/csr-slice-rows-report.md (1.25 ms
//    on an A100, 36 % of its scatter bound): 5000 distinct rows in random order of a 10000 x 10000
//    matrix holding exactly 1000 random columns per row (hubs:10000:1000:0:0), sliced to a dense
//    5000 x 10000 output (csr_slice_rows_dense) and to a CSR (csr_slice_rows).
//  - probe-slice:GRAPH: the scheduler's probe sample (scheduler/timing.cpp, ProbeSample): 3 % of
//    the rows (at least 512), stratified by degree, sliced to a CSR with csr_slice_rows as a cold
//    decision does before timing candidates on a large input; on both twins and rmat:20:16.
struct RowKind {
  sparseport_op op;
  Reduce reduce;
};

// The rows a slice op selects (Selection::none for the other ops).
enum class Selection { none, report, probe };

struct ExtraInput {
  DatasetSpec spec;
  std::vector<RowKind> kinds;
  std::vector<int64_t> features;  // empty: the suite's; slice rows take none (F = 0)
  std::string why;                // for --sp_list and the context
  Selection select;
};

constexpr const char* kSegmentSource = "segments:";  // source of a segment input: "segments:E:uniform|hubs"

// The seed report's workload and the probe's sample (see above; the probe's fraction and floor are
// SchedulerOptions' defaults, include/sparseport/plan.hpp).
constexpr int64_t kSliceReportRows = 5000;
constexpr double kProbeFrac = 0.03;
constexpr int64_t kProbeMinRows = 512;
constexpr uint64_t kSeedSlice = 16;

bool is_slice_op(sparseport_op op) {
  return op == SPARSEPORT_OP_CSR_SLICE_ROWS || op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE;
}

const std::vector<ExtraInput>& extra_inputs() {
  static const std::vector<ExtraInput> s = [] {
    const RowKind spmm{SPARSEPORT_OP_SPMM, Reduce::sum};
    std::vector<ExtraInput> v = {
        {{"er:2000000:8e-6", "er:2000000:8e-6", false}, {spmm}, {},
         "spmm only: the uniform companion of megarow:2000000:16:0.05", Selection::none},
        {{"seg60m:uniform", "segments:60000000:uniform", false}, {{SPARSEPORT_OP_SEGMENT_REDUCE, Reduce::sum}}, {64},
         "segment_reduce only, F = 64: 60M sorted messages, 16 per segment", Selection::none},
        {{"seg60m:hubs", "segments:60000000:hubs", false}, {{SPARSEPORT_OP_SEGMENT_REDUCE, Reduce::sum}}, {64},
         "segment_reduce only, F = 64: 60M sorted messages, half in 8 hub segments, the rest 16 per segment",
         Selection::none},
    };
    const std::vector<RowKind> gnn = {spmm,
                                      {SPARSEPORT_OP_SPMM, Reduce::mean},
                                      {SPARSEPORT_OP_SPMM, Reduce::max},
                                      {SPARSEPORT_OP_SDDMM, Reduce::sum},
                                      {SPARSEPORT_OP_CSR_ATTENTION, Reduce::sum},
                                      {SPARSEPORT_OP_SEGMENT_REDUCE, Reduce::sum}};
    const RowKind slice_csr{SPARSEPORT_OP_CSR_SLICE_ROWS, Reduce::sum};
    const auto probe = [&](const DatasetSpec& g) {
      return ExtraInput{{"probe-slice:" + g.name, g.source, false}, {slice_csr}, {},
                        "csr_slice_rows: the scheduler's probe sample of " + g.name +
                            " (3 % of the rows, at least 512, stratified by degree)",
                        Selection::probe};
    };
    // The cheap slices first, so a deadline that the twins reach still leaves them their rows.
    v.push_back({{"slice-report:5000x1000", "hubs:10000:1000:0:0", false},
                 {{SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE, Reduce::sum}, slice_csr},
                 {},
                 "csr_slice_rows_dense and csr_slice_rows: 5000 distinct rows in random order, 1000 entries each, of "
                 "hubs:10000:1000:0:0 (the seed report's workload)",
                 Selection::report});
    v.push_back(probe({"rmat:20:16", "rmat:20:16", false}));
    for (const DatasetSpec& t : twin_datasets())
      v.push_back({t, gnn, {64, 128, 256},
                   "GNN-scale twin: spmm sum/mean/max, sddmm, csr_attention, segment_reduce at F = 64, 128, 256",
                   Selection::none});
    for (const DatasetSpec& t : twin_datasets()) v.push_back(probe(t));
    return v;
  }();
  return s;
}

bool is_segment_input(const DatasetSpec& d) { return !d.is_file && d.source.rfind(kSegmentSource, 0) == 0; }

// A segment input as a Graph: the index is coo_row (what segment_reduce reads), N = csr.rows
// segments, E = nnz messages; the CSR is the index's incidence matrix (row = segment, column = the
// message's position), so the suite's model (op_model: 4*(E + E*F + N*F) compulsory bytes) and its
// widest-row result sample apply unchanged. Built on first use and kept (Google Benchmark's
// repetitions rerun a row); no values (a pattern): segment_reduce never reads them.
std::shared_ptr<const Graph> load_segment_input(const DatasetSpec& d) {
  static std::map<std::string, std::shared_ptr<const Graph>> cache;
  if (auto it = cache.find(d.source); it != cache.end()) return it->second;
  const auto t0 = Clock::now();
  const std::string rest = d.source.substr(std::strlen(kSegmentSource));
  const size_t colon = rest.find(':');
  const std::string kind = colon == std::string::npos ? "" : rest.substr(colon + 1);
  const int64_t E = std::atoll(rest.substr(0, colon).c_str());
  if (E < 32 || E > std::numeric_limits<int32_t>::max() || (kind != "uniform" && kind != "hubs"))
    throw InvalidArgument("sparseport_bench_cuda: the segment input '" + d.name + "' has source '" + d.source +
                          "', which is not segments:E:uniform or segments:E:hubs with 32 <= E < 2^31.");
  auto g = std::make_shared<Graph>();
  g->name = d.name;
  // As segment_suite in tests/cuda/cuda_timing.cpp: uniform e / 16 (N = E / 16); hubs: the first
  // half of the messages in 8 segments, the rest 16 per segment (N = 8 + (E - half) / 16 + 1).
  const int64_t half = E / 2;
  const bool hubs = kind == "hubs";
  const int64_t N = hubs ? 8 + (E - half) / 16 + 1 : E / 16;
  std::vector<int32_t>& idx = g->coo_row;
  idx.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e)
    idx[static_cast<size_t>(e)] = static_cast<int32_t>(hubs ? (e < half ? e * 8 / half : 8 + (e - half) / 16) : e / 16);
  HostCsr<int32_t, float>& a = g->csr;
  a.rows = N;
  a.cols = E;
  a.rowptr.assign(static_cast<size_t>(N) + 1, 0);
  for (int32_t i : idx) ++a.rowptr[static_cast<size_t>(i) + 1];
  for (int64_t i = 0; i < N; ++i) {
    if (a.rowptr[static_cast<size_t>(i) + 1] > 0) ++g->nonempty_rows;
    a.rowptr[static_cast<size_t>(i) + 1] += a.rowptr[static_cast<size_t>(i)];
  }
  a.colind.resize(static_cast<size_t>(E));
  std::iota(a.colind.begin(), a.colind.end(), 0);
  g->touched_cols = E;
  g->load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return cache.emplace(d.source, std::move(g)).first->second;
}

// ---- the slice ops' row selections ----------------------------------------------------------------

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// s distinct rows of [0, n) in random order (a partial Fisher-Yates shuffle on splitmix64, so every
// platform draws the same rows): a mini-batch, as `sparseport run --op csr_slice_rows_dense` takes.
std::vector<int32_t> distinct_rows(int64_t n, int64_t s, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  s = std::min(s, n);
  uint64_t state = seed;
  for (int64_t i = 0; i < s; ++i) {
    const int64_t j = i + static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(n - i));
    std::swap(ids[static_cast<size_t>(i)], ids[static_cast<size_t>(j)]);
  }
  ids.resize(static_cast<size_t>(s));
  return ids;
}

// The whole rows of the scheduler's probe sample as it was until 2026-12-02 (scheduler/timing.cpp,
// ProbeSample::sample_rows, restated here because the suites use the public API only): rows grouped
// by the bit width of their degree (0, 1, 2-3, 4-7, ...), max(frac, min_rows / rows) of each group
// and at least one, evenly spaced inside the group; ascending. A matrix of at most min_rows rows is
// taken whole. (The scheduler now cuts the rows of groups too small for one row to their share of
// entries; a slice of whole rows is what this row of the suite times.)
std::vector<int32_t> stratified_rows(const HostCsr<int32_t, float>& a, double frac, int64_t min_rows) {
  const int64_t rows = a.rows;
  std::vector<int32_t> out;
  if (rows <= min_rows) {
    out.resize(static_cast<size_t>(rows));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  const double f = std::min(1.0, std::max(frac, static_cast<double>(min_rows) / static_cast<double>(rows)));
  std::vector<std::vector<int32_t>> strata(64);
  for (int64_t i = 0; i < rows; ++i) {
    uint64_t d = static_cast<uint64_t>(a.rowptr[static_cast<size_t>(i) + 1] - a.rowptr[static_cast<size_t>(i)]);
    int width = 0;
    while (d != 0) {
      ++width;
      d >>= 1;
    }
    strata[static_cast<size_t>(width)].push_back(static_cast<int32_t>(i));
  }
  for (const std::vector<int32_t>& st : strata) {
    if (st.empty()) continue;
    const int64_t size = static_cast<int64_t>(st.size());
    const int64_t n = std::clamp<int64_t>(std::llround(f * static_cast<double>(size)), 1, size);
    for (int64_t j = 0; j < n; ++j) out.push_back(st[static_cast<size_t>(j * size / n)]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The selection of an input (kept: Google Benchmark reruns a row), by the input's name.
std::shared_ptr<const std::vector<int32_t>> selected_rows(const std::string& input, Selection how, const Graph& g) {
  static std::map<std::string, std::shared_ptr<const std::vector<int32_t>>> cache;
  if (auto it = cache.find(input); it != cache.end()) return it->second;
  std::vector<int32_t> rows;
  if (how == Selection::report)
    rows = distinct_rows(g.csr.rows, kSliceReportRows, kSeedSlice);
  else if (how == Selection::probe)
    rows = stratified_rows(g.csr, kProbeFrac, kProbeMinRows);
  else
    throw InvalidArgument("sparseport_bench_cuda: input '" + input + "' has no row selection for a slice op.");
  return cache.emplace(input, std::make_shared<const std::vector<int32_t>>(std::move(rows))).first->second;
}

RowSelection selection_size(const Graph& g, const std::vector<int32_t>& rows) {
  RowSelection sel;
  sel.rows = static_cast<int64_t>(rows.size());
  for (int32_t r : rows)
    sel.entries += g.csr.rowptr[static_cast<size_t>(r) + 1] - g.csr.rowptr[static_cast<size_t>(r)];
  return sel;
}

const char* env(const char* var) {
  const char* v = std::getenv(var);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

double env_double(const char* var, double fallback) {
  const char* v = env(var);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d >= 0))
    throw InvalidArgument(std::string("sparseport_bench_cuda: ") + var + " is '" + v +
                          "', which is not a non-negative number.");
  return d;
}

// ---- graphs and operands on the device -----------------------------------------------------------

template <class T>
Buffer upload(const Context& ctx, const std::vector<T>& v) {
  Buffer b = ctx.allocate(std::max<size_t>(v.size(), 1) * sizeof(T));
  if (!v.empty()) ctx.copy_to_backend(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// One graph's arrays in device memory: CSR (rowptr, colind, values) and the COO row index.
struct DeviceGraph {
  std::shared_ptr<const Graph> host;
  Buffer rowptr, colind, values, coo_row;
  int64_t widest_row = 0;  // the row with the most entries (the first such), for the result check

  DeviceGraph(const Context& ctx, std::shared_ptr<const Graph> g) : host(std::move(g)) {
    const HostCsr<int32_t, float>& c = host->csr;
    rowptr = upload(ctx, c.rowptr);
    colind = upload(ctx, c.colind);
    values = upload(ctx, c.values);
    coo_row = upload(ctx, host->coo_row);
    int64_t best = -1;
    for (int64_t i = 0; i < c.rows; ++i) {
      const int64_t d = c.rowptr[static_cast<size_t>(i) + 1] - c.rowptr[static_cast<size_t>(i)];
      if (d > best) {
        best = d;
        widest_row = i;
      }
    }
  }
  CsrView csr() const {
    const HostCsr<int32_t, float>& c = host->csr;
    return make_csr<int32_t, float>(c.rows, c.cols, c.nnz(), static_cast<const int32_t*>(rowptr.data()),
                                    static_cast<const int32_t*>(colind.data()), static_cast<const float*>(values.data()));
  }
  CooView coo() const {
    const HostCsr<int32_t, float>& c = host->csr;
    return make_coo<int32_t, float>(c.rows, c.cols, c.nnz(), static_cast<const int32_t*>(coo_row.data()),
                                    static_cast<const int32_t*>(colind.data()), static_cast<const float*>(values.data()));
  }
  IndexView index() const { return make_index<int32_t>(host->csr.nnz(), static_cast<const int32_t*>(coo_row.data())); }
  int64_t bytes() const {
    const HostCsr<int32_t, float>& c = host->csr;
    return static_cast<int64_t>((c.rowptr.size() + c.colind.size() + c.values.size() + host->coo_row.size()) * 4);
  }
};

// Host blocks of random floats (uniform in [-1, 1)), one per seed, replicated on the device to fill
// an operand: the period (2^20 floats) does not matter to the timing, and the check compares each
// variant with the baseline on the same operands.
const std::vector<float>& random_block(uint64_t seed) {
  static std::map<uint64_t, std::vector<float>> blocks;
  auto it = blocks.find(seed);
  if (it == blocks.end()) {
    std::vector<float> b(size_t{1} << 20);
    fill_random(b, seed);
    it = blocks.emplace(seed, std::move(b)).first;
  }
  return it->second;
}

void fill_device_random(const Context& ctx, cudaStream_t stream, float* dst, size_t n, uint64_t seed) {
  if (n == 0) return;
  const std::vector<float>& block = random_block(seed);
  size_t filled = std::min(n, block.size());
  ctx.copy_to_backend(dst, block.data(), filled * sizeof(float));
  while (filled < n) {  // doubling device-to-device copies
    const size_t step = std::min(filled, n - filled);
    cuda_ok(cudaMemcpyAsync(dst + filled, dst, step * sizeof(float), cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (operand fill)");
    filled += step;
  }
}

// How many copies of one call's dense operands (and output) to rotate through.
struct Rotation {
  int64_t target_bytes = 0;  // the rotated set should exceed this (a multiple of the L2)
  int64_t cap_bytes = 0;     // and stay under this
  int64_t max_copies = 1024;
  int copies_for(int64_t set_bytes) const {
    if (set_bytes <= 0 || set_bytes >= target_bytes) return 1;
    int64_t n = (target_bytes + set_bytes - 1) / set_bytes;
    n = std::min({n, max_copies, std::max<int64_t>(cap_bytes / set_bytes, 1)});
    return static_cast<int>(std::max<int64_t>(n, 1));
  }
};

// One dense role (an input or the output): `copies` matrices of rows x cols, row-major, ld = cols,
// each starting on a 256-byte boundary.
struct Role {
  int64_t rows = 0, cols = 0;
  size_t stride = 0;  // floats between copies
  Buffer buf;
  float* at(int copy) const { return static_cast<float*>(buf.data()) + stride * static_cast<size_t>(copy); }
  DenseView view(int copy) const { return make_dense<float>(rows, cols, cols, static_cast<const float*>(at(copy))); }
  DenseMutView mut(int copy) const { return make_dense<float>(rows, cols, cols, at(copy)); }
  size_t elems() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

size_t padded(size_t floats) { return (floats + 63) / 64 * 64; }

// What an OpCase computes besides op, graph and F: spmv (spmm's operands at F = 1, called through
// sparseport::spmv), spmm's reduce, and the rows a slice op selects (uploaded once per case).
struct CaseOptions {
  bool spmv = false;
  Reduce reduce = Reduce::sum;
  std::shared_ptr<const std::vector<int32_t>> rows;  // slice ops only
};

// The device operands of one op on one graph at one F, rotated through `copies` copies; shared by
// every variant of the op.
class OpCase {
 public:
  // The bytes of one copy of the dense operands and output of op (for the memory cap); `selected`:
  // the rows a slice op takes.
  static int64_t set_bytes(sparseport_op op, const Graph& g, int64_t f, int64_t selected = 0) {
    const auto shapes = role_shapes(op, g, f, selected);
    int64_t b = 0;
    for (const auto& [r, c, seed] : shapes) b += static_cast<int64_t>(padded(static_cast<size_t>(r * c))) * 4;
    return b;
  }

  OpCase(const Context& ctx, cudaStream_t stream, sparseport_op op, std::shared_ptr<const DeviceGraph> g, int64_t f,
         int copies, CaseOptions options = {})
      : op_(op), g_(std::move(g)), copies_(copies), stream_(stream), options_(std::move(options)) {
    if (is_slice_op(op_)) {
      if (options_.rows == nullptr || options_.rows->empty())
        throw InvalidArgument(std::string("sparseport_bench_cuda: ") + op_name(op_) + " needs a row selection.");
      rows_buf_ = upload(ctx, *options_.rows);
    }
    const auto shapes =
        role_shapes(op_, *g_->host, f, options_.rows ? static_cast<int64_t>(options_.rows->size()) : 0);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& [r, c, seed] = shapes[i];
      Role role;
      role.rows = r;
      role.cols = c;
      role.stride = padded(static_cast<size_t>(r * c));
      role.buf = ctx.allocate(std::max<size_t>(role.stride * static_cast<size_t>(copies_), 64) * sizeof(float));
      const bool output = i + 1 == shapes.size();
      if (!output) fill_device_random(ctx, stream_, role.at(0), role.stride * static_cast<size_t>(copies_), seed);
      roles_.push_back(std::move(role));
    }
    // Every copy of the output starts as NaN too, so no copy reads as already written.
    if (!roles_.empty()) {
      const Role& out = roles_.back();
      cuda_ok(cudaMemsetAsync(out.buf.data(), 0xff, out.stride * static_cast<size_t>(copies_) * sizeof(float), stream_),
              "cudaMemsetAsync (output)");
    }
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (operands)");
  }

  int copies() const { return copies_; }

  // scatter_reduce's index (the determinism group's: the COO rows in a shuffled order).
  void set_scatter_index(const IndexView& index) { scatter_index_ = index; }

  // One call of the op on copy `copy` of the dense operands; throws what the op throws. On an spmm
  // case, a gather_scatter variant runs spmm in COO form on the same operands (B as x, C as out):
  // the atomic baseline of spmm's mean and max (harness.hpp, baseline_candidates).
  void run(const Context& ctx, const std::string& variant, int copy) const {
    const CsrView a = g_->csr();
    switch (op_) {
      case SPARSEPORT_OP_SPMM: {
        const Role& out = roles_.back();
        if (variant.rfind("gather_scatter.", 0) == 0) {
          ReduceOptions opt;
          opt.reduce = options_.reduce;
          opt.variant = variant;
          gather_scatter(ctx, g_->coo(), roles_[0].view(copy), out.mut(copy), opt);
          break;
        }
        SpmmOptions opt;
        opt.reduce = options_.reduce;
        opt.variant = variant;
        if (options_.spmv)
          spmv(ctx, a, roles_[0].view(copy), out.mut(copy), opt);
        else
          spmm(ctx, a, roles_[0].view(copy), out.mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_SDDMM: {
        OpOptions opt;
        opt.variant = variant;
        sddmm(ctx, a, roles_[0].view(copy), roles_[1].view(copy), roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_SEGMENT_REDUCE: {
        ReduceOptions opt;
        opt.variant = variant;
        segment_reduce(ctx, g_->index(), roles_[0].view(copy), roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_GATHER_SCATTER: {
        ReduceOptions opt;
        opt.variant = variant;
        gather_scatter(ctx, g_->coo(), roles_[0].view(copy), roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_SCATTER_REDUCE: {
        ReduceOptions opt;
        opt.variant = variant;
        scatter_reduce(ctx, scatter_index_, roles_[0].view(copy), roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_ATTENTION: {
        AttentionOptions opt;
        opt.variant = variant;
        csr_attention(ctx, a, roles_[0].view(copy), roles_[1].view(copy), roles_[2].view(copy),
                      roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: {
        OpOptions opt;
        opt.variant = variant;
        csr_slice_rows_dense(ctx, a, rows(), roles_.back().mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_SLICE_ROWS: {
        // The result (allocated by the call, its entry count read back between the two phases, as
        // the probe pays it) is freed on return, outside the timed events.
        OpOptions opt;
        opt.variant = variant;
        const CsrMatrix m = csr_slice_rows(ctx, a, rows(), opt);
        (void)m;
        break;
      }
      default:
        throw InvalidArgument(std::string("sparseport_bench_cuda: op '") + op_name(op_) + "' has no GPU benchmark.");
    }
  }

  // csr_slice_rows' result of one call, on the host (for the warm-up's check).
  HostCsr<int32_t, float> slice_result(const Context& ctx, const std::string& variant) const {
    OpOptions opt;
    opt.variant = variant;
    return ctx.to_host<int32_t, float>(csr_slice_rows(ctx, g_->csr(), rows(), opt));
  }

  // NaN in copy 0 of the output, so a variant that leaves an element unwritten fails the check.
  void poison_output() const {
    if (roles_.empty()) return;
    const Role& out = roles_.back();
    cuda_ok(cudaMemsetAsync(out.at(0), 0xff, out.elems() * sizeof(float), stream_), "cudaMemsetAsync (poison)");
  }

  // Copy 0 of the output, or for a large output a fixed sample of it: its first 2^18 elements,
  // the elements of the widest row (a hub serialises row-parallel kernels and splits others), and
  // 512 evenly spaced runs of 4096 elements. Waits for the stream. Empty without a dense output.
  std::vector<float> output_sample() const {
    if (roles_.empty()) return {};
    const SamplePlan plan = sample_plan();
    const float* d = roles_.back().at(0);
    std::vector<float> h(plan.total());
    size_t at = 0;
    for (const SampleRange& r : plan.ranges) {
      if (r.count == 0) continue;
      cuda_ok(cudaMemcpyAsync(h.data() + at, d + r.first, r.count * sizeof(float), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (result to host)");
      at += r.count;
    }
    if (plan.stride > 0)
      cuda_ok(cudaMemcpy2DAsync(h.data() + at, SamplePlan::kRun * sizeof(float), d, plan.stride * sizeof(float),
                                SamplePlan::kRun * sizeof(float), SamplePlan::kRuns, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpy2DAsync (result sample to host)");
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (result to host)");
    return h;
  }

  // What csr_slice_rows_dense must give at the elements output_sample() reads, from the host graph:
  // row t of the output is row rows[t] of A scattered (columns are sorted and unique: one entry at most).
  std::vector<float> expected_slice_dense_sample() const {
    const HostCsr<int32_t, float>& c = g_->host->csr;
    const std::vector<int32_t>& sel = *options_.rows;
    const auto value_at = [&](size_t p) -> float {
      const size_t t = p / static_cast<size_t>(c.cols), col = p % static_cast<size_t>(c.cols);
      const auto first = c.colind.begin() + c.rowptr[static_cast<size_t>(sel[t])];
      const auto last = c.colind.begin() + c.rowptr[static_cast<size_t>(sel[t]) + 1];
      const auto it = std::lower_bound(first, last, static_cast<int32_t>(col));
      if (it == last || *it != static_cast<int32_t>(col)) return 0.0f;
      return c.values[static_cast<size_t>(it - c.colind.begin())];
    };
    const SamplePlan plan = sample_plan();
    std::vector<float> h;
    h.reserve(plan.total());
    for (const SampleRange& r : plan.ranges)
      for (size_t p = r.first; p < r.first + r.count; ++p) h.push_back(value_at(p));
    if (plan.stride > 0)
      for (size_t run = 0; run < SamplePlan::kRuns; ++run)
        for (size_t p = run * plan.stride; p < run * plan.stride + SamplePlan::kRun; ++p) h.push_back(value_at(p));
    return h;
  }

 private:
  struct SampleRange {
    size_t first, count;
  };
  // Which elements of the output output_sample() reads: ranges, then (stride > 0) kRuns runs of kRun.
  struct SamplePlan {
    static constexpr size_t kWhole = size_t{1} << 22, kHead = size_t{1} << 18, kRuns = 512, kRun = 4096;
    std::vector<SampleRange> ranges;
    size_t stride = 0;  // of the evenly spaced runs; 0: none
    size_t total() const {
      size_t n = stride > 0 ? kRuns * kRun : 0;
      for (const SampleRange& r : ranges) n += r.count;
      return n;
    }
  };

  SamplePlan sample_plan() const {
    const Role& out = roles_.back();
    const size_t n = out.elems();
    SamplePlan plan;
    if (n <= SamplePlan::kWhole) {
      plan.ranges.push_back({0, n});
      return plan;
    }
    plan.ranges.push_back({0, SamplePlan::kHead});
    const HostCsr<int32_t, float>& c = g_->host->csr;
    const size_t w = static_cast<size_t>(g_->widest_row);
    if (op_ == SPARSEPORT_OP_SDDMM)  // one output element per stored entry
      plan.ranges.push_back({static_cast<size_t>(c.rowptr[w]),
                             std::min(SamplePlan::kHead, static_cast<size_t>(c.rowptr[w + 1] - c.rowptr[w]))});
    else
      plan.ranges.push_back({w * static_cast<size_t>(out.cols), static_cast<size_t>(out.cols)});
    plan.stride = (n - SamplePlan::kRun) / (SamplePlan::kRuns - 1);  // >= kRun since n > kWhole
    for (SampleRange& r : plan.ranges) r.count = std::min(r.count, n - std::min(r.first, n));
    return plan;
  }

  IndexView rows() const {
    return make_index<int32_t>(static_cast<int64_t>(options_.rows->size()), static_cast<const int32_t*>(rows_buf_.data()));
  }

  // (rows, cols, seed) of each dense role in order, the output last; none for csr_slice_rows (its
  // output is a CSR the call allocates).
  static std::vector<std::tuple<int64_t, int64_t, uint64_t>> role_shapes(sparseport_op op, const Graph& g, int64_t f,
                                                                         int64_t selected) {
    const int64_t m = g.csr.rows, k = g.csr.cols, nnz = g.csr.nnz();
    switch (op) {
      case SPARSEPORT_OP_SPMM:
      case SPARSEPORT_OP_GATHER_SCATTER: return {{k, f, kSeedCols}, {m, f, 0}};
      case SPARSEPORT_OP_SDDMM: return {{m, f, kSeedRows}, {k, f, kSeedCols}, {nnz, 1, 0}};
      case SPARSEPORT_OP_SEGMENT_REDUCE:
      case SPARSEPORT_OP_SCATTER_REDUCE: return {{nnz, f, kSeedMessages}, {m, f, 0}};
      case SPARSEPORT_OP_CSR_ATTENTION: return {{m, f, kSeedRows}, {k, f, kSeedCols}, {k, f, kSeedCols2}, {m, f, 0}};
      case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: return {{selected, k, 0}};
      case SPARSEPORT_OP_CSR_SLICE_ROWS: return {};
      default:
        throw InvalidArgument(std::string("sparseport_bench_cuda: op '") + op_name(op) + "' has no GPU benchmark.");
    }
  }

  sparseport_op op_;
  std::shared_ptr<const DeviceGraph> g_;
  int copies_;
  cudaStream_t stream_;
  CaseOptions options_;
  Buffer rows_buf_;  // the slice ops' selection on the device
  std::vector<Role> roles_;
  IndexView scatter_index_{};
};

// ---- the suite ---------------------------------------------------------------------------------

struct BaselineRun {
  Baseline which;
  double seconds = 0.0;       // median per call; 0 when it could not run
  std::vector<float> output;  // (a sample of) its output, for the gross check of the other variants
  std::string error;
};

// The operands of the (graph, F, op) being timed; rows are registered graph by graph, F by F, op
// by op, so consecutive rows (every variant of one op) share them.
struct Slot {
  std::string key;
  std::unique_ptr<OpCase> op_case;
  std::unique_ptr<BaselineRun> baseline;
  std::set<std::string> prepared;         // variants already warmed up and checked
  std::map<std::string, CallCost> costs;  // by variant, carried over Google Benchmark's reruns of a row
  int next_copy = 0;                      // the rotation goes on across calls, variants and reruns
};

// The determinism group's operands (one (graph, F, op) at a time) and its default-mode baselines.
struct DetSlot {
  std::string key;
  std::unique_ptr<OpCase> op_case;
  Buffer shuffled;  // scatter_reduce's index
  std::map<std::string, double> default_seconds;             // by case name
  std::map<std::string, std::vector<float>> default_output;  // by case name
  std::map<std::string, std::string> default_ran;            // the variant default mode ran, by case name
  std::map<std::string, CallCost> costs;
  int next_copy = 0;
};

struct Suite {
  BenchConfig cfg;
  double copy_gbps = 0.0;
  double deadline_s = 0.0;  // SPARSEPORT_BENCH_DEADLINE_S; 0: none
  double baseline_min_s = 0.02;
  DeviceFacts facts;
  Rotation rotation;
  std::unique_ptr<Context> ctx;
  cudaStream_t stream = nullptr;
  std::unique_ptr<EventTimer> timer;
  std::shared_ptr<const DeviceGraph> graph;  // the graph on the device now
  Slot slot;
  DetSlot det;
};

// The first difference larger than a loose tolerance, as a sentence; empty when none (as the CPU
// suite: fp32 sums in another order differ in the last bits; this only keeps a broken variant --
// NaN, unwritten or wrong elements -- out of the table).
std::string gross_difference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size())
    return "the result sample has " + std::to_string(got.size()) + " elements, the baseline's " +
           std::to_string(want.size());
  double scale = 1.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  const double tol = 1e-3 * scale;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    if (!(d <= tol)) {
      std::ostringstream s;
      s << "sampled element " << i << " is " << got[i] << " but the baseline gave " << want[i] << " (tolerance " << tol
        << ")";
      return s.str();
    }
  }
  return {};
}

// Calls of `variant` on rotating copies, timed by the suite's event timer.
std::vector<double> time_variant(Suite& s, const std::string& variant, int64_t n, double* idle = nullptr) {
  OpCase& c = *s.slot.op_case;
  CallCost& cost = s.slot.costs[variant];
  int& next = s.slot.next_copy;
  const std::function<void()> call = [&] {
    next = (next + 1) % c.copies();  // copy 0, the warm-up's and the check's, comes last
    c.run(*s.ctx, variant, next);
  };
  return s.timer->time_calls(n, call, cost, idle);
}

// The first of baseline_candidates that runs on the input (at F = 1 with contiguous vectors
// cusparseSpMV, else cusparseSpMM; spmm's mean and max: the atomic gather-scatter with the same
// reduce), warmed up, with its output for the check and its median time.
BaselineRun measure_baseline(Suite& s, sparseport_op op, Reduce reduce) {
  BaselineRun r;
  for (const Baseline& candidate : baseline_candidates(s.ctx->plugin(), op, reduce)) {
    r = BaselineRun{};
    r.which = candidate;
    if (r.which.variant.empty()) {
      r.error = "no baseline variant";
      return r;
    }
    try {
      OpCase& c = *s.slot.op_case;
      c.poison_output();
      c.run(*s.ctx, r.which.variant, 0);  // warm-up (plans), and the output the variants are checked against
      r.output = c.output_sample();
      // One timed call to size the sample: at least 3 calls and baseline_min_s of GPU time, at most 2000.
      const double first = median(time_variant(s, r.which.variant, 1));
      const int64_t n =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(s.baseline_min_s / std::max(first, 1e-7))), 3, 2000);
      r.seconds = median(time_variant(s, r.which.variant, n));
      return r;
    } catch (const Unsupported& ex) {  // does not apply to this input: the next candidate
      r.error = ex.what();
      r.output.clear();
    } catch (const std::exception& ex) {
      r.error = ex.what();
      r.output.clear();
      return r;
    }
  }
  return r;
}

struct RowSpec {
  sparseport_op op;
  std::string variant;
  DatasetSpec graph;
  int64_t features;            // 0 for the slice ops
  bool spmv;                   // spmm at F = 1 through sparseport::spmv (kSpmvRow rows)
  Reduce reduce;               // spmm's; sum for the other ops
  Selection select;            // the slice ops' rows
};

// The row's op field: "spmv", "spmm_mean", or the op's name.
std::string row_label(const RowSpec& row) { return row.spmv ? kSpmvRow : row_op_label(row.op, row.reduce); }

// The warm-up check of a slice op against the host graph: the sampled dense output, or the whole
// CSR result (both must match exactly: a slice copies values). Empty when it matches.
std::string slice_difference(Suite& s, const OpCase& c, const RowSpec& row, const Graph& g,
                             const std::vector<int32_t>& sel) {
  if (row.op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE) {
    c.poison_output();
    c.run(*s.ctx, row.variant, 0);
    return gross_difference(c.output_sample(), c.expected_slice_dense_sample());
  }
  const HostCsr<int32_t, float> got = c.slice_result(*s.ctx, row.variant);
  const HostCsr<int32_t, float>& a = g.csr;
  if (got.rows != static_cast<int64_t>(sel.size()) || got.cols != a.cols)
    return "the result is " + std::to_string(got.rows) + " x " + std::to_string(got.cols) + ", not " +
           std::to_string(sel.size()) + " x " + std::to_string(a.cols);
  int64_t at = 0;
  for (size_t t = 0; t < sel.size(); ++t) {
    const size_t r = static_cast<size_t>(sel[t]);
    const int32_t b = a.rowptr[r], e = a.rowptr[r + 1];
    if (got.rowptr[t + 1] - got.rowptr[t] != e - b)
      return "row " + std::to_string(t) + " (row " + std::to_string(r) + " of A) has " +
             std::to_string(got.rowptr[t + 1] - got.rowptr[t]) + " entries, A's row " + std::to_string(e - b);
    for (int32_t k = b; k < e; ++k, ++at) {
      const size_t gk = static_cast<size_t>(got.rowptr[t]) + static_cast<size_t>(k - b);
      if (got.colind[gk] != a.colind[static_cast<size_t>(k)] ||
          (!got.values.empty() && got.values[gk] != a.values[static_cast<size_t>(k)]))
        return "entry " + std::to_string(k - b) + " of row " + std::to_string(t) + " differs from A's";
    }
  }
  if (got.nnz() != at) return "the result holds " + std::to_string(got.nnz()) + " entries, not " + std::to_string(at);
  return {};
}

void run_row(benchmark::State& state, Suite& s, const RowSpec& row) {
  if (s.deadline_s > 0 &&
      std::chrono::duration<double>(Clock::now() - kProgramStart).count() > s.deadline_s) {
    state.SkipWithError(("not run: the run's time budget (SPARSEPORT_BENCH_DEADLINE_S=" +
                         std::to_string(static_cast<int64_t>(s.deadline_s)) + " s) was spent.")
                            .c_str());
    return;
  }
  std::shared_ptr<const Graph> g;
  try {
    g = is_segment_input(row.graph) ? load_segment_input(row.graph) : load(row.graph);
  } catch (const std::exception& ex) {
    state.SkipWithError(ex.what());
    return;
  }
  const bool slice = is_slice_op(row.op);
  std::shared_ptr<const std::vector<int32_t>> sel;  // the slice ops' rows
  OpModel model;
  int64_t one_set = 0;
  try {
    if (slice) {
      sel = selected_rows(row.graph.name, row.select, *g);
      model = op_model(row.op, *g, selection_size(*g, *sel));
      one_set = static_cast<int64_t>(model.operand_bytes);
    } else {
      model = op_model(row.op, *g, row.features);
      one_set = OpCase::set_bytes(row.op, *g, row.features);
    }
  } catch (const std::exception& ex) {
    state.SkipWithError((std::string("error: ") + ex.what()).c_str());
    return;
  }
  if (static_cast<double>(one_set) > s.cfg.max_operand_gb * 1e9) {
    std::ostringstream m;
    m << "skipped: the dense operands of " << row_label(row) << " on " << row.graph.name << " at F=" << row.features
      << " need " << static_cast<double>(one_set) / 1e9 << " GB of device memory, over the SPARSEPORT_BENCH_MAX_GB cap of "
      << s.cfg.max_operand_gb << " GB.";
    state.SkipWithError(m.str().c_str());
    return;
  }

  Slot& slot = s.slot;
  // By the row's input name (two inputs may share one loaded graph: probe-slice:products-twin).
  const std::string key = row.graph.name + "|" + std::to_string(row.features) + "|" + row_label(row);
  if (slot.key != key) {
    slot = Slot{};  // frees the previous operands first
    try {
      if (s.graph == nullptr || s.graph->host != g) {
        s.graph.reset();  // frees the previous graph's arrays (and the plans built on them)
        s.graph = std::make_shared<const DeviceGraph>(*s.ctx, g);
      }
      const int copies = s.rotation.copies_for(one_set);
      CaseOptions options;
      options.spmv = row.spmv;
      options.reduce = row.reduce;
      options.rows = sel;
      slot.op_case = std::make_unique<OpCase>(*s.ctx, s.stream, row.op, s.graph, row.features, copies, options);
    } catch (const std::exception& ex) {
      slot = Slot{};
      state.SkipWithError((std::string("building the device operands failed: ") + ex.what()).c_str());
      return;
    }
    slot.key = key;
  }
  // The slice ops have no baseline (no vendor slice; their figure is floor_frac): checked against
  // the host graph instead.
  if (slot.baseline == nullptr)
    slot.baseline = std::make_unique<BaselineRun>(slice ? BaselineRun{} : measure_baseline(s, row.op, row.reduce));
  const BaselineRun& baseline = *slot.baseline;
  OpCase& c = *slot.op_case;

  if (slot.prepared.count(row.variant) == 0) {
    try {
      if (slice && s.cfg.check) {
        if (std::string d = slice_difference(s, c, row, *g, *sel); !d.empty()) {
          state.SkipWithError(("wrong result: " + row.variant + " differs from the host's slice: " + d + ".").c_str());
          return;
        }
      } else {
        if (!slice) c.poison_output();
        c.run(*s.ctx, row.variant, 0);  // warm-up: plans, lazy module loading
      }
      if (!slice && s.cfg.check && !baseline.output.empty()) {
        if (std::string d = gross_difference(c.output_sample(), baseline.output); !d.empty()) {
          state.SkipWithError(("wrong result: " + row.variant + " differs from the baseline " +
                               baseline.which.variant + ": " + d + ".")
                                  .c_str());
          return;
        }
      }
    } catch (const Unsupported& ex) {
      state.SkipWithError((std::string("does not apply: ") + ex.what()).c_str());
      return;
    } catch (const std::exception& ex) {
      state.SkipWithError((std::string("error: ") + ex.what()).c_str());
      return;
    }
    slot.prepared.insert(row.variant);
  }

  // Google Benchmark's iterations are calls; they are timed in batches (EventTimer) and handed out
  // one per iteration. The time column is Google Benchmark's mean; the counters use the median.
  std::vector<double> times, pending;
  times.reserve(static_cast<size_t>(state.max_iterations));
  size_t next = 0;
  int64_t left = static_cast<int64_t>(state.max_iterations);
  double idle = 0.0;
  try {
    for (auto _ : state) {
      if (next == pending.size()) {
        const int64_t n = std::min<int64_t>(left, 4 * EventTimer::kBatch);
        pending = time_variant(s, row.variant, n, &idle);
        left -= n;
        next = 0;
      }
      state.SetIterationTime(pending[next]);
      times.push_back(pending[next]);
      ++next;
    }
  } catch (const std::exception& ex) {
    state.SkipWithError((std::string("error: ") + ex.what()).c_str());
    return;
  }
  set_row_counters(state, model, {median(times), baseline.seconds}, s.copy_gbps);
  if (is_segment_input(row.graph))  // the figure of the 60M-message target (see extra_inputs)
    state.counters["eff_TB/s"] = model.compulsory_bytes / median(times) / 1e12;
  state.counters["copies"] = c.copies();
  state.counters["gpu_idle_frac"] = idle;
  if (slice) {
    const RowSelection rs = selection_size(*g, *sel);
    state.counters["rows_selected"] = static_cast<double>(rs.rows);
    state.counters["entries_selected"] = static_cast<double>(rs.entries);
    state.SetLabel(std::string("baseline=none (no vendor slice; floor_frac is the figure)") +
                   (row.op == SPARSEPORT_OP_CSR_SLICE_ROWS ? "; includes the mid-call count read-back and allocation" : ""));
  } else if (!baseline.error.empty()) {
    state.SetLabel("baseline " + baseline.which.variant + " failed: " + baseline.error);
  } else {
    state.SetLabel("baseline=" + baseline.which.variant + (baseline.which.vendor ? " (vendor)" : "") +
                   (baseline.which.variant.rfind("gather_scatter.", 0) == 0
                        ? " (atomic, reduce " + std::string(name(row.reduce)) + ")"
                        : ""));
  }
}

// ---- the determinism group (SPARSEPORT_BENCH_DETERMINISM=1) -----------------------------------------
//
// What deterministic mode (Context::set_deterministic, SPARSEPORT_DETERMINISTIC=1) costs per op, on
// rmat:18:16, a mega-row graph and er (full size; the small suite's counterparts with
// --sp_size=small) at F = 32 and 128 (SPARSEPORT_BENCH_F overrides them; --sp_graphs filters).
// Rows are "determinism/OP/CASE/GRAPH/F". CASE "auto" is what the scheduler runs in each mode: its
// choice in default mode is the baseline, its choice in deterministic mode the row's time. CASE V
// (a variant) times V in default mode (the baseline) against its deterministic counterpart in
// deterministic mode: spmm.hub_split and the attention variants against themselves (their
// fixed-order paths), the nnz_balanced reductions against nnz_balanced_deterministic,
// scatter_reduce.atomic against scatter_reduce.sort_segment. scatter_reduce reads the graph's COO
// rows in a fixed shuffled order (seed 15): rmat's hubs collide heavily. Every reduction is a sum.
// Counters: the suite's (baseline_ms = default mode), det_cost = time / baseline_ms, and
// bitwise_repeat = 1 (two deterministic calls gave the same bits; a row where they differ is an
// error, as is a result far from default mode's). The label names what each mode ran.
struct DetCase {
  sparseport_op op;
  std::string name, default_variant, det_variant;
};

const std::vector<DetCase>& det_cases() {
  static const std::vector<DetCase> c = {
      {SPARSEPORT_OP_SPMM, "auto", "", ""},
      {SPARSEPORT_OP_SPMM, "spmm.hub_split", "spmm.hub_split", "spmm.hub_split"},
      {SPARSEPORT_OP_SEGMENT_REDUCE, "auto", "", ""},
      {SPARSEPORT_OP_SEGMENT_REDUCE, "segment_reduce.nnz_balanced", "segment_reduce.nnz_balanced",
       "segment_reduce.nnz_balanced_deterministic"},
      {SPARSEPORT_OP_GATHER_SCATTER, "auto", "", ""},
      {SPARSEPORT_OP_GATHER_SCATTER, "gather_scatter.nnz_balanced", "gather_scatter.nnz_balanced",
       "gather_scatter.nnz_balanced_deterministic"},
      {SPARSEPORT_OP_SCATTER_REDUCE, "auto", "", ""},
      {SPARSEPORT_OP_SCATTER_REDUCE, "scatter_reduce.atomic", "scatter_reduce.atomic", "scatter_reduce.sort_segment"},
      {SPARSEPORT_OP_CSR_ATTENTION, "auto", "", ""},
      {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.fused", "csr_attention.fused", "csr_attention.fused"},
      {SPARSEPORT_OP_CSR_ATTENTION, "csr_attention.unfused", "csr_attention.unfused", "csr_attention.unfused"},
  };
  return c;
}

std::vector<DatasetSpec> det_graphs(SuiteSize size) {
  if (size == SuiteSize::full)
    return {{"rmat:18:16", "rmat:18:16", false},
            {"megarow:2000000:16:0.05", "megarow:2000000:16:0.05", false},
            {"er:200000:2e-5", "er:200000:2e-5", false}};
  return {{"rmat:13:16", "rmat:13:16", false},
          {"megarow:20000:8:0.05", "megarow:20000:8:0.05", false},
          {"er:20000:5e-4", "er:20000:5e-4", false}};
}

constexpr uint64_t kSeedShuffle = 15;

// Sets the context's mode for a scope (the timed calls read it when they are queued).
struct ModeScope {
  Context& ctx;
  ModeScope(Context& c, bool det) : ctx(c) { ctx.set_deterministic(det); }
  ~ModeScope() { ctx.set_deterministic(false); }
};

std::vector<double> time_det_calls(Suite& s, const std::string& variant, bool det, int64_t n) {
  DetSlot& d = s.det;
  OpCase& c = *d.op_case;
  CallCost& cost = d.costs[(det ? "det|" : "default|") + variant];
  ModeScope mode(*s.ctx, det);
  const std::function<void()> call = [&] {
    d.next_copy = (d.next_copy + 1) % c.copies();
    c.run(*s.ctx, variant, d.next_copy);
  };
  return s.timer->time_calls(n, call, cost);
}

// One untimed call on copy 0 in the given mode; returns (a sample of) its output and what ran.
std::vector<float> det_warm_call(Suite& s, const std::string& variant, bool det, std::string* ran) {
  OpCase& c = *s.det.op_case;
  ModeScope mode(*s.ctx, det);
  c.poison_output();
  c.run(*s.ctx, variant, 0);
  std::vector<float> out = c.output_sample();
  if (ran != nullptr) *ran = variant.empty() ? last_decision().variant : variant;
  return out;
}

void run_det_row(benchmark::State& state, Suite& s, const DetCase& dc, const DatasetSpec& graph, int64_t f) {
  if (s.deadline_s > 0 && std::chrono::duration<double>(Clock::now() - kProgramStart).count() > s.deadline_s) {
    state.SkipWithError("not run: the run's time budget (SPARSEPORT_BENCH_DEADLINE_S) was spent.");
    return;
  }
  std::shared_ptr<const Graph> g;
  try {
    g = load(graph);
  } catch (const std::exception& ex) {
    state.SkipWithError(ex.what());
    return;
  }
  const sparseport_op model_op = dc.op == SPARSEPORT_OP_SCATTER_REDUCE ? SPARSEPORT_OP_SEGMENT_REDUCE : dc.op;
  const OpModel model = op_model(model_op, *g, f);
  const int64_t one_set = OpCase::set_bytes(dc.op, *g, f);
  if (static_cast<double>(one_set) > s.cfg.max_operand_gb * 1e9) {
    state.SkipWithError("skipped: the dense operands exceed SPARSEPORT_BENCH_MAX_GB.");
    return;
  }
  DetSlot& d = s.det;
  const std::string key = g->name + "|" + std::to_string(f) + "|" + op_name(dc.op);
  if (d.key != key) {
    s.slot = Slot{};  // the main suite's operands, if any are left
    d = DetSlot{};
    try {
      if (s.graph == nullptr || s.graph->host != g) {
        s.graph.reset();
        s.graph = std::make_shared<const DeviceGraph>(*s.ctx, g);
      }
      d.op_case = std::make_unique<OpCase>(*s.ctx, s.stream, dc.op, s.graph, f, s.rotation.copies_for(one_set));
      if (dc.op == SPARSEPORT_OP_SCATTER_REDUCE) {
        std::vector<int32_t> shuffled = g->coo_row;
        std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(kSeedShuffle));
        d.shuffled = upload(*s.ctx, shuffled);
        d.op_case->set_scatter_index(make_index<int32_t>(static_cast<int64_t>(shuffled.size()),
                                                         static_cast<const int32_t*>(d.shuffled.data())));
      }
    } catch (const std::exception& ex) {
      d = DetSlot{};
      state.SkipWithError((std::string("building the device operands failed: ") + ex.what()).c_str());
      return;
    }
    d.key = key;
  }
  std::string det_ran;
  std::vector<double> times;
  try {
    if (d.default_seconds.count(dc.name) == 0) {
      std::string ran;
      d.default_output[dc.name] = det_warm_call(s, dc.default_variant, false, &ran);
      d.default_ran[dc.name] = ran;
      const double first = median(time_det_calls(s, dc.default_variant, false, 1));
      const int64_t n =
          std::clamp<int64_t>(static_cast<int64_t>(std::ceil(s.baseline_min_s / std::max(first, 1e-7))), 3, 2000);
      d.default_seconds[dc.name] = median(time_det_calls(s, dc.default_variant, false, n));
    }
    // Twice on the same operands: the bits must agree.
    const std::vector<float> once = det_warm_call(s, dc.det_variant, true, &det_ran);
    const std::vector<float> twice = det_warm_call(s, dc.det_variant, true, nullptr);
    if (once.size() != twice.size() || std::memcmp(once.data(), twice.data(), once.size() * sizeof(float)) != 0) {
      size_t i = 0;
      while (i < once.size() && i < twice.size() && std::memcmp(&once[i], &twice[i], sizeof(float)) == 0) ++i;
      const std::string why = "not deterministic: two calls of " + det_ran +
                              " in deterministic mode differ at sampled element " + std::to_string(i);
      state.SkipWithError(why.c_str());
      return;
    }
    if (s.cfg.check) {
      if (std::string diff = gross_difference(once, d.default_output[dc.name]); !diff.empty()) {
        const std::string why = "wrong result: " + det_ran + " (deterministic mode) differs from " +
                                d.default_ran[dc.name] + " (default mode): " + diff + ".";
        state.SkipWithError(why.c_str());
        return;
      }
    }
    std::vector<double> pending;
    size_t next = 0;
    int64_t left = static_cast<int64_t>(state.max_iterations);
    for (auto _ : state) {
      if (next == pending.size()) {
        const int64_t n = std::min<int64_t>(left, 4 * EventTimer::kBatch);
        pending = time_det_calls(s, dc.det_variant, true, n);
        left -= n;
        next = 0;
      }
      state.SetIterationTime(pending[next]);
      times.push_back(pending[next]);
      ++next;
    }
  } catch (const Unsupported& ex) {
    state.SkipWithError((std::string("does not apply: ") + ex.what()).c_str());
    return;
  } catch (const std::exception& ex) {
    state.SkipWithError((std::string("error: ") + ex.what()).c_str());
    return;
  }
  const double t = median(times), base = d.default_seconds[dc.name];
  set_row_counters(state, model, {t, base}, s.copy_gbps);
  state.counters["det_cost"] = base > 0 ? t / base : 0.0;
  state.counters["bitwise_repeat"] = 1;
  state.counters["copies"] = d.op_case->copies();
  state.SetLabel("default=" + d.default_ran[dc.name] + " deterministic=" + det_ran);
}

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    // Appended piece by piece: GCC 12's -Wrestrict misreads `"," + std::to_string(x)` here.
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

bool arg_given(int argc, char** argv, const char* prefix) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return true;
  return false;
}

int real_main(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  bool listing_tests = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help")
      std::cout << config_help()
                << "  GPU suite only:\n"
                   "                       SPARSEPORT_BENCH_DEADLINE_S  rows starting after this many seconds are skipped\n"
                   "                       SPARSEPORT_BENCH_ROTATE_L2   rotate operand copies past this many L2 sizes (default 3)\n"
                   "                       SPARSEPORT_BENCH_SMALL_F     widths of the SpMV group (default 1,4,16; 1: the spmv rows; 0: none)\n"
                   "  defaults here: F = 32,64,128,256; --benchmark_min_time=0.01; the operand cap is 70% of the free device memory\n\n";
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" || a == "--benchmark_list_tests=1")
      listing_tests = true;
  }
  const bool f_given = env("SPARSEPORT_BENCH_F") != nullptr || arg_given(argc, argv, "--sp_f=");
  const bool cap_given = env("SPARSEPORT_BENCH_MAX_GB") != nullptr;
  // The SpMV group (issue 14): after each graph's rows, every spmm variant through sparseport::spmv
  // at F = 1 ("spmv/cuda/VARIANT/GRAPH/1", against cusparseSpMV) and through spmm at the other
  // widths listed (against cusparseSpMM), those not among the suite's F already.
  std::vector<int64_t> small_f = {1, 4, 16};
  if (const char* v = env("SPARSEPORT_BENCH_SMALL_F"))
    small_f = std::string(v) == "0" ? std::vector<int64_t>{} : parse_features("SPARSEPORT_BENCH_SMALL_F", v);

  auto suite = std::make_unique<Suite>();
  suite->cfg = parse_config(&argc, argv);
  if (!f_given) suite->cfg.features = {32, 64, 128, 256};
  suite->deadline_s = env_double("SPARSEPORT_BENCH_DEADLINE_S", 0.0);
  const double rotate_l2 = env_double("SPARSEPORT_BENCH_ROTATE_L2", 3.0);

  // Unless told otherwise, 0.01 s of GPU time per row (Google Benchmark's default is 0.5 s): the
  // per-call median needs far fewer calls than that, and device time is what the suite spends.
  std::vector<char*> args(argv, argv + argc);
  std::string quick_min_time = "--benchmark_min_time=0.01";
  if (!arg_given(argc, argv, "--benchmark_min_time") && !args.empty()) args.insert(args.begin() + 1, quick_min_time.data());
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::vector<DatasetSpec> graphs = datasets(suite->cfg.size, suite->cfg.data_dir, suite->cfg.graph_regex);
  if (suite->cfg.size == SuiteSize::full)
    graphs.erase(std::remove_if(graphs.begin(), graphs.end(),
                                [](const DatasetSpec& d) { return !d.is_file && gpu_full_generators().count(d.name) == 0; }),
                 graphs.end());
  std::vector<ExtraInput> extras;  // extra_inputs(): full size only, filtered as the graphs are
  if (suite->cfg.size == SuiteSize::full) {
    const std::regex re(suite->cfg.graph_regex, std::regex::ECMAScript);  // datasets() has checked it
    for (const ExtraInput& x : extra_inputs())
      if (suite->cfg.graph_regex.empty() || std::regex_search(x.spec.name, re)) extras.push_back(x);
  }
  if (suite->cfg.list_only) {
    for (const DatasetSpec& d : graphs) std::cout << d.name << "\t" << d.source << "\n";
    for (const ExtraInput& x : extras) std::cout << x.spec.name << "\t" << x.spec.source << "\t(" << x.why << ")\n";
    return 0;
  }

  const PluginInfo& cuda = plugin("cuda");
  if (cuda.status != PluginStatus::available && !listing_tests) {
    std::cout << "sparseport_bench_cuda: nothing to run: the cuda backend is " << name(cuda.status)
              << (cuda.reason.empty() ? "" : " (" + cuda.reason + ")") << ".\n";
    return 0;
  }

  std::string copy_how;
  if (cuda.status == PluginStatus::available) {
    suite->ctx = std::make_unique<Context>(Context::create("cuda:0"));
    cuda_ok(cudaSetDevice(suite->ctx->device()), "cudaSetDevice");
    suite->stream = static_cast<cudaStream_t>(sparseport_cuda_stream(suite->ctx->exec().state));
    if (suite->stream == nullptr) throw PluginError("sparseport_bench_cuda: the cuda context has no stream.");
    suite->facts = device_facts(*suite->ctx);
    if (suite->cfg.copy_gbps > 0) {
      suite->copy_gbps = suite->cfg.copy_gbps;
      copy_how = "given by SPARSEPORT_BENCH_COPY_GBPS";
    } else if (listing_tests) {
      copy_how = "not measured (--benchmark_list_tests)";
    } else {
      const CopyBandwidth bw = measure_device_copy_bandwidth(*suite->ctx, suite->stream, suite->facts.l2_bytes);
      suite->copy_gbps = bw.gbps;
      copy_how = bw.how;
    }
    if (!listing_tests) suite->timer = std::make_unique<EventTimer>(*suite->ctx, suite->stream);
    cuda_ok(cudaMemGetInfo(&suite->facts.free_bytes, &suite->facts.total_bytes), "cudaMemGetInfo");
    if (!cap_given) suite->cfg.max_operand_gb = 0.7 * static_cast<double>(suite->facts.free_bytes) / 1e9;
    suite->rotation.target_bytes = static_cast<int64_t>(rotate_l2 * static_cast<double>(suite->facts.l2_bytes));
    suite->rotation.cap_bytes = std::min<int64_t>(int64_t{4} << 30, static_cast<int64_t>(suite->cfg.max_operand_gb * 1e9));
  }

  std::ostringstream gbps, rotation, timing, device;
  gbps.precision(4);
  gbps << suite->copy_gbps;
  rotation << "dense operands and output in n copies, n = ceil(" << rotate_l2 << " x L2 / bytes of one copy), 1 <= n <= "
           << suite->rotation.max_copies << ", n x bytes <= " << suite->rotation.cap_bytes / (1 << 20)
           << " MiB; each call takes the next copy; CSR/COO arrays one copy (L2 "
           << suite->facts.l2_bytes / 1024 << " KiB)";
  timing << "per call: cudaEventRecord before and after the op on the context's stream; calls queued in batches of "
         << EventTimer::kBatch << " behind device-to-device ballast copies ("
         << (suite->timer ? suite->timer->ballast_unit_seconds() * 1e6 : 0.0)
         << " us each) so the host's queueing is hidden; one untimed warm-up call per variant; median per call";
  device << suite->facts.name << ", " << suite->facts.sms << " SMs, L2 " << suite->facts.l2_bytes / 1024 << " KiB, "
         << suite->facts.total_bytes / (1 << 20) << " MiB (" << suite->facts.free_bytes / (1 << 20)
         << " MiB free after set-up)";
  std::string graph_names;
  for (const DatasetSpec& d : graphs) graph_names += (graph_names.empty() ? "" : " ") + d.name;
  std::string baseline_table;
  for (sparseport_op op : benchmarked_ops()) {
    const Baseline b = baseline_for(cuda, op);
    baseline_table += (baseline_table.empty() ? "" : "; ") + std::string(op_name(op)) + ": " +
                      (b.variant.empty() ? "none" : b.variant) + (b.vendor ? " (vendor)" : "");
  }
  {
    const std::vector<Baseline> mean = baseline_candidates(cuda, SPARSEPORT_OP_SPMM, Reduce::mean);
    baseline_table += "; spmm_mean, spmm_max: " + (mean.empty() ? std::string("none") : mean.front().variant) +
                      " (same reduce); csr_slice_rows, csr_slice_rows_dense: none (floor_frac)";
  }
  std::ostringstream cap;
  cap << suite->cfg.max_operand_gb;
  benchmark::AddCustomContext("sparseport_version", version());
  benchmark::AddCustomContext("sparseport_suite", "cuda");
  benchmark::AddCustomContext("sparseport_command_line", command_line);
  benchmark::AddCustomContext("sparseport_device", device.str());
  if (!suite->facts.describe.empty()) benchmark::AddCustomContext("sparseport_device_runtime", suite->facts.describe);
  benchmark::AddCustomContext("sparseport_copy_GBps", gbps.str());
  benchmark::AddCustomContext("sparseport_copy_method", copy_how.empty() ? "not measured (no device)" : copy_how);
  benchmark::AddCustomContext("sparseport_timing", timing.str());
  benchmark::AddCustomContext("sparseport_rotation", rotation.str());
  benchmark::AddCustomContext("sparseport_operand_cap_GB", cap.str());
  benchmark::AddCustomContext("sparseport_bandwidth_unit", "TB/s");
  benchmark::AddCustomContext("sparseport_suite_size", name(suite->cfg.size));
  benchmark::AddCustomContext("sparseport_features", joined(suite->cfg.features));
  benchmark::AddCustomContext("sparseport_small_f", small_f.empty() ? "(none)" : joined(small_f));
  benchmark::AddCustomContext("sparseport_graphs", graph_names.empty() ? "(none)" : graph_names);
  benchmark::AddCustomContext("sparseport_data_dir", suite->cfg.data_dir.empty() ? "(none)" : suite->cfg.data_dir);
  benchmark::AddCustomContext("sparseport_baselines", baseline_table);
  if (suite->deadline_s > 0) benchmark::AddCustomContext("sparseport_deadline_s", std::to_string(suite->deadline_s));
  std::string extra_names;
  for (const ExtraInput& x : extras) extra_names += (extra_names.empty() ? "" : "; ") + x.spec.name + " (" + x.why + ")";
  if (!extra_names.empty()) benchmark::AddCustomContext("sparseport_extra_inputs", extra_names);

  // Graph, then F, then op outermost, so a graph is uploaded once and the operands of one
  // (graph, F, op) serve all its variants (see Slot).
  Suite* sp = suite.get();
  size_t rows = 0;
  const auto add_rows = [&](const DatasetSpec& graph, int64_t f, sparseport_op op, bool spmv = false,
                            Reduce reduce = Reduce::sum, Selection select = Selection::none) {
    for (const VariantInfo& v : cuda.variants) {
      if (v.op != op) continue;
      // TF32 runs only with the caller's consent, at TF32's accuracy: cuda_timing --tc times it.
      if (v.tf32) continue;
      // cuSPARSE computes sums only: spmm's mean and max rows leave the vendor variants out.
      if (reduce != Reduce::sum && v.is_vendor) continue;
      const std::string& variant = v.name;
      const RowSpec row{op, variant, graph, f, spmv, reduce, select};
      const std::string n = row_name(row_label(row), "cuda", variant, graph.name, f);
      benchmark::RegisterBenchmark(n.c_str(), [sp, row](benchmark::State& st) { run_row(st, *sp, row); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
      ++rows;
    }
  };
  for (const DatasetSpec& graph : graphs) {
    for (int64_t f : suite->cfg.features)
      for (sparseport_op op : benchmarked_ops()) add_rows(graph, f, op);
    for (int64_t f : small_f) {
      if (f == 1)
        add_rows(graph, 1, SPARSEPORT_OP_SPMM, true);
      else if (std::find(suite->cfg.features.begin(), suite->cfg.features.end(), f) == suite->cfg.features.end())
        add_rows(graph, f, SPARSEPORT_OP_SPMM);
    }
  }
  // The extra inputs last, so the graphs' rows run as in earlier reports. Their operands (16 GB for
  // a 60M-message input at F = 64, one copy) are freed as every row's are: before the next
  // (graph, F, op) allocates its own, or at the end of the run.
  for (const ExtraInput& x : extras) {
    if (x.select != Selection::none) {  // a slice: one row per op and variant, F = 0
      for (const RowKind& k : x.kinds) add_rows(x.spec, 0, k.op, false, k.reduce, x.select);
      continue;
    }
    for (int64_t f : suite->cfg.features)
      if (x.features.empty() || std::find(x.features.begin(), x.features.end(), f) != x.features.end())
        for (const RowKind& k : x.kinds) add_rows(x.spec, f, k.op, false, k.reduce);
  }
  // The determinism group, on request, last.
  if (const char* d = env("SPARSEPORT_BENCH_DETERMINISM"); d != nullptr && std::string(d) == "1") {
    const std::regex re(suite->cfg.graph_regex.empty() ? std::string(".*") : suite->cfg.graph_regex,
                        std::regex::ECMAScript);
    const std::vector<int64_t> det_f = f_given ? suite->cfg.features : std::vector<int64_t>{32, 128};
    for (const DatasetSpec& graph : det_graphs(suite->cfg.size)) {
      if (!std::regex_search(graph.name, re)) continue;
      for (int64_t f : det_f)
        for (const DetCase& dc : det_cases()) {
          const std::string n = std::string("determinism/") + op_name(dc.op) + "/" + dc.name + "/" + graph.name + "/" +
                                std::to_string(f);
          const auto body = [sp, dc, graph, f](benchmark::State& st) { run_det_row(st, *sp, dc, graph, f); };
          benchmark::RegisterBenchmark(n.c_str(), body)->UseManualTime()->Unit(benchmark::kMicrosecond);
          ++rows;
        }
    }
  }
  if (rows == 0) {
    std::cerr << "sparseport_bench_cuda: nothing to run (" << graphs.size() << " graphs).\n";
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Device memory goes back while the CUDA runtime is still up.
  suite->slot = Slot{};
  suite->det = DetSlot{};
  suite->graph.reset();
  suite->timer.reset();
  suite->ctx.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& ex) {
    std::cerr << ex.what() << "\n";
    return 2;
  }
}
