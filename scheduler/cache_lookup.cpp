// SPDX-License-Identifier: Apache-2.0
// CacheFile::lookup: a decision from what this process has read of a cache file, read once and
// then only where it grew (issue 35: a cache hit in a new process must cost microseconds). Apart
// from cache.cpp, which writes and reads whole files, because the two keep different state: this
// half a per-process index of each file's bytes.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fault.hpp"
#include "scheduler/cache.hpp"
#include "scheduler/cache_internal.hpp"
#include "scheduler/cache_stats.hpp"

namespace sparseport::scheduler {

using cache_detail::checked_line;
using cache_detail::errno_text;
using cache_detail::Fd;
using cache_detail::kMaxCacheBytes;
using cache_detail::kPreindexBytes;
using cache_detail::warn_once;

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

std::atomic<uint64_t> g_lookups{0}, g_opens{0}, g_bytes_read{0}, g_parsed{0};

struct KeyLines {
  size_t searched = 0;         // how many of Index::text's bytes were searched for this key
  std::vector<size_t> starts;  // where its lines start, in file order
  // The line the last lookup of this key replayed, parsed and checked: a later lookup that reaches
  // the same line (no newer valid line appended meanwhile) reuses it instead of parsing and checking
  // it again (20-35 us on the 2-core CPU, the largest part of a mini-batch's class decision, which
  // looks up the same few class keys for every sampled subgraph). Forgotten with the index when the
  // file is cleared or replaced.
  size_t hit_start = std::string::npos;
  std::shared_ptr<const Record> hit;  // shared, not copied: lookup_shared() hands it out as it is
};

// A process that looks up this many keys has every line indexed by key in one pass instead (then
// each lookup costs a hash lookup, not a memmem over the file): a test program making dozens of
// decisions against a cache of 20 k decisions (22 MB) would otherwise search it dozens of times.
constexpr size_t kKeysBeforeFullIndex = 8;

// How many cache files a process keeps open between lookups (KeptFd): test programs make thousands
// of cache folders, a process of a library user one or two.
constexpr int kMaxKeptFiles = 16;
std::atomic<int> g_kept{0};

// The descriptor of a cache file kept open after it was read, so that the next lookups ask whether
// it changed with an fstat() of it instead of an lstat() of its path: right after an op has swept
// the caches, the path walk took ~28 us of a mini-batch's ~80 us class decision on the 2-core CPU.
// A file unlinked or renamed over (link count 0) falls back to the path, as does any change; a file
// moved away under another name while this process runs is followed until it changes (its decisions
// stay valid; the new file at the path is read from then on).
struct KeptFd {
  int fd = -1;
  KeptFd() = default;
  KeptFd(const KeptFd&) = delete;
  KeptFd& operator=(const KeptFd&) = delete;
  KeptFd(KeptFd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  KeptFd& operator=(KeptFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  ~KeptFd() { reset(); }
  void reset() {
    if (fd >= 0) {
      ::close(fd);
      --g_kept;
      fd = -1;
    }
  }
};

struct Index {
  bool known = false;  // the file was read: what follows describes it
  // When refresh() last found the file as described here (read or unchanged): holds_prefix's recent
  // window starts there. Reset by this process's own appends (forget_check).
  std::chrono::steady_clock::time_point checked{};
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};
  KeptFd kept;  // the file read, still open (while fewer than kMaxKeptFiles are)
  // The file's bytes up to the end of the last complete line read: allocated without being
  // zero-filled first (a fresh process pays a page fault per 4 KiB touched).
  std::unique_ptr<char[]> text;
  size_t length = 0, capacity = 0;
  std::unordered_map<std::string, KeyLines> keys;
  size_t indexed = 0;  // with full_index: every line before this byte is in keys
  bool full_index = false;
  // With full_index: every key of keys, in order (views of the map's keys, whose nodes never move),
  // for holds_prefix().
  std::set<std::string_view> sorted;

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
    if (ix.kept.fd >= 0 && ::fstat(ix.kept.fd, &st) == 0 && st.st_nlink > 0 && same_file(st, ix)) {
      ix.checked = std::chrono::steady_clock::now();
      return;
    }
    if (::lstat(path.c_str(), &st) != 0) {
      ix = Index();  // cleared (or its folder gone): nothing to replay
      return;
    }
    if (same_file(st, ix)) {
      ix.checked = std::chrono::steady_clock::now();
      return;
    }
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
  ix.checked = std::chrono::steady_clock::now();
  if (ix.kept.fd < 0) {  // a slot is taken first, and given back when none was free
    if (g_kept.fetch_add(1) < kMaxKeptFiles) ix.kept.fd = f.release();
    else --g_kept;
  }
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
      if (to != std::string_view::npos) {
        const auto [it, added] = ix.keys.try_emplace(std::string(line.substr(from, to - from)));
        if (added) ix.sorted.insert(it->first);
        it->second.starts.push_back(start);
      }
    }
    start = end + 1;
  }
  ix.indexed = text.size();
  for (auto& [k, lines] : ix.keys) lines.searched = text.size();
}

