// SPDX-License-Identifier: Apache-2.0
// What the scheduler's decisions cost a mini-batch GNN loop (issue 35), measured, not asserted.
//
//   minibatch_decisions [--backend B] [--graph SPEC] [--batches N] [--seeds S] [--hops H] [--fanout K]
//                       [--F N] [--threads T] [--cache-dir DIR] [--per-batch] [--expect-class] [--variant V]
//                       [--summary-cost]
//   e.g. build/default/tests/scheduler/minibatch_decisions --backend openmp   (the target run)
//
// Generates GRAPH (default chunglu:2000000:10:2.5@1: 2M vertices, power-law degrees), then for each
// of N batches samples on the host what PyTorch Geometric's NeighborLoader gives: S distinct random
// seed vertices, H hops, at most K neighbours per vertex per hop drawn without replacement (all of
// them below K); the batch's matrix is the sampled edges over the sampled vertices (square, one row
// per vertex: target <- sampled neighbour; the last hop's vertices have empty rows), relabelled in
// the order they were reached. Each batch's arrays are uploaded to fresh buffers (a training loop
// makes new tensors per batch) and spmm (F columns, float32) runs through the scheduler in automatic
// mode, SPARSEPORT_SCHEDULER=auto, against a fresh cache folder (or --cache-dir): the first call
// decides (Decision::decide_seconds), a second call of the decided plan is the op's run time. Sampling
// and uploads are not timed. Reported:
//   overhead   sum of decide_seconds / sum of the op's run time (the target: <= 5 %)
//   wall       sum of (first call - op time) / sum of op time: what the first calls cost beyond the
//              op, measured from outside (includes a full-size check's extra calls, the memo)
//   decisions  by source (cache hit, class, timed, probe, model, ...), with each source's median
//              decide time; "cold" counts the decisions that were neither a cache nor a class hit
// --variant V names the variant for every call (no decision): the control for "wall", whose first
// calls pay what is not the scheduler's too (the index check, B and C not yet in the caches), so
// the scheduler's share of the first calls is wall (auto) - wall (--variant the class's choice).
// --summary-cost times the backend's summarize_csr slot (a device backend's view of A; no op, no
// scheduler) on each batch's fresh arrays and then on the same arrays again, for what a cached
// plan's construction asks (SIGNATURE | CHECK), what a shape class's decision asks (SIGNATURE |
// CHECK | DEGREES; FEATURES from a plugin older than ABI 1.9) and what a cold decision reads
// (SIGNATURE | CHECK | FEATURES), the order rotating by batch, with a bare synchronisation's round
// trip beside them: where the class decision's summary stage goes on a GPU.
// The seeds are a function of the batch number: two runs sample the same batches. Exit 1 with
// --expect-class when no decision came from a shape class (the CTest smoke run's check), 2 for a
// usage error, 77 when the backend is not usable here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/op_families.hpp"
#include "sparseport/sparseport.hpp"

