// SPDX-License-Identifier: Apache-2.0
// What the kokkos kernel files share: the policy shape (TeamPolicy over blocks of rows, vector
// lanes across F), the reductions of the ABI as device functions, and the message reduction that
// segment_reduce and gather_scatter both are. Only API common to Kokkos 3.4 and 4.x is used
// (TeamPolicy, TeamThreadRange, ThreadVectorRange, parallel_scan, atomic_fetch_{add,max,min}), so
// the same source builds against Debian's Kokkos and a user's.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "backends/kokkos/space.hpp"
#include "sparseport/errors.hpp"
#include "sparseport/plugin_abi.h"

namespace sparseport::kokkos {

// Kokkos 3.4 has its math functions in Kokkos::Experimental; 3.7 moved them to Kokkos (and 4.0
// dropped the old names).
template <class V>
KOKKOS_INLINE_FUNCTION V exp_of(V x) {
#if KOKKOS_VERSION >= 30700
  return Kokkos::exp(x);
#else
  return Kokkos::Experimental::exp(x);
#endif
}

using Policy = Kokkos::TeamPolicy<ExecSpace>;
using Member = Policy::member_type;
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>>;

// The end of an op. Host spaces: a fence, since the caller reads host memory on return. Device
// spaces: return with the kernels queued on the default instance, one stream in launch order, as
// the cuda plugin's ops return with theirs queued on the context's stream; the plugin's synchronize
// (Kokkos::fence, what Context::synchronize calls) waits for them, every later op and copy is
// ordered after them on that stream, and a plan or workspace freed meanwhile goes through cudaFree,
// which waits for the device. Measured on an H100 (2026-12-06-h100-s30.md): the best kokkos spmm
// 1.039x faster geomean without the closing fence over 57 inputs (faster on 54), 0.768x -> 0.797x
// the cuda plugin's best over the shared matrices; on a 64-row graph the fence was 0.8 us of a
// 14.9 us call (2026-12-06-h100-s29.md).
inline void end_op() {
  if constexpr (!kDeviceMemory) Kokkos::fence();
}

// Rows per league member. On host spaces a league member is scheduled as one unit, so a block of
// rows amortises that; on a GPU the team's threads share the block. 16 is a plain middle value,
// not a measured optimum (the Debian build is Serial, where it makes no difference).
inline constexpr int64_t kRowsPerTeam = 16;

// W adjacent values of a dense row, loaded or stored at once: 16 bytes at W = 16 / sizeof(V) (one
// vector load on a GPU) where the row's start is 16-byte aligned. spmm's and sddmm's device kernels.
template <class V, int W>
struct alignas(sizeof(V) * W) Cols {
  V v[W];
};

// Vector lanes across F: the largest power of two <= min(F, what the space allows).
inline int vector_length(int64_t f) {
  const int64_t cap = Policy::vector_length_max();
  int64_t v = 1;
  while (v * 2 <= f && v * 2 <= cap) v *= 2;
  return static_cast<int>(v);
}

inline Policy row_blocks(int64_t rows, int64_t f) {
  const int64_t league = (rows + kRowsPerTeam - 1) / kRowsPerTeam;
  return Policy(static_cast<int>(league), Kokkos::AUTO, vector_length(f));
}

// The reductions, as in kernels/reference/reduce.hpp: NaN propagates through max and min, an empty
// row or segment gives 0, mean is the sum over the count.
enum class Op { sum, max, min };

// Max and min as one select: keep acc when it is NaN (x != x, without std::isnan, which is not a
// device function everywhere) or when t is not better; a NaN t is never <= or >= acc, so it
// wins. Bitwise | rather than || and early returns: g++ vectorises no loop with control flow in
// it, and the host loops of spmm ran max/min 3-4x slower than sum that way (same results).
template <Op op, class V>
KOKKOS_INLINE_FUNCTION V fold(V acc, V t) {
  if constexpr (op == Op::sum) {
    return acc + t;
  } else if constexpr (op == Op::max) {
    const bool keep = (acc != acc) | (t <= acc);
    return keep ? acc : t;
  } else {
    const bool keep = (acc != acc) | (t >= acc);
    return keep ? acc : t;
  }
}

// The ABI reduce reaches the kernels as a template argument <Op op> through named function
// templates, one if/else per op (mean runs as sum and divides at the end): nvcc rejects
// KOKKOS_LAMBDA inside a generic lambda, so there is no `[&]<Op op>() {...}` dispatcher here.

// First position in [0, n) whose value is >= key; index sorted ascending.
template <class I>
KOKKOS_INLINE_FUNCTION int64_t lower_bound(const I* index, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(index[mid]) < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// ---- host spaces ------------------------------------------------------------------------------
// On a host space (Serial, OpenMP) a TeamPolicy member is one thread and ThreadVectorRange a plain
// loop (vector length 1, Kokkos_OpenMP_Team.hpp): the device shape then puts the loop over F
// outside the loop over entries, so each F-wide row is read column by column with one scalar
// dependency chain per column (no SIMD, an add's latency per element), and the league of 16-row
// blocks is scheduled statically over equal row counts. The host paths of the kernels (chosen with
// `if constexpr (!kDeviceMemory)`, as spmm.cpp does; plain functions, never instantiated on a
// device space) walk entries outside and F inside, in vector registers, over blocks of about equal
// rows + entries handed out dynamically (the openmp plugin's parallel_row_blocks). Every column
// is still folded entry by entry in entry order, so sums and folds keep their order and bits.

using HostBlocks = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<int64_t>>;
using HostParts = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Static>, Kokkos::IndexType<int64_t>>;

// Blocks of at least kHostMinBlock rows + entries, at least one and at most kHostBlocksPerThread per
// thread (the values of spmm.cpp's host blocks and of the openmp plugin's block_count).
inline constexpr int64_t kHostMinBlock = 4096;
inline constexpr int64_t kHostBlocksPerThread = 16;

inline int64_t host_threads() { return std::max<int64_t>(1, ExecSpace().concurrency()); }

inline int64_t host_block_count(int64_t work) {
  const int64_t t = host_threads();
  return std::clamp<int64_t>(work / kHostMinBlock, t, t * kHostBlocksPerThread);
}

// One block per iteration, handed out one at a time.
inline HostBlocks host_blocks(int64_t blocks) {
  HostBlocks policy(0, blocks);
  policy.set_chunk_size(1);
  return policy;
}

// Where part p of `parts` equal parts of [0, n) begins.
KOKKOS_INLINE_FUNCTION int64_t host_split(int64_t n, int64_t p, int64_t parts) {
  return n / parts * p + n % parts * p / parts;
}

// The first row r in [0, m] with r + rowptr[r] >= d: where the merge path of rows and entries
// crosses diagonal d, rounded to a whole row.
template <class I>
KOKKOS_INLINE_FUNCTION int64_t host_row_at(const I* rowptr, int64_t m, int64_t d) {
  int64_t lo = 0, hi = m;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (mid + static_cast<int64_t>(rowptr[mid]) < d)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// dot(x, y) over n values for the host paths: 16 partial sums in two 8-wide vectors of GCC's
// vector extension, then the lanes in order, then the last n % 8 products. The order is fixed by
// n alone (deterministic), not the order of a scalar loop: the tests compare dots within a
// rounding bound, as they do the openmp plugin's (same shape, kernels/openmp/common.hpp dot).
// Vectors are never passed by value (-Wpsabi, see spmm.cpp's host_tile).
// host_dot's vector part: acc = the two accumulators' sum, its lanes not yet added; returns the
// values it took (n rounded down to 8). sddmm's host path sums 8 such lanes at once (sddmm.cpp).
template <class V, class Vec>
inline int64_t host_dot_lanes(const V* x, const V* y, int64_t n, Vec& acc) {
  Vec a0 = {}, a1 = {};
  int64_t f = 0;
  for (; f + 16 <= n; f += 16) {
    Vec x0, x1, y0, y1;
    __builtin_memcpy(&x0, x + f, sizeof x0);
    __builtin_memcpy(&x1, x + f + 8, sizeof x1);
    __builtin_memcpy(&y0, y + f, sizeof y0);
    __builtin_memcpy(&y1, y + f + 8, sizeof y1);
    a0 += x0 * y0;
    a1 += x1 * y1;
  }
  if (f + 8 <= n) {
    Vec x0, y0;
    __builtin_memcpy(&x0, x + f, sizeof x0);
    __builtin_memcpy(&y0, y + f, sizeof y0);
    a0 += x0 * y0;
    f += 8;
  }
  acc = a0 + a1;
  return f;
}

template <class V>
inline V host_dot(const V* x, const V* y, int64_t n) {
  typedef V Vec __attribute__((vector_size(8 * sizeof(V))));
  Vec a;
  int64_t f = host_dot_lanes(x, y, n, a);
  V s = V(0);
  for (int l = 0; l < 8; ++l) s += a[l];
  for (; f < n; ++f) s += x[f] * y[f];
  return s;
}

// E messages reduced into the rows of out: message e is row (pick ? pick[e] : e) of `rows`, times
// w[e] when w is not null, and goes to out row dst[e]. segment_reduce and gather_scatter are this.
template <class I, class V>
struct Messages {
  int64_t count = 0, f = 0;
  const I* dst = nullptr;
  const V* rows = nullptr;
  int64_t ld = 0;
  const I* pick = nullptr;
  const V* w = nullptr;
  V* out = nullptr;
  int64_t out_rows = 0, out_ld = 0;
  int32_t reduce = SPARSEPORT_REDUCE_SUM;
};

// A workspace buffer of at least n values: grown by half again when too small (a device allocation
// per call would synchronise and cost more than the kernels on small inputs), the old buffer freed
// first, never both at once. `zeroed`: a new buffer is filled with zeros (counters).
template <class T>
T* grown(Kokkos::View<T*, MemSpace>& v, size_t n, const char* label, bool zeroed = false) {
  if (v.extent(0) < n) {
    const size_t want = std::max(n, v.extent(0) + v.extent(0) / 2);
    v = Kokkos::View<T*, MemSpace>();  // free the old buffer first: never both at once
    if (zeroed)
      v = Kokkos::View<T*, MemSpace>(std::string(label), want);
    else
      v = Kokkos::View<T*, MemSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), want);
  }
  return v.data();
}

// The scratch buffers of the ops that hold no plan, kept from call to call as spmm.cpp's Workspace
// keeps hub_split's (a cudaMalloc and a synchronising cudaFree per call cost more than the kernels
// on small inputs): reduce_chunks's piece slots and tickets (the tickets zero between calls),
// reduce_atomic's counts, csr_induced_subgraph's vertex map, the CSR summary's and the index check's
// result words (summary.cpp). One mutex serialises the calls that use them; freed by a Kokkos
// finalize hook (a View must not outlive Kokkos); the object itself is never destroyed.
struct OpWorkspace {
  std::mutex lock;
  bool hooked = false;
  Kokkos::View<double*, MemSpace> slots;  // double: aligned for float and double alike
  Kokkos::View<unsigned*, MemSpace> tickets;
  Kokkos::View<int64_t*, MemSpace> counts;
  Kokkos::View<int64_t*, MemSpace> map;
  Kokkos::View<unsigned long long*, MemSpace> words;
};

inline OpWorkspace& op_workspace() {
  static OpWorkspace* w = new OpWorkspace;
  return *w;
}

// With w.lock held, before w's first buffer.
inline void hook_op_workspace(OpWorkspace& w) {
  if (w.hooked) return;
  Kokkos::push_finalize_hook([] {
    OpWorkspace& ws = op_workspace();
    std::lock_guard<std::mutex> guard(ws.lock);
    ws.slots = {};
    ws.tickets = {};
    ws.counts = {};
    ws.map = {};
    ws.words = {};
    ws.hooked = false;
  });
  w.hooked = true;
}

// reduce_sorted's device path: the messages cut into chunks of T (message_chunk), one team thread
// and its vector lanes (across F) a chunk, as the cuda plugin's segment_reduce.nnz_balanced cuts
// them, so a thread's work is the same whatever the skew and a thread finds its runs by walking dst,
// with no search over the whole index. The kernel it replaced gave each output row to one team
// thread, found its run by two binary searches over the whole index and folded it alone, so a hub
// run was one thread's chain: on an H200 (2026-12-05, one build, A/B) this one is 17-28x faster on
// rmat:18:16 (segment_reduce F = 32: 9.49 -> 0.559 ms, F = 128: 37.5 -> 1.35; gather_scatter 6.58 ->
// 0.536, 27.4 -> 1.22) and 1.3-2.5x on a 1024 x 1024 mesh. Here:
//  - A run of equal destinations inside one chunk is folded in message order and stored once: the
//    reference's order, so its bits.
//  - A run that crosses chunks leaves the piece each chunk holds in a scratch slot (slot 1 of the
//    chunk where it begins, slot 0 of every later one); the piece that draws the run's last ticket
//    (a counter per lane, kept by the run's first chunk, as spmm.hub_split's tickets) folds the
//    slots in chunk order and stores. T depends on E and the device only, so the bits are the
//    same run to run (the variant's deterministic flag), though a crossing run's are not the
//    reference's.
//  - An output row that no message reaches is written 0 by the chunk in which the next run begins
//    (the last chunk: the rows after the last run). Destinations outside [0, rows) are skipped, so
//    an index that was not checked cannot write outside out (ops::check_index checks the index in
//    range and sorted before any plugin runs; an unsorted one would leave tickets drawn).
// Every lane walks the same messages (its columns lane, lane + vl, ...), so lanes never diverge.
inline constexpr int64_t kMinMessageChunk = 128;
inline constexpr int kMessageItemsPerTeam = 8;

// Messages a chunk: about four chunks per lane group the space runs at once (a chunk holding a
// hub's messages then delays the last wave by at most a quarter of a fair share, spmm.hub_split's
// kWaves), never fewer than kMinMessageChunk, so that the two slots a crossing run costs a chunk
// (2 F values written and read) stay within 2 / 128 of its T message rows.
inline int64_t message_chunk(int64_t count, int64_t vl) {
  const int64_t workers = std::max<int64_t>(1, ExecSpace().concurrency() / std::max<int64_t>(vl, 1));
  const int64_t per_item = (count + 4 * workers - 1) / (4 * workers);
  return std::max(kMinMessageChunk, per_item);
}

template <Op op, class I, class V>
void reduce_chunks_op(const Messages<I, V>& msg, V* slots, unsigned* tickets, int64_t t, int64_t vl) {
  const Messages<I, V> m = msg;
  const bool mean = m.reduce == SPARSEPORT_REDUCE_MEAN;
  const int64_t E = m.count, n = m.out_rows, f = m.f;
  const int64_t items = std::max<int64_t>(1, (E + t - 1) / t);
  const auto body = KOKKOS_LAMBDA(const Member& team) {
    const int64_t x = static_cast<int64_t>(team.league_rank()) * kMessageItemsPerTeam + team.team_rank();
    if (x >= items) return;  // no barrier below
    const int64_t c0 = x * t, c1 = c0 + t < E ? c0 + t : E;
    const auto zero_rows = [&](int64_t from, int64_t to, int64_t lane) {  // rows [from, to) within out
      for (int64_t r = from < 0 ? 0 : from; r < to && r < n; ++r)
        for (int64_t j = lane; j < f; j += vl) m.out[r * m.out_ld + j] = V(0);
    };
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, vl), [&](const int64_t lane) {
      for (int64_t e = c0; e < c1;) {
        const int64_t r = static_cast<int64_t>(m.dst[e]);
        const bool began_before = e == c0 && e > 0 && static_cast<int64_t>(m.dst[e - 1]) == r;
        if (!began_before) zero_rows(e > 0 ? static_cast<int64_t>(m.dst[e - 1]) + 1 : 0, r, lane);
        int64_t end = e + 1;
        while (end < c1 && static_cast<int64_t>(m.dst[end]) == r) ++end;
        const bool goes_on = end == c1 && c1 < E && static_cast<int64_t>(m.dst[c1]) == r;
        const bool valid = r >= 0 && r < n;
        // A crossing run's extent: [lo, hi), chunks a .. b.
        const int64_t lo = began_before ? lower_bound(m.dst, c0, r) : e;
        const int64_t hi = goes_on ? c1 + lower_bound(m.dst + c1, E - c1, r + 1) : end;
        V* slot = slots + (2 * x + (began_before ? 0 : 1)) * f;
        for (int64_t j = lane; j < f && valid; j += vl) {
          V acc = V(0);
          for (int64_t k = e; k < end; ++k) {
            const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[k]) : k;
            const V v = (m.w != nullptr ? m.w[k] : V(1)) * m.rows[src * m.ld + j];
            acc = k == e ? v : fold<op>(acc, v);
          }
          if (began_before || goes_on)
            slot[j] = acc;
          else
            m.out[r * m.out_ld + j] = mean ? acc / static_cast<V>(end - e) : acc;
        }
        if (valid && (began_before || goes_on)) {
          // The last piece to draw this lane's ticket folds the run (CUDA's threadFenceReduction
          // pattern: the fence puts this piece's slot before its ticket).
          const int64_t a = lo / t, b = (hi - 1) / t;
          Kokkos::memory_fence();
          unsigned* ticket = tickets + a * vl + lane;
          if (Kokkos::atomic_fetch_add(ticket, 1u) + 1u == static_cast<unsigned>(b - a + 1)) {
            Kokkos::memory_fence();
            for (int64_t j = lane; j < f; j += vl) {
              V acc = slots[(2 * a + 1) * f + j];
              for (int64_t k = a + 1; k <= b; ++k) acc = fold<op>(acc, slots[2 * k * f + j]);
              m.out[r * m.out_ld + j] = mean ? acc / static_cast<V>(hi - lo) : acc;
            }
            *ticket = 0u;  // zero for the next call
          }
        }
        e = end;
      }
      if (x == items - 1) zero_rows(E > 0 ? static_cast<int64_t>(m.dst[E - 1]) + 1 : 0, n, lane);
    });
  };
  const int64_t league = (items + kMessageItemsPerTeam - 1) / kMessageItemsPerTeam;
  Kokkos::parallel_for("sparseport::kokkos::reduce_chunks",
                       Policy(static_cast<int>(league), kMessageItemsPerTeam, static_cast<int>(vl)), body);
}

