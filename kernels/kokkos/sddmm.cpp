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
// Host spaces: blocks of equal nonzero counts, dots in vector registers, their lane sums 8 entries
// at a time, Y's rows prefetched 16 entries ahead (team_rows_host).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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

// Host spaces: lane j of s = host_dot's lane sum of a[j] (0 + a[j][0] + ... + a[j][7], in that
// order), for 8 dots at once: the 8 x 8 values transposed in three rounds of two-vector shuffles
// (24 shuffles), then 8 vector adds, where host_dot pays 7 lane extracts and 8 scalar adds a dot.
// Without prefetching on either side (Intel 2-vCPU VM, 17 shared graphs, two runs each), kokkos/openmp
// geomean went from 0.99 / 0.96 to 1.07 / 1.07 at F = 32 (bcsstk16: 0.65 to 0.58 ms; mdual: 8.8-9.2
// to 5.7-7.7) and from 0.95 / 0.89 to 0.96 / 0.94 at F = 128.
template <class V, class Vec>
inline void host_lane_sums8(const Vec* a, Vec& s) {
#if defined(__CUDACC__)
  // nvcc's front end takes no initialiser of a vector type's lanes (the masks below). A CUDA build
  // never runs this host path (kDeviceMemory): the same sums, lane by lane.
  for (int j = 0; j < 8; ++j) {
    V t = V(0);
    for (int l = 0; l < 8; ++l) t += a[j][l];
    s[j] = t;
  }
#else
  using M = std::conditional_t<sizeof(V) == 4, int32_t, int64_t>;
  typedef M Mask __attribute__((vector_size(8 * sizeof(V))));
  const Mask even = {0, 8, 2, 10, 4, 12, 6, 14}, odd = {1, 9, 3, 11, 5, 13, 7, 15};
  const Mask lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
  const Mask lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
  Vec u[8], w[8];
  for (int p = 0; p < 4; ++p) {
    u[2 * p] = __builtin_shuffle(a[2 * p], a[2 * p + 1], even);    // lanes 0 2 4 6 of a pair
    u[2 * p + 1] = __builtin_shuffle(a[2 * p], a[2 * p + 1], odd);  // lanes 1 3 5 7
  }
  for (int h = 0; h < 2; ++h) {  // a[0..3], a[4..7]
    w[4 * h + 0] = __builtin_shuffle(u[4 * h], u[4 * h + 2], lo2);      // lanes 0, 4
    w[4 * h + 1] = __builtin_shuffle(u[4 * h + 1], u[4 * h + 3], lo2);  // lanes 1, 5
    w[4 * h + 2] = __builtin_shuffle(u[4 * h], u[4 * h + 2], hi2);      // lanes 2, 6
    w[4 * h + 3] = __builtin_shuffle(u[4 * h + 1], u[4 * h + 3], hi2);  // lanes 3, 7
  }
  Vec t = {};
  for (int l = 0; l < 4; ++l) t += __builtin_shuffle(w[l], w[4 + l], lo4);  // lanes 0 1 2 3
  for (int l = 0; l < 4; ++l) t += __builtin_shuffle(w[l], w[4 + l], hi4);  // lanes 4 5 6 7
  s = t;
#endif
}

