// SPDX-License-Identifier: Apache-2.0
// csr_attention.onepass: one pass over a row's entries with an online softmax (the running maximum
// rescales what was summed so far), so no nnz-long score buffer is needed.
//
// Device spaces: work items of at most T entries (chunk_length), a team thread each, vector lanes
// across F for each score (a reduction) and across Fv for the weighted V rows. A row of up to T
// entries is one item and sums straight into its output row, which the op overwrites anyway. A
// longer row (a hub) is cut into items of T entries that each keep their own softmax state (the
// maximum m_p, the sum z_p of exp(s - m_p), the partial output o_p) in a workspace, and a second
// kernel merges a hub's items in item order as split-K / FlashDecoding do (m = max m_p, z = sum
// z_p exp(m_p - m), out = sum o_p exp(m_p - m) / z). The first version gave every row one team
// thread: on an H200 (Kokkos 3.4, CUDA, 2026-12-04) it ran 107-143x slower than the cuda plugin's
// csr_attention.fused on rmat:18:16 (262k rows, ~4M entries, power-law: 37.1 against 0.34 ms at
// F = 32, 105 against 0.73 ms at F = 128), where a hub row of tens of thousands of entries was one
// team thread's serial loop while the rest of the GPU idled. Since the rewrite (H200, 2026-12-04):
// 1.06 ms at F = 32 (35x faster; 0.33x the cuda plugin's 0.35) and 2.52 at F = 128 (0.29x of 0.74).
// The hub list is a plan (kept in the backend's plan cache, as spmm.hub_split's; a stale plan costs
// balance, never correctness, see hubs.hpp). No atomics, and the partition depends only on rowptr
// (T on nnz and rows alone), so the bits change neither from run to run nor with the launch shape
// or the device's size: the variant stays flagged deterministic.
//
// Host spaces: blocks of whole rows balanced on rows + nonzeros, scores in batches of 32 as dots in
// vector registers with K and V rows prefetched (up to 512 bytes each), one rescale per batch that
// raises the maximum, a batch's weighted V rows summed in register tiles of the output row
// (host_v_batch). Those two: 0.84x -> 0.94-0.97x the openmp plugin's best at F = 128, 0.96x ->
// 1.03-1.07x at F = 32 (Intel 2-core VM, 17 graphs, 2026-12-05-cpu-kokkos-openmp-attention.md).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#include "backends/kokkos/runtime.hpp"
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/hubs.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// Host spaces: entries scored per online-softmax batch (the openmp plugin's onepass: a rescale of
// the output row only when a batch raises the maximum), and how far ahead a K row is prefetched
// (the openmp plugin's kPrefetchDistance: gathered rows, out of order execution alone does not
// reach the next row's loads across the dot, the exps and the V sum).
constexpr int kBatch = 32;
constexpr int64_t kPrefetch = 16;

// Prefetches the first min(n values, kPrefetchBytes) of a row, a cache line at a time (host only).
// 512 bytes: a whole row at F = 128 in float; 256 (the openmp plugin's cap) left half of each K and V
// row to the demand loads, ~2 % slower on cit-HepPh at F = 128 and within noise elsewhere. g++ 12
// -O3 keeps these prefetches in this helper here (objdump: 16 a kernel), unlike in common.hpp's
// tiles (3be4420).
constexpr int64_t kPrefetchBytes = 512;
template <class V>
inline void prefetch_row(const V* p, int64_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = n * static_cast<int64_t>(sizeof(V)) < kPrefetchBytes ? n * static_cast<int64_t>(sizeof(V)) : kPrefetchBytes;
  for (int64_t x = 0; x < bytes; x += 64) __builtin_prefetch(c + x);
}

