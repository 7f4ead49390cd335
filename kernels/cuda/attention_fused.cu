// SPDX-License-Identifier: Apache-2.0
// csr_attention.fused: one pass per row with an online softmax (a running maximum m, the running
// sum l of exp(s - m), and the output accumulated and rescaled whenever m grows).
//
// The chunked path (max(F, Fv) <= 256 with rows of 4-vectors, <= 64 otherwise; F >= 1): a team of
// G lanes owns a row, each lane VEC * NT columns of q, K, V and out, as in spmm's row kernels. The
// row is walked in chunks of C entries, scores first:
//  - lane j of the team loads the column index of entry j of the chunk (one coalesced load, handed
//    round by C shuffles), then every lane loads its columns of the C rows of K and of V (16-byte
//    loads, a team reads whole row segments: the same sectors as spmm's gather);
//  - the C partial dot products are reduced and scattered across the team in log2 C butterfly steps
//    (C - 1 shuffles per lane per chunk instead of log2 G per entry), so lane j ends up with the
//    whole score of entry j: one exp per entry, not one per lane of the team, plus one rescale
//    factor per chunk;
//  - the chunk maximum takes log2 C shuffles; the weights are handed to the team by C shuffles and
//    the V rows, loaded before the reduction, accumulated as spmm accumulates B.
// SASS at sm_90, fp32, int32 (ptxas 13.0): a chunk of 8 entries is a loop of about 240 instructions
// a lane at F <= 128 (30 an entry; the team-per-entry loop it replaces took 288 for 4 entries, 72
// an entry: log2 G shuffles and adds, 1.25 exps of ~8 instructions and two 64-bit address
// computations per entry and lane), and 235 for 4 entries at F <= 256 (59; before, 387 for 4).
// Exponentials: 2 per chunk and lane (the entry's weight and the rescale) against 5 per 4 entries.
//
// Rows longer than the hub threshold (SPARSEPORT_HUB_T, as spmm.hub_split) would hold one team
// for their whole length (rmat:20:16 at F = 64: 17 ms against 4.6 ms unfused, H100, 2026-11), so
// they are cut into items of up to CH entries, each one CTA of the same launch (the first blocks,
// as in spmm.hub_split): its teams take the item's chunks in turn with the same code as a row, the
// teams of a warp merge (m, l, acc) by shuffles and the warps in shared memory. A row of one item
// is written by its CTA; the items of a longer row leave partials, and the CTA that takes the
// row's last ticket (an atomic counter per row, CUDA's threadFenceReduction pattern) merges them
// in item order. The partition comes from rowptr and is kept in the plan cache.
//
// The general path (wider F or Fv, F = 0, a leading dimension past 2^31 bytes) is the previous
// kernel: a team per entry with dot products reduced by xor shuffles, and the long rows in a
// second (item) and third (merge) kernel.
//
// No atomics on results anywhere (the tickets only elect the CTA that merges). A row's result
// depends on its entries, the partition and the lane shape. Deterministic mode fixes the
// partition: the threshold is hub_threshold_for's without SPARSEPORT_HUB_T and a long row is cut
// into at most kDetSpread items whatever the SM count, so the bits do not change with the knob;
// the last-ticket merge folds the items in item order whichever CTA finishes last. (The lane shape
// still follows F, Fv, the alignment of Q, K, V and out, and the SM count through row_slices: the
// same inputs on the same device give the same bits.)
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/attention.cuh"

SPARSEPORT_CUDA_MODULE(2)

namespace sparseport::cuda {
namespace {

// ---- the plan: long rows cut into items ---------------------------------------------------------

// Entries per CTA item at least: 1024, or 256 below 4 M entries, where the hub threshold is 64
// and the items must stay short so that the longest chain stays short.
constexpr int64_t kItemChunk = 1024, kSmallItemChunk = 256, kSmallNnz = int64_t{4} << 20;
constexpr int kItemTile = 128;        // general path: output columns per pass of an item, 4 per lane
constexpr int64_t kDetSpread = 1024;  // deterministic mode: items per long row at most (8 x 128 SMs)
constexpr int64_t kMaxRange = int64_t{1} << 30;  // entries of a regular row or an item at most (int counts)

struct AttnItem {
  int64_t row, begin, end;
  int64_t first;  // the row's first item
  int32_t count;  // the row's items
  int32_t slot;   // the row's ticket (chunked path) when count > 1, else -1
};
struct LongRow {
  int64_t row, first, count;  // its items are first .. first + count - 1 (general path's merge)
};

class AttnPlan : public Plan {
 public:
  // Frees on the state's stream of the moment (set_external may have changed it since).
  explicit AttnPlan(const State& s) : state_(&s) {}
  ~AttnPlan() override {
    if (items_ != nullptr) (void)cudaFreeAsync(items_, state_->stream());
    if (rows_ != nullptr) (void)cudaFreeAsync(rows_, state_->stream());
  }
  AttnItem* items_ = nullptr;
  LongRow* rows_ = nullptr;
  int64_t nitems_ = 0, nrows_ = 0;
  int64_t nsplit_ = 0;     // long rows of more than one item
  int64_t threshold_ = 0;  // rows with more entries take the split path

