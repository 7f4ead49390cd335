// SPDX-License-Identifier: Apache-2.0
#include "harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace sparseport::bench {

const std::vector<sparseport_op>& benchmarked_ops() {
  static const std::vector<sparseport_op> ops = {SPARSEPORT_OP_SPMM, SPARSEPORT_OP_SEGMENT_REDUCE,
                                                 SPARSEPORT_OP_GATHER_SCATTER, SPARSEPORT_OP_SDDMM,
                                                 SPARSEPORT_OP_CSR_ATTENTION};
  return ops;
}

// ---- configuration ------------------------------------------------------------------------------

namespace {

const char* env(const char* var) {
  const char* v = std::getenv(var);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int64_t parse_positive(const std::string& what, const std::string& text) {
  int64_t v = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr != last || v <= 0)
    throw InvalidArgument("sparseport_bench: " + what + " has '" + text + "', which is not a positive integer.");
  return v;
}

double parse_positive_double(const std::string& what, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0))
    throw InvalidArgument("sparseport_bench: " + what + " is '" + text + "', which is not a positive number.");
  return v;
}

}  // namespace

std::vector<int64_t> parse_features(const std::string& what, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_positive(what, item));
  if (out.empty()) throw InvalidArgument("sparseport_bench: " + what + " is empty; give F values such as 16,64.");
  return out;
}

namespace {

double physical_memory_gb() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) / 1e9 : 8.0;
}

}  // namespace

BenchConfig parse_config(int* argc, char** argv) {
  BenchConfig c;
  c.features = {1, 16, 32, 64, 128, 256};
  c.data_dir = default_data_dir();
  // Half the memory leaves room for the graphs (kept for the whole run) and the baseline output.
  c.max_operand_gb = physical_memory_gb() / 2;
  if (const char* v = env("SPARSEPORT_BENCH_SIZE")) c.size = suite_size_from_name(v);
  if (const char* v = env("SPARSEPORT_BENCH_F")) c.features = parse_features("SPARSEPORT_BENCH_F", v);
  if (const char* v = env("SPARSEPORT_BENCH_GRAPHS")) c.graph_regex = v;
  if (const char* v = env("SPARSEPORT_BENCH_THREADS"))
    c.threads = static_cast<int>(parse_positive("SPARSEPORT_BENCH_THREADS", v));
  if (const char* v = env("SPARSEPORT_BENCH_MAX_GB")) c.max_operand_gb = parse_positive_double("SPARSEPORT_BENCH_MAX_GB", v);
  if (const char* v = env("SPARSEPORT_BENCH_CHECK")) c.check = std::string(v) != "0";
  if (const char* v = env("SPARSEPORT_BENCH_COPY_GBPS")) c.copy_gbps = parse_positive_double("SPARSEPORT_BENCH_COPY_GBPS", v);

  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 && a.size() > n && a[n] == '=' ? argv[i] + n + 1 : nullptr;
    };
    if (const char* v = value("--sp_graphs")) {
      c.graph_regex = v;
    } else if (const char* v2 = value("--sp_size")) {
      c.size = suite_size_from_name(v2);
    } else if (const char* v3 = value("--sp_f")) {
      c.features = parse_features("--sp_f", v3);
    } else if (const char* v4 = value("--sp_threads")) {
      c.threads = static_cast<int>(parse_positive("--sp_threads", v4));
    } else if (a == "--sp_list") {
      c.list_only = true;
    } else if (a.rfind("--sp_", 0) == 0) {
      throw InvalidArgument("sparseport_bench: unknown flag '" + a + "' (see --help).");
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return c;
}

std::string config_help() {
  return "SparsePort flags (each also an environment variable; the flag wins):\n"
         "  --sp_graphs=REGEX    SPARSEPORT_BENCH_GRAPHS   graphs whose name matches (ECMAScript, anywhere)\n"
         "  --sp_size=small|full SPARSEPORT_BENCH_SIZE     suite size (default small)\n"
         "  --sp_f=1,16,...      SPARSEPORT_BENCH_F        feature widths (default 1,16,32,64,128,256)\n"
         "  --sp_threads=N       SPARSEPORT_BENCH_THREADS  Context::set_threads for every backend (default: its own)\n"
         "  --sp_list                                      print the datasets and exit\n"
         "                       SPARSEPORT_DATA_DIR       folder of .mtx/.mtx.gz matrices\n"
         "                       SPARSEPORT_BENCH_MAX_GB   skip rows whose operands need more (default: half the RAM)\n"
         "                       SPARSEPORT_BENCH_CHECK=0  skip the gross result check against the baseline\n"
         "                       SPARSEPORT_BENCH_COPY_GBPS use this copy bandwidth instead of measuring it\n";
}

