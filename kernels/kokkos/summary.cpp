// SPDX-License-Identifier: Apache-2.0
// The CSR summary (the summarize_csr slot, ABI 1.3/1.4) and the index check (check_indices, ABI
// 1.2) where the arrays live. Without them a device space (Kokkos-CUDA) had the front end copy a
// CSR's rowptr and colind to the host to check them, and the scheduler copy them to summarize
// them; here only the result words (under 1 KB) come back, in one copy.
//
// The summary's numbers are scheduler/summary.cpp's bit for bit: the arithmetic is the cuda
// plugin's (kernels/summary_math.hpp, host and device code, each function tested against the
// definition's), and every number is an integer sum or maximum added into the words with atomics,
// so neither the launch shape nor the order changes it. The kernels, on the default execution space:
//  - the signature: the at most SPARSEPORT_SUMMARY_SAMPLE samples of rowptr and of colind hashed
//    (all that a SIGNATURE-only call reads);
//  - FEATURES: teams of kChunk rows (degrees) and teams of kChunk entries (distances; an entry finds
//    its row by a search over the rows its chunk spans, so a mega-row is spread over many teams like
//    any other entries), the histograms counted in team scratch and added to the words once per
//    team and bucket; then a team per sampled 32-row block: its first SPARSEPORT_SUMMARY_BLOCK_CAP
//    columns copied into team scratch, sorted there (Kokkos Kernels' team bitonic sort, as
//    csr_transpose sorts its rows), and the distinct columns and 32-column segments counted between
//    neighbours;
//  - CHECK, and check_indices: one pass over rowptr and colind (or the index array) that records the
//    first violation of each kind as ~position by atomic max (so zero, where the words start, means
//    none), then one thread puts the report together in the host check's order (src/ops/common.cpp).
//    No early exit: an invalid input costs the whole pass, a valid one nothing more.
// On a host space these run too (the tests run them on Kokkos-OpenMP), but the scheduler keeps the
// host definition for host memory (threads and stamps, no sort: scheduler/summary.cpp) and the
// front end checks host memory itself.
#include <KokkosKernels_Sorting.hpp>

#include <cstdint>
#include <mutex>

#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "kernels/summary_math.hpp"

namespace sparseport::kokkos {
namespace {

namespace sm = sparseport::summary_math;

using Word = unsigned long long;
using Hist = Kokkos::View<Word*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr int kBuckets = SPARSEPORT_SUMMARY_BUCKETS;
// Rows or entries a team of the FEATURES passes takes.
constexpr int64_t kChunk = 1024;
// Team threads at most: a CUDA block of 256, four of a block's 1024 columns each for the sort. A
// host space's teams are at most its threads; on Kokkos-OpenMP the tests' teams so share barriers,
// scratch and atomics between real threads.
constexpr int kTeam = 256;

// The result words.
enum Slot : int {
  kRowptrSum,
  kColindSum,
  kMaxDegree,
  kDistanceSum,
  kBlockEntries,
  kBlockDistinct,
  kBlockSegments,
  kBadRow,    // ~(first i with rowptr[i + 1] < rowptr[i]); 0: none
  kBadEntry,  // ~(first e with colind[e] outside [0, cols)), or ~(an index array's first key); 0: none
  kProblem,   // the report (sparseport_index_report), by one thread after the pass
  kPosition,
  kRow,
  kValue,
  kValue2,
  kDegreeHist,
  kDistanceHist = kDegreeHist + kBuckets,
  kSlots = kDistanceHist + kBuckets
};

// The workspace's words, zeroed. With w.lock held until they are read back.
Word* zeroed_words(OpWorkspace& w) {
  hook_op_workspace(w);
  Word* words = grown(w.words, kSlots, "sparseport::kokkos::summary_words");
  Kokkos::parallel_for(
      "sparseport::kokkos::summary.zero", Range(0, kSlots), KOKKOS_LAMBDA(const int64_t s) { words[s] = 0; });
  return words;
}

// After the kernels (deep_copy fences first).
void read_words(const Word* words, Word (&out)[kSlots]) {
  Kokkos::deep_copy(Kokkos::View<Word*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(out, kSlots),
                    Kokkos::View<const Word*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(words, kSlots));
}

// Teams of at most kTeam threads over `league` league ranks, `scratch` bytes of team scratch each.
template <class Body>
Policy teams(int64_t league, size_t scratch, const Body& body) {
  const int most = Policy(1, Kokkos::AUTO)
                       .set_scratch_size(0, Kokkos::PerTeam(scratch))
                       .team_size_max(body, Kokkos::ParallelForTag());
  return Policy(static_cast<int>(league), most < kTeam ? most : kTeam).set_scratch_size(0, Kokkos::PerTeam(scratch));
}

// The last row i in [lo, hi) with rowptr[i] <= e, or lo (e's row when rowptr is valid and e is in
// rows [lo, hi)). Reads rowptr inside [lo, hi) only, whatever its contents.
template <class I>
KOKKOS_INLINE_FUNCTION int64_t row_of(const I* rowptr, int64_t lo, int64_t hi, int64_t e) {
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(rowptr[mid]) <= e)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// A team's histogram in its scratch, zeroed.
KOKKOS_INLINE_FUNCTION Hist zeroed_hist(const Member& t) {
  const Hist hist(t.team_scratch(0), kBuckets);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(t, kBuckets), [&](const int b) { hist(b) = 0; });
  t.team_barrier();
  return hist;
}

// The team's histogram added to the words at `to`, nonzero buckets only; the last barrier keeps the
// team's next league rank from zeroing a bucket before it is read.
KOKKOS_INLINE_FUNCTION void add_hist(const Member& t, const Hist& hist, Word* to) {
  t.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(t, kBuckets), [&](const int b) {
    if (hist(b) != 0) Kokkos::atomic_add(to + b, hist(b));
  });
  t.team_barrier();
}