 private:
  const State* state_;
};

template <class T>
T* to_pool(const State& s, const std::vector<T>& v, const char* what) {
  if (v.empty()) return nullptr;
  void* p = nullptr;
  check(cudaMallocFromPoolAsync(&p, v.size() * sizeof(T), s.pool(), s.stream()), what);
  check(cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s.stream()), what);
  return static_cast<T*>(p);
}

// The threshold: SPARSEPORT_HUB_T when set. Otherwise 256, or, below 4 M entries (latency-bound
// inputs, where the longest chain decides) and only when some row is longer than 256 anyway, 64
// (hub_threshold_for). H200, 2026-11-23, with the items in two more launches (the general path):
// threshold 64 everywhere made wiki-Vote, facebook and email-Enron 1.6-2.6x faster but cora,
// pubmed, citeseer and bcsstk16 (longest rows 99-200) 1.1-2.9x slower than 256.
// The chunked path runs its items in the same launch, and an item of at most 256 entries needs no
// ticket, memset or partials, so below 4 M entries it also takes 64 when few rows pass it (at most
// one CTA per SM: cora's few rows of 65-168 entries, not bcsstk16's thousands, which would queue
// waves of CTAs): at 32 lanes a row (F >= 128, no slices) its longest chain drops from up to 64
// chunks to 16 (a first guess from that principle; SPARSEPORT_HUB_T=64 / 256 measure either side).
// Deterministic mode keeps the rule of before, which depends on nnz and the longest row only.
template <class I>
std::shared_ptr<AttnPlan> build_plan(const State& s, const sparseport_csr& a, bool det, bool chunked) {
  std::vector<I> rowptr(static_cast<size_t>(a.rows + 1));
  check(cudaMemcpyAsync(rowptr.data(), a.rowptr, rowptr.size() * sizeof(I), cudaMemcpyDeviceToHost, s.stream()),
        "cudaMemcpyAsync (csr_attention.fused reads rowptr)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (csr_attention.fused plan)");
  constexpr int64_t kSmallThreshold = 64;
  int64_t longest = 0, above_small = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t d = rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)];
    longest = std::max(longest, d);
    above_small += d > kSmallThreshold ? 1 : 0;
  }
  const int64_t base = det ? int64_t{256} : hub_threshold();
  const int64_t small_nnz_threshold = a.nnz <= kSmallNnz ? kSmallThreshold : 256;  // hub_threshold_for, no environment
  const char* env = std::getenv("SPARSEPORT_HUB_T");
  const bool knob = !det && env != nullptr && *env != '\0';
  const bool few_long = chunked && !det && !knob && a.nnz <= kSmallNnz && above_small <= s.info().sms;
  const int64_t threshold = std::min(
      kMaxRange, few_long ? kSmallThreshold
                          : (longest > base ? (det ? small_nnz_threshold : hub_threshold_for(a.nnz)) : base));
  std::vector<AttnItem> items;
  std::vector<LongRow> rows;
  int64_t nsplit = 0;
  const int64_t spread = det ? kDetSpread : int64_t{8} * s.info().sms;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t e0 = rowptr[static_cast<size_t>(r)], e1 = rowptr[static_cast<size_t>(r) + 1];
    if (e1 - e0 <= threshold) continue;
    const int64_t ch =
        std::min(kMaxRange, std::max(a.nnz <= kSmallNnz ? kSmallItemChunk : kItemChunk, ceil_div(e1 - e0, spread)));
    const int64_t first = static_cast<int64_t>(items.size()), count = ceil_div(e1 - e0, ch);
    const int32_t slot = count > 1 ? static_cast<int32_t>(nsplit++) : -1;
    for (int64_t b = e0; b < e1; b += ch)
      items.push_back({r, b, std::min(e1, b + ch), first, static_cast<int32_t>(count), slot});
    rows.push_back({r, first, count});
  }
  auto plan = std::make_shared<AttnPlan>(s);
  plan->threshold_ = threshold;
  plan->nitems_ = static_cast<int64_t>(items.size());
  plan->nrows_ = static_cast<int64_t>(rows.size());
  plan->nsplit_ = nsplit;
  plan->items_ = to_pool(s, items, "csr_attention.fused items");
  plan->rows_ = to_pool(s, rows, "csr_attention.fused long rows");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (csr_attention.fused plan)");
  plan->watch(a.rowptr, static_cast<size_t>(a.rows + 1) * sizeof(I));
  return plan;
}

// The plan of A (and of the knobs that decide its threshold), from the plan cache.
template <class I>
std::shared_ptr<AttnPlan> plan_for(const State& s, const sparseport_attention_args& a, bool det, bool chunked) {
  // With the graph, these decide the plan's threshold; deterministic mode reads no environment.
  const std::string knobs = std::string(chunked ? "chunked|" : "general|") +
                            (det ? std::string("det")
                                 : std::to_string(hub_threshold()) + "|" + std::to_string(hub_threshold_for(a.a.nnz)));
  const std::string key = "csr_attention.fused|" + std::to_string(reinterpret_cast<uintptr_t>(a.a.rowptr)) + "|" +
                          std::to_string(a.a.rows) + "|" + std::to_string(a.a.nnz) + "|" + std::to_string(sizeof(I)) +
                          "|" + knobs;
  std::shared_ptr<AttnPlan> plan = std::static_pointer_cast<AttnPlan>(s.plans().find(key));
  if (plan == nullptr) {
    plan = build_plan<I>(s, a.a, det, chunked);
    s.plans().insert(key, plan);
  }
  return plan;
}

// Slices per row. Rows alone fill the device only from sms * 2048 threads (astro-ph, 18.6k rows at
// G = 8, is 149k threads against 270k resident on an H100's 132 SMs); below that the rows are
// split into S slices, while a slice still averages 4 entries or more: fewer leave most of the
// slots of its one step empty and the merge costs about as much as the entries (first guesses;
// the suite measures the variant as a whole).
int row_slices(const State& s, int64_t m, int64_t nnz, int G, int max_slices) {
  constexpr int64_t kThreadsPerSm = 2048;  // cc 8.0 and 9.0
  const int64_t resident = int64_t{s.info().sms} * kThreadsPerSm;
  // A graph so small that full teams still leave the GPU half empty gets them whatever its mean
  // degree: idle slices cost nothing there, and the longest row's chain is what the launch waits
  // for (cora, mean degree 4, a row of 168 entries).
  if (m > 0 && m * G * max_slices <= resident / 2) return max_slices;
  int S = 1;
  while (S < max_slices && m > 0 && m * G * S < resident && nnz >= m * 4 * (S * 2)) S *= 2;
  return S;
}

// ---- the chunked path ---------------------------------------------------------------------------

__device__ __forceinline__ float vmax(float a, float b) { return fmaxf(a, b); }  // NaN loses, as in the reference
__device__ __forceinline__ double vmax(double a, double b) { return fmax(a, b); }

// Entries per chunk: K loads of up to 128 bytes per lane in flight (32 registers, and as many for
// V), at most 8 (the butterfly's partial sums are C registers, its shuffles C - 1 per chunk) and at
// most G (a lane per entry). fp32: C = 8 at F <= 128 and 4 at F <= 256. More would cost occupancy:
// the old loop at 8 entries a step took 100 registers (2 CTAs an SM) and was 18 % slower over the
// suite (band:1000000:16 F = 32: 494 -> 760 us, H200, 2026-11-23).
template <class V, int VEC, int NT, int G>
__host__ __device__ constexpr int chunk_entries() {
  int c = static_cast<int>(128 / (sizeof(V) * VEC * NT));
  c = c > 8 ? 8 : c;
  c = c > G ? G : c;
  return c < 1 ? 1 : c;
}

// What a lane holds across rows: where its columns of K and V start (column 0 for a lane past F
// or Fv: a valid address), and the leading dimensions in bytes, which the host checked fit an int,
// so that an entry's row address is one 32 x 32 -> 64-bit multiply-add.
template <class V, int VEC, int NT>
struct Lanes {
  const char* kb[NT];
  const char* vb[NT];
  int qoff[NT];
  bool kok[NT], vok[NT];
  int ldk, ldv;
  int sub, slot;
};