template <class I, class V>
void reduce_chunks(const Messages<I, V>& msg) {
  if (msg.out_rows == 0 || msg.f == 0) return;
  const int64_t vl = vector_length(msg.f);
  const int64_t t = message_chunk(msg.count, vl);
  const int64_t items = std::max<int64_t>(1, (msg.count + t - 1) / t);
  OpWorkspace& w = op_workspace();
  std::lock_guard<std::mutex> guard(w.lock);
  hook_op_workspace(w);
  const size_t doubles = (static_cast<size_t>(2 * items * msg.f) * sizeof(V) + sizeof(double) - 1) / sizeof(double);
  V* slots = reinterpret_cast<V*>(grown(w.slots, doubles, "sparseport::kokkos::message_slots"));
  unsigned* tickets = grown(w.tickets, static_cast<size_t>(items * vl), "sparseport::kokkos::message_tickets", true);
  if (msg.reduce == SPARSEPORT_REDUCE_MAX)
    reduce_chunks_op<Op::max>(msg, slots, tickets, t, vl);
  else if (msg.reduce == SPARSEPORT_REDUCE_MIN)
    reduce_chunks_op<Op::min>(msg, slots, tickets, t, vl);
  else
    reduce_chunks_op<Op::sum>(msg, slots, tickets, t, vl);
  end_op();  // the next call's kernels reuse the slots after these, on the same stream
}

