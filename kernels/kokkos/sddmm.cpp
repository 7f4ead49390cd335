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
// and the shuffles of a 32-lane reduction per entry were the cost. Since the rewrite (H200,
// 2026-12-04): rmat:18:16 0.65 ms at F = 32 (45x faster; 0.33x the cuda plugin's 0.21) and 1.16 at
// F = 128 (0.43x of 0.50); mesh2d 0.62 ms at F = 32 (0.49x), 1.78 at F = 128 (0.38x; 1.38 before).
//
// Host spaces: blocks of equal nonzero counts, dots in vector registers.
#include <cstdint>
#include <cstdlib>
#include <cstring>

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

// SPARSEPORT_KOKKOS_WIDE=0 keeps the scalar dots (as it keeps spmm's scalar kernels: an A/B of the
// 16-byte loads in one process).
inline bool wide_dots() {
  const char* v = std::getenv("SPARSEPORT_KOKKOS_WIDE");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

// Device spaces (the top of the file says why entries, not rows). A team thread's row search is the
// host path's, and so is its walk: row i's run within the chunk ends at min(rp[i + 1], z1), so an
// empty row is a run of none and the walk never passes row m - 1 (rp[m] = nnz >= z1). W > 1: each
// lane loads W adjacent values of X's and Y's rows at once (Cols, 16 bytes), where F, the lds and
// the pointers allow: a quarter of the load instructions in float. On an H200 the scalar dots ran at
// 0.36-0.49x the cuda plugin's sddmm.nnz_balanced (mesh2d 1024 x 1024, 5M entries: 1.78 against
// 0.68 ms at F = 128, 0.62 against 0.30 at F = 32; rmat:18:16 0.33-0.43x), which moves each of Y's
// rows with float4 loads (2026-12-04). The width groups a dot's sum differently, so the bits are
// those of the same operands at the same 16-byte alignment (as spmm.team_rows's; both are flagged
// deterministic).
template <int W, class I, class V>
void team_rows_device(const I* rp, const I* ci, const V* av, const V* x, const V* y, V* out, int64_t m, int64_t nnz,
                      int64_t f, int64_t ldx, int64_t ldy, int64_t ldo) {
  const int64_t chunk = entries_per_chunk(f), chunks = (nnz + chunk - 1) / chunk, fw = f / W;
  const int vl = vector_length(fw < kDotLanes ? fw : kDotLanes);
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const int64_t c0 = static_cast<int64_t>(t.league_rank()) * t.team_size();
    const int64_t c1 = c0 + t.team_size() < chunks ? c0 + t.team_size() : chunks;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, c0, c1), [&](const int64_t c) {
      const int64_t z0 = c * chunk, z1 = z0 + chunk < nnz ? z0 + chunk : nnz;
      // The last row whose start is <= z0 holds z0 (empty rows before it share its start).
      int64_t e = z0;
      for (int64_t i = lower_bound(rp, m + 1, z0 + 1) - 1; e < z1; ++i) {
        const auto* xi = reinterpret_cast<const Cols<V, W>*>(x + i * ldx);
        const int64_t end = static_cast<int64_t>(rp[i + 1]) < z1 ? static_cast<int64_t>(rp[i + 1]) : z1;
        for (; e < end; ++e) {
          const auto* yj = reinterpret_cast<const Cols<V, W>*>(y + static_cast<int64_t>(ci[e]) * ldy);
          V dot = V(0);  // F == 0: 0, as host_dot
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(t, fw),
              [&](const int64_t k, V& s) {
                const Cols<V, W> a = xi[k], b = yj[k];
                for (int w = 0; w < W; ++w) s += a.v[w] * b.v[w];
              },
              dot);
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
  if (args.a.nnz == 0 || m == 0) return;  // nothing to write (and no league of 0)
  constexpr int W = static_cast<int>(16 / sizeof(V));
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if (f % W == 0 && ldx % W == 0 && ldy % W == 0 && aligned && wide_dots())
    team_rows_device<W>(rp, ci, av, x, y, out, m, args.a.nnz, f, ldx, ldy, ldo);
  else
    team_rows_device<1>(rp, ci, av, x, y, out, m, args.a.nnz, f, ldx, ldy, ldo);
  Kokkos::fence();
}

}  // namespace

void sddmm(const sparseport_sddmm_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
