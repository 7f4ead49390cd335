// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Matrix Market reader. The input is the file: it is written as a plain .mtx and as a
// gzip .mtx.gz (the reader takes paths and tells the two apart by content) and read with
// read_matrix_market_header, read_matrix_market under four option sets (as read; symmetrize +
// drop_self_loops + sort_and_merge; symmetrize as a pattern; sort + drop as a pattern) and both
// index and value types, load_graph, and read_matrix_market_dense. A malformed file must raise a
// sparseport::Error (ParseError naming FILE:LINE); a file that reads must give a valid CSR of the
// header's shape that honours the options, and the plain and gzip reads must agree, to the error
// message. A truncated gzip file must be refused.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "sparseport/sparseport.hpp"

namespace sp = sparseport;

namespace {

// Shapes read for real: rowptr and dense results stay small. Larger headers are read only where
// the reader must refuse them before allocating: a 64-bit-only shape read with int32_t indices, or
// one whose row pointers (dense: values) alone need more than this machine's memory. Headers in
// between are valid files too large to read for every input, and only their header is read.
constexpr int64_t kMaxDim = int64_t{1} << 16;
constexpr long double kMaxDenseCells = 1 << 16;

struct Combo {
  bool symmetrize, drop_self_loops, sort_and_merge, keep_values;
};
constexpr Combo kCombos[] = {
    {false, false, false, true},
    {true, true, true, true},
    {true, false, false, false},
    {false, true, true, false},
};

sp::MmReadOptions options(const Combo& c) {
  sp::MmReadOptions o;
  o.symmetrize = c.symmetrize;
  o.drop_self_loops = c.drop_self_loops;
  o.sort_and_merge = c.sort_and_merge;
  o.keep_values = c.keep_values;
  return o;
}

std::string gzip(const uint8_t* data, size_t size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fuzz::finding("deflateInit2 failed");
  std::string out(deflateBound(&zs, size) + 64, '\0');
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) fuzz::finding("deflate did not finish");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// ParseError's what() is "FILE:LINE: problem", a whole sentence, with LINE inside the file.
void check_parse_error(const std::string& msg, const std::string& path, int64_t lines) {
  fuzz::require(msg.rfind(path + ":", 0) == 0, "a ParseError does not start with 'FILE:': " + msg);
  size_t q = path.size() + 1;
  int64_t line = 0;
  const size_t digits_from = q;
  while (q < msg.size() && msg[q] >= '0' && msg[q] <= '9') line = line * 10 + (msg[q++] - '0');
  fuzz::require(q > digits_from && msg.compare(q, 2, ": ") == 0, "a ParseError has no ':LINE: ': " + msg);
  fuzz::require(line <= lines + 1, "a ParseError names line " + std::to_string(line) + " of a " +
                                       std::to_string(lines) + "-line file: " + msg);
  fuzz::require(msg.back() == '.' || msg.back() == '?', "a ParseError is not a whole sentence: " + msg);
}

template <class I, class V>
void check_csr(const sp::HostCsr<I, V>& a, const sp::MmHeader& h, const Combo& c, const char* what) {
  const std::string w = what;
  fuzz::require(a.rows == h.rows && a.cols == h.cols, w + ": the result's shape differs from the size line");
  fuzz::require(static_cast<int64_t>(a.rowptr.size()) == a.rows + 1, w + ": rowptr has the wrong length");
  const sp::Validation v = sp::validate(a.view());
  fuzz::require(v.ok(), w + ": the result is not a valid CSR: " + v.message);
  if (c.sort_and_merge) fuzz::require(v.canonical(), w + ": sort_and_merge left " + v.message);
  const bool pattern = !c.keep_values || h.field == sp::MmField::pattern;
  fuzz::require(pattern ? a.values.empty() : a.values.size() == a.colind.size(),
                w + ": the values do not match the field and keep_values");
  if (c.drop_self_loops)
    for (int64_t i = 0; i < a.rows; ++i)
      for (I k = a.rowptr[static_cast<size_t>(i)]; k < a.rowptr[static_cast<size_t>(i) + 1]; ++k)
        fuzz::require(a.colind[static_cast<size_t>(k)] != i, w + ": drop_self_loops kept a diagonal entry");
  if (c.symmetrize || h.symmetry != sp::MmSymmetry::general)
    fuzz::require(sp::graph_info(a).pattern_symmetric, w + ": a symmetric or symmetrized read is not symmetric");
}

template <class V>
bool same_values(const std::vector<V>& x, const std::vector<V>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::isnan(x[i]) ? std::isnan(y[i]) : std::memcmp(&x[i], &y[i], sizeof(V)) == 0)) return false;
  return true;
}

