// SPDX-License-Identifier: Apache-2.0
// `sparseport run --op OP`: builds seeded operands from a graph, runs one (or every) variant of a
// backend with one warm-up and R timed repetitions, verifies the result against the reference
// backend in double, and reports time, GFLOP/s, gathered bandwidth and the vendor baseline.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "dist_run.hpp"
#include "json.hpp"
#include "load.hpp"
#include "progress.hpp"
#include "sparseport/sparseport.hpp"
#include "variant_names.hpp"
#include "workloads.hpp"

namespace sparseport::cli {
namespace {

struct RunOptions {
  std::string graph, backend, variant;
  bool all_variants = false;
  sparseport_op op = SPARSEPORT_OP_SPMM;
  int64_t features = 64;
  int reps = 10;
  int threads = 0;
  Reduce reduce = Reduce::sum;
  uint64_t seed = 1;
  int64_t sample = 0;
  ValueType dtype = ValueType::f32;
  IndexType itype = IndexType::i32;
  bool json = false, quiet = false;
  bool allow_tf32 = false;  // --allow-tf32: the context allows TF32 variants (else SPARSEPORT_ALLOW_TF32 decides)
  bool dist = false;        // --dist: over the MPI ranks (dist_run.hpp)
  DistOptions dist_options;
};

struct Timing {
  double median_ms = 0, min_ms = 0;
};

// One warm-up (first-touch, lazy plugin setup, caches), then reps timed one by one; the clock stops
// only after Context::synchronize(), so asynchronous backends are timed to completion.
Timing time_variant(const Context& ctx, Workload& w, const std::string& variant, int reps, const std::string& label,
                    bool show_progress) {
  w.reset();
  Progress p("timing " + label + ": rep", show_progress);
  p.step(0, reps);
  w.run(variant);
  ctx.synchronize();
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    w.run(variant);
    ctx.synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    p.step(r + 1, reps);
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return {n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), ms.front()};
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct Report {
  const RunOptions& opt;
  std::string backend;  // as resolved by the context
  std::string graph;
  int64_t rows, cols, nnz;
  int threads;
  std::string vendor_variant;
  std::optional<double> vendor_ms;
  const Workload& work;
  int name_width = 32;  // the variant column, as wide as the longest name to print
  bool header_printed = false;

  std::string chosen{}, decision{};  // what "auto" ran, and how the scheduler chose it
  std::optional<double> decide_ms{};  // the time the scheduler spent on it (a cache hit: signature and lookup)

  void print(const std::string& variant, const Timing& t, const Verdict& v) {
    const std::optional<double> flops = work.flops();
    std::optional<double> gflops;
    if (flops) gflops = *flops / t.median_ms / 1e6;
    const double gbps = work.gathered_bytes() / t.median_ms / 1e6;
    std::optional<double> speedup;
    if (vendor_ms) speedup = *vendor_ms / t.median_ms;
    const bool uses_f = op_uses_features(opt.op);
    const bool uses_reduce = op_uses_reduce(opt.op);
    if (opt.json) {
      JsonObject o;
      o.add("op", op_name(opt.op))
          .add("backend", backend)
          .add("variant", variant)
          .add("chosen", chosen.empty() ? variant : chosen)
          .add("decision", decision)
          .add("decide_ms", decide_ms)
          .add("graph", graph)
          .add("n", rows)
          .add("cols", cols)
          .add("nnz", nnz)
          .add("F", uses_f ? std::optional<int64_t>(opt.features) : std::nullopt)
          .add("dtype", name(opt.dtype))
          .add("index", name(opt.itype));
      if (uses_reduce)
        o.add("reduce", name(opt.reduce));
      else
        o.null("reduce");
      if (work.selected() > 0)
        o.add("selected", work.selected());
      else
        o.null("selected");
      o.add("reps", opt.reps)
          .add("threads", threads)
          .add("seed", opt.seed)
          .add("ms", t.median_ms)
          .add("ms_min", t.min_ms)
          .add("gflops", gflops)
          .add("gbps_gathered", gbps)
          .add("verified", v.ok)
          .add("err_over_tol", v.worst_ratio)
          .add("max_abs_err", v.max_abs_err)
          .add("reference", v.reference_variant);
      if (vendor_variant.empty())
        o.null("vendor_variant");
      else
        o.add("vendor_variant", vendor_variant);
      o.add("vendor_ms", vendor_ms).add("speedup_vs_vendor", speedup);
      work.report(o);
      std::printf("%s\n", o.str().c_str());
      std::fflush(stdout);
      return;
    }
    if (!header_printed) {
      header_printed = true;
      std::string h = std::string(op_name(opt.op)) + " on " + backend + ", graph " + graph + " (" +
                      std::to_string(rows) + " x " + std::to_string(cols) + ", nnz " + std::to_string(nnz) + ")";
      if (uses_f) h += ", F " + std::to_string(opt.features);
      h += std::string(", ") + name(opt.dtype) + "/" + name(opt.itype);
      if (uses_reduce) h += std::string(", reduce ") + name(opt.reduce);
      if (work.selected() > 0)
        h += ", " + std::to_string(work.selected()) +
             (opt.op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH ? " vertices" : " rows") + " selected";
      h += ", " + std::to_string(opt.reps) + " reps after 1 warm-up";
      if (threads > 0) h += ", " + std::to_string(threads) + " threads";
      std::printf("%s\n", h.c_str());
      std::printf("vendor baseline: %s\n",
                  vendor_variant.empty() ? "none"
                  : vendor_ms           ? (vendor_variant + ", median " + fixed(*vendor_ms, 4) + " ms").c_str()
                                        : (vendor_variant + " (did not run)").c_str());
      std::printf("%-*s %12s %12s %10s %14s  %s\n", name_width, "variant", "median ms", "min ms", "GFLOP/s",
                  "GB/s gathered", vendor_ms ? "speedup  verified" : "verified");
    }
    const std::string gf = gflops ? fixed(*gflops, 3) : "-";
    std::string tail = v.ok ? "yes" : "NO";
    if (v.exact) {
      tail += " (exact)";
    } else {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, " (err/tol %.2g)", v.worst_ratio);
      tail += ratio;
    }
    if (speedup) tail = fixed(*speedup, 3) + "x   " + tail;
    if (variant == "auto" && !chosen.empty()) tail += "  [auto chose " + chosen + ": " + decision + "]";
    std::printf("%-*s %12s %12s %10s %14s  %s\n", name_width, variant.c_str(), fixed(t.median_ms, 4).c_str(),
                fixed(t.min_ms, 4).c_str(), gf.c_str(), fixed(gbps, 3).c_str(), tail.c_str());
    if (const std::string extra = work.report_line(); !extra.empty()) std::printf("%s\n", extra.c_str());
    std::fflush(stdout);
  }
};

void note(const std::string& text) {
  std::fflush(stdout);
  std::fprintf(stderr, "sparseport run: %s\n", text.c_str());
}

// dist: with --dist, this rank's part of the job; only rank 0 loads the graph, prints and verifies.
template <class I, class V>
int run_typed(const RunOptions& opt, const Args& args, DistSession* dist) {
  const bool root = dist == nullptr || dist->rank() == 0;
  const bool show = !opt.quiet && root;
  const auto say = [root](const std::string& text) {
    if (root) note(text);
  };
  // Steps that can fail on some ranks only (rank 0 loads the graph) fail on all of them together.
  const auto on_every_rank = [dist](const std::function<void()>& step) {
    if (dist != nullptr)
      dist->together(step);
    else
      step();
  };
  // The context first: a backend that is not compiled fails before a long load.
  std::optional<Context> made;
  on_every_rank([&] { made = Context::create(dist != nullptr ? dist->backend_of_rank(opt.backend) : opt.backend); });
  Context& ctx = *made;
  ctx.set_threads(opt.threads == 0 && dist != nullptr ? dist->default_threads() : opt.threads);
  if (opt.allow_tf32) ctx.set_allow_tf32(true);
  const PluginInfo& plugin = ctx.plugin();
  const std::vector<std::string> offered = plugin.variants_of(opt.op);
  std::string offered_list;
  for (const std::string& v : offered) offered_list += (offered_list.empty() ? "" : ", ") + v;
  std::vector<std::string> variants;
  if (opt.all_variants) {
    if (offered.empty())
      throw Unsupported("sparseport run: backend '" + plugin.name + "' offers no variant of " + op_name(opt.op));
    // The TF32 variants only with consent (named without it, the op refuses them).
    for (const VariantInfo& v : plugin.variants) {
      if (v.op != opt.op) continue;
      if (v.tf32 && !ctx.allow_tf32())
        say("skipping " + v.name + ": it rounds float32 inputs to TF32; pass --allow-tf32 (or SPARSEPORT_ALLOW_TF32=1)");
      else
        variants.push_back(v.name);
    }
  } else if (!opt.variant.empty()) {
    // The full name, or the short one ("merge_path") where it names one offered variant.
    variants = variants_named(offered, opt.variant);
    if (variants.size() != 1) args.fail(variant_choice_error(offered, opt.variant, op_name(opt.op), plugin.name));
  } else {
    variants = {""};  // the scheduler chooses
  }

  HostCsr<I, V> graph;
  on_every_rank([&] {
    if (!root) return;
    if constexpr (std::is_same_v<V, half> || std::is_same_v<V, bfloat16>) {
      // Generated or read as float32, then rounded once into 16 bits (the inputs the op and the
      // double-precision check both see).
      HostCsr<I, float> g = load_with_progress<I, float>(opt.graph, show);
      graph.rows = g.rows;
      graph.cols = g.cols;
      graph.rowptr = std::move(g.rowptr);
      graph.colind = std::move(g.colind);
      graph.values.assign(g.values.size(), V());
      for (size_t e = 0; e < g.values.size(); ++e) graph.values[e] = V(g.values[e]);
    } else {
      graph = load_with_progress<I, V>(opt.graph, show);
    }
  });
  WorkloadSpec spec;
  spec.op = opt.op;
  spec.features = opt.features;
  spec.reduce = opt.reduce;
  spec.seed = opt.seed;
  spec.sample = opt.sample;
  spec.show_progress = show;
  std::unique_ptr<Workload> work;
  {
    Progress p(dist != nullptr ? "partitioning and preparing operands" : "preparing operands", show);
    if constexpr (std::is_same_v<V, half> || std::is_same_v<V, bfloat16>)
      work = make_workload<I, V>(ctx, graph, spec);  // --dist with 16 bits is refused before this
    else
      work = dist != nullptr ? make_dist_workload<I, V>(*dist, ctx, graph, spec, opt.dist_options)
                             : make_workload<I, V>(ctx, graph, spec);
  }

  Report report{opt, ctx.backend(), graph_label(opt.graph), graph.rows, graph.cols, graph.nnz(), ctx.threads(),
                plugin.vendor_variant(opt.op), std::nullopt, *work};
  for (const std::string& v : variants) report.name_width = std::max(report.name_width, static_cast<int>(v.size()));
  if (!report.vendor_variant.empty()) {
    try {
      report.vendor_ms =
          time_variant(ctx, *work, report.vendor_variant, opt.reps, report.vendor_variant, show).median_ms;
    } catch (const Unsupported& e) {
      say("the vendor baseline " + report.vendor_variant + " did not run: " + e.what());
    }
  }

  int failures = 0, ran = 0;
  for (const std::string& variant : variants) {
    const std::string label = variant.empty() ? "auto" : variant;
    Timing t;
    try {
      t = time_variant(ctx, *work, variant, opt.reps, label, show);
    } catch (const Unsupported& e) {
      if (!opt.all_variants) throw;
      say("skipping " + variant + ": " + e.what());
      continue;
    }
    ++ran;
    // The decision first: the check runs the reference backend, whose calls are the last ones then.
    const Decision d = work->decision().value_or(last_decision());
    const Verdict v = work->verify();
    report.chosen = variant.empty() ? d.variant : variant;
    report.decision = variant.empty() ? d.source + ": " + d.reason : "requested";
    report.decide_ms = variant.empty() ? std::optional<double>(d.decide_seconds * 1e3) : std::nullopt;
    if (root) report.print(label, t, v);
    if (!v.ok) {
      ++failures;
      say(label + " FAILED verification against " + v.reference_variant + ": " + v.detail);
    }
  }
  if (ran == 0)
    throw Unsupported("sparseport run: no variant of backend '" + plugin.name + "' applies to " + op_name(opt.op) +
                      " on " + graph_label(opt.graph) + " (offered: " + offered_list + ")");
  return failures > 0 ? 1 : 0;
}

constexpr const char* kOps =
    "spmm, sddmm, segment_reduce, scatter_reduce,\n"
    "                        gather_scatter, csr_attention, csr_slice_rows, csr_slice_rows_dense,\n"
    "                        csr_induced_subgraph, csr_transpose";

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  Args args("sparseport run", "--op OP [options] [GRAPH]",
            "Runs one operator on a backend: 1 warm-up, then R timed repetitions (steady_clock, the\n"
            "backend synchronised before the clock stops). Checks the result against the reference\n"
            "backend computing in double and prints the median time, GFLOP/s, gathered GB/s and, where\n"
            "the backend has a vendor baseline, its time and the speedup over it. Exits with 1 when a\n"
            "result does not verify.");
  args.option("--op", "OP", std::string("the operator: ") + kOps)
      .option("--backend", "B",
              "reference, openmp, cuda[:N], kokkos (default: $SPARSEPORT_BACKEND, else the\n"
              "                        build's default)")
      .option("--variant", "V",
              "a variant of the backend (see 'sparseport devices'), by its full name or, where\n"
              "                        unambiguous, its short one (merge_path for spmm.merge_path), or\n"
              "                        'all' for each in turn;\n"
              "                        default: the scheduler chooses")
      .option("--F", "N", "feature width of the dense operands (default 64)")
      .option("--reps", "R", "timed repetitions after the warm-up (default 10)")
      .option("--threads", "T", "threads for CPU backends (default 0: the backend's own default)")
      .option("--reduce", "R",
              "sum, mean, max or min, for spmm, segment/scatter_reduce and gather_scatter\n"
              "                        (default sum)")
      .option("--seed", "S", "seed of the random operands, the shuffle and the samples (default 1)")
      .option("--sample", "S",
              "rows (csr_slice_rows*) or vertices (csr_induced_subgraph) to select\n"
              "                        (default 1024 rows; for the subgraph 3% of the vertices, at least 512)")
      .option("--dtype", "T", "value type: f32, f64, f16 or bf16 (default f32; 16-bit values accumulate in f32)")
      .option("--index", "T", "index type: i32 or i64 (default i32)")
      .flag("--allow-tf32",
            "let variants that round float32 inputs to TF32 run (10 mantissa bits, tensor\n"
            "                        cores; 'sparseport devices' tags them tf32) and verify them within\n"
            "                        the TF32 bound; default: SPARSEPORT_ALLOW_TF32, else off")
      .flag("--json", "one JSON object per result on stdout (progress and notes go to stderr)")
      .flag("--dist",
            "run over the MPI ranks (mpirun -np P sparseport run --dist ...): rank 0 loads the\n"
            "                        graph and scatters it (see --partition); spmm, sddmm,\n"
            "                        gather_scatter and segment_reduce; needs a build with MPI")
      .option("--partition", "P",
              "with --dist: auto, rows or metis (default: SPARSEPORT_DIST_PARTITION, else auto).\n"
              "                        rows: contiguous rows balanced by entries; metis: METIS's parts,\n"
              "                        the vertices relabelled (needs a build with METIS); auto: METIS\n"
              "                        when the graph is square with skewed degrees (max/mean >= 8)\n"
              "                        and METIS's predicted halo is at least 10% lower, else rows")
      .flag("--rebalance",
            "with --dist and the rows partition (the default): time 3 calls, fit what a row costs\n"
            "                        against an entry from the ranks' compute times, and scatter again\n"
            "                        with that row weight where it predicts the slowest rank >= 5% faster")
      .flag("--no-rebalance", "with --dist: keep the entry-balanced rows (no timed calls before the run)")
      .flag("--quiet", "no progress on stderr", "-q")
      .positional("GRAPH", "a Matrix Market file or a generator spec (default: powerlaw)", false)
      .epilog(
          "Operands: random values in [-1, 1) from the seed; the edge ops use the graph's edges sorted by\n"
          "destination (row = dst, column = src), scatter_reduce the same edges shuffled. GFLOP/s counts\n"
          "2*nnz*F for spmm, sddmm and gather_scatter, E*F for segment/scatter_reduce, 4*nnz*F for\n"
          "csr_attention, nothing for the structural ops. Gathered GB/s counts the dense rows read through\n"
          "the sparse pattern (sizeof(value)*F*nnz for spmm; 2x that for csr_attention's K and V) and, for\n"
          "structural ops, the entries read.\n"
          "\n"
          "JSON fields: op backend variant graph n cols nnz F dtype index reduce selected reps threads seed\n"
          "ms ms_min gflops gbps_gathered verified err_over_tol max_abs_err reference vendor_variant\n"
          "vendor_ms speedup_vs_vendor (null where not applicable); with --dist also ranks partition\n"
          "partition_reason degree_skew halo_bytes_predicted_rows halo_bytes_predicted_metis metis_ms\n"
          "halo_bytes halo_bytes_predicted comm_ms compute_ms transport interior_ms exchange_ms wait_ms\n"
          "boundary_ms timeline. 'variant' is \"auto\" when the\n"
          "scheduler chose. ms is the median over the reps; err_over_tol is the worst element's error over\n"
          "its tolerance (verified means <= 1; structural results must match exactly).\n"
          "With --dist: ms is the time until the slowest rank is done; the result is gathered on rank 0 and\n"
          "verified there; halo_bytes is one call's halo summed over the ranks (halo_bytes_predicted: the\n"
          "same from the partition alone); comm_ms (pack, post, the wait left after the local block) and\n"
          "compute_ms (local, remote and combine steps) are medians per call on the slowest rank, as\n"
          "are interior_ms (compute while the halo moves), exchange_ms (posting to the end of the wait),\n"
          "wait_ms (the exchange not hidden) and boundary_ms (compute after the wait); timeline has them\n"
          "per rank, with its interior and boundary rows and whether it read its halo in place (shm).\n"
          "partition is the one used (rows or metis) and partition_reason why; halo_bytes_predicted_rows\n"
          "and _metis are one call's halo predicted for the entry-balanced rows and for METIS's parts\n"
          "(null where METIS did not run), metis_ms METIS's wall time (null where it did not run).\n"
          "SPARSEPORT_DIST_TRANSPORT=shm|mpi picks the\n"
          "halo's transport for host backends (default shm: a shared-memory window between the ranks\n"
          "of a node).\n"
          "sddmm's out and segment_reduce's messages are split by the entries of each rank's rows\n"
          "(segment_reduce's messages live with their destination rows, so it moves no halo).\n"
          "\n"
          "Examples:\n"
          "  sparseport run --op spmm --json\n"
          "  sparseport run --op sddmm --backend openmp --variant all --F 32 rmat:14:16\n"
          "  sparseport run --op spmm --backend openmp --variant merge_path rmat:14:16\n"
          "  sparseport run --op segment_reduce --reduce max ../shared/data/cora.mtx.gz\n"
          "  mpirun -np 2 sparseport run --dist --op spmm --F 32 --json rmat:16:16");
  if (!args.parse(argv)) return 0;