// The signature's terms: each sampled entry with its position (summary.cpp, sample_hash).
template <class I>
void hash_samples(const I* rowptr, const I* colind, const sm::SampleParams& rs, const sm::SampleParams& cs,
                  Word* words) {
  const int64_t nr = rs.samples;
  Kokkos::parallel_for(
      "sparseport::kokkos::summary.signature", Range(0, rs.samples + cs.samples), KOKKOS_LAMBDA(const int64_t j) {
        if (j < nr) {
          const int64_t i = sm::sample_position(j, rs);
          Kokkos::atomic_add(words + kRowptrSum, static_cast<Word>(sm::hash_term(static_cast<int64_t>(rowptr[i]), i)));
        } else {
          const int64_t e = sm::sample_position(j - nr, cs);
          Kokkos::atomic_add(words + kColindSum, static_cast<Word>(sm::hash_term(static_cast<int64_t>(colind[e]), e)));
        }
      });
}

// max_degree and the degree histogram (summary.cpp, count_rows), kChunk rows a team.
template <class I>
void count_degrees(const I* rowptr, int64_t rows, Word* words) {
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const Hist hist = zeroed_hist(t);
    const int64_t r0 = static_cast<int64_t>(t.league_rank()) * kChunk;
    const int64_t r1 = r0 + kChunk < rows ? r0 + kChunk : rows;
    int64_t most = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(t, r0, r1),
        [&](const int64_t i, int64_t& m) {
          const int64_t d = static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]);
          Kokkos::atomic_add(&hist(sm::bucket(static_cast<uint64_t>(d))), Word(1));
          m = d > m ? d : m;
        },
        Kokkos::Max<int64_t>(most));
    add_hist(t, hist, words + kDegreeHist);
    // The definition's maximum starts at 0.
    Kokkos::single(Kokkos::PerTeam(t), [&]() {
      if (most > 0) Kokkos::atomic_fetch_max(words + kMaxDegree, static_cast<Word>(most));
    });
  };
  Kokkos::parallel_for("sparseport::kokkos::summary.degrees",
                       teams((rows + kChunk - 1) / kChunk, Hist::shmem_size(kBuckets), body), body);
}

// The distance histogram and sum (summary.cpp, count_rows), kChunk entries a team. rows > 0.
template <class I>
void count_distances(const I* rowptr, const I* colind, int64_t rows, int64_t nnz, const sm::DiagParams& diag,
                     const sm::DistanceParams& dist, Word* words) {
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const Hist hist = zeroed_hist(t);
    const int64_t e0 = static_cast<int64_t>(t.league_rank()) * kChunk;
    const int64_t e1 = e0 + kChunk < nnz ? e0 + kChunk : nnz;
    // The rows of the chunk's first and last entries: each entry's row is searched between them.
    const int64_t r0 = row_of(rowptr, 0, rows, e0), r1 = row_of(rowptr, r0, rows, e1 - 1);
    Word sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(t, e0, e1),
        [&](const int64_t e, Word& s) {
          const int64_t i = row_of(rowptr, r0, r1 + 1, e);
          const uint64_t x = sm::distance(static_cast<int64_t>(colind[e]), sm::diagonal(i, diag));
          Kokkos::atomic_add(&hist(sm::bucket(x)), Word(1));
          s += sm::distance_term(x, dist);
        },
        sum);
    add_hist(t, hist, words + kDistanceHist);
    Kokkos::single(Kokkos::PerTeam(t), [&]() {
      if (sum != 0) Kokkos::atomic_add(words + kDistanceSum, sum);
    });
  };
  Kokkos::parallel_for("sparseport::kokkos::summary.distances",
                       teams((nnz + kChunk - 1) / kChunk, Hist::shmem_size(kBuckets), body), body);
}