// Host spaces: out row o = the fold of messages [lo, hi) over columns [j0, j0 + 8 NV), in NV 8-wide
// vectors held in registers (spmm.cpp's host_tile): each message row read once per tile, along
// the row. An empty run gives 0, mean divides by the count. The first message starts the
// accumulators and the finish (mean, the store) stays in vectors, as in host_tile: per element it
// was a scalar divide, a branch and a store for each column behind a zeroing of the accumulators,
// more than the messages themselves on the short runs of most graphs. Same operations per lane in
// the same order, so the same bits.
// kScattered (host_reduce_counting only, where m.pick is never null): after the counting sort a
// row's messages are picked from anywhere among the E message rows (scatter_reduce's index in any
// order), so nearly every load of a tile missed cache: the adds on those loads held ~85 % of the
// reduction's samples (perf annotate, cit-HepPh F = 32, astro-ph F = 128). The row of the message
// kHostPrefetch ahead is prefetched at column j0, one line, as the openmp plugin's tile_accumulate
// does (its distance; 8, 32 and 64 were 0.95-1.04x of it here), and host_message_row takes 64 columns a
// tile where F allows (fewer passes over each message row). The sorted ops read their messages in
// order or from the N source rows and keep kScattered false: their code is unchanged.
inline constexpr int64_t kHostPrefetch = 16;

