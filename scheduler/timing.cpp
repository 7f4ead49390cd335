// SPDX-License-Identifier: Apache-2.0
#include "scheduler/timing.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "sparseport/errors.hpp"
#include "sparseport/views.hpp"
#include "core/registry.hpp"

namespace sparseport::scheduler {

int call_slot(const sparseport_plugin* t, sparseport_op op, const sparseport_exec& exec, const std::string& variant,
              const void* args, sparseport_status* st) {
  const char* v = variant.c_str();
  const auto missing = [&] {
    std::snprintf(st->message, sizeof st->message, "the backend has no slot for this op");
    st->code = SPARSEPORT_ERR_UNSUPPORTED;
    return SPARSEPORT_ERR_UNSUPPORTED;
  };
  switch (op) {
    case SPARSEPORT_OP_SPMM:
      return t->spmm ? t->spmm(&exec, v, static_cast<const sparseport_spmm_args*>(args), st) : missing();
    case SPARSEPORT_OP_SDDMM:
      return t->sddmm ? t->sddmm(&exec, v, static_cast<const sparseport_sddmm_args*>(args), st) : missing();
    case SPARSEPORT_OP_SEGMENT_REDUCE:
      return t->segment_reduce ? t->segment_reduce(&exec, v, static_cast<const sparseport_segment_args*>(args), st)
                               : missing();
    case SPARSEPORT_OP_SCATTER_REDUCE:
      return t->scatter_reduce ? t->scatter_reduce(&exec, v, static_cast<const sparseport_segment_args*>(args), st)
                               : missing();
    case SPARSEPORT_OP_GATHER_SCATTER:
      return t->gather_scatter
                 ? t->gather_scatter(&exec, v, static_cast<const sparseport_gather_scatter_args*>(args), st)
                 : missing();
    case SPARSEPORT_OP_CSR_ATTENTION:
      return t->csr_attention ? t->csr_attention(&exec, v, static_cast<const sparseport_attention_args*>(args), st)
                              : missing();
    case SPARSEPORT_OP_CSR_SLICE_ROWS:
      return t->csr_slice_rows ? t->csr_slice_rows(&exec, v, static_cast<const sparseport_slice_rows_args*>(args), st)
                               : missing();
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE:
      return t->csr_slice_rows_dense
                 ? t->csr_slice_rows_dense(&exec, v, static_cast<const sparseport_slice_rows_dense_args*>(args), st)
                 : missing();
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH:
      return t->csr_induced_subgraph
                 ? t->csr_induced_subgraph(&exec, v, static_cast<const sparseport_induced_subgraph_args*>(args), st)
                 : missing();
    case SPARSEPORT_OP_CSR_TRANSPOSE:
      return t->csr_transpose ? t->csr_transpose(&exec, v, static_cast<const sparseport_transpose_args*>(args), st)
                              : missing();
    default:
      return missing();
  }
}

namespace {

// `calls` back-to-back calls of variant, then one synchronize: the mean time per call (seconds);
// negative on failure, with the status in *failed.
double batch_seconds(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                     const std::string& variant, const void* args, int calls, sparseport_status* failed) {
  const sparseport_plugin* t = plugin.table;
  sparseport_status st{};
  const auto t0 = std::chrono::steady_clock::now();
  int rc = SPARSEPORT_OK;
  for (int c = 0; c < calls && rc == SPARSEPORT_OK; ++c) rc = call_slot(t, op, exec, variant, args, &st);
  if (rc == SPARSEPORT_OK && t->synchronize != nullptr) rc = t->synchronize(exec.state, &st);
  const auto t1 = std::chrono::steady_clock::now();
  if (rc != SPARSEPORT_OK) {
    if (failed != nullptr) *failed = st;
    return -1;
  }
  return std::chrono::duration<double>(t1 - t0).count() / calls;
}

// How long a batch of calls lasts, about: a call far below the host's clock-and-synchronize cost is
// timed as the mean of a batch, so that medians resolve 10 %. On a device that cost is tens of
// microseconds (a launch, the synchronize): 200 us. A host-memory backend has no synchronize and a
// clock read of ~25 ns, so 50 us resolves 10 % as well; the probe's five batches and two warm-up
// calls per variant then cost a quarter of the time (a sampled subgraph's cold decision on the
// 2-core CPU: 1.0-1.4 ms per probed variant of its ~6 ms at 200 us). SPARSEPORT_PROBE_BATCH_US
// sets it (an A/B of the decisions' quality; 10-100000).
double batch_target(const PluginInfo& plugin) {
  static const double env = [] {
    const char* v = std::getenv("SPARSEPORT_PROBE_BATCH_US");
    const double us = v != nullptr ? std::atof(v) : 0;
    return us >= 10 && us <= 100000 ? us * 1e-6 : 0.0;
  }();
  if (env > 0) return env;
  return plugin.table->memory_space == SPARSEPORT_MEMORY_DEVICE ? 200e-6 : 50e-6;
}

// Calls per batch so that a batch lasts about batch_target.
int calls_per_batch(double seconds_per_call, double target) {
  return static_cast<int>(std::clamp(target / std::max(seconds_per_call, 1e-7), 1.0, 64.0));
}

}  // namespace

double time_variant(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                    const std::string& variant, const void* args, int repeats, bool warmup, sparseport_status* failed,
                    double beaten_at, double first_call) {
  const auto beaten = [&](double s) { return beaten_at > 0 && s > beaten_at; };
  const auto batch = [&](int calls) { return batch_seconds(plugin, exec, op, variant, args, calls, failed); };
  int calls = 1;
  if (warmup) {
    // Warm-up: first-touch, lazily built plans, instruction caches. The second call's time sizes
    // the batches (calls_per_batch). A first call already kWarmCallBatches batch lengths long
    // gives batches of one call whatever the second would take (a first call's extra costs, first
    // touches and plans, stay well below 20x: the largest recorded here, megarow:1000000:1:0.9's
    // first full-size call at F = 64, was 3.6x its expected time), so the second is not made. On
    // large inputs each probed variant's calls are milliseconds (rmat:20:16 on the 2-core VM: 5-13
    // ms each, 7 calls each of 3 variants, ~180 ms: 0.8 full-size calls of the op).
    constexpr double kWarmCallBatches = 20;
    const double first = first_call >= 0 ? first_call : batch(1);
    if (first < 0) return -1;
    if (first < kWarmCallBatches * batch_target(plugin)) {
      const double again = batch(1);
      if (again < 0) return -1;
      if (beaten(again)) return again;
      calls = calls_per_batch(again, batch_target(plugin));
    }
  }
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const double s = batch(calls);
    if (s < 0) return -1;
    if (beaten(s)) return s;
    times.push_back(s);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

// ---- full size ----------------------------------------------------------------------------------

OutputGuard::OutputGuard(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
                         const std::string& where)
    : plugin_(plugin), exec_(exec), where_(where) {
  const auto* spmm = op == SPARSEPORT_OP_SPMM ? static_cast<const sparseport_spmm_args*>(args) : nullptr;
  if (spmm == nullptr || spmm->beta == 0 || spmm->c.rows == 0) return;
  const size_t vsz = static_cast<size_t>(sparseport_value_size(spmm->c.value_type));
  bytes_ = static_cast<size_t>((spmm->c.rows - 1) * spmm->c.ld + spmm->c.cols) * vsz;
  target_ = spmm->c.data;
  sparseport_status st{};
  if (plugin.table->alloc(exec.state, bytes_, &saved_, &st) != SPARSEPORT_OK)
    detail::throw_status(st, where + ": allocating a copy of C for timing at full size", bytes_);
  if (plugin.table->copy(exec.state, saved_, target_, bytes_, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st) != SPARSEPORT_OK) {
    plugin.table->release(exec.state, saved_);
    detail::throw_status(st, where + ": saving C for timing at full size");
  }
}

OutputGuard::~OutputGuard() {
  if (saved_ != nullptr) plugin_.table->release(exec_.state, saved_);
}

void OutputGuard::restore() const {
  if (saved_ == nullptr) return;
  sparseport_status st{};
  if (plugin_.table->copy(exec_.state, target_, saved_, bytes_, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st) != SPARSEPORT_OK)
    detail::throw_status(st, where_ + ": restoring C after timing at full size");
}

std::vector<FullSizeTime> time_full_size(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op,
                                         const void* args, const std::vector<std::string>& variants, int repeats,
                                         double budget_s, double first_wins, const OutputGuard& guard, LastCall* last) {
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  LastCall ran;
  const auto batch = [&](const std::string& v, int calls) {
    guard.restore();
    const double s = batch_seconds(plugin, exec, op, v, args, calls, nullptr);
    // One call on the output as the caller gave it, or any number where the op does not read it:
    // the output is v's result.
    ran = s >= 0 && (calls == 1 || !guard.active()) ? LastCall{v, s} : LastCall{};
    return s;
  };
  // A warm-up call (a first call builds per-matrix state: cuSPARSE descriptors and its algorithm
  // choice, hub partitions, tc_window's format; lazily loaded kernels), then a timed call, for each
  // variant but the best predicted; then the best predicted's first call. Where that first call,
  // its build included, already beats every other variant's timed call, it needs no second: the
  // choice is the same with its steady time, and the output holds its result, so that its call is
  // the op's own. A cold decision between two variants then costs the other's two calls beyond the
  // op's, where it cost four (both timed twice, then the op's call): issue 35's target on inputs of
  // >= 1M entries is 2. (H100, 2026-12-07: 3.4-4.2 full-size calls a cold decision on three such
  // inputs at F = 64, features and the model included; benchmarks/results/2026-12-07-s38.md.)
  std::vector<FullSizeTime> out;
  for (const std::string& v : variants) out.push_back({v, -1, -1});
  double others = 1e300;
  for (size_t i = 1; i < out.size(); ++i) {
    FullSizeTime& t = out[i];
    t.first_seconds = batch(t.variant, 1);
    if (t.first_seconds >= 0) t.seconds = batch(t.variant, 1);
    if (t.seconds >= 0) others = std::min(others, t.seconds);
  }
  if (!out.empty()) {
    FullSizeTime& t = out.front();
    t.first_seconds = batch(t.variant, 1);
    if (t.first_seconds >= 0 && t.first_seconds <= first_wins * others) t.seconds = t.first_seconds;
    else if (t.first_seconds >= 0) t.seconds = batch(t.variant, 1);
  }
  double fastest = 1e300;
  for (const FullSizeTime& t : out)
    if (t.seconds >= 0) fastest = std::min(fastest, t.seconds);
  // Then batches (batch_target: 200 us on a device, so launch and clock overheads do not rank short
  // kernels) for every variant within 4x of the fastest single call, while the budget lasts; the others keep
  // their single call (one call's noise is far below 4x, so they cannot win, and batching them
  // would only spend the budget). The fastest goes last: where it stays the fastest and the op does
  // not read its output, its last batch leaves the op's result.
  std::vector<FullSizeTime*> order;
  for (FullSizeTime& t : out) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const FullSizeTime* x, const FullSizeTime* y) {
    return (x->seconds < 0 ? 1e300 : x->seconds) > (y->seconds < 0 ? 1e300 : y->seconds);
  });
  for (FullSizeTime* t : order) {
    const double s = t->seconds;
    if (repeats <= 0 || s < 0 || s > 4 * fastest) continue;
    const int calls = calls_per_batch(s, batch_target(plugin));
    if (elapsed() + repeats * calls * s > budget_s) continue;
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) times.push_back(batch(t->variant, calls));
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    if (times[times.size() / 2] >= 0) t->seconds = times[times.size() / 2];
  }
  if (last != nullptr) *last = ran;
  return out;
}