template <class I, class V, int VEC, int G, int NT, int C>
__device__ __forceinline__ Lanes<V, VEC, NT> lanes_of(const AttnParams<I, V>& p) {
  Lanes<V, VEC, NT> ln;
  ln.sub = static_cast<int>(threadIdx.x) & (G - 1);
  ln.slot = ln.sub & (C - 1);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int f = (ln.sub + t * G) * VEC;
    ln.kok[t] = f < p.F;
    ln.vok[t] = f < p.Fv;
    ln.qoff[t] = ln.kok[t] ? f : 0;
    ln.kb[t] = reinterpret_cast<const char*>(p.k + ln.qoff[t]);
    ln.vb[t] = reinterpret_cast<const char*>(p.v + (ln.vok[t] ? f : 0));
  }
  ln.ldk = static_cast<int>(p.ldk * static_cast<int64_t>(sizeof(V)));
  ln.ldv = static_cast<int>(p.ldv * static_cast<int64_t>(sizeof(V)));
  return ln;
}

// The online softmax of a lane: m is the same in every lane of a team; l is the sum of the
// weights of the entries this lane scored (lane j of each block of C lanes: entry j of each chunk);
// acc holds this lane's columns.
template <class V, int VEC, int NT>
struct Online {
  V m, l;
  VecN<V, VEC> acc[NT];
};

template <class V, int VEC, int NT>
__device__ __forceinline__ void online_init(Online<V, VEC, NT>& st) {
  st.m = red_identity<Red::max, V>();
  st.l = V(0);
#pragma unroll
  for (int t = 0; t < NT; ++t) vfill(st.acc[t], V(0));
}

// Row col of a matrix whose rows are ld_bytes apart. With int32 indices the product is a
// mul.wide.s32, which ptxas folds with the addition into one IMAD.WIDE; written in C++, nvcc hoists
// the widening of ld_bytes out of the loop and multiplies 64 x 64 bits (3 IMADs and a 64-bit add
// per address, two addresses per entry and lane).
template <class I, class V>
__device__ __forceinline__ const V* row_at(const char* base, I col, int ld_bytes) {
  if constexpr (sizeof(I) == 4) {
    int64_t off;
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(off) : "r"(static_cast<int>(col)), "r"(ld_bytes));
    return reinterpret_cast<const V*>(base + off);
  } else {
    return reinterpret_cast<const V*>(base + static_cast<int64_t>(col) * ld_bytes);
  }
}

// One chunk of n entries (n = C unless TAIL) whose column indices lie in cj, lane j of each block
// of C lanes holding entry j's, into st. A TAIL chunk's lanes past n hold the index of the range's
// last entry (valid, cached): their score is -inf, their weight 0, and their V rows are never
// added (0 * inf would be NaN), at the price of a predicate and a copy per product, which is why
// full chunks take the other instantiation.
//
// Scores: -inf weighs 0; a row whose every score is -inf gets l = 0 and 0 / 0 = NaN, as the
// reference's exp(-inf - -inf); NaN and +inf scores give NaN. The guards keep exp(-inf - -inf)
// out of the rescale factor, so -inf scores before the first finite one do not poison the row.
template <bool TAIL, class I, class V, int VEC, int G, int NT, int C>
__device__ __forceinline__ void chunk_step(const AttnParams<I, V>& p, const Lanes<V, VEC, NT>& ln,
                                           const VecN<V, VEC> (&q)[NT], I cj, int n, Online<V, VEC, NT>& st) {
  const unsigned mask = group_mask<G>();
  const V neg_inf = red_identity<Red::max, V>();
  I col[C];
#pragma unroll
  for (int i = 0; i < C; ++i) col[i] = __shfl_sync(mask, cj, i, G);
  VecN<V, VEC> kt[C][NT];
#pragma unroll
  for (int i = 0; i < C; ++i)
#pragma unroll
    for (int t = 0; t < NT; ++t) kt[i][t] = vload<V, VEC>(row_at<I, V>(ln.kb[t], col[i], ln.ldk));
  V part[C];
#pragma unroll
  for (int i = 0; i < C; ++i) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      V d = q[t].x[0] * kt[i][t].x[0];
#pragma unroll
      for (int x = 1; x < VEC; ++x) d = fma_of(q[t].x[x], kt[i][t].x[x], d);
      // A lane past F read column 0 of the row: its product must not count (it could be inf).
      // (A zero row read with ld 0 would save this select but costs a register a tile: spills.)
      d = ln.kok[t] ? d : V(0);
      part[i] = t == 0 ? d : part[i] + d;
    }
  }
  // The V rows depend only on the indices, so their loads go out before the shuffles below; but
  // not before the K rows have arrived: left free, ptxas issues both (64 registers at fp32) and
  // the kernel takes 96-100 registers (2 CTAs an SM). So the V indices are masked with keep,
  // computed from two of this lane's partial dot products (entries 0 and C - 1; in a tail chunk
  // slot C - 1 repeats the last valid entry): all ones unless their sum is NaN, that is one of
  // them is NaN or they are opposite infinities. Then one of the two entries' scores is NaN or
  // +inf whatever the sign of scale, its weight exp(s - m) is NaN, and the row's result is NaN
  // whatever V rows this lane adds (index 0 is still a row of V).
  VecN<V, VEC> vt[C][NT];
  {
    const V dep = part[0] + part[C - 1];
    const I keep = dep == dep ? ~I(0) : I(0);
#pragma unroll
    for (int i = 0; i < C; ++i)
#pragma unroll
      for (int t = 0; t < NT; ++t) vt[i][t] = vload<V, VEC>(row_at<I, V>(ln.vb[t], col[i] & keep, ln.ldv));
  }
  // Reduce-scatter: at offset o a lane keeps the half of the entries whose bit o matches its own
  // and sends the other half to its partner, so after log2 C steps lane j (mod C) holds entry j
  // summed over C lanes; then plain sums over the remaining G / C blocks.
#pragma unroll
  for (int o = C / 2; o > 0; o /= 2) {
    const bool up = (ln.sub & o) != 0;
#pragma unroll
    for (int i = 0; i < o; ++i) {
      const V send = up ? part[i] : part[i + o];
      const V keep = up ? part[i + o] : part[i];
      part[i] = keep + __shfl_xor_sync(mask, send, o, G);
    }
  }
#pragma unroll
  for (int o = C; o < G; o *= 2) part[0] += __shfl_xor_sync(mask, part[0], o, G);
  const V sc = !TAIL || ln.slot < n ? part[0] * p.scale : neg_inf;
  V cmax = sc;
