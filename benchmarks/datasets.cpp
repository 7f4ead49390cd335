// SPDX-License-Identifier: Apache-2.0
#include "datasets.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>

namespace sparseport::bench {

const char* name(SuiteSize s) { return s == SuiteSize::small ? "small" : "full"; }

SuiteSize suite_size_from_name(const std::string& s) {
  if (s == "small") return SuiteSize::small;
  if (s == "full") return SuiteSize::full;
  throw InvalidArgument("sparseport_bench: SPARSEPORT_BENCH_SIZE is '" + s + "' but must be 'small' or 'full'.");
}

std::vector<DatasetSpec> generator_datasets(SuiteSize size) {
  // full: DESIGN.md's anchors (ER 200k, RMAT 20) and the shapes the variants are built for: RMAT
  // power law, injected hubs, a single mega-row holding most entries (one row serialises a
  // row-parallel kernel), a mega-row beside many ordinary rows, and a regular banded mesh.
  // small: the same shapes at about 10^5 entries each.
  static const char* const kFull[] = {
      "er:200000:2e-5",           "rmat:18:16",       "rmat:20:16", "hubs:1000000:16:100:50000",
      "megarow:1000000:1:0.9",    "megarow:2000000:16:0.05", "band:1000000:16"};
  static const char* const kSmall[] = {
      "er:20000:5e-4",         "rmat:13:16",             "hubs:20000:8:8:5000",
      "megarow:100000:1:0.9",  "megarow:20000:8:0.05",   "band:20000:8"};
  std::vector<DatasetSpec> out;
  if (size == SuiteSize::full)
    for (const char* s : kFull) out.push_back({s, s, false});
  else
    for (const char* s : kSmall) out.push_back({s, s, false});
  return out;
}

std::vector<DatasetSpec> twin_datasets() {
  // Directed Chung-Lu (ranks randomly permuted: no locality) made symmetric. AVGDEG must be whole:
  // N * AVGDEG draws, about twice that after the union with A^T; EXPONENT sets the largest degree
  // (about 2 * AVGDEG * (1 - a) * N^a, a = 1 / (EXPONENT - 1)). Measured with benchmarks/twin_check.sh
  // (load_graph, seed 1, x86-64; the generators give the same graph on every machine):
  //   chunglu:2449029:25:3.3 + symmetrize  2,449,029 rows, 122,445,771 entries (-1.0 %), max degree 16,882
  //   chunglu:232965:246:3.9 + symmetrize    232,965 rows, 114,395,998 entries (-0.2 %), max degree 21,426
  static const DatasetSpec kTwins[] = {
      {"products-twin", std::string(kSymmetrizePrefix) + "chunglu:2449029:25:3.3", false},
      {"reddit-twin", std::string(kSymmetrizePrefix) + "chunglu:232965:246:3.9", false},
  };
  return {std::begin(kTwins), std::end(kTwins)};
}

namespace {

// "cora.mtx.gz" -> "cora"; "" when the name is not a Matrix Market file.
std::string matrix_name(const std::string& file) {
  for (const std::string ext : {".mtx.gz", ".mtx"})
    if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0)
      return file.substr(0, file.size() - ext.size());
  return {};
}

}  // namespace

std::vector<DatasetSpec> file_datasets(const std::string& dir, SuiteSize size) {
  namespace fs = std::filesystem;
  std::vector<DatasetSpec> out;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string stem = matrix_name(e.path().filename().string());
    if (stem.empty()) continue;
    out.push_back({stem, e.path().string(), true});
  }
  std::sort(out.begin(), out.end(), [](const DatasetSpec& a, const DatasetSpec& b) {
    return a.name != b.name ? a.name < b.name : a.source < b.source;
  });
  // x.mtx and x.mtx.gz would give two benchmarks of one name; the first by path wins.
  out.erase(std::unique(out.begin(), out.end(), [](const DatasetSpec& a, const DatasetSpec& b) { return a.name == b.name; }),
            out.end());
  if (size == SuiteSize::small) {
    std::vector<DatasetSpec> kept;
    for (DatasetSpec& d : out) {
      try {
        if (read_matrix_market_header(d.source).entries <= kSmallFileMaxEntries) kept.push_back(std::move(d));
      } catch (const std::exception& ex) {
        std::cerr << "sparseport_bench: leaving out " << d.source << ": " << ex.what() << "\n";
      }
    }
    out = std::move(kept);
  }
  return out;
}

