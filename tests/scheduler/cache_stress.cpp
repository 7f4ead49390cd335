// SPDX-License-Identifier: Apache-2.0
// Many processes, one device and one decision cache (issue 34, "Never crash under concurrency").
// PROCESSES worker processes x THREADS threads decide and run scheduled ops at once, sharing one
// fresh SPARSEPORT_CACHE_DIR; the parent kills random workers with SIGKILL at random times (at any
// point of their life: starting, deciding, appending a decision, exiting), at times leaves the torn
// line such a kill can leave (plant_torn_line), and starts new workers until SECONDS pass. Then it
// checks the cache: every line of decisions.jsonl and transfer.jsonl reads back through the
// library's own reader (and through `sparseport cache list` when the CLI was built), every decision
// names a variant the backend offers for its op, and a final process that replays the cache decides
// and runs every shared case right.
//
//   cache_stress BACKEND SECONDS PROCESSES THREADS SEED
//
// Every result is compared with a double-precision host loop. Inputs are multiples of 1/4 (A) and
// 1/8 (B, X, Y), so float sums are exact in any order and a right result differs from the oracle
// only by the rounding of mean's division; a wrong variant, a stale decision applied to another
// input or an unwritten output differs by far more than the tolerance.
//
// Workers (the same program, started with posix_spawn, never a fork without exec: a forked copy of
// a process with threads and a device context is not a fair model of a user's process) mix:
//  - shared cases: graphs and F drawn from SEED, the same in every process, so that processes
//    replay each other's decisions;
//  - fresh cases: graphs of a random seed, so that new keys (cold decisions, appends) keep coming;
//  - one-shot calls (the internal plan memo), plans in auto mode and plans in probe mode (a cold
//    decision and an append every time, even for a key already cached);
//  - a context shared by the threads of a process, or one per thread, recreated now and then,
//    some in deterministic mode (other keys, other variants).
//
// Exit status: 0 all good, 1 a crash, wrong result, error, hang or unreadable/wrong cache record,
// 2 usage or setup failure, 77 the backend is not usable here. Internal modes:
//   cache_stress --worker BACKEND THREADS SEED WORKER_SEED LIFETIME_MS   (cache dir from the environment)
//   cache_stress --final BACKEND SEED
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sparseport/sparseport.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/cache.hpp"  // the scheduler's reader for transfer.jsonl (no public API reads it)
#include "tests/common/op_families.hpp"
#include "tests/common/text_files.hpp"

extern char** environ;

namespace sp = sparseport;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kWrong = 3;  // a worker's or the final process's exit status for a wrong result
constexpr int kSkip = 77;

// ---- inputs and the double-precision oracle ------------------------------------------------------

// A graph on the host, values multiples of 1/4 in [-1, 1] without 0 (so that no entry vanishes).
struct Graph {
  std::string spec;
  sp::HostCsr<int32_t, float> a;
};

Graph make_graph(const std::string& spec) {
  Graph g{spec, sp::generate<int32_t, float>(spec, {.seed = 1, .pattern = true})};
  g.a.values.resize(g.a.colind.size());
  for (size_t e = 0; e < g.a.values.size(); ++e) {
    const int q = static_cast<int>((e * 2654435761u + static_cast<size_t>(g.a.colind[e])) % 8);  // 0..7
    g.a.values[e] = static_cast<float>(q < 4 ? q - 4 : q - 3) / 4.0f;                          // -1..-1/4, 1/4..1
  }
  return g;
}

// Dense operands: multiples of 1/8 in [-1/2, 1/2]; salt changes them from call to call so that an
// output left over from an earlier call never passes for this one's.
float dense_at(int64_t j, int64_t f, uint32_t salt) {
  return static_cast<float>(static_cast<int64_t>((j * 7 + f * 3 + salt) % 9) - 4) / 8.0f;
}

std::vector<float> dense(int64_t rows, int64_t cols, uint32_t salt) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t f = 0; f < cols; ++f) v[static_cast<size_t>(j * cols + f)] = dense_at(j, f, salt);
  return v;
}