#pragma unroll
  for (int o = 1; o < C; o *= 2) cmax = vmax(cmax, __shfl_xor_sync(mask, cmax, o, G));
  const V mn = vmax(st.m, cmax);
  const V corr = st.m == mn ? V(1) : vexp(st.m - mn);
  const V pj = sc == neg_inf ? V(0) : vexp(sc - mn);
  st.l = fma_of(st.l, corr, pj);
  st.m = mn;
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int x = 0; x < VEC; ++x) st.acc[t].x[x] *= corr;
#pragma unroll
  for (int i = 0; i < C; ++i) {
    const V pi = __shfl_sync(mask, pj, i, G);
    if (!TAIL || i < n) {
#pragma unroll
      for (int t = 0; t < NT; ++t) vaccumulate<Red::sum>(st.acc[t], pi, vt[i][t]);
    }
  }
}

// The chunks [cs, cs + C), [cs + step, cs + step + C), ... of the entries below end, into st, by
// the G lanes of one group (a slice of a row's team, or a team of an item's CTA): full chunks in a
// loop, then the partial one, if any, after it (where the teams of a warp have reconverged, so no
// warp runs the two kinds of chunk one after the other). Each step loads the next chunk's indices
// before it waits on anything. The loop keeps a pointer and an int count (a range is at most
// kMaxRange entries: the plan's threshold and item length), which saves the registers that
// spilled at 3 CTAs an SM.
template <class I, class V, int VEC, int G, int NT, int C>
__device__ __forceinline__ void attend(const AttnParams<I, V>& p, const Lanes<V, VEC, NT>& ln,
                                       const VecN<V, VEC> (&q)[NT], int64_t cs, int64_t end, int step,
                                       Online<V, VEC, NT>& st) {
  static_assert(C >= 1 && C <= G && (C & (C - 1)) == 0, "a lane per entry of a chunk");
  if (cs >= end) return;
  const I* cp = p.colind + cs;
  int rem = static_cast<int>(end - cs);  // entries from cp on
  I cj = __ldg(cp + (ln.slot < rem ? ln.slot : rem - 1));
#pragma unroll 1
  while (rem >= C) {
    I cn = cj;
    if (rem > step) cn = __ldg(cp + step + (ln.slot < rem - step ? ln.slot : rem - step - 1));
    chunk_step<false, I, V, VEC, G, NT, C>(p, ln, q, cj, C, st);
    cp += step;
    rem -= step;
    cj = cn;
  }
  if (rem > 0) chunk_step<true, I, V, VEC, G, NT, C>(p, ln, q, cj, rem, st);
}

// l summed over the C entry lanes of a group (the other blocks of C lanes hold the same values:
// their scores came from the same commutative sums).
template <class V, int G, int C>
__device__ __forceinline__ V group_weight_sum(V l, unsigned mask) {
#pragma unroll
  for (int o = 1; o < C; o *= 2) l += __shfl_xor_sync(mask, l, o, G);
  return l;
}

// Merges st with the state of lane ^ o (a group that saw no entry has m = -inf, l = acc = 0).
template <class V, int VEC, int NT>
__device__ __forceinline__ void merge_xor(Online<V, VEC, NT>& st, int o, unsigned mask) {
  const V om = __shfl_xor_sync(mask, st.m, o);
  const V ol = __shfl_xor_sync(mask, st.l, o);
  const V nm = vmax(st.m, om);
  const V ca = st.m == nm ? V(1) : vexp(st.m - nm);
  const V cb = om == nm ? V(1) : vexp(om - nm);
  st.l = st.l * ca + ol * cb;
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int x = 0; x < VEC; ++x) st.acc[t].x[x] = st.acc[t].x[x] * ca + __shfl_xor_sync(mask, st.acc[t].x[x], o) * cb;
  st.m = nm;
}

template <class I, class V, int VEC, int NT>
__device__ __forceinline__ void load_q(const AttnParams<I, V>& p, const Lanes<V, VEC, NT>& ln, int64_t row,
                                       VecN<V, VEC> (&q)[NT]) {
  const V* qrow = p.q + row * p.ldq;
#pragma unroll
  for (int t = 0; t < NT; ++t) q[t] = vload<V, VEC>(qrow + ln.qoff[t]);
}

// Rows up to the threshold: a team of S slices of G lanes per row, slice s taking chunks s,
// s + S, ... (so the slices' index loads of one step are contiguous), merged by xor shuffles.
template <class I, class V, int VEC, int G, int S, int NT, int C>
__device__ __forceinline__ void chunk_rows(const AttnParams<I, V>& p, const Lanes<V, VEC, NT>& ln, int64_t team,
                                           int64_t nteams) {
  constexpr int T = G * S;
  constexpr int W = G * VEC;  // columns per tile
  const int slice = (static_cast<int>(threadIdx.x) & 31) / G & (S - 1);
  const unsigned mask = group_mask<G>();
  const unsigned team_mask = group_mask<T>();
  for (int64_t row = team; row < p.m; row += nteams) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    if (e1 - e0 > p.skip_above) continue;
    V* orow = p.out + row * p.ldo;
    if (e0 == e1) {
      for (int64_t f = int64_t{slice} * G + ln.sub; f < p.Fv; f += T) orow[f] = V(0);
      continue;
    }
    VecN<V, VEC> q[NT];
    load_q(p, ln, row, q);
    Online<V, VEC, NT> st;
    online_init(st);
    attend<I, V, VEC, G, NT, C>(p, ln, q, e0 + int64_t{slice} * C, e1, S * C, st);
    st.l = group_weight_sum<V, G, C>(st.l, mask);
#pragma unroll
    for (int o = G; o < T; o *= 2) merge_xor(st, o, team_mask);
    if (slice != 0) continue;
    const V inv = V(1) / st.l;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (!ln.vok[t]) continue;
      VecN<V, VEC> o;
#pragma unroll
      for (int x = 0; x < VEC; ++x) o.x[x] = st.acc[t].x[x] * inv;
      vstore<V, VEC>(orow + ln.sub * VEC + t * W, o);
    }
  }
}

// Shared memory of an item's CTA (only launches with items get it): the warps' states, then the
// last CTA's weights.
constexpr int kWarps = kBlock / 32;
template <class V, int TW>
constexpr size_t item_smem_bytes() {
  return (static_cast<size_t>(kWarps) * TW + 3 * kWarps + 2 * kBlock) * sizeof(V) + sizeof(int);
}

