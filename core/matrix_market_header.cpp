// SPDX-License-Identifier: Apache-2.0
// Matrix Market's banner and size line (read_matrix_market_header and the Parser's first steps),
// and the slow-path diagnostics that turn a refused line into a message naming the file, the line
// and what is wrong. Separate from the reader of entries because none of it is on the hot path:
// it runs once per file or once per error.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "core/matrix_market_internal.hpp"

namespace sparseport {
namespace detail::mm {

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

void Parser::read_banner() {
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

void Parser::read_size_line() {
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

void Parser::expect_end() {
  while (more()) {
    if (!skippable(p_))
      fail(line_, "the size line (line " + std::to_string(size_line_) + ") announces " + std::to_string(h_.entries) +
                      (h_.format == MmFormat::coordinate ? " entries" : " values") +
                      ", but the file goes on with more: " +
                      quoted(std::string_view(p_, static_cast<size_t>(line_end(p_) - p_))) + ".");
    next_line();
  }
}

void Parser::check_index(std::string_view tok, const char* what, int64_t limit, int64_t line) const {
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

}  // namespace detail::mm

MmHeader read_matrix_market_header(const std::string& path) {
  detail::mm::Parser ps(path, detail::mm::kHeaderChunkBytes, nullptr);
  ps.read_header();
  return ps.header();
}

}  // namespace sparseport