static_assert(SPARSEPORT_SUMMARY_BLOCK_CAP < (int64_t{1} << 32), "a block's two counts share a 64-bit word");

// Sampled block j: summary.cpp's b = j * nblocks / sampled, its first min(entries, cap) columns
// sorted, distinct columns and distinct col >> 5 segments counted (as the definition's sort path
// counts them, so a column outside [0, cols) is a value like any other). nnz > 0.
template <class I>
void count_blocks(const I* rowptr, const I* colind, int64_t rows, int64_t nnz, int64_t nblocks, int64_t sampled,
                  Word* words) {
  using Cols = Kokkos::View<I*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto body = KOKKOS_LAMBDA(const Member& t) {
    const int64_t b = static_cast<int64_t>(t.league_rank()) * nblocks / sampled;
    const int64_t first = static_cast<int64_t>(rowptr[32 * b]);
    const int64_t last = static_cast<int64_t>(rowptr[32 * b + 32 < rows ? 32 * b + 32 : rows]);
    int64_t n = last - first < SPARSEPORT_SUMMARY_BLOCK_CAP ? last - first : SPARSEPORT_SUMMARY_BLOCK_CAP;
    if (first < 0 || first > nnz) n = 0;  // an invalid rowptr only: stay inside colind
    if (n > nnz - first) n = nnz - first;
    if (n <= 0) return;  // the whole team alike
    const Cols cols(t.team_scratch(0), SPARSEPORT_SUMMARY_BLOCK_CAP);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, n), [&](const int64_t k) { cols(k) = colind[first + k]; });
    t.team_barrier();
    KokkosKernels::Impl::TeamBitonicSort<int64_t, I, Member>(cols.data(), n, t);  // ends with a barrier
    // Both counts in one reduction, the distinct columns in the low 32 bits and the segments above
    // (n <= 1024). Two reductions of one type back to back raced on Kokkos 3.4's CUDA team
    // reduction: its result slots are static shared memory that every thread reads after the last
    // barrier (Kokkos_Cuda_ReduceScan.hpp, cuda_inter_warp_reduction), so a warp that starts the
    // second reduction can overwrite the first's result before a slower warp has read it. Under
    // compute-sanitizer (H100, 2026-12-06) block_distinct came out 6-19 short of the definition in
    // KokkosSummary.*. The reduction's result is read before the barriers of the team's next league
    // rank, so no thread reaches that rank (which overwrites the scratch) while another still reads.
    Word both = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(t, n),
        [&](const int64_t k, Word& v) {
          const Word column = k == 0 || cols(k) != cols(k - 1);
          const Word segment = k == 0 || (cols(k) >> 5) != (cols(k - 1) >> 5);
          v += column + (segment << 32);
        },
        both);
    Kokkos::single(Kokkos::PerTeam(t), [&]() {
      Kokkos::atomic_add(words + kBlockEntries, static_cast<Word>(n));
      Kokkos::atomic_add(words + kBlockDistinct, both & 0xffffffffULL);
      Kokkos::atomic_add(words + kBlockSegments, both >> 32);
    });
  };
  Kokkos::parallel_for("sparseport::kokkos::summary.blocks",
                       teams(sampled, Cols::shmem_size(SPARSEPORT_SUMMARY_BLOCK_CAP), body), body);
}

