// SPDX-License-Identifier: Apache-2.0
// sparseport_bench_cpu: one Google Benchmark row per (op, backend, variant, graph, F) for every
// available host-memory backend and every variant it lists, named "op/backend/variant/graph/F".
// Rows are registered at run time from sparseport::plugins(), so a new plugin or variant joins
// without an edit here. Each row is timed by hand (steady_clock around one call, then
// Context::synchronize) and compared, in the same process and on the same input, with the
// backend's baseline variant (harness.hpp); counters use the median time per call.
// --sp_ops picks the ops (default: spmm, segment_reduce, gather_scatter, sddmm, csr_attention;
// all: also spmm's mean/max/min, scatter_reduce and the CSR-to-CSR ops, the set both host plugins
// implement), so one run can put the kokkos plugin beside the openmp plugin on every op
// (report.py --portability).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "datasets.hpp"
#include "harness.hpp"
#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;
using namespace sparseport::bench;
using Clock = std::chrono::steady_clock;

// Seeds of the dense operands: fixed, so every run times the same numbers. kSeedShuffle is
// scatter_reduce's order of the COO rows (bench_cuda.cpp's determinism group uses the same seed),
// kSeedSelect the order in which the selection ops draw rows.
constexpr uint64_t kSeedRows = 11, kSeedCols = 12, kSeedCols2 = 13, kSeedMessages = 14, kSeedShuffle = 15,
                   kSeedSelect = 16;

// What a row computes besides graph and F: the op, spmm's reduce, and whether spmm is called
// through sparseport::spmv (at F = 1).
struct RowKind {
  sparseport_op op = SPARSEPORT_OP_SPMM;
  Reduce reduce = Reduce::sum;
  bool spmv = false;
};

std::string row_label(const RowKind& k) { return k.spmv ? std::string(kSpmvRow) : row_op_label(k.op, k.reduce); }

// Ops without a feature width: one row per graph, named with F = 0.
bool per_graph_op(sparseport_op op) {
  return op == SPARSEPORT_OP_CSR_SLICE_ROWS || op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE ||
         op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH || op == SPARSEPORT_OP_CSR_TRANSPOSE;
}
// Ops whose result is a CSR matrix the call allocates.
bool csr_result_op(sparseport_op op) {
  return op == SPARSEPORT_OP_CSR_SLICE_ROWS || op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH ||
         op == SPARSEPORT_OP_CSR_TRANSPOSE;
}
bool selection_op(sparseport_op op) {
  return op == SPARSEPORT_OP_CSR_SLICE_ROWS || op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE ||
         op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH;
}

// The ops --sp_ops can name, in registration order; `standard` marks the default set (the five
// ops the suite has always timed, in the same order, so default runs compare with older ones).
struct OpEntry {
  RowKind kind;
  bool standard;
};
const std::vector<OpEntry>& op_catalogue() {
  static const std::vector<OpEntry> ops = {
      {{SPARSEPORT_OP_SPMM, Reduce::sum}, true},
      {{SPARSEPORT_OP_SPMM, Reduce::mean}, false},
      {{SPARSEPORT_OP_SPMM, Reduce::max}, false},
      {{SPARSEPORT_OP_SPMM, Reduce::min}, false},
      {{SPARSEPORT_OP_SEGMENT_REDUCE}, true},
      {{SPARSEPORT_OP_SCATTER_REDUCE}, false},
      {{SPARSEPORT_OP_GATHER_SCATTER}, true},
      {{SPARSEPORT_OP_SDDMM}, true},
      {{SPARSEPORT_OP_CSR_ATTENTION}, true},
      {{SPARSEPORT_OP_CSR_SLICE_ROWS}, false},
      {{SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE}, false},
      {{SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH}, false},
      {{SPARSEPORT_OP_CSR_TRANSPOSE}, false},
  };
  return ops;
}