// ---- traffic model ------------------------------------------------------------------------------

OpModel op_model(sparseport_op op, const Graph& g, int64_t features) {
  constexpr double V = 4, I = 4;  // fp32 values, int32 indices
  const double m = static_cast<double>(g.csr.rows), k = static_cast<double>(g.csr.cols);
  const double nnz = static_cast<double>(g.csr.nnz()), F = static_cast<double>(features);
  const double r = static_cast<double>(g.nonempty_rows), c = static_cast<double>(g.touched_cols);
  const double csr_bytes = (m + 1) * I + nnz * (I + V);
  OpModel o;
  switch (op) {
    case SPARSEPORT_OP_SPMM:
      o.compulsory_bytes = csr_bytes + c * F * V + m * F * V;
      o.flops = 2 * nnz * F;
      o.gathered_bytes = V * F * nnz;
      o.operand_bytes = (k * F + 2 * m * F) * V;  // B, C, and the baseline's C
      break;
    case SPARSEPORT_OP_SDDMM:
      o.compulsory_bytes = csr_bytes + r * F * V + c * F * V + nnz * V;
      o.flops = 2 * nnz * F;
      o.gathered_bytes = V * F * nnz;
      o.operand_bytes = (m * F + k * F + 2 * nnz) * V;
      break;
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE:
      o.compulsory_bytes = nnz * I + nnz * F * V + m * F * V;
      o.flops = nnz * F;
      o.gathered_bytes = V * F * nnz;
      o.operand_bytes = (nnz * F + 2 * m * F) * V;
      break;
    case SPARSEPORT_OP_GATHER_SCATTER:
      o.compulsory_bytes = 2 * nnz * I + nnz * V + c * F * V + m * F * V;
      o.flops = 2 * nnz * F;
      o.gathered_bytes = V * F * nnz;
      o.operand_bytes = (k * F + 2 * m * F) * V;
      break;
    case SPARSEPORT_OP_CSR_ATTENTION:
      o.compulsory_bytes = (m + 1) * I + nnz * I + r * F * V + 2 * c * F * V + m * F * V;
      o.flops = 4 * nnz * F;
      o.gathered_bytes = 2 * V * F * nnz;
      o.operand_bytes = (m * F + 2 * k * F + 2 * m * F) * V;
      break;
    case SPARSEPORT_OP_CSR_TRANSPOSE:
      o.compulsory_bytes = csr_bytes + (k + 1) * I + nnz * (I + V);
      o.gathered_bytes = nnz * (I + V);
      o.operand_bytes = 2 * ((k + 1) * I + nnz * (I + V));  // the result, and the baseline's
      break;
    default:
      throw InvalidArgument(std::string("sparseport_bench: no traffic model for op '") + op_name(op) + "'.");
  }
  return o;
}

OpModel op_model(sparseport_op op, const Graph& g, const RowSelection& sel) {
  constexpr double V = 4, I = 4;
  const double s = static_cast<double>(sel.rows), e = static_cast<double>(sel.entries);
  const double k = static_cast<double>(g.csr.cols);
  const double read = s * I + 2 * s * I + e * (I + V);
  OpModel o;
  o.gathered_bytes = e * (I + V);
  switch (op) {
    case SPARSEPORT_OP_CSR_SLICE_ROWS:
      o.compulsory_bytes = read + (s + 1) * I + e * (I + V);
      o.operand_bytes = s * I + (s + 1) * I + e * (I + V);
      break;
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE:
      o.compulsory_bytes = read + s * k * V;
      o.operand_bytes = s * I + s * k * V;
      break;
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: {
      const double kept = static_cast<double>(sel.kept);
      o.compulsory_bytes = read + (s + 1) * I + kept * (I + V);
      o.operand_bytes = s * I + (s + 1) * I + kept * (I + V);
      break;
    }
    default:
      throw InvalidArgument(std::string("sparseport_bench: op '") + op_name(op) +
                            "' takes no row selection (the selection model is for csr_slice_rows, "
                            "csr_slice_rows_dense and csr_induced_subgraph).");
  }
  return o;
}

