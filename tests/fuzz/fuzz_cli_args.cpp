// SPDX-License-Identifier: Apache-2.0
// Fuzzes the `sparseport` command-line parser (src/cli/args.cpp) with the option tables of the real
// subcommands (copied from src/cli/cmd_*.cpp: keep them in step) and the checks each command makes
// on its options before it does any work. The input is the command line, split into arguments at
// NUL or newline; the first argument picks the command as main() does. Documented outcomes: a
// parse that succeeds, help printed (parse returns false), or cli::UsageError; a library
// InvalidArgument that a command passes on (an unknown backend for tune) is allowed too. Anything
// else is a finding.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "sparseport/sparseport.hpp"
#include "src/cli/args.hpp"

namespace sp = sparseport;
using sparseport::cli::Args;
using sparseport::cli::UsageError;

namespace {

void check_help(const Args& a) {
  const std::string h = a.help();
  fuzz::require(h.rfind("usage: " + a.command() + " ", 0) == 0, "help does not start with the usage line");
}

void run_cmd(const std::vector<std::string>& argv) {
  Args args("sparseport run", "--op OP [options] [GRAPH]", "Runs one operator on a backend.");
  args.option("--op", "OP", "the operator")
      .option("--backend", "B", "backend")
      .option("--variant", "V", "variant or all")
      .option("--F", "N", "feature width")
      .option("--reps", "R", "timed repetitions")
      .option("--threads", "T", "threads")
      .option("--reduce", "R", "sum, mean, max or min")
      .option("--seed", "S", "seed")
      .option("--sample", "S", "rows or vertices to select")
      .option("--dtype", "T", "f32 or f64")
      .option("--index", "T", "i32 or i64")
      .flag("--json", "JSON output")
      .flag("--quiet", "no progress", "-q")
      .positional("GRAPH", "a Matrix Market file or a generator spec", false)
      .epilog("Examples: sparseport run --op spmm --json");
  check_help(args);
  if (!args.parse(argv)) return;
  if (!args.has("--op")) args.fail("missing --op OP");
  try {
    (void)sp::op_from_name(args.get("--op"));
  } catch (const sp::InvalidArgument& e) {
    args.fail_with(e);
  }
  const std::string backend = args.get("--backend");
  if (!backend.empty()) {
    try {
      (void)sp::plugin(backend.substr(0, backend.find(':')));
    } catch (const sp::InvalidArgument& e) {
      args.fail_with(e);
    }
  }
  (void)args.get("--variant");
  const int64_t f = args.get_int("--F", 64, 1, 1 << 20);
  fuzz::require(f >= 1 && f <= (1 << 20), "get_int returned a value outside its range");
  (void)args.get_int("--reps", 10, 1, 1000000);
  (void)args.get_int("--threads", 0, 0, 1 << 16);
  if (args.has("--reduce")) {
    try {
      (void)sp::reduce_from_name(args.get("--reduce"));
    } catch (const sp::InvalidArgument& e) {
      args.fail_with(e);
    }
  }
  (void)args.get_u64("--seed", 1);
  const int64_t sample = args.get_int("--sample", 0, 1, INT64_MAX);
  fuzz::require(sample >= 0, "get_int returned a value outside its range");
  const std::string dtype = args.get("--dtype", "f32");
  if (dtype != "f32" && dtype != "f64") args.fail("--dtype is '" + dtype + "' but must be f32 or f64");
  const std::string itype = args.get("--index", "i32");
  if (itype != "i32" && itype != "i64") args.fail("--index is '" + itype + "' but must be i32 or i64");
  (void)args.positional_value("GRAPH");
}

void info_cmd(const std::vector<std::string>& argv) {
  Args args("sparseport info", "[--json] [--quiet] GRAPH", "Prints the shape of a graph.");
  args.flag("--json", "JSON output").flag("--quiet", "no progress", "-q").positional("GRAPH", "a graph", true);
  check_help(args);
  if (!args.parse(argv)) return;
  (void)args.has("--json");
  (void)args.has("--quiet");
  (void)args.positional_value("GRAPH");
}

void devices_cmd(const std::vector<std::string>& argv) {
  Args args("sparseport devices", "[--json]", "Lists every backend.");
  args.flag("--json", "one JSON object per backend");
  check_help(args);
  if (!args.parse(argv)) return;
  (void)args.has("--json");
}

void cache_cmd(const std::vector<std::string>& argv) {
  Args args("sparseport cache", "list|show|clear [--cache-dir DIR] [PATTERN]", "The decision cache.");
  args.positional("action", "list, show or clear", true);
  args.positional("pattern", "show: a substring of the key", false);
  args.option("--cache-dir", "DIR", "the cache folder");
  check_help(args);
  if (!args.parse(argv)) return;
  (void)args.get("--cache-dir");
  const std::string action = args.positional_value("action");
  (void)args.positional_value("pattern");
  if (action != "clear" && action != "list" && action != "show") args.fail("unknown action '" + action + "'");
}

void tune_cmd(const std::vector<std::string>& argv) {
  Args args("sparseport tune", "--oracle --op OP --backend B --F N [--json] GRAPH...", "Oracle evaluation.");
  args.flag("--oracle", "required");
  args.option("--op", "OP", "op");
  args.option("--backend", "B", "backend");
  args.option("--F", "N", "feature width");
  args.option("--reps", "R", "repetitions");
  args.option("--threads", "T", "threads");
  args.option("--cache-dir", "DIR", "cache folder");
  args.flag("--json", "JSON output");
  args.positional("graphs", "one or more GRAPH arguments", true);
  check_help(args);
  std::vector<std::string> graphs, rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool takes_value =
        a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && a != "--oracle" && a != "--json" && a != "--help";
    if (a.rfind("-", 0) == 0) {
      rest.push_back(a);
      if (takes_value && i + 1 < argv.size()) rest.push_back(argv[++i]);
      continue;
    }
    graphs.push_back(a);
  }
  if (!graphs.empty()) rest.push_back(graphs.front());
  if (!args.parse(rest)) return;
  if (!args.has("--oracle")) args.fail("sparseport tune: only --oracle is implemented; pass it");
  try {
    (void)sp::op_from_name(args.get("--op", "spmm"));
  } catch (const std::exception& e) {
    args.fail_with(e);
  }
  (void)args.get_int("--F", 64, 1, 1 << 20);
  (void)args.get_int("--reps", 5, 1, 1000);
  sp::Context ctx = sp::Context::create(args.get("--backend"));
  if (args.has("--threads")) ctx.set_threads(static_cast<int>(args.get_int("--threads", 0, 1, 4096)));
  (void)args.get("--cache-dir");
}

