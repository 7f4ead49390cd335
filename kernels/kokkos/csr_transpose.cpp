// SPDX-License-Identifier: Apache-2.0
// csr_transpose: a counting sort by column. Device spaces: counts and placement use atomics (a
// parallel space places the entries of one column in any order), then each result row is sorted by
// the entry's position in A, which restores the reference's stable order (A's row order, and storage
// order for repeated columns); the row of each entry is found by binary search in A's rowptr. The
// long result rows (hub columns of A) are not sorted: their entries are ranked in A's order block by
// block (rank_hub_entries), which puts each where it belongs at once. With args.perm (ABI 1.5) the
// sorted positions are also written out: perm[t] is A's entry that became entry t.
// Host spaces: a per-thread stable counting sort instead (host_transpose), as the openmp plugin.
#include <KokkosKernels_Sorting.hpp>

#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

// In-place heapsort of p[0..n): O(n log n) without recursion or scratch, so it runs in a device
// lambda too; a hub column is not quadratic.
KOKKOS_INLINE_FUNCTION void sift_down(int64_t* p, int64_t root, int64_t n) {
  while (2 * root + 1 < n) {
    int64_t child = 2 * root + 1;
    if (child + 1 < n && p[child] < p[child + 1]) ++child;
    if (!(p[root] < p[child])) return;
    const int64_t tmp = p[root];
    p[root] = p[child];
    p[child] = tmp;
    root = child;
  }
}

// Device spaces: result rows (columns of A) of at most this many entries are sorted by one team
// thread, longer ones up to the hub length (hub_length) by a team; and the columns a team takes (its
// threads' share of short ones).
constexpr int64_t kThreadSort = 64;
constexpr int64_t kColsPerTeam = 128;

// Device spaces: the hub columns' ranking (rank_hub_entries) takes A's entries in at most
// kRankBlocks blocks of at least kRankBlockMin entries, and keeps a cursor per block and hub column:
// at most kRankCursors of them (16 MB of int32 or 32 of int64), which sets the hub length.
constexpr int64_t kRankBlocks = 1024;
constexpr int64_t kRankBlockMin = 4096;
constexpr int64_t kRankCursors = int64_t(1) << 22;

// The entries of a ranking block: at least kRankBlockMin, more where nnz / kRankBlockMin would pass
// kRankBlocks blocks.
inline int64_t rank_block(int64_t nnz) {
  const int64_t per = (nnz + kRankBlocks - 1) / kRankBlocks;
  return per > kRankBlockMin ? per : kRankBlockMin;
}

// Result rows longer than this are ranked, not sorted: the smallest power of two >= 2 kThreadSort at
// which the hub columns' cursors (blocks x hubs, hubs <= nnz / length) stay within kRankCursors. A
// rank costs a hub entry one pass over its block's round (rank_hub_entries) where a team's bitonic
// sort costs log^2 of the column's length in barrier-separated steps, all on one team: on an H200,
// rmat:18:16's hub columns (tens of thousands of entries) kept the op at 19 ms against the cuda
// plugin's 0.7 (2026-12-04). Below the length the bitonic sorts are short and run side by side.
inline int64_t hub_length(int64_t nnz) {
  const int64_t blocks = (nnz + rank_block(nnz) - 1) / rank_block(nnz);
  int64_t h = 2 * kThreadSort;
  while (h < nnz && (nnz / h) * blocks > kRankCursors) h *= 2;
  return h;
}

KOKKOS_INLINE_FUNCTION void heap_sort(int64_t* p, int64_t n) {
  for (int64_t i = n / 2 - 1; i >= 0; --i) sift_down(p, i, n);
  for (int64_t end = n - 1; end > 0; --end) {
    const int64_t tmp = p[0];
    p[0] = p[end];
    p[end] = tmp;
    sift_down(p, 0, end);
  }
}

