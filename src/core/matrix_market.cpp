// SPDX-License-Identifier: Apache-2.0
// Matrix Market reading and writing (graph.hpp). Reading is one pass over 8 MiB chunks of whole
// lines (plain read() or zlib's gzread), parsed in place with a hand-written index parser and
// std::from_chars for values; the entries go to COO arrays, then a counting sort makes the CSR.
// The hot loop only decides "fine" or "not fine": every message comes from a slow re-reading of
// the offending line, so the common case pays for no diagnostics.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "src/core/registry.hpp"
#include "sparseport/graph.hpp"

namespace sparseport {
namespace {

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

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

// deflate expands its input at most about 1032 times (zlib's technical details).
constexpr int64_t kMaxDeflateRatio = 1032;

// A size line asking for more memory than the machine has is refused before any entry is read:
// allocating it would fail late (std::bad_alloc) or be granted lazily and end in the OOM killer.
void check_host_memory(const char* op, const std::string& path, int64_t rows, int64_t cols, long double bytes,
                       const char* what) {
  const long double have = detail::host_memory_bytes();
  if (bytes > have)
    throw InvalidArgument(std::string(op) + ": " + path + " is " + std::to_string(rows) + "x" + std::to_string(cols) +
                          ": " + what + " " + detail::human_bytes(bytes) + ", more than this machine's " + detail::human_bytes(have) +
                          " of memory.");
}

// A token or line quoted in an error message: printable, and short even for binary junk.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", ch);
      out += hex;
    }
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

bool is_blank(char ch) { return ch == ' ' || ch == '\t'; }

bool is_digit(char ch) { return static_cast<unsigned char>(ch - '0') < 10; }

// gzerror's text without the "<fd:4>: " that gzdopen'ed streams put in front: the message names the
// file already.
std::string zlib_text(const char* msg) {
  std::string_view m = msg != nullptr ? msg : "unknown error";
  if (m.starts_with("<fd:"))
    if (const size_t colon = m.find(">: "); colon != std::string_view::npos) m.remove_prefix(colon + 3);
  return std::string(m);
}

// ---- input ------------------------------------------------------------------------------------

// A file, plain or gzip (by its magic bytes), handed out as runs of whole lines. Every run ends
// with '\n' (one is added after a last line that lacks it), so parsers can scan a line without
// bounds checks. Read errors are held back until the lines read before them are consumed, so the
// error names the line where the data stops.
class Input {
 public:
  Input(std::string path, size_t chunk, const std::function<void(double)>* progress)
      : path_(std::move(path)), cap_(chunk), progress_(progress) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ParseError(path_, 0, "cannot open the file for reading (" + errno_text(errno) + ").");
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int e = errno;
      ::close(fd_);
      throw ParseError(path_, 0, "cannot inspect the file (" + errno_text(e) + ").");
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw ParseError(path_, 0, "is a directory, not a Matrix Market file.");
    }
    file_bytes_ = S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0;
    unsigned char magic[2] = {0, 0};
    if (::pread(fd_, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      gz_ = ::gzdopen(fd_, "rb");
      if (gz_ == nullptr) {
        ::close(fd_);
        throw ParseError(path_, 0, "cannot start reading the gzip data (out of memory).");
      }
      fd_ = -1;  // zlib owns it now
      ::gzbuffer(gz_, file_bytes_ > 0 ? static_cast<unsigned>(std::clamp<int64_t>(file_bytes_, 8192, kGzBufferBytes))
                                      : kGzBufferBytes);
    }
    // A small file gets a small buffer: the chunk size pays off only for files larger than it (an
    // 8 MiB buffer for a 1 KiB file costs more than reading it).
    if (file_bytes_ > 0)
      cap_ = std::min(cap_, std::max(kMinChunkBytes, static_cast<size_t>(file_bytes_) * (gz_ != nullptr ? 8 : 1) + 1));
    try {
      buf_.reset(new char[cap_ + 1]);
    } catch (...) {
      if (gz_ != nullptr) ::gzclose(gz_);
      if (fd_ >= 0) ::close(fd_);
      throw;
    }
  }
  ~Input() {
    if (gz_ != nullptr) ::gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  bool gzip() const { return gz_ != nullptr; }
  int64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }

  // Whatever is buffered, whole lines or not (for a quick look at the first bytes).
  std::string_view peek() {
    if (data_ == 0 && !eof_) read_more();
    return {buf_.get(), data_};
  }

  // Drops the first `done` bytes (whole lines already parsed) and makes [begin(), end()) the next
  // run of whole lines. Returns false at the end of the input. `line` is the number of the first
  // line not consumed, for error messages.
  bool refill(size_t done, int64_t line) {
    if (done > 0) {
      // After an added final '\n' nothing remains; otherwise keep the partial line.
      const size_t rest = done >= data_ ? 0 : data_ - done;
      if (rest > 0) std::memmove(buf_.get(), buf_.get() + done, rest);
      data_ = rest;
    }
    const char* nl = static_cast<const char*>(::memrchr(buf_.get(), '\n', data_));
    lines_ = nl == nullptr ? 0 : static_cast<size_t>(nl - buf_.get()) + 1;
    for (;;) {
      if (lines_ > 0) return true;
      if (eof_) {
        if (!error_.empty()) throw ParseError(path_, line, error_);
        if (data_ == 0) return false;
        buf_[data_] = '\n';  // the slot past cap_ is kept free for this
        lines_ = ++data_;
        return true;
      }
      if (data_ == cap_) grow(line);
      read_more();
    }
  }
  const char* begin() const { return buf_.get(); }
  const char* end() const { return buf_.get() + lines_; }

