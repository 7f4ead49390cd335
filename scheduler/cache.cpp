// SPDX-License-Identifier: Apache-2.0
#include "scheduler/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "scheduler/cache_stats.hpp"
#include "scheduler/options.hpp"
#include "sparseport/errors.hpp"
#include "core/fault.hpp"

namespace sparseport::scheduler {
namespace {

void skip_ws(const std::string& s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r')) ++*i;
}

bool parse_string(const std::string& s, size_t* i, std::string* out) {
  if (*i >= s.size() || s[*i] != '"') return false;
  ++*i;
  out->clear();
  while (*i < s.size()) {
    const char c = s[(*i)++];
    if (c == '"') return true;
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (*i >= s.size()) return false;
    const char e = s[(*i)++];
    switch (e) {
      case '"': case '\\': case '/': out->push_back(e); break;
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case 'u': {
        if (*i + 4 > s.size()) return false;
        const unsigned long cp = std::strtoul(s.substr(*i, 4).c_str(), nullptr, 16);
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
const char* const kRequired[] = {"schema", "key", "versions", "variant", "op"};

}  // namespace

std::optional<Record> parse_record(const std::string& line, std::string* error) {
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
      value = line.substr(start, i - start);
      if (!is_bare(value)) return *error = "bad value for '" + key + "'", std::nullopt;
    }
    r[key] = value;
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
namespace {

// Reading stops here: a cache this large is not something the scheduler wrote in a normal life
// (about half a million decisions), and reading it whole would cost more than probing again.
constexpr size_t kMaxCacheBytes = size_t{256} << 20;

// One warning per distinct text: a read-only folder or a corrupt line costs one line on stderr per
// process, not one per op.
void warn_once(const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(text).second) warn(text);
}

std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

// FNV-1a, 64 bits: the line checksum. Not cryptographic; it catches torn, spliced and overwritten
// lines (a reader that raced a process rewriting the file without the lock).
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr std::string_view kCrcKey = "crc";
constexpr std::string_view kCrcField = ",\"crc\":\"";  // always the last field of a line we write

// "{...}" -> "{...,"crc":"<fnv1a of {...}>"}": the checksum covers the line as it would be without it.
std::string with_checksum(const std::string& body) {
  if (body.size() < 3) return body;  // "{}": nothing to protect
  return body.substr(0, body.size() - 1) + std::string(kCrcField) + hex64(fnv1a(body)) + "\"}";
}

// A parsed line must end with the "crc" field that with_checksum wrote, and match it; the field is
// removed from the record. Without it a line spliced from two others could parse (a prefix cut
// inside a string value, then the tail of another line's checksum), so it is refused too.
bool checksum_ok(std::string_view line, Record* r, std::string* error) {
  const auto it = r->find(std::string(kCrcKey));
  if (it == r->end()) {
    *error = "no checksum (schema " + std::to_string(kCacheSchema) +
             " lines end with one: the line was cut, spliced or written by hand)";
    return false;
  }
  const std::string want = it->second;
  r->erase(it);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  const size_t at = line.rfind(kCrcField);
  if (at == std::string_view::npos || line.size() < 2 || line.substr(line.size() - 2) != "\"}" ||
      line.substr(at + kCrcField.size(), line.size() - 2 - at - kCrcField.size()) != want) {
    *error = "the checksum is not the last field (the line was edited or spliced)";
    return false;
  }
  const std::string body = std::string(line.substr(0, at)) + "}";
  if (hex64(fnv1a(body)) != want) {
    *error = "checksum mismatch (the line was overwritten or spliced while it was read, or edited by hand)";
    return false;
  }
  return true;
}

// The record a line of the file holds when it is valid and of this schema, else nullopt: a corrupt
// line (one that does not parse, lacks a field, has no newline after it or fails its checksum) is
// warned about once, naming the file and line; another schema's line is skipped without a word.
template <class LineNo>
std::optional<Record> checked_line(const std::string& path, std::string_view line, bool complete, LineNo line_no) {
  if (line.empty()) return std::nullopt;
  std::string error;
  std::optional<Record> r = parse_record(std::string(line), &error);
  if (r && !complete) r.reset(), error = "no newline at the end (a truncated write?)";
  if (r) {
    for (const char* k : kRequired)
      if (!r->count(k)) {
        error = std::string("missing field '") + k + "'";
        r.reset();
        break;
      }
  }
  if (r && (*r)["schema"] != std::to_string(kCacheSchema)) return std::nullopt;  // another schema: not ours to read
  if (r && !checksum_ok(line, &*r, &error)) r.reset();
  if (!r) warn_once(path + ":" + std::to_string(line_no()) + ": skipped a corrupt decision line (" + error + ")");
  return r;
}

// Closes on every path out of append/read.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

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

}  // namespace

CacheFile::CacheFile(const std::string& dir, const std::string& name) : path(dir + "/" + name) {}

void CacheFile::append(const Record& r) const {
  ensure_folder(std::filesystem::path(path).parent_path().string());
  Record clean = r;
  clean.erase(std::string(kCrcKey));
  const std::string line = with_checksum(format_record(clean)) + "\n";
  // O_NOFOLLOW: a link in place of the file could aim the append at any file of the user's;
  // O_NONBLOCK: a FIFO there must not hang the op (it is refused below); O_RDWR: a line torn by a
  // dead writer is found by reading the file's end (cut_torn_tail).
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

// ---- lookup: what a process has read of each file ----------------------------------------------------
//
// A cache hit in a new process must cost little (issue 35). Before, a process's first lookup parsed
// every record of the file into maps (1.2 ms at 200 decisions, 160 kB) and every lookup made a stat
// and an ifstream open, read and close of the first bytes (11 system calls on the first). Now a
// process reads the file once (open, fstat, flock, one pread, flock, close) and keeps its bytes; a
// lookup finds the lines of its key with one memmem() of "key":"<key>" over the bytes not yet
// searched for that key (format_record writes that field so, and the scheduler's keys need no
// escape), and parses and checks only those, newest first: the first valid one with these versions
// is the hit (from the ninth key a process looks up, one pass indexes every line by key instead).
// Later lookups lstat() the file and read nothing while it has not changed (the same
// device, inode, size, modification and change times); once it has, only the bytes appended since,
// after checking that its first bytes are those read (a file cleared and written afresh may reuse
// the inode number). The file only grows by locked appends of whole lines; a smaller size, another
// inode or other first bytes start afresh. A corrupt line is skipped with a warning when a lookup
// reaches it (read() still warns about every one); a line whose key field was written otherwise (by
// hand, with spaces) is not found, which costs a re-probe, never a wrong replay.
namespace {

std::atomic<uint64_t> g_lookups{0}, g_opens{0}, g_bytes_read{0};

struct KeyLines {
  size_t searched = 0;         // how many of Index::text's bytes were searched for this key
  std::vector<size_t> starts;  // where its lines start, in file order
};

// A process that looks up this many keys has every line indexed by key in one pass instead (then
// each lookup costs a hash lookup, not a memmem over the file): a test program making dozens of
// decisions against a cache of 20 k decisions (22 MB) would otherwise search it dozens of times.
constexpr size_t kKeysBeforeFullIndex = 8;

struct Index {
  bool known = false;  // the file was read: what follows describes it
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};
  // The file's bytes up to the end of the last complete line read: allocated without being
  // zero-filled first (a fresh process pays a page fault per 4 KiB touched).
  std::unique_ptr<char[]> text;
  size_t length = 0, capacity = 0;
  std::unordered_map<std::string, KeyLines> keys;
  size_t indexed = 0;  // with full_index: every line before this byte is in keys
  bool full_index = false;

  std::string_view bytes() const { return {text.get(), length}; }
  char* room_for(size_t n) {  // at least n bytes after the kept ones
    if (length + n > capacity) {
      const size_t cap = std::max(length + n, 2 * capacity);
      std::unique_ptr<char[]> more = std::make_unique_for_overwrite<char[]>(cap);
      if (length > 0) std::memcpy(more.get(), text.get(), length);
      text = std::move(more);
      capacity = cap;
    }
    return text.get() + length;
  }
};

bool same_file(const struct stat& st, const Index& ix) {
  return st.st_dev == ix.dev && st.st_ino == ix.ino && st.st_size == ix.size &&
         st.st_mtim.tv_sec == ix.mtime.tv_sec && st.st_mtim.tv_nsec == ix.mtime.tv_nsec &&
         st.st_ctim.tv_sec == ix.ctime.tv_sec && st.st_ctim.tv_nsec == ix.ctime.tv_nsec;
}

// Brings ix up to date with the file at path. A file that is gone or cannot be opened clears it
// (nothing is replayed from it, with a warning once); a failed read keeps what was read before.
void refresh(const std::string& path, Index& ix) {
  struct stat st {};
  if (ix.known) {
    if (::lstat(path.c_str(), &st) != 0) {
      ix = Index();  // cleared (or its folder gone): nothing to replay
      return;
    }
    if (same_file(st, ix)) return;
  }
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  ++g_opens;
  if (f.fd < 0) {
    const int e = errno;
    ix = Index();
    if (e == ENOENT || e == ENOTDIR) return;  // no cache yet (or no folder): nothing to replay
    if (e == ELOOP)
      warn_once("the decision cache " + path + " is a symbolic link; it is not read (nor written): remove it, or " +
                "point SPARSEPORT_CACHE_DIR at a folder of your own");
    else
      warn_once("cannot open the decision cache " + path + ": " + errno_text(e) + "; no decision is replayed from it");
    return;
  }
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ix = Index();
    warn_once("the decision cache " + path + " is not a regular file; it is not read");
    return;
  }
  // Shared, so that no locked append is seen half-done (the checksums catch unlocked writers).
  const bool armed = detail::fault_armed("cache_lock");
  const bool locked = !armed && ::flock(f.fd, LOCK_SH) == 0;
  if (!locked)
    warn_once("cannot lock the decision cache " + path + " for reading: " + errno_text(armed ? ENOLCK : errno) +
              "; reading it unlocked");
  if (ix.known && (st.st_dev != ix.dev || st.st_ino != ix.ino || st.st_size < static_cast<off_t>(ix.length)))
    ix = Index();
  // Reads [at, at + n) into dst; the bytes read (fewer at the end of a file cut meanwhile), or -1.
  const auto read_at = [&](char* dst, size_t n, uint64_t at) -> ssize_t {
    size_t done = 0;
    while (done < n) {
      if (detail::fault_armed("cache_read")) {
        errno = EIO;
        return -1;
      }
      const ssize_t got = ::pread(f.fd, dst + done, n - done, static_cast<off_t>(at + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return -1;
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    g_bytes_read += done;
    return static_cast<ssize_t>(done);
  };
  int error = 0;
  if (ix.length > 0) {
    // The same file, grown: its first bytes must be those read before.
    constexpr size_t kHead = 256;
    char head[kHead];
    const size_t n = std::min(kHead, ix.length);
    const ssize_t got = read_at(head, n, 0);
    if (got < 0) error = errno;
    else if (static_cast<size_t>(got) != n || std::memcmp(head, ix.text.get(), n) != 0) ix = Index();
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  const uint64_t want = std::min<uint64_t>(size, kMaxCacheBytes);
  if (error == 0 && want > ix.length) {
    char* dst = ix.room_for(want - ix.length);
    const ssize_t got = read_at(dst, want - ix.length, ix.length);
    if (got < 0) error = errno;
    // Only complete lines are kept: a line still being written is read again once whole.
    if (const void* nl = got > 0 ? ::memrchr(dst, '\n', static_cast<size_t>(got)) : nullptr)
      ix.length = static_cast<size_t>(static_cast<const char*>(nl) - ix.text.get()) + 1;
  }
  if (locked) ::flock(f.fd, LOCK_UN);
  if (error != 0) {
    warn_once("reading the decision cache " + path + " failed: " + errno_text(error) +
              "; no decision is replayed from it");
    return;  // not marked as read: the next lookup tries again
  }
  if (size > kMaxCacheBytes)
    warn_once("the decision cache " + path + " is larger than " + std::to_string(kMaxCacheBytes >> 20) +
              " MiB; only its first " + std::to_string(kMaxCacheBytes >> 20) +
              " MiB are read (`sparseport cache clear` starts it afresh)");
  ix.known = true;
  ix.dev = st.st_dev;
  ix.ino = st.st_ino;
  ix.size = st.st_size;
  ix.mtime = st.st_mtim;
  ix.ctime = st.st_ctim;
}

constexpr std::string_view kKeyField = "\"key\":\"";

// Adds the lines naming `key` in the bytes not yet searched for it.
void search(const Index& ix, const std::string& key, KeyLines* lines) {
  std::string needle(kKeyField);
  needle += key;
  needle += '"';
  const std::string_view text = ix.bytes();
  size_t from = lines->searched;
  while (from < text.size()) {
    const void* at = ::memmem(text.data() + from, text.size() - from, needle.data(), needle.size());
    if (at == nullptr) break;
    const size_t pos = static_cast<size_t>(static_cast<const char*>(at) - text.data());
    const size_t nl = text.rfind('\n', pos);
    lines->starts.push_back(nl == std::string_view::npos ? 0 : nl + 1);
    from = text.find('\n', pos) + 1;  // every kept line ends in one
  }
  lines->searched = text.size();
}

// Indexes every line from ix.indexed on by the key its "key":"..." field names (the first one).
void index_lines(Index& ix) {
  const std::string_view text = ix.bytes();
  for (size_t start = ix.indexed; start < text.size();) {
    const size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end - start);
    if (const size_t at = line.find(kKeyField); at != std::string_view::npos) {
      const size_t from = at + kKeyField.size();
      const size_t to = line.find('"', from);
      if (to != std::string_view::npos) ix.keys[std::string(line.substr(from, to - from))].starts.push_back(start);
    }
    start = end + 1;
  }
  ix.indexed = text.size();
  for (auto& [k, lines] : ix.keys) lines.searched = text.size();
}

}  // namespace

CacheStats cache_stats() { return {g_lookups.load(), g_opens.load(), g_bytes_read.load()}; }

std::optional<Record> CacheFile::lookup(const std::string& key, const std::string& versions, bool* stale) const {
  ++g_lookups;
  *stale = false;
  static std::mutex mu;
  static std::map<std::string, Index> indexes;
  std::lock_guard<std::mutex> lock(mu);  // lookups are per decision, not per call: no contention
  Index& ix = indexes[path];
  refresh(path, ix);
  if (ix.length == 0) return std::nullopt;
  if (!ix.full_index && ix.keys.size() >= kKeysBeforeFullIndex && ix.keys.count(key) == 0) {
    ix.keys.clear();
    ix.full_index = true;
  }
  if (ix.full_index && ix.indexed < ix.length) index_lines(ix);
  const auto found = ix.full_index ? ix.keys.find(key) : ix.keys.try_emplace(key).first;
  if (found == ix.keys.end()) return std::nullopt;
  KeyLines& lines = found->second;
  if (!ix.full_index) search(ix, key, &lines);
  const std::string_view text = ix.bytes();
  // Newest first: the last valid line with these versions wins.
  for (auto start = lines.starts.rbegin(); start != lines.starts.rend(); ++start) {
    const size_t end = text.find('\n', *start);
    const auto line_no = [&] { return 1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(*start), '\n'); };
    std::optional<Record> r = checked_line(path, text.substr(*start, end - *start), true, line_no);
    if (!r || r->at("key") != key) continue;
    if (r->at("versions") != versions) {
      *stale = true;
      continue;
    }
    *stale = false;
    return r;
  }
  return std::nullopt;
}

size_t CacheFile::clear() const {
  const size_t n = read().size();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return n;
}

}  // namespace sparseport::scheduler
