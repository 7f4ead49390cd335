// SPDX-License-Identifier: Apache-2.0
// What the decision cache's two halves share (cache.hpp): cache.cpp writes and reads whole files,
// cache_lookup.cpp answers a lookup from what the process has read of a file. Both check a line the
// same way and say a fault once.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "scheduler/cache.hpp"

namespace sparseport::scheduler::cache_detail {

// Reading stops here: a cache this large is not something the scheduler wrote in a normal life
// (about half a million decisions), and reading it whole would cost more than probing again.
inline constexpr size_t kMaxCacheBytes = size_t{256} << 20;

// Files up to this size are indexed by key when a context is made (cache_lookup.cpp, preload), and
// decisions.jsonl is compacted before it grows past it (cache.cpp, compact), unless
// SPARSEPORT_CACHE_MAX_BYTES says otherwise: so a new process's whole read of it stays a few ms.
inline constexpr size_t kPreindexBytes = size_t{4} << 20;

// The fields every line of this schema has.
inline const char* const kRequired[] = {"schema", "key", "versions", "variant", "op"};

// One warning per distinct text: a read-only folder or a corrupt line costs one line on stderr per
// process, not one per op.
void warn_once(const std::string& text);

std::string errno_text(int e);  // "No such file or directory (errno 2)"

// Whether the line ends with the checksum field with_checksum wrote, and matches it; the field is
// removed from *r, *error says why not.
bool checksum_ok(std::string_view line, Record* r, std::string* error);

// The record a line of the file holds when it is valid and of this schema, else nullopt with
// *error saying why a corrupt line (one that does not parse, lacks a field, has no newline after it
// or fails its checksum) is corrupt; another schema's line gives nullopt and no error.
inline std::optional<Record> valid_line(std::string_view line, bool complete, std::string* error) {
  if (line.empty()) return std::nullopt;
  std::optional<Record> r = parse_record(line, error);
  if (r && !complete) r.reset(), *error = "no newline at the end (a truncated write?)";
  if (r) {
    for (const char* k : kRequired)
      if (!r->count(k)) {
        *error = std::string("missing field '") + k + "'";
        r.reset();
        break;
      }
  }
  if (r && (*r)["schema"] != std::to_string(kCacheSchema)) return std::nullopt;  // another schema: not ours to read
  if (r && !checksum_ok(line, &*r, error)) r.reset();
  return r;
}

// valid_line(), and a corrupt line warned about once, naming the file and line.
template <class LineNo>
std::optional<Record> checked_line(const std::string& path, std::string_view line, bool complete, LineNo line_no) {
  std::string error;
  std::optional<Record> r = valid_line(line, complete, &error);
  if (!r && !error.empty()) warn_once(path + ":" + std::to_string(line_no()) + ": skipped a corrupt decision line (" + error + ")");
  return r;
}

// This process wrote to or removed the file at path: its next look at it (cache_lookup.cpp) asks the
// file, whatever holds_prefix's recent window says.
void forget_check(const std::string& path) noexcept;

// Closes on every path out of append/read.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};


}  // namespace sparseport::scheduler::cache_detail
