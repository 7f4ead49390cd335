// SPDX-License-Identifier: Apache-2.0
// `sparseport tune --oracle`: how good and how cheap the scheduler's decisions are. Per graph it
// times every applicable variant at full size (the oracle), makes a cold decision (probe mode,
// fresh memo), then a cache-hit decision, and reports regret, cold cost and hit overhead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "json.hpp"
#include "load.hpp"
#include "sparseport/sparseport.hpp"
#include "workloads.hpp"

namespace sparseport::cli {
namespace {

using Clock = std::chrono::steady_clock;

double median_ms(const Context& ctx, Workload& w, const std::string& variant, int reps) {
  w.reset();
  w.run(variant);  // warm-up (and, for "", the decision)
  ctx.synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    w.run(variant);
    ctx.synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// Runs fn with SPARSEPORT_SCHEDULER=mode and SPARSEPORT_CACHE_DIR=dir, restoring both after.
template <class Fn>
void with_scheduler(const char* mode, const std::string& dir, Fn fn) {
  const char* old_mode = std::getenv("SPARSEPORT_SCHEDULER");
  const char* old_dir = std::getenv("SPARSEPORT_CACHE_DIR");
  const std::string keep_mode = old_mode ? old_mode : "", keep_dir = old_dir ? old_dir : "";
  ::setenv("SPARSEPORT_SCHEDULER", mode, 1);
  ::setenv("SPARSEPORT_CACHE_DIR", dir.c_str(), 1);
  clear_plan_memo();
  fn();
  clear_plan_memo();
  if (old_mode) ::setenv("SPARSEPORT_SCHEDULER", keep_mode.c_str(), 1); else ::unsetenv("SPARSEPORT_SCHEDULER");
  if (old_dir) ::setenv("SPARSEPORT_CACHE_DIR", keep_dir.c_str(), 1); else ::unsetenv("SPARSEPORT_CACHE_DIR");
}

}  // namespace

int cmd_tune(const std::vector<std::string>& argv) {
  Args args("sparseport tune", "--oracle --op OP --backend B --F N [--json] GRAPH...",
            "Oracle evaluation of the scheduler. For each GRAPH: times every applicable variant of OP on\n"
            "the full graph (median of --reps after a warm-up), then lets the scheduler decide cold\n"
            "(SPARSEPORT_SCHEDULER=probe, a fresh cache folder unless --cache-dir), then again from the\n"
            "cache, and prints the chosen and the best variant, regret = t(chosen)/t(best) - 1,\n"
            "cold_cost_ops = the cold decision's overhead (signatures, estimate, probe, full-size check)\n"
            "in units of one full-size call of the chosen variant, and hit_overhead_us = the time a\n"
            "cache-hit decision adds (signatures and the cache lookup) in microseconds.");
  args.flag("--oracle", "required: time every variant and compare (the only mode so far)");
  args.option("--op", "OP", "spmm, sddmm, csr_attention, segment_reduce, scatter_reduce, gather_scatter");
  args.option("--backend", "B", "backend (default: SPARSEPORT_BACKEND or the build's default)");
  args.option("--F", "N", "feature width (default 64)");
  args.option("--reps", "R", "timed repetitions per variant (default 5)");
  args.option("--threads", "T", "threads for CPU backends");
  args.option("--cache-dir", "DIR", "decision cache folder (default: a fresh temporary folder)");
  args.flag("--json", "one JSON object per graph");
  args.positional("graphs", "one or more GRAPH arguments", true);
  // Args takes one positional; every GRAPH after the first is collected here and the first is
  // left for Args to check.
  std::vector<std::string> graphs, rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool takes_value = a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && a != "--oracle" &&
                             a != "--json" && a != "--help";
    if (a.rfind("-", 0) == 0) {
      rest.push_back(a);
      if (takes_value && i + 1 < argv.size()) rest.push_back(argv[++i]);
      continue;
    }
    graphs.push_back(a);
  }
  if (!graphs.empty()) rest.push_back(graphs.front());
  if (!args.parse(rest)) return 0;
  if (!args.has("--oracle")) args.fail("sparseport tune: only --oracle is implemented; pass it");
  WorkloadSpec spec;
  try {
    spec.op = op_from_name(args.get("--op", "spmm"));
  } catch (const std::exception& e) {
    args.fail_with(e);
  }
  spec.features = args.get_int("--F", 64, 1, 1 << 20);
  spec.show_progress = false;
  const int reps = static_cast<int>(args.get_int("--reps", 5, 1, 1000));
  const bool json = args.has("--json");
  Context ctx = Context::create(args.get("--backend"));
  if (args.has("--threads")) ctx.set_threads(static_cast<int>(args.get_int("--threads", 0, 1, 4096)));
  std::string dir = args.get("--cache-dir");
  const bool temp_dir = dir.empty();
  if (temp_dir)
    dir = (std::filesystem::temp_directory_path() / ("sparseport-tune-" + std::to_string(::getpid()))).string();