std::string row_op_label(sparseport_op op, Reduce reduce) {
  std::string s = op_name(op);
  if (op == SPARSEPORT_OP_SPMM && reduce != Reduce::sum) s += std::string("_") + name(reduce);
  return s;
}

// ---- baselines ----------------------------------------------------------------------------------

const std::vector<std::string>& named_baselines(sparseport_op op) {
  // What a user writes today when no vendor kernel is at hand: a row-parallel SpMM, and the
  // atomic scatter compilers generate for index_add_ (DESIGN.md section 3); the openmp plugin
  // calls it scatter_atomic, the cuda plugin atomic.
  static const std::vector<std::string> kSpmm = {"spmm.rows"};
  static const std::vector<std::string> kSegment = {"segment_reduce.scatter_atomic", "segment_reduce.atomic"};
  static const std::vector<std::string> kGather = {"gather_scatter.scatter_atomic", "gather_scatter.atomic"};
  static const std::vector<std::string> kScatter = {"scatter_reduce.atomic"};
  static const std::vector<std::string> kAttention = {"csr_attention.unfused"};
  static const std::vector<std::string> kNone;
  switch (op) {
    case SPARSEPORT_OP_SPMM: return kSpmm;
    case SPARSEPORT_OP_SEGMENT_REDUCE: return kSegment;
    case SPARSEPORT_OP_GATHER_SCATTER: return kGather;
    case SPARSEPORT_OP_SCATTER_REDUCE: return kScatter;
    case SPARSEPORT_OP_CSR_ATTENTION: return kAttention;
    default: return kNone;
  }
}

std::vector<Baseline> baseline_candidates(const PluginInfo& plugin, sparseport_op op) {
  std::vector<Baseline> out;
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_vendor) out.push_back({v.name, true});
  if (out.empty()) out.push_back(baseline_for(plugin, op));
  return out;
}

std::vector<Baseline> baseline_candidates(const PluginInfo& plugin, sparseport_op op, Reduce reduce) {
  if (op != SPARSEPORT_OP_SPMM || reduce == Reduce::sum) return baseline_candidates(plugin, op);
  std::vector<Baseline> out;
  const std::vector<std::string> offered = plugin.variants_of(SPARSEPORT_OP_GATHER_SCATTER);
  for (const std::string& want : named_baselines(SPARSEPORT_OP_GATHER_SCATTER))
    if (std::find(offered.begin(), offered.end(), want) != offered.end()) out.push_back({want, false});
  const std::vector<std::string> spmm = plugin.variants_of(SPARSEPORT_OP_SPMM);
  for (const std::string& want : named_baselines(SPARSEPORT_OP_SPMM))
    if (std::find(spmm.begin(), spmm.end(), want) != spmm.end()) out.push_back({want, false});
  for (const VariantInfo& v : plugin.variants)
    if (v.op == SPARSEPORT_OP_SPMM && v.is_default) out.push_back({v.name, false});
  return out;
}

Baseline baseline_for(const PluginInfo& plugin, sparseport_op op) {
  if (std::string v = plugin.vendor_variant(op); !v.empty()) return {v, true};
  const std::vector<std::string> offered = plugin.variants_of(op);
  for (const std::string& want : named_baselines(op))
    if (std::find(offered.begin(), offered.end(), want) != offered.end()) return {want, false};
  for (const VariantInfo& v : plugin.variants)
    if (v.op == op && v.is_default) return {v.name, false};
  return {offered.empty() ? std::string() : offered.front(), false};
}

// ---- copy bandwidth -----------------------------------------------------------------------------

namespace {

// The largest cache of cpu0 as sysfs lists it. glibc's sysconf is the fallback only: on AMD it
// reports the L3 of the whole socket (320 MiB on this project's 2-core EPYC VM for a 32 MiB L3).
int64_t last_level_cache_bytes() {
  int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    int64_t v = 0;
    char unit = 0;
    if (!(f >> v)) continue;
    if (f >> unit) v *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? 1024 * 1024 * 1024 : 1;
    best = std::max(best, v);
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (best == 0) best = std::max<int64_t>(sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE));
#endif
  return best > 0 ? best : int64_t{32} << 20;
}

}  // namespace