// Host spaces: a batch's weighted V rows added into columns [j0, j0 + 8 NV) of the output row o in
// NV vectors of 8 values held in registers (the openmp plugin's reduce_rows tiles), the row loaded
// once a batch (times c first where the batch raised the maximum; zeros for a row's first batch)
// and stored once. The loop before read and wrote o for every entry: at F = 128 a store and two
// loads a vector an entry, where this takes one load (see onepass). Each column takes the same
// operations in the same order (o * c, then + w[t] * v[t] in entry order), so the same bits.
template <int NV, class I, class V>
inline void host_v_tile(V* o, int64_t j0, const V* v, int64_t ldv, const I* cols, const V* w, int nb, bool first,
                        bool rescale, V c) {
  typedef V Vec __attribute__((vector_size(8 * sizeof(V))));
  Vec acc[NV];
  if (first) {
    for (int k = 0; k < NV; ++k) acc[k] = Vec{};
  } else {
    for (int k = 0; k < NV; ++k) __builtin_memcpy(&acc[k], o + j0 + 8 * k, sizeof acc[k]);
    if (rescale)
      for (int k = 0; k < NV; ++k) acc[k] = acc[k] * c;
  }
  for (int t = 0; t < nb; ++t) {
    const V* x = v + static_cast<int64_t>(cols[t]) * ldv + j0;
    const V pt = w[t];
    for (int k = 0; k < NV; ++k) {
      Vec y;
      __builtin_memcpy(&y, x + 8 * k, sizeof y);
      acc[k] = acc[k] + pt * y;
    }
  }
  for (int k = 0; k < NV; ++k) __builtin_memcpy(o + j0 + 8 * k, &acc[k], sizeof acc[k]);
}

// All Fv columns of a batch: tiles of 64 columns where the build has AVX-512 (8 of its 32 vector
// registers; kHostWideTiles, as host_message_row), then 32, 16, 8, then one column at a time.
template <class I, class V>
inline void host_v_batch(V* o, int64_t fv, const V* v, int64_t ldv, const I* cols, const V* w, int nb, bool first,
                         bool rescale, V c) {
  int64_t j0 = 0;
  if constexpr (kHostWideTiles)
    for (; j0 + 64 <= fv; j0 += 64) host_v_tile<8>(o, j0, v, ldv, cols, w, nb, first, rescale, c);
  for (; j0 + 32 <= fv; j0 += 32) host_v_tile<4>(o, j0, v, ldv, cols, w, nb, first, rescale, c);
  if (j0 + 16 <= fv) host_v_tile<2>(o, j0, v, ldv, cols, w, nb, first, rescale, c), j0 += 16;
  if (j0 + 8 <= fv) host_v_tile<1>(o, j0, v, ldv, cols, w, nb, first, rescale, c), j0 += 8;
  for (; j0 < fv; ++j0) {
    V a = first ? V(0) : (rescale ? o[j0] * c : o[j0]);
    for (int t = 0; t < nb; ++t) a = a + w[t] * v[static_cast<int64_t>(cols[t]) * ldv + j0];
    o[j0] = a;
  }
}

// ---- device spaces: work items ----------------------------------------------------------------

// T, the most entries a work item holds: the smallest length that cuts the entries into about
// kChunks items (2^15: kWaves = 4 items per worker of spmm.hub_split's chunk_length, whose workers
// are an H200's 8448 groups of 32 lanes), so that no item holds more than about a quarter of a
// worker's fair share and the worker that draws the longest one finishes near the others. A
// constant, not the device's worker count, and no SPARSEPORT_HUB_T: the variant is flagged
// deterministic, and T decides how a hub's sums are grouped, so it depends on the matrix alone
// (the cuda plugin's deterministic mode fixes its partition the same way). Never below kMinChunk:
// a split row writes and reads back Fv + 2 values per item on top of the item's T x (F + Fv)
// gathered ones, which T >= 32 keeps under 1/32 of them. Never below kHubMeanMultiple x the mean
// row (spmm.hub_split's floor, the cuda plugin's mean_floor): a row a few times the mean does not
// unbalance the workers and is not worth a merge. rmat:18:16 (~4 M entries): T = about 128, and
// each of its hubs of tens of thousands of entries becomes hundreds of items.
constexpr int64_t kChunks = int64_t{1} << 15;
constexpr int64_t kMinChunk = 32;
constexpr int64_t kHubMeanMultiple = 4;

inline int64_t chunk_length(int64_t nnz, int64_t rows) {
  const int64_t per_chunk = (nnz + kChunks - 1) / kChunks;
  return std::max({kMinChunk, per_chunk, kHubMeanMultiple * (nnz / std::max<int64_t>(rows, 1))});
}

