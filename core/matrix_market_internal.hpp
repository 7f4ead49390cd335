// SPDX-License-Identifier: Apache-2.0
// What the Matrix Market files share: the constants, the file classes (Input, Output; defined in
// matrix_market_files.cpp), the token parsers and the Parser, whose hot loops are templates over
// the field and the sink and so live here (its banner, size-line and diagnostic members are in
// matrix_market_header.cpp). The reader of entries is matrix_market_read.cpp, the writer
// matrix_market_write.cpp. Reading is one pass over 8 MiB chunks of whole lines (plain read() or
// zlib's gzread), parsed in place with a hand-written index parser and std::from_chars for values;
// the entries go to COO arrays, then a counting sort makes the CSR. The hot loop only decides
// "fine" or "not fine": every message comes from a slow re-reading of the offending line, so the
// common case pays for no diagnostics.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"

namespace sparseport::detail::mm {

// Large enough that read() and gzread() costs vanish next to parsing; small enough to stay in L3
// on most servers.
constexpr size_t kChunkBytes = size_t{8} << 20;
constexpr size_t kHeaderChunkBytes = size_t{64} << 10;
constexpr size_t kMinChunkBytes = size_t{64} << 10;  // the least a file gets, however small
// A longer "line" is binary junk, not Matrix Market; the cap keeps memory bounded and never hangs.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
// zlib's own input buffer (the default 8 KiB means a read() call per 8 KiB of compressed data).
constexpr unsigned kGzBufferBytes = 1u << 20;
// Numbers beyond 2^62 in a size line are junk; the cap keeps rows * cols checks overflow-free.
constexpr int64_t kMaxSize = int64_t{1} << 62;

// deflate expands its input at most about 1032 times (zlib's technical details).
constexpr int64_t kMaxDeflateRatio = 1032;

// A token or line quoted in an error message: printable, and short even for binary junk.
std::string quoted(std::string_view s);

inline bool is_blank(char ch) { return ch == ' ' || ch == '\t'; }

inline bool is_digit(char ch) { return static_cast<unsigned char>(ch - '0') < 10; }

// ---- input and output (matrix_market_files.cpp) ------------------------------------------------

// A file, plain or gzip (by its magic bytes), handed out as runs of whole lines. Every run ends
// with '\n' (one is added after a last line that lacks it), so parsers can scan a line without
// bounds checks. Read errors are held back until the lines read before them are consumed, so the
// error names the line where the data stops.
class Input {
 public:
  Input(std::string path, size_t chunk, const std::function<void(double)>* progress);
  ~Input();
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  bool gzip() const { return gz_ != nullptr; }
  int64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }

  // Whatever is buffered, whole lines or not (for a quick look at the first bytes).
  std::string_view peek();

  // Drops the first `done` bytes (whole lines already parsed) and makes [begin(), end()) the next
  // run of whole lines. Returns false at the end of the input. `line` is the number of the first
  // line not consumed, for error messages.
  bool refill(size_t done, int64_t line);
  const char* begin() const { return buf_.get(); }
  const char* end() const { return buf_.get() + lines_; }

 private:
  void grow(int64_t line);

  // Appends up to cap_ - data_ bytes; sets eof_ (and error_) at the end of the input.
  void read_more();

  std::string path_;
  size_t cap_;
  std::unique_ptr<char[]> buf_;
  size_t data_ = 0;   // bytes buffered
  size_t lines_ = 0;  // bytes of whole lines at the front
  bool eof_ = false;
  std::string error_;  // a read error, reported once the lines before it are consumed
  int fd_ = -1;
  gzFile gz_ = nullptr;
  int64_t file_bytes_ = 0;
  int64_t read_bytes_ = 0;  // of the file on disk (compressed for gzip)
  const std::function<void(double)>* progress_;
};

// A buffered file, gzip-compressed when the name ends in ".gz". A writer that is destroyed before
// close() (an exception) removes its half-written file.
class Output {
 public:
  Output(std::string path, std::string op);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Room for one line of at most kRoom bytes; call done() with its end.
  char* room() {
    if (used_ >= kFlushBytes) flush();
    return buf_.data() + used_;
  }
  void done(const char* end) { used_ = static_cast<size_t>(end - buf_.data()); }
  void put(std::string_view s) {
    for (size_t i = 0; i < s.size(); i += kRoom / 2) {
      const std::string_view part = s.substr(i, kRoom / 2);
      char* q = room();
      std::memcpy(q, part.data(), part.size());
      done(q + part.size());
    }
  }