template <int NV, Op op, bool kScattered = false, class I, class V>
inline void host_message_tile(const Messages<I, V>& m, int64_t lo, int64_t hi, int64_t j0, V* o, bool mean) {
  typedef V Vec __attribute__((vector_size(8 * sizeof(V))));
  Vec acc[NV];
  if (hi > lo) {
    // The prefetch is written out at both places: in a lambda or a helper function g++ 12 -O3
    // emitted no prefetch instruction at all (objdump; a first version of this change so measured
    // only its other half).
    if constexpr (kScattered) {
      if (lo + kHostPrefetch < m.count)
        __builtin_prefetch(m.rows + static_cast<int64_t>(m.pick[lo + kHostPrefetch]) * m.ld + j0);
    }
    {
      const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[lo]) : lo;
      const V* x = m.rows + src * m.ld + j0;
      const V w = m.w != nullptr ? m.w[lo] : V(1);
      for (int k = 0; k < NV; ++k) {
        Vec v;
        __builtin_memcpy(&v, x + 8 * k, sizeof v);
        acc[k] = w * v;
      }
    }
    for (int64_t e = lo + 1; e < hi; ++e) {
      if constexpr (kScattered) {
        if (e + kHostPrefetch < m.count)
          __builtin_prefetch(m.rows + static_cast<int64_t>(m.pick[e + kHostPrefetch]) * m.ld + j0);
      }
      const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[e]) : e;
      const V* x = m.rows + src * m.ld + j0;
      const V w = m.w != nullptr ? m.w[e] : V(1);
      for (int k = 0; k < NV; ++k) {
        Vec v;
        __builtin_memcpy(&v, x + 8 * k, sizeof v);
        v = w * v;
        if constexpr (op == Op::sum)
          acc[k] = acc[k] + v;
        else if constexpr (op == Op::max)  // fold<op> on whole vectors, as host_tile (spmm.cpp)
          acc[k] = ((acc[k] != acc[k]) | (v <= acc[k])) ? acc[k] : v;
        else
          acc[k] = ((acc[k] != acc[k]) | (v >= acc[k])) ? acc[k] : v;
      }
    }
    if (mean) {
      const V count = static_cast<V>(hi - lo);
      for (int k = 0; k < NV; ++k) acc[k] = acc[k] / count;
    }
  } else {
    for (int k = 0; k < NV; ++k) acc[k] = Vec{};  // no message: 0
  }
  for (int k = 0; k < NV; ++k) __builtin_memcpy(o + j0 + 8 * k, &acc[k], sizeof acc[k]);
}