bool close(double got, double want) { return std::abs(got - want) <= 1e-5 * (1 + std::abs(want)); }

enum class Op { spmm_sum, spmm_mean, spmm_max, sddmm };
constexpr Op kOps[] = {Op::spmm_sum, Op::spmm_mean, Op::spmm_max, Op::sddmm};
const char* op_text(Op op) {
  return op == Op::spmm_sum ? "spmm sum" : op == Op::spmm_mean ? "spmm mean" : op == Op::spmm_max ? "spmm max" : "sddmm";
}
constexpr int64_t kFeatures[] = {1, 4, 8, 16, 33, 64};

// An empty string when out is right, else what is wrong.
std::string check_spmm(const Graph& g, Op op, int64_t F, uint32_t salt, const std::vector<float>& c) {
  const auto& a = g.a;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t f = 0; f < F; ++f) {
      double acc = op == Op::spmm_max ? -INFINITY : 0.0;
      const int32_t begin = a.rowptr[static_cast<size_t>(i)], end = a.rowptr[static_cast<size_t>(i) + 1];
      for (int32_t e = begin; e < end; ++e) {
        const double t = double(a.values[static_cast<size_t>(e)]) * dense_at(a.colind[static_cast<size_t>(e)], f, salt);
        acc = op == Op::spmm_max ? std::max(acc, t) : acc + t;
      }
      if (begin == end) acc = 0;  // an empty row gives 0 for every reduce
      else if (op == Op::spmm_mean) acc /= (end - begin);
      const double got = c[static_cast<size_t>(i * F + f)];
      if (!close(got, acc)) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "C[%lld,%lld] = %.9g, want %.9g", static_cast<long long>(i),
                      static_cast<long long>(f), got, acc);
        return buf;
      }
    }
  return {};
}

std::string check_sddmm(const Graph& g, int64_t F, uint32_t salt, const std::vector<float>& out) {
  const auto& a = g.a;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      double dot = 0;
      for (int64_t f = 0; f < F; ++f)
        dot += double(dense_at(i, f, salt)) * dense_at(a.colind[static_cast<size_t>(e)], f, salt + 1);
      const double want = a.values[static_cast<size_t>(e)] * dot;
      if (!close(out[static_cast<size_t>(e)], want)) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "out[%d] = %.9g, want %.9g", e, double(out[static_cast<size_t>(e)]), want);
        return buf;
      }
    }
  return {};
}

// ---- running one case on a context ---------------------------------------------------------------

using sparseport::test::download;
using sparseport::test::upload;

enum class How { one_shot, plan_auto, plan_probe, plan_replay };

struct Outcome {
  std::string wrong;   // empty: the result was right
  std::string source;  // how the variant was chosen (Decision::source)
  std::string variant;
};

