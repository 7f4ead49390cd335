// SPDX-License-Identifier: Apache-2.0
// Regressions for what fuzzing the parsers found (tests/fuzz/README.md lists each finding; the
// minimised inputs are in tests/fuzz/regressions/): each case asserts the exact exception type
// and the part of the message that names the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "scheduler/cache.hpp"
#include "sparseport/sparseport.hpp"

namespace sp = sparseport;
namespace fs = std::filesystem;

namespace {

// Runs f and checks that it throws exactly E (not a subclass) with every one of `parts` in what().
template <class E>
void expect_exactly(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown";
  } catch (const std::exception& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << "threw " << typeid(e).name() << ": " << e.what();
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' is not in: " << e.what();
  }
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const fs::path dir = fs::temp_directory_path() / ("sparseport-test-parser-regressions-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

struct RemoveTempDir : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("sparseport-test-parser-regressions-" + std::to_string(::getpid())),
                   ec);
  }
};
const auto* const kRemoveTempDir = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

}  // namespace

// ---- validate (fuzz_validate) ----------------------------------------------------------------

// regressions/fuzz_validate/validate-unknown-index-tag: an index tag that is neither i32 nor i64
// was read as int64, past the end of a 4-byte rowptr (heap-buffer-overflow).
TEST(ParserRegressions, ValidateReportsAnUnknownIndexTag) {
  const std::vector<int32_t> rowptr{0};
  sp::CsrView a = sp::make_csr<int32_t, float>(0, 0, 0, rowptr.data(), nullptr);
  a.index_type = static_cast<sp::IndexType>(std::numeric_limits<int32_t>::min());
  sp::Validation v;
  ASSERT_NO_THROW(v = sp::validate(a));
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.message.find("unknown index type tag -2147483648"), std::string::npos) << v.message;
}

// regressions/fuzz_validate/validate-rowptr-int64-max: rowptr[i] == INT64_MAX overflowed
// `lo + 1` in the duplicate check (signed overflow, UBSan).
TEST(ParserRegressions, ValidateRowptrAtInt64Max) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> rowptr{kMax, kMax};
  const sp::Validation v = sp::validate(sp::make_csr<int64_t, float>(1, 1, 0, rowptr.data(), nullptr));
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.message.find("rowptr[0] is 9223372036854775807"), std::string::npos) << v.message;
}

// ---- generator specs (fuzz_generator_spec) ---------------------------------------------------

// regressions/fuzz_generator_spec/rmat-40-16: 2^44 draws were allocated as keys before anything
// checked the size (std::bad_alloc; ASan: allocation-size-too-big). Now refused up front.
TEST(ParserRegressions, GeneratorRefusesASpecNoMachineCanHold) {
  expect_exactly<sp::InvalidArgument>([] { (void)sp::generate<int64_t, double>("rmat:40:16"); },
                                      {"'rmat:40:16'", "more than this machine's", "of memory"});
  // N = 2^62 rows: the row pointers alone passed vector::max_size (std::length_error).
  expect_exactly<sp::InvalidArgument>([] { (void)sp::generate<int64_t, float>("er:4611686018427387904:0"); },
                                      {"4611686018427387904 rows", "of memory"});
  expect_exactly<sp::InvalidArgument>([] { (void)sp::generate<int64_t, float>("hubs:1e15:0:0:0"); },
                                      {"1000000000000000 rows", "of memory"});
  expect_exactly<sp::InvalidArgument>([] { (void)sp::load_graph<int64_t, float>("megarow:1e15:1:0"); },
                                      {"'megarow:1e15:1:0'", "of memory"});
}

// The int64 refusal said "use int64 indices" and printed the count as "13835058055282163712.000000".
TEST(ParserRegressions, GeneratorInt64OverflowMessage) {
  try {
    (void)sp::generate<int64_t, float>("band:4611686018427387904:3");
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const sp::InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("13835058055282163710 entries"), std::string::npos) << m;
    EXPECT_EQ(m.find(".000000"), std::string::npos) << m;
    EXPECT_EQ(m.find("use int64 indices"), std::string::npos) << m;
  }
}

// ---- decision cache lines (fuzz_cache_line) --------------------------------------------------

// regressions/fuzz_cache_line/value-with-nul: a string value "6\0}" counted as a bare number
// (strtod stops at the NUL), so format_record wrote {"":6<NUL>}} and the line did not parse back.
TEST(ParserRegressions, CacheLineValueWithNulRoundTrips) {
  namespace sch = sparseport::scheduler;
  using namespace std::string_literals;
  std::string error;
  const auto r = sch::parse_record("{\"\":\"6\0}\"}"s, &error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->at(""), "6\0}"s);
  const std::string text = sch::format_record(*r);
  EXPECT_EQ(text, "{\"\":\"6\\u0000}\"}");
  const auto back = sch::parse_record(text, &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, *r);
  // A bare token with a NUL in it is not a number either.
  EXPECT_FALSE(sch::parse_record("{\"a\":6\0}"s, &error).has_value());
  EXPECT_EQ(error, "bad value for 'a'");
}

// ---- Matrix Market (fuzz_matrix_market) ------------------------------------------------------

// regressions/fuzz_matrix_market/header-rows-1e12.mtx: a size line of 10^12 rows and no entries
// read fine, then allocated 10^12 row pointers (std::bad_alloc). Now refused before any entry.
TEST(ParserRegressions, MatrixMarketRowsBeyondMemory) {
  const std::string p =
      write_file("rows.mtx", "%%MatrixMarket matrix coordinate pattern general\n1000000000000000 1 0\n");
  expect_exactly<sp::InvalidArgument>([&] { (void)sp::read_matrix_market<int64_t, float>(p); },
                                      {p + " is 1000000000000000x1", "its row pointers alone need", "of memory."});
  expect_exactly<sp::InvalidArgument>([&] { (void)sp::load_graph<int64_t, double>(p); }, {"of memory."});
}

// regressions/fuzz_matrix_market/dense-array-1e10.mtx: the dense reader allocated rows x cols
// from the size line before reading a value (std::bad_alloc, or gigabytes for a 60-byte file).
TEST(ParserRegressions, MatrixMarketDenseSizeLineBeyondTheFile) {
  const std::string p = write_file("dense.mtx", "%%MatrixMarket matrix array real general\n100000 100000\n1\n");
  expect_exactly<sp::ParseError>([&] { (void)sp::read_matrix_market_dense<double>(p); },
                                 {p + ":2: ", "announces 10000000000 values", "can hold at most"});
}

TEST(ParserRegressions, MatrixMarketDenseBeyondMemory) {
  const std::string p =
      write_file("dense_coord.mtx", "%%MatrixMarket matrix coordinate real general\n100000000 100000000 0\n");
  expect_exactly<sp::InvalidArgument>([&] { (void)sp::read_matrix_market_dense<float>(p); },
                                      {p + " is 100000000x100000000", "a dense matrix needs", "of memory."});
}
