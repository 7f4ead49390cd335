// SPDX-License-Identifier: Apache-2.0
#include "scheduler/summary.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {
namespace {

// The block counts use stamps (2 bytes a column, zeroed once) while the columns are at most this
// many times the sampled entries: zeroing then costs at most 16 bytes a sampled entry, about what
// the sort it replaces costs an entry (log2 of a block's entries, 8-10 compares).
constexpr int64_t kStampsPerEntry = 8;

// The signature hash of v[0..n) (plugin_abi.h): S = min(n, SPARSEPORT_SUMMARY_SAMPLE) entries,
// every entry when n <= S (then the hash is the one every entry gave before issue 35, so those
// cache lines still replay), else R = S / L runs of L = SPARSEPORT_SUMMARY_RUN consecutive entries
// starting at floor(r * (n - L) / (R - 1)): the first and the last entry always.
// Why a small sample of both arrays and not every rowptr entry: a cache hit in a new process must
// cost <= 50 us (issue 35). On rmat:20:16 (1M rows, 16.1M entries; the 2-core VM, the operands made
// as cache_hit_cost makes them, each part timed once cold in a fresh process, medians of 3) the
// summary took 3.3 ms: 2.5 ms hashing all 1M rowptr entries (0.63 ms of it the loads alone; the
// hashing ~1 ms even warm) and 0.8 ms (0.55-1.2) the 16384 colind samples. So the count of cold
// entries is the price: 64 a side took 15 us, 128 took 25 us, 256 took 42 us, 1024 took 111 us.
// Why runs: a cold sample costs its page and its line (the caller's own data, B and C of hundreds
// of MB, has just pushed A out of every cache and the TLB), not its 4 or 8 bytes. 128 single
// entries a side, evenly spaced, were 128 pages each; 8 runs of 16 are 8 pages and 8-16 lines each,
// the same 128 entries. On rmat:20:16 in a new process (cache_hit_cost --backend openmp, the 2-vCPU
// Xeon VM, alternating) a hit went from 74-76 to 63-64 us; the summary call alone is now ~12 us
// (timestamps in a scratch build). Standalone, one int32 array of 64 MB evicted by 512 MB: 256
// entries evenly spaced took 27-28 us, the same count in 8 runs of 32 lines 9 us. What the runs
// miss that spaced entries saw: a change confined to the stretches between runs, as before between
// samples (TheSampledSignatureTellsApartWhatItSamples).
template <class I>
uint64_t sample_hash(const I* v, int64_t n) {
  const int64_t samples = std::min<int64_t>(n, SPARSEPORT_SUMMARY_SAMPLE);
  uint64_t h = 0;
  if (n <= SPARSEPORT_SUMMARY_SAMPLE) {
    for (int64_t e = 0; e < n; ++e) h += hash_term(static_cast<int64_t>(v[e]), e);
    return hash_finish(h, samples);
  }
  constexpr int64_t kRun = SPARSEPORT_SUMMARY_RUN, kGaps = SPARSEPORT_SUMMARY_SAMPLE / kRun - 1;
  for (int64_t r = 0; r <= kGaps; ++r) {
    // floor(r * (n - L) / (R - 1)) without the product: n - L = q (R - 1) + rem.
    const int64_t first = r * ((n - kRun) / kGaps) + r * ((n - kRun) % kGaps) / kGaps;
    for (int64_t e = first; e < first + kRun; ++e) h += hash_term(static_cast<int64_t>(v[e]), e);
  }
  return hash_finish(h, samples);
}

// The entry pass over rows [r0, r1): max_degree, the degree and distance histograms and the
// distance sum, added into s. Everything it adds is an integer count or sum (or a maximum), so
// parts counted apart and added up give the same numbers in any split.
template <class I>
void count_rows(const I* rowptr, const I* colind, const sparseport_csr& a, int64_t r0, int64_t r1,
                sparseport_csr_summary& s) {
  const bool square = a.rows == a.cols;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t begin = rowptr[i], end = rowptr[i + 1], d = end - begin;
    s.max_degree = std::max(s.max_degree, d);
    ++s.degree_hist[summary_bucket(static_cast<uint64_t>(d))];
    const int64_t diag = square ? i : diagonal_of(i, a.rows, a.cols);  // the same number, no 128-bit division
    for (int64_t e = begin; e < end; ++e) {
      const int64_t c = colind[e];
      const uint64_t x = static_cast<uint64_t>(c > diag ? c - diag : diag - c);
      ++s.distance_hist[summary_bucket(x)];
      s.distance_sum += a.cols > 0 ? (x << 20) / static_cast<uint64_t>(a.cols) : 0;
    }
  }
}