// ---- the sample --------------------------------------------------------------------------------

// Rows of degree 0, 1, 2-3, 4-7, ... form strata, and the sample takes the fraction f of each, evenly
// spaced inside the stratum so that it spans the whole id range (locality of B). A stratum too small
// to give one row at f (the hubs of a power-law graph: fewer than 1 / f rows each) used to give one
// whole row, which made the hubs 4-7x their share of the work in the sample (Chung-Lu graphs of 0.1-2M
// rows, exponents 2.1-2.5: 10 % of the entries at full size, 60 % in the sample), so that the probe
// favoured the variants built for hubs (issue 35: hub_split probed best at F = 47 and took 26x the
// vendor's time at full size). Such a stratum now gives every one of its rows, each cut to the
// fraction f of its entries: the stratum keeps its share of the work, and each hub its length
// relative to the sample, which is what a variant that gives a row to one thread or warp pays for.
// Rows too short to keep one entry at f are taken whole, one per stratum, as before (a few entries).
//
// Two passes over rowptr as stored (int32 or int64, never widened), in row order: one counts the
// strata, one picks. A stratum's picks are its elements (j * size) / n for j < n, a strictly
// increasing sequence of positions, so a counter per stratum finds them in one pass and the rows
// come out ascending. The same rows as the vector of rows per stratum and the sort that it replaced,
// which cost 62 ms and the widened copy of rowptr 24 ms more on a 2.4M-row graph (2-core VM; this
// pass 17-20 ms). On an H100's host the probe sample of the products-sized SAGE graph (rowptr read
// back, rows picked, sliced on the GPU) went from 30-46 to 11-22 ms per width (2026-12-07-s41.md).
namespace {

template <class I>
ProbeSample::Rows stratified(const I* rowptr, int64_t rows, double frac, int64_t min_rows) {
  ProbeSample::Rows out;
  if (rows <= 0) return out;
  if (rows <= min_rows) {
    out.rows.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) out.rows[static_cast<size_t>(i)] = i;
    return out;
  }
  const double f = std::min(1.0, std::max(frac, static_cast<double>(min_rows) / static_cast<double>(rows)));
  constexpr int kStrata = 65;  // degree 0, 1, 2-3, 4-7, ...: std::bit_width of the degree
  const auto stratum = [&](int64_t i) {
    return std::bit_width(static_cast<uint64_t>(static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i])));
  };
  std::array<int64_t, kStrata> size{};
  for (int64_t i = 0; i < rows; ++i) ++size[static_cast<size_t>(stratum(i))];
  // Per stratum: whether its rows are cut, how many it gives (n), the next pick's index j and position.
  std::array<bool, kStrata> cut{};
  std::array<int64_t, kStrata> n{}, j{}, next{}, seen{};
  size_t whole = 0;
  for (int b = 0; b < kStrata; ++b) {
    if (size[b] == 0) continue;
    const double want = f * static_cast<double>(size[b]);
    // The stratum's shortest degree, 2^(b-1), kept at f: at least one entry for every row.
    cut[b] = want < 0.5 && b >= 1 && f * std::ldexp(1.0, b - 1) >= 1.0;
    n[b] = cut[b] ? 0 : std::clamp<int64_t>(std::llround(want), 1, size[b]);
    whole += static_cast<size_t>(n[b]);
  }
  out.rows.reserve(whole);
  for (int64_t i = 0; i < rows; ++i) {
    const int b = stratum(i);
    if (cut[b]) {
      const auto d = static_cast<double>(static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]));
      out.cut.emplace_back(i, std::max<int64_t>(1, std::llround(f * d)));
    } else if (j[b] < n[b] && seen[b]++ == next[b]) {
      out.rows.push_back(i);
      next[b] = (++j[b] * size[b]) / n[b];
    }
  }
  if (out.rows.empty()) {  // only cut strata (cannot happen above min_rows rows; kept whole then)
    for (const auto& [r, k] : out.cut) out.rows.push_back(r);
    out.cut.clear();
  }
  return out;
}

}  // namespace