namespace {

namespace sp = sparseport;
using sparseport::test::upload;  // a host vector into the context's memory
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Options {
  std::string backend = "openmp", graph = "chunglu:2000000:10:2.5@1", cache_dir;
  int64_t batches = 1000, seeds = 1024, hops = 2, fanout = 10, F = 64, threads = 0;
  bool per_batch = false, expect_class = false, summary_cost = false;
  std::string variant;  // empty: the scheduler decides
};

struct Batch {
  int64_t n = 0;
  std::vector<int32_t> rowptr{0}, colind;
  std::vector<float> values;
};

// Neighbour sampling from graph g; `local` (g.rows entries of -1) is left as it was found.
Batch sample(const sp::HostCsr<int32_t, float>& g, const Options& o, uint64_t seed, std::vector<int32_t>& local) {
  Batch b;
  std::vector<int32_t> global, frontier;
  const auto reach = [&](int32_t v) {
    if (local[static_cast<size_t>(v)] >= 0) return false;
    local[static_cast<size_t>(v)] = static_cast<int32_t>(global.size());
    global.push_back(v);
    return true;
  };
  uint64_t s = seed;
  const int64_t want = std::min<int64_t>(o.seeds, g.rows);
  while (static_cast<int64_t>(global.size()) < want) {
    const auto v = static_cast<int32_t>(splitmix(s) % static_cast<uint64_t>(g.rows));
    if (reach(v)) frontier.push_back(v);
  }
  std::vector<int32_t> picked;
  for (int64_t h = 0; h < o.hops; ++h) {
    std::vector<int32_t> next;
    for (const int32_t u : frontier) {  // frontier vertices were numbered in this order: rows in order
      const int32_t begin = g.rowptr[static_cast<size_t>(u)], deg = g.rowptr[static_cast<size_t>(u) + 1] - begin;
      picked.clear();
      if (deg <= o.fanout) {
        for (int32_t e = 0; e < deg; ++e) picked.push_back(g.colind[static_cast<size_t>(begin + e)]);
      } else {
        // Floyd's sampling of fanout distinct positions out of deg.
        std::vector<int32_t> pos;
        for (int32_t j = deg - static_cast<int32_t>(o.fanout); j < deg; ++j) {
          const auto t = static_cast<int32_t>(splitmix(s) % static_cast<uint64_t>(j + 1));
          pos.push_back(std::find(pos.begin(), pos.end(), t) == pos.end() ? t : j);
        }
        for (const int32_t p : pos) picked.push_back(g.colind[static_cast<size_t>(begin + p)]);
      }
      for (const int32_t v : picked)
        if (reach(v)) next.push_back(v);
      // Row local[u]: rows are appended in local order (each frontier is numbered in order).
      while (static_cast<int64_t>(b.rowptr.size()) <= local[static_cast<size_t>(u)])
        b.rowptr.push_back(static_cast<int32_t>(b.colind.size()));
      const size_t first = b.colind.size();
      for (const int32_t v : picked) b.colind.push_back(local[static_cast<size_t>(v)]);
      std::sort(b.colind.begin() + static_cast<ptrdiff_t>(first), b.colind.end());
      b.rowptr.push_back(static_cast<int32_t>(b.colind.size()));
    }
    frontier = std::move(next);
  }
  b.n = static_cast<int64_t>(global.size());
  while (static_cast<int64_t>(b.rowptr.size()) <= b.n) b.rowptr.push_back(static_cast<int32_t>(b.colind.size()));
  b.values.resize(b.colind.size());
  for (size_t e = 0; e < b.values.size(); ++e) b.values[e] = static_cast<float>((e * 7) % 5 + 1) * 0.25f;
  for (const int32_t v : global) local[static_cast<size_t>(v)] = -1;
  return b;
}

// --summary-cost (the top of this file).
int summary_cost(const sp::Context& ctx, const sp::HostCsr<int32_t, float>& g, const Options& o,
                 std::vector<int32_t>& local) {
  const sparseport_plugin* t = ctx.plugin().table;
  if (t->summarize_csr == nullptr) {
    std::fprintf(stderr, "minibatch_decisions: backend '%s' has no summarize_csr slot (host memory is read in place)\n",
                 ctx.backend().c_str());
    return 77;
  }
  const sparseport_exec x = ctx.exec();
  constexpr uint32_t kPlan = SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK;
  const std::pair<uint32_t, const char*> kinds[] = {
      {kPlan, "plan  (SIGNATURE|CHECK)         "},
      {kPlan | SPARSEPORT_SUMMARY_DEGREES, "class (SIGNATURE|CHECK|DEGREES) "},
      {kPlan | SPARSEPORT_SUMMARY_FEATURES, "cold  (SIGNATURE|CHECK|FEATURES)"}};
  std::map<std::string, std::vector<double>> us;  // "<kind> <fresh|reused>" -> per-batch times
  std::vector<double> sync_us, n_rows, n_nnz;
  for (int64_t k = 0; k < o.batches; ++k) {
    const Batch b = sample(g, o, 0x5eed0000ull + static_cast<uint64_t>(k), local);
    const auto nnz = static_cast<int64_t>(b.colind.size());
    n_rows.push_back(static_cast<double>(b.n));
    n_nnz.push_back(static_cast<double>(nnz));
    for (int j = 0; j < 3; ++j) {
      const auto [want, name] = kinds[(k + j) % 3];
      // Fresh buffers for each kind: its first call reads arrays no summary has read.
      const sp::Buffer rp = upload(ctx, b.rowptr), ci = upload(ctx, b.colind);
      const sparseport_csr a{b.n, b.n, nnz, rp.data(), ci.data(), nullptr, SPARSEPORT_I32, SPARSEPORT_F32};
      ctx.synchronize();
      for (const char* when : {"fresh", "reused"}) {
        sparseport_csr_summary out{};
        sparseport_status st{};
        const Clock::time_point t0 = Clock::now();
        const int rc = t->summarize_csr(&x, &a, want, &out, &st);
        const double took = since(t0);
        if (rc != SPARSEPORT_OK) {
          std::fprintf(stderr, "minibatch_decisions: summarize_csr: %s\n", st.message);
          return 1;
        }
        us[std::string(name) + " " + when].push_back(took * 1e6);
      }
    }
    const Clock::time_point t0 = Clock::now();
    ctx.synchronize();
    sync_us.push_back(since(t0) * 1e6);
  }
  std::printf("minibatch_decisions --summary-cost: backend %s, %s, %lld batches (mean %.0f rows, %.0f entries)\n",
              ctx.backend().c_str(), o.graph.c_str(), static_cast<long long>(o.batches),
              mean(n_rows), mean(n_nnz));
  for (const auto& [name, v] : us) {
    std::vector<double> w = v;
    std::sort(w.begin(), w.end());
    std::printf("  summarize_csr %s  median %.1f us (p10 %.1f, p90 %.1f)\n", name.c_str(), median(w),
                w[w.size() / 10], w[w.size() * 9 / 10]);
  }
  std::printf("  an idle synchronisation            median %.1f us\n", median(sync_us));
  return 0;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "minibatch_decisions: %s\nusage: minibatch_decisions [--backend B] [--graph SPEC] [--batches N] "
               "[--seeds S] [--hops H] [--fanout K] [--F N] [--threads T] [--cache-dir DIR] [--per-batch] "
               "[--expect-class] [--variant V] [--summary-cost]\n",
               why.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + a);
      return argv[++i];
    };
    const auto number = [&]() -> int64_t {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < 0) usage("not a whole number after " + a + ": " + v);
      return n;
    };
    if (a == "--backend") o.backend = value();
    else if (a == "--graph") o.graph = value();
    else if (a == "--batches") o.batches = number();
    else if (a == "--seeds") o.seeds = number();
    else if (a == "--hops") o.hops = number();
    else if (a == "--fanout") o.fanout = number();
    else if (a == "--F") o.F = number();
    else if (a == "--threads") o.threads = number();
    else if (a == "--cache-dir") o.cache_dir = value();
    else if (a == "--per-batch") o.per_batch = true;
    else if (a == "--expect-class") o.expect_class = true;
    else if (a == "--variant") o.variant = value();
    else if (a == "--summary-cost") o.summary_cost = true;
    else usage("unknown argument " + a);
  }
  if (o.seeds < 1 || o.F < 1 || o.batches < 1) usage("--seeds, --F and --batches must be at least 1");

  sp::Context ctx;
  try {
    ctx = sp::Context::create(o.backend);
  } catch (const sp::Error& e) {
    std::fprintf(stderr, "minibatch_decisions: backend '%s' is not usable here: %s\n", o.backend.c_str(), e.what());
    return 77;
  }
  if (o.threads > 0) ctx.set_threads(static_cast<int>(o.threads));
  bool fresh = false;
  if (o.cache_dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sparseport-minibatch-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) usage("cannot make a temporary cache folder");
    o.cache_dir = tmpl;
    fresh = true;
  }
  ::setenv("SPARSEPORT_CACHE_DIR", o.cache_dir.c_str(), 1);
  ::setenv("SPARSEPORT_SCHEDULER", "auto", 1);

  const Clock::time_point tg = Clock::now();
  const sp::HostCsr<int32_t, float> g = sp::generate<int32_t, float>(o.graph);
  std::fprintf(stderr, "minibatch_decisions: %s: %lld x %lld, %lld entries, generated in %.1f s\n", o.graph.c_str(),
               static_cast<long long>(g.rows), static_cast<long long>(g.cols), static_cast<long long>(g.nnz()),
               since(tg));
  std::vector<int32_t> local(static_cast<size_t>(g.rows), -1);
  if (o.summary_cost) return summary_cost(ctx, g, o, local);

  struct Row {
    int64_t n, nnz;
    std::string source, variant;
    double decide, first, op;
  };
  std::vector<Row> rows;
  double sample_s = 0;
  const Clock::time_point t_all = Clock::now();
  for (int64_t k = 0; k < o.batches; ++k) {
    const Clock::time_point ts = Clock::now();
    const Batch b = sample(g, o, 0x5eed0000ull + static_cast<uint64_t>(k), local);
    sample_s += since(ts);
    const auto nnz = static_cast<int64_t>(b.colind.size());
    std::vector<float> bh(static_cast<size_t>(b.n * o.F));
    for (size_t i = 0; i < bh.size(); ++i) bh[i] = static_cast<float>(i % 13) * 0.125f - 0.75f;
    const sp::Buffer rp = upload(ctx, b.rowptr), ci = upload(ctx, b.colind), va = upload(ctx, b.values);
    const sp::Buffer bd = upload(ctx, bh);
    sp::Buffer cd = ctx.allocate(std::max<size_t>(1, bh.size() * sizeof(float)));
    const sp::CsrView av = sp::make_csr<int32_t, float>(b.n, b.n, nnz, static_cast<const int32_t*>(rp.data()),
                                                        static_cast<const int32_t*>(ci.data()),
                                                        static_cast<const float*>(va.data()));
    const sp::DenseView bv = sp::make_dense<float>(b.n, o.F, o.F, static_cast<const float*>(bd.data()));
    const sp::DenseMutView cv = sp::make_dense<float>(b.n, o.F, o.F, static_cast<float*>(cd.data()));
    // The memo is keyed by array addresses: a freed batch's addresses can come back for the next
    // one, which would then replay the old plan instead of deciding (not what new tensors get).
    sp::clear_plan_memo();
    ctx.synchronize();
    Clock::time_point t0 = Clock::now();
    sp::SpmmOptions so;
    so.variant = o.variant;
    sp::spmm(ctx, av, bv, cv, so);
    ctx.synchronize();
    const double first = since(t0);
    const sp::Decision d = sp::last_decision();
    t0 = Clock::now();
    sp::spmm(ctx, av, bv, cv, so);
    ctx.synchronize();
    const double op = since(t0);
    rows.push_back({b.n, nnz, d.source, d.variant, d.decide_seconds, first, op});
    if (o.per_batch)
      std::printf("batch %lld: n=%lld nnz=%lld %s -> %s decide %.1f us, first call %.1f us, op %.1f us\n",
                  static_cast<long long>(k), static_cast<long long>(b.n), static_cast<long long>(nnz),
                  d.source.c_str(), d.variant.c_str(), d.decide_seconds * 1e6, first * 1e6, op * 1e6);
  }
  const double total_s = since(t_all);

  double decide = 0, op = 0, extra = 0, n_sum = 0, nnz_sum = 0;
  std::map<std::string, std::vector<double>> by_source;
  std::map<std::string, int> by_variant;
  std::vector<double> all;
  int cold = 0;
  for (const Row& r : rows) {
    decide += r.decide;
    op += r.op;
    extra += r.first - r.op;
    n_sum += static_cast<double>(r.n);
    nnz_sum += static_cast<double>(r.nnz);
    by_source[r.source].push_back(r.decide);
    ++by_variant[r.variant];
    all.push_back(r.decide);
    if (r.source != "cache hit" && r.source != "class") ++cold;
  }
  const double nb = static_cast<double>(rows.size());
  std::printf("minibatch_decisions: backend %s, %s, %lld batches of %lld seeds, %lld hops, fan-out %lld, F=%lld\n",
              ctx.backend().c_str(), o.graph.c_str(), static_cast<long long>(o.batches),
              static_cast<long long>(o.seeds), static_cast<long long>(o.hops), static_cast<long long>(o.fanout),
              static_cast<long long>(o.F));
  std::printf("  batch matrix: mean %.0f rows, %.0f entries; cache %s%s\n", n_sum / nb, nnz_sum / nb,
              o.cache_dir.c_str(), fresh ? " (fresh)" : "");
  std::printf("  op time       %.3f s total, %.1f us per batch (median)\n", op,
              median([&] {
                std::vector<double> v;
                for (const Row& r : rows) v.push_back(r.op * 1e6);
                return v;
              }()));
  std::printf("  decide time   %.3f s total, %.1f us per decision (median)\n", decide, median(all) * 1e6);
  std::printf("  overhead      %.2f %% of op time (decide_seconds); first calls beyond the op: %.2f %%\n",
              100 * decide / op, 100 * extra / op);
  std::printf("  cold          %d of %zu decisions (neither a cache nor a class hit)\n", cold, rows.size());
  for (const auto& [source, v] : by_source)
    std::printf("  source %-12s %5zu decisions, median %.1f us, total %.3f s\n", source.c_str(), v.size(),
                median(v) * 1e6, [&] {
                  double t = 0;
                  for (double x : v) t += x;
                  return t;
                }());
  for (const auto& [variant, n] : by_variant) std::printf("  variant %-24s %5d batches\n", variant.c_str(), n);
  std::printf("  (sampling on the host %.1f s, whole loop %.1f s)\n", sample_s, total_s);
  std::printf("{\"backend\":\"%s\",\"graph\":\"%s\",\"batches\":%zu,\"op_s\":%.6f,\"decide_s\":%.6f,"
              "\"overhead_pct\":%.3f,\"first_call_extra_pct\":%.3f,\"median_decide_us\":%.2f,\"cold\":%d,"
              "\"class_hits\":%zu}\n",
              ctx.backend().c_str(), o.graph.c_str(), rows.size(), op, decide, 100 * decide / op, 100 * extra / op,
              median(all) * 1e6, cold, by_source.count("class") ? by_source["class"].size() : size_t{0});
  if (fresh) std::filesystem::remove_all(o.cache_dir);
  if (o.expect_class && by_source.count("class") == 0) {
    std::fprintf(stderr, "minibatch_decisions: no decision came from a shape class\n");
    return 1;
  }
  return 0;
}
