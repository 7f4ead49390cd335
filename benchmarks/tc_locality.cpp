// SPDX-License-Identifier: Apache-2.0
// What a row order gives spmm.tc_window's window format (issue 33, item 3), from the host model of
// the format alone (kernels/cuda/tc_window_format.hpp; no GPU). For each graph and each row order it
// prints the numbers the format's cost follows:
//   - slot columns per entry: the B rows a window gathers per entry of A. An 8-row window gathers a
//     column once for all its rows that use it, so 1.0 means no reuse at all inside windows (each
//     entry brings its own B row, as a CSR kernel reads them) and 0.125 the most there can be.
//   - tile fill: entries over tile elements (blocks x 128). The mma's work and the tiles' bytes grow
//     with 1 / fill.
//   - modelled bytes per call of the format over a CSR kernel's, at F = 32 and 64, 16-bit values,
//     int32 indices, counting each gathered B row once per use and nothing cached:
//       CSR: nnz (4 + 2) + nnz F 2,  tc_window: blocks (256 + 64) + slots F 2 + nnz 12 (value refresh).
//     Below 1 the format moves fewer bytes; the kernels run near the memory floor at F >= 32, so the
//     ratio bounds what the order can give. L2 reuse of B rows (60 MB on an H200) is not modelled: it
//     helps both, the CSR kernel more (it gathers more).
// Row orders (a permutation of A's rows; C is written back in the caller's order, columns unchanged):
//   natural; degree (descending, hubs together); minhash (rows sorted by the smallest of two hashes
//   of their columns, so rows sharing columns meet: two rows have the same min-hash with probability
//   equal to the Jaccard similarity of their column sets); degree-minhash (the same within buckets of
//   rows of equal log2 degree).
//
//   tc_locality [GRAPH...]   (specs of sparseport::generate or .mtx / .mtx.gz paths)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cuda/tc_window_format.hpp"
#include "sparseport/graph.hpp"

namespace {

using namespace sparseport;
using Csr = HostCsr<int64_t, float>;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: a fixed, well-spread hash of a column
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct RowKey {
  uint64_t a = ~0ull, b = ~0ull;
};

std::vector<RowKey> minhash(const Csr& g) {
  std::vector<RowKey> k(static_cast<size_t>(g.rows));
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t e = g.rowptr[static_cast<size_t>(r)]; e < g.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      const auto c = static_cast<uint64_t>(g.colind[static_cast<size_t>(e)]);
      k[static_cast<size_t>(r)].a = std::min(k[static_cast<size_t>(r)].a, mix(c));
      k[static_cast<size_t>(r)].b = std::min(k[static_cast<size_t>(r)].b, mix(c ^ 0x5bd1e995ull));
    }
  return k;
}

int64_t degree(const Csr& g, int64_t r) {
  return g.rowptr[static_cast<size_t>(r) + 1] - g.rowptr[static_cast<size_t>(r)];
}

int log2_bucket(int64_t d) {
  int b = 0;
  while (d > 1) d >>= 1, ++b;
  return b;
}

// perm[i] = the row of g that goes to place i.
std::vector<int64_t> order(const Csr& g, const std::string& how) {
  std::vector<int64_t> p(static_cast<size_t>(g.rows));
  std::iota(p.begin(), p.end(), 0);
  if (how == "natural") return p;
  if (how == "degree") {
    std::stable_sort(p.begin(), p.end(), [&](int64_t x, int64_t y) { return degree(g, x) > degree(g, y); });
    return p;
  }
  const std::vector<RowKey> k = minhash(g);
  const bool by_degree = how == "degree-minhash";
  std::stable_sort(p.begin(), p.end(), [&](int64_t x, int64_t y) {
    if (by_degree) {
      const int bx = log2_bucket(degree(g, x)), by = log2_bucket(degree(g, y));
      if (bx != by) return bx > by;
    }
    const RowKey& a = k[static_cast<size_t>(x)];
    const RowKey& b = k[static_cast<size_t>(y)];
    return a.a != b.a ? a.a < b.a : a.b < b.b;
  });
  return p;
}

Csr permute_rows(const Csr& g, const std::vector<int64_t>& p) {
  Csr h;
  h.rows = g.rows;
  h.cols = g.cols;
  h.rowptr.assign(1, 0);
  h.colind.reserve(g.colind.size());
  for (const int64_t r : p) {
    for (int64_t e = g.rowptr[static_cast<size_t>(r)]; e < g.rowptr[static_cast<size_t>(r) + 1]; ++e)
      h.colind.push_back(g.colind[static_cast<size_t>(e)]);
    h.rowptr.push_back(static_cast<int64_t>(h.colind.size()));
  }
  return h;
}

double bytes_ratio(const cuda::TcFormatSize& z, int64_t nnz, int64_t F) {
  const double n = static_cast<double>(nnz);
  const double csr = n * 6.0 + n * static_cast<double>(F) * 2.0;
  const double tc = static_cast<double>(z.blocks) * (cuda::kTcTileValues * 2 + cuda::kTcBlockCols * 4) +
                    static_cast<double>(z.slot_columns) * static_cast<double>(F) * 2.0 + n * 12.0;
  return tc / csr;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> graphs(argv + 1, argv + argc);
  if (graphs.empty()) graphs = {"rmat:20:16", "chunglu:1000000:16:2.2", "er:200000:2e-5", "mesh2d:1024:1024:0"};
  std::printf("| graph | rows | entries | order | slot columns / entry | tile fill | bytes / CSR's, F 32 | "
              "F 64 | order + model s |\n|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
  for (const std::string& spec : graphs) {
    GenOptions gen;
    gen.pattern = true;
    const Csr g = spec.find(".mtx") != std::string::npos ? load_graph<int64_t, float>(spec)
                                                         : generate<int64_t, float>(spec, gen);
    const int64_t nnz = g.nnz();
    if (nnz == 0) continue;
    std::string name = spec.substr(spec.find_last_of('/') + 1);
    for (const char* how : {"natural", "degree", "minhash", "degree-minhash"}) {
      const auto t0 = std::chrono::steady_clock::now();
      const Csr h = permute_rows(g, order(g, how));
      const cuda::TcFormatSize z = cuda::tc_format_size(h.rowptr, h.colind, h.rows);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("| %s | %lld | %lld | %s | %.3f | %.3f | %.2f | %.2f | %.1f |\n", name.c_str(),
                  static_cast<long long>(g.rows), static_cast<long long>(nnz), how,
                  static_cast<double>(z.slot_columns) / static_cast<double>(nnz),
                  static_cast<double>(nnz) / (static_cast<double>(z.blocks) * cuda::kTcTileValues),
                  bytes_ratio(z, nnz, 32), bytes_ratio(z, nnz, 64), secs);
      std::fflush(stdout);
    }
  }
  return 0;
}
