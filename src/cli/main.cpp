// SPDX-License-Identifier: Apache-2.0
// `sparseport`: inspect graphs, run and verify operators, list backends. Public API only.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "sparseport/sparseport.hpp"

namespace {

using sparseport::cli::UsageError;

constexpr const char* kUsage =
    "usage: sparseport [--version] [--help] COMMAND [ARGS]\n"
    "\n"
    "Portable sparse operators: inspect graphs, run and verify operators, list backends.\n"
    "\n"
    "commands:\n"
    "  info GRAPH      shape, nnz, degree quantiles, skew, empty rows, symmetry, self-loops\n"
    "  run --op OP     run one operator on a backend, verify it against the reference, time it\n"
    "  devices         every backend known, its status, devices, signature and variants per op\n"
    "  cache ACTION    the scheduler's decision cache: list, show, clear\n"
    "  tune --oracle   time every variant and score the scheduler's choice (regret, cold cost)\n"
    "  help [COMMAND]  this text, or a command's help\n"
    "\n"
    "GRAPH is a Matrix Market file (.mtx or .mtx.gz) or a generator spec (er:N:P, rmat:SCALE:EF,\n"
    "rmatp:SCALE:EF:A:B:C, hubs:N:DEG:NHUBS:HUBDEG, band:N:DEG, megarow:N:DEG:FRACTION,\n"
    "chunglu:N:AVGDEG:EXPONENT, sbm:N:BLOCKS:DEGIN:DEGOUT, mesh2d:NX:NY:RENUMBER,\n"
    "mesh3d:NX:NY:NZ:RENUMBER, mesh3d27:NX:NY:NZ:RENUMBER, road:NX:NY:KEEP, bipartite:ROWS:COLS:DEG,\n"
    "powerlaw), optionally followed by @SEED (e.g. chunglu:100000:16:2.1@7).\n"
    "Run 'sparseport COMMAND --help' for a command's options.\n"
    "Exit codes: 0 success, 1 runtime error or failed verification, 2 usage error.\n";

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("sparseport", "sparseport: no command given");
  const std::string& cmd = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("sparseport %s (library %s, plugin ABI %d.%d)\n", SPARSEPORT_VERSION_STRING, sparseport::version(),
                SPARSEPORT_ABI_VERSION_MAJOR, SPARSEPORT_ABI_VERSION_MINOR);
    return 0;
  }
  if (cmd == "info") return sparseport::cli::cmd_info(rest);
  if (cmd == "run") return sparseport::cli::cmd_run(rest);
  if (cmd == "devices") return sparseport::cli::cmd_devices(rest);
  if (cmd == "cache") return sparseport::cli::cmd_cache(rest);
  if (cmd == "tune") return sparseport::cli::cmd_tune(rest);
  if (cmd == "help") {
    if (rest.empty()) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (rest.size() > 1) throw UsageError("sparseport", "sparseport help: takes at most one command name");
    return dispatch({rest.front(), "--help"});
  }
  if (!cmd.empty() && cmd[0] == '-') throw UsageError("sparseport", "sparseport: unknown option '" + cmd + "'");
  throw UsageError("sparseport", "sparseport: unknown command '" + cmd + "' (commands: info, run, devices, cache, tune, help)");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\nRun '%s --help' for usage.\n", e.what(), e.command().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "sparseport: error: out of memory (the graph or its operands do not fit)\n");
    return 1;
  } catch (const std::exception& e) {
    // Library messages already name their origin ("sparseport::spmm[cuda]: ...").
    std::fflush(stdout);
    const std::string what = e.what();
    std::fprintf(stderr, "%s%s\n", what.starts_with("sparseport") ? "error: " : "sparseport: error: ", what.c_str());
    return 1;
  }
}