// One CTA per item: its kBlock / G teams take the item's chunks in turn; the teams of a warp merge
// by shuffles, the warps in shared memory, in a fixed order. A row of one item is written here;
// otherwise the item's partial (m, l, acc) goes to pm, pl, pacc, and the CTA that draws the row's
// last ticket merges all of them in item order (so which CTA that is changes no bit).
template <class I, class V, int VEC, int G, int NT, int C>
__device__ __forceinline__ void chunk_item(const AttnParams<I, V>& p, const Lanes<V, VEC, NT>& ln,
                                           const AttnItem* items, int64_t index, V* pm, V* pl, V* pacc,
                                           unsigned* tickets, unsigned char* smem) {
  constexpr int W = G * VEC, TW = W * NT, kTeams = kBlock / G;
  static_assert(TW <= kBlock, "a thread per column of the tile merges the warps");
  V* sm_acc = reinterpret_cast<V*>(smem);  // [kWarps][TW]
  V* sm_m = sm_acc + kWarps * TW;
  V* sm_l = sm_m + kWarps;
  V* sm_red = sm_l + kWarps;
  V* sm_w = sm_red + kWarps;  // [kBlock]
  V* sm_wl = sm_w + kBlock;   // [kBlock]
  int* sm_last = reinterpret_cast<int*>(sm_wl + kBlock);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid & 31;
  const V neg_inf = red_identity<Red::max, V>();
  Online<V, VEC, NT> st;
  {
    VecN<V, VEC> q[NT];
    load_q(p, ln, items[index].row, q);
    Online<V, VEC, NT> st0;
    online_init(st0);
    attend<I, V, VEC, G, NT, C>(p, ln, q, items[index].begin + int64_t{tid / G} * C, items[index].end, kTeams * C,
                                st0);
    st = st0;
  }
  // The item is read again rather than kept in registers through the loop (it took 18 more
  // registers a lane, for the rows' CTAs too: 2 CTAs an SM instead of 3).
  asm volatile("" ::: "memory");
  const AttnItem it = items[index];
  st.l = group_weight_sum<V, G, C>(st.l, group_mask<G>());
#pragma unroll
  for (int o = G; o < 32; o *= 2) merge_xor(st, o, 0xffffffffu);
  if (lane < G) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int x = 0; x < VEC; ++x) sm_acc[warp * TW + ln.sub * VEC + t * W + x] = st.acc[t].x[x];
    if (lane == 0) {
      sm_m[warp] = st.m;
      sm_l[warp] = st.l;
    }
  }
  __syncthreads();
  V m = sm_m[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = vmax(m, sm_m[w]);
  V l = V(0), a = V(0);
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const V c = sm_m[w] == m ? V(1) : vexp(sm_m[w] - m);
    l = fma_of(sm_l[w], c, l);
    if (tid < TW) a = fma_of(sm_acc[w * TW + tid], c, a);
  }
  V* orow = p.out + it.row * p.ldo;
  if (it.count == 1) {
    if (tid < p.Fv) orow[tid] = a * (V(1) / l);
    return;
  }
  if (tid < p.Fv) pacc[index * p.Fv + tid] = a;
  if (tid == 0) {
    pm[index] = m;
    pl[index] = l;
  }
  // The partial is visible device-wide before the ticket is counted.
  __threadfence();
  __syncthreads();
  if (tid == 0) *sm_last = atomicAdd(tickets + it.slot, 1u) == static_cast<unsigned>(it.count - 1);
  __syncthreads();
  if (*sm_last == 0) return;
  __threadfence();
  // The last CTA: the items' maximum, then their weights kBlock items at a time, folded in item
  // order (every thread sums l the same way). L2 reads: the partials were written by other SMs.
  const int64_t first = it.first, count = it.count;
  V mx = neg_inf;
  for (int64_t i = tid; i < count; i += kBlock) mx = vmax(mx, __ldcg(pm + first + i));
#pragma unroll
  for (int o = 16; o > 0; o /= 2) mx = vmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) sm_red[warp] = mx;
  __syncthreads();
  mx = sm_red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) mx = vmax(mx, sm_red[w]);
  V lsum = V(0), asum = V(0);
  for (int64_t b = 0; b < count; b += kBlock) {
    __syncthreads();  // the previous block's weights are used up
    if (b + tid < count) {
      const V mi = __ldcg(pm + first + b + tid);
      const V w = mi == mx ? V(1) : vexp(mi - mx);
      sm_w[tid] = w;
      sm_wl[tid] = w * __ldcg(pl + first + b + tid);
    }
    __syncthreads();
    const int nb = count - b < kBlock ? static_cast<int>(count - b) : kBlock;
    for (int u = 0; u < nb; ++u) lsum += sm_wl[u];
    if (tid < p.Fv) {
      const V* src = pacc + (first + b) * p.Fv + tid;
#pragma unroll 8
      for (int u = 0; u < nb; ++u) asum = fma_of(sm_w[u], __ldcg(src + u * p.Fv), asum);
    }
  }
  if (tid < p.Fv) orow[tid] = asum * (V(1) / lsum);
}

// The first nitems blocks take the items, the others the rows (grid-stride).
// Registers: at most 80 (3 CTAs an SM, 24 warps, the occupancy of the old kernel at 73-80) for
// int32 indices and fp32; ptxas then keeps 0-4 spill loads a chunk in L1 (e.g. none at 8 lanes,
// 3 at 32), where left free it took 92-100 (2 CTAs an SM). int64 or fp64 take up to 128 (2 CTAs):
// at 80 they spilled 100-400 bytes a lane.
template <class I, class V, int VEC, int G, int S, int NT>
__global__ void __launch_bounds__(kBlock, sizeof(I) == 4 && sizeof(V) == 4 ? 3 : 2)
    chunk_kernel(AttnParams<I, V> p, const AttnItem* items, int64_t nitems, V* pm, V* pl, V* pacc, unsigned* tickets) {
  constexpr int C = chunk_entries<V, VEC, NT, G>();
  const Lanes<V, VEC, NT> ln = lanes_of<I, V, VEC, G, NT, C>(p);
  if (blockIdx.x < nitems) {
    extern __shared__ __align__(16) unsigned char attn_item_smem[];
    chunk_item<I, V, VEC, G, NT, C>(p, ln, items, blockIdx.x, pm, pl, pacc, tickets, attn_item_smem);
    return;
  }
  const int64_t blk = blockIdx.x - nitems, nblk = gridDim.x - nitems;
  const int64_t team = (blk * kBlock + threadIdx.x) / (G * S);
  const int64_t nteams = nblk * kBlock / (G * S);
  chunk_rows<I, V, VEC, G, S, NT, C>(p, ln, team, nteams);
}

