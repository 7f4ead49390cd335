// SPDX-License-Identifier: Apache-2.0
// `sparseport tune --oracle`: how good and how cheap the scheduler's decisions are. Per graph it
// times every applicable variant at full size (the oracle), makes a cold decision (probe mode,
// fresh memo), then a cache-hit decision, and reports regret, cold cost and hit overhead, with the
// model's predicted time of every variant next to the measured one.
// `sparseport tune --collect FILE`: the cost model's training records. Per graph, F and reduce it
// times every applicable variant at full size and appends one JSON line per variant: the model's
// inputs (as the scheduler computes them) and the measured time (scheduler/model/README.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
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

// A batch of back-to-back calls with one synchronize lasts at least ~300 us, so launch and clock
// overheads do not count against short kernels. batch_calls: after a reset and a warm-up call, how
// many calls a batch of `variant` holds (from one timed call). batch_ms: one batch's mean per call.
int batch_calls(const Context& ctx, Workload& w, const std::string& variant) {
  w.reset();
  w.run(variant);
  ctx.synchronize();
  const auto t0 = Clock::now();
  w.run(variant);
  ctx.synchronize();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<int>(std::clamp(300e-6 / std::max(once, 1e-7), 1.0, 200.0));
}

double batch_ms(const Context& ctx, Workload& w, const std::string& variant, int calls) {
  const auto t0 = Clock::now();
  for (int c = 0; c < calls; ++c) w.run(variant);
  ctx.synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / calls;
}

double median(std::vector<double> t) {
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// Per call, at full size: the median of `reps` batches after the warm-up.
double batched_ms(const Context& ctx, Workload& w, const std::string& variant, int reps) {
  const int calls = batch_calls(ctx, w, variant);
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(batch_ms(ctx, w, variant, calls));
  return median(std::move(t));
}

// The oracle's times: every variant in `variants` that applies (Unsupported: left out), each the
// median of `reps` batches as in batched_ms, but the batches interleaved, one of each variant a round,
// with one untimed call before each batch, so that no variant is always timed first. Timed one after
// the other, the plugin's first variant (openmp: spmm.rows) came out slower than its second
// (merge_path) on 30-35 of the shared matrices' 51 (graph, F) cases in four runs, where separate
// processes timed the two equal; interleaved, on 17-35 (mean 26) in six runs (2-core VM,
// 2026-12-04). The scheduler's score did not move (within 5 % on 40-50 of 51 either way): the two
// variants are within the VM's noise of each other.
std::vector<std::pair<std::string, double>> interleaved_ms(const Context& ctx, Workload& w,
                                                           const std::vector<std::string>& variants, int reps) {
  std::vector<std::pair<std::string, int>> live;  // variant, calls a batch
  for (const std::string& v : variants) {
    try {
      live.emplace_back(v, batch_calls(ctx, w, v));
    } catch (const Unsupported&) {
      // does not apply to this input: not a candidate
    }
  }
  std::vector<std::vector<double>> t(live.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < live.size(); ++i) {
      const auto& [v, calls] = live[i];
      w.reset();
      w.run(v);  // one untimed call: the caches hold this variant's state, not the last one's
      ctx.synchronize();
      t[i].push_back(batch_ms(ctx, w, v, calls));
    }
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < live.size(); ++i) out.emplace_back(live[i].first, median(std::move(t[i])));
  return out;
}

// "1,4,16" -> {1, 4, 16}
std::vector<int64_t> int_list(const Args& args, const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    char* stop = nullptr;
    const long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || v < 1 || v > (1 << 20))
      args.fail("sparseport tune: --F takes whole numbers from 1 to 1048576 separated by commas, not '" + text + "'");
    out.push_back(v);
    pos = end + 1;
  }
  return out;
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