// --sp_ops / SPARSEPORT_BENCH_OPS: "default", "all", or a comma list of row op names (spmm,
// spmm_mean, ..., csr_transpose; "default" and "all" may appear in it), kept in catalogue order.
std::vector<RowKind> parse_ops(const std::string& what, const std::string& text) {
  std::set<std::string> want;
  std::stringstream ss(text);
  std::string item;
  std::string known;
  for (const OpEntry& e : op_catalogue()) known += (known.empty() ? "" : ", ") + row_label(e.kind);
  while (std::getline(ss, item, ',')) {
    if (item == "default" || item == "all") {
      for (const OpEntry& e : op_catalogue())
        if (e.standard || item == "all") want.insert(row_label(e.kind));
      continue;
    }
    const bool found = std::any_of(op_catalogue().begin(), op_catalogue().end(),
                                   [&](const OpEntry& e) { return row_label(e.kind) == item; });
    if (!found)
      throw InvalidArgument("sparseport_bench_cpu: " + what + " names '" + item +
                            "', which is not an op of the suite (" + known + ", or default, all).");
    want.insert(item);
  }
  if (want.empty())
    throw InvalidArgument("sparseport_bench_cpu: " + what + " is empty; give ops such as spmm,sddmm or all.");
  std::vector<RowKind> out;
  for (const OpEntry& e : op_catalogue())
    if (want.count(row_label(e.kind)) != 0) out.push_back(e.kind);
  return out;
}

// Takes --sp_ops=LIST out of argv (parse_config refuses --sp_* flags it does not know); the flag
// wins over SPARSEPORT_BENCH_OPS.
std::vector<RowKind> take_ops_flag(int* argc, char** argv) {
  std::vector<RowKind> ops = parse_ops("the default", "default");
  if (const char* v = std::getenv("SPARSEPORT_BENCH_OPS"); v != nullptr && *v != '\0')
    ops = parse_ops("SPARSEPORT_BENCH_OPS", v);
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--sp_ops=", 0) == 0)
      ops = parse_ops("--sp_ops", a.substr(9));
    else
      argv[kept++] = argv[i];
  }
  *argc = kept;
  return ops;
}

// The rows a selection op takes from g: distinct rows in a fixed random order (std::shuffle on
// mt19937_64, seed kSeedSelect), as many as the scheduler's probe takes (3 % of the rows, at least
// 512, at most all); csr_slice_rows_dense takes the first of them whose dense output (s x cols)
// stays within 64 MiB, at most 512 (a GNN mini-batch). Kept per graph: Google Benchmark reruns rows.
std::shared_ptr<const std::vector<int32_t>> selected_rows(const Graph& g, sparseport_op op) {
  static std::map<std::string, std::shared_ptr<const std::vector<int32_t>>> cache;
  const bool dense = op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE;
  const std::string key = g.name + (dense ? "|dense" : "|sample");
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const int64_t m = g.csr.rows;
  std::vector<int32_t> rows(static_cast<size_t>(m));
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), std::mt19937_64(kSeedSelect));
  int64_t s = std::min<int64_t>(m, std::max<int64_t>(512, (m * 3 + 99) / 100));
  const int64_t rows_in_64mib = (int64_t{1} << 24) / std::max<int64_t>(1, g.csr.cols);  // 4-byte values
  if (dense) s = std::min<int64_t>({s, 512, std::max<int64_t>(1, rows_in_64mib)});
  rows.resize(static_cast<size_t>(s));
  return cache.emplace(key, std::make_shared<const std::vector<int32_t>>(std::move(rows))).first->second;
}

RowSelection selection_size(const Graph& g, sparseport_op op, const std::vector<int32_t>& rows) {
  RowSelection sel;
  sel.rows = static_cast<int64_t>(rows.size());
  std::vector<char> in;
  if (op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH) {
    in.assign(static_cast<size_t>(g.csr.cols), 0);
    for (int32_t r : rows) in[static_cast<size_t>(r)] = 1;
  }
  for (int32_t r : rows)
    for (int32_t e = g.csr.rowptr[static_cast<size_t>(r)]; e < g.csr.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      ++sel.entries;
      if (!in.empty() && in[static_cast<size_t>(g.csr.colind[static_cast<size_t>(e)])] != 0) ++sel.kept;
    }
  return sel;
}