template <class I, class V>
bool same(const sp::HostCsr<I, V>& x, const sp::HostCsr<I, V>& y) {
  return x.rows == y.rows && x.cols == y.cols && x.rowptr == y.rowptr && x.colind == y.colind &&
         same_values(x.values, y.values);
}

bool same_header(const sp::MmHeader& x, const sp::MmHeader& y) {
  return x.format == y.format && x.field == y.field && x.symmetry == y.symmetry && x.rows == y.rows &&
         x.cols == y.cols && x.entries == y.entries;
}

// The error with every mention of its path replaced by "FILE".
std::string without_path(std::string msg, const std::string& path) {
  for (size_t at = msg.find(path); at != std::string::npos; at = msg.find(path, at + 4))
    msg.replace(at, path.size(), "FILE");
  return msg;
}

struct Inputs {
  std::string plain, gz;
  int64_t lines;
};

// Reads with one option set and types from the plain file (through load_graph when via_load) and
// the gzip file (when both); checks each result, and that both ways give the same result or the
// same error.
template <class I, class V>
void read_both(const Inputs& in, const sp::MmHeader& h, const Combo& c, bool both, bool via_load) {
  std::optional<sp::HostCsr<I, V>> a, b;
  sp::MmHeader ha{}, hb{};
  std::string ea, eb;
  const sp::MmReadOptions o = options(c);
  const bool ra = fuzz::rejects(
      "read_matrix_market (plain)",
      [&] {
        if (via_load) {
          a = sp::load_graph<I, V>(in.plain, o);
          ha = h;
        } else {
          a = sp::read_matrix_market<I, V>(in.plain, o, &ha);
        }
      },
      &ea);
  if (!ra) {
    fuzz::require(same_header(ha, h), "read_matrix_market's header differs from read_matrix_market_header's");
    check_csr(*a, h, c, "read_matrix_market (plain)");
  } else if (ea.rfind(in.plain + ":", 0) == 0) {
    check_parse_error(ea, in.plain, in.lines);
  }
  if (!both || in.gz.empty()) return;
  const bool rb = fuzz::rejects(
      "read_matrix_market (gzip)", [&] { b = sp::read_matrix_market<I, V>(in.gz, o, &hb); }, &eb);
  fuzz::require(ra == rb, std::string("the plain file ") + (ra ? "is refused (" + ea + ")" : "reads") +
                              " but the gzip file " + (rb ? "is refused (" + eb + ")" : "reads"));
  if (ra) {
    fuzz::require(without_path(ea, in.plain) == without_path(eb, in.gz),
                  "the plain and gzip files are refused differently: '" + ea + "' vs '" + eb + "'");
  } else {
    fuzz::require(same_header(hb, h) && same(*a, *b), "the plain and gzip files read differently");
  }
}