 private:
  void grow(int64_t line) {
    if (cap_ >= kMaxLineBytes)
      throw ParseError(path_, line,
                       "the line is longer than " + std::to_string(kMaxLineBytes >> 20) +
                           " MiB; this is not a Matrix Market text file.");
    const size_t cap = std::min(cap_ * 2, kMaxLineBytes);
    std::unique_ptr<char[]> buf(new char[cap + 1]);
    std::memcpy(buf.get(), buf_.get(), data_);
    buf_ = std::move(buf);
    cap_ = cap;
  }

  // Appends up to cap_ - data_ bytes; sets eof_ (and error_) at the end of the input.
  void read_more() {
    char* dst = buf_.get() + data_;
    const size_t want = cap_ - data_;
    size_t got = 0;
    if (gz_ != nullptr) {
      const int n = ::gzread(gz_, dst, static_cast<unsigned>(want));
      if (n < 0) {
        int code = Z_OK;
        const char* msg = ::gzerror(gz_, &code);
        error_ = code == Z_ERRNO ? "cannot read the file (" + errno_text(errno) + ")."
                                 : "the gzip data is corrupt (zlib: " + zlib_text(msg) + ").";
        eof_ = true;
      } else if (n == 0) {
        int code = Z_OK;
        const char* msg = ::gzerror(gz_, &code);
        // Z_BUF_ERROR at the end: the input stopped in the middle of a gzip stream.
        if (code != Z_OK)
          error_ = "the gzip data ends early or is corrupt (zlib: " + zlib_text(msg) + "); the file is truncated?";
        eof_ = true;
      }
      got = n > 0 ? static_cast<size_t>(n) : 0;
      const z_off_t off = ::gzoffset(gz_);
      if (off > 0) read_bytes_ = off;
    } else {
      while (got < want) {
        const ssize_t n = ::read(fd_, dst + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          error_ = "cannot read the file (" + errno_text(errno) + ").";
          eof_ = true;
          break;
        }
        if (n == 0) {
          eof_ = true;
          break;
        }
        got += static_cast<size_t>(n);
      }
      read_bytes_ += static_cast<int64_t>(got);
    }
    // Whole lines end at the last '\n' of the buffer.
    const char* nl = static_cast<const char*>(::memrchr(buf_.get() + data_, '\n', got));
    data_ += got;
    if (nl != nullptr) lines_ = static_cast<size_t>(nl - buf_.get()) + 1;
    if (progress_ != nullptr && file_bytes_ > 0)
      (*progress_)(std::min(1.0, static_cast<double>(read_bytes_) / static_cast<double>(file_bytes_)));
  }

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

// ---- parsing ----------------------------------------------------------------------------------

const char* name(MmField f) {
  switch (f) {
    case MmField::real: return "real";
    case MmField::integer: return "integer";
    case MmField::pattern: return "pattern";
  }
  return "?";
}
const char* name(MmSymmetry s) {
  switch (s) {
    case MmSymmetry::general: return "general";
    case MmSymmetry::symmetric: return "symmetric";
    case MmSymmetry::skew_symmetric: return "skew-symmetric";
  }
  return "?";
}

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
std::vector<std::string_view> fields_of(const char* line_begin, const char* last) {
  const char* e = static_cast<const char*>(std::memchr(line_begin, '\n', static_cast<size_t>(last - line_begin)));
  while (e > line_begin && (e[-1] == '\r' || is_blank(e[-1]))) --e;
  std::vector<std::string_view> out;
  const char* q = line_begin;
  while (q < e) {
    while (q < e && is_blank(*q)) ++q;
    const char* s = q;
    while (q < e && !is_blank(*q)) ++q;
    if (q > s) out.emplace_back(s, static_cast<size_t>(q - s));
  }
  return out;
}

bool parses_as_number(std::string_view tok) {
  const char* q = skip_plus(tok.data());
  double d = 0;
  const auto [ptr, ec] = std::from_chars(q, tok.data() + tok.size(), d);
  return (ec == std::errc() || ec == std::errc::result_out_of_range) && ptr == tok.data() + tok.size();
}

// Reads the banner, the size line and the entries of one file.
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

