// SPDX-License-Identifier: Apache-2.0
// sddmm.team_rows: out[e] = A[e] * dot(X[row(e)], Y[col(e)]) for every entry e of A. Every output
// is its own, so on both kinds of space the work is split by entries, not by rows, and a hub row is
// shared like any other run of entries. (The variant keeps its name, which the plugin table, the
// logs and the benchmarks know it by; on a device space it no longer hands out rows.)
//
// Device spaces: a team thread takes a chunk of E consecutive entries (8 to 32, entries_per_chunk),
// finds the row of its first entry with one binary search of rowptr and walks the chunk as the host
// path walks its block, moving on a row at each row end (an empty row is an empty run); its vector
// lanes, at most kDotLanes, share each dot product across F. The first version gave a team thread a
// whole row, walked its entries one after the other and reduced each dot across up to 32 lanes: on
// an H200 (Kokkos 3.4, CUDA) it ran 114-139x slower than the cuda plugin's sddmm.nnz_balanced on
// rmat:18:16 (262k rows, ~4M entries, power-law: 29.4 against 0.21 ms at F = 32, 56.6 against 0.50 ms
// at F = 128), where a hub row of tens of thousands of entries was one team thread's serial loop,
// and 2-2.9x slower on mesh2d 1024x1024 (0.86 against 0.30 ms at F = 32), where the rows are even
// and the shuffles of a 32-lane reduction per entry were the cost. Not measured since the rewrite.
//
// Host spaces: blocks of equal nonzero counts, dots in vector registers.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Device spaces: the vector lanes of one dot product, at most (fewer where F is narrower:
// vector_length). A team thread works on one entry at a time, so a CUDA warp has 32 / lanes entries
// in flight, and each entry's reduction costs log2(lanes) + 1 shuffles (Kokkos broadcasts the sum):
// 4 at 8 lanes, where 32 lanes paid 6 for one entry a warp. 8 is the cuda plugin's group width
// (sddmm_nnz_balanced.cu, G = 8); with scalar loads a group reads 32 (float) or 64 (double)
// adjacent bytes of each row per step. Chosen by that argument, not measured on Kokkos.
constexpr int64_t kDotLanes = 8;

// Device spaces: entries per chunk, about 512 multiply-adds (E * F) and from 8 to 32 entries. A
// chunk pays one binary search of rowptr (log2(rows) dependent loads: 18 on rmat:18:16) and each of
// its entries about 2 F / lanes + 2 loads a lane, so the search is at most about a seventh of a
// chunk's loads (F <= 8) and less at wider F (a tenth at F = 32, 3% at F = 256); smaller chunks
// would search more, larger ones would leave a small matrix fewer team threads (84k entries at
// E = 16 are 5k of them). Not measured.
inline int64_t entries_per_chunk(int64_t f) {
  const int64_t e = f > 0 ? 512 / f : 32;
  return e < 8 ? 8 : e > 32 ? 32 : e;
}

template <class I, class V>
void team_rows(const sparseport_sddmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* x = detail::as<V>(args.x.data);
  const V* y = detail::as<V>(args.y.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t m = args.a.rows, f = args.x.cols, ldx = args.x.ld, ldy = args.y.ld, ldo = args.out.ld;
  if constexpr (!kDeviceMemory) {
    // Host spaces (common.hpp says why not the team shape there): blocks of equal nonzero counts
    // (every output is its own, so a row may be shared and a hub row is not one thread's), each
    // dot in vector registers (host_dot); X's row stays in cache along its row's nonzeros.
    const int64_t nnz = args.a.nnz, blocks = host_block_count(nnz);
    Kokkos::parallel_for(
        "sparseport::kokkos::sddmm.team_rows", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
          const int64_t z0 = host_split(nnz, b, blocks), z1 = host_split(nnz, b + 1, blocks);
          if (z0 >= z1) return;
          // The last row whose start is <= z0 holds z0 (empty rows before it share its start).
          int64_t e = z0;
          for (int64_t i = lower_bound(rp, m + 1, z0 + 1) - 1; e < z1; ++i) {
            const V* xi = x + i * ldx;
            const int64_t end = static_cast<int64_t>(rp[i + 1]) < z1 ? static_cast<int64_t>(rp[i + 1]) : z1;
            for (; e < end; ++e) {
              const V dot = host_dot(xi, y + static_cast<int64_t>(ci[e]) * ldy, f);
              out[e * ldo] = (av != nullptr ? av[e] : V(1)) * dot;
            }
          }
        });
    Kokkos::fence();
    return;
  }
  // Device spaces (the top of the file says why entries, not rows). A team thread's row search is
  // the host path's, and so is its walk: row i's run within the chunk ends at min(rp[i + 1], z1),
  // so an empty row is a run of none and the walk never passes row m - 1 (rp[m] = nnz >= z1).
  const int64_t nnz = args.a.nnz;
  if (nnz == 0 || m == 0) return;  // nothing to write (and no league of 0)
  const int64_t chunk = entries_per_chunk(f), chunks = (nnz + chunk - 1) / chunk;
  const int vl = vector_length(f < kDotLanes ? f : kDotLanes);
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const int64_t c0 = static_cast<int64_t>(t.league_rank()) * t.team_size();
    const int64_t c1 = c0 + t.team_size() < chunks ? c0 + t.team_size() : chunks;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, c0, c1), [&](const int64_t c) {
      const int64_t z0 = c * chunk, z1 = z0 + chunk < nnz ? z0 + chunk : nnz;
      // The last row whose start is <= z0 holds z0 (empty rows before it share its start).
      int64_t e = z0;
      for (int64_t i = lower_bound(rp, m + 1, z0 + 1) - 1; e < z1; ++i) {
        const V* xi = x + i * ldx;
        const int64_t end = static_cast<int64_t>(rp[i + 1]) < z1 ? static_cast<int64_t>(rp[i + 1]) : z1;
        for (; e < end; ++e) {
          const V* yj = y + static_cast<int64_t>(ci[e]) * ldy;
          V dot = V(0);  // F == 0: 0, as host_dot
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(t, f), [&](const int64_t k, V& s) { s += xi[k] * yj[k]; }, dot);
          Kokkos::single(Kokkos::PerThread(t), [&]() { out[e * ldo] = (av != nullptr ? av[e] : V(1)) * dot; });
        }
      }
    });
  };
  // One chunk a team thread, in teams of the size Kokkos recommends for this kernel (as spmm.cpp's
  // device kernels).
  const int ts = Policy(1, Kokkos::AUTO, vl).team_size_recommended(body, Kokkos::ParallelForTag());
  const int64_t league = (chunks + ts - 1) / ts;
  Kokkos::parallel_for("sparseport::kokkos::sddmm.team_rows", Policy(static_cast<int>(league), ts, vl), body);
  Kokkos::fence();
}

}  // namespace

void sddmm(const sparseport_sddmm_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