// Host spaces: the openmp plugin's stable counting sort. Each of P parts (the space's threads)
// takes whole rows of about equal rows + nonzeros and counts its columns in a k-long row of its
// own; one parallel_scan turns the counts into rowptr and into per-(column, part) offsets; each
// part then places its rows in order, so a result row lists A's entries in A's order without a
// sort, atomics or a search per entry. Three launches and one allocation (P x k counts).
template <class I, class V>
void host_transpose(const I* rp, const I* ci, const V* av, I* orp, I* oci, V* ov, I* out_perm, int64_t m, int64_t k,
                    int64_t nnz) {
  const int64_t parts = host_threads(), total = m + nnz;
  Kokkos::View<int64_t*, MemSpace> count_view(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::column_counts"),
      static_cast<size_t>(parts * k));
  int64_t* count = count_view.data();
  const bool copy_values = ov != nullptr && av != nullptr;
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.count", HostParts(0, parts), KOKKOS_LAMBDA(const int64_t p) {
        const int64_t r0 = host_row_at(rp, m, host_split(total, p, parts));
        const int64_t r1 = host_row_at(rp, m, host_split(total, p + 1, parts));
        int64_t* c = count + p * k;
        for (int64_t j = 0; j < k; ++j) c[j] = 0;
        for (int64_t e = static_cast<int64_t>(rp[r0]); e < static_cast<int64_t>(rp[r1]); ++e) ++c[static_cast<int64_t>(ci[e])];
      });
  // Column j's total, and (final pass) rowptr[j + 1] and each part's first slot in column j.
  Kokkos::parallel_scan(
      "sparseport::kokkos::csr_transpose.scan", Range(0, k),
      KOKKOS_LAMBDA(const int64_t j, int64_t& partial, const bool final) {
        int64_t at = partial;
        for (int64_t p = 0; p < parts; ++p) {
          const int64_t n = count[p * k + j];
          if (final) count[p * k + j] = at;
          at += n;
        }
        partial = at;
        if (final) {
          orp[j + 1] = static_cast<I>(at);
          if (j == 0) orp[0] = I(0);
        }
      });
  if (k == 0) orp[0] = I(0);
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.place", HostParts(0, parts), KOKKOS_LAMBDA(const int64_t p) {
        const int64_t r0 = host_row_at(rp, m, host_split(total, p, parts));
        const int64_t r1 = host_row_at(rp, m, host_split(total, p + 1, parts));
        int64_t* c = count + p * k;
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t e = static_cast<int64_t>(rp[i]); e < static_cast<int64_t>(rp[i + 1]); ++e) {
            const int64_t at = c[static_cast<int64_t>(ci[e])]++;
            oci[at] = static_cast<I>(i);
            if (copy_values) ov[at] = av[e];
            if (out_perm != nullptr) out_perm[at] = static_cast<I>(e);
          }
      });
  Kokkos::fence();
}

// Device spaces: perm's slots of the hub columns' entries, in A's order, without a sort. A's entries
// go in blocks of rank_block(nnz); per block and hub a count, then a cursor (the hub's first slot
// plus the counts of the blocks before); a team takes a block in rounds of one entry a team thread,
// and a hub entry's slot is its hub's cursor plus the entries of its hub earlier in the round (a
// look over the round's hub numbers in team scratch); the round's last entry of each hub moves the
// cursor. Two team barriers a round: one before the round's numbers are read, one before the
// cursors move and the numbers are overwritten.
template <class I>
void rank_hub_entries(const I* ci, const I* orp, const I* hub_of, const I* hub_col, int64_t hubs, int64_t nnz,
                      int64_t* perm) {
  const int64_t block = rank_block(nnz), blocks = (nnz + block - 1) / block;
  Kokkos::View<I*, MemSpace> cursor_view("sparseport::kokkos::hub_cursors", static_cast<size_t>(blocks * hubs));  // zeroed
  I* cursor = cursor_view.data();
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.hub_counts", Range(0, nnz), KOKKOS_LAMBDA(const int64_t e) {
        const int64_t h = static_cast<int64_t>(hub_of[static_cast<int64_t>(ci[e])]);
        if (h >= 0) atomic_count(cursor + (e / block) * hubs + h, I(1));
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.hub_cursors", Range(0, hubs), KOKKOS_LAMBDA(const int64_t h) {
        int64_t at = static_cast<int64_t>(orp[static_cast<int64_t>(hub_col[h])]);
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t n = static_cast<int64_t>(cursor[b * hubs + h]);
          cursor[b * hubs + h] = static_cast<I>(at);
          at += n;
        }
      });
  using Seen = Kokkos::View<int64_t*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const int ts = t.team_size(), me = t.team_rank();
    Seen seen(t.team_scratch(0), static_cast<size_t>(ts));
    const int64_t e0 = static_cast<int64_t>(t.league_rank()) * block;
    const int64_t e1 = e0 + block < nnz ? e0 + block : nnz;
    I* cur = cursor + static_cast<int64_t>(t.league_rank()) * hubs;
    for (int64_t r = e0; r < e1; r += ts) {
      const int64_t e = r + me;
      const int64_t h = e < e1 ? static_cast<int64_t>(hub_of[static_cast<int64_t>(ci[e])]) : -1;
      seen(me) = h;
      t.team_barrier();
      int64_t before = 0;
      bool last = true;
      if (h >= 0) {
        for (int j = 0; j < ts; ++j)
          if (seen(j) == h) {
            if (j < me) ++before;
            if (j > me) last = false;
          }
        perm[static_cast<int64_t>(cur[h]) + before] = e;
      }
      t.team_barrier();
      if (h >= 0 && last) cur[h] = static_cast<I>(static_cast<int64_t>(cur[h]) + before + 1);
    }
  };
  // Teams of at most 32 (one warp on CUDA, so a round's look is 32 compares); one where the space
  // allows no more (Serial).
  const size_t bytes = Seen::shmem_size(32);
  const int most = Policy(1, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(bytes)).team_size_max(body, Kokkos::ParallelForTag());
  const int ts = most < 32 ? most : 32;
  Kokkos::parallel_for("sparseport::kokkos::csr_transpose.hub_rank",
                       Policy(static_cast<int>(blocks), ts).set_scratch_size(0, Kokkos::PerTeam(Seen::shmem_size(ts))), body);
}