  if (!json)
    std::printf("%-28s %-26s %-26s %8s %14s %16s\n", "graph", "chosen", "best", "regret", "cold_cost_ops",
                "hit_overhead_us");
  for (const std::string& g : graphs) {
    const auto graph = load_with_progress<int32_t, float>(g, false);
    auto work = make_workload(ctx, graph, spec);
    std::vector<std::pair<std::string, double>> times;
    for (const std::string& v : ctx.plugin().variants_of(spec.op)) {
      try {
        times.emplace_back(v, median_ms(ctx, *work, v, reps));
      } catch (const Unsupported&) {
        // does not apply to this input: not a candidate
      }
    }
    if (times.empty()) throw Unsupported("sparseport tune: no variant of " + ctx.plugin().name + " applies to " + g);
    const auto best = *std::min_element(times.begin(), times.end(), [](auto& a, auto& b) { return a.second < b.second; });
    Decision cold, hit;
    with_scheduler("probe", dir, [&] {
      work->reset();
      work->run("");
      ctx.synchronize();
      cold = last_decision();
    });
    with_scheduler("auto", dir, [&] {
      work->reset();
      work->run("");
      ctx.synchronize();
      hit = last_decision();
    });
    const Verdict ok = work->verify();
    double chosen_ms = -1;
    for (const auto& [v, t] : times)
      if (v == cold.variant) chosen_ms = t;
    const double regret = chosen_ms > 0 ? chosen_ms / best.second - 1 : -1;
    const double cold_ops = chosen_ms > 0 ? cold.decide_seconds * 1e3 / chosen_ms : -1;
    const double hit_us = hit.decide_seconds * 1e6;
    if (json) {
      JsonObject o;
      o.add("graph", g).add("op", op_name(spec.op)).add("backend", ctx.backend()).add("F", spec.features)
          .add("chosen", cold.variant).add("best", best.first).add("regret", regret).add("cold_cost_ops", cold_ops)
          .add("hit_overhead_us", hit_us).add("source", cold.source).add("reason", cold.reason)
          .add("reverted", cold.reverted).add("hit_source", hit.source).add("hit_variant", hit.variant)
          .add("verified", ok.ok);
      // One flat object per line: the oracle's times as "ms:VARIANT" keys.
      for (const auto& [v, t] : times) o.add("ms:" + v, t);
      std::printf("%s\n", o.str().c_str());
    } else {
      std::printf("%-28s %-26s %-26s %8.3f %14.2f %16.1f\n", g.c_str(), cold.variant.c_str(), best.first.c_str(),
                  regret, cold_ops, hit_us);
      std::printf("    %s; cache: %s -> %s; result %s\n", cold.reason.c_str(), hit.source.c_str(), hit.variant.c_str(),
                  ok.ok ? "verified" : "WRONG");
      for (const auto& [v, t] : times) std::printf("    %-30s %10.4f ms\n", v.c_str(), t);
    }
    std::fflush(stdout);
    if (!ok.ok) return 1;
  }
  if (temp_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace sparseport::cli