ProbeSample::Rows ProbeSample::sample_rows(const std::vector<int64_t>& rowptr, double frac, int64_t min_rows) {
  return stratified(rowptr.data(), static_cast<int64_t>(rowptr.size()) - 1, frac, min_rows);
}

ProbeSample::Rows ProbeSample::sample_rows(const Structure& s, double frac, int64_t min_rows) {
  if (s.index_type == SPARSEPORT_I64)
    return stratified(static_cast<const int64_t*>(s.rowptr_bytes()), s.rows, frac, min_rows);
  return stratified(static_cast<const int32_t*>(s.rowptr_bytes()), s.rows, frac, min_rows);
}

ProbeSample::Rows ProbeSample::block_rows(const std::vector<int64_t>& rowptr, double frac, int blocks) {
  const int64_t rows = static_cast<int64_t>(rowptr.size()) - 1;
  Rows out;
  if (rows <= 0 || blocks <= 0 || rowptr.back() <= 0) return out;
  const double nnz = static_cast<double>(rowptr.back());
  // The first row whose entries end after entry e.
  const auto row_of = [&](double e) {
    const auto at = std::upper_bound(rowptr.begin() + 1, rowptr.end(), static_cast<int64_t>(e));
    return std::min<int64_t>(static_cast<int64_t>(at - rowptr.begin()) - 1, rows - 1);
  };
  int64_t taken = 0;
  for (int k = 0; k < blocks; ++k) {
    const double centre = nnz * (2 * k + 1) / (2.0 * blocks), half = nnz * frac / (2.0 * blocks);
    const int64_t first = std::max(row_of(centre - half), out.rows.empty() ? int64_t{0} : out.rows.back() + 1);
    const int64_t last = row_of(std::max(centre + half - 1, 0.0));
    for (int64_t r = first; r <= last; ++r) out.rows.push_back(r);
    if (last >= first) taken += rowptr[static_cast<size_t>(last + 1)] - rowptr[static_cast<size_t>(first)];
  }
  if (static_cast<double>(taken) > 2 * frac * nnz) out.rows.clear();
  return out;
}