  RunOptions opt;
  if (!args.has("--op")) {
    std::string ops;
    for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op)
      ops += (op ? ", " : "") + std::string(op_name(static_cast<sparseport_op>(op)));
    args.fail("missing --op OP (one of: " + ops + ")");
  }
  try {
    opt.op = op_from_name(args.get("--op"));
  } catch (const InvalidArgument& e) {
    args.fail_with(e);
  }
  opt.backend = args.get("--backend");
  if (!opt.backend.empty()) {
    // Unknown names are usage errors; a known backend that is not compiled in fails later with
    // the reason (exit 1), as a runtime condition of this build.
    try {
      (void)plugin(opt.backend.substr(0, opt.backend.find(':')));
    } catch (const InvalidArgument& e) {
      args.fail_with(e);
    }
  }
  opt.variant = args.get("--variant");
  opt.all_variants = opt.variant == "all";
  opt.features = args.get_int("--F", 64, 1, 1 << 20);
  opt.reps = static_cast<int>(args.get_int("--reps", 10, 1, 1000000));
  opt.threads = static_cast<int>(args.get_int("--threads", 0, 0, 1 << 16));
  if (args.has("--reduce")) {
    try {
      opt.reduce = reduce_from_name(args.get("--reduce"));
    } catch (const InvalidArgument& e) {
      args.fail_with(e);
    }
  }
  opt.seed = args.get_u64("--seed", 1);
  opt.sample = args.get_int("--sample", 0, 1, INT64_MAX);
  const std::string dtype = args.get("--dtype", "f32");
  if (dtype != "f32" && dtype != "f64" && dtype != "f16" && dtype != "bf16")
    args.fail("--dtype is '" + dtype + "' but must be f32, f64, f16 or bf16");
  opt.dtype = dtype == "f64" ? ValueType::f64 : dtype == "f16" ? ValueType::f16 : dtype == "bf16" ? ValueType::bf16 : ValueType::f32;
  const std::string itype = args.get("--index", "i32");
  if (itype != "i32" && itype != "i64") args.fail("--index is '" + itype + "' but must be i32 or i64");
  opt.itype = itype == "i32" ? IndexType::i32 : IndexType::i64;
  opt.json = args.has("--json");
  opt.allow_tf32 = args.has("--allow-tf32");
  opt.quiet = args.has("--quiet");
  opt.dist = args.has("--dist");
  if (opt.dist && !dist_supports(opt.op))
    args.fail(std::string("--dist runs ") + kDistOps + ", not " + op_name(opt.op));
  opt.graph = args.positional_value("GRAPH");
  if (args.has("--partition")) {
    const std::string& p = opt.dist_options.partition = args.get("--partition");
    if (p != "auto" && p != "rows" && p != "metis") args.fail("--partition is '" + p + "' but must be auto, rows or metis");
    if (!opt.dist) note("--partition applies with --dist only; ignored");
  }
  // Rebalancing is the default: on the GPU machine's 16 cores it took rmat:22:16 at F = 64 from
  // 1.09x of one rank's time to 0.93x at 2 x 8 (benchmarks/results/2026-12-04-h200-issue37-rebalance-16core.md).
  if (args.has("--rebalance") && args.has("--no-rebalance")) args.fail("--rebalance and --no-rebalance contradict");
  opt.dist_options.rebalance = !args.has("--no-rebalance");
  if (!opt.all_variants) opt.dist_options.variant = opt.variant;
  if ((args.has("--rebalance") || args.has("--no-rebalance")) && !opt.dist)
    note("--rebalance and --no-rebalance apply with --dist only; ignored");

  // Flags that do not apply to the op are accepted (scripts loop over ops with one flag set) but
  // said so, on stderr, so nobody reads a result as "max" that was not.
  const std::string op = op_name(opt.op);
  if (args.has("--reduce") && !op_uses_reduce(opt.op)) note("--reduce does not apply to " + op + "; ignored");
  if (args.has("--F") && !op_uses_features(opt.op)) note("--F does not apply to " + op + "; ignored");
  const bool selects = opt.op == SPARSEPORT_OP_CSR_SLICE_ROWS || opt.op == SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE ||
                       opt.op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH;
  if (args.has("--sample") && !selects) note("--sample does not apply to " + op + "; ignored");

  if (opt.dist && is_16bit(opt.dtype)) args.fail("--dist takes --dtype f32 or f64, not " + dtype);
  const auto run = [&](DistSession* dist) {
    const auto typed = [&]<class I>() {
      switch (opt.dtype) {
        case ValueType::f64: return run_typed<I, double>(opt, args, dist);
        case ValueType::f16: return run_typed<I, half>(opt, args, dist);
        case ValueType::bf16: return run_typed<I, bfloat16>(opt, args, dist);
        default: return run_typed<I, float>(opt, args, dist);
      }
    };
    return opt.itype == IndexType::i32 ? typed.template operator()<int32_t>() : typed.template operator()<int64_t>();
  };
  if (!opt.dist) return run(nullptr);
  const std::unique_ptr<DistSession> session = start_dist_session();  // NotCompiled without MPI
  return session->run([&] { return run(session.get()); });
}

}  // namespace sparseport::cli