// Runs op on g at width F on ctx (operands copied to the context's memory: the same code serves
// cuda), twice for a plan (the first run decides, the second replays), and checks the last result.
Outcome run_case(const sp::Context& ctx, const Graph& g, Op op, int64_t F, How how, uint32_t salt) {
  const auto& a = g.a;
  const sp::Buffer rp = upload(ctx, a.rowptr), ci = upload(ctx, a.colind), va = upload(ctx, a.values);
  const sp::CsrView av = sp::make_csr<int32_t, float>(a.rows, a.cols, a.nnz(), static_cast<const int32_t*>(rp.data()),
                                                      static_cast<const int32_t*>(ci.data()),
                                                      static_cast<const float*>(va.data()));
  sp::SchedulerOptions sched;
  sched.mode = how == How::plan_probe ? sp::SchedulerMode::probe
               : how == How::plan_replay ? sp::SchedulerMode::replay
                                         : sp::SchedulerMode::automatic;
  Outcome out;
  if (op == Op::sddmm) {
    const sp::Buffer x = upload(ctx, dense(a.rows, F, salt)), y = upload(ctx, dense(a.cols, F, salt + 1));
    sp::Buffer o = upload(ctx, std::vector<float>(static_cast<size_t>(a.nnz()), 777.0f));
    const auto xv = sp::make_dense<float>(a.rows, F, F, static_cast<const float*>(x.data()));
    const auto yv = sp::make_dense<float>(a.cols, F, F, static_cast<const float*>(y.data()));
    const auto ov = sp::make_dense<float>(a.nnz(), 1, 1, static_cast<float*>(o.data()));
    if (how == How::one_shot) {
      sp::sddmm(ctx, av, xv, yv, ov);
      const sp::Decision d = sp::last_decision();
      out.source = d.source, out.variant = d.variant;
    } else {
      sp::SddmmPlan plan(ctx, av, F, {}, sched);
      plan.run(xv, yv, ov);
      out.source = plan.decision().source, out.variant = plan.decision().variant;
      plan.run(xv, yv, ov);
    }
    out.wrong = check_sddmm(g, F, salt, download<float>(ctx, o, static_cast<size_t>(a.nnz())));
  } else {
    sp::SpmmOptions opt;
    opt.reduce = op == Op::spmm_sum ? sp::Reduce::sum : op == Op::spmm_mean ? sp::Reduce::mean : sp::Reduce::max;
    const sp::Buffer b = upload(ctx, dense(a.cols, F, salt));
    sp::Buffer c = upload(ctx, std::vector<float>(static_cast<size_t>(a.rows * F), 777.0f));
    const auto bv = sp::make_dense<float>(a.cols, F, F, static_cast<const float*>(b.data()));
    const auto cv = sp::make_dense<float>(a.rows, F, F, static_cast<float*>(c.data()));
    if (how == How::one_shot) {
      sp::spmm(ctx, av, bv, cv, opt);
      const sp::Decision d = sp::last_decision();
      out.source = d.source, out.variant = d.variant;
    } else {
      sp::SpmmPlan plan(ctx, av, F, opt, sched);
      plan.run(bv, cv);
      out.source = plan.decision().source, out.variant = plan.decision().variant;
      plan.run(bv, cv);
    }
    out.wrong = check_spmm(g, op, F, salt, download<float>(ctx, c, static_cast<size_t>(a.rows * F)));
  }
  if (!out.wrong.empty())
    out.wrong = std::string(op_text(op)) + " on " + g.spec + " at F=" + std::to_string(F) + " (" + out.source + ", " +
                out.variant + "): " + out.wrong;
  return out;
}

// The graphs every process shares (their decisions are replayed across processes): small (600 to
// 2500 rows, at least the probe's 512) and of several shapes, so that variants differ by input.
std::vector<std::string> shared_specs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto n = [&] { return std::to_string(600 + rng() % 1900); };
  const auto at = [&] { return "@" + std::to_string(seed % 100000 + rng() % 1000); };
  return {"er:" + n() + ":0.004" + at(),
          "hubs:" + n() + ":6:3:150" + at(),
          "band:" + n() + ":9",
          "chunglu:" + n() + ":8:2.3" + at(),
          "sbm:" + n() + ":8:6:2" + at(),
          "megarow:" + n() + ":5:0.1" + at(),
          "road:40:" + std::to_string(20 + rng() % 30) + ":0.7" + at(),
          "bipartite:" + n() + ":" + n() + ":6" + at()};
}

// A graph nobody decided for yet: a new key, so a cold decision and an append.
std::string fresh_spec(std::mt19937_64& rng) {
  const std::string n = std::to_string(600 + rng() % 2400), s = "@" + std::to_string(rng() % 1000000000);
  switch (rng() % 3) {
    case 0: return "er:" + n + ":0.005" + s;
    case 1: return "hubs:" + n + ":5:2:200" + s;
    default: return "chunglu:" + n + ":6:2.2" + s;
  }
}

// ---- worker process --------------------------------------------------------------------------------