void* ProbeSample::alloc(size_t bytes) {
  void* p = nullptr;
  sparseport_status st{};
  if (plugin_.table->alloc(exec_.state, std::max<size_t>(bytes, 16), &p, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: allocating " + std::to_string(bytes) + " bytes for the probe failed");
  owned_.push_back(p);
  return p;
}

void* ProbeSample::upload(const void* host, size_t bytes) {
  void* p = alloc(bytes);
  sparseport_status st{};
  if (bytes > 0 && plugin_.table->copy(exec_.state, p, host, bytes, SPARSEPORT_COPY_HOST_TO_DEVICE, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: uploading the probe sample failed");
  return p;
}

void* ProbeSample::filled(size_t count, int32_t value_type) {
  // Small, finite, non-denormal values: the kernels' speed must not depend on what they read.
  if (value_type == SPARSEPORT_F64) {
    std::vector<double> v(count, 0.25);
    return upload(v.data(), count * 8);
  }
  if (value_type == SPARSEPORT_F16 || value_type == SPARSEPORT_BF16) {
    const uint16_t q = value_type == SPARSEPORT_F16 ? half(0.25f).bits : bfloat16(0.25f).bits;
    std::vector<uint16_t> v(count, q);
    return upload(v.data(), count * 2);
  }
  std::vector<float> v(count, 0.25f);
  return upload(v.data(), count * 4);
}

void ProbeSample::copy_h2d(void* dst, const void* src, size_t bytes) {
  sparseport_status st{};
  if (bytes > 0 && plugin_.table->copy(exec_.state, dst, src, bytes, SPARSEPORT_COPY_HOST_TO_DEVICE, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: uploading the probe sample failed");
}

void ProbeSample::copy_d2d(void* dst, const void* src, size_t bytes) {
  sparseport_status st{};
  if (bytes > 0 &&
      plugin_.table->copy(exec_.state, dst, src, bytes, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: copying the probe sample failed");
}

ProbeSample::~ProbeSample() {
  for (void* p : owned_) plugin_.table->release(exec_.state, p);
}

namespace {

template <class T>
std::vector<char> pack(const T& v) {
  std::vector<char> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

// int64 host ids to an index array of the given type.
std::vector<char> encode(const std::vector<int64_t>& ids, int32_t index_type) {
  std::vector<char> out;
  if (index_type == SPARSEPORT_I64) {
    out.resize(ids.size() * 8);
    std::memcpy(out.data(), ids.data(), out.size());
  } else {
    out.resize(ids.size() * 4);
    for (size_t i = 0; i < ids.size(); ++i) {
      const int32_t v = static_cast<int32_t>(ids[i]);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

int64_t decode_one(const char* p, int32_t index_type) {
  if (index_type == SPARSEPORT_I64) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

ProbeSample::ProbeSample(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
                         const Structure& s, const Rows& pick, const std::string& how)
    : plugin_(plugin), exec_(exec) {
  build_csr(op, args, s, pick, how);
}

void ProbeSample::build_csr(sparseport_op op, const void* args, const Structure& s, const Rows& pick,
                            const std::string& how) {
  const PluginInfo& plugin = plugin_;
  const sparseport_exec& exec = exec_;
  const sparseport_plugin* t = plugin.table;
  const bool device = t->memory_space == SPARSEPORT_MEMORY_DEVICE;
  const sparseport_csr* a = nullptr;
  if (op == SPARSEPORT_OP_SPMM) a = &static_cast<const sparseport_spmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_SDDMM) a = &static_cast<const sparseport_sddmm_args*>(args)->a;
  if (op == SPARSEPORT_OP_CSR_ATTENTION) a = &static_cast<const sparseport_attention_args*>(args)->a;
  // The whole rows come first (sliced by the backend), then the cut rows (their first entries
  // copied after them): n rows in all.
  const int64_t whole = static_cast<int64_t>(pick.rows.size());
  const int64_t n = whole + static_cast<int64_t>(pick.cut.size());
  const size_t isz = a->index_type == SPARSEPORT_I64 ? 8 : 4, vsz = static_cast<size_t>(sparseport_value_size(a->value_type));
  const std::vector<char> ids = encode(pick.rows, a->index_type);
  // The slice is built with the backend's own csr_slice_rows (on the device for a GPU backend).
  const std::vector<std::string> slicers = plugin.variants_of(SPARSEPORT_OP_CSR_SLICE_ROWS);
  if (slicers.empty()) throw Unsupported("sparseport scheduler: backend '" + plugin.name + "' has no csr_slice_rows to build the probe sample");
  // 16-bit values: no backend's slicer takes them (its dispatch read them as floats, past the end
  // of the array: a crash on openmp, most likely the device fault on 32M-entry inputs in session
  // 12), so the sample is sliced as a float32 pattern and given the first nnz of A's own values,
  // copied as bytes: a timing does not depend on which values a row holds.
  const bool values16 = is_16bit(static_cast<ValueType>(a->value_type));
  sparseport_slice_rows_args sl{};
  sl.a = *a;
  if (values16) {
    sl.a.values = nullptr;
    sl.a.value_type = SPARSEPORT_F32;
  }
  sl.rows = {whole, upload(ids.data(), ids.size()), a->index_type};
  void* rowptr = alloc((n + 1) * isz);
  sl.out = {whole, a->cols, 0, rowptr, nullptr, nullptr, a->index_type, sl.a.value_type};
  sparseport_status st{};
  sl.phase = 0;
  if (call_slot(t, SPARSEPORT_OP_CSR_SLICE_ROWS, exec, slicers.front(), &sl, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: slicing the probe sample failed");
  std::vector<char> last(isz);
  const char* last_src = static_cast<const char*>(rowptr) + whole * isz;
  if (device) {
    if (t->copy(exec.state, last.data(), last_src, isz, SPARSEPORT_COPY_DEVICE_TO_HOST, &st) != SPARSEPORT_OK)
      detail::throw_status(st, "sparseport scheduler: reading the probe sample's size failed");
  } else {
    std::memcpy(last.data(), last_src, isz);
  }
  const int64_t sliced = decode_one(last.data(), a->index_type);
  std::vector<int64_t> tail;  // rowptr[whole + 1 ..] of the cut rows
  int64_t nnz = sliced;
  for (const auto& [r, k] : pick.cut) tail.push_back(nnz += k);
  const bool own_values = a->values != nullptr && !values16;
  sl.out.nnz = sliced;
  sl.out.colind = alloc(nnz * isz);
  sl.out.values = own_values ? alloc(nnz * vsz) : nullptr;
  sl.phase = 1;
  if (call_slot(t, SPARSEPORT_OP_CSR_SLICE_ROWS, exec, slicers.front(), &sl, &st) != SPARSEPORT_OK)
    detail::throw_status(st, "sparseport scheduler: slicing the probe sample failed");
  if (!tail.empty()) {
    const std::vector<char> ends = encode(tail, a->index_type);
    copy_h2d(static_cast<char*>(rowptr) + (whole + 1) * isz, ends.data(), ends.size());
    int64_t at = sliced;
    for (const auto& [r, k] : pick.cut) {
      const int64_t from = decode_one(static_cast<const char*>(s.rowptr_bytes()) + r * isz, a->index_type);
      copy_d2d(static_cast<char*>(sl.out.colind) + at * isz, static_cast<const char*>(a->colind) + from * isz, k * isz);
      if (own_values)
        copy_d2d(static_cast<char*>(sl.out.values) + at * vsz, static_cast<const char*>(a->values) + from * vsz,
                 k * vsz);
      at += k;
    }
  }
  if (values16 && a->values != nullptr && nnz > 0) {
    sl.out.values = alloc(nnz * vsz);
    const size_t bytes = static_cast<size_t>(nnz) * vsz;
    if (device) {
      if (t->copy(exec.state, sl.out.values, a->values, bytes, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st) != SPARSEPORT_OK)
        detail::throw_status(st, "sparseport scheduler: copying the probe sample's values failed");
    } else {
      std::memcpy(sl.out.values, a->values, bytes);
    }
  }
  const sparseport_csr sub{n, a->cols, nnz, rowptr, sl.out.colind, sl.out.values, a->index_type,
                           a->value_type};
  if (op == SPARSEPORT_OP_SPMM) {
    sparseport_spmm_args p = *static_cast<const sparseport_spmm_args*>(args);
    p.a = sub;
    p.c = {n, p.c.cols, p.c.cols, alloc(n * p.c.cols * vsz), p.c.value_type};
    p.beta = 0;  // the sample's output is scratch
    args_ = pack(p);
  } else if (op == SPARSEPORT_OP_SDDMM) {
    sparseport_sddmm_args p = *static_cast<const sparseport_sddmm_args*>(args);
    p.a = sub;
    p.x = {n, p.x.cols, p.x.cols, filled(n * p.x.cols, p.x.value_type), p.x.value_type};
    p.out = {nnz, 1, 1, alloc(nnz * vsz), p.out.value_type};
    args_ = pack(p);
  } else {
    sparseport_attention_args p = *static_cast<const sparseport_attention_args*>(args);
    p.a = sub;
    p.q = {n, p.q.cols, p.q.cols, filled(n * p.q.cols, p.q.value_type), p.q.value_type};
    p.out = {n, p.out.cols, p.out.cols, alloc(n * p.out.cols * vsz), p.out.value_type};
    args_ = pack(p);
  }
  work_fraction_ = s.nnz > 0 ? static_cast<double>(nnz) / static_cast<double>(s.nnz) : 1;
  description_ = "rows " + std::to_string(n) + "/" + std::to_string(s.rows) + " (nnz " + std::to_string(nnz) + "/" +
                 std::to_string(s.nnz) + "), " + how +
                 (pick.cut.empty() ? "" : ", " + std::to_string(pick.cut.size()) + " hub rows cut to their share");
}

ProbeSample::ProbeSample(const PluginInfo& plugin, const sparseport_exec& exec, sparseport_op op, const void* args,
                         const Structure& s, const SchedulerOptions& opt)
    : plugin_(plugin), exec_(exec) {
  const sparseport_plugin* t = plugin.table;
  const bool device = t->memory_space == SPARSEPORT_MEMORY_DEVICE;
  if (s.csr) {
    build_csr(op, args, s, sample_rows(s, opt.probe_frac, opt.min_probe_rows), "stratified by degree");
    return;
  }

  // Index ops: windows of the message array, relabelled to a compact output.
  const int64_t E = s.nnz;
  constexpr int64_t kWindows = 16;
  const int64_t want = std::min<int64_t>(E, std::max<int64_t>(static_cast<int64_t>(opt.probe_frac * E),
                                                              opt.min_probe_rows * 16));
  const int64_t len = std::max<int64_t>(1, (want + kWindows - 1) / kWindows);
  const int64_t windows = std::min<int64_t>(kWindows, std::max<int64_t>(1, E / len));
  const sparseport_index_array* index = nullptr;
  const sparseport_coo* edges = nullptr;
  if (op == SPARSEPORT_OP_GATHER_SCATTER) {
    edges = &static_cast<const sparseport_gather_scatter_args*>(args)->edges;
  } else {
    index = &static_cast<const sparseport_segment_args*>(args)->index;
  }
  const int32_t itype = edges != nullptr ? edges->index_type : index->index_type;
  const void* ibase = edges != nullptr ? edges->row : index->data;
  const size_t isz = itype == SPARSEPORT_I64 ? 8 : 4;
  std::vector<int64_t> starts(windows), mapped;
  std::unordered_map<int64_t, int64_t> relabel;  // unsorted (scatter) ids to compact ids
  int64_t out_rows = 0;
  std::vector<char> raw(len * isz);
  for (int64_t w = 0; w < windows; ++w) {
    starts[w] = windows == 1 ? 0 : (E - len) * w / (windows - 1);
    const char* src = static_cast<const char*>(ibase) + starts[w] * isz;
    sparseport_status st{};
    if (device) {
      if (t->copy(exec.state, raw.data(), src, len * isz, SPARSEPORT_COPY_DEVICE_TO_HOST, &st) != SPARSEPORT_OK)
        detail::throw_status(st, "sparseport scheduler: reading the probe windows failed");
    } else {
      std::memcpy(raw.data(), src, len * isz);
    }
    if (s.sorted) {
      const int64_t first = decode_one(raw.data(), itype);
      int64_t last = first;
      for (int64_t e = 0; e < len; ++e) {
        last = decode_one(raw.data() + e * isz, itype);
        mapped.push_back(last - first + out_rows);
      }
      out_rows += last - first + 1;
    } else {
      for (int64_t e = 0; e < len; ++e) {
        const auto [it, fresh] = relabel.emplace(decode_one(raw.data() + e * isz, itype), out_rows);
        out_rows += fresh;
        mapped.push_back(it->second);
      }
    }
  }
  const int64_t m = static_cast<int64_t>(mapped.size());
  const std::vector<char> ids = encode(mapped, itype);
  void* new_index = upload(ids.data(), ids.size());
  if (edges != nullptr) {
    sparseport_gather_scatter_args p = *static_cast<const sparseport_gather_scatter_args*>(args);
    const size_t vsz = static_cast<size_t>(sparseport_value_size(p.x.value_type));
    void* cols = alloc(m * isz);
    void* vals = p.edges.values != nullptr ? alloc(m * vsz) : nullptr;
    for (int64_t w = 0; w < windows; ++w) {
      copy_d2d(static_cast<char*>(cols) + w * len * isz, static_cast<const char*>(p.edges.col) + starts[w] * isz,
               len * isz);
      if (vals != nullptr)
        copy_d2d(static_cast<char*>(vals) + w * len * vsz, static_cast<const char*>(p.edges.values) + starts[w] * vsz,
                 len * vsz);
    }
    p.edges = {out_rows, p.edges.cols, m, new_index, cols, vals, itype, p.edges.value_type};
    p.out = {out_rows, p.out.cols, p.out.cols, alloc(out_rows * p.out.cols * vsz), p.out.value_type};
    args_ = pack(p);
  } else {
    sparseport_segment_args p = *static_cast<const sparseport_segment_args*>(args);
    const size_t vsz = static_cast<size_t>(sparseport_value_size(p.src.value_type));
    const size_t row_bytes = p.src.ld * vsz;
    void* src = alloc(m * row_bytes);
    for (int64_t w = 0; w < windows; ++w)
      copy_d2d(static_cast<char*>(src) + w * len * row_bytes,
               static_cast<const char*>(p.src.data) + starts[w] * row_bytes,
               ((len - 1) * p.src.ld + p.src.cols) * vsz);  // the last row may end before ld
    p.index = {m, new_index, itype};
    p.src = {m, p.src.cols, p.src.ld, src, p.src.value_type};
    p.out = {out_rows, p.out.cols, p.out.cols, alloc(out_rows * p.out.cols * vsz), p.out.value_type};
    args_ = pack(p);
  }
  work_fraction_ = E > 0 ? static_cast<double>(m) / static_cast<double>(E) : 1;
  description_ = std::to_string(windows) + " windows of " + std::to_string(len) + " messages (" + std::to_string(m) +
                 "/" + std::to_string(E) + "), " + std::to_string(out_rows) + " output rows";
}

}  // namespace sparseport::scheduler
