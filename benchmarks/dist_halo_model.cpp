// SPDX-License-Identifier: Apache-2.0
// The communication volume of the 1-D row partition as a function of the rank count, from the
// model alone (dist::predict_halo on a host CSR; no MPI, no ranks): what a DistCsr built with
// partition_rows_by_entries sends per call. The MPI tests check that the measured halo equals
// this prediction byte for byte at P = 1..4, so the model can be read at any P on one process.
//   dist_halo_model [--F N] [--bytes 4|8] [--ranks 1,2,4,...] GRAPH...
// One Markdown row per (graph, P): halo rows and bytes per call, the largest rank's share, the
// halo over the local traffic (the bytes each rank reads of its own B rows and writes of C), and
// the fraction of a rank's columns that are ghosts.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/graph.hpp"

namespace {

std::vector<int> parse_ranks(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sparseport;
  int64_t F = 64, vbytes = 4;
  std::vector<int> ranks = {1, 2, 4, 8, 16, 64, 256, 1024, 4096};
  std::vector<std::string> graphs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--F" && i + 1 < argc)
      F = std::atoll(argv[++i]);
    else if (a == "--bytes" && i + 1 < argc)
      vbytes = std::atoll(argv[++i]);
    else if (a == "--ranks" && i + 1 < argc)
      ranks = parse_ranks(argv[++i]);
    else
      graphs.push_back(a);
  }
  if (graphs.empty()) {
    std::fprintf(stderr, "usage: dist_halo_model [--F N] [--bytes 4|8] [--ranks 1,2,4] GRAPH...\n");
    return 2;
  }
  std::printf("| graph | rows | nnz | P | halo rows / call | halo MB / call (F = %lld) | max rank sends MB | max rank "
              "receives MB | halo / local bytes (max rank) | ghost columns / owned (max rank) |\n",
              static_cast<long long>(F));
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& g : graphs) {
    GenOptions gen;
    gen.pattern = true;
    const HostCsr<int64_t, float> a = g.find(".mtx") != std::string::npos ? load_graph<int64_t, float>(g)
                                                                           : generate<int64_t, float>(g, gen);
    const CsrView v = a.view();
    for (const int p : ranks) {
      if (p < 1 || p > a.rows) continue;
      const dist::Partition part = dist::partition_rows_by_entries(v, p);
      const dist::HaloVolume h = dist::predict_halo(v, part);
      int64_t max_send = 0, max_recv = 0;
      double worst_ratio = 0, worst_ghost = 0;
      for (int r = 0; r < p; ++r) {
        max_send = std::max(max_send, h.sent_rows(r));
        max_recv = std::max(max_recv, h.received_rows(r));
        // Local traffic of rank r: its own B rows read once and its C rows written once.
        const double local = static_cast<double>(part.cols_of(r) + part.rows_of(r)) * static_cast<double>(F * vbytes);
        const double halo = static_cast<double>(h.received_rows(r)) * static_cast<double>(F * vbytes);
        if (local > 0) worst_ratio = std::max(worst_ratio, halo / local);
        if (part.cols_of(r) > 0)
          worst_ghost = std::max(worst_ghost, static_cast<double>(h.received_rows(r)) / static_cast<double>(part.cols_of(r)));
      }
      const double mb = 1e-6 * static_cast<double>(F * vbytes);
      std::printf("| %s | %lld | %lld | %d | %lld | %.2f | %.2f | %.2f | %.2f | %.2f |\n", g.c_str(),
                  static_cast<long long>(a.rows), static_cast<long long>(a.nnz()), p,
                  static_cast<long long>(h.total_rows()), static_cast<double>(h.total_rows()) * mb,
                  static_cast<double>(max_send) * mb, static_cast<double>(max_recv) * mb, worst_ratio, worst_ghost);
      std::fflush(stdout);
    }
  }
  return 0;
}