[[noreturn]] void die_wrong(const std::string& what) {
  std::fprintf(stderr, "cache_stress worker %d: WRONG RESULT: %s\n", static_cast<int>(::getpid()), what.c_str());
  std::fflush(stderr);
  std::_Exit(kWrong);
}

// A thread's own context: on openmp 1 or 2 threads (processes x threads oversubscribe the cores
// anyway), one in four in deterministic mode (other keys, other variants).
sp::Context new_context(const std::string& backend, std::mt19937_64& rng) {
  sp::Context ctx = sp::Context::create(backend);
  if (backend == "openmp") ctx.set_threads(1 + static_cast<int>(rng() % 2));
  if (rng() % 4 == 0) ctx.set_deterministic(true);
  return ctx;
}

int worker(const std::string& backend, int threads, uint64_t seed, uint64_t worker_seed, int64_t lifetime_ms) {
  const auto stop = Clock::now() + std::chrono::milliseconds(lifetime_ms);
  std::vector<Graph> shared;
  for (const std::string& s : shared_specs(seed)) shared.push_back(make_graph(s));
  const sp::Context shared_ctx = sp::Context::create(backend);
  std::atomic<long> ops{0};
  std::mutex mu;
  std::string error;  // the first exception any thread saw
  const auto body = [&](int t) {
    std::mt19937_64 rng(worker_seed * 1000003 + static_cast<uint64_t>(t));
    const bool own = rng() % 2 == 0;  // this thread's own context, or the process's shared one
    try {
      sp::Context mine = own ? new_context(backend, rng) : shared_ctx;
      for (uint32_t k = 0; Clock::now() < stop; ++k) {
        if (own && k % 16 == 15) mine = new_context(backend, rng);  // contexts come and go
        const bool fresh = rng() % 3 == 0;
        const Graph g = fresh ? make_graph(fresh_spec(rng)) : shared[rng() % shared.size()];
        const Op op = kOps[rng() % std::size(kOps)];
        const int64_t F = kFeatures[rng() % std::size(kFeatures)];
        const How how = static_cast<How>(rng() % 3);  // one_shot, plan_auto, plan_probe
        const Outcome o = run_case(mine, g, op, F, how, static_cast<uint32_t>(rng() % 9));
        if (!o.wrong.empty()) die_wrong(o.wrong);
        ops.fetch_add(1, std::memory_order_relaxed);
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (error.empty()) error = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (std::thread& t : pool) t.join();
  if (!error.empty()) {
    std::fprintf(stderr, "cache_stress worker %d: ERROR: %s\n", static_cast<int>(::getpid()), error.c_str());
    return 2;
  }
  std::printf("cache_stress worker %d: %ld ops, all right\n", static_cast<int>(::getpid()), ops.load());
  return 0;
}

// ---- final process: replays the cache --------------------------------------------------------------

// First one forced cold decision (probe mode: an append, the next writer after the last killed
// one), then every shared case in auto mode (hits replay what the workers stored; misses decide
// cold), then in replay mode (only the cache), on a default and a deterministic context; every
// result checked.
int final_check(const std::string& backend, uint64_t seed) {
  std::vector<Graph> shared;
  for (const std::string& s : shared_specs(seed)) shared.push_back(make_graph(s));
  long cases = 0, wrong = 0;
  std::map<std::string, long> sources;
  const auto one = [&](const sp::Context& ctx, const Graph& g, Op op, int64_t F, How how) {
    const Outcome o = run_case(ctx, g, op, F, how, static_cast<uint32_t>(cases % 9));
    ++cases;
    ++sources[o.source];
    if (!o.wrong.empty()) {
      ++wrong;
      std::fprintf(stderr, "cache_stress final: WRONG RESULT: %s\n", o.wrong.c_str());
    }
  };
  one(sp::Context::create(backend), shared[0], Op::spmm_sum, 16, How::plan_probe);
  for (const bool det : {false, true}) {
    sp::Context ctx = sp::Context::create(backend);
    ctx.set_deterministic(det);
    for (const How how : {How::plan_auto, How::plan_replay})
      for (const Graph& g : shared)
        for (const Op op : kOps)
          for (const int64_t F : kFeatures) one(ctx, g, op, F, how);
  }
  std::printf("final: %ld cases run, %ld wrong; decisions by source:", cases, wrong);
  for (const auto& [source, n] : sources) std::printf(" %s %ld;", source.c_str(), n);
  std::printf("\nfinal-wrong %ld\n", wrong);
  return wrong == 0 ? 0 : kWrong;
}

// ---- parent -----------------------------------------------------------------------------------------

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

using sparseport::test::count_of;
using sparseport::test::slurp;

// The environment of every child: ours, with the shared cache and the scheduler's settings.
std::vector<std::string> child_environment(const std::string& cache_dir) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    if (v.rfind("SPARSEPORT_", 0) == 0 || v.rfind("OMP_WAIT_POLICY=", 0) == 0) continue;
    env.push_back(v);
  }
  env.push_back("SPARSEPORT_CACHE_DIR=" + cache_dir);
  // The cache's bound passes through: a small one makes the workers compact the file while others
  // append, read and die (CacheStress.compacting).
  if (const char* bound = std::getenv("SPARSEPORT_CACHE_MAX_BYTES")) env.push_back(std::string("SPARSEPORT_CACHE_MAX_BYTES=") + bound);
  env.push_back("SPARSEPORT_SCHEDULER=auto");  // one-shot calls decide and cache, as by default
  env.push_back("SPARSEPORT_PROBE_REPEATS=1");  // cheaper cold decisions: more of them, more appends
  env.push_back("OMP_WAIT_POLICY=passive");     // spinning OpenMP workers of many processes starve each other
  return env;
}

// Starts argv with stdout and stderr to log (appended); 0 on failure.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log) {
  std::vector<char*> av, ev;
  for (const std::string& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const std::string& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, av[0], &fa, nullptr, av.data(), ev.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::fprintf(stderr, "cache_stress: cannot start %s: %s\n", av[0], std::strerror(rc));
    return 0;
  }
  return pid;
}

