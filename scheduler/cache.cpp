// SPDX-License-Identifier: Apache-2.0
// The decision cache's file (cache.hpp): the line format and its checksum, the locked appends, reading
// a whole file, clearing it. A lookup's per-process view of a file is cache_lookup.cpp's.
#include "scheduler/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduler/cache_internal.hpp"
#include "scheduler/options.hpp"
#include "scheduler/signature.hpp"
#include "sparseport/errors.hpp"
#include "core/fault.hpp"

namespace sparseport::scheduler {

using cache_detail::checked_line;
using cache_detail::checksum_ok;
using cache_detail::errno_text;
using cache_detail::Fd;
using cache_detail::kMaxCacheBytes;
using cache_detail::kRequired;
using cache_detail::warn_once;

namespace {

void skip_ws(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r')) ++*i;
}

// Why the plain runs are appended whole: a cache hit in a new process parses one ~1.2 kB line
// (issue 35). With this, the parse into a map moved (not copied) and the checksum compared as a
// number, checking that line went from ~9.5 to ~5 us warm on the 2-core VM (~22 to ~19 us cold).
bool parse_string(std::string_view s, size_t* i, std::string* out) {
  if (*i >= s.size() || s[*i] != '"') return false;
  ++*i;
  out->clear();
  while (*i < s.size()) {
    size_t run = *i;
    while (run < s.size() && s[run] != '"' && s[run] != '\\') ++run;
    out->append(s.data() + *i, run - *i);
    *i = run;
    if (*i >= s.size()) return false;
    const char c = s[(*i)++];
    if (c == '"') return true;
    if (*i >= s.size()) return false;
    const char e = s[(*i)++];
    switch (e) {
      case '"': case '\\': case '/': out->push_back(e); break;
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case 'u': {
        if (*i + 4 > s.size()) return false;
        const unsigned long cp = std::strtoul(std::string(s.substr(*i, 4)).c_str(), nullptr, 16);
        *i += 4;
        out->push_back(cp < 0x80 ? static_cast<char>(cp) : '?');  // we only ever write ASCII escapes
        break;
      }
      default: return false;
    }
  }
  return false;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') out += '\\', out += ch;
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += ch;
  }
  return out + "\"";
}

bool is_bare(const std::string& v) {
  if (v == "true" || v == "false" || v == "null") return true;
  if (v.empty()) return false;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  // The whole text is the number: strtod stops at an embedded NUL too ("6\0}" is not bare).
  return end == v.c_str() + v.size() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
}

// Fields every decision line must have to be replayed.

}  // namespace

std::optional<Record> parse_record(std::string_view line, std::string* error) {
  Record r;
  size_t i = 0;
  skip_ws(line, &i);
  if (i >= line.size() || line[i] != '{') return *error = "not a JSON object", std::nullopt;
  ++i;
  skip_ws(line, &i);
  if (i < line.size() && line[i] == '}') return r;
  while (true) {
    std::string key, value;
    skip_ws(line, &i);
    if (!parse_string(line, &i, &key)) return *error = "bad key at column " + std::to_string(i + 1), std::nullopt;
    skip_ws(line, &i);
    if (i >= line.size() || line[i] != ':') return *error = "missing ':' at column " + std::to_string(i + 1), std::nullopt;
    ++i;
    skip_ws(line, &i);
    if (i < line.size() && line[i] == '"') {
      if (!parse_string(line, &i, &value)) return *error = "unterminated string", std::nullopt;
    } else {
      const size_t start = i;
      while (i < line.size() && line[i] != ',' && line[i] != '}' && line[i] != ' ') ++i;
      value = std::string(line.substr(start, i - start));
      if (!is_bare(value)) return *error = "bad value for '" + key + "'", std::nullopt;
    }
    // The scheduler writes its fields in order (format_record), so the hint is where each one goes;
    // a key given twice keeps the last value, as before.
    r.insert_or_assign(r.end(), std::move(key), std::move(value));
    skip_ws(line, &i);
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (i < line.size() && line[i] == '}') {
      ++i;
      skip_ws(line, &i);
      if (i != line.size()) return *error = "text after the object", std::nullopt;
      return r;
    }
    return *error = "truncated object", std::nullopt;
  }
}

std::string format_record(const Record& r) {
  std::string s = "{";
  for (const auto& [k, v] : r) {
    if (s.size() > 1) s += ",";
    // Numbers and booleans the scheduler wrote stay bare; "versions", "key" etc. stay strings.
    const bool bare = is_bare(v) && k != "key" && k != "versions" && k != "variant" && k != "graph" && k != "device";
    s += quote(k) + ":" + (bare ? v : quote(v));
  }
  return s + "}";
}