template <class I, class V>
void transpose(const sparseport_transpose_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  I* out_perm = detail::as_mut<I>(args.perm);
  const int64_t m = args.a.rows, k = args.a.cols, nnz = args.a.nnz;
  if constexpr (!kDeviceMemory) {
    host_transpose(rp, ci, av, orp, oci, ov, out_perm, m, k, nnz);
    return;
  }
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.zero", Range(0, k + 1), KOKKOS_LAMBDA(const int64_t c) { orp[c] = I(0); });
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.count", Range(0, nnz),
      KOKKOS_LAMBDA(const int64_t e) { atomic_count(orp + static_cast<int64_t>(ci[e]) + 1, I(1)); });
  Kokkos::fence();
  exclusive_scan_into(orp, k);
  // The hub columns, result rows of more than `hub` entries, numbered in column order: hub_of[c] is
  // c's number or -1, hub_col[h] the column of number h (there are at most nnz / hub of them).
  const int64_t hub = hub_length(nnz);
  Kokkos::View<I*, MemSpace> hub_of_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::hub_of"),
                                         static_cast<size_t>(k));
  Kokkos::View<I*, MemSpace> hub_col_view(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::hub_col"), static_cast<size_t>(nnz / hub + 1));
  I* hub_of = hub_of_view.data();
  I* hub_col = hub_col_view.data();
  int64_t hubs = 0;
  Kokkos::parallel_scan(
      "sparseport::kokkos::csr_transpose.hubs", Range(0, k),
      KOKKOS_LAMBDA(const int64_t c, int64_t& n, const bool final) {
        const bool is_hub = static_cast<int64_t>(orp[c + 1]) - static_cast<int64_t>(orp[c]) > hub;
        if (final) {
          hub_of[c] = is_hub ? static_cast<I>(n) : I(-1);
          if (is_hub) hub_col[n] = static_cast<I>(c);
        }
        n += is_hub ? 1 : 0;
      },
      hubs);
  Kokkos::View<I*, MemSpace> next_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::next"),
                                       static_cast<size_t>(k));
  Kokkos::View<int64_t*, MemSpace> perm_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::perm"),
                                             static_cast<size_t>(nnz));
  I* next = next_view.data();
  int64_t* perm = perm_view.data();
  if (hubs > 0) rank_hub_entries(ci, orp, hub_of, hub_col, hubs, nnz, perm);
  // The other columns' entries, in any order within a column (sorted below).
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.cursor", Range(0, k), KOKKOS_LAMBDA(const int64_t c) { next[c] = orp[c]; });
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.place", Range(0, nnz), KOKKOS_LAMBDA(const int64_t e) {
        const int64_t c = static_cast<int64_t>(ci[e]);
        if (hub_of[c] >= 0) return;  // ranked
        perm[static_cast<int64_t>(atomic_count(next + c, I(1)))] = e;
      });
  // Each other result row sorted by position in A: a row of at most kThreadSort entries by one team
  // thread (heap sort), a longer one by the whole team (Kokkos Kernels' bitonic sort, n log^2 n /
  // team size steps). A team takes kColsPerTeam columns: its threads sort the short ones, then the
  // team sorts each long one in turn (every team thread sees the same lengths, so all reach the
  // bitonic sort's barriers).
  const int teams = static_cast<int>((k + kColsPerTeam - 1) / kColsPerTeam);
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.order", Policy(teams, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t c0 = static_cast<int64_t>(team.league_rank()) * kColsPerTeam;
        const int64_t c1 = c0 + kColsPerTeam < k ? c0 + kColsPerTeam : k;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c0, c1), [&](const int64_t c) {
          const int64_t b = static_cast<int64_t>(orp[c]), n = static_cast<int64_t>(orp[c + 1]) - b;
          if (n <= kThreadSort) heap_sort(perm + b, n);
        });
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t b = static_cast<int64_t>(orp[c]), n = static_cast<int64_t>(orp[c + 1]) - b;
          if (n > kThreadSort && n <= hub)
            KokkosKernels::Impl::TeamBitonicSort<int64_t, int64_t, Member>(perm + b, n, team);
        }
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_transpose.fill", Range(0, nnz), KOKKOS_LAMBDA(const int64_t o) {
        const int64_t e = perm[o];
        // The last row whose start is <= e holds e (empty rows before it share its start).
        const int64_t row = lower_bound(rp, m + 1, e + 1) - 1;
        oci[o] = static_cast<I>(row);
        if (ov != nullptr) ov[o] = av[e];
        if (out_perm != nullptr) out_perm[o] = static_cast<I>(e);
      });
  Kokkos::fence();
}

}  // namespace

void csr_transpose(const sparseport_transpose_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { transpose<I, V>(args); });
}

}  // namespace sparseport::kokkos