// Hub h's partial states are the workspace slots [off[h] + h, off[h + 1] + h + 1) of its plan
// (hubs.hpp), in item order: item k of the hub (0: its row's first chunk) is slot off[h] + h + k.

// The partial states of the hubs' items (o_p: Fv values a slot, then m_p and z_p), reused from
// call to call and grown by half again when too small, as spmm.hub_split's scratch (a cudaMalloc
// per call would synchronise and cost more than the kernels on small inputs). Every slot a call
// merges is written by that call first, so nothing needs initialising. One mutex serialises the
// calls that use it; freed by a Kokkos finalize hook (a View must not outlive Kokkos); never
// destroyed (spmm.cpp's Workspace says why).
struct Workspace {
  std::mutex lock;
  bool hooked = false;
  Kokkos::View<double*, MemSpace> partials;  // double: aligned for float and double alike
};

Workspace& workspace() {
  static Workspace* w = new Workspace;
  return *w;
}

void hook(Workspace& w) {
  if (w.hooked) return;
  Kokkos::push_finalize_hook([] {
    Workspace& ws = workspace();
    std::lock_guard<std::mutex> guard(ws.lock);
    ws.partials = {};
    ws.hooked = false;
  });
  w.hooked = true;
}

// Where a work item's result goes: kWholeRow, the whole row into out; a slot >= 0, a hub's item into
// the workspace (an item past a shrunk hub's end, or of a listed row no longer above T, is empty and
// writes m_p = -inf, z_p = 0, o_p = 0: it weighs nothing, and the merge skips a row no longer above T).
constexpr int64_t kWholeRow = -1;
KOKKOS_INLINE_FUNCTION int64_t slot_of(const Hubs& h, const Chunk& c) {
  return c.hub < 0 ? kWholeRow : h.off[c.hub] + c.hub + c.k;
}

// Device spaces: the entries an item scores at once (kScoreBatch). Their K rows are loaded in one
// vector reduction (Dots: kScoreBatch sums, reduced across the lanes together) and their V rows in
// one pass over the output row, so a lane has kScoreBatch gathers of K and of V in flight where one
// entry at a time had one, and the output row is read and written once a batch, not once an entry.
// The arithmetic is the same, in the same order: each score is its own sum, and the softmax state
// and the output row take the batch's entries one after the other (so the bits of a row do not
// change with the batch). Before (an entry at a time): 0.22-0.39x the cuda plugin's
// csr_attention.fused on rmat:18:16 and mesh2d 1024 x 1024 at F = 32 and 128 (H200, 2026-12-04).
constexpr int kScoreBatch = 4;

// SPARSEPORT_KOKKOS_WIDE=0 keeps scalar loads (as for spmm and sddmm: an A/B in one process).
inline bool wide_rows() {
  const char* w = std::getenv("SPARSEPORT_KOKKOS_WIDE");
  return w == nullptr || std::strcmp(w, "0") != 0;
}

template <class V, int U>
struct Dots {
  V d[U];
  KOKKOS_INLINE_FUNCTION Dots() {
    for (int u = 0; u < U; ++u) d[u] = V(0);
  }
  KOKKOS_INLINE_FUNCTION Dots& operator+=(const Dots& o) {
    for (int u = 0; u < U; ++u) d[u] += o.d[u];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile Dots& o) volatile {
    for (int u = 0; u < U; ++u) d[u] += o.d[u];
  }
};

}  // namespace
}  // namespace sparseport::kokkos

// The zero of Dots for Kokkos's Sum (a vector reduction of a type of ours).
template <class V, int U>
struct Kokkos::reduction_identity<sparseport::kokkos::Dots<V, U>> {
  KOKKOS_FORCEINLINE_FUNCTION static sparseport::kokkos::Dots<V, U> sum() { return sparseport::kokkos::Dots<V, U>(); }
};