// The sampled blocks (plugin_abi.h): block j is the 32-row block b = j * nblocks / sampled, of
// which its first SPARSEPORT_SUMMARY_BLOCK_CAP entries (in storage order) count.
struct SampledBlocks {
  int64_t nblocks, sampled;
  template <class I>
  std::pair<int64_t, int64_t> range(const I* rowptr, int64_t rows, int64_t j) const {  // first entry, entries
    const int64_t b = j * nblocks / sampled;
    const int64_t first = rowptr[32 * b], last = rowptr[std::min<int64_t>(32 * b + 32, rows)];
    return {first, std::min<int64_t>(last - first, SPARSEPORT_SUMMARY_BLOCK_CAP)};
  }
};

// Blocks [j0, j1): their entries, distinct columns and distinct 32-column segments, added into s.
// Counted with a stamp per column and per segment (the block's number, so nothing is cleared
// between blocks) where the stamps' memory, 2 bytes a column, is within a few times these blocks'
// entries; else by sorting each block. Both give the same numbers. Sorting every block was most of
// a cold decision on mid-sized matrices: on copter2 (704k entries, 2048 blocks of ~400) the
// features took ~20 ms of a 26 ms decision, 12 of them in std::sort (the 2-core VM, perf).
template <class I>
void count_blocks(const I* rowptr, const I* colind, const sparseport_csr& a, const SampledBlocks& sb, int64_t j0,
                  int64_t j1, sparseport_csr_summary& s) {
  int64_t entries = 0;
  for (int64_t j = j0; j < j1; ++j) entries += sb.range(rowptr, a.rows, j).second;
  static_assert(SPARSEPORT_SUMMARY_BLOCKS < 65536, "a block's number fits a 16-bit stamp");
  const bool stamps = a.cols <= kStampsPerEntry * entries;
  std::vector<uint16_t> col_seen(stamps ? static_cast<size_t>(a.cols) : 0), seg_seen(stamps ? static_cast<size_t>(a.cols / 32 + 1) : 0);
  std::vector<int64_t> cols;
  for (int64_t j = j0; j < j1; ++j) {
    const auto [first, n] = sb.range(rowptr, a.rows, j);
    const I* c = colind + first;
    // A column out of range happens only where FEATURES was asked before the index check (the ABI
    // forbids it); the plugins' summaries then still count it as a value of its own, as the sort
    // does, so such a block is sorted (a stamp has no slot for it).
    if (stamps && std::all_of(c, c + n, [&](I x) { return x >= 0 && static_cast<int64_t>(x) < a.cols; })) {
      const auto stamp = static_cast<uint16_t>(j + 1);
      for (int64_t k = 0; k < n; ++k) {
        const auto x = static_cast<size_t>(c[k]);
        s.block_distinct += col_seen[x] != stamp;
        col_seen[x] = stamp;
        s.block_segments += seg_seen[x >> 5] != stamp;
        seg_seen[x >> 5] = stamp;
      }
      continue;
    }
    cols.assign(c, c + n);
    std::sort(cols.begin(), cols.end());
    for (int64_t k = 0; k < n; ++k) {
      s.block_distinct += k == 0 || cols[k] != cols[k - 1];
      s.block_segments += k == 0 || (cols[k] >> 5) != (cols[k - 1] >> 5);
    }
  }
  s.block_entries += entries;
}