CopyBandwidth measure_host_copy_bandwidth(int threads, int repeats) {
  threads = std::max(threads, 1);
  repeats = std::max(repeats, 1);
  int64_t bytes = std::max<int64_t>(int64_t{256} << 20, 8 * last_level_cache_bytes());
  bytes = std::min<int64_t>({bytes, int64_t{1} << 30, static_cast<int64_t>(physical_memory_gb() * 1e9 / 8)});
  bytes -= bytes % (int64_t{4096} * threads);
  std::unique_ptr<char[]> src(new char[static_cast<size_t>(bytes)]);
  std::unique_ptr<char[]> dst(new char[static_cast<size_t>(bytes)]);
  const int64_t chunk = bytes / threads;

  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
    body(0);
    for (std::thread& th : pool) th.join();
  };
  parallel([&](int t) {
    std::memset(src.get() + t * chunk, 1 + t, static_cast<size_t>(chunk));
    std::memset(dst.get() + t * chunk, 0, static_cast<size_t>(chunk));
  });
  double best = 1e300;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    parallel([&](int t) { std::memcpy(dst.get() + t * chunk, src.get() + t * chunk, static_cast<size_t>(chunk)); });
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // Keeps the copies observable, so no compiler may drop them.
  benchmark::DoNotOptimize(dst[static_cast<size_t>(bytes - 1)]);

  CopyBandwidth bw;
  bw.buffer_bytes = bytes;
  bw.threads = threads;
  bw.repeats = repeats;
  bw.gbps = 2.0 * static_cast<double>(bytes) / best / 1e9;
  std::ostringstream how;
  how << "host memcpy of " << (bytes >> 20) << " MiB over " << threads << " thread(s), best of " << repeats
      << ", counted as STREAM Copy (2 x bytes / t, write-allocate not counted)";
  bw.how = how.str();
  return bw;
}

// ---- counters -----------------------------------------------------------------------------------

void set_row_counters(benchmark::State& state, const OpModel& model, const RowTimes& t, double copy_gbps) {
  if (!(t.seconds > 0)) return;
  state.counters["median_ms"] = t.seconds * 1e3;
  state.counters["GB/s"] = model.gathered_bytes / t.seconds / 1e9;
  state.counters["GFLOP/s"] = model.flops / t.seconds / 1e9;
  if (copy_gbps > 0) {
    const double floor_s = model.compulsory_bytes / (copy_gbps * 1e9);
    state.counters["floor_ms"] = floor_s * 1e3;
    state.counters["floor_frac"] = floor_s / t.seconds;
  }
  if (t.baseline_seconds > 0) {
    state.counters["baseline_ms"] = t.baseline_seconds * 1e3;
    state.counters["speedup"] = t.baseline_seconds / t.seconds;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

std::string row_name(sparseport_op op, const std::string& backend, const std::string& variant,
                     const std::string& graph, int64_t features) {
  return row_name(std::string(op_name(op)), backend, variant, graph, features);
}

std::string row_name(const std::string& op, const std::string& backend, const std::string& variant,
                     const std::string& graph, int64_t features) {
  return op + "/" + backend + "/" + variant + "/" + graph + "/" + std::to_string(features);
}

int effective_host_threads(int requested) {
  if (requested > 0) return requested;
  if (const char* v = env("OMP_NUM_THREADS")) {
    // OMP_NUM_THREADS may be a nesting list ("8,2"); the outer level is what a flat loop gets.
    int n = std::atoi(v);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

std::string thread_summary(int requested) {
  const char* omp = env("OMP_NUM_THREADS");
  std::ostringstream s;
  if (requested > 0)
    s << requested << " (SPARSEPORT_BENCH_THREADS / --sp_threads, Context::set_threads)";
  else
    s << effective_host_threads(0) << " (Context::threads() = 0: backend default; OMP_NUM_THREADS="
      << (omp ? omp : "unset") << ")";
  s << "; " << std::thread::hardware_concurrency() << " hardware threads; serial backends use 1";
  return s.str();
}

}  // namespace sparseport::bench