// ---- file handling -------------------------------------------------------------------------------
namespace cache_detail {

void warn_once(const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(text).second) warn(text);
}

std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

}  // namespace cache_detail

namespace {

// FNV-1a, 64 bits: the line checksum. Not cryptographic; it catches torn, spliced and overwritten
// lines (a reader that raced a process rewriting the file without the lock).
uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

constexpr std::string_view kCrcKey = "crc";
constexpr std::string_view kCrcField = ",\"crc\":\"";  // always the last field of a line we write

// "{...}" -> "{...,"crc":"<fnv1a of {...}>"}": the checksum covers the line as it would be without it.
std::string with_checksum(const std::string& body) {
  if (body.size() < 3) return body;  // "{}": nothing to protect
  return body.substr(0, body.size() - 1) + std::string(kCrcField) + hex64(fnv1a(body)) + "\"}";
}

}  // namespace

namespace cache_detail {

// A parsed line must end with the "crc" field that with_checksum wrote, and match it; the field is
// removed from the record (cache_internal.hpp). Without it a line spliced from two others could parse (a prefix cut
// inside a string value, then the tail of another line's checksum), so it is refused too.
bool checksum_ok(std::string_view line, Record* r, std::string* error) {
  const auto it = r->find(std::string(kCrcKey));
  if (it == r->end()) {
    *error = "no checksum (schema " + std::to_string(kCacheSchema) +
             " lines end with one: the line was cut, spliced or written by hand)";
    return false;
  }
  const std::string want = std::move(it->second);
  r->erase(it);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  const size_t at = line.rfind(kCrcField);
  if (at == std::string_view::npos || line.size() < 2 || line.substr(line.size() - 2) != "\"}" ||
      line.substr(at + kCrcField.size(), line.size() - 2 - at - kCrcField.size()) != want) {
    *error = "the checksum is not the last field (the line was edited or spliced)";
    return false;
  }
  // The checksum of line[0, at) + "}", without copying the line to make it, compared with the
  // recorded digits as a number (no snprintf on a hit's path).
  uint64_t recorded = 0;
  bool digits = want.size() == 16;
  for (const char c : want) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    digits = digits && d >= 0;
    recorded = recorded << 4 | static_cast<uint64_t>(d & 15);
  }
  if (!digits || fnv1a("}", fnv1a(line.substr(0, at))) != recorded) {
    *error = "checksum mismatch (the line was overwritten or spliced while it was read, or edited by hand)";
    return false;
  }
  return true;
}

}  // namespace cache_detail

namespace {

[[noreturn]] void refuse(const std::string& why, int e) {
  throw BackendError("sparseport scheduler: " + why, e, e != 0 ? "errno" : "policy");
}

// The folder must be a folder (a symbolic link to one is followed: ~/.cache is often a link to
// scratch space); it is created when missing.
void ensure_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(dir, ec);
  if (fs::is_symlink(link)) {
    const fs::file_status target = fs::status(dir, ec);
    if (fs::is_directory(target)) return;
    std::error_code ec2;
    const fs::path to = fs::read_symlink(dir, ec2);
    refuse("the decision cache folder " + dir + " is a symbolic link to " + (ec2 ? std::string("?") : to.string()) +
               ", which is not a folder" + (fs::exists(target) ? "" : " (it does not exist)") +
               "; the decision was not cached (point SPARSEPORT_CACHE_DIR at a folder)",
           0);
  }
  if (fs::is_directory(link)) return;
  if (fs::exists(link))
    refuse("the decision cache folder " + dir + " exists but is not a folder; the decision was not cached", ENOTDIR);
  if (!fs::create_directories(dir, ec) && ec)
    refuse("cannot create the decision cache folder " + dir + ": " + ec.message() + "; the decision was not cached",
           ec.value());
}

// Under the exclusive lock no writer is active, so bytes after the file's last newline are what a
// dead writer left: SIGKILL inside its write() (Linux stops a long buffered write between two
// folios for a fatal signal) or a machine that went down mid-append. Unlike a failed write (cut
// back in append), that writer could not clean up. Left there, the next line would be glued to
// them and fail its checksum: the next writer's good decision would be skipped by every reader,
// for good. So they are cut off (fd is open for reading and writing, size its size); returns the
// number of bytes cut, 0 when the file ends in a newline or the tail cannot be read or cut (then
// the append goes on as before: readers skip the glued line).
off_t cut_torn_tail(int fd, off_t size) {
  char buf[4096];
  for (off_t end = size; end > 0;) {
    const off_t start = end > static_cast<off_t>(sizeof buf) ? end - static_cast<off_t>(sizeof buf) : 0;
    const auto want = static_cast<size_t>(end - start);
    if (::pread(fd, buf, want, start) != static_cast<ssize_t>(want)) return 0;
    for (size_t i = want; i > 0; --i)
      if (buf[i - 1] == '\n') {
        const off_t keep = start + static_cast<off_t>(i);
        return keep == size || ::ftruncate(fd, keep) != 0 ? 0 : size - keep;
      }
    end = start;
  }
  return size > 0 && ::ftruncate(fd, 0) == 0 ? size : 0;  // the file holds nothing but a torn line
}