  void close();

  static constexpr size_t kRoom = 256;  // the longest line written: two indices and a value

 private:
  static constexpr size_t kFlushBytes = size_t{4} << 20;

  [[noreturn]] void fail_open(int e) const;
  void flush();

  std::string path_, op_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;
  size_t used_ = 0;
};

// ---- parsing ----------------------------------------------------------------------------------

const char* name(MmField f);
const char* name(MmSymmetry s);

// Digits only, at most 18 of them (so no overflow); returns the end, or nullptr.
inline const char* parse_index(const char* q, uint64_t& out) {
  const char* s = q;
  uint64_t x = 0;
  while (is_digit(*q)) x = x * 10 + static_cast<uint64_t>(*q++ - '0');
  if (q == s || q - s > 18) return nullptr;
  out = x;
  return q;
}

// from_chars refuses a leading '+', which Fortran and C writers produce.
inline const char* skip_plus(const char* q) {
  return (*q == '+' && (is_digit(q[1]) || q[1] == '.')) ? q + 1 : q;
}

// Values beyond V's range become +-inf or (denormal) zero, as strtod gives them.
template <class V>
V out_of_range_value(const char* first, const char* last) {
  const std::string tok(first, last);
  const double d = std::strtod(tok.c_str(), nullptr);
  if (std::is_same_v<V, float> && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
    return d > 0 ? std::numeric_limits<V>::infinity() : -std::numeric_limits<V>::infinity();
  return static_cast<V>(d);
}

// Parses one value of field F; returns the end, or nullptr when the token is not a value.
template <MmField F, class V>
inline const char* parse_value(const char* q, const char* last, V& v) {
  q = skip_plus(q);
  if constexpr (F == MmField::integer) {
    int64_t x = 0;
    const auto [ptr, ec] = std::from_chars(q, last, x);
    if (ec != std::errc()) return nullptr;
    v = static_cast<V>(x);
    return ptr;
  } else {
    const auto [ptr, ec] = std::from_chars(q, last, v);
    if (ec == std::errc::result_out_of_range) {
      v = out_of_range_value<V>(q, ptr);
    } else if (ec != std::errc()) {
      return nullptr;
    }
    return ptr;
  }
}

// Splits the line at line_begin (without its '\n', which comes before last) at blanks; a trailing
// '\r' is a blank.
std::vector<std::string_view> fields_of(const char* line_begin, const char* last);

bool parses_as_number(std::string_view tok);

// Reads the banner, the size line and the entries of one file (the banner, the size line and the
// slow-path checks: matrix_market_header.cpp).
class Parser {
 public:
  Parser(const std::string& path, size_t chunk, const std::function<void(double)>* progress)
      : in_(path, chunk, progress) {}

  const MmHeader& header() const { return h_; }

  void read_header() {
    read_banner();
    read_size_line();
  }

  // An upper bound on the entries worth reserving room for: the header's count can be anything.
  int64_t entries_to_reserve() const {
    const int64_t min_line = 4;  // "1 1\n"
    int64_t bound = in_.file_bytes() / min_line + 1;
    if (in_.gzip()) {
      bound = std::max<int64_t>(int64_t{1} << 22, in_.file_bytes() * 4);
      if (const int64_t room = entries_file_can_hold(min_line); room >= 0) bound = std::min(bound, room);
    }
    return std::min(h_.entries, bound);
  }

  // The most entries (values, for an array file) the file can hold when each takes at least
  // min_line bytes and gzip data expands at most kMaxDeflateRatio times; -1 when the file's size is
  // not known (not a regular file).
  int64_t entries_file_can_hold(int64_t min_line) const {
    int64_t bytes = in_.file_bytes();
    if (bytes <= 0) return -1;
    if (in_.gzip()) bytes = bytes > std::numeric_limits<int64_t>::max() / kMaxDeflateRatio
                                ? std::numeric_limits<int64_t>::max()
                                : bytes * kMaxDeflateRatio;
    return bytes / min_line + 1;  // the last line may lack its '\n'
  }
  int64_t size_line() const { return size_line_; }
  int64_t file_bytes() const { return in_.file_bytes(); }
  bool gzip() const { return in_.gzip(); }

  // Calls sink(row, col, value) (0-based; value 1 for a pattern) for every stored entry, in file
  // order, then checks that nothing but blanks and comments follows.
  template <class V, class Sink>
  void read_entries(Sink&& sink) {
    if (h_.format == MmFormat::coordinate) {
      switch (h_.field) {
        case MmField::real: read_coordinate<MmField::real, V>(sink); break;
        case MmField::integer: read_coordinate<MmField::integer, V>(sink); break;
        case MmField::pattern: read_coordinate<MmField::pattern, V>(sink); break;
      }
    } else if (h_.field == MmField::integer) {
      read_array<MmField::integer, V>(sink);
    } else {
      read_array<MmField::real, V>(sink);
    }
    expect_end();
  }

  [[noreturn]] void fail(int64_t line, const std::string& problem) const { throw ParseError(in_.path(), line, problem); }

 private:
  // Makes [p_, end_) non-empty; false at the end of the input.
  bool more() {
    if (p_ != end_) return true;
    if (!in_.refill(p_ == nullptr ? 0 : static_cast<size_t>(p_ - in_.begin()), line_)) return false;
    p_ = in_.begin();
    end_ = in_.end();
    return true;
  }
  const char* line_end(const char* q) const { return static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end_ - q))); }
  void next_line() {
    p_ = line_end(p_) + 1;
    ++line_;
  }
  // Blank or comment: after the banner either may appear anywhere.
  static bool skippable(const char* q) {
    while (is_blank(*q) || *q == '\r') ++q;
    return *q == '\n' || *q == '%';
  }

  void read_banner();
  void read_size_line();

  template <MmField F, class V, class Sink>
  void read_coordinate(Sink& sink) {
    const uint64_t rows = static_cast<uint64_t>(h_.rows), cols = static_cast<uint64_t>(h_.cols);
    const bool skew = h_.symmetry == MmSymmetry::skew_symmetric;
    const int64_t n = h_.entries;
    const char* p = p_;
    const char* end = end_;
    int64_t line = line_;
    for (int64_t k = 0; k < n;) {
      if (p == end) {
        p_ = p;
        line_ = line;
        if (!more())
          fail(line, "the file ends after " + std::to_string(k) + " of the " + std::to_string(n) +
                         " entries announced by the size line (line " + std::to_string(size_line_) + ").");
        p = p_;
        end = end_;
      }
      const char* q = p;
      while (is_blank(*q)) ++q;
      uint64_t r = 0, c = 0;
      V v = V(1);
      q = parse_index(q, r);
      if (q == nullptr || !is_blank(*q)) {
        if (skippable(p)) {
          p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p))) + 1;
          ++line;
          continue;
        }
        bad_coordinate<F>(p, line);
      }
      while (is_blank(*q)) ++q;
      q = parse_index(q, c);
      if (q == nullptr) bad_coordinate<F>(p, line);
      if constexpr (F != MmField::pattern) {
        if (!is_blank(*q)) bad_coordinate<F>(p, line);
        while (is_blank(*q)) ++q;
        q = parse_value<F>(q, end, v);
        if (q == nullptr) bad_coordinate<F>(p, line);
      }
      while (is_blank(*q) || *q == '\r') ++q;
      // r - 1 wraps for r == 0, so one compare checks both ends.
      if (*q != '\n' || r - 1 >= rows || c - 1 >= cols || (skew && r == c)) bad_coordinate<F>(p, line);
      sink(static_cast<int64_t>(r - 1), static_cast<int64_t>(c - 1), v);
      p = q + 1;
      ++line;
      ++k;
    }
    p_ = p;
    line_ = line;
  }

  template <MmField F, class V, class Sink>
  void read_array(Sink& sink) {
    const int64_t rows = h_.rows, cols = h_.cols, n = h_.entries;
    // Column-major; symmetric files hold the lower triangle, skew-symmetric the strict one.
    const int64_t skip = h_.symmetry == MmSymmetry::general ? -1 : h_.symmetry == MmSymmetry::symmetric ? 0 : 1;
    int64_t r = skip < 0 ? 0 : skip, c = 0;
    const char* p = p_;
    const char* end = end_;
    int64_t line = line_;
    for (int64_t k = 0; k < n;) {
      if (p == end) {
        p_ = p;
        line_ = line;
        if (!more())
          fail(line, "the file ends after " + std::to_string(k) + " of the " + std::to_string(n) + " values of a " +
                         std::to_string(rows) + "x" + std::to_string(cols) + " " + name(h_.symmetry) +
                         " array (size line at line " + std::to_string(size_line_) + ").");
        p = p_;
        end = end_;
      }
      const char* q = p;
      while (is_blank(*q)) ++q;
      V v = V(0);
      if (*q == '%' || *q == '\n' || *q == '\r') {
        if (skippable(p)) {
          p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p))) + 1;
          ++line;
          continue;
        }
      }
      q = parse_value<F>(q, end, v);
      if (q == nullptr) bad_array<F>(p, line);
      while (is_blank(*q) || *q == '\r') ++q;
      if (*q != '\n') bad_array<F>(p, line);
      sink(r, c, v);
      if (++r == rows) {
        ++c;
        r = skip < 0 ? 0 : c + skip;
      }
      p = q + 1;
      ++line;
      ++k;
    }
    p_ = p;
    line_ = line;
  }

  void expect_end();

  // ---- diagnostics (slow path: find what is wrong with a line the fast path refused) ----------

  void check_index(std::string_view tok, const char* what, int64_t limit, int64_t line) const;

  template <MmField F>
  void check_value(std::string_view tok, int64_t line) const {
    const char* e = tok.data() + tok.size();
    if constexpr (F == MmField::integer) {
      int64_t x = 0;
      const char* q = skip_plus(tok.data());
      const auto [ptr, ec] = std::from_chars(q, e, x);
      if (ec == std::errc() && ptr == e) return;
      if (ec == std::errc::result_out_of_range && ptr == e)
        fail(line, "value " + quoted(tok) + " does not fit a 64-bit integer.");
      if (parses_as_number(tok))
        fail(line, "value " + quoted(tok) + " is not a whole number, but the banner says field 'integer'.");
    } else {
      if (parses_as_number(tok)) return;
    }
    fail(line, "value " + quoted(tok) + " is not a number.");
  }

  template <MmField F>
  [[noreturn]] void bad_coordinate(const char* p, int64_t line) const {
    const std::vector<std::string_view> f = fields_of(p, end_);
    const size_t need = F == MmField::pattern ? 2 : 3;
    const std::string layout = F == MmField::pattern ? "(row column)" : "(row column value)";
    const std::string kind = std::string("a coordinate ") + name(F) + " file";
    auto count = [&] {
      return "this entry has " + std::to_string(f.size()) + " field" + (f.size() == 1 ? "" : "s") + " but " + kind +
             " needs " + std::to_string(need) + " " + layout + ".";
    };
    if (!f.empty()) check_index(f[0], "row", h_.rows, line);
    if (f.size() < 2) fail(line, count());
    check_index(f[1], "column", h_.cols, line);
    if constexpr (F != MmField::pattern) {
      if (f.size() < 3) fail(line, count());
      check_value<F>(f[2], line);
    }
    if (f.size() > need) {
      if (F == MmField::pattern)
        fail(line, "a pattern file has no values, but this entry has " + std::to_string(f.size()) + " fields (" +
                       quoted(f[2]) + " after row and column).");
      fail(line, count());
    }
    if (h_.symmetry == MmSymmetry::skew_symmetric && f[0] == f[1])
      fail(line, "a skew-symmetric file stores no diagonal entries (they are zero), but this entry is (" +
                     std::string(f[0]) + ", " + std::string(f[1]) + ").");
    // The fast path saw what these checks do not (a '\r' inside the line, say).
    fail(line, "malformed entry " + quoted(std::string_view(p, static_cast<size_t>(line_end(p) - p))) + ".");
  }

  template <MmField F>
  [[noreturn]] void bad_array(const char* p, int64_t line) const {
    const std::vector<std::string_view> f = fields_of(p, end_);
    if (!f.empty()) check_value<F>(f[0], line);
    if (f.size() > 1)
      fail(line, "an array file holds one value per line, but this line has " + std::to_string(f.size()) + " fields.");
    fail(line, "malformed value line " + quoted(std::string_view(p, static_cast<size_t>(line_end(p) - p))) + ".");
  }

  Input in_;
  MmHeader h_;
  const char* p_ = nullptr;  // [p_, end_): whole lines not yet parsed
  const char* end_ = nullptr;
  int64_t line_ = 1;  // the line at p_
  int64_t size_line_ = 0;
};

}  // namespace sparseport::detail::mm