namespace {

std::string family_of(const std::string& graph) {
  if (!is_generator_spec(graph)) return "real";
  return graph.substr(0, graph.find_first_of(":@"));
}

// One training record per variant of one problem (scheduler/model/README.md has the fields).
void collect_problem(const Context& ctx, Workload& work, const std::string& graph, const WorkloadSpec& spec,
                     const std::string& dir, int reps, std::FILE* out) {
  Decision d;
  with_scheduler("model", dir, [&] {  // the inputs only: the ranking decides, nothing is timed
    work.reset();
    work.run("");
    ctx.synchronize();
    d = last_decision();
  });
  if (d.inputs.empty()) return;  // one variant only, or the op is not scheduled: nothing to learn
  const std::string vendor = ctx.plugin().vendor_variant(spec.op);
  for (const Decision::Candidate& c : d.candidates) {
    double t = -1;
    try {
      t = batched_ms(ctx, work, c.variant, reps);
    } catch (const Unsupported&) {
      continue;
    }
    JsonObject o;
    o.add("schema", 1).add("device_class", d.device_class).add("device", ctx.plugin().name).add("backend", ctx.backend())
        .add("threads", static_cast<int64_t>(ctx.threads())).add("graph", graph).add("family", family_of(graph))
        .add("op", op_name(spec.op)).add("reduce", op_uses_reduce(spec.op) ? name(spec.reduce) : "")
        .add("F", spec.features).add("variant", c.variant).add("vendor", vendor).add("is_vendor", c.variant == vendor)
        .add("ms", t).add("floor_ms", d.floor_ms).add("estimate_ms", c.estimate_ms);
    for (const auto& [k, v] : d.inputs) o.add(k, v);
    o.add("f:est_over_floor", std::log2(std::max(c.estimate_ms, 1e-9) / d.floor_ms));
    std::fprintf(out, "%s\n", o.str().c_str());
  }
  std::fflush(out);
}

}  // namespace