namespace sparseport::kokkos {
namespace {

// Device spaces: every item's softmax over its entries into out (a row of at most T entries) or its
// workspace slot (a hub's item), kScoreBatch entries at a time (above). W > 1: W adjacent values of
// Q, K, V and the output at once (Cols, 16 bytes), where F, Fv, the lds and the pointers allow. The
// width groups a score's sum differently, so the bits are those of the same operands at the same
// 16-byte alignment (as spmm.team_rows's, also flagged deterministic).
template <int W, class I, class V>
void walk_device(const I* rp, const I* ci, const V* q, const V* k, const V* v, V* out, V* po, V* pm, V* pz,
                 const Hubs& h, int64_t m, int64_t t, int64_t f, int64_t fv, int64_t ldq, int64_t ldk, int64_t ldv,
                 int64_t ldo, V scale) {
  constexpr int U = kScoreBatch;
  using C = Cols<V, W>;
  const V neg_inf = -std::numeric_limits<V>::infinity();
  const int64_t items = h.extra + m, fw = f / W, fvw = fv / W;
  const int vl = vector_length(fvw > fw ? fvw : fw);
  // A team thread per item, team_size() items a team, in teams of the size Kokkos recommends for
  // the kernel (as sddmm's and spmm's device kernels).
  const auto walk = KOKKOS_LAMBDA(const Member& team) {
    const int64_t x0 = static_cast<int64_t>(team.league_rank()) * team.team_size();
    const int64_t x1 = x0 + team.team_size() < items ? x0 + team.team_size() : items;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, x0, x1), [&](const int64_t x) {
      const Chunk c = chunk_of(rp, h, t, x);
      const int64_t slot = slot_of(h, c);
      C* acc = reinterpret_cast<C*>(slot == kWholeRow ? out + c.row * ldo : po + slot * fv);
      const C* qi = reinterpret_cast<const C*>(q + c.row * ldq);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, fvw), [&](const int64_t j) { acc[j] = C{}; });
      V top = neg_inf, z = V(0);
      for (int64_t e0 = c.eb; e0 < c.ee; e0 += U) {
        const int nu = c.ee - e0 < U ? static_cast<int>(c.ee - e0) : U;
        // A batch past the item's end repeats its first entry's rows (loaded, never used).
        const C* kr[U];
        const C* vr[U];
        for (int u = 0; u < U; ++u) {
          const int64_t col = static_cast<int64_t>(ci[u < nu ? e0 + u : e0]);
          kr[u] = reinterpret_cast<const C*>(k + col * ldk);
          vr[u] = reinterpret_cast<const C*>(v + col * ldv);
        }
        Dots<V, U> d;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(team, fw),
            [&](const int64_t y, Dots<V, U>& s) {
              const C a = qi[y];
              C b[U];
              for (int u = 0; u < U; ++u) b[u] = kr[u][y];
              for (int u = 0; u < U; ++u)
                for (int w = 0; w < W; ++w) s.d[u] += a.v[w] * b[u].v[w];
            },
            d);
        // Each item's softmax starts from m = -inf and guards the two places where -inf - -inf would
        // make a NaN (onepass says what that gives); a NaN never raises the maximum.
        V rescale[U], p[U];
        for (int u = 0; u < nu; ++u) {
          const V sc = scale * d.d[u];
          const V next = sc > top ? sc : top;
          rescale[u] = next == top ? V(1) : exp_of(top - next);
          p[u] = sc == neg_inf ? V(0) : exp_of(sc - next);
          z = z * rescale[u] + p[u];
          top = next;
        }
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, fvw), [&](const int64_t j) {
          C b[U];
          for (int u = 0; u < U; ++u) b[u] = vr[u][j];
          C a = acc[j];
          for (int u = 0; u < U; ++u)
            if (u < nu)
              for (int w = 0; w < W; ++w) a.v[w] = a.v[w] * rescale[u] + p[u] * b[u].v[w];
          acc[j] = a;
        });
      }
      if (slot == kWholeRow) {
        if (c.ee > c.eb)  // an empty row keeps its zeros
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, fvw), [&](const int64_t j) {
            C a = acc[j];
            for (int w = 0; w < W; ++w) a.v[w] = a.v[w] / z;
            acc[j] = a;
          });
      } else {
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          pm[slot] = top;
          pz[slot] = z;
        });
      }
    });
  };
  const int ts = Policy(1, Kokkos::AUTO, vl).team_size_recommended(walk, Kokkos::ParallelForTag());
  Kokkos::parallel_for("sparseport::kokkos::csr_attention.onepass",
                       Policy(static_cast<int>((items + ts - 1) / ts), ts, vl), walk);
}