// main.cpp's dispatch, without running anything.
void dispatch(const std::vector<std::string>& args, int depth = 0) {
  if (args.empty()) throw UsageError("sparseport", "sparseport: no command given");
  const std::string& cmd = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "--version") return;
  if (cmd == "info") return info_cmd(rest);
  if (cmd == "run") return run_cmd(rest);
  if (cmd == "devices") return devices_cmd(rest);
  if (cmd == "cache") return cache_cmd(rest);
  if (cmd == "tune") return tune_cmd(rest);
  if (cmd == "help") {
    if (rest.empty()) return;
    if (rest.size() > 1) throw UsageError("sparseport", "sparseport help: takes at most one command name");
    fuzz::require(depth < 2, "help recursed");
    return dispatch({rest.front(), "--help"}, depth + 1);
  }
  throw UsageError("sparseport", "sparseport: unknown command '" + cmd + "'");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Help goes to stdout; libFuzzer reports on stderr.
  if (std::freopen("/dev/null", "w", stdout) == nullptr) fuzz::finding("cannot redirect stdout");
  ::setenv("SPARSEPORT_SCHEDULER", "off", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::vector<std::string> argv(1);
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n')
      argv.emplace_back();
    else
      argv.back() += c;
  }
  if (size == 0) argv.clear();
  try {
    dispatch(argv);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    fuzz::require(what.rfind(e.command() + ": ", 0) == 0 || what.rfind("sparseport", 0) == 0,
                  "a UsageError does not name its command: " + what);
  } catch (const sp::Error&) {
    // A library error about an argument that the command passes on as it is (exit code 1).
  } catch (const std::exception& e) {
    fuzz::finding("the command-line parser threw " + fuzz::type_name(e) + ": " + e.what());
  }
  return 0;
}
