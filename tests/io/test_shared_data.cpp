// SPDX-License-Identifier: Apache-2.0
// Every matrix in the shared data folder loads and has the counts its README table gives. The
// table is read at test time, so a matrix added with its README row is tested without a change here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace sp = sparseport;
namespace fs = std::filesystem;

namespace {

const std::string kDataDir = SPARSEPORT_TEST_DATA_DIR;

bool have_data() { return !kDataDir.empty() && fs::is_directory(kDataDir) && fs::exists(fs::path(kDataDir) / "README.md"); }

struct Row {
  std::string name, file, sym, field;
  int64_t rows = -1, cols = -1, nnz_stored = -1, nnz_full = -1, max_deg = -1;
};

// gtest prints a row by its file name.
void PrintTo(const Row& r, std::ostream* os) { *os << r.file; }

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> out;
  size_t pos = line.find('|');
  while (pos != std::string::npos) {
    const size_t next = line.find('|', pos + 1);
    if (next == std::string::npos) break;
    out.push_back(trim(line.substr(pos + 1, next - pos - 1)));
    pos = next;
  }
  return out;
}

// "2,708" -> 2708; -1 when the cell is not a number.
int64_t number_of(const std::string& cell) {
  std::string digits;
  for (const char ch : cell)
    if (ch != ',') digits += ch;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return -1;
  return std::stoll(digits);
}

// The README's matrix table, found by its header row; columns are looked up by their titles.
struct Table {
  std::vector<Row> rows;
  std::string problem;  // why the table could not be read, if it could not
};

Table read_table() {
  Table t;
  if (!have_data()) return t;
  std::ifstream f(fs::path(kDataDir) / "README.md");
  std::map<std::string, size_t> col;
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("|", 0) != 0) continue;
    const std::vector<std::string> c = cells_of(line);
    if (col.empty()) {
      if (std::find(c.begin(), c.end(), "nnz full") == c.end()) continue;
      for (size_t i = 0; i < c.size(); ++i) col[c[i]] = i;
      for (const char* need : {"name (file)", "rows", "cols", "nnz stored", "nnz full", "sym?", "field", "max row deg"})
        if (!col.count(need)) {
          t.problem = std::string("the README table has no column '") + need + "'";
          return t;
        }
      continue;
    }
    if (c.empty() || c[0].find("---") != std::string::npos) continue;
    auto at = [&](const char* name) { return col.at(name) < c.size() ? c[col.at(name)] : std::string(); };
    Row r;
    const std::string nf = at("name (file)");
    const size_t a = nf.find('`'), b = nf.find('`', a + 1);
    if (a == std::string::npos || b == std::string::npos) {
      t.problem = "a README row names no `file`: " + line;
      return t;
    }
    r.file = nf.substr(a + 1, b - a - 1);
    r.name = trim(nf.substr(0, nf.find('(')));
    r.rows = number_of(at("rows"));
    r.cols = number_of(at("cols"));
    r.nnz_stored = number_of(at("nnz stored"));
    r.nnz_full = number_of(at("nnz full"));
    r.max_deg = number_of(at("max row deg"));
    r.sym = at("sym?");
    r.field = at("field");
    if (r.rows < 0 || r.cols < 0 || r.nnz_stored < 0 || r.nnz_full < 0 || r.max_deg < 0) {
      t.problem = "a README row has a count that is not a number: " + line;
      return t;
    }
    t.rows.push_back(r);
  }
  if (t.rows.empty() && t.problem.empty()) t.problem = "the README has no matrix table (no header with 'nnz full')";
  return t;
}

const Table& table() {
  static const Table t = read_table();
  return t;
}

std::string test_name(const std::string& s) {
  std::string out;
  for (const char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

const char* field_name(sp::MmField f) {
  return f == sp::MmField::real ? "real" : f == sp::MmField::integer ? "integer" : "pattern";
}

}  // namespace

TEST(SharedDataFolder, ReadmeTableIsReadable) {
  if (!have_data())
    GTEST_SKIP() << "no shared data folder (SPARSEPORT_DATA_DIR='" << kDataDir
                 << "'); the real matrices live in ../shared/data beside the repository";
  EXPECT_TRUE(table().problem.empty()) << table().problem;
  EXPECT_FALSE(table().rows.empty());
}

TEST(SharedDataFolder, EveryMatrixFileHasAReadmeRow) {
  if (!have_data())
    GTEST_SKIP() << "no shared data folder (SPARSEPORT_DATA_DIR='" << kDataDir
                 << "'); the real matrices live in ../shared/data beside the repository";
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kDataDir)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".mtx") && !name.ends_with(".mtx.gz")) continue;
    ++files;
    const bool listed = std::any_of(table().rows.begin(), table().rows.end(), [&](const Row& r) { return r.file == name; });
    EXPECT_TRUE(listed) << name << " is in " << kDataDir << " but has no row in its README table";
  }
  EXPECT_GT(files, 0) << "no .mtx or .mtx.gz file in " << kDataDir;
}

class SharedData : public ::testing::TestWithParam<Row> {};

TEST_P(SharedData, LoadsWithTheReadmeCounts) {
  const Row& r = GetParam();
  const std::string path = (fs::path(kDataDir) / r.file).string();
  ASSERT_TRUE(fs::exists(path)) << "the README lists " << r.file << " but " << path << " does not exist";
  sp::MmHeader h;
  const auto a = sp::read_matrix_market<int32_t, double>(path, {}, &h);
  EXPECT_EQ(h.rows, r.rows);
  EXPECT_EQ(h.cols, r.cols);
  EXPECT_EQ(h.entries, r.nnz_stored) << "nnz stored";
  EXPECT_EQ(a.rows, r.rows);
  EXPECT_EQ(a.cols, r.cols);
  EXPECT_EQ(a.nnz(), r.nnz_full) << "nnz full";
  int64_t max_deg = 0;
  for (int64_t i = 0; i < a.rows; ++i) max_deg = std::max<int64_t>(max_deg, a.rowptr[i + 1] - a.rowptr[i]);
  EXPECT_EQ(max_deg, r.max_deg) << "max row deg";
  EXPECT_EQ(r.sym.rfind("yes", 0) == 0, h.symmetry == sp::MmSymmetry::symmetric) << "sym? is '" << r.sym << "'";
  EXPECT_EQ(r.field, field_name(h.field));
  EXPECT_EQ(a.is_pattern(), h.field == sp::MmField::pattern);
}

// Rows come from the README when the test binary starts; none when the folder is absent (the
// SharedDataFolder tests then say why they skip).
INSTANTIATE_TEST_SUITE_P(Readme, SharedData, ::testing::ValuesIn(table().rows),
                         [](const ::testing::TestParamInfo<Row>& c) { return test_name(c.param.name); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedData);