// The entry pass and the sampled blocks split over up to `threads` threads: part p takes a range of
// rows holding about the same rows + entries, where each part gets at least kEntriesPerThread of
// them, then an equal share of the sampled blocks. Why: the entry pass costs ~4 ns an entry on the
// 2-core VM whatever is done about its arithmetic (a division-free distance term, interleaved
// histograms: no gain, standalone, 16M entries), so it was the largest part of a large input's
// features (rmat:20:16, 16.1M entries: 65 ms of a 760 ms cold decision; 2 threads standalone: 69
// -> 36 ms). The blocks ran after it on one thread: on copter2 (704k entries, F = 32) 1.1-1.25 ms of
// its 2.7-3.2 ms features; split as well, the features took 2.10 ms against 2.75 (medians of 7
// cold decisions each, the arms alternating; benchmarks/results/2026-12-06-cpu-cold-vendor-blocks.md).
// Below ~1 ms of work (2^18 rows + entries) a thread's start is not worth it: with 2^17, two parts
// made the features of cit-HepPh and wing slower in the median (2.98 against 2.24 ms, 2.57 against
// 1.60; bimodal: 1.5 or 4-5 ms).
// That bimodality was the op's OpenMP workers: libgomp's spin after a parallel region holds a core
// while the scheduler's second thread wants it. With OMP_WAIT_POLICY=passive copter2's features
// took 3.5-4.4 ms against 4.9-7.0 (2026-12-08, 4 runs each). So where a host plugin has the
// run_parts slot (the openmp plugin, ABI 1.10) its own team counts the parts: no thread to start,
// no worker to compete with, and parts pay from 2^13 rows + entries. Measured (the 2-core VM, F =
// 64, medians of 4-5 alternating cold decisions; benchmarks/results/2026-12-08-s45.md): copter2's
// features 5.95 -> 3.32 ms on the team at the same split; with parts from 2^15 instead of 2^18,
// cit-HepPh 4.04 -> 2.42, wing 2.62 -> 1.64, astro-ph 2.20 -> 1.33; from 2^13 instead of 2^15,
// polblogs (19k) 0.35 -> 0.23, no input slower beyond the noise (~0.1 ms).
// Every number is an integer count or sum (or a maximum), so the parts added up give the same
// numbers in any split.
constexpr int64_t kEntriesPerThread = int64_t{1} << 18, kEntriesPerTeamPart = int64_t{1} << 13;

// The run_parts of a plugin without the slot: part 0 on the calling thread, the others on threads
// started here (the calling thread counts a part itself where no thread is to be had).
int own_threads(const sparseport_exec*, int64_t parts, void (*fn)(int64_t, void*), void* arg, sparseport_status*) {
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(parts - 1));
  for (int64_t p = 1; p < parts; ++p) {
    try {
      helpers.emplace_back(fn, p, arg);
    } catch (const std::system_error&) {
      fn(p, arg);
    }
  }
  fn(0, arg);
  for (std::thread& t : helpers) t.join();
  return SPARSEPORT_OK;
}

template <class I>
void count_parallel(const I* rowptr, const I* colind, const sparseport_csr& a, const SampledBlocks& sb, int threads,
                    const PartRunner& runner, sparseport_csr_summary& s) {
  const int64_t work = a.rows + a.nnz;
  const int64_t per_part = runner.run_parts != nullptr ? kEntriesPerTeamPart : kEntriesPerThread;
  const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(threads, work / per_part), 1, 64);
  // Part p starts at the first row whose rows + entries before it reach p / parts of the work.
  std::vector<int64_t> first(static_cast<size_t>(parts + 1), a.rows);
  first[0] = 0;
  for (int64_t p = 1; p < parts; ++p) {
    const int64_t target = work * p / parts;
    int64_t lo = first[static_cast<size_t>(p - 1)], hi = a.rows;  // the first row i with i + rowptr[i] >= target
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (mid + static_cast<int64_t>(rowptr[mid]) < target) lo = mid + 1;
      else hi = mid;
    }
    first[static_cast<size_t>(p)] = lo;
  }
  std::vector<sparseport_csr_summary> part(static_cast<size_t>(parts), sparseport_csr_summary{});
  const auto count = [&](size_t p) {
    count_rows(rowptr, colind, a, first[p], first[p + 1], part[p]);
    count_blocks(rowptr, colind, a, sb, sb.sampled * static_cast<int64_t>(p) / parts,
                 sb.sampled * static_cast<int64_t>(p + 1) / parts, part[p]);
  };
  if (parts == 1) {
    count(0);
  } else {
    // On the plugin's threads (ABI 1.10) or the scheduler's own. fn must not throw (a C interface,
    // or a thread's end): a part's exception (the stamps' allocation) is kept and the first one
    // rethrown here.
    struct Job {
      const decltype(count)* part;
      std::vector<std::exception_ptr> errors;
    } job{&count, std::vector<std::exception_ptr>(static_cast<size_t>(parts))};
    const auto one_part = [](int64_t p, void* arg) {
      auto* j = static_cast<Job*>(arg);
      try {
        (*j->part)(static_cast<size_t>(p));
      } catch (...) {
        j->errors[static_cast<size_t>(p)] = std::current_exception();
      }
    };
    const auto run = runner.run_parts != nullptr ? runner.run_parts : own_threads;
    sparseport_status st{};
    if (run(runner.exec, parts, one_part, &job, &st) != SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: the plugin's run_parts for the FEATURES pass");
    for (const std::exception_ptr& e : job.errors)
      if (e) std::rethrow_exception(e);
  }
  for (const sparseport_csr_summary& q : part) {
    s.max_degree = std::max(s.max_degree, q.max_degree);
    for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
      s.degree_hist[b] += q.degree_hist[b];
      s.distance_hist[b] += q.distance_hist[b];
    }
    s.distance_sum += q.distance_sum;
    s.block_entries += q.block_entries;
    s.block_distinct += q.block_distinct;
    s.block_segments += q.block_segments;
  }
}