// kScattered: tiles of 64 columns first where the build has AVX-512 (8 accumulators of 8 values, 8
// of its 32 vector registers; with 16 registers the double tile would be all of them). On the
// scattered rows of host_reduce_counting that was 4-6 % faster at F = 128 than tiles of 32 (Intel
// 2-core VM, 2 runs, 17 graphs, 2026-12-05-cpu-kokkos-openmp-scatter.md); each column's order, so
// its bits, stay the same.
#ifdef __AVX512F__
inline constexpr bool kHostWideTiles = true;
#else
inline constexpr bool kHostWideTiles = false;
#endif

template <Op op, bool kScattered = false, class I, class V>
inline void host_message_row(const Messages<I, V>& m, int64_t lo, int64_t hi, V* o, bool mean) {
  int64_t j0 = 0;
  if constexpr (kScattered && kHostWideTiles)
    for (; j0 + 64 <= m.f; j0 += 64) host_message_tile<8, op, kScattered>(m, lo, hi, j0, o, mean);
  for (; j0 + 32 <= m.f; j0 += 32) host_message_tile<4, op, kScattered>(m, lo, hi, j0, o, mean);
  if (j0 + 16 <= m.f) host_message_tile<2, op, kScattered>(m, lo, hi, j0, o, mean), j0 += 16;
  if (j0 + 8 <= m.f) host_message_tile<1, op, kScattered>(m, lo, hi, j0, o, mean), j0 += 8;
  for (; j0 < m.f; ++j0) {
    V acc = V(0);
    for (int64_t e = lo; e < hi; ++e) {
      const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[e]) : e;
      const V x = (m.w != nullptr ? m.w[e] : V(1)) * m.rows[src * m.ld + j0];
      acc = e == lo ? x : fold<op>(acc, x);
    }
    if (mean && hi > lo) acc = acc / static_cast<V>(hi - lo);
    o[j0] = acc;
  }
}

// The first output row r in [0, n] with r + (messages to rows below r) >= d: the merge path of
// output rows and sorted messages, rounded to a whole row (host_row_at without a rowptr).
template <class I>
KOKKOS_INLINE_FUNCTION int64_t host_dst_row_at(const I* dst, int64_t count, int64_t n, int64_t d) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (mid + lower_bound(dst, count, mid) < d)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Host spaces, dst sorted: blocks of whole output rows of about equal rows + messages; a block
// finds its first message by one binary search and walks the runs from there (no search per row).
template <Op op, class I, class V>
void host_reduce_sorted(const Messages<I, V>& msg) {
  const Messages<I, V> m = msg;
  if (m.out_rows == 0 || m.f == 0) return;
  const bool mean = m.reduce == SPARSEPORT_REDUCE_MEAN;
  const int64_t total = m.out_rows + m.count, blocks = host_block_count(total);
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_sorted", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
        const int64_t r0 = host_dst_row_at(m.dst, m.count, m.out_rows, host_split(total, b, blocks));
        const int64_t r1 = host_dst_row_at(m.dst, m.count, m.out_rows, host_split(total, b + 1, blocks));
        int64_t e = r0 < r1 ? lower_bound(m.dst, m.count, r0) : 0;
        for (int64_t r = r0; r < r1; ++r) {
          int64_t hi = e;
          while (hi < m.count && static_cast<int64_t>(m.dst[hi]) == r) ++hi;
          host_message_row<op>(m, e, hi, m.out + r * m.out_ld, mean);
          e = hi;
        }
      });
}

template <class I, class V>
void reduce_sorted(const Messages<I, V>& msg) {
  if constexpr (!kDeviceMemory) {
    if (msg.reduce == SPARSEPORT_REDUCE_MAX)
      host_reduce_sorted<Op::max>(msg);
    else if (msg.reduce == SPARSEPORT_REDUCE_MIN)
      host_reduce_sorted<Op::min>(msg);
    else
      host_reduce_sorted<Op::sum>(msg);
    Kokkos::fence();
    return;
  }
  reduce_chunks(msg);
}

