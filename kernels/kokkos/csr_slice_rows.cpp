// SPDX-License-Identifier: Apache-2.0
// csr_slice_rows (two phases: row lengths and a parallel scan, then the rows copied by vector
// lanes) and its dense form (on a device: out zeroed by teams across each row, then each selected
// row's entries added by vector lanes, a run of repeated columns by one lane in storage order, so
// they add up in the reference's order). Host spaces: a row per iteration, dynamic chunks of 64
// rows, zeroed and scattered by plain loops.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Selected rows per dynamic chunk on host spaces (the openmp plugin's kRowChunk): rows differ in
// length, and 64 keeps the scheduling cost small against zeroing and filling 64 dense rows.
constexpr int64_t kRowChunk = 64;

// Columns of a row a team zeroes on a device (csr_slice_rows_dense): a few per thread of a team.
constexpr int64_t kFillCols = 2048;
constexpr int64_t kMaxLeague = int64_t{1} << 30;  // a league size is an int

template <class I, class V>
void slice_rows(const sparseport_slice_rows_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* pick = detail::as<I>(args.rows.data);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  const int64_t s = args.rows.n;
  if (args.phase == 0) {
    // Each length fits I; their sum (repeated rows) may not, so it is checked in int64 before the scan.
    int64_t total = 0;
    Kokkos::parallel_reduce(
        "sparseport::kokkos::csr_slice_rows.count", Range(0, s),
        KOKKOS_LAMBDA(const int64_t t, int64_t& sum) {
          const int64_t r = static_cast<int64_t>(pick[t]);
          orp[t + 1] = rp[r + 1] - rp[r];
          sum += static_cast<int64_t>(rp[r + 1] - rp[r]);
        },
        total);
    detail::check_result_fits<I>(total, "the selected rows hold");
    exclusive_scan_into(orp, s);
    return;
  }
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_slice_rows.copy", row_blocks(s, 32), KOKKOS_LAMBDA(const Member& team) {
        const int64_t t0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t t1 = t0 + kRowsPerTeam < s ? t0 + kRowsPerTeam : s;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, t0, t1), [&](const int64_t t) {
          const int64_t r = static_cast<int64_t>(pick[t]);
          const int64_t from = static_cast<int64_t>(rp[r]), to = static_cast<int64_t>(orp[t]);
          const int64_t n = static_cast<int64_t>(rp[r + 1]) - from;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, n), [&](const int64_t x) {
            oci[to + x] = ci[from + x];
            if (ov != nullptr) ov[to + x] = av[from + x];
          });
        });
      });
  Kokkos::fence();
}

template <class I, class V>
void slice_rows_dense(const sparseport_slice_rows_dense_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* pick = detail::as<I>(args.rows.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t s = args.rows.n, cols = args.out.cols, ld = args.out.ld;
  if constexpr (!kDeviceMemory) {
    // Host spaces: a selected row per iteration, handed out kRowChunk at a time (rows differ in
    // length), zeroed by a plain loop (a memset) and scattered while it is in cache; the team
    // shape zeroed it one element per vector-range step and scheduled 16-row blocks statically.
    HostBlocks policy(0, s);
    policy.set_chunk_size(kRowChunk);
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_slice_rows_dense", policy, KOKKOS_LAMBDA(const int64_t t) {
          V* ot = out + t * ld;  // only the first cols elements are ours; the padding is the caller's
          for (int64_t j = 0; j < cols; ++j) ot[j] = V(0);
          const int64_t r = static_cast<int64_t>(pick[t]);
          const int64_t e1 = static_cast<int64_t>(rp[r + 1]);
          if (av != nullptr)
            for (int64_t e = static_cast<int64_t>(rp[r]); e < e1; ++e) ot[static_cast<int64_t>(ci[e])] += av[e];
          else
            for (int64_t e = static_cast<int64_t>(rp[r]); e < e1; ++e) ot[static_cast<int64_t>(ci[e])] += V(1);
        });
    Kokkos::fence();
    return;
  }
  // Devices: out zeroed by teams of kFillCols columns of a row each (the whole space's width,
  // as the cuda plugin's dense_fill); zeroing each row by one team thread's lanes ran ceil(s / 16)
  // teams, so a few hundred selected rows of a graph of a million columns zeroed hundreds of MB on a
  // few dozen SMs: 0.125x the cuda plugin on rmat:18:16 and a 1024 x 1024 mesh (H200, 2026-12-04).
  const int64_t pieces = (cols + kFillCols - 1) / kFillCols, tiles = s * pieces;
  const int64_t league = tiles < kMaxLeague ? tiles : kMaxLeague;  // then each team takes several
  if (tiles > 0)
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_slice_rows_dense.zero", Policy(static_cast<int>(league), Kokkos::AUTO),
        KOKKOS_LAMBDA(const Member& team) {
          for (int64_t x = team.league_rank(); x < tiles; x += league) {
            const int64_t t = x / pieces, j0 = (x - t * pieces) * kFillCols;
            const int64_t j1 = j0 + kFillCols < cols ? j0 + kFillCols : cols;
            V* ot = out + t * ld;  // only the first cols elements are ours; the padding is the caller's
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, j0, j1), [&](const int64_t j) { ot[j] = V(0); });
          }
        });
  // Then a team thread a selected row, its lanes across the entries. A row whose columns do not go
  // down (every row of a sorted CSR) has its repeated columns next to each other: the lane at the
  // first of a run adds the run up from 0 in storage order, the reference's order and bits, and no
  // two lanes write one element. Other rows keep one lane in storage order (they were all that way
  // before: a hub row of 10^4 entries one lane's chain).
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_slice_rows_dense", row_blocks(s, 32), KOKKOS_LAMBDA(const Member& team) {
        const int64_t t0 = static_cast<int64_t>(team.league_rank()) * kRowsPerTeam;
        const int64_t t1 = t0 + kRowsPerTeam < s ? t0 + kRowsPerTeam : s;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, t0, t1), [&](const int64_t t) {
          V* ot = out + t * ld;
          const int64_t r = static_cast<int64_t>(pick[t]);
          const int64_t e0 = static_cast<int64_t>(rp[r]), e1 = static_cast<int64_t>(rp[r + 1]);
          int64_t down = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, e1 - e0),
              [&](const int64_t x, int64_t& d) { d += x > 0 && ci[e0 + x] < ci[e0 + x - 1] ? 1 : 0; }, down);
          if (down == 0) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, e1 - e0), [&](const int64_t x) {
              const int64_t e = e0 + x;
              if (x > 0 && ci[e - 1] == ci[e]) return;  // not the first of its run
              V acc = V(0);
              for (int64_t k = e; k < e1 && ci[k] == ci[e]; ++k) acc += av != nullptr ? av[k] : V(1);
              ot[static_cast<int64_t>(ci[e])] = acc;
            });
          } else {
            Kokkos::single(Kokkos::PerThread(team), [&]() {
              for (int64_t e = e0; e < e1; ++e) ot[static_cast<int64_t>(ci[e])] += av != nullptr ? av[e] : V(1);
            });
          }
        });
      });
  Kokkos::fence();
}

}  // namespace

void csr_slice_rows(const sparseport_slice_rows_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { slice_rows<I, V>(args); });
}

void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { slice_rows_dense<I, V>(args); });
}

}  // namespace sparseport::kokkos