template <class I, class V>
void onepass(const sparseport_attention_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* q = detail::as<V>(args.q.data);
  const V* k = detail::as<V>(args.k.data);
  const V* v = detail::as<V>(args.v.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t m = args.a.rows, f = args.q.cols, fv = args.out.cols;
  const int64_t ldq = args.q.ld, ldk = args.k.ld, ldv = args.v.ld, ldo = args.out.ld;
  const V scale = static_cast<V>(args.scale);
  if constexpr (!kDeviceMemory) {
    // Host spaces (common.hpp says why not the team shape there): blocks of whole rows of about
    // equal rows + nonzeros. Scores a batch of kBatch entries at a time, each a dot in vector
    // registers (host_dot), with the K row kPrefetch entries ahead and the batch's V rows
    // prefetched; the output row is rescaled once per batch that raises the maximum (not once
    // per entry), folded into host_v_batch's load of the row, which adds the batch's weighted V
    // rows in register tiles (a plain loop per entry before: the row loaded and stored per entry).
    const int64_t nnz = args.a.nnz, total = m + nnz, blocks = host_block_count(total);
    Kokkos::parallel_for(
        "sparseport::kokkos::csr_attention.onepass", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
          const int64_t r0 = host_row_at(rp, m, host_split(total, b, blocks));
          const int64_t r1 = host_row_at(rp, m, host_split(total, b + 1, blocks));
          V w[kBatch];
          for (int64_t i = r0; i < r1; ++i) {
            V* oi = out + i * ldo;
            const V* qi = q + i * ldq;
            const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
            if (end == begin)
              for (int64_t j = 0; j < fv; ++j) oi[j] = V(0);
            V top = V(0), z = V(0);
            for (int64_t e0 = begin; e0 < end; e0 += kBatch) {
              const int nb = static_cast<int>(end - e0 < kBatch ? end - e0 : kBatch);
              V bmx = V(0);
              for (int t = 0; t < nb; ++t) {
                const int64_t e = e0 + t;
                if (e + kPrefetch < nnz) prefetch_row(k + static_cast<int64_t>(ci[e + kPrefetch]) * ldk, f);
                const int64_t col = static_cast<int64_t>(ci[e]);
                prefetch_row(v + col * ldv, fv);
                w[t] = scale * host_dot(qi, k + col * ldk, f);
                // The first score sets the maximum; a NaN never raises it (and spreads through exp).
                bmx = t == 0 || w[t] > bmx ? w[t] : bmx;
              }
              bool rescale = false;
              V c = V(1);
              if (e0 == begin) {
                top = bmx;
              } else if (bmx > top) {
                c = exp_of(top - bmx);
                z = z * c;
                rescale = true;
                top = bmx;
              }
              for (int t = 0; t < nb; ++t) {
                w[t] = exp_of(w[t] - top);
                z = z + w[t];
              }
              host_v_batch(oi, fv, v, ldv, ci + e0, w, nb, e0 == begin, rescale, c);
            }
            if (end > begin)
              for (int64_t j = 0; j < fv; ++j) oi[j] = oi[j] / z;
          }
        });
    Kokkos::fence();
    return;
  }
  // Device spaces (the top of the file says why items of at most T entries). Each item's softmax
  // starts from m = -inf and guards the two places where -inf - -inf would make a NaN: a -inf score
  // weighs 0 and a maximum that does not move rescales by 1. So, as in the reference, -inf scores
  // weigh 0 wherever they stand, a row whose scores are all -inf gets z = 0 and 0 / 0 = NaN, a NaN
  // score never raises m and makes its weight, z and the row NaN, and a +inf score becomes m with
  // weight exp(inf - inf) = NaN. (The row-per-thread kernel before started from the first score,
  // so a first score of -inf among finite ones made the row NaN where the reference gives that key
  // weight 0; the operations are otherwise the same, so a row of at most T entries keeps its bits.)
  if (m == 0) return;  // no work items (and no league of 0)
  const int64_t nnz = args.a.nnz, t = chunk_length(nnz, m);
  // Held by this call: an invalidation from another thread cannot free the hub list under it.
  const std::shared_ptr<HubPlan> plan = hub_plan("csr_attention.onepass", rp, m, nnz, t);
  const Hubs h = plan->hubs;
  const V neg_inf = -std::numeric_limits<V>::infinity();
  Workspace& ws = workspace();
  std::lock_guard<std::mutex> guard(ws.lock);
  hook(ws);
  // Slot s of the workspace: o_p at po + s * Fv, m_p at pm[s], z_p at pz[s].
  const int64_t slots = h.extra + h.count;
  V* po = nullptr;
  V* pm = nullptr;
  V* pz = nullptr;
  if (h.count > 0) {
    const size_t values = static_cast<size_t>(slots * (fv + 2));
    const size_t doubles = (values * sizeof(V) + sizeof(double) - 1) / sizeof(double);
    po = reinterpret_cast<V*>(grown(ws.partials, doubles, "sparseport::kokkos::attention_partials"));
    pm = po + slots * fv;
    pz = pm + slots;
  }
  constexpr int W = static_cast<int>(16 / sizeof(V));
  const auto on16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const bool wide = f % W == 0 && fv % W == 0 && ldq % W == 0 && ldk % W == 0 && ldv % W == 0 && ldo % W == 0 &&
                    on16(q) && on16(k) && on16(v) && on16(out) && (po == nullptr || on16(po)) && wide_rows();
  if (wide)
    walk_device<W>(rp, ci, q, k, v, out, po, pm, pz, h, m, t, f, fv, ldq, ldk, ldv, ldo, scale);
  else
    walk_device<1>(rp, ci, q, k, v, out, po, pm, pz, h, m, t, f, fv, ldq, ldk, ldv, ldo, scale);
  const int vl = vector_length(fv > f ? fv : f);
  if (h.count > 0) {
    // A team thread per hub merges its items' states in item order (the same bits every run): m is
    // the largest m_p (never NaN, see above), each item weighs exp(m_p - m), or 1 where m_p == m
    // (an item or a row of -inf scores only: no -inf - -inf). A NaN z_p or o_p stays NaN (times 0
    // too, as the reference's 0 x inf and 0 x NaN do); a row of -inf scores only gets 0 / 0 = NaN.
    const auto merge = KOKKOS_LAMBDA(const Member& team) {
      const int64_t h0 = static_cast<int64_t>(team.league_rank()) * team.team_size();
      const int64_t h1 = h0 + team.team_size() < h.count ? h0 + team.team_size() : h.count;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, h0, h1), [&](const int64_t hub) {
        const int64_t i = h.rows[hub];
        if (static_cast<int64_t>(rp[i + 1]) - static_cast<int64_t>(rp[i]) <= t) return;  // written whole (stale plan)
        const int64_t s0 = h.off[hub] + hub, s1 = h.off[hub + 1] + hub + 1;
        V top = neg_inf;
        for (int64_t sl = s0; sl < s1; ++sl) top = pm[sl] > top ? pm[sl] : top;
        V z = V(0);
        for (int64_t sl = s0; sl < s1; ++sl) z = z + pz[sl] * (pm[sl] == top ? V(1) : exp_of(pm[sl] - top));
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, fv), [&](const int64_t j) {
          V o = V(0);
          for (int64_t sl = s0; sl < s1; ++sl) o = o + po[sl * fv + j] * (pm[sl] == top ? V(1) : exp_of(pm[sl] - top));
          out[i * ldo + j] = o / z;
        });
      });
    };
    const int mts = Policy(1, Kokkos::AUTO, vl).team_size_recommended(merge, Kokkos::ParallelForTag());
    Kokkos::parallel_for("sparseport::kokkos::csr_attention.onepass.merge",
                         Policy(static_cast<int>((h.count + mts - 1) / mts), mts, vl), merge);
  }
  end_op();
}

}  // namespace

void csr_attention(const sparseport_attention_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { onepass<I, V>(args); });
}

}  // namespace sparseport::kokkos