template <class V>
void read_dense(const Inputs& in, const sp::MmHeader& h) {
  const long double cells = static_cast<long double>(h.rows) * static_cast<long double>(h.cols);
  const bool absurd = cells * sizeof(V) > fuzz::host_memory_bytes();
  if (cells > kMaxDenseCells && !absurd) return;
  std::optional<sp::HostDense<V>> d;
  std::string e;
  const bool r = fuzz::rejects(
      "read_matrix_market_dense", [&] { d = sp::read_matrix_market_dense<V>(in.plain); }, &e);
  if (absurd)
    fuzz::require(
        r, "read_matrix_market_dense accepted a " + std::to_string(h.rows) + "x" + std::to_string(h.cols) + " matrix");
  if (!r)
    fuzz::require(d->rows == h.rows && d->cols == h.cols && d->ld == h.cols, "read_matrix_market_dense: wrong shape");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("SPARSEPORT_SCHEDULER", "off", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Inputs in;
  in.plain = fuzz::write_scratch("input.mtx", bytes);
  const std::string z = gzip(data, size);
  // An input that is gzip data already is read as such from the plain path; gzipping it again
  // would only give a file that is not Matrix Market.
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!is_gzip) in.gz = fuzz::write_scratch("input.mtx.gz", z);
  in.lines = static_cast<int64_t>(std::count(bytes.begin(), bytes.end(), '\n')) + 1;
  if (is_gzip) in.lines = std::numeric_limits<int64_t>::max() - 1;  // lines of the data inside: unknown

  // A gzip stream cut before its trailer can never read.
  const std::string cut = fuzz::write_scratch("cut.mtx.gz", std::string_view(z).substr(0, z.size() - 4));
  fuzz::require(
      fuzz::rejects("read_matrix_market (truncated gzip)", [&] { (void)sp::read_matrix_market<int32_t, float>(cut); }),
      "a truncated gzip file was read without an error");

  sp::MmHeader h;
  std::string e;
  if (fuzz::rejects(
          "read_matrix_market_header", [&] { h = sp::read_matrix_market_header(in.plain); }, &e)) {
    if (e.rfind(in.plain + ":", 0) == 0) check_parse_error(e, in.plain, in.lines);
    // A bad header fails every reader in the same way.
    std::string e2;
    fuzz::require(fuzz::rejects(
                      "read_matrix_market", [&] { (void)sp::read_matrix_market<int64_t, double>(in.plain); }, &e2),
                  "read_matrix_market_header refuses the file (" + e + ") but read_matrix_market reads it");
    fuzz::require(e2 == e, "read_matrix_market_header and read_matrix_market refuse the file differently: '" + e +
                               "' vs '" + e2 + "'");
    read_both<int32_t, float>(in, h, kCombos[0], true, false);
    return 0;
  }
  fuzz::require(h.rows >= 0 && h.cols >= 0 && h.entries >= 0, "read_matrix_market_header gave negative sizes");

  const bool small = h.rows <= kMaxDim && h.cols <= kMaxDim;
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  const bool refuse32 = h.rows > kMax32 || h.cols > kMax32;
  const bool absurd = (static_cast<long double>(h.rows) + 1) * sizeof(int64_t) > fuzz::host_memory_bytes();
  if (small || refuse32) {
    read_both<int32_t, float>(in, h, kCombos[0], true, true);
    read_both<int32_t, double>(in, h, kCombos[2], false, false);
  }
  if (small || absurd) {
    read_both<int64_t, double>(in, h, kCombos[1], true, false);
    read_both<int64_t, float>(in, h, kCombos[3], false, false);
  }
  if (refuse32) {
    fuzz::require(
        fuzz::rejects("read_matrix_market<int32_t>", [&] { (void)sp::read_matrix_market<int32_t, float>(in.plain); }),
        "read_matrix_market<int32_t> read a " + std::to_string(h.rows) + "x" + std::to_string(h.cols) + " matrix");
  }
  if (absurd) {
    fuzz::require(
        fuzz::rejects("read_matrix_market<int64_t>", [&] { (void)sp::read_matrix_market<int64_t, float>(in.plain); }),
        "read_matrix_market<int64_t> read a matrix of " + std::to_string(h.rows) + " rows");
  }
  read_dense<double>(in, h);
  return 0;
}
