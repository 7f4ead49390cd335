// SPDX-License-Identifier: Apache-2.0
// sparseport_bench_cpu: one Google Benchmark row per (op, backend, variant, graph, F) for every
// available host-memory backend and every variant it lists, named "op/backend/variant/graph/F".
// Rows are registered at run time from sparseport::plugins(), so a new plugin or variant joins
// without an edit here. Each row is timed by hand (steady_clock around one call, then
// Context::synchronize) and compared, in the same process and on the same input, with the
// backend's baseline variant (harness.hpp); counters use the median time per call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
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

// Seeds of the dense operands: fixed, so every run times the same numbers.
constexpr uint64_t kSeedRows = 11, kSeedCols = 12, kSeedCols2 = 13, kSeedMessages = 14;

// The operands of one op on one graph at one F, shared by every backend and variant of that op.
class OpCase {
 public:
  // spmv: spmm's operands at F = 1, called through sparseport::spmv.
  OpCase(sparseport_op op, std::shared_ptr<const Graph> g, int64_t f, bool spmv = false)
      : op_(op), g_(std::move(g)), f_(f), spmv_(spmv) {
    const int64_t m = g_->csr.rows, k = g_->csr.cols, nnz = g_->csr.nnz();
    switch (op_) {
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
      default:
        throw InvalidArgument(std::string("sparseport_bench: op '") + op_name(op_) + "' has no CPU benchmark.");
    }
  }

  // One call of the op; throws what the op throws.
  void run(const Context& ctx, const std::string& variant) {
    const CsrView a = g_->csr.view();
    switch (op_) {
      case SPARSEPORT_OP_SPMM: {
        SpmmOptions opt;
        opt.variant = variant;
        if (spmv_)
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
      case SPARSEPORT_OP_GATHER_SCATTER: {
        ReduceOptions opt;
        opt.variant = variant;
        const HostCsr<int32_t, float>& c = g_->csr;
        const CooView edges = make_coo<int32_t, float>(c.rows, c.cols, c.nnz(), g_->coo_row.data(), c.colind.data(),
                                                       c.values.data());
        gather_scatter(ctx, edges, in1_.view(), out_.mut(), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_ATTENTION: {
        AttentionOptions opt;
        opt.variant = variant;
        csr_attention(ctx, a, in1_.view(), in2_.view(), in3_.view(), out_.mut(), opt);
        break;
      }
      default: break;
    }
  }

  const std::vector<float>& output() const { return out_.data; }
  // NaN everywhere, so a variant that leaves an element unwritten cannot pass the check on the
  // baseline's leftovers.
  void poison_output() { std::fill(out_.data.begin(), out_.data.end(), std::numeric_limits<float>::quiet_NaN()); }

 private:
  static HostDense<float> random_dense(int64_t rows, int64_t cols, uint64_t seed) {
    HostDense<float> d(rows, cols);
    fill_random(d, seed);
    return d;
  }

  sparseport_op op_;
  std::shared_ptr<const Graph> g_;
  int64_t f_;
  bool spmv_;
  HostDense<float> in1_, in2_, in3_, out_;
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
BaselineRun measure_baseline(const BackendCtx& b, sparseport_op op, OpCase& c) {
  BaselineRun r;
  for (const Baseline& candidate : baseline_candidates(b.ctx.plugin(), op)) {
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
      r.output = c.output();
      // At least 3 calls and 0.05 s (at most 10^4 calls): a stable median without dominating the row.
      std::vector<double> t;
      double total = 0.0;
      while (t.size() < 10000 && (t.size() < 3 || total < 0.05)) {
        const auto t0 = Clock::now();
        c.run(b.ctx, r.which.variant);
        b.ctx.synchronize();
        t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        total += t.back();
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
  sparseport_op op;
  size_t backend;
  std::string variant;
  DatasetSpec graph;
  int64_t features;
  bool spmv = false;  // spmm at F = 1 through sparseport::spmv (kSpmvRow rows)
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
  const OpModel model = op_model(row.op, *g, row.features);
  if (model.operand_bytes > suite.cfg.max_operand_gb * 1e9) {
    std::ostringstream s;
    s << "skipped: the operands of " << op_name(row.op) << " on " << g->name << " at F=" << row.features << " need "
      << model.operand_bytes / 1e9 << " GB, over the SPARSEPORT_BENCH_MAX_GB cap of " << suite.cfg.max_operand_gb
      << " GB.";
    state.SkipWithError(s.str().c_str());
    return;
  }

  Slot& s = slot();
  const std::string key =
      g->name + "|" + std::to_string(row.features) + "|" + (row.spmv ? kSpmvRow : op_name(row.op));
  if (s.key != key) {
    s = Slot{};  // frees the previous operands first
    try {
      s.op_case = std::make_unique<OpCase>(row.op, g, row.features, row.spmv);
    } catch (const std::exception& ex) {
      state.SkipWithError((std::string("building the operands failed: ") + ex.what()).c_str());
      return;
    }
    s.key = key;
  }
  OpCase& c = *s.op_case;
  auto base = s.baselines.find(b.name);
  if (base == s.baselines.end()) base = s.baselines.emplace(b.name, measure_baseline(b, row.op, c)).first;
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
      if (std::string d = gross_difference(c.output(), baseline.output); !d.empty()) {
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
    if (a == "--help") std::cout << config_help() << "\n";
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" || a == "--benchmark_list_tests=1")
      listing_tests = true;
  }
  auto suite = std::make_unique<Suite>();
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
  std::string baseline_table;
  for (sparseport_op op : benchmarked_ops()) {
    baseline_table += (baseline_table.empty() ? "" : "; ") + std::string(op_name(op)) + ": vendor, else ";
    for (const std::string& v : named_baselines(op)) baseline_table += v + ", else ";
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
  benchmark::AddCustomContext("sparseport_graphs", graph_names.empty() ? "(none)" : graph_names);
  benchmark::AddCustomContext("sparseport_data_dir", suite->cfg.data_dir.empty() ? "(none)" : suite->cfg.data_dir);
  benchmark::AddCustomContext("sparseport_baselines", baseline_table);

  // Graph, then F, then op outermost, so a graph is loaded when its first row runs and the
  // operands of one (graph, F, op) serve all its backends and variants (see Slot).
  // At F = 1 the spmm rows are followed by the same variants through sparseport::spmv ("spmv/..."),
  // timed against the backend's vendor (GraphBLAS, Kokkos Kernels: at one column both already run
  // their matrix-vector kernels, plugins/openmp/README.md).
  const Suite* sp = suite.get();
  size_t rows = 0;
  const auto add_rows = [&](const DatasetSpec& graph, int64_t f, sparseport_op op, bool spmv) {
    for (size_t bi = 0; bi < suite->backends.size(); ++bi)
      for (const std::string& variant : suite->backends[bi].ctx.plugin().variants_of(op)) {
        const RowSpec row{op, bi, variant, graph, f, spmv};
        const std::string n = spmv ? row_name(kSpmvRow, suite->backends[bi].name, variant, graph.name, f)
                                   : row_name(op, suite->backends[bi].name, variant, graph.name, f);
        benchmark::RegisterBenchmark(n.c_str(), [sp, row](benchmark::State& st) { run_row(st, *sp, row); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
        ++rows;
      }
  };
  for (const DatasetSpec& graph : graphs)
    for (int64_t f : suite->cfg.features) {
      for (sparseport_op op : benchmarked_ops()) add_rows(graph, f, op, false);
      if (f == 1) add_rows(graph, f, SPARSEPORT_OP_SPMM, true);
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