// *x += n atomically, for counters and cursors (n >= 0), returning the old value. 64-bit signed
// integers go through unsigned long long: Kokkos 3.4 has no native 64-bit signed atomic add on CUDA
// (core/src/impl/Kokkos_Atomic_Fetch_Add.hpp: int, unsigned, unsigned long long, float and double
// are atomicAdd; long, which int64_t is, falls to a compare-and-swap loop), and a CAS loop with k
// threads on one address costs O(k^2) attempts: a segment of 10^5 messages counted that way kept
// Values16Adversarial.RowsOfOneHundredThousandEntries running past its 120 s limit on Kokkos-CUDA
// (H200, 2026-12-04). Two's complement: the unsigned sum has the signed sum's bits.
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_count(T* x, T n) {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8), "32- or 64-bit integer counters");
  if constexpr (sizeof(T) == sizeof(unsigned long long))
    return static_cast<T>(
        Kokkos::atomic_fetch_add(reinterpret_cast<unsigned long long*>(x), static_cast<unsigned long long>(n)));
  else
    return static_cast<T>(Kokkos::atomic_fetch_add(reinterpret_cast<unsigned int*>(x), static_cast<unsigned int>(n)));
}

// x combined atomically into *o, an element that started from the reduce's identity `start`
// (spmm.hub_split's chunk folds into a hub's scratch row; the atomic message reductions).
// Sums: Kokkos::atomic_add. Max and min: a compare-and-swap loop whose combine is the reference's
// (a NaN stays, a NaN arriving wins), not Kokkos::atomic_fetch_max/min: Kokkos 3.4's replaces a
// stored NaN by the next value (`NaN > x` is false, so it stores x), and 4.x's (desul, which
// exits early when `!(old < x)`) keeps a stored NaN but drops an arriving one: neither propagates
// NaN as the reference does. Both are compare-and-swap loops on floating point too (there is no
// hardware float max), so this costs the same. The swap compares bit patterns (not values, where
// 0.0 == -0.0 and NaN != NaN); the first guess is the identity the element starts from (`start`),
// so no plain read races with the atomics.
// A float or double and the same-size unsigned integer: the atomics below swap bit patterns (Kokkos's
// own atomics pun through a union as well; memcpy is not a device function everywhere).
template <class V>
union BitsOf {
  using Bits = std::conditional_t<sizeof(V) == sizeof(unsigned int), unsigned int, unsigned long long>;
  static_assert(sizeof(Bits) == sizeof(V), "float and double have a same-size unsigned integer");
  V v;
  Bits b;
};

template <Op op, class V>
KOKKOS_INLINE_FUNCTION void atomic_combine(V* o, V x, V start) {
  if constexpr (op == Op::sum) {
    (void)start;
    Kokkos::atomic_add(o, x);
  } else {
    using Bits = typename BitsOf<V>::Bits;
    BitsOf<V> cur, want;
    cur.v = start;
    want.v = x;
    while (true) {
      if (cur.v != cur.v) return;  // a NaN is stored: it stays
      const bool better = x != x || (op == Op::max ? x > cur.v : x < cur.v);
      if (!better) return;
      BitsOf<V> seen;
      seen.b = Kokkos::atomic_compare_exchange(reinterpret_cast<Bits*>(o), cur.b, want.b);
      if (seen.b == cur.b) return;
      cur = seen;
    }
  }
}

// *o = x atomically, returning the old value bit for bit. Not Kokkos::atomic_exchange on V: for float
// and double, Kokkos 3.4's overload set resolves (g++ and clang alike) to the generic one of
// impl/Kokkos_Atomic_Generic_Secondary.hpp, a compare-and-swap loop that compares values, so a NaN
// cell (NaN != NaN) swaps, loops once more and returns the value just stored: spmm.hub_split's ticket
// finish gave a hub whose scratch cell held NaN the identity (-0, -inf or +inf). Found by running the
// device path on Kokkos-OpenMP (GNU atomics) against the reference (tests/kokkos/device_sim). The
// integer exchange compares bits.
template <class V>
KOKKOS_INLINE_FUNCTION V exchange_bits(V* o, V x) {
  BitsOf<V> in, out;
  in.v = x;
  out.b = Kokkos::atomic_exchange(reinterpret_cast<typename BitsOf<V>::Bits*>(o), in.b);
  return out.v;
}

// Any dst order: every element an atomic update (the baseline compilers generate), then a pass
// that turns untouched rows into 0 and divides means by the count. Summation order varies between
// runs on parallel spaces.
template <Op op, class I, class V>
void reduce_atomic_op(const Messages<I, V>& msg, int64_t* count) {
  const Messages<I, V> m = msg;
  const V start = op == Op::max ? -std::numeric_limits<V>::infinity()
                  : op == Op::min ? std::numeric_limits<V>::infinity()
                                  : V(0);
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_atomic_init", row_blocks(m.out_rows, m.f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < m.out_rows ? r0 + kRowsPerTeam : m.out_rows;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t r) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, m.f), [&](const int64_t j) { m.out[r * m.out_ld + j] = start; });
          Kokkos::single(Kokkos::PerThread(t), [&]() { count[r] = 0; });
        });
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_atomic", row_blocks(m.count, m.f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t e0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t e1 = e0 + kRowsPerTeam < m.count ? e0 + kRowsPerTeam : m.count;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, e0, e1), [&](const int64_t e) {
          const int64_t r = static_cast<int64_t>(m.dst[e]);
          const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[e]) : e;
          const V we = m.w != nullptr ? m.w[e] : V(1);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, m.f), [&](const int64_t j) {
            const V x = we * m.rows[src * m.ld + j];
            V* o = m.out + r * m.out_ld + j;
            atomic_combine<op>(o, x, start);  // a NaN stays and a NaN arriving wins, as in the reference
          });
          Kokkos::single(Kokkos::PerThread(t), [&]() { atomic_count(count + r, int64_t(1)); });
        });
      });
  const bool mean = m.reduce == SPARSEPORT_REDUCE_MEAN;
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_atomic_finish", row_blocks(m.out_rows, m.f), KOKKOS_LAMBDA(const Member& t) {
        const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kRowsPerTeam;
        const int64_t r1 = r0 + kRowsPerTeam < m.out_rows ? r0 + kRowsPerTeam : m.out_rows;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, r0, r1), [&](const int64_t r) {
          const int64_t n = count[r];
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, m.f), [&](const int64_t j) {
            V* o = m.out + r * m.out_ld + j;
            if (n == 0) *o = V(0);
            else if (mean) *o = *o / static_cast<V>(n);
          });
        });
      });
}

