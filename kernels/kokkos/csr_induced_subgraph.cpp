// SPDX-License-Identifier: Apache-2.0
// csr_induced_subgraph: a vertex map (A.rows entries, -1 where a vertex is not selected) built in
// each phase (the plugin keeps no state between the two calls) in the ops' workspace; phase 0 counts
// the kept entries of each selected row and scans, phase 1 writes them relabelled in A's order (a
// row per thread on host spaces, per team thread with its lanes on a device).
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
void induced_subgraph(const sparseport_induced_subgraph_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* vert = detail::as<I>(args.vertices.data);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  const int64_t s = args.vertices.n;
  // The map lives in the ops' workspace (common.hpp): a View per phase was an allocation, a fill
  // behind a fence and a synchronising free, twice a subgraph.
  OpWorkspace& w = op_workspace();
  std::lock_guard<std::mutex> guard(w.lock);
  hook_op_workspace(w);
  int64_t* local = grown(w.map, static_cast<size_t>(args.a.rows), "sparseport::kokkos::map");
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_induced_subgraph.unmapped", Range(0, args.a.rows),
      KOKKOS_LAMBDA(const int64_t v) { local[v] = -1; });
  // Vertices are distinct, so no two writes meet.
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_induced_subgraph.map", Range(0, s),
      KOKKOS_LAMBDA(const int64_t t) { local[static_cast<int64_t>(vert[t])] = t; });
  if (args.phase == 0) {
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_induced_subgraph.count", row_blocks(s, 32), KOKKOS_LAMBDA(const Member& team) {
          const int64_t t0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
          const int64_t t1 = t0 + kRowsPerTeam < s ? t0 + kRowsPerTeam : s;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, t0, t1), [&](const int64_t t) {
            const int64_t r = static_cast<int64_t>(vert[t]);
            I kept = 0;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, static_cast<int64_t>(rp[r + 1] - rp[r])),
                [&](const int64_t x, I& n) { n += local[static_cast<int64_t>(ci[rp[r] + x])] >= 0 ? 1 : 0; }, kept);
            Kokkos::single(Kokkos::PerThread(team), [&]() { orp[t + 1] = kept; });
          });
        });
    Kokkos::fence();
    int64_t total = 0;  // checked in int64 before the scan stores it in rowptr
    Kokkos::parallel_reduce(
        "sparseport::kokkos::csr_induced_subgraph.total", Range(0, s),
        KOKKOS_LAMBDA(const int64_t t, int64_t& sum) { sum += static_cast<int64_t>(orp[t + 1]); }, total);
    detail::check_result_fits<I>(total, "the induced subgraph holds");
    exclusive_scan_into(orp, s);
    return;
  }
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  if constexpr (!kDeviceMemory) {
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_induced_subgraph.fill", Range(0, s), KOKKOS_LAMBDA(const int64_t t) {
          const int64_t r = static_cast<int64_t>(vert[t]);
          int64_t o = static_cast<int64_t>(orp[t]);
          for (int64_t e = static_cast<int64_t>(rp[r]); e < static_cast<int64_t>(rp[r + 1]); ++e) {
            const int64_t c = local[static_cast<int64_t>(ci[e])];
            if (c < 0) continue;
            oci[o] = static_cast<I>(c);
            if (ov != nullptr) ov[o] = av[e];
            ++o;
          }
        });
    Kokkos::fence();
    return;
  }
  // Devices: a team thread a selected row, its lanes across the entries, each kept entry's place
  // from a scan over the lanes (A's order, as on the host): one thread's serial walk of a row, as
  // on the host, left a hub row one thread's chain and its loads one lane wide.
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_induced_subgraph.fill", row_blocks(s, 32), KOKKOS_LAMBDA(const Member& team) {
        const int64_t t0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t t1 = t0 + kRowsPerTeam < s ? t0 + kRowsPerTeam : s;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, t0, t1), [&](const int64_t t) {
          const int64_t r = static_cast<int64_t>(vert[t]);
          const int64_t e0 = static_cast<int64_t>(rp[r]), o = static_cast<int64_t>(orp[t]);
          Kokkos::parallel_scan(Kokkos::ThreadVectorRange(team, static_cast<int64_t>(rp[r + 1]) - e0),
                                [&](const int64_t x, int64_t& at, const bool final) {
                                  const int64_t c = local[static_cast<int64_t>(ci[e0 + x])];
                                  if (c < 0) return;
                                  if (final) {
                                    oci[o + at] = static_cast<I>(c);
                                    if (ov != nullptr) ov[o + at] = av[e0 + x];
                                  }
                                  at += 1;
                                });
        });
      });
  Kokkos::fence();
}

}  // namespace

void csr_induced_subgraph(const sparseport_induced_subgraph_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { induced_subgraph<I, V>(args); });
}

}  // namespace sparseport::kokkos