void start_full_index(Index& ix) {
  ix.keys.clear();
  ix.sorted.clear();
  ix.full_index = true;
}

// Above this size a file's lines are indexed before holds_prefix() answers: a memmem over the whole
// file per question (each new matrix shape asks once) would cost more than the pass.
constexpr size_t kPrefixSearchBytes = size_t{64} << 10;

// preload(): files up to kPreindexBytes (cache_internal.hpp) are indexed by key when a context is
// made (larger ones are indexed by the first question about a new shape, as before), and the newest
// lines of up to this many keys of the context's device are parsed and kept as hits. Why: in a new process a hit's
// lookup parsed and checked its line: ~8 us warm on the 2-core VM, 13-17 us in a new process, 33-42
// us there after the op's operands (rmat:20:16) had been built. With it, the lookup took 2-4 us, and
// the whole hit without the log line 36.9-37.9 us against 64.0-67.9 (cache_hit_cost --backend openmp
// rmat:20:16, alternating). What it costs: Context::create took 0.75-0.98 ms with a 190 kB cache (201
// decisions) against 0.39-0.53 ms with none.
constexpr size_t kPreparsedKeys = 16, kPreloadLines = 1024;

// Whether some line read of the file has a key that begins with prefix.
bool holds(Index& ix, const std::string& prefix) {
  if (ix.length == 0) return false;
  if (!ix.full_index && ix.length > kPrefixSearchBytes) start_full_index(ix);
  if (ix.full_index) {
    if (ix.indexed < ix.length) index_lines(ix);
    const auto it = ix.sorted.lower_bound(prefix);
    return it != ix.sorted.end() && it->starts_with(prefix);
  }
  const std::string needle = std::string(kKeyField) + prefix;
  return ::memmem(ix.text.get(), ix.length, needle.data(), needle.size()) != nullptr;
}

// Whether holds_prefix(..., recent) may answer "no" from what was read (cache.hpp). A forgotten
// check (time_point{}, steady_clock's start: the boot on Linux) is not recent.
bool recently_checked(const Index& ix) {
  return ix.known &&
         std::chrono::steady_clock::now() - ix.checked < std::chrono::duration<double>(kRecentCheckSeconds);
}

// What this process has read of each cache file, by path; one lock for all (lookups are per decision).
std::mutex g_indexes_mu;
std::map<std::string, Index> g_indexes;

}  // namespace

void cache_detail::forget_check(const std::string& path) noexcept {
  std::lock_guard<std::mutex> lock(g_indexes_mu);
  if (const auto it = g_indexes.find(path); it != g_indexes.end()) it->second.checked = {};
}

CacheStats cache_stats() { return {g_lookups.load(), g_opens.load(), g_bytes_read.load(), g_parsed.load()}; }

std::optional<Record> CacheFile::lookup(const std::string& key, const std::string& versions, bool* stale,
                                        bool reread) const {
  const std::shared_ptr<const Record> r = lookup_shared(key, versions, stale, reread);
  return r ? std::optional<Record>(*r) : std::nullopt;
}