// chunk_kernel<.., S, ..> for the first S >= slices that the build holds: G * S <= 32, NT = 1.
template <class I, class V, int VEC, int G, int NT, int S = 1>
void launch_chunk_rows(const State& s, const AttnParams<I, V>& p, const AttnPlan& plan, int slices, V* pm, V* pl,
                       V* pacc, unsigned* tickets) {
  if constexpr (NT == 1 && G * S < 32) {
    if (S < slices) {
      launch_chunk_rows<I, V, VEC, G, NT, S * 2>(s, p, plan, slices, pm, pl, pacc, tickets);
      return;
    }
  }
  const int64_t rows = std::min<int64_t>(blocks_for(p.m * G * S), int64_t{INT_MAX} - plan.nitems_);
  const unsigned grid = static_cast<unsigned>(plan.nitems_ + rows);
  const size_t smem = plan.nitems_ > 0 ? item_smem_bytes<V, G * VEC * NT>() : 0;
  chunk_kernel<I, V, VEC, G, S, NT><<<grid, kBlock, smem, s.stream()>>>(p, plan.items_, plan.nitems_, pm, pl, pacc,
                                                                        tickets);
}

template <int VEC, int G, int NT>
void launch_chunked(const State& s, const sparseport_attention_args& a, bool det) {
  dispatch_types(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const std::shared_ptr<AttnPlan> plan = plan_for<I>(s, a, det, true);
    AttnParams<I, V> p = attn_params<I, V>(a);
    p.skip_above = plan->threshold_;
    // Partials and tickets only for rows of several items; the tickets start at zero every call
    // (a memset), so a call on another stream never shares them.
    Scratch partials, tickets;
    if (plan->nsplit_ > 0) {
      partials = Scratch(s, static_cast<size_t>(plan->nitems_ * (p.Fv + 2)) * sizeof(V));
      tickets = Scratch(s, static_cast<size_t>(plan->nsplit_) * sizeof(unsigned));
      check(cudaMemsetAsync(tickets.get(), 0, static_cast<size_t>(plan->nsplit_) * sizeof(unsigned), s.stream()),
            "cudaMemsetAsync (csr_attention.fused tickets)");
    }
    V* pm = partials.as<V>();
    V* pl = pm != nullptr ? pm + plan->nitems_ : nullptr;
    V* pacc = pl != nullptr ? pl + plan->nitems_ : nullptr;
    launch_chunk_rows<I, V, VEC, G, NT>(s, p, *plan, NT == 1 ? row_slices(s, a.a.rows, a.a.nnz, G, 32 / G) : 1, pm,
                                        pl, pacc, tickets.as<unsigned>());
    check_launch("csr_attention.fused");
  });
}

// ---- the general path -------------------------------------------------------------------------

// One row per team of G * S lanes: S slices of G lanes, slice s taking entries e0 + s, e0 + s + S,
// ... (strided, so the slices' colind reads of one step are contiguous). Each slice keeps its own
// (m, l, acc) and the slices merge them by xor shuffles at the end, as flash-decoding merges
// splits (S from row_slices). Each step of a slice handles U entries: their column indices were
// prefetched by the step before, all their K and V loads are issued before the first shuffle (the
// V rows depend only on the column index), then the U dot products are reduced together and the
// softmax state is updated once. The old loop (U = 2, V loaded after the exps, S = 1) was a chain
// of dependent latencies per step: 130 us against 14.7 us for spmm at astro-ph, F = 32, H100.
//
// Columns come in tiles of G * VEC, NT tiles per pass: NT = 1 or 2 holds all of q and K (F <= NT
// tiles) and the pass's V tiles in registers. NT = 4 is the general case (F or Fv wider than two
// tiles): one tile of K in registers and a loop for the rest, one tile of V loaded early and the
// other three after the exps. A wider Fv takes several passes over the row, each recomputing the
// scores.
template <class I, class V, int VEC, int G, int S, int NT>
__global__ void __launch_bounds__(kBlock) fused_kernel(AttnParams<I, V> p) {
  constexpr bool kGeneral = NT > 2;
  constexpr int KC = kGeneral ? 1 : NT;  // tiles of q and K held in registers
  constexpr int VE = kGeneral ? 1 : NT;  // tiles of V loaded before the shuffles
  // Entries per step: four, whose loads take 32 registers at fp32 and NT = 1 and keep the kernel
  // at 64 to 80 registers (3 or 4 CTAs an SM, as the old loop); two where one entry's loads pass
  // 64 bytes a lane (fp64 at NT = 2), which would need 128 registers for the loads alone. U = 8
  // at fp32 and NT = 1 took 100 registers (2 CTAs an SM) and was 18 % slower over the suite
  // (band:1000000:16 F = 32: 494 -> 760 us, H200, 2026-11-23).
  constexpr int U = sizeof(V) * VEC * (KC + VE) > 64 ? 2 : 4;
  constexpr int T = G * S;
  constexpr int64_t W = int64_t{G} * VEC;  // columns per tile
  static_assert(T <= 32 && (S & (S - 1)) == 0, "a row's team of G * S lanes lies in one warp");
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int sub = lane & (G - 1);
  const int slice = (lane / G) & (S - 1);
  const unsigned mask = group_mask<G>();
  const unsigned team_mask = group_mask<T>();
  const int64_t team = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / T;
  const int64_t nteams = static_cast<int64_t>(gridDim.x) * blockDim.x / T;
  const V neg_inf = red_identity<Red::max, V>();
  const int64_t f_own = int64_t{sub} * VEC;  // this lane's columns in each tile
  for (int64_t row = team; row < p.m; row += nteams) {
    const int64_t e0 = p.rowptr[row], e1 = p.rowptr[row + 1];
    if (e1 - e0 > p.skip_above) continue;
    V* orow = p.out + row * p.ldo;
    if (e0 == e1) {
      for (int64_t f = int64_t{slice} * G + sub; f < p.Fv; f += T) orow[f] = V(0);
      continue;
    }
    const V* qrow = p.q + row * p.ldq;
    VecN<V, VEC> qr[KC];
#pragma unroll
    for (int c = 0; c < KC; ++c) {
      vfill(qr[c], V(0));
      if (f_own + c * W < p.F) qr[c] = vload<V, VEC>(qrow + f_own + c * W);
    }
    for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += NT * W) {
      V run_max = neg_inf, run_sum = V(0);
      VecN<V, VEC> acc[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) vfill(acc[t], V(0));
      I next[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t e = e0 + slice + int64_t{u} * S;
        next[u] = e < e1 ? __ldg(p.colind + e) : I(0);
      }
#pragma unroll 1
      for (int64_t e = e0 + slice; e < e1; e += int64_t{U} * S) {
        bool ok[U];
        const V* krow[U];
        const V* vrow[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          ok[u] = e + int64_t{u} * S < e1;
          krow[u] = p.k + static_cast<int64_t>(next[u]) * p.ldk + f_own;
          vrow[u] = p.v + static_cast<int64_t>(next[u]) * p.ldv + fv0 + f_own;
        }
        // Every load of the step goes out before anything waits on one, K first as it is needed
        // first.
        VecN<V, VEC> kt[KC][U], vt[VE][U];
#pragma unroll
        for (int c = 0; c < KC; ++c)
#pragma unroll
          for (int u = 0; u < U; ++u) {
            vfill(kt[c][u], V(0));
            if (ok[u] && f_own + c * W < p.F) kt[c][u] = vload<V, VEC>(krow[u] + c * W);
          }
#pragma unroll
        for (int t = 0; t < VE; ++t)
#pragma unroll
          for (int u = 0; u < U; ++u) {
            vfill(vt[t][u], V(0));
            if (ok[u] && fv0 + f_own + t * W < p.Fv) vt[t][u] = vload<V, VEC>(vrow[u] + t * W);
          }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t en = e + int64_t{U + u} * S;
          next[u] = en < e1 ? __ldg(p.colind + en) : I(0);
        }
        V s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] = V(0);
#pragma unroll
          for (int c = 0; c < KC; ++c)
#pragma unroll
            for (int i = 0; i < VEC; ++i) s[u] += qr[c].x[i] * kt[c][u].x[i];
        }
        if constexpr (kGeneral) {
#pragma unroll 1
          for (int64_t f = f_own + W; f < p.F; f += W) {
            const VecN<V, VEC> qv = vload<V, VEC>(qrow + f);
#pragma unroll
            for (int u = 0; u < U; ++u) {
              vfill(kt[0][u], V(0));
              if (ok[u]) kt[0][u] = vload<V, VEC>(krow[u] + (f - f_own));
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
              for (int i = 0; i < VEC; ++i) s[u] += qv.x[i] * kt[0][u].x[i];
          }
        }
        // The U reductions interleaved, so their shuffle latencies overlap.
#pragma unroll
        for (int o = G / 2; o > 0; o /= 2)
#pragma unroll
          for (int u = 0; u < U; ++u) s[u] += __shfl_xor_sync(mask, s[u], o, G);
        V new_max = run_max;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          s[u] *= p.scale;
          if (ok[u] && s[u] > new_max) new_max = s[u];
        }
        // ok[0] holds on every step, so new_max is finite and exp(-inf) = 0 drops the empty
        // history on the first step; an entry past the row's end gets exp(-inf) = 0 too.
        const V corr = vexp(run_max - new_max);
        V pr[U];
        run_sum *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          pr[u] = vexp(ok[u] ? s[u] - new_max : neg_inf);
          run_sum += pr[u];
        }
        run_max = new_max;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (fv0 + f_own + t * W >= p.Fv) continue;
          if (t >= VE) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
              vfill(vt[0][u], V(0));
              if (ok[u]) vt[0][u] = vload<V, VEC>(vrow[u] + t * W);
            }
          }
          const VecN<V, VEC>* vv = vt[t < VE ? t : 0];
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[t].x[i] *= corr;
#pragma unroll
          for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc[t].x[i] += pr[u] * vv[u].x[i];
        }
      }
      // Merge the slices. A slice that saw no entry (a row shorter than S) has m = -inf and
      // l = acc = 0; its factor is set to 0 rather than computed as exp(-inf - -inf) = NaN.
