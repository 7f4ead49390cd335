// SPDX-License-Identifier: Apache-2.0
// Matrix Market I/O: hand-checked reads (symmetric and skew expansion, array files, options),
// write-then-read round trips of every kind the writer produces, and malformed files, each refused
// with the expected message and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

// One folder per test process, removed when the process ends.
class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("sparseport-test-io-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const fs::path& temp_dir() {
  static TempDir dir;
  return dir.path();
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const fs::path p = temp_dir() / name;
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  EXPECT_TRUE(f.good()) << "could not write " << p;
  return p.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class I, class V>
void expect_csr(const sp::HostCsr<I, V>& a, int64_t rows, int64_t cols, const std::vector<int64_t>& rowptr,
                const std::vector<int64_t>& colind, const std::vector<double>& values) {
  EXPECT_EQ(a.rows, rows);
  EXPECT_EQ(a.cols, cols);
  EXPECT_EQ(std::vector<int64_t>(a.rowptr.begin(), a.rowptr.end()), rowptr);
  EXPECT_EQ(std::vector<int64_t>(a.colind.begin(), a.colind.end()), colind);
  EXPECT_EQ(std::vector<double>(a.values.begin(), a.values.end()), values);
}

// Bitwise, except that any NaN matches any NaN.
template <class V>
bool same_value(V x, V y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof(V)) == 0;
}

template <class I, class V>
void expect_same(const sp::HostCsr<I, V>& a, const sp::HostCsr<I, V>& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.rowptr, b.rowptr);
  EXPECT_EQ(a.colind, b.colind);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t k = 0; k < a.values.size(); ++k)
    ASSERT_TRUE(same_value(a.values[k], b.values[k])) << "value " << k << ": " << a.values[k] << " vs " << b.values[k];
}