std::shared_ptr<const Record> CacheFile::lookup_shared(const std::string& key, const std::string& versions, bool* stale,
                                                       bool reread) const {
  ++g_lookups;
  *stale = false;
  std::lock_guard<std::mutex> lock(g_indexes_mu);  // lookups are per decision, not per call: no contention
  Index& ix = g_indexes[path];
  if (reread || !ix.known) refresh(path, ix);
  if (ix.length == 0) return nullptr;
  if (!ix.full_index && ix.keys.size() >= kKeysBeforeFullIndex && ix.keys.count(key) == 0) start_full_index(ix);
  if (ix.full_index && ix.indexed < ix.length) index_lines(ix);
  const auto found = ix.full_index ? ix.keys.find(key) : ix.keys.try_emplace(key).first;
  if (found == ix.keys.end()) return nullptr;
  KeyLines& lines = found->second;
  if (!ix.full_index) search(ix, key, &lines);
  const std::string_view text = ix.bytes();
  // Newest first: the last valid line with these versions wins.
  for (auto start = lines.starts.rbegin(); start != lines.starts.rend(); ++start) {
    if (*start == lines.hit_start && lines.hit->at("versions") == versions) {
      *stale = false;
      return lines.hit;
    }
    const size_t end = text.find('\n', *start);
    const auto line_no = [&] { return 1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(*start), '\n'); };
    ++g_parsed;
    std::optional<Record> r = checked_line(path, text.substr(*start, end - *start), true, line_no);
    if (!r || r->at("key") != key) continue;
    if (r->at("versions") != versions) {
      *stale = true;
      continue;
    }
    *stale = false;
    lines.hit_start = *start;
    lines.hit = std::make_shared<const Record>(std::move(*r));
    return lines.hit;
  }
  return nullptr;
}

bool CacheFile::holds_prefix(const std::string& prefix, bool recent) const {
  std::lock_guard<std::mutex> lock(g_indexes_mu);
  Index& ix = g_indexes[path];
  // A recent look that found no such key answers without the file; a "yes" is the file's own, as the
  // exact lookup that follows it rereads nothing (select.cpp).
  if (recent && recently_checked(ix) && !holds(ix, prefix)) return false;
  refresh(path, ix);
  return holds(ix, prefix);
}

void CacheFile::preload(const std::string& key_prefix) const {
  std::lock_guard<std::mutex> lock(g_indexes_mu);
  Index& ix = g_indexes[path];
  refresh(path, ix);
  if (ix.length == 0) return;
  if (ix.length <= kPreindexBytes) {
    if (!ix.full_index) start_full_index(ix);
    if (ix.indexed < ix.length) index_lines(ix);
  }
  // The lines from the last one back: the first line met of a key is its newest.
  const std::string_view text = ix.bytes().substr(0, ix.length - 1);  // without the last newline
  // Keys met (their newest lines kept now or by an earlier context), and lines walked: the walk ends
  // after kPreparsedKeys keys, or kPreloadLines lines, so that a second context, or a cache of
  // other devices' decisions, does not walk the whole file.
  size_t keys = 0, lines = 0;
  std::string error;
  for (size_t end = text.size();
       ix.full_index && keys < kPreparsedKeys && lines < kPreloadLines && end != std::string_view::npos; ++lines) {
    const size_t nl = end == 0 ? std::string_view::npos : text.rfind('\n', end - 1);
    const size_t start = nl == std::string_view::npos ? 0 : nl + 1;
    const std::string_view line = text.substr(start, end - start);
    end = nl;
    const size_t at = line.find(kKeyField);
    if (at == std::string_view::npos) continue;
    const size_t from = at + kKeyField.size(), to = line.find('"', from);
    if (to == std::string_view::npos || !line.substr(from, to - from).starts_with(key_prefix)) continue;
    const auto found = ix.keys.find(std::string(line.substr(from, to - from)));
    if (found == ix.keys.end() || found->second.starts.empty() || found->second.starts.back() != start)
      continue;  // not this key's newest line
    ++keys;
    if (found->second.hit_start == start) continue;  // already kept
    if (std::optional<Record> r = cache_detail::valid_line(line, true, &error)) {
      found->second.hit_start = start;
      found->second.hit = std::make_shared<const Record>(std::move(*r));
    }
  }
  if (keys > 0) return;
  // No key with the prefix (or a file too large to index here): the last complete line through the
  // checks a hit takes, its record dropped, so that a new process's first lookup does not pay for
  // running that code the first time.
  const size_t nl = text.rfind('\n');
  (void)cache_detail::valid_line(text.substr(nl == std::string_view::npos ? 0 : nl + 1), true, &error);
}

}  // namespace sparseport::scheduler