std::vector<DatasetSpec> datasets(SuiteSize size, const std::string& data_dir, const std::string& regex) {
  std::regex re;
  try {
    re = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& ex) {
    throw InvalidArgument("sparseport_bench: the graph filter '" + regex + "' is not a valid regular expression (" +
                          ex.what() + ").");
  }
  std::vector<DatasetSpec> all = generator_datasets(size);
  for (DatasetSpec& f : file_datasets(data_dir, size)) all.push_back(std::move(f));
  std::vector<DatasetSpec> out;
  for (DatasetSpec& d : all)
    if (regex.empty() || std::regex_search(d.name, re)) out.push_back(std::move(d));
  return out;
}

std::string default_data_dir() {
  if (const char* env = std::getenv("SPARSEPORT_DATA_DIR"); env != nullptr) return env;
#ifdef SPARSEPORT_BENCH_DATA_DIR
  return SPARSEPORT_BENCH_DATA_DIR;
#else
  return {};
#endif
}

namespace {

std::shared_ptr<const Graph> load_uncached(const DatasetSpec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  auto g = std::make_shared<Graph>();
  g->name = spec.name;
  MmReadOptions opt;
  opt.sort_and_merge = true;
  const std::string prefix = kSymmetrizePrefix;
  if (spec.is_file) {
    g->csr = read_matrix_market<int32_t, float>(spec.source, opt);
  } else if (spec.source.compare(0, prefix.size(), prefix) == 0) {
    // load_graph generates with its default GenOptions; the suffix pins the suite's seed (a spec
    // that names its own @SEED keeps it).
    std::string gen = spec.source.substr(prefix.size());
    if (gen.find('@') == std::string::npos) gen += "@" + std::to_string(kGeneratorSeed);
    opt.symmetrize = true;
    g->csr = load_graph<int32_t, float>(gen, opt);
  } else {
    g->csr = generate<int32_t, float>(spec.source, GenOptions{kGeneratorSeed});
  }
  HostCsr<int32_t, float>& a = g->csr;
  const Validation v = validate(a.view());
  if (!v.ok())
    throw InvalidArgument("sparseport_bench: graph '" + spec.name + "' loaded from '" + spec.source +
                          "' is not a valid CSR: " + v.message);
  if (a.is_pattern() && a.nnz() > 0) {
    // The suites time the fp32 ops with values (so spmm reads A.val), and positive values keep
    // sums away from cancellation.
    a.values.resize(static_cast<size_t>(a.nnz()));
    fill_random(a.values, kPatternValueSeed, 0.5, 1.5);
    g->synthetic_values = true;
  }
  g->coo_row.resize(static_cast<size_t>(a.nnz()));
  std::vector<char> col_seen(static_cast<size_t>(a.cols), 0);
  for (int64_t i = 0; i < a.rows; ++i) {
    const int32_t b = a.rowptr[static_cast<size_t>(i)], e = a.rowptr[static_cast<size_t>(i) + 1];
    if (e > b) ++g->nonempty_rows;
    for (int32_t k = b; k < e; ++k) {
      g->coo_row[static_cast<size_t>(k)] = static_cast<int32_t>(i);
      col_seen[static_cast<size_t>(a.colind[static_cast<size_t>(k)])] = 1;
    }
  }
  g->touched_cols = std::count(col_seen.begin(), col_seen.end(), char{1});
  g->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return g;
}

}  // namespace

std::shared_ptr<const Graph> load(const DatasetSpec& spec) {
  struct Entry {
    std::shared_ptr<const Graph> graph;
    std::string error;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  // One lock for the whole load: benchmarks run one at a time, and two threads asking for one
  // graph must not both build it.
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = (spec.is_file ? "file:" : "gen:") + spec.source;
  auto it = cache.find(key);
  if (it == cache.end()) {
    Entry e;
    try {
      e.graph = load_uncached(spec);
    } catch (const std::exception& ex) {
      e.error = ex.what();
    }
    it = cache.emplace(key, std::move(e)).first;
  }
  if (!it->second.error.empty())
    throw InvalidArgument("sparseport_bench: loading graph '" + spec.name + "' from '" + spec.source +
                          "' failed: " + it->second.error);
  return it->second.graph;
}

}  // namespace sparseport::bench