int cmd_tune(const std::vector<std::string>& argv) {
  Args args("sparseport tune", "(--oracle | --collect FILE) --op OP --backend B --F N [--json] GRAPH...",
            "--oracle: evaluation of the scheduler. For each GRAPH: times every applicable variant of OP on\n"
            "the full graph (median of --reps after a warm-up), then lets the scheduler decide cold\n"
            "(SPARSEPORT_SCHEDULER=probe, a fresh cache folder unless --cache-dir), then again from the\n"
            "cache, and prints the chosen and the best variant, regret = t(chosen)/t(best) - 1,\n"
            "cold_cost_ops = the cold decision's overhead (signatures, features, model, timing, full-size\n"
            "check) in units of one full-size call of the chosen variant, hit_overhead_us = the time a\n"
            "cache-hit decision adds (signatures and the cache lookup) in microseconds, and per variant\n"
            "the measured and the model's predicted time.\n"
            "--collect FILE: training records for the cost model (scheduler/model/README.md). For each\n"
            "GRAPH (and each --graphs-from line), each F of --F and each reduce of --reduce: every\n"
            "applicable variant timed at full size (batches of back-to-back calls, one synchronize each),\n"
            "appended to FILE as one JSON line per variant with the model's inputs.");
  args.flag("--oracle", "time every variant and score the scheduler's choice");
  args.option("--collect", "FILE", "append training records to FILE (JSON lines)");
  args.option("--graphs-from", "FILE", "more GRAPH arguments, one per line (# comments)");
  args.option("--time-limit", "S", "--collect: start no graph after S seconds (what was collected stays)");
  args.option("--op", "OP", "spmm, sddmm, csr_attention, segment_reduce, scatter_reduce, gather_scatter");
  args.option("--backend", "B", "backend (default: SPARSEPORT_BACKEND or the build's default)");
  args.option("--F", "N", "feature width (default 64); --collect takes a list: 1,4,16,64");
  args.option("--reduce", "R", "spmm's reduction (default sum); --collect takes a list: sum,max");
  args.option("--reps", "R", "timed repetitions per variant (default 5)");
  args.option("--threads", "T", "threads for CPU backends");
  args.flag("--allow-tf32",
            "let variants that round float32 inputs to TF32 be timed and chosen (default:\n"
            "                        SPARSEPORT_ALLOW_TF32, else off)");
  args.option("--cache-dir", "DIR", "decision cache folder (default: a fresh temporary folder)");
  args.flag("--json", "one JSON object per graph");
  args.positional("graphs", "one or more GRAPH arguments", false);
  // Args takes one positional; every GRAPH after the first is collected here and the first is
  // left for Args to check.
  std::vector<std::string> graphs, rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool takes_value = a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && a != "--oracle" &&
                             a != "--json" && a != "--help" && a != "--allow-tf32";
    if (a.rfind("-", 0) == 0) {
      rest.push_back(a);
      if (takes_value && i + 1 < argv.size()) rest.push_back(argv[++i]);
      continue;
    }
    graphs.push_back(a);
  }
  if (!graphs.empty()) rest.push_back(graphs.front());
  if (!args.parse(rest)) return 0;
  const bool collect = args.has("--collect");
  if (args.has("--oracle") == collect) args.fail("sparseport tune: pass exactly one of --oracle and --collect FILE");
  if (args.has("--graphs-from")) {
    std::ifstream in(args.get("--graphs-from"));
    if (!in) args.fail("sparseport tune: cannot read --graphs-from " + args.get("--graphs-from"));
    for (std::string line; std::getline(in, line);) {
      line.erase(0, line.find_first_not_of(" \t"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty() && line[0] != '#') graphs.push_back(line);
    }
  }
  if (graphs.empty()) args.fail("sparseport tune: no GRAPH given");
  WorkloadSpec spec;
  std::vector<Reduce> reduces;
  try {
    spec.op = op_from_name(args.get("--op", "spmm"));
    const std::string list = args.get("--reduce", "sum");
    for (size_t pos = 0; pos <= list.size();) {
      const size_t end = std::min(list.find(',', pos), list.size());
      reduces.push_back(reduce_from_name(list.substr(pos, end - pos)));
      pos = end + 1;
    }
  } catch (const std::exception& e) {
    args.fail_with(e);
  }
  const std::vector<int64_t> widths = int_list(args, args.get("--F", "64"));
  if (!collect && (widths.size() != 1 || reduces.size() != 1))
    args.fail("sparseport tune: --oracle takes one --F and one --reduce");
  spec.features = widths.front();
  spec.reduce = reduces.front();
  spec.show_progress = false;
  const int reps = static_cast<int>(args.get_int("--reps", 5, 1, 1000));
  const bool json = args.has("--json");
  Context ctx = Context::create(args.get("--backend"));
  if (args.has("--threads")) ctx.set_threads(static_cast<int>(args.get_int("--threads", 0, 1, 4096)));
  if (args.has("--allow-tf32")) ctx.set_allow_tf32(true);
  std::string dir = args.get("--cache-dir");
  const bool temp_dir = dir.empty();
  if (temp_dir)
    dir = (std::filesystem::temp_directory_path() / ("sparseport-tune-" + std::to_string(::getpid()))).string();

  if (collect) {
    std::FILE* out = std::fopen(args.get("--collect").c_str(), "a");
    if (out == nullptr) throw InvalidArgument("sparseport tune: cannot open --collect " + args.get("--collect"));
    // A graph that fails (a bad spec, too big for the device) is reported and skipped: a corpus
    // run of hours keeps what it collected.
    int problems = 0, failed = 0;
    const double limit = args.has("--time-limit") ? static_cast<double>(args.get_int("--time-limit", 0, 1, 1 << 30)) : 1e30;
    const auto started = Clock::now();
    for (const std::string& g : graphs) {
      const auto t0 = Clock::now();
      if (std::chrono::duration<double>(t0 - started).count() >= limit) {
        std::fprintf(stderr, "time limit: stopped before %s\n", g.c_str());
        break;
      }
      try {
        const auto graph = load_with_progress<int32_t, float>(g, false);
        for (const int64_t F : widths)
          for (const Reduce r : op_uses_reduce(spec.op) ? reduces : std::vector<Reduce>{Reduce::sum}) {
            WorkloadSpec one = spec;
            one.features = F;
            one.reduce = r;
            auto work = make_workload(ctx, graph, one);
            collect_problem(ctx, *work, g, one, dir, reps, out);
            ++problems;
          }
        std::fprintf(stderr, "collected %s (%lld entries) in %.1f s\n", g.c_str(), static_cast<long long>(graph.nnz()),
                     std::chrono::duration<double>(Clock::now() - t0).count());
      } catch (const std::exception& e) {
        ++failed;
        std::fprintf(stderr, "skipped %s: %s\n", g.c_str(), e.what());
      }
    }
    std::fclose(out);
    if (temp_dir) std::filesystem::remove_all(dir);
    std::fprintf(stderr, "%d problems collected into %s, %d graphs skipped\n", problems, args.get("--collect").c_str(),
                 failed);
    return failed == 0 ? 0 : 1;
  }

  if (!json)
    std::printf("%-28s %-26s %-26s %8s %14s %16s\n", "graph", "chosen", "best", "regret", "cold_cost_ops",
                "hit_overhead_us");
  for (const std::string& g : graphs) {
    const auto graph = load_with_progress<int32_t, float>(g, false);
    auto work = make_workload(ctx, graph, spec);
    std::vector<std::string> variants;
    for (const VariantInfo& info : ctx.plugin().variants)
      if (info.op == spec.op && (!info.tf32 || ctx.allow_tf32()))  // TF32: a candidate with consent only
        variants.push_back(info.name);
    const std::vector<std::pair<std::string, double>> times = interleaved_ms(ctx, *work, variants, reps);
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
    const auto predicted = [&](const std::string& v) {
      for (const Decision::Candidate& c : cold.candidates)
        if (c.variant == v) return c.predicted_ms;
      return -1.0;
    };
    // What the model alone would have picked: the best predicted variant.
    const std::string model_pick = cold.candidates.empty() ? std::string() : cold.candidates.front().variant;
    double model_ms = -1;
    for (const auto& [v, t] : times)
      if (v == model_pick) model_ms = t;
    if (json) {
      JsonObject o;
      o.add("graph", g).add("op", op_name(spec.op)).add("backend", ctx.backend()).add("F", spec.features)
          .add("reduce", op_uses_reduce(spec.op) ? name(spec.reduce) : "").add("nnz", static_cast<int64_t>(graph.nnz()))
          .add("chosen", cold.variant).add("best", best.first).add("regret", regret).add("cold_cost_ops", cold_ops)
          .add("cold_ms", cold.decide_seconds * 1e3).add("hit_overhead_us", hit_us).add("source", cold.source)
          .add("reason", cold.reason).add("reverted", cold.reverted).add("hit_source", hit.source)
          .add("hit_variant", hit.variant).add("verified", ok.ok).add("model", cold.model)
          .add("model_alone", cold.model_alone).add("lead", cold.lead).add("timing", cold.timing)
          .add("model_pick", model_pick).add("model_regret", model_ms > 0 ? model_ms / best.second - 1 : -1.0)
          .add("vendor", cold.vendor);
      // One flat object per line: the oracle's times as "ms:VARIANT" keys, the model's as "pred:VARIANT".
      for (const auto& [v, t] : times) o.add("ms:" + v, t);
      for (const auto& [v, t] : times) o.add("pred:" + v, predicted(v));
      std::printf("%s\n", o.str().c_str());
    } else {
      std::printf("%-28s %-26s %-26s %8.3f %14.2f %16.1f\n", g.c_str(), cold.variant.c_str(), best.first.c_str(),
                  regret, cold_ops, hit_us);
      std::printf("    %s (%s; timing: %s); cache: %s -> %s; result %s\n", cold.reason.c_str(), cold.model.c_str(),
                  cold.timing.c_str(), hit.source.c_str(), hit.variant.c_str(), ok.ok ? "verified" : "WRONG");
      for (const auto& [v, t] : times)
        std::printf("    %-30s %10.4f ms   predicted %10.4f ms\n", v.c_str(), t, predicted(v));
    }
    std::fflush(stdout);
    if (!ok.ok) return 1;
  }
  if (temp_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace sparseport::cli