// A CSR's first violation, in the report words: rowptr[0] != 0, rowptr[rows] != nnz, the first
// decreasing row, the first column outside [0, cols), in that order (src/ops/common.cpp,
// host_csr_report; its column loop reads rows only once rowptr is sound, when they cover exactly
// the entries [0, nnz), so every entry is compared here).
template <class I>
void check_csr_words(const I* rowptr, const I* colind, int64_t rows, int64_t nnz, int64_t cols, Word* words) {
  Kokkos::parallel_for(
      "sparseport::kokkos::check_csr", Range(0, rows > nnz ? rows : nnz), KOKKOS_LAMBDA(const int64_t i) {
        if (i < rows && rowptr[i + 1] < rowptr[i]) Kokkos::atomic_fetch_max(words + kBadRow, ~static_cast<Word>(i));
        if (i < nnz) {
          const auto c = static_cast<int64_t>(colind[i]);
          if (c < 0 || c >= cols) Kokkos::atomic_fetch_max(words + kBadEntry, ~static_cast<Word>(i));
        }
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::check_csr.report", Range(0, 1), KOKKOS_LAMBDA(const int64_t) {
        const auto start = static_cast<int64_t>(rowptr[0]), end = static_cast<int64_t>(rowptr[rows]);
        int64_t problem = SPARSEPORT_INDEX_OK, position = 0, row = 0, value = 0, value2 = 0;
        if (start != 0) {
          problem = SPARSEPORT_INDEX_ROWPTR_START;
          value = start;
        } else if (end != nnz) {
          problem = SPARSEPORT_INDEX_ROWPTR_END;
          position = row = rows;
          value = end;
        } else if (words[kBadRow] != 0) {
          problem = SPARSEPORT_INDEX_ROWPTR_DECREASES;
          position = row = static_cast<int64_t>(~words[kBadRow]);
          value = static_cast<int64_t>(rowptr[row]);
          value2 = static_cast<int64_t>(rowptr[row + 1]);
        } else if (words[kBadEntry] != 0) {  // rowptr is sound here, so rows > 0
          problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
          position = static_cast<int64_t>(~words[kBadEntry]);
          row = row_of(rowptr, 0, rows, position);
          value = static_cast<int64_t>(colind[position]);
        }
        words[kProblem] = static_cast<Word>(problem);
        words[kPosition] = static_cast<Word>(position);
        words[kRow] = static_cast<Word>(row);
        words[kValue] = static_cast<Word>(value);
        words[kValue2] = static_cast<Word>(value2);
      });
}

// An index array's first violation (host_index_report): key 2e for an entry outside [0, bound),
// 2e + 1 for one below the entry before it (sorted only), so the smallest key is the first
// violation, a range error before an order error at the same entry.
template <class I>
void check_index_words(const I* index, int64_t n, int64_t bound, bool sorted, Word* words) {
  Kokkos::parallel_for(
      "sparseport::kokkos::check_index", Range(0, n), KOKKOS_LAMBDA(const int64_t e) {
        const auto v = static_cast<int64_t>(index[e]);
        if (v < 0 || v >= bound)
          Kokkos::atomic_fetch_max(words + kBadEntry, ~(2 * static_cast<Word>(e)));
        else if (sorted && e > 0 && v < static_cast<int64_t>(index[e - 1]))
          Kokkos::atomic_fetch_max(words + kBadEntry, ~(2 * static_cast<Word>(e) + 1));
      });
  Kokkos::parallel_for(
      "sparseport::kokkos::check_index.report", Range(0, 1), KOKKOS_LAMBDA(const int64_t) {
        if (words[kBadEntry] == 0) return;  // the report words stay zero: problem 0
        const Word key = ~words[kBadEntry];
        const auto e = static_cast<int64_t>(key / 2);
        words[kPosition] = static_cast<Word>(e);
        if (key % 2 == 0) {
          words[kProblem] = SPARSEPORT_INDEX_OUT_OF_RANGE;
          words[kValue] = static_cast<Word>(static_cast<int64_t>(index[e]));
        } else {
          words[kProblem] = SPARSEPORT_INDEX_UNSORTED;
          words[kValue] = static_cast<Word>(static_cast<int64_t>(index[e - 1]));
          words[kValue2] = static_cast<Word>(static_cast<int64_t>(index[e]));
        }
      });
}

sparseport_index_report report_of(const Word (&w)[kSlots]) {
  sparseport_index_report r{};
  r.problem = static_cast<int32_t>(w[kProblem]);
  r.position = static_cast<int64_t>(w[kPosition]);
  r.row = static_cast<int64_t>(w[kRow]);
  r.value = static_cast<int64_t>(w[kValue]);
  r.value2 = static_cast<int64_t>(w[kValue2]);
  return r;
}