// The operands of one op on one graph at one F, shared by every backend and variant of that op.
class OpCase {
 public:
  // kind.spmv: spmm's operands at F = 1, called through sparseport::spmv. rows: what a selection
  // op takes (selected_rows); f is 0 for the per-graph ops.
  OpCase(const RowKind& kind, std::shared_ptr<const Graph> g, int64_t f,
         std::shared_ptr<const std::vector<int32_t>> rows = nullptr)
      : kind_(kind), g_(std::move(g)), f_(f), rows_(std::move(rows)) {
    const int64_t m = g_->csr.rows, k = g_->csr.cols, nnz = g_->csr.nnz();
    const int64_t s = rows_ ? static_cast<int64_t>(rows_->size()) : 0;
    switch (kind_.op) {
      case SPARSEPORT_OP_SPMM:
      case SPARSEPORT_OP_GATHER_SCATTER:
        in1_ = random_dense(k, f_, kSeedCols);
        out_ = HostDense<float>(m, f_);
        break;
      case SPARSEPORT_OP_SDDMM:
        in1_ = random_dense(m, f_, kSeedRows);
        in2_ = random_dense(k, f_, kSeedCols);
        out_ = HostDense<float>(nnz, 1);
        break;
      case SPARSEPORT_OP_SCATTER_REDUCE:
        shuffled_ = g_->coo_row;
        std::shuffle(shuffled_.begin(), shuffled_.end(), std::mt19937_64(kSeedShuffle));
        [[fallthrough]];
      case SPARSEPORT_OP_SEGMENT_REDUCE:
        in1_ = random_dense(nnz, f_, kSeedMessages);
        out_ = HostDense<float>(m, f_);
        break;
      case SPARSEPORT_OP_CSR_ATTENTION:
        in1_ = random_dense(m, f_, kSeedRows);
        in2_ = random_dense(k, f_, kSeedCols);
        in3_ = random_dense(k, f_, kSeedCols2);
        out_ = HostDense<float>(m, f_);
        break;
      case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE:
        out_ = HostDense<float>(s, k);
        break;
      case SPARSEPORT_OP_CSR_SLICE_ROWS:
      case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH:
      case SPARSEPORT_OP_CSR_TRANSPOSE:
        break;
      default:
        throw InvalidArgument(std::string("sparseport_bench: op '") + op_name(kind_.op) + "' has no CPU benchmark.");
    }
    if (selection_op(kind_.op) && s == 0)
      throw InvalidArgument(std::string("sparseport_bench: ") + op_name(kind_.op) + " needs a row selection.");
  }