  void read_banner() {
    static constexpr std::string_view kBanner = "%%MatrixMarket";
    // A quick look first, so binary junk without line ends is refused without reading it all.
    const std::string_view head = in_.peek();
    const size_t n = std::min(head.size(), kBanner.size());
    if (head.substr(0, n) != kBanner.substr(0, n))
      fail(1, "the first line is not a Matrix Market banner: expected '%%MatrixMarket matrix <format> <field> "
              "<symmetry>' but found " + quoted(head.substr(0, head.find('\n'))) + ".");
    if (!more()) fail(1, "the file is empty; a Matrix Market file starts with a '%%MatrixMarket' banner.");
    const std::vector<std::string_view> words = fields_of(p_, end_);
    if (words.empty() || words[0].substr(0, kBanner.size()) != kBanner)
      fail(1, "the first line is not a Matrix Market banner: expected '%%MatrixMarket matrix <format> <field> "
              "<symmetry>' but found " + quoted(std::string_view(p_, static_cast<size_t>(line_end(p_) - p_))) + ".");
    if (words[0].size() > kBanner.size()) {
      // "%%MatrixMarketmatrix": glued words are not a banner either.
      fail(1, "the banner word " + quoted(words[0]) + " must be followed by a blank.");
    }
    if (words.size() != 5)
      fail(1, "the banner has " + std::to_string(words.size() - 1) +
                  " words after '%%MatrixMarket' but needs 4 (matrix, format, field, symmetry).");
    std::vector<std::string> w;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string s(words[i]);
      for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      w.push_back(std::move(s));
    }
    if (w[0] != "matrix") fail(1, "the banner names object " + quoted(words[1]) + "; only 'matrix' is supported.");
    if (w[1] == "coordinate") {
      h_.format = MmFormat::coordinate;
    } else if (w[1] == "array") {
      h_.format = MmFormat::array;
    } else {
      fail(1, "unknown format " + quoted(words[2]) + " in the banner (expected coordinate or array).");
    }
    if (w[2] == "real") {
      h_.field = MmField::real;
    } else if (w[2] == "integer") {
      h_.field = MmField::integer;
    } else if (w[2] == "pattern") {
      h_.field = MmField::pattern;
    } else if (w[2] == "complex") {
      fail(1, "field 'complex' is not supported (SparsePort reads real, integer and pattern).");
    } else {
      fail(1, "unknown field " + quoted(words[3]) + " in the banner (expected real, integer or pattern).");
    }
    if (w[3] == "general") {
      h_.symmetry = MmSymmetry::general;
    } else if (w[3] == "symmetric") {
      h_.symmetry = MmSymmetry::symmetric;
    } else if (w[3] == "skew-symmetric") {
      h_.symmetry = MmSymmetry::skew_symmetric;
    } else if (w[3] == "hermitian") {
      fail(1, "symmetry 'hermitian' is not supported (SparsePort reads general, symmetric and skew-symmetric).");
    } else {
      fail(1, "unknown symmetry " + quoted(words[4]) +
                  " in the banner (expected general, symmetric or skew-symmetric).");
    }
    if (h_.format == MmFormat::array && h_.field == MmField::pattern)
      fail(1, "an array file cannot have field 'pattern' (it stores every value).");
    if (h_.symmetry == MmSymmetry::skew_symmetric && h_.field == MmField::pattern)
      fail(1, "a skew-symmetric file cannot have field 'pattern' (its mirrored entries would be -1).");
    next_line();
  }

  void read_size_line() {
    for (;;) {
      if (!more())
        fail(line_, std::string("the file ends before the size line (") +
                        (h_.format == MmFormat::coordinate ? "rows cols entries" : "rows cols") + ").");
      if (!skippable(p_)) break;
      next_line();
    }
    size_line_ = line_;
    const std::vector<std::string_view> f = fields_of(p_, end_);
    const size_t need = h_.format == MmFormat::coordinate ? 3 : 2;
    const char* what = h_.format == MmFormat::coordinate ? "rows cols entries" : "rows cols";
    int64_t v[3] = {0, 0, 0};
    for (size_t i = 0; i < f.size() && i < need; ++i) {
      uint64_t x = 0;
      const char* q = skip_plus(f[i].data());
      const char* e = parse_index(q, x);
      if (e != f[i].data() + f[i].size() || static_cast<int64_t>(x) > kMaxSize) {
        if (e == nullptr && !f[i].empty() && std::all_of(q, f[i].data() + f[i].size(), is_digit))
          fail(line_, "the size line number " + quoted(f[i]) + " is too large.");
        fail(line_, "the size line (" + std::string(what) + ") must hold whole numbers >= 0, but " + quoted(f[i]) +
                        " is not one.");
      }
      v[i] = static_cast<int64_t>(x);
    }
    if (f.size() != need)
      fail(line_, "the size line has " + std::to_string(f.size()) + " number" + (f.size() == 1 ? "" : "s") + " but " +
                      (h_.format == MmFormat::coordinate ? "a coordinate" : "an array") + " file needs " +
                      std::to_string(need) + " (" + what + ").");
    h_.rows = v[0];
    h_.cols = v[1];
    if (h_.symmetry != MmSymmetry::general && h_.rows != h_.cols)
      fail(line_, std::string("a ") + name(h_.symmetry) + " matrix must be square, but the size line gives " +
                      std::to_string(h_.rows) + "x" + std::to_string(h_.cols) + ".");
    if (h_.format == MmFormat::coordinate) {
      h_.entries = v[2];
    } else {
      const int64_t n = h_.rows;
      if (h_.cols != 0 && h_.rows > kMaxSize / h_.cols)
        fail(line_, "an array of " + std::to_string(h_.rows) + "x" + std::to_string(h_.cols) + " is too large.");
      h_.entries = h_.symmetry == MmSymmetry::general     ? h_.rows * h_.cols
                   : h_.symmetry == MmSymmetry::symmetric ? n * (n + 1) / 2
                                                          : n * (n - 1) / 2;
    }
    next_line();
  }

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

  void expect_end() {
    while (more()) {
      if (!skippable(p_))
        fail(line_, "the size line (line " + std::to_string(size_line_) + ") announces " + std::to_string(h_.entries) +
                        (h_.format == MmFormat::coordinate ? " entries" : " values") +
                        ", but the file goes on with more: " +
                        quoted(std::string_view(p_, static_cast<size_t>(line_end(p_) - p_))) + ".");
      next_line();
    }
  }

  // ---- diagnostics (slow path: find what is wrong with a line the fast path refused) ----------

  void check_index(std::string_view tok, const char* what, int64_t limit, int64_t line) const {
    const std::string range = limit == 0 ? "1..0 (the size line gives 0)" : "1.." + std::to_string(limit);
    const char* q = skip_plus(tok.data());
    const char* e = tok.data() + tok.size();
    const bool neg = *q == '-';
    if (neg) ++q;
    if (q < e && std::all_of(q, e, is_digit)) {
      uint64_t x = 0;
      if (e - q > 18 || parse_index(q, x) == nullptr || neg || x == 0 || x > static_cast<uint64_t>(limit))
        fail(line, std::string(what) + " index " + std::string(tok) + " is out of range " + range +
                       " (Matrix Market indices are 1-based).");
      return;
    }
    if (parses_as_number(tok)) fail(line, std::string(what) + " index " + quoted(tok) + " is not a whole number.");
    fail(line, std::string(what) + " index " + quoted(tok) + " is not a number.");
  }

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