// Random rows x cols CSR with unsorted and repeated columns, empty rows and, in its first entries,
// the values that are hardest to print and read back.
template <class I, class V>
sp::HostCsr<I, V> random_csr(int64_t rows, int64_t cols, int max_deg, uint64_t seed, bool with_values = true) {
  std::mt19937_64 g(seed);
  sp::HostCsr<I, V> a;
  a.rows = rows;
  a.cols = cols;
  a.rowptr.assign(1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int deg = static_cast<int>(g() % static_cast<uint64_t>(max_deg + 1));
    for (int d = 0; d < deg; ++d) {
      a.colind.push_back(static_cast<I>(g() % static_cast<uint64_t>(cols)));
      if (with_values) {
        const double u = static_cast<double>(g() >> 11) * 0x1.0p-53;
        a.values.push_back(static_cast<V>((u - 0.5) * std::pow(10.0, static_cast<double>(g() % 13) - 6)));
      }
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  const V special[] = {std::numeric_limits<V>::max(),        std::numeric_limits<V>::lowest(),
                       std::numeric_limits<V>::denorm_min(), std::numeric_limits<V>::min(),
                       std::numeric_limits<V>::infinity(),   -std::numeric_limits<V>::infinity(),
                       std::numeric_limits<V>::quiet_NaN(),  V(-0.0),
                       V(1) / V(3),                          V(0.1)};
  for (size_t k = 0; with_values && k < std::size(special) && k < a.values.size(); ++k) a.values[k] = special[k];
  return a;
}

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- a minimal gzip writer with stored (uncompressed) deflate blocks ----------------------------
// With stored blocks the decompressed prefix of a cut file is known exactly, so a truncation test
// can name the line where the data stops; it also checks that gzip is read by content.

uint32_t crc32_of(const std::string& data) {
  uint32_t c = 0xffffffffu;
  for (const char ch : data) {
    c ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

void put_le(std::string& s, uint32_t x, int bytes) {
  for (int k = 0; k < bytes; ++k) s += static_cast<char>((x >> (8 * k)) & 0xff);
}

// Splits data into stored blocks of at most block bytes.
std::string gzip_stored(const std::string& data, size_t block = 65535) {
  std::string s = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"s;
  size_t pos = 0;
  do {
    const size_t n = std::min(block, data.size() - pos);
    const bool last = pos + n == data.size();
    s += static_cast<char>(last ? 1 : 0);
    put_le(s, static_cast<uint32_t>(n), 2);
    put_le(s, static_cast<uint32_t>(~n & 0xffff), 2);
    s += data.substr(pos, n);
    pos += n;
  } while (pos < data.size());
  put_le(s, crc32_of(data), 4);
  put_le(s, static_cast<uint32_t>(data.size()), 4);
  return s;
}
constexpr size_t kGzipHeaderBytes = 10, kStoredBlockHeaderBytes = 5;

}  // namespace

// ---- reading: hand-checked results ------------------------------------------------------------

TEST(MatrixMarketRead, GeneralRealKeepsFileOrderWithinRows) {
  const std::string p = write_file("general.mtx",
                                   "%%MatrixMarket matrix coordinate real general\n"
                                   "% a comment\n"
                                   "3 4 5\n"
                                   "2 4 1.5\n"
                                   "1 3 -2\n"
                                   "2 1 0.25\n"
                                   "1 1 4e2\n"
                                   "2 4 7\n");
  sp::MmHeader h;
  const auto a = sp::read_matrix_market<int32_t, double>(p, {}, &h);
  EXPECT_EQ(h.format, sp::MmFormat::coordinate);
  EXPECT_EQ(h.field, sp::MmField::real);
  EXPECT_EQ(h.symmetry, sp::MmSymmetry::general);
  EXPECT_EQ(h.rows, 3);
  EXPECT_EQ(h.cols, 4);
  EXPECT_EQ(h.entries, 5);
  // Row 0: (1,3) then (1,1) as in the file; row 1 keeps the repeated column 3; row 2 is empty.
  expect_csr(a, 3, 4, {0, 2, 5, 5}, {2, 0, 3, 0, 3}, {-2, 400, 1.5, 0.25, 7});
}

TEST(MatrixMarketRead, SymmetricExpandsBothTrianglesDiagonalOnce) {
  const std::string p = write_file("sym.mtx",
                                   "%%MatrixMarket matrix coordinate real symmetric\n"
                                   "4 4 5\n"
                                   "1 1 1\n"
                                   "3 1 2\n"
                                   "2 2 3\n"
                                   "4 3 4\n"
                                   "4 2 5\n");
  const auto a = sp::read_matrix_market<int32_t, double>(p);
  // Full matrix: (0,0)=1 (0,2)=2 (1,1)=3 (1,3)=5 (2,0)=2 (2,3)=4 (3,1)=5 (3,2)=4, each row in the
  // order the file entries that produce it appear.
  expect_csr(a, 4, 4, {0, 2, 4, 6, 8}, {0, 2, 1, 3, 0, 3, 2, 1}, {1, 2, 3, 5, 2, 4, 4, 5});
}

TEST(MatrixMarketRead, SymmetricUpperTriangleIsMirroredToo) {
  const std::string p = write_file("sym_upper.mtx",
                                   "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                   "3 3 2\n"
                                   "1 3\n"
                                   "2 2\n");
  const auto a = sp::read_matrix_market<int32_t, float>(p);
  expect_csr(a, 3, 3, {0, 1, 2, 3}, {2, 1, 0}, {});
}

TEST(MatrixMarketRead, SkewSymmetricNegatesMirrors) {
  const std::string p = write_file("skew.mtx",
                                   "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                                   "3 3 3\n"
                                   "2 1 1.5\n"
                                   "3 1 -2\n"
                                   "3 2 4\n");
  const auto a = sp::read_matrix_market<int64_t, double>(p);
  // A = [0 -1.5 2; 1.5 0 -4; -2 4 0].
  expect_csr(a, 3, 3, {0, 2, 4, 6}, {1, 2, 0, 2, 0, 1}, {-1.5, 2, 1.5, -4, -2, 4});
  const auto d = sp::read_matrix_market_dense<double>(p);
  const double want[3][3] = {{0, -1.5, 2}, {1.5, 0, -4}, {-2, 4, 0}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(d(i, j), want[i][j]) << i << "," << j;
}

TEST(MatrixMarketRead, IntegerAndPatternFields) {
  const std::string pi = write_file("int.mtx",
                                    "%%MatrixMarket matrix coordinate integer general\n"
                                    "2 2 2\n"
                                    "1 2 -7\n"
                                    "2 1 +12\n");
  expect_csr(sp::read_matrix_market<int32_t, float>(pi), 2, 2, {0, 1, 2}, {1, 0}, {-7, 12});
  const std::string pp = write_file("pattern.mtx",
                                    "%%MatrixMarket matrix coordinate pattern general\n"
                                    "2 3 2\n"
                                    "2 3\n"
                                    "1 1\n");
  const auto a = sp::read_matrix_market<int32_t, float>(pp);
  EXPECT_TRUE(a.is_pattern());
  expect_csr(a, 2, 3, {0, 1, 2}, {0, 2}, {});
}

TEST(MatrixMarketRead, ArrayFilesKeepTheirNonzerosInRowMajorOrder) {
  // Column-major 2x3: [1 0 3; 0 2.5 -4].
  const std::string p = write_file("array.mtx",
                                   "%%MatrixMarket matrix array real general\n"
                                   "2 3\n"
                                   "1\n0\n0\n2.5\n3\n-4\n");
  sp::MmHeader h;
  expect_csr(sp::read_matrix_market<int32_t, double>(p, {}, &h), 2, 3, {0, 2, 4}, {0, 2, 1, 2}, {1, 3, 2.5, -4});
  EXPECT_EQ(h.format, sp::MmFormat::array);
  EXPECT_EQ(h.entries, 6);
  const auto d = sp::read_matrix_market_dense<float>(p);
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.cols, 3);
  EXPECT_EQ(d.ld, 3);
  EXPECT_EQ(d.data, (std::vector<float>{1, 0, 3, 0, 2.5f, -4}));
}

TEST(MatrixMarketRead, SymmetricAndSkewArrays) {
  // Lower triangle by columns: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3).
  const std::string ps = write_file("array_sym.mtx",
                                    "%%MatrixMarket matrix array real symmetric\n"
                                    "3 3\n"
                                    "1\n2\n0\n4\n5\n6\n");
  EXPECT_EQ(sp::read_matrix_market_header(ps).entries, 6);
  const auto d = sp::read_matrix_market_dense<double>(ps);
  EXPECT_EQ(d.data, (std::vector<double>{1, 2, 0, 2, 4, 5, 0, 5, 6}));
  expect_csr(sp::read_matrix_market<int32_t, double>(ps), 3, 3, {0, 2, 5, 7}, {0, 1, 0, 1, 2, 1, 2},
             {1, 2, 2, 4, 5, 5, 6});
  // Strictly lower triangle by columns: (2,1) (3,1) (3,2).
  const std::string pk = write_file("array_skew.mtx",
                                    "%%MatrixMarket matrix array integer skew-symmetric\n"
                                    "3 3\n"
                                    "1\n2\n3\n");
  EXPECT_EQ(sp::read_matrix_market_header(pk).entries, 3);
  EXPECT_EQ(sp::read_matrix_market_dense<double>(pk).data, (std::vector<double>{0, -1, -2, 1, 0, -3, 2, 3, 0}));
}

TEST(MatrixMarketRead, DenseFromCoordinateAddsDuplicatesAndExpandsSymmetry) {
  const std::string p = write_file("dense_coord.mtx",
                                   "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                   "2 2 3\n"
                                   "2 1\n"
                                   "2 1\n"
                                   "1 1\n");
  EXPECT_EQ(sp::read_matrix_market_dense<float>(p).data, (std::vector<float>{1, 2, 2, 0}));
}

TEST(MatrixMarketRead, LenientAboutBlanksCommentsCrlfCaseAndPlusSigns) {
  const std::string p = write_file("lenient.mtx",
                                   "%%MatrixMarket MATRIX Coordinate REAL General  \r\n"
                                   "%\r\n"
                                   "\r\n"
                                   "   \t\n"
                                   "2 2 3\r\n"
                                   "1 1 +1.5 \r\n"
                                   "\n"
                                   "% comment between entries\n"
                                   "  2\t2   -.5e1\r\n"
                                   "1 2 3.\n"
                                   "\n"
                                   "% trailing comment\n"
                                   "   ");
  expect_csr(sp::read_matrix_market<int32_t, double>(p), 2, 2, {0, 2, 3}, {0, 1, 1}, {1.5, 3, -5});
}

TEST(MatrixMarketRead, LastLineWithoutLineEnd) {
  const std::string p = write_file("no_final_newline.mtx",
                                   "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2.5");
  expect_csr(sp::read_matrix_market<int32_t, double>(p), 1, 1, {0, 1}, {0}, {2.5});
}

TEST(MatrixMarketRead, EmptyMatrices) {
  expect_csr(sp::read_matrix_market<int32_t, double>(
                 write_file("empty0.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n")),
             0, 0, {0}, {}, {});
  expect_csr(sp::read_matrix_market<int64_t, float>(
                 write_file("empty3.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 2 0\n")),
             3, 2, {0, 0, 0, 0}, {}, {});
}

TEST(MatrixMarketRead, ValuesBeyondTheTypeRangeSaturate) {
  const std::string p = write_file("huge_values.mtx",
                                   "%%MatrixMarket matrix coordinate real general\n"
                                   "1 4 4\n1 1 1e400\n1 2 -1e400\n1 3 1e39\n1 4 1e-400\n");
  const auto d = sp::read_matrix_market<int32_t, double>(p);
  EXPECT_EQ(d.values[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.values[1], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.values[2], 1e39);
  EXPECT_EQ(d.values[3], 0.0);
  const auto f = sp::read_matrix_market<int32_t, float>(p);
  EXPECT_EQ(f.values[2], std::numeric_limits<float>::infinity());
}

TEST(MatrixMarketRead, GzipIsRecognisedByContentNotByName) {
  const std::string text = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 3\n2 1 -1\n";
  const auto plain_named_gz = sp::read_matrix_market<int32_t, double>(write_file("plain.mtx.gz", text));
  const auto gz_named_plain = sp::read_matrix_market<int32_t, double>(write_file("gz.mtx", gzip_stored(text, 7)));
  expect_csr(plain_named_gz, 2, 2, {0, 1, 2}, {1, 0}, {3, -1});
  expect_csr(gz_named_plain, 2, 2, {0, 1, 2}, {1, 0}, {3, -1});
}

TEST(MatrixMarketRead, HeaderOnly) {
  const std::string p = write_file("header.mtx",
                                   "%%MatrixMarket matrix coordinate integer skew-symmetric\n% c\n5 5 7\nthis is never read\n");
  const sp::MmHeader h = sp::read_matrix_market_header(p);
  EXPECT_EQ(h.format, sp::MmFormat::coordinate);
  EXPECT_EQ(h.field, sp::MmField::integer);
  EXPECT_EQ(h.symmetry, sp::MmSymmetry::skew_symmetric);
  EXPECT_EQ(h.rows, 5);
  EXPECT_EQ(h.cols, 5);
  EXPECT_EQ(h.entries, 7);
}

TEST(MatrixMarketRead, DimensionsBeyondInt32AreInvalidArgumentNotParseError) {
  const std::string p = write_file("wide.mtx",
                                   "%%MatrixMarket matrix coordinate pattern general\n2 3000000000 1\n2 2999999999\n");
  const std::string msg = message_of<sp::InvalidArgument>([&] { sp::read_matrix_market<int32_t, float>(p); });
  EXPECT_TRUE(contains(msg, "3000000000")) << msg;
  EXPECT_TRUE(contains(msg, "int64_t")) << msg;
  try {
    sp::read_matrix_market<int32_t, float>(p);
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const sp::ParseError& e) {
    ADD_FAILURE() << "a well-formed file is not a ParseError: " << e.what();
  } catch (const sp::InvalidArgument&) {
  }
  const auto a = sp::read_matrix_market<int64_t, float>(p);
  expect_csr(a, 2, 3000000000, {0, 0, 1}, {2999999998}, {});
}

TEST(MatrixMarketRead, MissingFileAndDirectoryNameTheFile) {
  const std::string missing = (temp_dir() / "does-not-exist.mtx").string();
  try {
    sp::read_matrix_market<int32_t, float>(missing);
    ADD_FAILURE() << "expected ParseError";
  } catch (const sp::ParseError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_EQ(e.line(), 0);
    EXPECT_TRUE(contains(e.what(), "cannot open")) << e.what();
  }
  const std::string msg = message_of<sp::ParseError>([] { sp::read_matrix_market_header(temp_dir().string()); });
  EXPECT_TRUE(contains(msg, "directory")) << msg;
}

TEST(MatrixMarketRead, ProgressRisesToOneOverSeveralChunks) {
  // About 14 MB of text: more than one 8 MiB chunk.
  std::string text = "%%MatrixMarket matrix coordinate real general\n1000 1000 1000000\n";
  for (int k = 0; k < 1000000; ++k) text += std::to_string(k % 1000 + 1) + " " + std::to_string(k / 1000 + 1) + " 0.5\n";
  const std::string p = write_file("progress.mtx", text);
  std::vector<double> seen;
  sp::MmReadOptions opt;
  opt.progress = [&](double f) { seen.push_back(f); };
  const auto a = sp::read_matrix_market<int32_t, float>(p, opt);
  EXPECT_EQ(a.nnz(), 1000000);
  ASSERT_GE(seen.size(), 3u);
  for (size_t k = 1; k < seen.size(); ++k) EXPECT_LE(seen[k - 1], seen[k]) << k;
  EXPECT_GT(seen.front(), 0.0);
  EXPECT_LT(seen.front(), 1.0);
  EXPECT_EQ(seen.back(), 1.0);
}

// ---- options ----------------------------------------------------------------------------------

namespace {
const char* const kOptionsFile =
    "%%MatrixMarket matrix coordinate real general\n"
    "3 3 6\n"
    "1 2 1\n"
    "2 2 2\n"
    "1 1 3\n"
    "1 2 4\n"
    "3 1 5\n"
    "2 1 6\n";
}  // namespace

TEST(MatrixMarketOptions, NoneKeepsFileOrderAndDuplicates) {
  const std::string p = write_file("opt_none.mtx", kOptionsFile);
  expect_csr(sp::read_matrix_market<int32_t, double>(p), 3, 3, {0, 3, 5, 6}, {1, 0, 1, 1, 0, 0}, {1, 3, 4, 2, 6, 5});
}

TEST(MatrixMarketOptions, DropSelfLoops) {
  const std::string p = write_file("opt_drop.mtx", kOptionsFile);
  sp::MmReadOptions opt;
  opt.drop_self_loops = true;
  expect_csr(sp::read_matrix_market<int32_t, double>(p, opt), 3, 3, {0, 2, 3, 4}, {1, 1, 0, 0}, {1, 4, 6, 5});
  // On a symmetric file the diagonal goes and both triangles stay.
  const std::string ps = write_file("opt_drop_sym.mtx",
                                    "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n1 1\n2 1\n");
  expect_csr(sp::read_matrix_market<int32_t, double>(ps, opt), 2, 2, {0, 1, 2}, {1, 0}, {});
}

TEST(MatrixMarketOptions, SortAndMergeAddsDuplicates) {
  const std::string p = write_file("opt_merge.mtx", kOptionsFile);
  sp::MmReadOptions opt;
  opt.sort_and_merge = true;
  expect_csr(sp::read_matrix_market<int32_t, double>(p, opt), 3, 3, {0, 2, 4, 5}, {0, 1, 0, 1, 0}, {3, 5, 6, 2, 5});
  // A pattern keeps one entry per position.
  const std::string pp = write_file("opt_merge_pattern.mtx",
                                    "%%MatrixMarket matrix coordinate pattern general\n2 3 4\n1 3\n1 1\n1 3\n2 2\n");
  expect_csr(sp::read_matrix_market<int32_t, float>(pp, opt), 2, 3, {0, 2, 3}, {0, 2, 1}, {});
}

TEST(MatrixMarketOptions, SymmetrizeAddsMissingMirrorsAfterEachRow) {
  const std::string p = write_file("opt_symm.mtx", kOptionsFile);
  sp::MmReadOptions opt;
  opt.symmetrize = true;
  // A's entries (file order), then the mirrors A lacks: only (0,2) = 5, from (2,0); (0,1) and (1,0)
  // are both in A already, and diagonal entries are their own mirrors.
  expect_csr(sp::read_matrix_market<int32_t, double>(p, opt), 3, 3, {0, 4, 6, 7}, {1, 0, 1, 2, 1, 0, 0},
             {1, 3, 4, 5, 2, 6, 5});
  const std::string pd = write_file("opt_symm_directed.mtx",
                                    "%%MatrixMarket matrix coordinate pattern general\n4 4 3\n2 1\n3 1\n1 4\n");
  expect_csr(sp::read_matrix_market<int32_t, float>(pd, opt), 4, 4, {0, 3, 4, 5, 6}, {3, 1, 2, 0, 0, 0}, {});
  opt.sort_and_merge = true;
  expect_csr(sp::read_matrix_market<int32_t, double>(p, opt), 3, 3, {0, 3, 5, 6}, {0, 1, 2, 0, 1, 0},
             {3, 5, 5, 6, 2, 5});
  expect_csr(sp::read_matrix_market<int32_t, float>(pd, opt), 4, 4, {0, 3, 4, 5, 6}, {1, 2, 3, 0, 0, 0}, {});
}

TEST(MatrixMarketOptions, SymmetrizeNeedsASquareMatrixAndLeavesSymmetricFilesAsRead) {
  sp::MmReadOptions opt;
  opt.symmetrize = true;
  const std::string p = write_file("opt_symm_rect.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 3 1\n1 3\n");
  const std::string msg = message_of<sp::InvalidArgument>([&] { sp::read_matrix_market<int32_t, float>(p, opt); });
  EXPECT_TRUE(contains(msg, "2x3")) << msg;
  const std::string ps = write_file("opt_symm_sym.mtx",
                                    "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n");
  expect_csr(sp::read_matrix_market<int32_t, double>(ps, opt), 2, 2, {0, 1, 2}, {1, 0}, {-3, 3});
}

TEST(MatrixMarketOptions, KeepValuesFalseReturnsAPatternButStillChecksValues) {
  sp::MmReadOptions opt;
  opt.keep_values = false;
  const auto a = sp::read_matrix_market<int32_t, double>(write_file("opt_novalues.mtx", kOptionsFile), opt);
  EXPECT_TRUE(a.is_pattern());
  expect_csr(a, 3, 3, {0, 3, 5, 6}, {1, 0, 1, 1, 0, 0}, {});
  const std::string bad = write_file("opt_novalues_bad.mtx",
                                     "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 one\n");
  const std::string msg = message_of<sp::ParseError>([&] { sp::read_matrix_market<int32_t, double>(bad, opt); });
  EXPECT_TRUE(contains(msg, ":3: value 'one' is not a number")) << msg;
}

// ---- writing: round trips ---------------------------------------------------------------------

template <class T>
class MatrixMarketRoundTrip : public ::testing::Test {};
template <class I, class V>
struct Types {
  using index_type = I;
  using value_type = V;
};
using AllTypes = ::testing::Types<Types<int32_t, float>, Types<int32_t, double>, Types<int64_t, float>,
                                  Types<int64_t, double>>;
TYPED_TEST_SUITE(MatrixMarketRoundTrip, AllTypes);

TYPED_TEST(MatrixMarketRoundTrip, GeneralRealPlainAndGzip) {
  using I = typename TypeParam::index_type;
  using V = typename TypeParam::value_type;
  constexpr uint64_t kSeed = 20261122;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  const auto a = random_csr<I, V>(57, 43, 9, kSeed);
  for (const char* name : {"rt_general.mtx", "rt_general.mtx.gz"}) {
    const std::string p = (temp_dir() / name).string();
    sp::write_matrix_market(p, a);
    const std::string bytes = read_bytes(p);
    const bool gz = bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f && static_cast<uint8_t>(bytes[1]) == 0x8b;
    EXPECT_EQ(gz, std::string(name).ends_with(".gz")) << name;
    sp::MmHeader h;
    expect_same(sp::read_matrix_market<I, V>(p, {}, &h), a);
    EXPECT_EQ(h.field, sp::MmField::real);
    EXPECT_EQ(h.symmetry, sp::MmSymmetry::general);
    EXPECT_EQ(h.entries, a.nnz());
  }
}

TYPED_TEST(MatrixMarketRoundTrip, PatternAndInteger) {
  using I = typename TypeParam::index_type;
  using V = typename TypeParam::value_type;
  const auto pattern = random_csr<I, V>(31, 64, 6, 7, false);
  const std::string pp = (temp_dir() / "rt_pattern.mtx").string();
  sp::write_matrix_market(pp, pattern);
  EXPECT_EQ(sp::read_matrix_market_header(pp).field, sp::MmField::pattern);
  expect_same(sp::read_matrix_market<I, V>(pp), pattern);

  auto ints = random_csr<I, V>(20, 20, 5, 8);
  // + 0 turns -0 into 0: an integer file has no negative zero.
  for (V& v : ints.values) v = std::round(std::isfinite(v) ? std::fmod(v, V(1000)) * V(100) : V(-3)) + V(0);
  const std::string pi = (temp_dir() / "rt_integer.mtx.gz").string();
  sp::MmWriteOptions opt;
  opt.field = sp::MmField::integer;
  sp::write_matrix_market(pi, ints, opt);
  EXPECT_EQ(sp::read_matrix_market_header(pi).field, sp::MmField::integer);
  expect_same(sp::read_matrix_market<I, V>(pi), ints);
}

TYPED_TEST(MatrixMarketRoundTrip, SymmetricAndSkewStoreOneTriangle) {
  using I = typename TypeParam::index_type;
  using V = typename TypeParam::value_type;
  constexpr uint64_t kSeed = 99;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  constexpr int64_t n = 40;
  for (const sp::MmSymmetry sym : {sp::MmSymmetry::symmetric, sp::MmSymmetry::skew_symmetric}) {
    const bool skew = sym == sp::MmSymmetry::skew_symmetric;
    // B(i,j) = v and B(j,i) = v (skew: -v) for random pairs i >= j (skew: i > j).
    std::mt19937_64 g(kSeed);
    std::map<std::pair<int64_t, int64_t>, V> b_map;
    for (int k = 0; k < 150; ++k) {
      const int64_t i = static_cast<int64_t>(g() % n), j = static_cast<int64_t>(g() % n);
      if (j > i || (skew && i == j)) continue;
      const V v = static_cast<V>(static_cast<double>(g() >> 11) * 0x1.0p-53 - 0.5);
      b_map[{i, j}] = v;
      b_map[{j, i}] = skew ? -v : v;
    }
    sp::HostCsr<I, V> b;
    b.rows = b.cols = n;
    b.rowptr.assign(n + 1, 0);
    int64_t lower = 0;
    for (const auto& [ij, v] : b_map) {
      ++b.rowptr[ij.first + 1];
      b.colind.push_back(static_cast<I>(ij.second));
      b.values.push_back(v);
      lower += ij.second <= ij.first;
    }
    for (int64_t i = 0; i < n; ++i) b.rowptr[i + 1] += b.rowptr[i];
    const std::string p = (temp_dir() / (skew ? "rt_skew.mtx" : "rt_sym.mtx")).string();
    sp::MmWriteOptions opt;
    opt.symmetry = sym;
    sp::write_matrix_market(p, b, opt);
    const sp::MmHeader h = sp::read_matrix_market_header(p);
    EXPECT_EQ(h.symmetry, sym);
    EXPECT_EQ(h.entries, lower);
    sp::MmReadOptions ropt;
    ropt.sort_and_merge = true;
    expect_same(sp::read_matrix_market<I, V>(p, ropt), b);
  }
}

TYPED_TEST(MatrixMarketRoundTrip, SymmetricPatternAndDense) {
  using I = typename TypeParam::index_type;
  using V = typename TypeParam::value_type;
  // A path graph 0-1-2-3 plus a self loop at 2, sorted.
  sp::HostCsr<I, V> a;
  a.rows = a.cols = 4;
  a.rowptr = {0, 1, 3, 6, 7};
  a.colind = {1, 0, 2, 1, 2, 3, 2};
  const std::string p = (temp_dir() / "rt_sym_pattern.mtx.gz").string();
  sp::MmWriteOptions opt;
  opt.symmetry = sp::MmSymmetry::symmetric;
  sp::write_matrix_market(p, a, opt);
  EXPECT_EQ(sp::read_matrix_market_header(p).entries, 4);  // (2,1) (3,2) (3,3) (4,3)
  sp::MmReadOptions ropt;
  ropt.sort_and_merge = true;
  expect_same(sp::read_matrix_market<I, V>(p, ropt), a);

  sp::HostDense<V> d(5, 3);
  std::mt19937_64 g(5);
  for (V& x : d.data) x = static_cast<V>(static_cast<double>(g() >> 11) * 0x1.0p-53 - 0.5);
  d(0, 0) = std::numeric_limits<V>::denorm_min();
  d(4, 2) = -std::numeric_limits<V>::max();
  for (const char* name : {"rt_dense.mtx", "rt_dense.mtx.gz"}) {
    const std::string pd = (temp_dir() / name).string();
    sp::write_matrix_market_dense(pd, d);
    const sp::MmHeader h = sp::read_matrix_market_header(pd);
    EXPECT_EQ(h.format, sp::MmFormat::array);
    EXPECT_EQ(h.entries, 15);
    const auto back = sp::read_matrix_market_dense<V>(pd);
    EXPECT_EQ(back.rows, 5);
    EXPECT_EQ(back.cols, 3);
    ASSERT_EQ(back.data.size(), d.data.size());
    for (size_t k = 0; k < d.data.size(); ++k) EXPECT_TRUE(same_value(back.data[k], d.data[k])) << k;
  }
  // A padded leading dimension is not written.
  sp::HostDense<V> padded(2, 2, 5, V(9));
  padded(0, 0) = 1;
  padded(1, 1) = 4;
  const std::string pp = (temp_dir() / "rt_dense_ld.mtx").string();
  sp::write_matrix_market_dense(pp, padded);
  EXPECT_EQ(sp::read_matrix_market_dense<V>(pp).data, (std::vector<V>{1, 9, 9, 4}));
}

TEST(MatrixMarketWrite, RefusesWhatItCannotWriteFaithfully) {
  sp::HostCsr<int32_t, double> a;
  a.rows = a.cols = 2;
  a.rowptr = {0, 1, 2};
  a.colind = {1, 0};
  a.values = {1.0, 2.0};
  const std::string p = (temp_dir() / "refused.mtx").string();
  sp::MmWriteOptions sym;
  sym.symmetry = sp::MmSymmetry::symmetric;
  std::string msg = message_of<sp::InvalidArgument>([&] { sp::write_matrix_market(p, a, sym); });
  EXPECT_TRUE(contains(msg, "not symmetric")) << msg;
  EXPECT_TRUE(contains(msg, "A(2,1) = 2")) << msg;
  EXPECT_FALSE(fs::exists(p)) << "nothing is written for a refused matrix";

  a.values = {1.5, 1.5};
  sp::MmWriteOptions integer;
  integer.field = sp::MmField::integer;
  msg = message_of<sp::InvalidArgument>([&] { sp::write_matrix_market(p, a, integer); });
  EXPECT_TRUE(contains(msg, "A(1,2) = 1.5")) << msg;

  a.colind = {1};  // rowptr says 2 entries
  msg = message_of<sp::InvalidArgument>([&] { sp::write_matrix_market(p, a); });
  EXPECT_TRUE(contains(msg, "rowptr")) << msg;

  a.colind = {1, 0};
  a.values = {1, 1};
  msg = message_of<sp::Error>([&] { sp::write_matrix_market((temp_dir() / "no-such-dir" / "x.mtx").string(), a); });
  EXPECT_TRUE(contains(msg, "cannot open")) << msg;

  sp::HostCsr<int32_t, double> upper_only;
  upper_only.rows = upper_only.cols = 3;
  upper_only.rowptr = {0, 1, 1, 1};
  upper_only.colind = {2};
  upper_only.values = {5};
  sp::MmWriteOptions skew;
  skew.symmetry = sp::MmSymmetry::skew_symmetric;
  msg = message_of<sp::InvalidArgument>([&] { sp::write_matrix_market(p, upper_only, skew); });
  EXPECT_TRUE(contains(msg, "A(1,3) is stored but A(3,1) is not")) << msg;
}

// ---- malformed input --------------------------------------------------------------------------

namespace {

struct Malformed {
  const char* name;
  std::string content;
  int64_t line;
  std::string expect;   // a part of the message
  bool header = false;  // the header reader refuses it too
};

std::string junk_bytes() {
  std::mt19937 g(12345);
  std::string s(4096, '\0');
  for (char& ch : s) ch = static_cast<char>(g() & 0xff);
  s[0] = '\x7f';  // neither '%' nor the gzip magic
  return s;
}

// A stored-block gzip of a valid file, cut in the middle of line 5 ("2 2 2.5" is cut after "2 2").
std::string truncated_gzip() {
  const std::string text = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n% note\n2 2 2.5\n3 3 3\n";
  const size_t cut = text.find("2 2 2.5") + 3;
  return gzip_stored(text).substr(0, kGzipHeaderBytes + kStoredBlockHeaderBytes + cut);
}

// The first stored block's NLEN is not the complement of LEN: no data can be trusted.
std::string corrupt_gzip() {
  std::string s = gzip_stored("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n");
  s[kGzipHeaderBytes + 3] ^= 0x01;
  return s;
}

const char* const kBanner = "%%MatrixMarket matrix coordinate real general\n";

std::vector<Malformed> malformed_cases() {
  const std::string b = kBanner;
  return {
      {"EmptyFile", "", 1, "the file is empty", true},
      {"BadBanner", "%%MatrixMarkt matrix coordinate real general\n1 1 0\n", 1, "not a Matrix Market banner", true},
      {"BlankFirstLine", "\n" + b + "1 1 0\n", 1, "not a Matrix Market banner", true},
      {"BannerMissingAWord", "%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "has 3 words", true},
      {"BannerObjectVector", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "only 'matrix'", true},
      {"ComplexField", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1,
       "field 'complex' is not supported", true},
      {"HermitianSymmetry", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1,
       "symmetry 'hermitian' is not supported", true},
      {"UnknownFormat", "%%MatrixMarket matrix sparse real general\n1 1 0\n", 1, "unknown format 'sparse'", true},
      {"UnknownField", "%%MatrixMarket matrix coordinate double general\n1 1 0\n", 1, "unknown field 'double'", true},
      {"ArrayPattern", "%%MatrixMarket matrix array pattern general\n1 1\n", 1, "array file cannot have field 'pattern'",
       true},
      {"SkewPattern", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 0\n", 1,
       "skew-symmetric file cannot have field 'pattern'", true},
      {"NoSizeLine", b + "% only\n% comments\n", 4, "ends before the size line", true},
      {"SizeLineTwoNumbers", b + "% c\n3 3\n", 3, "size line has 2 numbers but a coordinate file needs 3", true},
      {"SizeLineNotANumber", b + "3 x 2\n", 2, "'x' is not one", true},
      {"SizeLineNegative", b + "3 -3 2\n", 2, "'-3' is not one", true},
      {"SizeLineHuge", b + "99999999999999999999 2 1\n", 2, "is too large", true},
      {"ArraySizeLineThreeNumbers", "%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n", 2,
       "size line has 3 numbers but an array file needs 2", true},
      {"SymmetricNotSquare", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n", 2,
       "must be square, but the size line gives 3x4", true},
      {"FewerEntries", b + "3 3 3\n1 1 1.0\n2 2 2.0\n", 5, "ends after 2 of the 3 entries"},
      {"MoreEntries", b + "3 3 1\n1 1 1\n\n2 2 2\n", 5, "announces 1 entries, but the file goes on"},
      {"LineCountedThroughBlanksAndComments", b + "% c\n3 3 2\n\n1 1 1\n% c\r\n \t\n\n9 1 1\n", 9,
       "row index 9 is out of range 1..3"},
      {"RowIndexZero", b + "3 3 2\n1 1 1\n0 2 1\n", 4, "row index 0 is out of range 1..3"},
      {"ColumnIndexTooLarge", b + "3 3 1\n1 4 1\n", 3, "column index 4 is out of range 1..3"},
      {"IndexNotWhole", b + "3 3 1\n1.5 2 1\n", 3, "row index '1.5' is not a whole number"},
      {"IndexNotANumber", b + "3 3 1\n2 abc 1\n", 3, "column index 'abc' is not a number"},
      {"IndexNegative", b + "3 3 1\n-2 1 1\n", 3, "row index -2 is out of range"},
      {"ValueNotANumber", b + "3 3 1\n1 1 x1\n", 3, "value 'x1' is not a number"},
      {"ValueMissing", b + "3 3 1\n1 2\n", 3, "has 2 fields but a coordinate real file needs 3"},
      {"ExtraField", b + "3 3 1\n1 2 1.0 7\n", 3, "has 4 fields but a coordinate real file needs 3"},
      {"PatternWithValue", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 3.0\n", 3,
       "a pattern file has no values"},
      {"IntegerFieldFraction", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 2.5\n", 3,
       "value '2.5' is not a whole number"},
      {"SkewDiagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4,
       "stores no diagonal entries"},
      {"TruncatedText", b + "3 3 3\n1 1 1\n2 2 2\n3", 5, "has 1 field but a coordinate real file needs 3"},
      {"ArrayTooFewValues", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 6,
       "ends after 3 of the 4 values"},
      {"ArrayTwoValuesOnALine", "%%MatrixMarket matrix array real general\n2 1\n1 2\n", 3, "one value per line"},
      {"NulByteInEntry", b + "2 2 1\n1 \0 1\n"s, 3, "column index '\\x00' is not a number"},
      {"BinaryJunk", junk_bytes(), 1, "not a Matrix Market banner", true},
      {"TruncatedGzip", truncated_gzip(), 5, "gzip data ends early"},
      {"CorruptGzip", corrupt_gzip(), 1, "gzip data is corrupt", true},
  };
}

// gtest prints the case by name, not as bytes.
void PrintTo(const Malformed& c, std::ostream* os) { *os << c.name; }

class MatrixMarketMalformed : public ::testing::TestWithParam<Malformed> {};

void expect_parse_error(const std::string& path, const Malformed& c, const std::function<void()>& read) {
  try {
    read();
    ADD_FAILURE() << c.name << ": expected a ParseError";
  } catch (const sp::ParseError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_TRUE(contains(e.what(), c.expect)) << "message: " << e.what() << "\nexpected to contain: " << c.expect;
    EXPECT_TRUE(std::string(e.what()).starts_with(path + ":" + std::to_string(c.line) + ": ")) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << ": expected a ParseError, got: " << e.what();
  }
}

}  // namespace

TEST_P(MatrixMarketMalformed, IsRefusedWithFileLineAndReason) {
  const Malformed& c = GetParam();
  const std::string p = write_file(std::string("bad_") + c.name + ".mtx", c.content);
  expect_parse_error(p, c, [&] { sp::read_matrix_market<int32_t, float>(p); });
  expect_parse_error(p, c, [&] { sp::read_matrix_market<int64_t, double>(p); });
  expect_parse_error(p, c, [&] { sp::read_matrix_market_dense<double>(p); });
  if (c.header) expect_parse_error(p, c, [&] { sp::read_matrix_market_header(p); });
}

INSTANTIATE_TEST_SUITE_P(Files, MatrixMarketMalformed, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<Malformed>& c) { return std::string(c.param.name); });

TEST(MatrixMarketMalformedMore, CompressedGzipCutInHalfOrWithABadChecksum) {
  // Real deflate data: where the data stops depends on zlib's blocks, so only the reason is checked.
  std::string text = "%%MatrixMarket matrix coordinate real general\n100 100 5000\n";
  for (int k = 0; k < 5000; ++k) text += std::to_string(k % 100 + 1) + " " + std::to_string(k / 50 + 1) + " 1.25\n";
  const std::string whole = write_file("whole.mtx", text);
  const auto a = sp::read_matrix_market<int32_t, float>(whole);
  const std::string gz = (temp_dir() / "whole.mtx.gz").string();
  sp::write_matrix_market(gz, a);
  const std::string bytes = read_bytes(gz);
  ASSERT_GT(bytes.size(), 100u);
  const std::string cut = write_file("half.mtx.gz", bytes.substr(0, bytes.size() / 2));
  try {
    sp::read_matrix_market<int32_t, float>(cut);
    ADD_FAILURE() << "expected a ParseError";
  } catch (const sp::ParseError& e) {
    EXPECT_TRUE(contains(e.what(), "gzip data ends early")) << e.what();
    EXPECT_GT(e.line(), 2) << e.what();
    EXPECT_LE(e.line(), 5002) << e.what();
  }
  std::string bad_crc = bytes;
  bad_crc[bad_crc.size() - 8] ^= 0x55;
  const std::string pc = write_file("bad_crc.mtx.gz", bad_crc);
  const std::string msg = message_of<sp::ParseError>([&] { sp::read_matrix_market<int32_t, float>(pc); });
  EXPECT_TRUE(contains(msg, "incorrect data check")) << msg;
}

TEST(MatrixMarketMalformedMore, HugeLineIsRefusedNotBufferedForever) {
  // 65 MiB without a line end after a plausible banner start.
  std::string s = "%%MatrixMarket";
  s.append(size_t{65} << 20, 'x');
  const std::string p = write_file("huge_line.mtx", s);
  s.clear();
  s.shrink_to_fit();
  const std::string msg = message_of<sp::ParseError>([&] { sp::read_matrix_market_header(p); });
  EXPECT_TRUE(contains(msg, ":1: the line is longer than 64 MiB")) << msg;
  fs::remove(p);
}

TEST(MatrixMarketMalformedMore, RandomCorruptionsGiveACsrOrAnErrorNeverACrash) {
  // Valid files with random bytes replaced, inserted or cut off; each read must end in a
  // well-formed CSR or a ParseError / InvalidArgument (the sanitizer build checks the memory side).
  constexpr uint32_t kSeed = 777;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  std::mt19937 g(kSeed);
  const std::vector<std::string> bases = {
      "%%MatrixMarket matrix coordinate real general\n% c\n4 5 6\n1 1 1.5\n2 5 -2e3\n4 4 7\n\n3 1 0.25\n1 1 1\n4 2 9\n",
      "%%MatrixMarket matrix coordinate pattern symmetric\n5 5 4\n2 1\n5 5\n4 3\n5 1\n",
      "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n3 2 -6\n",
      "%%MatrixMarket matrix array real general\n2 3\n1\n0\n2.5\n-1\n0\n3\n",
      "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
  };
  const std::string alphabet = "0123456789 .-+e\n\r%\t\0x"s;
  int parsed = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string s = bases[g() % bases.size()];
    const int edits = 1 + static_cast<int>(g() % 3);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      const size_t at = g() % s.size();
      switch (g() % 4) {
        case 0: s[at] = alphabet[g() % alphabet.size()]; break;
        case 1: s.insert(at, 1, alphabet[g() % alphabet.size()]); break;
        case 2: s.erase(at, 1); break;
        default: s.resize(at); break;
      }
    }
    if (round % 5 == 0) s = gzip_stored(s, 1 + g() % 16);
    if (round % 10 == 0 && s.size() > 12) s.resize(12 + g() % (s.size() - 12));
    const std::string p = write_file("fuzz.mtx", s);
    try {
      const auto a = sp::read_matrix_market<int32_t, double>(p);
      ++parsed;
      ASSERT_EQ(a.rowptr.size(), static_cast<size_t>(a.rows) + 1);
      ASSERT_EQ(a.rowptr.front(), 0);
      ASSERT_EQ(a.rowptr.back(), a.nnz());
      ASSERT_TRUE(std::is_sorted(a.rowptr.begin(), a.rowptr.end()));
      for (const int32_t c : a.colind) ASSERT_TRUE(c >= 0 && c < a.cols) << "column " << c << " in round " << round;
      ASSERT_TRUE(a.values.empty() || a.values.size() == a.colind.size());
    } catch (const sp::InvalidArgument&) {
      ++refused;  // ParseError included
    }
  }
  // Both outcomes occur, or the corruptions were too tame (or too wild) to test anything.
  EXPECT_GT(parsed, 20);
  EXPECT_GT(refused, 100);
}