struct Counts {
  long started = 0, killed = 0, finished = 0, crashed = 0, wrong = 0, errors = 0, hung = 0, planted = 0;
};

struct Worker {
  pid_t pid = 0;
  bool killed = false;  // we sent SIGKILL
  std::string log;
};

// Classifies one ended worker; prints its log when it failed.
void account(Counts& n, const Worker& w, int status) {
  std::string what;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && w.killed) {
    ++n.killed;
  } else if (WIFSIGNALED(status)) {
    ++n.crashed;
    what = std::string("died of signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  } else if (WEXITSTATUS(status) == 0) {
    ++n.finished;
  } else if (WEXITSTATUS(status) == kWrong) {
    ++n.wrong;
    what = "wrong result";
  } else {
    ++n.errors;
    what = "exited " + std::to_string(WEXITSTATUS(status));
  }
  if (!what.empty()) {
    std::string text = slurp(w.log);
    if (text.size() > 4000) text = "..." + text.substr(text.size() - 4000);
    std::printf("cache_stress: worker %d %s; its output:\n%s\n", static_cast<int>(w.pid), what.c_str(), text.c_str());
  }
}

// Lines of a cache file: complete non-empty ones, and whether bytes without a newline end it.
struct RawLines {
  size_t complete = 0;
  bool torn_tail = false;
};
RawLines raw_lines(const std::string& path) {
  const std::string text = slurp(path);
  RawLines r;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      r.torn_tail = true;
      break;
    }
    if (end > start) ++r.complete;
    start = end + 1;
  }
  return r;
}