  // One call of the op; throws what the op throws. On an spmm case a gather_scatter variant runs
  // spmm in COO form on the same operands (B as x, C as out, the same reduce): the atomic baseline
  // of spmm's mean, max and min (harness.hpp, baseline_candidates). A CSR result is kept until
  // release_result(), so that freeing it stays outside the timed span.
  void run(const Context& ctx, const std::string& variant) {
    const CsrView a = g_->csr.view();
    switch (kind_.op) {
      case SPARSEPORT_OP_SPMM: {
        if (variant.rfind("gather_scatter.", 0) == 0) {
          ReduceOptions opt;
          opt.reduce = kind_.reduce;
          opt.variant = variant;
          gather_scatter(ctx, coo(), in1_.view(), out_.mut(), opt);
          break;
        }
        SpmmOptions opt;
        opt.reduce = kind_.reduce;
        opt.variant = variant;
        if (kind_.spmv)
          spmv(ctx, a, in1_.view(), out_.mut(), opt);
        else
          spmm(ctx, a, in1_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_SDDMM: {
        OpOptions opt;
        opt.variant = variant;
        sddmm(ctx, a, in1_.view(), in2_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_SEGMENT_REDUCE: {
        ReduceOptions opt;
        opt.variant = variant;
        segment_reduce(ctx, make_index<int32_t>(a.nnz, g_->coo_row.data()), in1_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_SCATTER_REDUCE: {
        ReduceOptions opt;
        opt.variant = variant;
        scatter_reduce(ctx, make_index<int32_t>(a.nnz, shuffled_.data()), in1_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_GATHER_SCATTER: {
        ReduceOptions opt;
        opt.variant = variant;
        gather_scatter(ctx, coo(), in1_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_ATTENTION: {
        AttentionOptions opt;
        opt.variant = variant;
        csr_attention(ctx, a, in1_.view(), in2_.view(), in3_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: {
        OpOptions opt;
        opt.variant = variant;
        csr_slice_rows_dense(ctx, a, rows(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_SLICE_ROWS: {
        OpOptions opt;
        opt.variant = variant;
        result_ = csr_slice_rows(ctx, a, rows(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: {
        OpOptions opt;
        opt.variant = variant;
        result_ = csr_induced_subgraph(ctx, a, rows(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_TRANSPOSE: {
        OpOptions opt;
        opt.variant = variant;
        result_ = csr_transpose(ctx, a, opt);
        break;
      }
      default: break;
    }
  }

  // The output of the last call, for the gross check: the dense output, or a CSR result as its
  // values, then its column indices and row pointers as floats (exact below 2^24, and a
  // difference in any of them fails the check).
  std::vector<float> output(const Context& ctx) const {
    if (!csr_result_op(kind_.op)) return out_.data;
    const HostCsr<int32_t, float> h = ctx.to_host<int32_t, float>(result_);
    std::vector<float> v;
    v.reserve(h.values.size() + h.colind.size() + h.rowptr.size() + 2);
    v.push_back(static_cast<float>(h.rows));
    v.push_back(static_cast<float>(h.cols));
    v.insert(v.end(), h.values.begin(), h.values.end());
    for (int32_t c : h.colind) v.push_back(static_cast<float>(c));
    for (int32_t r : h.rowptr) v.push_back(static_cast<float>(r));
    return v;
  }
  void release_result() { result_ = CsrMatrix{}; }
  // NaN everywhere, so a variant that leaves an element unwritten cannot pass the check on the
  // baseline's leftovers.
  void poison_output() {
    std::fill(out_.data.begin(), out_.data.end(), std::numeric_limits<float>::quiet_NaN());
    release_result();
  }

 private:
  static HostDense<float> random_dense(int64_t rows, int64_t cols, uint64_t seed) {
    HostDense<float> d(rows, cols);
    fill_random(d, seed);
    return d;
  }

  CooView coo() const {
    const HostCsr<int32_t, float>& c = g_->csr;
    return make_coo<int32_t, float>(c.rows, c.cols, c.nnz(), g_->coo_row.data(), c.colind.data(), c.values.data());
  }
  IndexView rows() const { return make_index<int32_t>(static_cast<int64_t>(rows_->size()), rows_->data()); }

  RowKind kind_;
  std::shared_ptr<const Graph> g_;
  int64_t f_;
  std::shared_ptr<const std::vector<int32_t>> rows_;
  std::vector<int32_t> shuffled_;  // scatter_reduce's index: the COO rows in a fixed shuffled order
  HostDense<float> in1_, in2_, in3_, out_;
  CsrMatrix result_;
};

struct BaselineRun {
  Baseline which;
  double seconds = 0.0;       // median of a few calls; 0 when it could not run
  std::vector<float> output;  // for the gross check of the other variants
  std::string error;
};

struct BackendCtx {
  std::string name;
  Context ctx;
};

struct Suite {
  BenchConfig cfg;
  double copy_gbps = 0.0;
  std::vector<BackendCtx> backends;
};

// The operands of the (graph, F, op) being timed. Rows are registered graph by graph, F by F, op
// by op, so consecutive rows (every backend and variant of one op) share them; the previous set is
// freed when the key changes, which bounds the memory to one op's operands.
struct Slot {
  std::string key;
  std::unique_ptr<OpCase> op_case;
  std::map<std::string, BaselineRun> baselines;  // by backend
  std::set<std::string> prepared;                // backend/variant already warmed up and checked
};

Slot& slot() {
  static Slot s;
  return s;
}

// The first difference larger than a loose tolerance, as a sentence; empty when none. Loose on
// purpose: fp32 sums in another order differ in the last bits, and the conformance tests are the
// real correctness check; this only keeps a broken variant (NaN, unwritten or wrong elements) from
// getting a time in the table.
std::string gross_difference(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 1.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  const double tol = 1e-3 * scale;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    if (!(d <= tol)) {
      std::ostringstream s;
      s << "element " << i << " is " << got[i] << " but the baseline gave " << want[i] << " (tolerance " << tol << ")";
      return s.str();
    }
  }
  return {};
}

// The first of baseline_candidates that runs on the input (the vendor for it), warmed up, with its
// output for the check and its median time.
BaselineRun measure_baseline(const BackendCtx& b, const RowKind& kind, OpCase& c) {
  BaselineRun r;
  for (const Baseline& candidate : baseline_candidates(b.ctx.plugin(), kind.op, kind.reduce)) {
    r = BaselineRun{};
    r.which = candidate;
    if (r.which.variant.empty()) {
      r.error = "no baseline variant";
      return r;
    }
    try {
      c.poison_output();
      c.run(b.ctx, r.which.variant);  // warm-up, and the output the other variants are checked against
      b.ctx.synchronize();
      r.output = c.output(b.ctx);
      c.release_result();
      // At least 3 calls and 0.05 s (at most 10^4 calls): a stable median without dominating the row.
      std::vector<double> t;
      double total = 0.0;
      while (t.size() < 10000 && (t.size() < 3 || total < 0.05)) {
        const auto t0 = Clock::now();
        c.run(b.ctx, r.which.variant);
        b.ctx.synchronize();
        t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        total += t.back();
        c.release_result();
      }
      r.seconds = median(t);
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
  RowKind kind;
  size_t backend;
  std::string variant;
  DatasetSpec graph;
  int64_t features;  // 0 for the per-graph ops
};

void run_row(benchmark::State& state, const Suite& suite, const RowSpec& row) {
  const BackendCtx& b = suite.backends[row.backend];
  std::shared_ptr<const Graph> g;
  try {
    g = load(row.graph);
  } catch (const std::exception& ex) {
    state.SkipWithError(ex.what());
    return;
  }
  const sparseport_op op = row.kind.op;
  if (op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH && g->csr.rows != g->csr.cols) {
    state.SkipWithError(("does not apply: csr_induced_subgraph takes a square matrix, and " + g->name + " is " +
                         std::to_string(g->csr.rows) + "x" + std::to_string(g->csr.cols) + ".")
                            .c_str());
    return;
  }
  std::shared_ptr<const std::vector<int32_t>> sel;
  OpModel model;
  if (selection_op(op)) {
    sel = selected_rows(*g, op);
    model = op_model(op, *g, selection_size(*g, op, *sel));
  } else {
    model = op_model(op, *g, row.features);
  }
  if (model.operand_bytes > suite.cfg.max_operand_gb * 1e9) {
    std::ostringstream s;
    s << "skipped: the operands of " << row_label(row.kind) << " on " << g->name << " at F=" << row.features
      << " need " << model.operand_bytes / 1e9 << " GB, over the SPARSEPORT_BENCH_MAX_GB cap of "
      << suite.cfg.max_operand_gb << " GB.";
    state.SkipWithError(s.str().c_str());
    return;
  }

  Slot& s = slot();
  const std::string key = g->name + "|" + std::to_string(row.features) + "|" + row_label(row.kind);
  if (s.key != key) {
    s = Slot{};  // frees the previous operands first
    try {
      s.op_case = std::make_unique<OpCase>(row.kind, g, row.features, sel);
    } catch (const std::exception& ex) {
      state.SkipWithError((std::string("building the operands failed: ") + ex.what()).c_str());
      return;
    }
    s.key = key;
  }
  OpCase& c = *s.op_case;
  auto base = s.baselines.find(b.name);
  if (base == s.baselines.end()) base = s.baselines.emplace(b.name, measure_baseline(b, row.kind, c)).first;
  const BaselineRun& baseline = base->second;

  const std::string prep_key = b.name + "/" + row.variant;
  if (s.prepared.count(prep_key) == 0) {
    try {
      c.poison_output();
      c.run(b.ctx, row.variant);  // warm-up (first-touch, caches, lazy plans)
      b.ctx.synchronize();
    } catch (const Unsupported& ex) {
      state.SkipWithError((std::string("does not apply: ") + ex.what()).c_str());
      return;
    } catch (const std::exception& ex) {
      state.SkipWithError((std::string("error: ") + ex.what()).c_str());
      return;
    }
    if (suite.cfg.check && !baseline.output.empty()) {
      const std::vector<float> got = c.output(b.ctx);
      c.release_result();
      std::string d = got.size() == baseline.output.size()
                          ? gross_difference(got, baseline.output)
                          : "its result has " + std::to_string(got.size()) + " numbers, the baseline's " +
                                std::to_string(baseline.output.size());
      if (!d.empty()) {
        state.SkipWithError(("wrong result: " + row.variant + " differs from the baseline " + baseline.which.variant +
                             ": " + d + ".")
                                .c_str());
        return;
      }
    }
    s.prepared.insert(prep_key);
  }

  // Google Benchmark's time column is the mean per call; the counters use the median, as the
  // baseline does, so a few calls that lost the CPU to another process do not skew the ratios.
  std::vector<double> times;
  times.reserve(static_cast<size_t>(state.max_iterations));
  try {
    for (auto _ : state) {
      const auto t0 = Clock::now();
      c.run(b.ctx, row.variant);
      b.ctx.synchronize();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      state.SetIterationTime(dt);
      times.push_back(dt);
      c.release_result();
    }
  } catch (const std::exception& ex) {
    state.SkipWithError((std::string("error: ") + ex.what()).c_str());
    return;
  }
  set_row_counters(state, model, {median(times), baseline.seconds}, suite.copy_gbps);
  if (!baseline.error.empty())
    state.SetLabel("baseline " + baseline.which.variant + " failed: " + baseline.error);
  else
    state.SetLabel("baseline=" + baseline.which.variant + (baseline.which.vendor ? " (vendor)" : ""));
}

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

int real_main(int argc, char** argv) {
  bool listing_tests = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help")
      std::cout << config_help()
                << "  --sp_ops=LIST        SPARSEPORT_BENCH_OPS      default (spmm, segment_reduce, gather_scatter, sddmm,\n"
                   "                                                 csr_attention), all, or a comma list of those and\n"
                   "                                                 spmm_mean, spmm_max, spmm_min, scatter_reduce,\n"
                   "                                                 csr_slice_rows, csr_slice_rows_dense,\n"
                   "                                                 csr_induced_subgraph, csr_transpose\n";
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" || a == "--benchmark_list_tests=1")
      listing_tests = true;
  }
  auto suite = std::make_unique<Suite>();
  const std::vector<RowKind> ops = take_ops_flag(&argc, argv);
  suite->cfg = parse_config(&argc, argv);
  // The small suite is the quick look: unless told otherwise, 0.05 s per row instead of Google
  // Benchmark's 0.5 s, so the default run takes minutes, not a quarter of an hour.
  std::vector<char*> args(argv, argv + argc);
  std::string quick_min_time = "--benchmark_min_time=0.05";
  const bool min_time_given = std::any_of(args.begin() + (args.empty() ? 0 : 1), args.end(), [](const char* a) {
    return std::string(a).rfind("--benchmark_min_time", 0) == 0;
  });
  if (suite->cfg.size == SuiteSize::small && !min_time_given && !args.empty())
    args.insert(args.begin() + 1, quick_min_time.data());
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const std::vector<DatasetSpec> graphs = datasets(suite->cfg.size, suite->cfg.data_dir, suite->cfg.graph_regex);
  if (suite->cfg.list_only) {
    for (const DatasetSpec& d : graphs) std::cout << d.name << "\t" << d.source << "\n";
    return 0;
  }

  std::string backend_list;
  for (const PluginInfo& p : plugins()) {
    backend_list += (backend_list.empty() ? "" : "; ") + p.name + ": ";
    if (p.status != PluginStatus::available) {
      backend_list += p.reason.empty() ? std::string(name(p.status)) : p.reason;
      continue;
    }
    Context ctx = Context::create(p.name);
    if (ctx.device_memory()) {
      backend_list += "device memory, not in the CPU suite";
      continue;
    }
    backend_list += "timed";
    if (suite->cfg.threads > 0) ctx.set_threads(suite->cfg.threads);
    suite->backends.push_back({p.name, std::move(ctx)});
  }

  std::string copy_how;
  if (suite->cfg.copy_gbps > 0) {
    suite->copy_gbps = suite->cfg.copy_gbps;
    copy_how = "given by SPARSEPORT_BENCH_COPY_GBPS";
  } else if (listing_tests) {
    copy_how = "not measured (--benchmark_list_tests)";
  } else {
    const CopyBandwidth bw = measure_host_copy_bandwidth(effective_host_threads(suite->cfg.threads));
    suite->copy_gbps = bw.gbps;
    copy_how = bw.how;
  }
  std::ostringstream gbps;
  gbps.precision(4);
  gbps << suite->copy_gbps;

  std::string graph_names;
  for (const DatasetSpec& d : graphs) graph_names += (graph_names.empty() ? "" : " ") + d.name;
  std::string baseline_table, op_names;
  for (const RowKind& k : ops) {
    op_names += (op_names.empty() ? "" : ",") + row_label(k);
    baseline_table += (baseline_table.empty() ? "" : "; ") + row_label(k) + ": ";
    if (k.op == SPARSEPORT_OP_SPMM && k.reduce != Reduce::sum) {
      baseline_table += "the atomic gather_scatter with the same reduce, else ";
    } else {
      baseline_table += "vendor, else ";
      for (const std::string& v : named_baselines(k.op)) baseline_table += v + ", else ";
    }
    baseline_table += "default variant";
  }
  benchmark::AddCustomContext("sparseport_version", version());
  benchmark::AddCustomContext("sparseport_backends", backend_list);
  benchmark::AddCustomContext("sparseport_threads", thread_summary(suite->cfg.threads));
  // Threads per backend, as each describes itself: openmp (and spmm.graphblas, which follows the
  // context's threads) use the count above, while Kokkos's is fixed when Kokkos is initialised
  // (Debian's Kokkos is Serial: 1), so rows of different backends may run on different counts.
  for (const BackendCtx& b : suite->backends) {
    const sparseport_plugin* t = b.ctx.plugin().table;
    std::string line = "(no description)";
    if (t != nullptr && t->describe_devices != nullptr) {
      std::vector<char> buf(2048);
      sparseport_status st{};
      line = t->describe_devices(buf.data(), buf.size(), &st) == SPARSEPORT_OK ? std::string(buf.data())
                                                                                : std::string(st.message);
    }
    if (b.ctx.threads() > 0) line += "; Context::set_threads(" + std::to_string(b.ctx.threads()) + ")";
    benchmark::AddCustomContext("sparseport_threads_" + b.name, line);
  }
  benchmark::AddCustomContext("sparseport_copy_GBps", gbps.str());
  benchmark::AddCustomContext("sparseport_copy_method", copy_how);
  benchmark::AddCustomContext("sparseport_suite_size", name(suite->cfg.size));
  benchmark::AddCustomContext("sparseport_features", joined(suite->cfg.features));
  benchmark::AddCustomContext("sparseport_ops", op_names);
  benchmark::AddCustomContext("sparseport_graphs", graph_names.empty() ? "(none)" : graph_names);
  benchmark::AddCustomContext("sparseport_data_dir", suite->cfg.data_dir.empty() ? "(none)" : suite->cfg.data_dir);
  benchmark::AddCustomContext("sparseport_baselines", baseline_table);

  // Graph, then F, then op outermost, so a graph is loaded when its first row runs and the
  // operands of one (graph, F, op) serve all its backends and variants (see Slot).
  // At F = 1 the spmm rows are followed by the same variants through sparseport::spmv ("spmv/..."),
  // timed against the backend's vendor (GraphBLAS, Kokkos Kernels: at one column both already run
  // their matrix-vector kernels, plugins/openmp/README.md). The ops without a feature width follow
  // a graph's F loop, once, with F = 0. spmm's mean, max and min leave the vendor variants out
  // (GraphBLAS and Kokkos Kernels compute sums only here).
  const Suite* sp = suite.get();
  size_t rows = 0;
  const auto add_rows = [&](const DatasetSpec& graph, int64_t f, const RowKind& kind) {
    for (size_t bi = 0; bi < suite->backends.size(); ++bi)
      for (const VariantInfo& v : suite->backends[bi].ctx.plugin().variants) {
        if (v.op != kind.op || (kind.reduce != Reduce::sum && v.is_vendor)) continue;
        const RowSpec row{kind, bi, v.name, graph, f};
        const std::string n = row_name(row_label(kind), suite->backends[bi].name, v.name, graph.name, f);
        benchmark::RegisterBenchmark(n.c_str(), [sp, row](benchmark::State& st) { run_row(st, *sp, row); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
        ++rows;
      }
  };
  const bool has_spmm_sum = std::any_of(ops.begin(), ops.end(), [](const RowKind& k) {
    return k.op == SPARSEPORT_OP_SPMM && k.reduce == Reduce::sum;
  });
  for (const DatasetSpec& graph : graphs) {
    for (int64_t f : suite->cfg.features) {
      for (const RowKind& k : ops)
        if (!per_graph_op(k.op)) add_rows(graph, f, k);
      if (f == 1 && has_spmm_sum) add_rows(graph, f, RowKind{SPARSEPORT_OP_SPMM, Reduce::sum, true});
    }
    for (const RowKind& k : ops)
      if (per_graph_op(k.op)) add_rows(graph, 0, k);
  }
  if (rows == 0) {
    std::cerr << "sparseport_bench_cpu: nothing to run (" << graphs.size() << " graphs, " << suite->backends.size()
              << " host backends).\n";
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
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
