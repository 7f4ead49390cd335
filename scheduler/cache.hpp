// SPDX-License-Identifier: Apache-2.0
// The persistent decision cache (DESIGN.md section 4, step 6): one JSON object per line in
// <cache_dir>/decisions.jsonl. Writers append a whole line with one write() under an exclusive
// flock, so processes (MPI ranks) sharing the file never interleave or lose lines; readers take a
// shared lock. The last valid line for a key wins. A line that does not parse, or lacks a field,
// is skipped with a warning naming the file and line. The file is bounded: the append that would take
// it past SPARSEPORT_CACHE_MAX_BYTES (4 MiB) rewrites it with each key's newest line (per library
// versions), the oldest dropped to half the bound, and renames it over the old one (cache.cpp, compact).
//
// Faults. Each line ends with a "crc" field (FNV-1a of the line without it), so a line torn,
// spliced or overwritten by a process that rewrites the file without the lock is skipped, never
// replayed; so is a line of this schema without one (edit the cache by deleting lines only).
// A write that fails half-way (a full disk) is cut back, so no torn line stays. The folder may be
// a symbolic link to a folder (it is followed); decisions.jsonl itself must be a regular file: a
// symbolic link there is neither written nor read (it could aim the appends at any file of the
// user's), nor is a FIFO or a folder. Nothing here fails an op: an unwritable cache is warned about
// once per reason (try_append), an unreadable one replays nothing, with a warning once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparseport::scheduler {

// 2: every line ends with a checksum (1 had none; such lines are ignored like any other schema's).
inline constexpr int kCacheSchema = 2;

// One flat JSON object: string, number and boolean values, as strings (numbers keep their text).
using Record = std::map<std::string, std::string>;

// Parses one line; nullopt (with *error) when it is not a flat JSON object.
std::optional<Record> parse_record(std::string_view line, std::string* error);
std::string format_record(const Record& r);  // one line, keys sorted, no newline

// How long a look at a cache file stays current for holds_prefix(..., recent = true): a sampled
// subgraph's class decision asked the file (one fstat) on every batch, 8.4 us of a 36-44 us decision
// on the 2-core VM right after the op had swept the caches, 9-10 us of 41-45 us on an H100
// (benchmarks/results/2026-12-07-s36.md); batches come every 0.02-10 ms. Longer would only delay
// what another process records; 100 ms is no measured optimum, just far above a batch's interval
// and far below a decision's useful life.
inline constexpr double kRecentCheckSeconds = 0.1;

struct CacheFile {
  std::string path;  // <dir>/decisions.jsonl
  // name: decisions.jsonl (the decisions), transfer.jsonl (model.hpp's measurements)
  explicit CacheFile(const std::string& dir, const std::string& name = "decisions.jsonl");

  // Appends one record (creating the folder and file as needed; past the bound, the compacted file
  // ends with it). Throws BackendError saying why on
  // any failure (folder cannot be made, symbolic link, no lock, a failed or short write).
  void append(const Record& r) const;
  // append() for the scheduler: false on failure, with the reason in *why and a warning on stderr
  // once per reason and process. Never throws.
  bool try_append(const Record& r, std::string* why) const noexcept;
  // Every valid record in file order; corrupt lines and other schemas are skipped (warned once each).
  // A file that cannot be opened or read gives no record, one that cannot be locked is read unlocked
  // (each warned once); never throws for I/O. Reads at most 256 MiB.
  std::vector<Record> read() const;
  // read() of the lines from byte `offset` on (offset is the start of a line). With `lines`
  // (the number of lines before offset, for the warnings' line numbers) and `end` non-null, both
  // advance past the last complete line read: where the next incremental read starts.
  std::vector<Record> read_from(uint64_t offset, int64_t* lines, uint64_t* end) const;
  // The last valid record with this key whose versions match; *stale set when only other versions
  // had one.
  // reread false: what this process read of the file at its last lookup or holds_prefix() is used
  // as it is, without an lstat of the file (for a caller that has just made one: the scheduler's
  // lookups of one decision).
  std::optional<Record> lookup(const std::string& key, const std::string& versions, bool* stale,
                               bool reread = true) const;
  // lookup() without the copy: the record this process keeps for the key's latest hit, shared (a
  // copy of its ~15 strings was 3-5 us of a mini-batch's class decision on the 2-core CPU); null on
  // a miss.
  std::shared_ptr<const Record> lookup_shared(const std::string& key, const std::string& versions, bool* stale,
                                              bool reread = true) const;
  // Whether some line's key begins with `prefix` (any versions). false means that lookup() of every
  // key with this prefix misses, so a caller may skip what only such a key needs: the scheduler does
  // not hash a new matrix's rows when no decision of its shape was ever recorded (select.cpp).
  // recent: a "no" may come from what this process read at its last look at the file, where that
  // look was less than kRecentCheckSeconds ago and the process has not appended to or cleared the
  // file since; a "yes" always asks the file. So another process's new line with the prefix is seen
  // up to kRecentCheckSeconds late by such a question, and by lookups with reread false after it.
  bool holds_prefix(const std::string& prefix, bool recent = false) const;
  // Reads the file into this process's index (as the first lookup() would). A file of at most 4 MiB
  // is then indexed by key (as a process's ninth key does), and the newest line of each of the last
  // 16 keys that begin with key_prefix is parsed and checked and kept as that key's hit. So a new
  // process's first hit on one of them parses nothing, and its first new shape is a lookup in the
  // sorted keys, not a scan of the file's bytes. Context::create calls it (select.hpp, warm_up).
  // Otherwise (or when no key has the prefix) the last line is run through a hit's checks and
  // dropped, so that a first lookup does not run that code for the first time. Nothing is warned
  // here: a lookup that reaches a corrupt line says so, with its number.
  void preload(const std::string& key_prefix) const;
  size_t clear() const;  // removes the file, returns how many records it held
};

}  // namespace sparseport::scheduler