// Host spaces, any dst order: no atomics. Part p of the space's threads owns the output rows
// [split(p), split(p + 1)) and reads the whole index, folding only its own messages, in message
// order: the reference's order, whatever the thread count. An atomic per element is a
// compare-and-swap loop for floating point on the host (Kokkos 3.4, and atomic_combine's max/min),
// ~10-20x the cost of the fold it guards; here every thread reads all E indices instead (E x I
// bytes per thread), which stays below the E x F x V bytes of the messages while threads < F x
// sizeof(V) / sizeof(I) (128 at F = 32, float, int32). Rows are split equally, not by messages.
template <Op op, class I, class V>
void host_reduce_owned(const Messages<I, V>& msg, int64_t* count) {
  const Messages<I, V> m = msg;
  if (m.out_rows == 0 || m.f == 0) return;
  const bool mean = m.reduce == SPARSEPORT_REDUCE_MEAN;
  const int64_t parts = std::min<int64_t>(host_threads(), m.out_rows);
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_owned", HostParts(0, parts), KOKKOS_LAMBDA(const int64_t p) {
        const int64_t r0 = host_split(m.out_rows, p, parts), r1 = host_split(m.out_rows, p + 1, parts);
        for (int64_t r = r0; r < r1; ++r) count[r] = 0;
        for (int64_t e = 0; e < m.count; ++e) {
          const int64_t r = static_cast<int64_t>(m.dst[e]);
          if (r < r0 || r >= r1) continue;
          const int64_t src = m.pick != nullptr ? static_cast<int64_t>(m.pick[e]) : e;
          const V* x = m.rows + src * m.ld;
          const V w = m.w != nullptr ? m.w[e] : V(1);
          V* o = m.out + r * m.out_ld;
          if (count[r]++ == 0)
            for (int64_t j = 0; j < m.f; ++j) o[j] = w * x[j];
          else
            for (int64_t j = 0; j < m.f; ++j) o[j] = fold<op>(o[j], w * x[j]);
        }
        for (int64_t r = r0; r < r1; ++r) {
          V* o = m.out + r * m.out_ld;
          if (count[r] == 0)
            for (int64_t j = 0; j < m.f; ++j) o[j] = V(0);
          else if (mean)
            for (int64_t j = 0; j < m.f; ++j) o[j] = o[j] / static_cast<V>(count[r]);
        }
      });
}