// Opens the decision cache for appending and takes its exclusive lock; throws (refuse) saying why not.
// O_NOFOLLOW: a link in place of the file could aim the append at any file of the user's;
// O_NONBLOCK: a FIFO there must not hang the op (it is refused below); O_RDWR: a line torn by a
// dead writer is found by reading the file's end (cut_torn_tail).
int open_locked(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (f.fd < 0) {
    const int e = errno;
    if (e == ELOOP)
      refuse("the decision cache " + path +
                 " is a symbolic link; decisions are not written through a link (remove it, or point "
                 "SPARSEPORT_CACHE_DIR at a folder of your own)",
             e);
    refuse("cannot open the decision cache " + path + " for appending: " + errno_text(e), e);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    refuse("the decision cache " + path + " is not a regular file; the decision was not cached", EINVAL);
  // One write() of the whole line under an exclusive lock: O_APPEND alone does not promise that a
  // long line lands in one piece on every file system (NFS), the lock does. Without the lock
  // (a file system that has none) nothing is written: concurrent writers could interleave.
  if (detail::fault_armed("cache_lock") || ::flock(f.fd, LOCK_EX) != 0) {
    const int e = detail::fault_armed("cache_lock") ? ENOLCK : errno;
    refuse("cannot lock the decision cache " + path + ": " + errno_text(e) +
               "; the decision was not cached (concurrent writers could interleave without the lock)",
           e);
  }
  return f.release();
}

// decisions.jsonl is rewritten (compacted) by the append that would take it past this many bytes:
// a new process reads the whole file once (lookups, holds_prefix), about 2.4 ms a MiB on the 2-core
// VM (83 MB, 99k decisions: every `sparseport run` of a 10k-entry graph took 0.21-0.23 s against
// 0.02-0.04 with an empty cache, and 110 MB more memory), and files up to kPreindexBytes (4 MiB) are
// what Context::create indexes by key (cache_lookup.cpp, preload). Without a bound the file grows
// by a line (~0.9 kB) per cold decision for good: a code that builds a new matrix per time step
// writes one per step, none of which recurs. SPARSEPORT_CACHE_MAX_BYTES overrides it (64 KiB to
// the 256 MiB that is read at most).
constexpr size_t kCompactAtBytes = cache_detail::kPreindexBytes;

size_t compact_at_bytes() {
  const char* env = std::getenv("SPARSEPORT_CACHE_MAX_BYTES");
  if (env == nullptr || *env == '\0') return kCompactAtBytes;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || v < (64u << 10) || v > kMaxCacheBytes) {
    warn_once("SPARSEPORT_CACHE_MAX_BYTES=" + std::string(env) + " is not a byte count from 65536 to " +
              std::to_string(kMaxCacheBytes) + "; the decision cache is compacted at " +
              std::to_string(kCompactAtBytes) + " bytes");
    return kCompactAtBytes;
  }
  return static_cast<size_t>(v);
}