template <class I>
sparseport_csr_summary summarize_typed(const sparseport_csr& a, uint32_t want) {
  const auto* rowptr = static_cast<const I*>(a.rowptr);
  const auto* colind = static_cast<const I*>(a.colind);
  // DEGREES (ABI 1.9) is answered with all of FEATURES, which the ABI allows: a degrees-only pass
  // would spare a shape class's decision on a device space the entry teams and the sorts, as the
  // cuda plugin's does (not written for Kokkos yet).
  const bool features = (want & (SPARSEPORT_SUMMARY_FEATURES | SPARSEPORT_SUMMARY_DEGREES)) != 0,
             check = (want & SPARSEPORT_SUMMARY_CHECK) != 0;
  const sm::SampleParams rs = sm::sample_params(a.rows + 1), cs = sm::sample_params(a.nnz);
  const int64_t nblocks = (a.rows + 31) / 32;
  const int64_t sampled = nblocks < SPARSEPORT_SUMMARY_BLOCKS ? nblocks : SPARSEPORT_SUMMARY_BLOCKS;
  Word w[kSlots];
  {
    OpWorkspace& ws = op_workspace();
    std::lock_guard<std::mutex> guard(ws.lock);
    Word* words = zeroed_words(ws);
    hash_samples(rowptr, colind, rs, cs, words);
    if (features && a.rows > 0) {
      count_degrees(rowptr, a.rows, words);
      if (a.nnz > 0) {
        count_distances(rowptr, colind, a.rows, a.nnz, sm::diag_params(a.rows, a.cols), sm::distance_params(a.cols),
                        words);
        count_blocks(rowptr, colind, a.rows, a.nnz, nblocks, sampled, words);
      }
    }
    if (check) check_csr_words(rowptr, colind, a.rows, a.nnz, a.cols, words);
    read_words(words, w);
  }
  sparseport_csr_summary s{};
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz;
  s.rowptr_hash = sm::hash_finish(w[kRowptrSum], rs.samples);
  s.colind_hash = sm::hash_finish(w[kColindSum], cs.samples);
  if (features) {
    s.max_degree = static_cast<int64_t>(w[kMaxDegree]);
    for (int b = 0; b < kBuckets; ++b) {
      s.degree_hist[b] = static_cast<int64_t>(w[kDegreeHist + b]);
      s.distance_hist[b] = static_cast<int64_t>(w[kDistanceHist + b]);
    }
    s.distance_sum = w[kDistanceSum];
    s.block_entries = static_cast<int64_t>(w[kBlockEntries]);
    s.block_distinct = static_cast<int64_t>(w[kBlockDistinct]);
    s.block_segments = static_cast<int64_t>(w[kBlockSegments]);
    s.blocks = sampled;
  }
  if (check) {
    s.index_checked = 1;
    s.index_problem = static_cast<int32_t>(w[kProblem]);
  }
  return s;
}

template <class I>
sparseport_index_report check_csr(const sparseport_csr& a) {
  Word w[kSlots];
  OpWorkspace& ws = op_workspace();
  std::lock_guard<std::mutex> guard(ws.lock);
  Word* words = zeroed_words(ws);
  check_csr_words(static_cast<const I*>(a.rowptr), static_cast<const I*>(a.colind), a.rows, a.nnz, a.cols, words);
  read_words(words, w);
  return report_of(w);
}

template <class I>
sparseport_index_report check_index(const sparseport_index_array& idx, int64_t bound, bool sorted) {
  Word w[kSlots];
  OpWorkspace& ws = op_workspace();
  std::lock_guard<std::mutex> guard(ws.lock);
  Word* words = zeroed_words(ws);
  check_index_words(static_cast<const I*>(idx.data), idx.n, bound, sorted, words);
  read_words(words, w);
  return report_of(w);
}

}  // namespace

sparseport_csr_summary summarize_csr(const sparseport_csr& a, uint32_t want) {
  return a.index_type == SPARSEPORT_I64 ? summarize_typed<int64_t>(a, want) : summarize_typed<int32_t>(a, want);
}

sparseport_index_report check_indices(const sparseport_index_check& c) {
  if (c.kind == SPARSEPORT_CHECK_CSR)
    return c.csr.index_type == SPARSEPORT_I64 ? check_csr<int64_t>(c.csr) : check_csr<int32_t>(c.csr);
  if (c.index.n <= 0) return {};
  const bool sorted = c.kind == SPARSEPORT_CHECK_SORTED_INDEX;
  return c.index.index_type == SPARSEPORT_I64 ? check_index<int64_t>(c.index, c.bound, sorted)
                                              : check_index<int32_t>(c.index, c.bound, sorted);
}

}  // namespace sparseport::kokkos
