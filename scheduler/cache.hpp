// SPDX-License-Identifier: Apache-2.0
// The persistent decision cache (DESIGN.md section 4, step 6): one JSON object per line in
// <cache_dir>/decisions.jsonl. Writers append a whole line with one write() under an exclusive
// flock, so processes (MPI ranks) sharing the file never interleave or lose lines; readers take a
// shared lock. The last valid line for a key wins. A line that does not parse, or lacks a field,
// is skipped with a warning naming the file and line.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sparseport::scheduler {

inline constexpr int kCacheSchema = 1;

// One flat JSON object: string, number and boolean values, as strings (numbers keep their text).
using Record = std::map<std::string, std::string>;

// Parses one line; nullopt (with *error) when it is not a flat JSON object.
std::optional<Record> parse_record(const std::string& line, std::string* error);
std::string format_record(const Record& r);  // one line, keys sorted, no newline

struct CacheFile {
  std::string path;  // <dir>/decisions.jsonl
  explicit CacheFile(const std::string& dir);

  // Appends one record (creating the folder and file as needed). Throws BackendError on I/O failure.
  void append(const Record& r) const;
  // Every valid record in file order; corrupt lines and other schemas are skipped (warned once each).
  std::vector<Record> read() const;
  // The last valid record with this key whose versions match; *stale set when only other versions
  // had one.
  std::optional<Record> lookup(const std::string& key, const std::string& versions, bool* stale) const;
  size_t clear() const;  // removes the file, returns how many records it held
};

}  // namespace sparseport::scheduler
