// SPDX-License-Identifier: Apache-2.0
// `sparseport cache list|show|clear`: the scheduler's persistent decision cache.
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::cli {
namespace {

// The value of "key" in one flat JSON line as the cache writes it (quoted string values).
std::string field(const std::string& line, const std::string& key) {
  const std::string pat = "\"" + key + "\":";
  const size_t at = line.find(pat);
  if (at == std::string::npos) return {};
  size_t i = at + pat.size();
  if (i < line.size() && line[i] == '"') {
    std::string out;
    for (++i; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      out += line[i];
    }
    return out;
  }
  const size_t end = line.find_first_of(",}", i);
  return line.substr(i, end - i);
}

}  // namespace

int cmd_cache(const std::vector<std::string>& argv) {
  Args args("sparseport cache", "list|show|clear [--cache-dir DIR] [PATTERN]",
            "The scheduler's decision cache: one JSON line per decision, keyed by device signature,\n"
            "graph signature, op, F and types (later lines for a key win).\n"
            "  list   one line per decision: op, backend, F, variant, how it was decided, key\n"
            "  show   the full JSON lines (only those whose key contains PATTERN, when given)\n"
            "  clear  delete the cache file");
  args.positional("action", "list, show or clear", true);
  args.positional("pattern", "show: a substring of the key", false);
  args.option("--cache-dir", "DIR", "the cache folder (default: SPARSEPORT_CACHE_DIR, else ~/.cache/sparseport)");
  if (!args.parse(argv)) return 0;
  SchedulerOptions opt;
  opt.cache_dir = args.get("--cache-dir");
  const std::string action = args.positional_value("action");
  const std::string pattern = args.positional_value("pattern");
  if (action == "clear") {
    const size_t n = clear_decision_cache(opt);
    std::printf("removed %s (%zu decisions)\n", decision_cache_file(opt).c_str(), n);
    return 0;
  }
  if (action != "list" && action != "show") args.fail("sparseport cache: unknown action '" + action + "' (list, show, clear)");
  const std::vector<std::string> lines = decision_cache_lines(opt);
  if (action == "show") {
    for (const std::string& l : lines)
      if (pattern.empty() || field(l, "key").find(pattern) != std::string::npos) std::printf("%s\n", l.c_str());
    return 0;
  }
  std::printf("%s: %zu decisions\n", decision_cache_file(opt).c_str(), lines.size());
  for (const std::string& l : lines) {
    std::string how = field(l, "source");
    if (field(l, "verified") == "true") how += ", verified";
    if (field(l, "reverted") == "true") how += ", reverted from " + field(l, "probe_choice");
    if (!field(l, "checks").empty()) how = "shape class, " + field(l, "checks") + " checks";  // a class line
    std::printf("%-15s %-8s F=%-4s %-28s %-34s %s\n", field(l, "op").c_str(), field(l, "backend").c_str(),
                field(l, "F").c_str(), field(l, "variant").c_str(), how.c_str(), field(l, "key").c_str());
  }
  return 0;
}

}  // namespace sparseport::cli
