#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints what the GNN-scale twins (datasets.hpp, twin_datasets) are on this machine: rows, entries
# and their distance from the real graph's, largest and mean degree, symmetry, self loops and the
# time to generate, through the suites' own loader (datasets.cpp's load(): load_graph with
# symmetrize, seed 1). Compiles a small program against a build directory's libsparseport; a host
# needs about 4 GB per twin. Not a CTest test (half a minute per twin).
#   benchmarks/twin_check.sh [BUILD_DIR, default build/bw] [--write DIR]
# --write DIR also writes each twin as DIR/NAME.mtx (Matrix Market, symmetric: the lower triangle,
# about 1.3 GB each), so `sparseport run DIR/products-twin.mtx --op spmm ...` runs it: `sparseport
# run` takes a generator spec but cannot symmetrize one.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build/bw}
write=""
if [ "${2:-}" = "--write" ]; then write=${3:?--write needs a folder}; mkdir -p "$write"; fi
lib=$(dirname "$(find "$build/src" -name 'libsparseport.so' | head -1)")
[ -n "$lib" ] || { echo "twin_check: no libsparseport.so under $build/src (build it first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/check.cpp" <<'EOF'
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include "datasets.hpp"
using namespace sparseport;
int main(int argc, char** argv) {
  const std::string write = argc > 1 ? argv[1] : "";
  // The real graphs' sizes (OGB's ogbn-products; GraphSAGE's Reddit as PyG ships it).
  const struct { const char* name; double rows, nnz; } real[] = {{"products-twin", 2449029, 123718280},
                                                                  {"reddit-twin", 232965, 114615892}};
  std::printf("%-14s %-36s %10s %12s %8s %8s %7s %9s %5s %6s %7s\n", "twin", "source", "rows", "entries",
              "vs real", "max deg", "mean", "symmetric", "empty", "loops", "gen s");
  for (const bench::DatasetSpec& d : bench::twin_datasets()) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto g = bench::load(d);  // the suites' path: generated, symmetrized, checked
    const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const GraphInfo info = graph_info(g->csr);
    double want = 0;
    for (const auto& r : real)
      if (d.name == r.name) want = r.nnz;
    std::printf("%-14s %-36s %10lld %12lld %+7.2f%% %8lld %7.1f %9s %5lld %6lld %7.1f\n", d.name.c_str(),
                d.source.c_str(), static_cast<long long>(info.rows), static_cast<long long>(info.nnz),
                want > 0 ? 100.0 * (static_cast<double>(info.nnz) / want - 1.0) : NAN,
                static_cast<long long>(info.deg_max), info.deg_mean, info.pattern_symmetric ? "yes" : "NO",
                static_cast<long long>(info.empty_rows), static_cast<long long>(info.self_loops), gen_s);
    std::fflush(stdout);
    if (!write.empty()) {
      MmWriteOptions w;
      w.symmetry = MmSymmetry::symmetric;
      write_matrix_market(write + "/" + d.name + ".mtx", g->csr, w);
      std::printf("  wrote %s/%s.mtx\n", write.c_str(), d.name.c_str());
    }
  }
}
EOF
inc="-I$root/include -I$build/include -I$here"
c++ -std=c++20 -O2 $inc "$work/check.cpp" "$here/datasets.cpp" -L"$lib" -lsparseport -Wl,-rpath,"$lib" -pthread \
  -o "$work/check"
"$work/check" "$write"