#pragma unroll
      for (int o = G; o < T; o *= 2) {
        const V om = __shfl_xor_sync(team_mask, run_max, o, T);
        const V ol = __shfl_xor_sync(team_mask, run_sum, o, T);
        const V nm = om > run_max ? om : run_max;
        const V ca = run_max > neg_inf ? vexp(run_max - nm) : V(0);
        const V cb = om > neg_inf ? vexp(om - nm) : V(0);
        run_sum = run_sum * ca + ol * cb;
        run_max = nm;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (fv0 + t * W >= p.Fv) continue;  // the same for the whole team
#pragma unroll
          for (int i = 0; i < VEC; ++i)
            acc[t].x[i] = acc[t].x[i] * ca + __shfl_xor_sync(team_mask, acc[t].x[i], o, T) * cb;
        }
      }
      if (slice != 0) continue;
      const V inv = V(1) / run_sum;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int64_t fv = fv0 + f_own + t * W;
        if (fv >= p.Fv) continue;
        VecN<V, VEC> o;
#pragma unroll
        for (int i = 0; i < VEC; ++i) o.x[i] = acc[t].x[i] * inv;
        vstore<V, VEC>(orow + fv, o);
      }
    }
  }
}

// ---- the general path's long rows: an item kernel, then a merge kernel --------------------------

// One CTA per item: every warp runs the online softmax over its share of the item's entries, then
// the warps' (m, l, acc) are merged in shared memory into the item's partial.
template <class I, class V>
__global__ void __launch_bounds__(kBlock) item_kernel(AttnParams<I, V> p, const AttnItem* items, V* pm, V* pl,
                                                      V* pacc) {
  constexpr int kWarps = kBlock / 32, KV = kItemTile / 32, U = 2;
  __shared__ V sm_m[kWarps], sm_l[kWarps];
  __shared__ V sm_acc[kWarps][kItemTile];
  const AttnItem it = items[blockIdx.x];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t n = it.end - it.begin;
  const int64_t w0 = it.begin + n * warp / kWarps, w1 = it.begin + n * (warp + 1) / kWarps;
  const V* qrow = p.q + it.row * p.ldq;
  const V neg_inf = red_identity<Red::max, V>();
  for (int64_t fv0 = 0; fv0 < p.Fv; fv0 += kItemTile) {
    V run_max = neg_inf, run_sum = V(0), acc[KV];
#pragma unroll
    for (int t = 0; t < KV; ++t) acc[t] = V(0);
    for (int64_t e = w0; e < w1; e += U) {
      int64_t c[U];
      bool ok[U];
      V s[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        ok[u] = e + u < w1;
        c[u] = ok[u] ? static_cast<int64_t>(p.colind[e + u]) : 0;
        s[u] = V(0);
      }
      for (int64_t f = lane; f < p.F; f += 32) {
        const V qv = __ldg(qrow + f);
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) s[u] += qv * __ldg(p.k + c[u] * p.ldk + f);
      }
      V new_max = run_max;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        s[u] = group_sum<32>(s[u], 0xffffffffu) * p.scale;
        if (ok[u] && s[u] > new_max) new_max = s[u];
      }
      const V corr = vexp(run_max - new_max);
      V pr[U];
      run_sum *= corr;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        pr[u] = ok[u] ? vexp(s[u] - new_max) : V(0);
        run_sum += pr[u];
      }
      run_max = new_max;
