// SPDX-License-Identifier: Apache-2.0
// `sparseport info GRAPH`: the statistics the scheduler's features start from.
#include <cstdint>
#include <cstdio>
#include <limits>

#include "args.hpp"
#include "commands.hpp"
#include "json.hpp"
#include "load.hpp"
#include "sparseport/sparseport.hpp"

namespace sparseport::cli {
namespace {

// 32-bit indices halve the memory of a large graph; a file whose header shows that they cannot
// hold it is read with 64-bit ones. Symmetric storage may double the entries when expanded.
bool needs_64bit_indices(const std::string& arg) {
  if (arg.empty() || is_generator_spec(arg)) return false;
  const MmHeader h = read_matrix_market_header(arg);
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const int64_t full = h.symmetry == MmSymmetry::general ? h.entries : 2 * h.entries;
  const int64_t stored = h.format == MmFormat::array ? h.rows * h.cols : full;
  return h.rows > kMax || h.cols > kMax || stored > kMax;
}

template <class I>
int info_typed(const std::string& arg, bool json, bool show_progress) {
  const HostCsr<I, double> a = load_with_progress<I, double>(arg, show_progress);
  GraphInfo g;
  {
    Progress p("computing statistics of " + graph_label(arg), show_progress);
    g = graph_info(a);
  }
  if (json) {
    JsonObject o;
    o.add("graph", graph_label(arg))
        .add("rows", g.rows)
        .add("cols", g.cols)
        .add("nnz", g.nnz)
        .add("pattern", a.is_pattern())
        .add("deg_p50", g.deg_p50)
        .add("deg_p90", g.deg_p90)
        .add("deg_p99", g.deg_p99)
        .add("deg_max", g.deg_max)
        .add("deg_mean", g.deg_mean)
        .add("skew", g.skew)
        .add("empty_rows", g.empty_rows)
        .add("self_loops", g.self_loops)
        .add("pattern_symmetric", g.pattern_symmetric)
        .add("symmetric", g.symmetric);
    std::printf("%s\n", o.str().c_str());
    return 0;
  }
  const double empty_pct = g.rows > 0 ? 100.0 * static_cast<double>(g.empty_rows) / static_cast<double>(g.rows) : 0.0;
  std::printf("graph        %s\n", graph_label(arg).c_str());
  std::printf("shape        %lld x %lld\n", static_cast<long long>(g.rows), static_cast<long long>(g.cols));
  std::printf("nnz          %lld\n", static_cast<long long>(g.nnz));
  std::printf("values       %s\n", a.is_pattern() ? "pattern (every value 1)" : "stored");
  std::printf("row degree   p50 %lld, p90 %lld, p99 %lld, max %lld, mean %.3f\n", static_cast<long long>(g.deg_p50),
              static_cast<long long>(g.deg_p90), static_cast<long long>(g.deg_p99), static_cast<long long>(g.deg_max),
              g.deg_mean);
  std::printf("skew         %.2f (max / mean)\n", g.skew);
  std::printf("empty rows   %lld (%.2f%%)\n", static_cast<long long>(g.empty_rows), empty_pct);
  std::printf("symmetric    pattern: %s, values: %s\n", g.pattern_symmetric ? "yes" : "no",
              g.symmetric ? "yes" : "no");
  std::printf("self-loops   %lld\n", static_cast<long long>(g.self_loops));
  return 0;
}

}  // namespace

int cmd_info(const std::vector<std::string>& argv) {
  Args args("sparseport info", "[--json] [--quiet] GRAPH",
            "Prints the shape, nnz, row-degree quantiles (p50, p90, p99, max), mean degree and skew\n"
            "(max / mean), empty rows, symmetry of the pattern and of the values, and self-loops.");
  args.flag("--json", "print one JSON object instead of the table")
      .flag("--quiet", "no progress on stderr", "-q")
      .positional("GRAPH", "a Matrix Market file (.mtx, .mtx.gz) or a generator spec (see 'sparseport --help')",
                  true);
  if (!args.parse(argv)) return 0;
  const std::string graph = args.positional_value("GRAPH");
  const bool json = args.has("--json");
  const bool show_progress = !args.has("--quiet");
  return needs_64bit_indices(graph) ? info_typed<int64_t>(graph, json, show_progress)
                                    : info_typed<int32_t>(graph, json, show_progress);
}

}  // namespace sparseport::cli