// ---- CSR construction -------------------------------------------------------------------------

template <class I>
[[noreturn]] void too_large_for(const std::string& path, const std::string& what, int64_t n) {
  throw InvalidArgument("read_matrix_market: " + path + " holds " + std::to_string(n) + " " + what + ", more than " +
                        std::to_string(sizeof(I) * 8) + "-bit indices can hold (" +
                        std::to_string(std::numeric_limits<I>::max()) + "); read it with int64_t indices.");
}

// COO (file order) to CSR with a counting sort; entries keep file order within each row. mirror
// adds (c, r) for every off-diagonal (r, c), negated when negate.
template <class I, class V>
HostCsr<I, V> coo_to_csr(int64_t rows, int64_t cols, const std::vector<I>& ri, const std::vector<I>& ci,
                         const std::vector<V>& vals, bool mirror, bool negate, bool drop_diag, int64_t total) {
  HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(static_cast<size_t>(rows) + 1, I(0));
  a.colind.resize(static_cast<size_t>(total));
  const bool has_v = !vals.empty();
  if (has_v) a.values.resize(static_cast<size_t>(total));
  const size_t n = ri.size();
  I* ptr = a.rowptr.data();
  for (size_t e = 0; e < n; ++e) {
    const I r = ri[e], c = ci[e];
    if (r == c) {
      if (!drop_diag) ++ptr[r + 1];
    } else {
      ++ptr[r + 1];
      if (mirror) ++ptr[c + 1];
    }
  }
  for (int64_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
  // ptr[r] is row r's insertion point; afterwards it is row r+1's start, shifted back below.
  I* col = a.colind.data();
  V* val = a.values.data();
  for (size_t e = 0; e < n; ++e) {
    const I r = ri[e], c = ci[e];
    if (r == c && drop_diag) continue;
    const I k = ptr[r]++;
    col[k] = c;
    if (has_v) val[k] = vals[e];
    if (mirror && r != c) {
      const I m = ptr[c]++;
      col[m] = r;
      if (has_v) val[m] = negate ? -vals[e] : vals[e];
    }
  }
  for (int64_t i = rows; i > 0; --i) ptr[i] = ptr[i - 1];
  ptr[0] = 0;
  return a;
}

// Sorts each row by column and adds up duplicates in their order (a pattern keeps one).
template <class I, class V>
void sort_and_merge_rows(HostCsr<I, V>& a) {
  const bool has_v = !a.values.empty();
  std::vector<std::pair<I, V>> tmp;
  I w = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    const I b = a.rowptr[static_cast<size_t>(i)], e = a.rowptr[static_cast<size_t>(i) + 1];
    a.rowptr[static_cast<size_t>(i)] = w;
    bool sorted = true;
    for (I k = b + 1; k < e && sorted; ++k) sorted = a.colind[static_cast<size_t>(k)] > a.colind[static_cast<size_t>(k) - 1];
    if (sorted) {
      if (w != b) {
        std::copy(a.colind.begin() + b, a.colind.begin() + e, a.colind.begin() + w);
        if (has_v) std::copy(a.values.begin() + b, a.values.begin() + e, a.values.begin() + w);
      }
      w += e - b;
    } else if (!has_v) {
      std::sort(a.colind.begin() + b, a.colind.begin() + e);
      const auto last = std::unique(a.colind.begin() + b, a.colind.begin() + e);
      w = static_cast<I>(std::copy(a.colind.begin() + b, last, a.colind.begin() + w) - a.colind.begin());
    } else {
      tmp.clear();
      for (I k = b; k < e; ++k) tmp.emplace_back(a.colind[static_cast<size_t>(k)], a.values[static_cast<size_t>(k)]);
      std::stable_sort(tmp.begin(), tmp.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t k = 0; k < tmp.size(); ++k) {
        if (k > 0 && tmp[k].first == tmp[k - 1].first) {
          a.values[static_cast<size_t>(w) - 1] += tmp[k].second;
        } else {
          a.colind[static_cast<size_t>(w)] = tmp[k].first;
          a.values[static_cast<size_t>(w)] = tmp[k].second;
          ++w;
        }
      }
    }
  }
  a.rowptr[static_cast<size_t>(a.rows)] = w;
  a.colind.resize(static_cast<size_t>(w));
  if (has_v) a.values.resize(static_cast<size_t>(w));
}

