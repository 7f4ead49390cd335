// SPDX-License-Identifier: Apache-2.0
#include "scheduler/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "scheduler/options.hpp"
#include "sparseport/errors.hpp"

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
  return *end == '\0' && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
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

CacheFile::CacheFile(const std::string& dir) : path(dir + "/decisions.jsonl") {}

void CacheFile::append(const Record& r) const {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string line = format_record(r) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw BackendError("sparseport scheduler: cannot open the decision cache " + path + ": " + std::strerror(errno), errno, "errno");
  // One write() of the whole line under an exclusive lock: O_APPEND alone does not promise that a
  // long line lands in one piece on every file system (NFS), the lock does.
  ::flock(fd, LOCK_EX);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (done != line.size())
    throw BackendError("sparseport scheduler: writing the decision cache " + path + " failed: " + std::strerror(errno), errno, "errno");
}

std::vector<Record> CacheFile::read() const {
  std::vector<Record> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;  // no cache yet
  ::flock(fd, LOCK_SH);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::flock(fd, LOCK_UN);
  ::close(fd);
  static std::mutex warned_mu;
  static std::set<std::string> warned;
  size_t start = 0;
  int line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string error;
    std::optional<Record> r = parse_record(line, &error);
    if (r && !complete) r.reset(), error = "no newline at the end (a truncated write?)";
    if (r) {
      for (const char* k : kRequired)
        if (!r->count(k)) {
          error = std::string("missing field '") + k + "'";
          r.reset();
          break;
        }
    }
    if (r && (*r)["schema"] != std::to_string(kCacheSchema)) continue;  // another schema: not ours to read
    if (!r) {
      const std::string where = path + ":" + std::to_string(line_no);
      std::lock_guard<std::mutex> lock(warned_mu);
      if (warned.insert(where + error).second) warn(where + ": skipped a corrupt decision line (" + error + ")");
      continue;
    }
    out.push_back(std::move(*r));
  }
  return out;
}

std::optional<Record> CacheFile::lookup(const std::string& key, const std::string& versions, bool* stale) const {
  std::optional<Record> hit;
  *stale = false;
  for (Record& r : read()) {
    if (r["key"] != key) continue;
    if (r["versions"] != versions) {
      *stale = true;
      continue;
    }
    hit = std::move(r);
  }
  if (hit) *stale = false;
  return hit;
}

size_t CacheFile::clear() const {
  const size_t n = read().size();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return n;
}

}  // namespace sparseport::scheduler