// The compaction, under append's exclusive lock (fd: the file, size bytes): the file's lines and
// `line` (the new one, `newest` parsed, its last), of which only each (key, versions) pair's
// newest valid line stays (what a lookup returns: the last valid line of its key and versions);
// then the oldest of those go until the rest fit half of `limit`, so that the next compaction is
// another half-limit of decisions away. Written to a new file beside it and renamed over it, so a
// reader sees the old file or the new one whole; a writer waiting for the old file's lock notices
// the replacement and reopens (append). Dropped: corrupt lines, other schemas' lines, superseded
// decisions, and the oldest decisions, which a later call decides afresh. false (nothing changed)
// where any step fails: the caller appends as before.
bool compact(int fd, off_t size, const std::string& path, const std::string& line, const Record& newest,
             size_t limit) {
  std::string text(static_cast<size_t>(size), '\0');
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  // Each complete line's (key, versions): the newest line of each pair is kept, none of the pair the
  // new line supersedes. Bytes after the last newline (a torn line cut_torn_tail could not cut) go.
  std::vector<std::string_view> lines;
  std::map<std::string, size_t> newest_of;  // key + '\n' + versions -> index in lines
  std::string error;
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string_view l(text.data() + start, end + 1 - start);
    if (const std::optional<Record> r = cache_detail::valid_line(l.substr(0, l.size() - 1), true, &error)) {
      newest_of[r->at("key") + "\n" + r->at("versions")] = lines.size();
      lines.push_back(l);
    }
  }
  const auto field_of = [&](const char* k) {
    const auto it = newest.find(k);
    return it == newest.end() ? std::string() : it->second;
  };
  newest_of.erase(field_of("key") + "\n" + field_of("versions"));
  std::vector<size_t> kept;
  kept.reserve(newest_of.size());
  for (const auto& [pair, i] : newest_of) kept.push_back(i);
  std::sort(kept.begin(), kept.end());
  // The newest first, back to where half the limit is reached; the new line always stays.
  size_t bytes = line.size(), first = kept.size();
  while (first > 0 && bytes + lines[kept[first - 1]].size() <= limit / 2) bytes += lines[kept[--first]].size();
  // Files named like the one below are compactions' that died before their rename: only the holder
  // of the file's lock compacts, and that is this thread. They go.
  const std::filesystem::path own(path);
  const std::string stem = own.filename().string() + ".compact.";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(own.parent_path(), ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(stem)) std::filesystem::remove(it->path(), ec);
  const std::string tmp = path + ".compact." + std::to_string(::getpid());
  Fd out;
  out.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out.fd < 0) return false;
  std::string body;
  body.reserve(bytes);
  for (size_t k = first; k < kept.size(); ++k) body += lines[kept[k]];
  body += line;
  bool ok = true;
  for (size_t done = 0; ok && done < body.size();) {
    const ssize_t n = ::write(out.fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  // fsync before the rename: a crash must leave the old file or the whole new one, never an empty one.
  ok = ok && ::fsync(out.fd) == 0 && ::close(out.release()) == 0 && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    warn_once("compacting the decision cache " + path + " failed: " + errno_text(errno) + "; it grows on");
  }
  return ok;
}

}  // namespace

CacheFile::CacheFile(const std::string& dir, const std::string& name) : path(dir + "/" + name) {}