// Adds (j, i, A[i,j]) for every off-diagonal (i, j) whose mirror A does not hold; each row keeps its
// own entries first, then the added ones by increasing i. Square A.
template <class I, class V>
HostCsr<I, V> symmetrize_pattern(const HostCsr<I, V>& a, const std::string& path) {
  const int64_t n = a.rows;
  const bool has_v = !a.values.empty();
  // A^T by a counting sort over A's rows in order, so each row of A^T lists sources ascending.
  std::vector<I> tptr(static_cast<size_t>(n) + 1, I(0));
  for (const I c : a.colind) ++tptr[static_cast<size_t>(c) + 1];
  for (int64_t i = 0; i < n; ++i) tptr[static_cast<size_t>(i) + 1] += tptr[static_cast<size_t>(i)];
  std::vector<I> next(tptr.begin(), tptr.end() - 1);
  std::vector<I> trow(a.colind.size());
  std::vector<V> tval(has_v ? a.colind.size() : 0);
  for (int64_t i = 0; i < n; ++i)
    for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k) {
      const I pos = next[static_cast<size_t>(a.colind[static_cast<size_t>(k)])]++;
      trow[static_cast<size_t>(pos)] = static_cast<I>(i);
      if (has_v) tval[static_cast<size_t>(pos)] = a.values[static_cast<size_t>(k)];
    }
  next.clear();
  next.shrink_to_fit();

  // stamp[c] == j: A's row j holds column c.
  std::vector<I> stamp(static_cast<size_t>(n), I(-1));
  auto mark = [&](int64_t j) {
    for (I k = a.rowptr[static_cast<size_t>(j)]; k < a.rowptr[static_cast<size_t>(j) + 1]; ++k)
      stamp[static_cast<size_t>(a.colind[static_cast<size_t>(k)])] = static_cast<I>(j);
  };
  int64_t total = a.nnz();
  for (int64_t j = 0; j < n; ++j) {
    mark(j);
    for (I k = tptr[static_cast<size_t>(j)]; k < tptr[static_cast<size_t>(j) + 1]; ++k)
      total += stamp[static_cast<size_t>(trow[static_cast<size_t>(k)])] != static_cast<I>(j);
  }
  if (total > static_cast<int64_t>(std::numeric_limits<I>::max()))
    too_large_for<I>(path, "nonzeros after symmetrize", total);

  HostCsr<I, V> s;
  s.rows = s.cols = n;
  s.rowptr.assign(static_cast<size_t>(n) + 1, I(0));
  s.colind.resize(static_cast<size_t>(total));
  if (has_v) s.values.resize(static_cast<size_t>(total));
  std::fill(stamp.begin(), stamp.end(), I(-1));
  I w = 0;
  for (int64_t j = 0; j < n; ++j) {
    mark(j);
    for (I k = a.rowptr[static_cast<size_t>(j)]; k < a.rowptr[static_cast<size_t>(j) + 1]; ++k) {
      s.colind[static_cast<size_t>(w)] = a.colind[static_cast<size_t>(k)];
      if (has_v) s.values[static_cast<size_t>(w)] = a.values[static_cast<size_t>(k)];
      ++w;
    }
    for (I k = tptr[static_cast<size_t>(j)]; k < tptr[static_cast<size_t>(j) + 1]; ++k) {
      if (stamp[static_cast<size_t>(trow[static_cast<size_t>(k)])] == static_cast<I>(j)) continue;
      s.colind[static_cast<size_t>(w)] = trow[static_cast<size_t>(k)];
      if (has_v) s.values[static_cast<size_t>(w)] = tval[static_cast<size_t>(k)];
      ++w;
    }
    s.rowptr[static_cast<size_t>(j) + 1] = w;
  }
  return s;
}

// ---- output -----------------------------------------------------------------------------------

// A buffered file, gzip-compressed when the name ends in ".gz". A writer that is destroyed before
// close() (an exception) removes its half-written file.
class Output {
 public:
  Output(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
    const bool gz = path_.size() >= 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0;
    if (gz) {
      // Level 1: at level 6 a 20M-entry real file took 58 s to write on the 2-core dev VM, and zlib
      // compressed 100 MB of such lines in 7.2 s against 0.96 s at level 1, for a file only 7%
      // smaller (18% on mdual's pattern).
      gz_ = ::gzopen(path_.c_str(), "wb1");
      if (gz_ == nullptr) fail_open(errno);
      ::gzbuffer(gz_, kGzBufferBytes);
    } else {
      file_ = std::fopen(path_.c_str(), "wb");
      if (file_ == nullptr) fail_open(errno);
    }
    buf_.resize(kFlushBytes + kRoom);
  }
  ~Output() {
    if (gz_ == nullptr && file_ == nullptr) return;
    if (gz_ != nullptr) ::gzclose(gz_);
    if (file_ != nullptr) std::fclose(file_);
    std::remove(path_.c_str());
  }
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

  void close() {
    flush();
    int rc = 0;
    if (gz_ != nullptr) {
      rc = ::gzclose(gz_) == Z_OK ? 0 : -1;
      gz_ = nullptr;
    } else {
      rc = std::fclose(file_);
      file_ = nullptr;
    }
    if (rc != 0) {
      std::remove(path_.c_str());
      throw Error(op_ + ": cannot finish writing " + path_ + " (" + errno_text(errno) + ").");
    }
  }

  static constexpr size_t kRoom = 256;  // the longest line written: two indices and a value

 private:
  static constexpr size_t kFlushBytes = size_t{4} << 20;

  [[noreturn]] void fail_open(int e) const {
    throw Error(op_ + ": cannot open " + path_ + " for writing (" + errno_text(e) + ").");
  }
  void flush() {
    if (used_ == 0) return;
    const bool ok = gz_ != nullptr ? ::gzwrite(gz_, buf_.data(), static_cast<unsigned>(used_)) == static_cast<int>(used_)
                                   : std::fwrite(buf_.data(), 1, used_, file_) == used_;
    if (!ok) throw Error(op_ + ": cannot write " + path_ + " (" + errno_text(errno) + ").");
    used_ = 0;
  }

  std::string path_, op_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;
  size_t used_ = 0;
};

inline char* put_int(char* q, int64_t x) { return std::to_chars(q, q + 24, x).ptr; }
template <class V>
inline char* put_real(char* q, V x) {
  return std::to_chars(q, q + 64, x).ptr;  // shortest text that reads back as the same V
}

template <class V>
std::string value_text(V x) {
  char buf[64];
  return std::string(buf, put_real(buf, x));
}

