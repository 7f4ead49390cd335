// SPDX-License-Identifier: Apache-2.0
// What a cache hit costs a process that has decided nothing yet (issue 35), measured, not asserted.
//
//   cache_hit_cost [--op spmm|sddmm] [--backend B] [--F N] [--threads T] [--processes P] [--fill N]
//                  [--cache-dir DIR] [--json] [GRAPH]
//   e.g. build/default/tests/scheduler/cache_hit_cost --backend openmp --op spmm er:100000:2e-4
//
// A first process decides OP on GRAPH (default er:1000:0.01, about 10k entries) into a fresh cache
// folder (or --cache-dir), after --fill N decisions of other graphs (SPARSEPORT_SCHEDULER=model: no
// timing, stored all the same), so that the file has a realistic length. Then P new processes (each
// a new exec of this program: nothing is warm in it but the page cache) run OP once on GRAPH, which
// replays the decision, and report in microseconds:
//   decide     Decision::decide_seconds (prepare(): everything the decision cost)
//   signature  options and the device signature          } the parts the scheduler's log line prints
//   shape      the exact-shape question (holds_prefix)    } on a hit ("[T us: options and device
//   summary    the operand's summary (graph signature)    } signature A, shape question Q, operand
//   lookup     CacheFile::lookup                          } summary B, cache lookup C]")
//   rest       decide - the four: the replay and the log line itself
//   call       the whole first call (memo, decision and the op)
//   read       bytes of the cache file this process's lookups read (cache_stats.hpp)
//   parsed     lines those lookups parsed and checked (0 where the context's warm-up kept the hit)
// and the medians over the P processes; then decide again over P more processes without the log
// (SPARSEPORT_LOG unset: the log line's formatting and write() are part of decide above). Exit code
// 1 when a process did not hit (an op with one variant is never decided: openmp's sddmm). The
// operands live in the context's memory space (allocate, copy_to_backend), so a GPU backend's hit is
// measured on device operands, as its users call it (--backend cuda).
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "scheduler/cache_stats.hpp"
#include "sparseport/sparseport.hpp"

extern char** environ;