// Host spaces, any dst order, the path taken: a stable counting sort of the messages by output row
// into a CSR (a histogram per part of the messages, one scan to rowptr and each part's offsets, a
// scatter of each message's source row and weight to its place), then blocks of whole output rows
// of about equal rows + messages (merge path over rowptr, host_row_at), each row's messages folded
// in the 8-wide tiles with the rows ahead prefetched. Each row's messages stay in message order,
// so the bits are host_reduce_owned's. Costs E x (I + V) bytes, N + 1 offsets and a histogram of N
// counts per part; a count of messages above I's range keeps host_reduce_owned.
// host_reduce_owned read and wrote an output row per message, with a run-time-width column loop,
// and every part read every index: 0.70x the openmp plugin's sort_then_segment on Kokkos-OpenMP, 2
// threads (benchmarks/results/2026-12-03-cpu-kokkos-spmm.md, table 4). The sort that replaced it
// scattered each message's row as well (a sorted dst for host_reduce_sorted: two random stores a
// message, not one) and folded without prefetching: 0.78x / 0.83x at F = 32 / 128
// (2026-12-04-cpu-kokkos-openmp-intel.md). This shape: 1.09x / 1.00x, 1.40x / 1.19x faster than
// that sort (Intel 2-core VM, 17 graphs, 2026-12-05-cpu-kokkos-openmp-scatter.md).
template <Op op, class I, class V>
void host_reduce_counting(const Messages<I, V>& msg) {
  const Messages<I, V> m = msg;
  if (m.out_rows == 0 || m.f == 0) return;
  const bool mean = m.reduce == SPARSEPORT_REDUCE_MEAN;
  const int64_t n = m.out_rows, count = m.count;
  const int64_t parts = std::clamp<int64_t>(count / kHostMinBlock, 1, host_threads());
  const auto hist = std::make_unique_for_overwrite<I[]>(static_cast<size_t>(parts * n));
  const auto offsets = std::make_unique_for_overwrite<I[]>(static_cast<size_t>(n + 1));
  const auto pick = std::make_unique_for_overwrite<I[]>(static_cast<size_t>(count));
  const auto w = std::make_unique_for_overwrite<V[]>(static_cast<size_t>(m.w != nullptr ? count : 0));
  I* h = hist.get();
  I* rowptr = offsets.get();
  I* spick = pick.get();
  V* sw = w.get();
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_counting.histogram", HostParts(0, parts), KOKKOS_LAMBDA(const int64_t p) {
        I* hp = h + p * n;
        for (int64_t r = 0; r < n; ++r) hp[r] = I(0);
        for (int64_t e = host_split(count, p, parts), e1 = host_split(count, p + 1, parts); e < e1; ++e)
          ++hp[static_cast<int64_t>(m.dst[e])];
      });
  Kokkos::fence();
  // Row r's messages of part p start after every part's messages to rows below r and part p's
  // predecessors' messages to r: message order within each row. Counts fit I (count <= I's max).
  I next = I(0);
  for (int64_t r = 0; r < n; ++r) {
    rowptr[r] = next;
    for (int64_t p = 0; p < parts; ++p) {
      const I c = h[p * n + r];
      h[p * n + r] = next;
      next += c;
    }
  }
  rowptr[n] = next;
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_counting.scatter", HostParts(0, parts), KOKKOS_LAMBDA(const int64_t p) {
        I* hp = h + p * n;
        const int64_t e0 = host_split(count, p, parts), e1 = host_split(count, p + 1, parts);
        if (m.w != nullptr) {
          for (int64_t e = e0; e < e1; ++e) {
            const I at = hp[static_cast<int64_t>(m.dst[e])]++;
            spick[at] = m.pick != nullptr ? m.pick[e] : static_cast<I>(e);
            sw[at] = m.w[e];
          }
        } else if (m.pick != nullptr) {
          for (int64_t e = e0; e < e1; ++e) spick[hp[static_cast<int64_t>(m.dst[e])]++] = m.pick[e];
        } else {
          for (int64_t e = e0; e < e1; ++e) spick[hp[static_cast<int64_t>(m.dst[e])]++] = static_cast<I>(e);
        }
      });
  Kokkos::fence();
  Messages<I, V> sorted = m;
  sorted.dst = nullptr;  // rows are rowptr's
  sorted.pick = spick;
  sorted.w = m.w != nullptr ? sw : nullptr;
  const int64_t total = n + count, blocks = host_block_count(total);
  Kokkos::parallel_for(
      "sparseport::kokkos::reduce_counting.rows", host_blocks(blocks), KOKKOS_LAMBDA(const int64_t b) {
        const int64_t r0 = host_row_at(rowptr, n, host_split(total, b, blocks));
        const int64_t r1 = host_row_at(rowptr, n, host_split(total, b + 1, blocks));
        for (int64_t r = r0; r < r1; ++r)
          host_message_row<op, true>(sorted, static_cast<int64_t>(rowptr[r]), static_cast<int64_t>(rowptr[r + 1]),
                                     sorted.out + r * sorted.out_ld, mean);
      });
}

template <class I, class V>
void reduce_atomic(const Messages<I, V>& msg) {
  if constexpr (!kDeviceMemory) {
    if (msg.count <= static_cast<int64_t>(std::numeric_limits<I>::max())) {
      if (msg.reduce == SPARSEPORT_REDUCE_MAX)
        host_reduce_counting<Op::max>(msg);
      else if (msg.reduce == SPARSEPORT_REDUCE_MIN)
        host_reduce_counting<Op::min>(msg);
      else
        host_reduce_counting<Op::sum>(msg);
      Kokkos::fence();
      return;
    }
    // Each part zeroes its own counts: no initialising kernel.
    Kokkos::View<int64_t*, MemSpace> counts(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::counts"),
                                            static_cast<size_t>(msg.out_rows));
    if (msg.reduce == SPARSEPORT_REDUCE_MAX)
      host_reduce_owned<Op::max>(msg, counts.data());
    else if (msg.reduce == SPARSEPORT_REDUCE_MIN)
      host_reduce_owned<Op::min>(msg, counts.data());
    else
      host_reduce_owned<Op::sum>(msg, counts.data());
    Kokkos::fence();
    return;
  }
  // The counts from the workspace (a View per call was a cudaMalloc, a memset kernel and a
  // synchronising cudaFree), zeroed by reduce_atomic_op's first kernel.
  OpWorkspace& w = op_workspace();
  std::lock_guard<std::mutex> guard(w.lock);
  hook_op_workspace(w);
  int64_t* count = grown(w.counts, static_cast<size_t>(msg.out_rows), "sparseport::kokkos::counts");
  if (msg.reduce == SPARSEPORT_REDUCE_MAX)
    reduce_atomic_op<Op::max>(msg, count);
  else if (msg.reduce == SPARSEPORT_REDUCE_MIN)
    reduce_atomic_op<Op::min>(msg, count);
  else
    reduce_atomic_op<Op::sum>(msg, count);
  end_op();
}

// An exclusive scan of n counts into out[0..n] (out[0] = 0), on the execution space.
template <class I>
void exclusive_scan_into(I* out, int64_t n) {
  // out[1..n] hold the counts on entry.
  Kokkos::parallel_scan(
      "sparseport::kokkos::scan", Range(0, n), KOKKOS_LAMBDA(const int64_t t, I& partial, const bool final) {
        const I v = out[t + 1];
        partial += v;
        if (final) out[t + 1] = partial;
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::scan_head", Range(0, 1), KOKKOS_LAMBDA(const int64_t) { out[0] = I(0); });
  Kokkos::fence();
}

}  // namespace sparseport::kokkos