template <class I, class V>
void check_csr(const HostCsr<I, V>& a) {
  const std::string op = "write_matrix_market";
  if (a.rows < 0 || a.cols < 0)
    throw InvalidArgument(op + ": A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                          " (dimensions must be >= 0).");
  if (static_cast<int64_t>(a.rowptr.size()) != a.rows + 1)
    throw InvalidArgument(op + ": A.rowptr has " + std::to_string(a.rowptr.size()) + " entries but A has " +
                          std::to_string(a.rows) + " rows (need rows + 1).");
  if (a.rowptr[0] != 0 || static_cast<int64_t>(a.rowptr.back()) != a.nnz())
    throw InvalidArgument(op + ": A.rowptr runs from " + std::to_string(a.rowptr[0]) + " to " +
                          std::to_string(a.rowptr.back()) + " but must run from 0 to nnz = " + std::to_string(a.nnz()) +
                          ".");
  if (!a.values.empty() && static_cast<int64_t>(a.values.size()) != a.nnz())
    throw InvalidArgument(op + ": A has " + std::to_string(a.values.size()) + " values but " +
                          std::to_string(a.nnz()) + " column indices.");
  for (int64_t i = 0; i < a.rows; ++i)
    if (a.rowptr[static_cast<size_t>(i) + 1] < a.rowptr[static_cast<size_t>(i)])
      throw InvalidArgument(op + ": A.rowptr decreases at row " + std::to_string(i) + ".");
  for (size_t k = 0; k < a.colind.size(); ++k)
    if (a.colind[k] < 0 || a.colind[k] >= a.cols)
      throw InvalidArgument(op + ": A.colind[" + std::to_string(k) + "] = " + std::to_string(a.colind[k]) +
                            " is outside 0.." + std::to_string(a.cols - 1) + ".");
}

struct Triple {
  int64_t r, c;
  double v;
};

// The lower triangle to write for a symmetric or skew-symmetric file, after checking that A
// (duplicates added up) is one.
template <class I, class V>
std::vector<Triple> symmetric_lower(const HostCsr<I, V>& a, MmSymmetry sym, bool pattern) {
  const std::string op = "write_matrix_market";
  if (a.rows != a.cols)
    throw InvalidArgument(op + ": a " + std::string(name(sym)) + " file needs a square matrix, but A is " +
                          std::to_string(a.rows) + "x" + std::to_string(a.cols) + ".");
  std::vector<Triple> t;
  t.reserve(a.colind.size());
  for (int64_t i = 0; i < a.rows; ++i)
    for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
      t.push_back({i, static_cast<int64_t>(a.colind[static_cast<size_t>(k)]),
                   a.values.empty() ? 1.0 : static_cast<double>(a.values[static_cast<size_t>(k)])});
  // Already row-major; a stable sort by column within rows keeps the duplicates' order for the sum.
  std::stable_sort(t.begin(), t.end(), [](const Triple& x, const Triple& y) { return x.r != y.r ? x.r < y.r : x.c < y.c; });
  std::vector<Triple> m;  // duplicates added up
  for (const Triple& x : t) {
    if (!m.empty() && m.back().r == x.r && m.back().c == x.c)
      m.back().v = pattern ? 1.0 : m.back().v + x.v;
    else
      m.push_back(x);
  }
  // out: what the file holds; strict: its off-diagonal part; mirrored: the upper part transposed.
  std::vector<Triple> out, strict, mirrored;
  for (const Triple& x : m) {
    if (x.r > x.c) {
      out.push_back(x);
      strict.push_back(x);
    } else if (x.r < x.c) {
      mirrored.push_back({x.c, x.r, x.v});
    } else if (sym == MmSymmetry::symmetric) {
      out.push_back(x);
    } else if (x.v != 0) {
      throw InvalidArgument(op + ": a skew-symmetric matrix has a zero diagonal, but A(" + std::to_string(x.r + 1) +
                            "," + std::to_string(x.c + 1) + ") = " + value_text(x.v) + " (1-based).");
    }
  }
  const auto before = [](const Triple& x, const Triple& y) { return x.r != y.r ? x.r < y.r : x.c < y.c; };
  std::sort(mirrored.begin(), mirrored.end(), before);
  const double sign = sym == MmSymmetry::skew_symmetric ? -1.0 : 1.0;
  const std::string what = sym == MmSymmetry::skew_symmetric ? "skew-symmetric" : "symmetric";
  auto pos = [](int64_t r, int64_t c) { return "A(" + std::to_string(r + 1) + "," + std::to_string(c + 1) + ")"; };
  auto unmatched = [&](int64_t r, int64_t c) {
    throw InvalidArgument(op + ": A is not " + what + ": " + pos(r, c) + " is stored but " + pos(c, r) +
                          " is not (1-based).");
  };
  size_t i = 0, u = 0;
  while (i < strict.size() || u < mirrored.size()) {
    if (u == mirrored.size() || (i < strict.size() && before(strict[i], mirrored[u]))) unmatched(strict[i].r, strict[i].c);
    if (i == strict.size() || before(mirrored[u], strict[i])) unmatched(mirrored[u].c, mirrored[u].r);
    if (!pattern && mirrored[u].v != sign * strict[i].v)
      throw InvalidArgument(op + ": A is not " + what + ": " + pos(strict[i].r, strict[i].c) + " = " +
                            value_text(strict[i].v) + " but " + pos(strict[i].c, strict[i].r) + " = " +
                            value_text(mirrored[u].v) + " (1-based).");
    ++i;
    ++u;
  }
  return out;
}

template <class V>
bool whole(V x) {
  return std::isfinite(x) && std::trunc(x) == x && std::fabs(static_cast<double>(x)) < 9.2e18;
}

}  // namespace

// ---- public functions -------------------------------------------------------------------------

