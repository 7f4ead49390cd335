// SPDX-License-Identifier: Apache-2.0
// The benchmark dataset registry: the generator specs the suites use and the real matrices found in
// SPARSEPORT_DATA_DIR, each loaded at most once per process (on first use) and kept. Shared by every
// benchmark suite (CPU today, CUDA later); uses the public API only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sparseport::bench {

// small: graphs of about 10^5 entries, so a default run stays short; full: the suite of record.
enum class SuiteSize { small, full };
const char* name(SuiteSize s);
SuiteSize suite_size_from_name(const std::string& s);  // throws InvalidArgument

struct DatasetSpec {
  std::string name;    // as in benchmark names: the generator spec, or the file name without .mtx[.gz]
  std::string source;  // the generator spec (optionally kSymmetrizePrefix + spec) or the file's path
  bool is_file = false;
};

// A generated source "symmetrize:SPEC" is SPEC (seed kGeneratorSeed) made symmetric: the union with
// its transpose, as load_graph with MmReadOptions::symmetrize gives it.
inline constexpr const char* kSymmetrizePrefix = "symmetrize:";

// The generator specs of one suite size, in a fixed order.
std::vector<DatasetSpec> generator_datasets(SuiteSize size);

// Generated twins of the graphs GNN papers report on (issue 14): the same rows, about the same
// entries (within 3 %), symmetric, and a power-law degree skew with the real graph's largest degree.
// Not part of generator_datasets(): a suite registers them in a group of their own, full size only.
//   products-twin  ogbn-products (2,449,029 rows, 123,718,280 entries, max degree ~17k)
//   reddit-twin    Reddit (232,965 rows, 114,615,892 entries, mean degree 492, max ~21.7k)
std::vector<DatasetSpec> twin_datasets();

// Every *.mtx and *.mtx.gz directly in dir, by name. For SuiteSize::small only files whose header
// declares at most kSmallFileMaxEntries stored entries. An empty or missing dir gives none; a file
// whose header cannot be read is left out with a note on stderr.
constexpr int64_t kSmallFileMaxEntries = 20'000;
std::vector<DatasetSpec> file_datasets(const std::string& dir, SuiteSize size);

// Generators then files, keeping those whose name matches regex (ECMAScript, searched anywhere in
// the name; empty keeps all). Throws InvalidArgument for a malformed regex.
std::vector<DatasetSpec> datasets(SuiteSize size, const std::string& data_dir, const std::string& regex);

// The environment variable SPARSEPORT_DATA_DIR if set, else the configure-time default.
std::string default_data_dir();

// A loaded graph: int32 indices, float values, columns sorted and duplicates merged.
struct Graph {
  std::string name;
  HostCsr<int32_t, float> csr;
  // The row of every stored entry, in storage order (sorted ascending): the destination index of
  // segment_reduce and gather_scatter in COO form.
  std::vector<int32_t> coo_row;
  int64_t nonempty_rows = 0;   // rows holding at least one entry
  int64_t touched_cols = 0;    // distinct columns holding at least one entry
  bool synthetic_values = false;  // a pattern file: values drawn uniform in [0.5, 1.5) (seed below)
  double load_seconds = 0.0;
};

// Seeds, fixed so every run and machine sees the same inputs.
constexpr uint64_t kGeneratorSeed = 1;
constexpr uint64_t kPatternValueSeed = 7;

// Loads spec on first call (generators with seed kGeneratorSeed; files through the Matrix Market
// reader with sort_and_merge), then returns the cached graph. A failed load is remembered and
// rethrown (as InvalidArgument naming the graph) on every later call. Thread-safe.
std::shared_ptr<const Graph> load(const DatasetSpec& spec);

}  // namespace sparseport::bench