// Host spaces: entries [z0, z1) of each of `blocks` equal blocks, handed out dynamically.
// kLines (team_rows_host_lines): the cache lines of Y's row prefetched kHostPrefetch entries ahead,
// a constant, the prefetch written out in the lambda (common.hpp's host_message_tile says why not in
// a helper; objdump shows prefetcht0 here). Where Y fits in L2 the kernel is bound by instructions
// per entry, not by memory: one dot at a time, bcsstk16 at F = 32 took 0.66 ms without prefetching,
// 0.83 with a loop over the row's lines, 0.74 with one line, and 0.72 with the prefetch's index load
// and bound check alone (never prefetching).
// kBatch8 (F % 8 == 0): the dots' lane sums 8 entries at a time (host_lane_sums8), otherwise
// host_dot one by one. Both give every output host_dot's bits (checked bit for bit against the
// one-by-one kernel: float and double, F = 5 to 128, weighted or not, ld of out 1 or 3).
// Blocks: host_block_count rounded down to a multiple of the threads, as every entry costs about
// the same: power-grid's 13k entries made 3 blocks for 2 threads, 0.83x the openmp plugin at
// F = 128 (146 against 113 us once rounded).
template <int kLines, bool kBatch8, class I, class V>
void team_rows_host(const I* rp, const I* ci, const V* av, const V* x, const V* y, V* out, int64_t m, int64_t nnz,
                    int64_t f, int64_t ldx, int64_t ldy, int64_t ldo) {
  const int64_t t = host_threads(), blocks = host_block_count(nnz) / t * t;
  Kokkos::parallel_for(
      "sparseport::kokkos::sddmm.team_rows", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
        typedef V Vec __attribute__((vector_size(8 * sizeof(V))));
        const int64_t z0 = host_split(nnz, b, blocks), z1 = host_split(nnz, b + 1, blocks);
        if (z0 >= z1) return;
        Vec acc[8];  // kBatch8: the dots of the last k entries, lanes not yet summed
        int k = 0;
        // The last row whose start is <= z0 holds z0 (empty rows before it share its start).
        int64_t e = z0;
        for (int64_t i = lower_bound(rp, m + 1, z0 + 1) - 1; e < z1; ++i) {
          const V* xi = x + i * ldx;
          const int64_t end = static_cast<int64_t>(rp[i + 1]) < z1 ? static_cast<int64_t>(rp[i + 1]) : z1;
          for (; e < end; ++e) {
            if (e + kHostPrefetch < nnz) {
              const char* r = reinterpret_cast<const char*>(y + static_cast<int64_t>(ci[e + kHostPrefetch]) * ldy);
              for (int c = 0; c < kLines; ++c) __builtin_prefetch(r + 64 * c);
            }
            const V* yj = y + static_cast<int64_t>(ci[e]) * ldy;
            if (kBatch8) {  // not if constexpr: nvcc's extended lambdas may not first-capture there
              (void)host_dot_lanes(xi, yj, f, acc[k]);  // f % 8 == 0: it takes all f
              if (++k == 8) {
                Vec d;
                host_lane_sums8<V>(acc, d);
                const int64_t e0 = e - 7;
                if (av != nullptr) {  // av[e] * dot, as below (and 1 * dot is dot)
                  Vec w;
                  __builtin_memcpy(&w, av + e0, sizeof w);
                  d = w * d;
                }
                if (ldo == 1)
                  __builtin_memcpy(out + e0, &d, sizeof d);
                else
                  for (int j = 0; j < 8; ++j) out[(e0 + j) * ldo] = d[j];
                k = 0;
              }
            } else {
              out[e * ldo] = (av != nullptr ? av[e] : V(1)) * host_dot(xi, yj, f);
            }
          }
        }
        if (kBatch8) {
          for (int j = 0; j < k; ++j) {  // the block's last (z1 - z0) % 8 entries: host_dot's lane sum
            V d = V(0);
            for (int l = 0; l < 8; ++l) d += acc[j][l];
            const int64_t ej = z1 - k + j;
            out[ej * ldo] = (av != nullptr ? av[ej] : V(1)) * d;
          }
        }
      });
}

// Host spaces: how many cache lines of Y's row team_rows_host prefetches, for the entry
// kHostPrefetch (16, the openmp plugin's kPrefetchDistance) ahead: the whole row up to 8 lines (512
// bytes, a float row at F = 128; the openmp plugin's prefetch_row stops at 256), rounded up to 1, 2,
// 4 or 8 (a line past a short row is prefetched for nothing, never read); none at F = 0. Intel
// 2-vCPU VM, 17 shared graphs, kokkos/openmp geomean at F = 128: 1.07 / 1.06 with up to 8 lines,
// 1.00 / 1.02 with up to 4 (two runs each, 2026-12-05-cpu-kokkos-openmp-sddmm.md). At F = 32 (2
// lines) prefetching cost 7-10 % where Y sits in L2 (bcsstk13, bcsstk16) and gained as much where it
// does not (4elt, wing, mdual, email-Enron); a gate (prefetch only where Y is over 4 MiB or its rows
// 256 bytes or more) came out even with always prefetching (1.05 / 1.06 against 1.06 / 1.05 at
// F = 32), so there is none.
template <bool kBatch8, class I, class V>
void team_rows_host_lines(int64_t row_bytes, const I* rp, const I* ci, const V* av, const V* x, const V* y, V* out,
                          int64_t m, int64_t nnz, int64_t f, int64_t ldx, int64_t ldy, int64_t ldo) {
  if (row_bytes == 0)
    team_rows_host<0, kBatch8>(rp, ci, av, x, y, out, m, nnz, f, ldx, ldy, ldo);
  else if (row_bytes <= 64)
    team_rows_host<1, kBatch8>(rp, ci, av, x, y, out, m, nnz, f, ldx, ldy, ldo);
  else if (row_bytes <= 128)
    team_rows_host<2, kBatch8>(rp, ci, av, x, y, out, m, nnz, f, ldx, ldy, ldo);
  else if (row_bytes <= 256)
    team_rows_host<4, kBatch8>(rp, ci, av, x, y, out, m, nnz, f, ldx, ldy, ldo);
  else
    team_rows_host<8, kBatch8>(rp, ci, av, x, y, out, m, nnz, f, ldx, ldy, ldo);
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
    // dot in vector registers (host_dot); X's row stays in cache along its row's nonzeros, Y's rows
    // are prefetched (team_rows_host).
    const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));
    if (f % 8 == 0)
      team_rows_host_lines<true>(row_bytes, rp, ci, av, x, y, out, m, args.a.nnz, f, ldx, ldy, ldo);
    else
      team_rows_host_lines<false>(row_bytes, rp, ci, av, x, y, out, m, args.a.nnz, f, ldx, ldy, ldo);
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
  end_op();
}

}  // namespace

void sddmm(const sparseport_sddmm_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { team_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