#pragma unroll
      for (int t = 0; t < KV; ++t) {
        const int64_t fv = fv0 + t * 32 + lane;
        if (fv >= p.Fv) continue;
        acc[t] *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (ok[u]) acc[t] += pr[u] * __ldg(p.v + c[u] * p.ldv + fv);
      }
    }
    if (lane == 0) {
      sm_m[warp] = run_max;
      sm_l[warp] = run_sum;
    }
#pragma unroll
    for (int t = 0; t < KV; ++t) sm_acc[warp][t * 32 + lane] = acc[t];
    __syncthreads();
    if (threadIdx.x < kItemTile) {
      V m = neg_inf;
      for (int w = 0; w < kWarps; ++w) m = sm_m[w] > m ? sm_m[w] : m;
      V l = V(0), a = V(0);
      for (int w = 0; w < kWarps; ++w) {
        if (!(sm_m[w] > neg_inf)) continue;  // a warp without entries
        const V scale = vexp(sm_m[w] - m);
        l += sm_l[w] * scale;
        a += sm_acc[w][threadIdx.x] * scale;
      }
      const int64_t fv = fv0 + threadIdx.x;
      if (fv < p.Fv) pacc[blockIdx.x * p.Fv + fv] = a;
      if (threadIdx.x == 0 && fv0 == 0) {
        pm[blockIdx.x] = m;
        pl[blockIdx.x] = l;
      }
    }
    __syncthreads();
  }
}

// One CTA per long row: its items' partials merged and divided.
template <class I, class V>
__global__ void __launch_bounds__(kBlock) merge_kernel(AttnParams<I, V> p, const LongRow* rows, const V* pm,
                                                       const V* pl, const V* pacc) {
  const LongRow r = rows[blockIdx.x];
  V m = red_identity<Red::max, V>();
  for (int64_t i = r.first; i < r.first + r.count; ++i) m = pm[i] > m ? pm[i] : m;
  V l = V(0);
  for (int64_t i = r.first; i < r.first + r.count; ++i) l += pl[i] * vexp(pm[i] - m);
  V* orow = p.out + r.row * p.ldo;
  for (int64_t f = threadIdx.x; f < p.Fv; f += blockDim.x) {
    V a = V(0);
    for (int64_t i = r.first; i < r.first + r.count; ++i) a += pacc[i * p.Fv + f] * vexp(pm[i] - m);
    orow[f] = a / l;
  }
}

// fused_kernel<.., S, NT> for the first S >= slices that the build holds: G * S <= 32, and only
// at NT = 1 (S > 1 needs G < 32). The general path runs G = 32 only, so S = 1.
template <class I, class V, int VEC, int G, int NT, int S = 1>
void launch_rows(const State& s, const AttnParams<I, V>& p, int slices) {
  if constexpr (NT == 1 && G * S < 32) {
    if (S < slices) {
      launch_rows<I, V, VEC, G, NT, S * 2>(s, p, slices);
      return;
    }
  }
  fused_kernel<I, V, VEC, G, S, NT><<<blocks_for(p.m * G * S), kBlock, 0, s.stream()>>>(p);
}


template <int VEC>
void launch_general(const State& s, const sparseport_attention_args& a, bool det) {
  constexpr int G = 32;
  dispatch_types(a.a.index_type, a.q.value_type, [&](auto i, auto v) {
    using I = decltype(i);
    using V = decltype(v);
    const std::shared_ptr<AttnPlan> plan = plan_for<I>(s, a, det, false);
    AttnParams<I, V> p = attn_params<I, V>(a);
    p.skip_above = plan->threshold_;
    // Tiles of G * VEC columns: q and K take tf, V takes tv; up to two tiles in registers, then
    // the general kernel.
    const int64_t tf = ceil_div(p.F, int64_t{G} * VEC), tv = ceil_div(p.Fv, int64_t{G} * VEC);
    if (tf <= 1 && tv <= 1)
      launch_rows<I, V, VEC, G, 1>(s, p, 1);
    else if (tf <= 2 && tv <= 2)
      launch_rows<I, V, VEC, G, 2>(s, p, 1);
    else
      launch_rows<I, V, VEC, G, 4>(s, p, 1);
    check_launch("csr_attention.fused");
    if (plan->nitems_ == 0) return;
    Scratch pm(s, static_cast<size_t>(plan->nitems_) * sizeof(V)), pl(s, static_cast<size_t>(plan->nitems_) * sizeof(V)),
        pacc(s, static_cast<size_t>(plan->nitems_ * p.Fv) * sizeof(V));
    item_kernel<I, V><<<static_cast<unsigned>(plan->nitems_), kBlock, 0, s.stream()>>>(p, plan->items_, pm.as<V>(),
                                                                                       pl.as<V>(), pacc.as<V>());
    check_launch("csr_attention.fused (long-row items)");
    merge_kernel<I, V><<<static_cast<unsigned>(plan->nrows_), kBlock, 0, s.stream()>>>(p, plan->rows_, pm.as<V>(),
                                                                                       pl.as<V>(), pacc.as<V>());
    check_launch("csr_attention.fused (long-row merge)");
  });
}

}  // namespace

void csr_attention_fused(const State& s, const sparseport_attention_args& a, bool deterministic) {
  const bool vec4 = vec4_rows(a.q.data, a.q.ld, a.q.cols) && vec4_rows(a.k.data, a.k.ld, a.k.cols) &&
                    vec4_rows(a.v.data, a.v.ld, a.v.cols) && vec4_rows(a.out.data, a.out.ld, a.out.cols);
  const int64_t F = a.q.cols, Fv = a.v.cols, wide = std::max(F, Fv);
  const int64_t value_bytes = sparseport_value_size(a.q.value_type);
  const bool ld_fits = a.k.ld * value_bytes <= INT_MAX && a.v.ld * value_bytes <= INT_MAX;
  if (F >= 1 && ld_fits) {
    if (vec4 && wide <= 256) {
      if (wide > 128) {
        launch_chunked<4, 32, 2>(s, a, deterministic);
        return;
      }
      switch (vec4_group(wide, 8)) {
        case 8: launch_chunked<4, 8, 1>(s, a, deterministic); break;
        case 16: launch_chunked<4, 16, 1>(s, a, deterministic); break;
        default: launch_chunked<4, 32, 1>(s, a, deterministic); break;
      }
      return;
    }
    if (!vec4 && wide <= 64) {
      if (wide > 32)
        launch_chunked<1, 32, 2>(s, a, deterministic);
      else
        launch_chunked<1, 32, 1>(s, a, deterministic);
      return;
    }
  }
  if (vec4)
    launch_general<4>(s, a, deterministic);
  else
    launch_general<1>(s, a, deterministic);
}

}  // namespace sparseport::cuda