// What a writer killed inside its write() leaves: the first part of a line, without its newline,
// at the end of the file. Linux stops a buffered write between two folios for SIGKILL, but on the
// Linux 6.18 machine this was written on, 1 MiB writes were never torn by a kill (16 MiB ones were,
// nearly always), so kills alone would almost never tear a decision line (about 1 KB): the parent
// makes a killed worker have left one at times. Written under the cache's lock, as that writer held
// it; true when it was.
bool plant_torn_line(const std::string& path, std::mt19937_64& rng) {
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;  // no decision yet
  bool planted = false;
  if (::flock(fd, LOCK_EX) == 0) {
    // The file's last line, when the file ends in a whole one (not twice in a row).
    char buf[8192];
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 1) {
      const off_t from = std::max<off_t>(0, st.st_size - static_cast<off_t>(sizeof buf));
      const ssize_t got = ::pread(fd, buf, static_cast<size_t>(st.st_size - from), from);
      const std::string tail(buf, got > 0 ? static_cast<size_t>(got) : 0);
      const size_t prev = tail.size() > 1 ? tail.rfind('\n', tail.size() - 2) : std::string::npos;
      if (!tail.empty() && tail.back() == '\n' && (prev != std::string::npos || from == 0)) {
        const size_t begin = prev == std::string::npos ? 0 : prev + 1, length = tail.size() - 1 - begin;
        const size_t cut = length > 1 ? 1 + rng() % (length - 1) : 0;  // 1 .. length-1 bytes of it
        planted = cut > 0 && ::write(fd, tail.data() + begin, cut) == static_cast<ssize_t>(cut);
      }
    }
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return planted;
}