template <class I>
sparseport_csr_summary summarize_typed(const sparseport_csr& a, uint32_t want, int threads, const PartRunner& runner) {
  const auto* rowptr = static_cast<const I*>(a.rowptr);
  const auto* colind = static_cast<const I*>(a.colind);
  sparseport_csr_summary s{};
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz;
  s.rowptr_hash = sample_hash(rowptr, a.rows + 1);
  s.colind_hash = sample_hash(colind, a.nnz);
  if ((want & SPARSEPORT_SUMMARY_FEATURES) == 0) {
    // DEGREES alone (ABI 1.9): FEATURES's row part, from rowptr only.
    if ((want & SPARSEPORT_SUMMARY_DEGREES) != 0)
      for (int64_t i = 0; i < a.rows; ++i) {
        const int64_t d = static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]);
        s.max_degree = std::max(s.max_degree, d);
        ++s.degree_hist[summary_bucket(static_cast<uint64_t>(d))];
      }
    return s;
  }
  const int64_t nblocks = (a.rows + 31) / 32;
  const SampledBlocks sb{nblocks, std::min<int64_t>(nblocks, SPARSEPORT_SUMMARY_BLOCKS)};
  count_parallel(rowptr, colind, a, sb, threads, runner, s);
  s.blocks = sb.sampled;
  return s;
}

}  // namespace

sparseport_csr_summary summarize_host(const sparseport_csr& a, uint32_t want, int threads, const PartRunner& runner) {
  return a.index_type == SPARSEPORT_I64 ? summarize_typed<int64_t>(a, want, threads, runner)
                                        : summarize_typed<int32_t>(a, want, threads, runner);
}

sparseport_csr_summary summarize(const PluginInfo& plugin, const sparseport_exec& exec, const sparseport_csr& a,
                                 uint32_t want) {
  const sparseport_plugin* t = plugin.table;
  // The slot for device memory only: on host memory the definition below reads the arrays where
  // they are, on threads and with stamps (the kokkos plugin fills the slot on every Kokkos, and its
  // team sorts of the sampled blocks cost Kokkos-OpenMP more than the stamps).
  if (t->summarize_csr != nullptr && t->memory_space == SPARSEPORT_MEMORY_DEVICE) {
    sparseport_csr_summary s{};
    sparseport_status st{};
    if (t->summarize_csr(&exec, &a, want, &s, &st) != SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: summarizing the sparse operand");
    return s;
  }
  // The FEATURES pass's threads: a host backend's (its default, 0, is every hardware thread, as
  // OpenMP's is). Asked only for FEATURES: hardware_concurrency reads /sys (three system calls, ~1.7
  // us on the 2-core VM), which a cache hit, a SIGNATURE-only summary, has no use for.
  const auto threads = [want](int backend_threads) {
    if ((want & SPARSEPORT_SUMMARY_FEATURES) == 0) return 1;
    return backend_threads > 0 ? backend_threads : static_cast<int>(std::thread::hardware_concurrency());
  };
  if (t->memory_space != SPARSEPORT_MEMORY_DEVICE)
    return summarize_host(a, want, threads(exec.threads), PartRunner{t->run_parts, &exec});
  // A device plugin without the slot: copy rowptr and colind to the host (the features need every entry).
  const size_t isz = a.index_type == SPARSEPORT_I64 ? 8 : 4;
  std::vector<char> rowptr(static_cast<size_t>(a.rows + 1) * isz), colind(static_cast<size_t>(a.nnz) * isz);
  sparseport_status st{};
  if (t->copy(exec.state, rowptr.data(), a.rowptr, rowptr.size(), SPARSEPORT_COPY_DEVICE_TO_HOST, &st) != SPARSEPORT_OK ||
      (!colind.empty() &&
       t->copy(exec.state, colind.data(), a.colind, colind.size(), SPARSEPORT_COPY_DEVICE_TO_HOST, &st) != SPARSEPORT_OK))
    detail::throw_status(st, "sparseport scheduler: copying the sparse operand to the host");
  sparseport_csr h = a;
  h.rowptr = rowptr.data();
  h.colind = colind.data();
  return summarize_host(h, want, threads(0));
}

}  // namespace sparseport::scheduler