MmHeader read_matrix_market_header(const std::string& path) {
  Parser ps(path, kHeaderChunkBytes, nullptr);
  ps.read_header();
  return ps.header();
}

namespace {

template <class I, class V>
HostCsr<I, V> read_matrix_market_unguarded(const std::string& path, const MmReadOptions& opt, MmHeader* header) {
  Parser ps(path, kChunkBytes, opt.progress ? &opt.progress : nullptr);
  ps.read_header();
  const MmHeader h = ps.header();
  if (header != nullptr) *header = h;
  constexpr int64_t kMaxI = std::numeric_limits<I>::max();
  if (h.rows > kMaxI || h.cols > kMaxI)
    throw InvalidArgument("read_matrix_market: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ", more rows or columns than " + std::to_string(sizeof(I) * 8) +
                          "-bit indices can hold (" + std::to_string(kMaxI) + "); read it with int64_t indices.");
  if (h.format == MmFormat::coordinate && h.entries > kMaxI && !opt.drop_self_loops)
    too_large_for<I>(path, "entries", h.entries);
  if (opt.symmetrize && h.symmetry == MmSymmetry::general && h.rows != h.cols)
    throw InvalidArgument("read_matrix_market: symmetrize needs a square matrix, but " + path + " is " +
                          std::to_string(h.rows) + "x" + std::to_string(h.cols) + ".");
  check_host_memory("read_matrix_market", path, h.rows, h.cols,
                    (static_cast<long double>(h.rows) + 1) * sizeof(I), "its row pointers alone need");

  const bool values = opt.keep_values && h.field != MmField::pattern;
  const bool array = h.format == MmFormat::array;
  std::vector<I> ri, ci;
  std::vector<V> vals;
  const int64_t reserve = array ? std::min<int64_t>(ps.entries_to_reserve(), int64_t{1} << 22) : ps.entries_to_reserve();
  ri.reserve(static_cast<size_t>(reserve));
  ci.reserve(static_cast<size_t>(reserve));
  if (values) vals.reserve(static_cast<size_t>(reserve));
  int64_t diag = 0;
  int64_t kept = 0;  // entries of the result so far: stop reading as soon as they cannot fit I
  const bool mirrored = h.symmetry != MmSymmetry::general;
  ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
    if (array && v == V(0)) return;  // array files keep their nonzeros
    kept += r == c ? (opt.drop_self_loops ? 0 : 1) : (mirrored ? 2 : 1);
    if (kept > kMaxI)
      throw InvalidArgument("read_matrix_market: " + path + " holds more than " + std::to_string(kMaxI) +
                            (mirrored ? " nonzeros after symmetric expansion" : " nonzeros") + " (counted after " +
                            std::to_string(ri.size() + 1) + " stored entries), more than " +
                            std::to_string(sizeof(I) * 8) + "-bit indices can hold; read it with int64_t indices.");
    ri.push_back(static_cast<I>(r));
    ci.push_back(static_cast<I>(c));
    if (values) vals.push_back(v);
    diag += r == c;
  });

  const int64_t stored = static_cast<int64_t>(ri.size());
  const bool mirror = h.symmetry != MmSymmetry::general;
  const int64_t total = stored - (opt.drop_self_loops ? diag : 0) + (mirror ? stored - diag : 0);
  if (total > kMaxI) too_large_for<I>(path, mirror ? "nonzeros after symmetric expansion" : "nonzeros", total);
  HostCsr<I, V> a = coo_to_csr<I, V>(h.rows, h.cols, ri, ci, vals, mirror, h.symmetry == MmSymmetry::skew_symmetric,
                                     opt.drop_self_loops, total);
  std::vector<I>().swap(ri);
  std::vector<I>().swap(ci);
  std::vector<V>().swap(vals);
  if (opt.sort_and_merge) sort_and_merge_rows(a);
  if (opt.symmetrize && h.symmetry == MmSymmetry::general) {
    a = symmetrize_pattern(a, path);
    // The mirrors were appended after each row's own entries; there are no new duplicates.
    if (opt.sort_and_merge) sort_and_merge_rows(a);
  }
  if (opt.progress) opt.progress(1.0);
  return a;
}

}  // namespace

// What fits the index type can still be more than the host can hold.
template <class I, class V>
HostCsr<I, V> read_matrix_market(const std::string& path, const MmReadOptions& opt, MmHeader* header) {
  try {
    return read_matrix_market_unguarded<I, V>(path, opt, header);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("read_matrix_market: " + path +
                          " needs more host memory than could be allocated (std::bad_alloc) for its entries and CSR",
                      ENOMEM, "std::bad_alloc");
  }
}