// `sparseport cache list --cache-dir DIR`: its count of decisions, or -1 when it failed.
long cli_count(const std::string& cache_dir, const std::string& out_path) {
  const std::string cli = SPARSEPORT_CLI_PATH;
  const pid_t pid = spawn({cli, "cache", "list", "--cache-dir", cache_dir}, child_environment(cache_dir), out_path);
  int status = 0;
  if (pid == 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  // "<cache_dir>/decisions.jsonl: N decisions", after any warnings (stderr goes to the same file).
  const std::string text = slurp(out_path), head = cache_dir + "/decisions.jsonl: ";
  const size_t at = text.find(head);
  return at == std::string::npos ? -1 : std::atol(text.c_str() + at + head.size());
}

int parent(const std::string& backend, double seconds, int processes, int threads, uint64_t seed) {
  const std::string self = self_path();
  std::string tmpl = (fs::temp_directory_path() / "sparseport-cache-stress-XXXXXX").string();
  if (self.empty() || ::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "cache_stress: cannot find myself or make a temporary folder\n");
    return 2;
  }
  const std::string root = tmpl, cache_dir = root + "/cache", logs = root + "/logs";
  fs::create_directories(cache_dir);
  fs::create_directories(logs);
  const std::vector<std::string> env = child_environment(cache_dir);
  std::printf("cache_stress %s: %.0f s, %d processes x %d threads, seed %llu, cache %s\n", backend.c_str(), seconds,
              processes, threads, static_cast<unsigned long long>(seed), cache_dir.c_str());
  std::fflush(stdout);

  std::mt19937_64 rng(seed);
  Counts n;
  std::map<pid_t, Worker> live;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  // A kill every 50..550 ms at random, at any point of a worker's life (starting, deciding,
  // appending, exiting): workers live 0.5..3 s (startup included), so most of them die by SIGKILL.
  const auto kill_gap = [&] { return std::chrono::milliseconds(50 + rng() % 500); };
  auto next_kill = t0 + kill_gap();
  const auto reap = [&] {
    for (auto it = live.begin(); it != live.end();) {
      int status = 0;
      const pid_t r = ::waitpid(it->first, &status, WNOHANG);
      if (r == it->first) {
        account(n, it->second, status);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
  };
  while (Clock::now() < end) {
    reap();
    while (static_cast<int>(live.size()) < processes) {
      const int64_t left_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
      const int64_t lifetime = std::max<int64_t>(50, std::min<int64_t>(500 + static_cast<int64_t>(rng() % 2500), left_ms));
      Worker w;
      w.log = logs + "/worker-" + std::to_string(n.started) + ".log";
      w.pid = spawn({self, "--worker", backend, std::to_string(threads), std::to_string(seed), std::to_string(rng()),
                     std::to_string(lifetime)},
                    env, w.log);
      if (w.pid == 0) return 2;
      ++n.started;
      live[w.pid] = w;
    }
    if (Clock::now() >= next_kill && !live.empty()) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      if (::kill(it->first, SIGKILL) == 0) it->second.killed = true;
      if (rng() % 3 == 0 && plant_torn_line(cache_dir + "/decisions.jsonl", rng)) ++n.planted;
      next_kill = Clock::now() + kill_gap();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // The rest end on their own (their lifetimes end by now); one that does not within a minute hangs.
  const auto grace = Clock::now() + std::chrono::seconds(60);
  while (!live.empty() && Clock::now() < grace) {
    reap();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& [pid, w] : live) {
    std::printf("cache_stress: worker %d did not end within 60 s of its lifetime; killed\n", static_cast<int>(pid));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ++n.hung;
  }
  live.clear();
  const double ran = std::chrono::duration<double>(Clock::now() - t0).count();

  // A final process replays the cache: every shared case decided and run right. It runs before the
  // cache is checked: its first decision is a forced cold one, an append that must cut off a line
  // torn by the last killed writer, if any.
  const std::string final_log = logs + "/final.log";
  const pid_t fin = spawn({self, "--final", backend, std::to_string(seed)}, env, final_log);
  int status = 0;
  long final_wrong = -1;
  std::string final_line = "final process failed";
  if (fin != 0 && ::waitpid(fin, &status, 0) == fin) {
    const std::string text = slurp(final_log);
    if (const size_t at = text.find("final-wrong "); at != std::string::npos) final_wrong = std::atol(text.c_str() + at + 12);
    if (!(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kWrong)) || final_wrong < 0) {
      std::printf("cache_stress: the final process failed (status %d); its output:\n%s\n", status, text.c_str());
      if (WIFSIGNALED(status)) ++n.crashed;
      else ++n.errors;
    } else {
      const size_t at = text.find("final: ");
      final_line = text.substr(at, text.find('\n', at) - at);
      if (final_wrong > 0) std::printf("%s\n", text.c_str());
    }
  } else {
    ++n.errors;
  }
  const long wrong = n.wrong + std::max(0L, final_wrong);

  // What the processes' readers and writers said while they ran (their warnings): corrupt lines
  // skipped (a planted torn line read before the next append cut it), torn lines cut.
  size_t skipped_seen = 0, cut_seen = 0;
  for (const auto& entry : fs::directory_iterator(logs)) {
    const std::string text = slurp(entry.path().string());
    skipped_seen += count_of(text, "skipped a corrupt");
    cut_seen += count_of(text, "cut short by a writer that died");
  }

  // The cache afterwards, through the library's reader: every complete line must come back as a
  // record (all were written by this library, schema 2), and no bytes without a newline may end a file.
  sp::SchedulerOptions opt;
  opt.cache_dir = cache_dir;
  const std::vector<std::string> decisions = sp::decision_cache_lines(opt);
  const RawLines raw = raw_lines(sp::decision_cache_file(opt));
  long unreadable = static_cast<long>(raw.complete) - static_cast<long>(decisions.size()) + (raw.torn_tail ? 1 : 0);
  const sparseport::scheduler::CacheFile transfer(cache_dir, "transfer.jsonl");
  const RawLines raw_transfer = raw_lines(transfer.path);
  const size_t transfer_records = transfer.read().size();
  unreadable += static_cast<long>(raw_transfer.complete) - static_cast<long>(transfer_records) + (raw_transfer.torn_tail ? 1 : 0);
  // Never wrong: every decision is for this backend and names a variant it offers for the op.
  long bad_records = 0;
  const sp::PluginInfo& plugin = sp::plugin(backend.substr(0, backend.find(':')));
  for (const std::string& line : decisions) {
    std::string error;
    const std::optional<sparseport::scheduler::Record> r = sparseport::scheduler::parse_record(line, &error);
    bool ok = r.has_value() && r->count("op") && r->count("variant") && r->count("backend") && r->at("backend") == plugin.name;
    if (ok) {
      const std::vector<std::string> offered = plugin.variants_of(sp::op_from_name(r->at("op")));
      ok = std::find(offered.begin(), offered.end(), r->at("variant")) != offered.end();
    }
    if (!ok && ++bad_records <= 3) std::printf("cache_stress: a wrong decision record: %s\n", line.c_str());
  }
  // The command-line reader agrees (when the CLI was built).
  std::string cli_text = "not built";
  if (!std::string(SPARSEPORT_CLI_PATH).empty() && fs::exists(SPARSEPORT_CLI_PATH)) {
    const long cli = cli_count(cache_dir, logs + "/cli.txt");
    cli_text = cli < 0 ? "FAILED" : std::to_string(cli) + " decisions";
    if (cli != static_cast<long>(decisions.size())) {
      std::printf("cache_stress: `sparseport cache list` says %s, the library read %zu\n", cli_text.c_str(), decisions.size());
      ++bad_records;
    }
  }

  std::printf("cache_stress %s: %.1f s\n"
              "  processes: started %ld, killed %ld, finished %ld, crashed %ld, errors %ld, hung %ld\n"
              "  wrong results: %ld (%s)\n"
              "  cache: %zu decisions, %zu transfer records, unreadable entries %ld, wrong records %ld; "
              "`sparseport cache list`: %s\n"
              "  torn lines: %ld planted at kills, %zu cut by the next writer, %zu skipped by a reader before that\n",
              backend.c_str(), ran, n.started, n.killed, n.finished, n.crashed, n.errors, n.hung, wrong,
              final_line.c_str(), decisions.size(), transfer_records, unreadable, bad_records, cli_text.c_str(),
              n.planted, cut_seen, skipped_seen);
  const bool ok = n.crashed == 0 && wrong == 0 && n.errors == 0 && n.hung == 0 && unreadable == 0 && bad_records == 0;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  std::fflush(stdout);
  if (ok) {
    std::error_code ec;
    fs::remove_all(root, ec);
  } else {
    std::printf("cache_stress: the cache and the logs are kept in %s\n", root.c_str());
  }
  return ok ? 0 : 1;
}

// 77 when the backend is compiled out or has no device here (said on stdout).
int usable(const std::string& backend) {
  // "cuda:1" names a device of plugin "cuda"; an unknown token throws InvalidArgument.
  const sp::PluginInfo& p = sp::plugin(backend.substr(0, backend.find(':')));
  if (p.status == sp::PluginStatus::available) return 0;
  std::printf("skipped: backend %s is not usable here (%s)\n", backend.c_str(),
              p.reason.empty() ? sp::name(p.status) : p.reason.c_str());
  return kSkip;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 6 && a[0] == "--worker")
      return worker(a[1], std::atoi(a[2].c_str()), std::stoull(a[3]), std::stoull(a[4]), std::stoll(a[5]));
    if (a.size() == 3 && a[0] == "--final") return final_check(a[1], std::stoull(a[2]));
    if (a.size() == 5) {
      if (const int rc = usable(a[0]); rc != 0) return rc;
      const double seconds = std::stod(a[1]);
      const int processes = std::atoi(a[2].c_str()), threads = std::atoi(a[3].c_str());
      if (seconds > 0 && processes > 0 && threads > 0) return parent(a[0], seconds, processes, threads, std::stoull(a[4]));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cache_stress: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "usage: cache_stress BACKEND SECONDS PROCESSES THREADS SEED\n"
                       "  BACKEND: reference, openmp, kokkos, cuda or cuda:N; exit 77 when it is not usable here\n");
  return 2;
}