void CacheFile::append(const Record& r) const {
  // On every way out, after the write: a check made before it must not stand for the file now.
  struct Forget {
    const std::string& path;
    ~Forget() { cache_detail::forget_check(path); }
  } forget{path};
  ensure_folder(std::filesystem::path(path).parent_path().string());
  Record clean = r;
  clean.erase(std::string(kCrcKey));
  const std::string line = with_checksum(format_record(clean)) + "\n";
  // A compaction by another process (compact) may replace the file while this one waits for its
  // lock: the lock then holds the old file, which no reader opens again, so it is opened afresh.
  Fd f;
  for (int attempt = 0;; ++attempt) {
    f.fd = open_locked(path);
    struct stat st {}, named {};
    if (attempt >= 8 || (::fstat(f.fd, &st) == 0 && st.st_nlink > 0 && ::lstat(path.c_str(), &named) == 0 &&
                         named.st_dev == st.st_dev && named.st_ino == st.st_ino))
      break;
    ::close(f.release());
  }
  // Where the line starts: a write that fails half-way is cut back to here, so no torn line stays.
  struct stat before {};
  bool sized = ::fstat(f.fd, &before) == 0;
  if (sized && before.st_size > 0) {
    if (const off_t cut = cut_torn_tail(f.fd, before.st_size); cut > 0) {
      warn_once("the decision cache " + path + " ended in a line cut short by a writer that died mid-append; its " +
                std::to_string(cut) + " bytes were removed");
      sized = ::fstat(f.fd, &before) == 0;
    }
  }
  if (const size_t limit = compact_at_bytes();
      sized && path.ends_with("/decisions.jsonl") && !detail::fault_armed("cache_write") &&
      static_cast<size_t>(before.st_size) + line.size() > limit && compact(f.fd, before.st_size, path, line, clean, limit)) {
    ::flock(f.fd, LOCK_UN);
    return;  // the new line is the compacted file's last
  }
  size_t done = 0;
  int e = 0;
  const bool injected = detail::fault_armed("cache_write");
  while (done < line.size()) {
    if (injected && done >= line.size() / 2) {
      e = ENOSPC;
      break;
    }
    const size_t want = injected ? line.size() / 2 - done : line.size() - done;
    const ssize_t n = ::write(f.fd, line.data() + done, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      e = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (done != line.size()) {
    struct stat after {};
    bool cut = false;
    if (done > 0 && sized && ::fstat(f.fd, &after) == 0 && after.st_size > before.st_size)
      cut = ::ftruncate(f.fd, before.st_size) == 0;
    ::flock(f.fd, LOCK_UN);
    refuse("writing the decision cache " + path + " failed: " + errno_text(e) + " after " + std::to_string(done) +
               " of " + std::to_string(line.size()) + " bytes" +
               (done == 0 ? std::string() : cut ? "; the partial line was removed" : "; a partial line may remain (readers skip it)") +
               "; the decision was not cached",
           e);
  }
  ::flock(f.fd, LOCK_UN);
  if (::close(f.release()) != 0) {  // NFS reports some write errors only here
    const int ce = errno;
    refuse("closing the decision cache " + path + " after appending failed: " + errno_text(ce), ce);
  }
}

bool CacheFile::try_append(const Record& r, std::string* why) const noexcept {
  try {
    append(r);
    return true;
  } catch (const std::exception& e) {
    // A read-only, full, locked-out or unsafe cache costs a re-probe next time, never a failed op.
    std::string msg = e.what();
    if (const std::string_view prefix = "sparseport scheduler: "; msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
    warn_once("decision not cached (said once per reason): " + msg);
    if (why != nullptr) *why = std::move(msg);
  } catch (...) {
    if (why != nullptr) *why = "unknown error";
  }
  return false;
}

std::vector<Record> CacheFile::read() const { return read_from(0, nullptr, nullptr); }

std::vector<Record> CacheFile::read_from(uint64_t offset, int64_t* lines, uint64_t* end_out) const {
  std::vector<Record> out;
  if (end_out != nullptr) *end_out = offset;
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (f.fd < 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return out;  // no cache yet (or no folder): nothing to replay
    if (e == ELOOP)
      warn_once("the decision cache " + path + " is a symbolic link; it is not read (nor written): remove it, or " +
                "point SPARSEPORT_CACHE_DIR at a folder of your own");
    else
      warn_once("cannot open the decision cache " + path + ": " + errno_text(e) + "; no decision is replayed from it");
    return out;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    warn_once("the decision cache " + path + " is not a regular file; it is not read");
    return out;
  }
  // Readers lock shared so that they never see a locked append half-done; a process that rewrites
  // the file without the lock is caught by the line checksums instead. Without the lock (a file
  // system that has none) reading goes on: a torn last line is skipped like any corrupt line.
  const bool locked = !detail::fault_armed("cache_lock") && ::flock(f.fd, LOCK_SH) == 0;
  if (!locked)
    warn_once("cannot lock the decision cache " + path + " for reading: " +
              errno_text(detail::fault_armed("cache_lock") ? ENOLCK : errno) + "; reading it unlocked");
  std::string text;
  char buf[65536];
  bool truncated_read = offset >= kMaxCacheBytes;
  if (offset > 0 && ::lseek(f.fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
    if (locked) ::flock(f.fd, LOCK_UN);
    warn_once("seeking in the decision cache " + path + " failed: " + errno_text(errno) + "; no decision is replayed");
    return out;
  }
  while (!truncated_read) {
    if (detail::fault_armed("cache_read")) {
      errno = EIO;
    } else {
      const ssize_t n = ::read(f.fd, buf, sizeof buf);
      if (n > 0) {
        text.append(buf, static_cast<size_t>(n));
        if (offset + text.size() >= kMaxCacheBytes) {
          truncated_read = true;
          break;
        }
        continue;
      }
      if (n == 0) break;
      if (errno == EINTR) continue;
    }
    const int e = errno;
    if (locked) ::flock(f.fd, LOCK_UN);
    warn_once("reading the decision cache " + path + " failed: " + errno_text(e) + "; no decision is replayed from it");
    return out;
  }
  if (locked) ::flock(f.fd, LOCK_UN);
  if (truncated_read)
    warn_once("the decision cache " + path + " is larger than " + std::to_string(kMaxCacheBytes >> 20) +
              " MiB; only its first " + std::to_string(kMaxCacheBytes >> 20) +
              " MiB are read (`sparseport cache clear` starts it afresh)");
  size_t start = 0;
  int64_t line_no = lines != nullptr ? *lines : 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (complete && end_out != nullptr) *end_out = offset + start;
    if (complete && lines != nullptr) *lines = line_no;
    if (std::optional<Record> r = checked_line(path, line, complete, [&] { return line_no; })) out.push_back(std::move(*r));
  }
  return out;
}

size_t CacheFile::clear() const {
  const size_t n = read().size();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  cache_detail::forget_check(path);
  return n;
}

}  // namespace sparseport::scheduler
