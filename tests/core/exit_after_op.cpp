// SPDX-License-Identifier: Apache-2.0
// A program that runs one op family on one backend and then ends the process in one of several
// ways: the exit-crash regression (issue 34). Each ending leaves different library state alive at
// exit: one-shot plans holding float32 copies of 16-bit operands, contexts never destroyed (as a
// test fixture or a Python module keeps them), a static Context destroyed after the runtime's own
// teardown, the model-parsing thread still running. Every result it computes is checked against a
// double-precision host loop; a wrong result exits 3.
//
//   exit_after_op BACKEND FAMILY ENDING
//   exit_after_op BACKEND random SEED       (family and ending drawn from SEED)
//
// FAMILY: spmm spmm16 sddmm segment gather_scatter attention structural plan
// ENDING: return (contexts destroyed, then main returns), leak (contexts never destroyed, main
// returns), static (a function-local static Context, destroyed by exit), exit (std::exit with the
// context alive on the stack), thread (two threads share a leaked context, joined before return),
// early (std::exit right after the context is created: the model thread may still be parsing),
// fork (fork() right after the first context is created, while the model thread parses; the child
// creates its own context and runs the family, the parent runs it too and waits for the child: a
// host backend must work in the child; on cuda, which cannot run in a forked child, the child must
// get a clear error, not a crash or a hang, and runs the family on the reference backend instead).
// Exit status: 0 ok, 2 usage or an unexpected exception, 3 a wrong result, 4 the fork child failed,
// 77 backend not here.
#include "common/op_families.hpp"

#include <execinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace sp = sparseport;
using sparseport::test::Graph;
using sparseport::test::make_graph;
using sparseport::test::run_family;

namespace {

const char* const kEndings[] = {"return", "leak", "static", "exit", "thread", "early", "fork"};

// The leak and thread endings' context: never destroyed, as a test fixture or a Python module
// keeps one, but reachable from here, so that LeakSanitizer does not count it as a leak.
const sp::Context* g_kept = nullptr;

sp::Context& static_context(const std::string& backend) {
  static sp::Context ctx = sp::Context::create(backend);  // destroyed during exit
  return ctx;
}

// The child of the fork ending: its own context, the family, _exit with the verdict (no exit
// handlers of the parent's state run in the child).
// A child that hangs prints where (its only thread's stack) and exits 5.
void on_alarm(int) {
  static const char msg[] = "fork child: no progress in 60 s; its stack:\n";
  (void)!write(2, msg, sizeof msg - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  _exit(5);
}

[[noreturn]] void fork_child(const std::string& backend, const std::string& family, const Graph& g) {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc_s now, not inside the handler
  std::signal(SIGALRM, on_alarm);
  alarm(60);  // a deadlock in the child (a mutex copied locked by fork) ends as exit 5, not a hang
  try {
    const sp::Context ctx = sp::Context::create(backend);
    run_family(ctx, family, g);
    std::printf("fork child: %s on %s ran and was checked\n", family.c_str(), backend.c_str());
  } catch (const sp::test::WrongResult& e) {
    std::fprintf(stderr, "fork child: %s\n", e.what());
    std::_Exit(3);
  } catch (const sp::Error& e) {
    // A device backend in a forked child: CUDA refuses (the parent's runtime state is not valid
    // there); the error must say so, and the host backends must still work. Kokkos-OpenMP (3.4)
    // does not survive fork either: the kokkos plugin refuses there, saying "forked".
    const bool says_forked = std::string(e.what()).find("forked") != std::string::npos;
    if (sp::plugin(backend.substr(0, backend.find(':'))).table->memory_space != SPARSEPORT_MEMORY_DEVICE &&
        !(backend == "kokkos" && says_forked)) {
      std::fprintf(stderr, "fork child: %s\n", e.what());
      std::_Exit(4);
    }
    std::printf("fork child: %s refused as expected: %s\n", backend.c_str(), e.what());
    try {
      const sp::Context host = sp::Context::create("reference");
      run_family(host, family, g);
    } catch (const std::exception& e2) {
      std::fprintf(stderr, "fork child (reference): %s\n", e2.what());
      std::_Exit(4);
    }
  }
  std::fflush(stdout);
  std::_Exit(0);
}

int run(const std::string& backend, const std::string& family, const std::string& ending) {
  const Graph g = make_graph(std::hash<std::string>{}(family));
  if (ending == "early") {
    const sp::Context ctx = sp::Context::create(backend);
    std::exit(0);
  }
  if (ending == "return") {
    const sp::Context ctx = sp::Context::create(backend);
    run_family(ctx, family, g);
    return 0;
  }
  if (ending == "leak") {
    const auto* ctx = g_kept = new sp::Context(sp::Context::create(backend));
    run_family(*ctx, family, g);
    return 0;
  }
  if (ending == "static") {
    run_family(static_context(backend), family, g);
    return 0;
  }
  if (ending == "exit") {
    const sp::Context ctx = sp::Context::create(backend);
    run_family(ctx, family, g);
    std::exit(0);
  }
  if (ending == "thread") {
    const auto* ctx = g_kept = new sp::Context(sp::Context::create(backend));
    std::string errors[2];
    const auto body = [&](int k) {
      try {
        run_family(*ctx, family, g);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    };
    std::thread t1(body, 0), t2(body, 1);
    t1.join();
    t2.join();
    for (const std::string& e : errors)
      if (!e.empty()) throw std::runtime_error(e);
    return 0;
  }
  if (ending == "fork") {
    const sp::Context ctx = sp::Context::create(backend);  // starts the model thread
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) fork_child(backend, family, g);
    run_family(ctx, family, g);  // the parent is unaffected
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    std::fprintf(stderr, "exit_after_op: the fork child %s %d\n", WIFSIGNALED(status) ? "died of signal" : "exited",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return 4;
  }
  std::fprintf(stderr, "exit_after_op: unknown ending '%s'\n", ending.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: exit_after_op BACKEND FAMILY ENDING | exit_after_op BACKEND random SEED\n");
    return 2;
  }
  const std::string backend = argv[1];
  std::string family = argv[2], ending = argv[3];
  if (family == "random") {
    std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
    family = sparseport::test::kOpFamilies[rng() % std::size(sparseport::test::kOpFamilies)];
    ending = kEndings[rng() % std::size(kEndings)];
  }
  std::printf("exit_after_op %s %s %s\n", backend.c_str(), family.c_str(), ending.c_str());
  std::fflush(stdout);
  try {
    const sp::PluginInfo& p = sp::plugin(backend.substr(0, backend.find(':')));
    if (p.status != sp::PluginStatus::available) {
      std::printf("skipped: backend %s is not usable here (%s)\n", backend.c_str(), p.reason.c_str());
      return 77;
    }
    return run(backend, family, ending);
  } catch (const sp::test::WrongResult& e) {
    std::fprintf(stderr, "exit_after_op: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exit_after_op: %s\n", e.what());
    return 2;
  }
}