namespace {

namespace sp = sparseport;
using Clock = std::chrono::steady_clock;

// The number after `label` in text, or -1.
double number_after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

// The value after "key": in one flat JSON line written by child() (numbers and plain strings).
std::string field(const std::string& line, const std::string& key) {
  const std::string pat = "\"" + key + "\":";
  const size_t at = line.find(pat);
  if (at == std::string::npos) return {};
  const size_t i = at + pat.size();
  if (i < line.size() && line[i] == '"') return line.substr(i + 1, line.find('"', i + 1) - i - 1);
  return line.substr(i, line.find_first_of(",}", i) - i);
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Options {
  std::string op = "spmm", backend, graph = "er:1000:0.01", threads;
  int64_t F = 64, processes = 20, fill = 0;
  std::string cache_dir;
  bool json = false, child = false, log = true;
};

// The op's operands in the context's memory space (device memory on a GPU backend, which refuses
// host pointers), made from integer-valued host data so that any variant's sums are exact.
struct Operands {
  sp::Buffer rowptr, colind, values, b, c, x, y, out;
  sp::CsrView a;
  sp::DenseView bv, xv, yv;
  sp::DenseMutView cv, outv;
};

template <class T>
sp::Buffer upload(const sp::Context& ctx, const T* data, size_t n) {
  sp::Buffer buf = ctx.allocate(std::max<size_t>(n, 1) * sizeof(T));
  if (n > 0) ctx.copy_to_backend(buf.data(), data, n * sizeof(T));
  return buf;
}

Operands operands(const sp::Context& ctx, const Options& o, const sp::HostCsr<int32_t, float>& a) {
  Operands d;
  d.rowptr = upload(ctx, a.rowptr.data(), a.rowptr.size());
  d.colind = upload(ctx, a.colind.data(), a.colind.size());
  d.values = upload(ctx, a.values.data(), a.values.size());
  d.a = sp::make_csr<int32_t, float>(a.rows, a.cols, a.nnz(), static_cast<const int32_t*>(d.rowptr.data()),
                                     static_cast<const int32_t*>(d.colind.data()),
                                     static_cast<const float*>(d.values.data()));
  const auto dense = [&](int64_t rows, sp::Buffer& buf, bool fill) {
    sp::HostDense<float> h(rows, o.F, -1, fill ? 1.0f : 0.0f);
    buf = upload(ctx, h.data.data(), h.data.size());
  };
  if (o.op == "spmm") {
    dense(a.cols, d.b, true);
    dense(a.rows, d.c, false);
    d.bv = sp::make_dense<float>(a.cols, o.F, o.F, static_cast<const float*>(d.b.data()));
    d.cv = sp::make_dense<float>(a.rows, o.F, o.F, static_cast<float*>(d.c.data()));
  } else {
    dense(a.rows, d.x, true);
    dense(a.cols, d.y, true);
    d.out = ctx.allocate(static_cast<size_t>(std::max<int64_t>(a.nnz(), 1)) * sizeof(float));
    d.xv = sp::make_dense<float>(a.rows, o.F, o.F, static_cast<const float*>(d.x.data()));
    d.yv = sp::make_dense<float>(a.cols, o.F, o.F, static_cast<const float*>(d.y.data()));
    d.outv = sp::make_dense<float>(a.nnz(), 1, 1, static_cast<float*>(d.out.data()));
  }
  return d;
}

void call(const sp::Context& ctx, const Options& o, const Operands& d) {
  if (o.op == "spmm") sp::spmm(ctx, d.a, d.bv, d.cv);
  else sp::sddmm(ctx, d.a, d.xv, d.yv, d.outv);
}

// One call of the op on freshly made operands.
void run_op(const sp::Context& ctx, const Options& o, const sp::HostCsr<int32_t, float>& a) {
  call(ctx, o, operands(ctx, o, a));
  ctx.synchronize();
}

// A measuring process: --fill decisions (model mode), then the op once with the log captured, and
// one JSON line on stdout.
int child(const Options& o) {
  sp::Context ctx = sp::Context::create(o.backend);
  if (!o.threads.empty()) ctx.set_threads(std::atoi(o.threads.c_str()));
  if (o.fill > 0) {
    ::setenv("SPARSEPORT_SCHEDULER", "model", 1);
    for (int64_t i = 0; i < o.fill; ++i)
      run_op(ctx, o, sp::generate<int32_t, float>("er:1000:0.01@" + std::to_string(1000 + i)));
    sp::clear_plan_memo();
  }
  const sp::HostCsr<int32_t, float> a = sp::generate<int32_t, float>(o.graph);
  // Operands made (and on a GPU copied there) before the clock starts: only the call is timed.
  const Operands ops = operands(ctx, o, a);
  ctx.synchronize();
  ::setenv("SPARSEPORT_SCHEDULER", "auto", 1);
  if (o.log) ::setenv("SPARSEPORT_LOG", "scheduler", 1);
  else ::unsetenv("SPARSEPORT_LOG");
  // The log goes to stderr: captured in memory for this one call (a memfd: no file system).
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int mem = ::memfd_create("sparseport-log", MFD_CLOEXEC);
  if (saved < 0 || mem < 0 || ::dup2(mem, 2) < 0) {
    std::perror("cache_hit_cost: capturing stderr");
    return 2;
  }
  const sp::scheduler::CacheStats before = sp::scheduler::cache_stats();
  const auto t0 = Clock::now();
  call(ctx, o, ops);
  ctx.synchronize();
  const double call_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  const sp::scheduler::CacheStats after = sp::scheduler::cache_stats();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string log;
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(mem, buf, sizeof buf, at);
    if (n <= 0) break;
    log.append(buf, static_cast<size_t>(n));
    at += n;
  }
  ::close(mem);
  for (size_t at = 0; at < log.size();) {  // warnings go on to stderr
    size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    if (log.substr(at, end - at).find("warning") != std::string::npos)
      std::fprintf(stderr, "%s\n", log.substr(at, end - at).c_str());
    at = end + 1;
  }
  const sp::Decision d = sp::last_decision();
  const double decide = d.decide_seconds * 1e6;
  const double sig = number_after(log, "options and device signature ");
  const double shape = number_after(log, "shape question ");
  const double summary = number_after(log, "operand summary ");
  const double lookup = number_after(log, "cache lookup ");
  std::printf("{\"op\":\"%s\",\"backend\":\"%s\",\"graph\":\"%s\",\"nnz\":%lld,\"source\":\"%s\",\"variant\":\"%s\","
              "\"decide_us\":%.2f,\"signature_us\":%.2f,\"shape_us\":%.2f,\"summary_us\":%.2f,\"lookup_us\":%.2f,\"rest_us\":%.2f,"
              "\"call_us\":%.2f,\"read_bytes\":%llu,\"opens\":%llu,\"parsed\":%llu}\n",
              o.op.c_str(), ctx.backend().c_str(), o.graph.c_str(), static_cast<long long>(a.nnz()), d.source.c_str(),
              d.variant.c_str(), decide, sig, shape, summary, lookup, sig >= 0 ? decide - sig - shape - summary - lookup : -1.0,
              call_us, static_cast<unsigned long long>(after.bytes_read - before.bytes_read),
              static_cast<unsigned long long>(after.opens - before.opens),
              static_cast<unsigned long long>(after.parsed - before.parsed));
  return 0;
}

// Runs this program again with `args` and the environment; returns its stdout (stderr is ours).
std::string spawn_self(const std::vector<std::string>& args, int* status) {
  int out[2];
  if (::pipe(out) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<std::string> all{"cache_hit_cost", "--child"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    ::waitpid(pid, status, 0);
  } else {
    *status = -1;
  }
  ::close(out[0]);
  return text;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "cache_hit_cost: %s\nusage: cache_hit_cost [--op spmm|sddmm] [--backend B] [--F N] [--threads T] "
               "[--processes P] [--fill N] [--cache-dir DIR] [--json] [GRAPH]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--op") o.op = value();
    else if (a == "--backend") o.backend = value();
    else if (a == "--F") o.F = std::atoll(value().c_str());
    else if (a == "--threads") o.threads = value();
    else if (a == "--processes") o.processes = std::atoll(value().c_str());
    else if (a == "--fill") o.fill = std::atoll(value().c_str());
    else if (a == "--cache-dir") o.cache_dir = value();
    else if (a == "--json") o.json = true;
    else if (a == "--child") o.child = true;
    else if (a == "--no-log") o.log = false;
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else o.graph = a;
  }
  if (o.op != "spmm" && o.op != "sddmm") usage("--op takes spmm or sddmm");
  if (o.F < 1 || o.processes < 1 || o.fill < 0) usage("--F and --processes take a positive number, --fill >= 0");
  try {
    if (o.child) return child(o);
    if (o.backend.empty()) o.backend = sp::Context::create().backend();
    if (sp::plugin(o.backend).status != sp::PluginStatus::available) {
      std::printf("cache_hit_cost: backend %s is not available here: %s\n", o.backend.c_str(),
                  sp::plugin(o.backend).reason.c_str());
      return 77;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_hit_cost: %s\n", e.what());
    return 1;
  }
  const bool temp = o.cache_dir.empty();
  if (temp)
    o.cache_dir = (std::filesystem::temp_directory_path() / ("sparseport-hit-cost-" + std::to_string(::getpid()))).string();
  ::setenv("SPARSEPORT_CACHE_DIR", o.cache_dir.c_str(), 1);
  std::vector<std::string> common{"--op", o.op, "--backend", o.backend, "--F", std::to_string(o.F)};
  if (!o.threads.empty()) common.insert(common.end(), {"--threads", o.threads});
  common.push_back(o.graph);
  std::vector<std::string> first = common;
  first.insert(first.begin(), {"--fill", std::to_string(o.fill)});
  int status = 0;
  const std::string cold = spawn_self(first, &status);
  if (status != 0) {
    std::fprintf(stderr, "cache_hit_cost: the deciding process failed (status %d)\n", status);
    return 1;
  }
  std::map<std::string, std::vector<double>> v;
  const char* const kParts[] = {"decide_us", "signature_us", "shape_us", "summary_us", "lookup_us", "rest_us", "call_us", "read_bytes", "opens", "parsed"};
  int hits = 0;
  std::string nnz;
  for (int64_t i = 0; i < o.processes; ++i) {
    const std::string line = spawn_self(common, &status);
    if (status != 0 || line.empty()) {
      std::fprintf(stderr, "cache_hit_cost: measuring process %lld failed (status %d)\n", static_cast<long long>(i), status);
      return 1;
    }
    if (o.json) std::fputs(line.c_str(), stdout);
    hits += field(line, "source") == "cache hit";
    nnz = field(line, "nnz");
    for (const char* k : kParts) v[k].push_back(std::atof(field(line, k).c_str()));
    // The same without the log line (its formatting and write() count in decide_us above).
    std::vector<std::string> quiet = common;
    quiet.insert(quiet.begin(), "--no-log");
    const std::string q = spawn_self(quiet, &status);
    if (status != 0 || q.empty()) {
      std::fprintf(stderr, "cache_hit_cost: measuring process %lld failed (status %d)\n", static_cast<long long>(i), status);
      return 1;
    }
    if (o.json) std::fputs(q.c_str(), stdout);
    hits += field(q, "source") == "cache hit";
    v["quiet_decide_us"].push_back(std::atof(field(q, "decide_us").c_str()));
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(o.cache_dir + "/decisions.jsonl", ec);
  std::printf("%s %s F=%lld %s (%s entries): cache %lld bytes, %lld decisions before; %d/%lld new processes hit; "
              "medians, us: decide %.1f = signature %.1f + shape question %.1f + summary %.1f + lookup %.1f + rest %.1f; "
              "first call %.1f; "
              "lookup read %.0f bytes in %.0f opens and parsed %.0f lines; without the log line: decide %.1f\n",
              o.op.c_str(), o.backend.c_str(), static_cast<long long>(o.F), o.graph.c_str(), nnz.c_str(),
              ec ? -1LL : static_cast<long long>(bytes), static_cast<long long>(o.fill + 1), hits,
              static_cast<long long>(2 * o.processes), median(v["decide_us"]), median(v["signature_us"]),
              median(v["shape_us"]), median(v["summary_us"]), median(v["lookup_us"]), median(v["rest_us"]), median(v["call_us"]),
              median(v["read_bytes"]), median(v["opens"]), median(v["parsed"]), median(v["quiet_decide_us"]));
  if (field(cold, "source") == "cache hit")
    std::printf("  (the deciding process itself hit: --cache-dir already held the decision)\n");
  if (temp) std::filesystem::remove_all(o.cache_dir, ec);
  return hits == 2 * o.processes ? 0 : 1;
}