template <class V>
HostDense<V> read_matrix_market_dense(const std::string& path) {
  Parser ps(path, kChunkBytes, nullptr);
  ps.read_header();
  const MmHeader h = ps.header();
  if (h.cols != 0 && h.rows > static_cast<int64_t>(std::numeric_limits<ptrdiff_t>::max() / sizeof(V)) / h.cols)
    throw InvalidArgument("read_matrix_market_dense: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ", too large for a dense matrix.");
  // The dense matrix is allocated before the values are read: a size line the file cannot back
  // (truncated, or junk) must not cost rows x cols of memory first.
  if (const int64_t room = ps.entries_file_can_hold(2); h.format == MmFormat::array && room >= 0 && h.entries > room)
    ps.fail(ps.size_line(), "the size line announces " + std::to_string(h.entries) + " values, but the file (" +
                                std::to_string(ps.file_bytes()) + (ps.gzip() ? " bytes of gzip data" : " bytes") +
                                ") can hold at most " + std::to_string(room) +
                                "; it is truncated or the size line is wrong.");
  check_host_memory("read_matrix_market_dense", path, h.rows, h.cols,
                    static_cast<long double>(h.rows) * static_cast<long double>(h.cols) * sizeof(V),
                    "a dense matrix needs");
  HostDense<V> d;
  try {
    d = HostDense<V>(h.rows, h.cols);
  } catch (const std::bad_alloc&) {
    const size_t bytes = static_cast<size_t>(h.rows) * static_cast<size_t>(h.cols) * sizeof(V);
    throw OutOfMemory("read_matrix_market_dense: " + path + " is " + std::to_string(h.rows) + "x" +
                          std::to_string(h.cols) + ": " + std::to_string(bytes) +
                          " bytes of host memory could not be allocated (std::bad_alloc)",
                      ENOMEM, "std::bad_alloc", bytes);
  }
  const V sign = h.symmetry == MmSymmetry::skew_symmetric ? V(-1) : V(1);
  const bool mirror = h.symmetry != MmSymmetry::general;
  if (h.format == MmFormat::array) {
    ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
      d(r, c) = v;
      if (mirror && r != c) d(c, r) = sign * v;
    });
  } else {
    ps.read_entries<V>([&](int64_t r, int64_t c, V v) {
      d(r, c) += v;
      if (mirror && r != c) d(c, r) += sign * v;
    });
  }
  return d;
}

template <class I, class V>
void write_matrix_market(const std::string& path, const HostCsr<I, V>& a, const MmWriteOptions& opt) {
  check_csr(a);
  const MmField field = opt.field.value_or(a.is_pattern() ? MmField::pattern : MmField::real);
  if (field == MmField::integer)
    for (size_t k = 0; k < a.values.size(); ++k)
      if (!whole(a.values[k])) {
        const auto row = std::upper_bound(a.rowptr.begin(), a.rowptr.end(), static_cast<I>(k)) - a.rowptr.begin();
        throw InvalidArgument("write_matrix_market: field integer needs whole values, but A(" + std::to_string(row) +
                              "," + std::to_string(static_cast<int64_t>(a.colind[k]) + 1) +
                              ") = " + value_text(a.values[k]) + " (1-based).");
      }
  if (opt.symmetry == MmSymmetry::skew_symmetric && field == MmField::pattern)
    throw InvalidArgument("write_matrix_market: a skew-symmetric file cannot have field 'pattern'.");

  std::vector<Triple> lower;
  const bool general = opt.symmetry == MmSymmetry::general;
  if (!general) lower = symmetric_lower(a, opt.symmetry, field == MmField::pattern);

  Output out(path, "write_matrix_market");
  out.put(std::string("%%MatrixMarket matrix coordinate ") + name(field) + " " + name(opt.symmetry) + "\n");
  out.put(std::to_string(a.rows) + " " + std::to_string(a.cols) + " " +
          std::to_string(general ? a.nnz() : static_cast<int64_t>(lower.size())) + "\n");
  auto line = [&](int64_t r, int64_t c, auto v) {
    char* q = out.room();
    q = put_int(q, r + 1);
    *q++ = ' ';
    q = put_int(q, c + 1);
    if (field == MmField::real) {
      *q++ = ' ';
      q = put_real(q, v);
    } else if (field == MmField::integer) {
      *q++ = ' ';
      q = put_int(q, static_cast<int64_t>(v));
    }
    *q++ = '\n';
    out.done(q);
  };
  if (general) {
    for (int64_t i = 0; i < a.rows; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
        line(i, a.colind[static_cast<size_t>(k)], a.values.empty() ? V(1) : a.values[static_cast<size_t>(k)]);
  } else {
    // Sums of V were taken in double; write them back as V so they read back as the same V.
    for (const Triple& t : lower) line(t.r, t.c, static_cast<V>(t.v));
  }
  out.close();
}

template <class V>
void write_matrix_market_dense(const std::string& path, const HostDense<V>& a) {
  if (a.rows < 0 || a.cols < 0 || a.ld < a.cols ||
      (a.rows > 0 && static_cast<int64_t>(a.data.size()) < (a.rows - 1) * a.ld + a.cols))
    throw InvalidArgument("write_matrix_market_dense: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                          " with ld " + std::to_string(a.ld) + " but holds " + std::to_string(a.data.size()) +
                          " elements (need ld >= cols and (rows-1)*ld + cols elements).");
  Output out(path, "write_matrix_market_dense");
  out.put("%%MatrixMarket matrix array real general\n");
  out.put(std::to_string(a.rows) + " " + std::to_string(a.cols) + "\n");
  for (int64_t j = 0; j < a.cols; ++j)
    for (int64_t i = 0; i < a.rows; ++i) {
      char* q = put_real(out.room(), a(i, j));
      *q++ = '\n';
      out.done(q);
    }
  out.close();
}

#define SPARSEPORT_MM_CSR(I, V)                                                                               \
  template HostCsr<I, V> read_matrix_market<I, V>(const std::string&, const MmReadOptions&, MmHeader*); \
  template void write_matrix_market<I, V>(const std::string&, const HostCsr<I, V>&, const MmWriteOptions&);
SPARSEPORT_MM_CSR(int32_t, float)
SPARSEPORT_MM_CSR(int32_t, double)
SPARSEPORT_MM_CSR(int64_t, float)
SPARSEPORT_MM_CSR(int64_t, double)
#undef SPARSEPORT_MM_CSR

template HostDense<float> read_matrix_market_dense<float>(const std::string&);
template HostDense<double> read_matrix_market_dense<double>(const std::string&);
template void write_matrix_market_dense<float>(const std::string&, const HostDense<float>&);
template void write_matrix_market_dense<double>(const std::string&, const HostDense<double>&);

}  // namespace sparseport
