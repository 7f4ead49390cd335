// SPDX-License-Identifier: Apache-2.0
// The communication volume of the 1-D row partition as a function of the rank count, from the
// model alone (dist::predict_halo on a host CSR; no MPI, no ranks): what a DistCsr built with
// partition_rows_by_entries sends per call. The MPI tests check that the measured halo equals
// this prediction byte for byte at P = 1..4, so the model can be read at any P on one process.
//   dist_halo_model [--F N] [--bytes 4|8] [--ranks 1,2,4,...] [--metis] GRAPH...
// --metis adds the halo of dist::partition_metis's partition (the matrix relabelled by part) next
// to the contiguous one (a build with METIS; square matrices).
// One Markdown row per (graph, P): halo rows and bytes per call, the largest rank's share, and the
// halo a rank receives over its compulsory local traffic (its rowptr, columns and values read
// once, its own B rows read once, its C rows written once; int32 indices): for the rank where that
// is largest and over all ranks together. Past about 1 the exchange, not the kernel, sets a
// call's time (an NVLink or network link moves bytes 10-30x slower than HBM).
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
  bool metis = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--F" && i + 1 < argc)
      F = std::atoll(argv[++i]);
    else if (a == "--bytes" && i + 1 < argc)
      vbytes = std::atoll(argv[++i]);
    else if (a == "--ranks" && i + 1 < argc)
      ranks = parse_ranks(argv[++i]);
    else if (a == "--metis")
      metis = true;
    else
      graphs.push_back(a);
  }
  if (graphs.empty()) {
    std::fprintf(stderr, "usage: dist_halo_model [--F N] [--bytes 4|8] [--ranks 1,2,4] GRAPH...\n");
    return 2;
  }
  std::printf("| graph | rows | nnz | P | halo rows / call | halo MB / call (F = %lld) | max rank sends MB | max rank "
              "receives MB | halo / local traffic (max rank) | halo / local traffic (all ranks) |%s\n",
              static_cast<long long>(F), metis ? " METIS halo MB / call | METIS / contiguous |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", metis ? "---:|---:|" : "");
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
      double worst_ratio = 0, halo_all = 0, local_all = 0;
      const double row_bytes = static_cast<double>(F * vbytes);
      for (int r = 0; r < p; ++r) {
        max_send = std::max(max_send, h.sent_rows(r));
        max_recv = std::max(max_recv, h.received_rows(r));
        const auto r0 = static_cast<size_t>(part.row_starts[static_cast<size_t>(r)]);
        const auto r1 = static_cast<size_t>(part.row_starts[static_cast<size_t>(r) + 1]);
        const auto entries = static_cast<double>(a.rowptr[r1] - a.rowptr[r0]);
        const double local = static_cast<double>(part.rows_of(r) + 1) * 4 + entries * (4 + static_cast<double>(vbytes)) +
                             static_cast<double>(part.cols_of(r) + part.rows_of(r)) * row_bytes;
        const double halo = static_cast<double>(h.received_rows(r)) * row_bytes;
        worst_ratio = std::max(worst_ratio, halo / local);
        halo_all += halo;
        local_all += local;
      }
      const double mb = 1e-6 * static_cast<double>(F * vbytes);
      std::printf("| %s | %lld | %lld | %d | %lld | %.2f | %.2f | %.2f | %.2f | %.2f |", g.c_str(),
                  static_cast<long long>(a.rows), static_cast<long long>(a.nnz()), p,
                  static_cast<long long>(h.total_rows()), static_cast<double>(h.total_rows()) * mb,
                  static_cast<double>(max_send) * mb, static_cast<double>(max_recv) * mb, worst_ratio, halo_all / local_all);
      if (metis) {
        const dist::Relabelled r = dist::partition_metis(v, p);
        const HostCsr<int64_t, float> pa = dist::permute_symmetric(a, r.perm);
        const dist::HaloVolume hm = dist::predict_halo(pa.view(), r.partition);
        std::printf(" %.2f | %.3f |", static_cast<double>(hm.total_rows()) * mb,
                    h.total_rows() > 0 ? static_cast<double>(hm.total_rows()) / static_cast<double>(h.total_rows()) : 1.0);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
