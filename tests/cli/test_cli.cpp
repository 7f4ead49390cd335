// SPDX-License-Identifier: Apache-2.0
// Runs the built `sparseport` program (SPARSEPORT_CLI_PATH) and checks its output and exit codes.
// Expected numbers come from the library itself (generators, plugin list) or from hand-written
// inputs, never from the program's own code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sparseport/sparseport.hpp"
#include "src/cli/variant_names.hpp"

namespace sp = sparseport;

namespace {

struct Output {
  int code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the program through the shell: stdout through the pipe, stderr into a temporary file.
Output run_cli(const std::string& args, const std::string& env = {}) {
  Output o;
  std::string err_path = testing::TempDir() + "sparseport_cli_stderr_XXXXXX";
  const int fd = ::mkstemp(err_path.data());
  if (fd < 0) {
    ADD_FAILURE() << "cannot create a temporary file for stderr";
    return o;
  }
  ::close(fd);
  const std::string cmd = env + " '" + SPARSEPORT_CLI_PATH + "' " + args + " 2>'" + err_path + "'";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed for: " << cmd;
    return o;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) o.out.append(buf, n);
  const int status = ::pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.err = read_file(err_path);
  std::remove(err_path.c_str());
  return o;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// A JSON value of a flat object: what the program's --json lines hold (arrays are kept raw).
struct JsonValue {
  enum Kind { null, boolean, number, string, raw } kind = null;
  bool b = false;
  double num = 0;
  std::string str;
};
using JsonObject = std::map<std::string, JsonValue>;

// A small strict parser written for these tests (independent of the program's writer).
class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  std::optional<JsonObject> object() {
    JsonObject obj;
    skip();
    if (!eat('{')) return std::nullopt;
    skip();
    if (eat('}')) return finish(obj);
    while (true) {
      skip();
      std::string key;
      if (!string(&key)) return std::nullopt;
      skip();
      if (!eat(':')) return std::nullopt;
      skip();
      JsonValue v;
      if (!value(&v)) return std::nullopt;
      obj[key] = v;
      skip();
      if (eat(',')) continue;
      if (eat('}')) return finish(obj);
      return std::nullopt;
    }
  }

 private:
  std::optional<JsonObject> finish(const JsonObject& obj) {
    skip();
    if (i_ != s_.size()) return std::nullopt;
    return obj;
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool literal(const char* w) {
    const std::string word(w);
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'n': *out += '\n'; break;
        case 't': *out += '\t'; break;
        case 'r': *out += '\r'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'u':
          if (i_ + 4 > s_.size()) return false;
          *out += static_cast<char>(std::stoi(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          break;
        default: return false;
      }
    }
    return false;
  }
  bool value(JsonValue* v) {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '"') return v->kind = JsonValue::string, string(&v->str);
    if (literal("true")) return v->kind = JsonValue::boolean, v->b = true, true;
    if (literal("false")) return v->kind = JsonValue::boolean, v->b = false, true;
    if (literal("null")) return v->kind = JsonValue::null, true;
    if (c == '[') {  // kept raw: balanced brackets, strings skipped
      const size_t start = i_;
      int depth = 0;
      while (i_ < s_.size()) {
        if (s_[i_] == '"') {
          std::string ignored;
          if (!string(&ignored)) return false;
          continue;
        }
        if (s_[i_] == '[' || s_[i_] == '{') ++depth;
        if (s_[i_] == ']' || s_[i_] == '}') --depth;
        ++i_;
        if (depth == 0) break;
      }
      v->kind = JsonValue::raw;
      v->str = s_.substr(start, i_ - start);
      return depth == 0;
    }
    static const std::regex number(R"(^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::smatch m;
    const std::string rest = s_.substr(i_, 64);
    if (!std::regex_search(rest, m, number)) return false;
    v->kind = JsonValue::number;
    v->num = std::stod(m.str());
    i_ += static_cast<size_t>(m.length());
    return true;
  }

  const std::string& s_;
  size_t i_ = 0;
};

std::vector<JsonObject> parse_lines(const std::string& out) {
  std::vector<JsonObject> objs;
  for (const std::string& line : lines_of(out)) {
    auto o = JsonParser(line).object();
    EXPECT_TRUE(o.has_value()) << "stdout line is not a JSON object: " << line;
    if (o) objs.push_back(*o);
  }
  return objs;
}

const JsonValue& field(const JsonObject& o, const std::string& key) {
  static const JsonValue missing{};
  const auto it = o.find(key);
  if (it == o.end()) {
    ADD_FAILURE() << "JSON line has no field '" << key << "'";
    return missing;
  }
  return it->second;
}
double num(const JsonObject& o, const std::string& key) {
  const JsonValue& v = field(o, key);
  EXPECT_EQ(v.kind, JsonValue::number) << key;
  return v.num;
}
std::string str(const JsonObject& o, const std::string& key) {
  const JsonValue& v = field(o, key);
  EXPECT_EQ(v.kind, JsonValue::string) << key;
  return v.str;
}
bool is_true(const JsonObject& o, const std::string& key) {
  const JsonValue& v = field(o, key);
  return v.kind == JsonValue::boolean && v.b;
}
bool is_null(const JsonObject& o, const std::string& key) { return field(o, key).kind == JsonValue::null; }

std::string describe(const Output& o) { return "exit " + std::to_string(o.code) + "\nstdout:\n" + o.out + "\nstderr:\n" + o.err; }

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// ---- run ---------------------------------------------------------------------------------------

TEST(CliRun, SpmmWithNoGraphPrintsOneVerifiedJsonLine) {
  const Output o = run_cli("run --op spmm --json");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);  // progress, if any, must not be on stdout
  ASSERT_EQ(rows.size(), 1u) << describe(o);
  const JsonObject& r = rows[0];
  EXPECT_TRUE(is_true(r, "verified")) << describe(o);
  EXPECT_EQ(str(r, "op"), "spmm");
  EXPECT_EQ(str(r, "graph"), "powerlaw");
  EXPECT_EQ(str(r, "variant"), "auto");

  // The default graph is the library's "powerlaw" generator.
  const auto g = sp::generate<int32_t, float>("powerlaw");
  EXPECT_EQ(num(r, "n"), static_cast<double>(g.rows));
  EXPECT_EQ(num(r, "nnz"), static_cast<double>(g.nnz()));
  const double f = num(r, "F");
  EXPECT_EQ(f, 64);

  // The documented metrics: 2*nnz*F flops and 4*F*nnz gathered bytes (fp32) over the median time.
  const double ms = num(r, "ms");
  ASSERT_GT(ms, 0);
  EXPECT_NEAR(num(r, "gflops"), 2.0 * static_cast<double>(g.nnz()) * f / (ms * 1e6), 1e-6 * num(r, "gflops"));
  EXPECT_NEAR(num(r, "gbps_gathered"), 4.0 * f * static_cast<double>(g.nnz()) / (ms * 1e6),
              1e-6 * num(r, "gbps_gathered"));
  EXPECT_LE(num(r, "ms_min"), ms);

  // Vendor fields follow the backend's plugin table.
  const std::string backend = str(r, "backend");
  const std::string vendor = sp::plugin(backend.substr(0, backend.find(':'))).vendor_variant(SPARSEPORT_OP_SPMM);
  if (vendor.empty()) {
    EXPECT_TRUE(is_null(r, "vendor_variant"));
    EXPECT_TRUE(is_null(r, "vendor_ms"));
    EXPECT_TRUE(is_null(r, "speedup_vs_vendor"));
  } else {
    EXPECT_EQ(str(r, "vendor_variant"), vendor);
    EXPECT_GT(num(r, "vendor_ms"), 0);
    EXPECT_NEAR(num(r, "speedup_vs_vendor"), num(r, "vendor_ms") / ms, 1e-6 * num(r, "speedup_vs_vendor"));
  }
}

// A test name from command-line words: letters and digits kept, every other run of characters "_".
std::string sanitized(const std::string& words) {
  std::string s;
  for (const char c : words) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      s += c;
    else if (!s.empty() && s.back() != '_')
      s += '_';
  }
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s.empty() ? "none" : s;
}

struct OpCase {
  std::string op, extra;
};
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.op << " " << c.extra; }
std::string case_name(const testing::TestParamInfo<OpCase>& info) {
  return sanitized(info.param.op + " " + info.param.extra);
}

class CliRunOp : public testing::TestWithParam<OpCase> {};

// Every op on a small generated graph (square, so the induced subgraph applies) on the reference
// backend: the program's result must match the reference in double.
TEST_P(CliRunOp, VerifiesOnReference) {
  const OpCase& c = GetParam();
  const Output o = run_cli("run --backend reference --op " + c.op + " --F 12 --reps 2 --json " + c.extra + " rmat:9:8");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u) << describe(o);
  EXPECT_TRUE(is_true(rows[0], "verified")) << describe(o);
  EXPECT_EQ(str(rows[0], "op"), c.op);
  EXPECT_EQ(str(rows[0], "backend"), "reference");
  EXPECT_EQ(num(rows[0], "nnz"), static_cast<double>(sp::generate<int32_t, float>("rmat:9:8").nnz()));
  EXPECT_GE(num(rows[0], "ms"), 0);
}

const std::vector<std::string> kAllOps = {"spmm",           "sddmm",          "segment_reduce",
                                          "scatter_reduce", "gather_scatter", "csr_attention",
                                          "csr_slice_rows", "csr_slice_rows_dense", "csr_induced_subgraph",
                                          "csr_transpose"};

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  for (const std::string& op : kAllOps) {
    cases.push_back({op, ""});
    cases.push_back({op, "--dtype f64 --index i64 --seed 7"});
    cases.push_back({op, "--dtype bf16"});
    cases.push_back({op, "--dtype f16 --index i64"});
  }
  for (const char* op : {"spmm", "segment_reduce", "scatter_reduce", "gather_scatter"})
    for (const char* r : {"mean", "max", "min"}) cases.push_back({op, std::string("--reduce ") + r});
  cases.push_back({"csr_slice_rows", "--sample 100"});
  cases.push_back({"csr_induced_subgraph", "--sample 512"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ops, CliRunOp, testing::ValuesIn(op_cases()), case_name);

TEST(CliRun, CoversEveryOpOfTheLibrary) {
  std::set<std::string> listed(kAllOps.begin(), kAllOps.end());
  for (int op = 0; op < SPARSEPORT_OP_COUNT; ++op)
    EXPECT_TRUE(listed.count(sp::op_name(static_cast<sparseport_op>(op)))) << sp::op_name(static_cast<sparseport_op>(op));
}

TEST(CliRun, VariantAllGivesOneVerifiedLinePerVariant) {
  const Output o = run_cli("run --backend reference --op spmm --variant all --reps 1 --json rmat:8:4");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<std::string> offered = sp::plugin("reference").variants_of(SPARSEPORT_OP_SPMM);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), offered.size()) << describe(o);
  std::set<std::string> seen;
  for (const JsonObject& r : rows) {
    EXPECT_TRUE(is_true(r, "verified")) << describe(o);
    seen.insert(str(r, "variant"));
  }
  EXPECT_EQ(seen, std::set<std::string>(offered.begin(), offered.end()));
}

TEST(CliRun, NamedVariantIsReportedAndVerified) {
  const std::string variant = sp::plugin("reference").variants_of(SPARSEPORT_OP_SDDMM).at(0);
  const Output o = run_cli("run --backend reference --op sddmm --variant " + variant + " --reps 1 --json band:300:6");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(str(rows[0], "variant"), variant);
  EXPECT_TRUE(is_true(rows[0], "verified"));
}

// TF32 consent: --allow-tf32 is taken by run and tune (the reference backend has no TF32 variant, so
// the run is the plain one, verified), and devices gives each variant's tf32 flag as it gives
// deterministic.
TEST(CliRun, AllowTf32IsTakenAndDevicesShowTheTf32Flag) {
  const Output o = run_cli("run --backend reference --op spmm --allow-tf32 --reps 1 --json rmat:8:4");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u) << describe(o);
  EXPECT_TRUE(is_true(rows[0], "verified")) << describe(o);
  EXPECT_NE(run_cli("run --help").out.find("--allow-tf32"), std::string::npos);
  EXPECT_NE(run_cli("tune --help").out.find("--allow-tf32"), std::string::npos);
  const Output d = run_cli("devices --json");
  ASSERT_EQ(d.code, 0) << describe(d);
  for (const sp::VariantInfo& v : sp::plugin("reference").variants)
    EXPECT_NE(d.out.find("\"name\":\"" + v.name + "\",\"default\":" + (v.is_default ? "true" : "false") +
                         ",\"vendor\":" + (v.is_vendor ? "true" : "false") + ",\"deterministic\":" +
                         (v.is_deterministic ? "true" : "false") + ",\"tf32\":" + (v.tf32 ? "true" : "false")),
              std::string::npos)
        << v.name << "\n" << d.out;
}

// The seed decides the operands: the same seed reproduces the run's error exactly, another seed
// gives other operands and so another error.
TEST(CliRun, SeedMakesOperandsReproducible) {
  const std::string base = "run --backend reference --op spmm --variant spmm.serial --reps 1 --json rmat:9:8 --seed ";
  const Output a = run_cli(base + "3"), b = run_cli(base + "3"), c = run_cli(base + "4");
  ASSERT_EQ(a.code, 0) << describe(a);
  ASSERT_EQ(b.code, 0) << describe(b);
  ASSERT_EQ(c.code, 0) << describe(c);
  const JsonObject ra = parse_lines(a.out).at(0), rb = parse_lines(b.out).at(0), rc = parse_lines(c.out).at(0);
  EXPECT_EQ(num(ra, "seed"), 3);
  EXPECT_EQ(num(ra, "err_over_tol"), num(rb, "err_over_tol"));
  EXPECT_NE(num(ra, "err_over_tol"), num(rc, "err_over_tol"));
}

TEST(CliRun, MatrixMarketFileWithValues) {
  // 4x3 general real: rows 0 and 2 hold entries, row 1 and 3 are empty; 5 entries.
  const std::string path = write_temp("cli_run_small.mtx",
                                      "%%MatrixMarket matrix coordinate real general\n"
                                      "4 3 5\n1 1 0.5\n1 3 -2\n3 1 1.25\n3 2 4\n3 3 -1\n");
  const Output o = run_cli("run --backend reference --op spmm --F 5 --reps 1 --json '" + path + "'");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(num(rows[0], "nnz"), 5);
  EXPECT_EQ(num(rows[0], "n"), 4);
  EXPECT_EQ(str(rows[0], "graph"), path);
  EXPECT_TRUE(is_true(rows[0], "verified"));
}

TEST(CliRun, HumanReadableOutputNamesTheVariantAndVerdict) {
  const Output o = run_cli("run --backend reference --op spmm --variant spmm.serial --reps 1 rmat:7:4");
  ASSERT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find("spmm.serial"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("yes"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("median ms"), std::string::npos) << o.out;
}

TEST(CliRun, UnknownBackendIsAUsageErrorNamingIt) {
  const Output o = run_cli("run --op spmm --backend nosuchbackend");
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find("nosuchbackend"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("reference"), std::string::npos) << "the message should list the known backends: " << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
}

TEST(CliRun, BackendNotCompiledIsARuntimeErrorWithTheReason) {
  for (const sp::PluginInfo& p : sp::plugins()) {
    if (p.status != sp::PluginStatus::not_compiled) continue;
    const Output o = run_cli("run --op spmm --backend " + p.name + " rmat:6:2");
    EXPECT_EQ(o.code, 1) << describe(o);
    EXPECT_NE(o.err.find(p.reason), std::string::npos) << o.err;
    return;
  }
  GTEST_SKIP() << "every known backend is compiled into this build, so none can be refused as not compiled";
}

TEST(CliRun, VariantTheBackendDoesNotOfferIsAUsageError) {
  const Output o = run_cli("run --backend reference --op spmm --variant sddmm.serial rmat:6:2");
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find("sddmm.serial"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("spmm.serial"), std::string::npos) << "the message should list what is offered: " << o.err;
}

// --variant takes a variant's short name (after "op.") where it names one offered variant; the
// result is the same variant, reported by its full name.
TEST(CliRun, ShortVariantNameRunsThatVariant) {
  const std::vector<std::string> offered = sp::plugin("reference").variants_of(SPARSEPORT_OP_SPMM);
  ASSERT_FALSE(offered.empty());
  for (const std::string& full : offered) {
    const std::string short_name = full.substr(full.find('.') + 1);
    ASSERT_NE(short_name, full);
    const Output a = run_cli("run --backend reference --op spmm --variant " + short_name + " --reps 1 --json rmat:7:4");
    const Output b = run_cli("run --backend reference --op spmm --variant " + full + " --reps 1 --json rmat:7:4");
    ASSERT_EQ(a.code, 0) << describe(a);
    ASSERT_EQ(b.code, 0) << describe(b);
    const std::vector<JsonObject> ra = parse_lines(a.out), rb = parse_lines(b.out);
    ASSERT_EQ(ra.size(), 1u) << describe(a);
    ASSERT_EQ(rb.size(), 1u) << describe(b);
    EXPECT_EQ(str(ra[0], "variant"), full);
    EXPECT_EQ(str(ra[0], "variant"), str(rb[0], "variant"));
    EXPECT_TRUE(is_true(ra[0], "verified")) << describe(a);
  }
}

TEST(CliRun, UnknownVariantNameFailsListingTheChoices) {
  const Output o = run_cli("run --backend reference --op spmm --variant no_such_variant rmat:6:2");
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find("--variant 'no_such_variant' is not a variant of spmm on reference; choose one of: "),
            std::string::npos)
      << o.err;
  for (const std::string& v : sp::plugin("reference").variants_of(SPARSEPORT_OP_SPMM))
    EXPECT_NE(o.err.find(v), std::string::npos) << "the message should list " << v << ": " << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
}

// A short name of another op's variant is not a short name of this op's.
TEST(CliRun, ShortNameOfAnotherOpsVariantIsRefused) {
  const Output o = run_cli("run --backend openmp --op sddmm --variant merge_path rmat:6:2");
  if (o.code == 1 && o.err.find("not compiled") != std::string::npos) GTEST_SKIP() << "openmp is not compiled";
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find("is not a variant of sddmm on openmp; choose one of: "), std::string::npos) << o.err;
}

// No built-in plugin has two variants of one op with the same short name, so the ambiguous case
// is checked on the resolver the program uses.
TEST(CliRun, AmbiguousShortVariantNameListsTheCandidates) {
  const std::vector<std::string> offered = {"spmm.a.rows", "spmm.b.rows", "spmm.rows_x"};
  EXPECT_EQ(sp::cli::variants_named(offered, "rows_x"), std::vector<std::string>{"spmm.rows_x"});
  EXPECT_EQ(sp::cli::variants_named(offered, "spmm.a.rows"), std::vector<std::string>{"spmm.a.rows"});
  EXPECT_EQ(sp::cli::variants_named(offered, "rows").size(), 2u);
  EXPECT_TRUE(sp::cli::variants_named(offered, "row").empty());
  const std::string msg = sp::cli::variant_choice_error(offered, "rows", "spmm", "cuda");
  EXPECT_EQ(msg,
            "--variant 'rows' is ambiguous for spmm on cuda (it could be spmm.a.rows, spmm.b.rows); "
            "choose one of: spmm.a.rows, spmm.b.rows, spmm.rows_x (or all)");
}

TEST(CliRun, SampleLargerThanTheGraphIsARuntimeError) {
  const Output o = run_cli("run --backend reference --op csr_slice_rows --sample 100000 rmat:6:2");
  EXPECT_EQ(o.code, 1) << describe(o);
  EXPECT_NE(o.err.find("100000"), std::string::npos) << o.err;
}

// ---- info --------------------------------------------------------------------------------------

TEST(CliInfo, GeneratorSpecPrintsTheGeneratorsNnz) {
  const auto g = sp::generate<int32_t, double>("band:64:4");
  const Output o = run_cli("info --json band:64:4");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(num(rows[0], "nnz"), static_cast<double>(g.nnz()));
  EXPECT_EQ(num(rows[0], "rows"), 64);
  EXPECT_EQ(num(rows[0], "cols"), 64);

  const Output text = run_cli("info band:64:4");
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_TRUE(std::regex_search(text.out, std::regex("nnz +" + std::to_string(g.nnz()) + "\n"))) << text.out;
}

TEST(CliInfo, HandWrittenSymmetricPatternFile) {
  // Stored lower triangle (1,1) (2,1) (3,2) (4,4) of a symmetric pattern; expanded:
  // row 0: {0, 1}, row 1: {0, 2}, row 2: {1}, row 3: {3} -> nnz 6, degrees 2 2 1 1, self-loops 2.
  const std::string path = write_temp("cli_info_sym.mtx",
                                      "%%MatrixMarket matrix coordinate pattern symmetric\n"
                                      "% a comment line\n"
                                      "4 4 4\n1 1\n2 1\n3 2\n4 4\n");
  const Output o = run_cli("info --json '" + path + "'");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  const JsonObject& r = rows[0];
  EXPECT_EQ(num(r, "rows"), 4);
  EXPECT_EQ(num(r, "nnz"), 6);
  EXPECT_EQ(num(r, "deg_max"), 2);
  EXPECT_DOUBLE_EQ(num(r, "deg_mean"), 1.5);
  EXPECT_EQ(num(r, "self_loops"), 2);
  EXPECT_EQ(num(r, "empty_rows"), 0);
  EXPECT_TRUE(is_true(r, "pattern_symmetric"));
  EXPECT_TRUE(is_true(r, "symmetric"));
  EXPECT_TRUE(is_true(r, "pattern"));
}

TEST(CliInfo, HandWrittenGeneralFileWithAsymmetricValues) {
  // (0,1) = 1 and (1,0) = 2: the pattern is symmetric, the values are not; row 2 is empty.
  const std::string path = write_temp("cli_info_gen.mtx",
                                      "%%MatrixMarket matrix coordinate real general\n"
                                      "3 3 2\n1 2 1.0\n2 1 2.0\n");
  const Output o = run_cli("info --json '" + path + "'");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(num(rows[0], "nnz"), 2);
  EXPECT_EQ(num(rows[0], "empty_rows"), 1);
  EXPECT_EQ(num(rows[0], "self_loops"), 0);
  EXPECT_TRUE(is_true(rows[0], "pattern_symmetric"));
  EXPECT_FALSE(is_true(rows[0], "symmetric"));
  EXPECT_FALSE(is_true(rows[0], "pattern"));
}

TEST(CliInfo, SharedDataCoraMatchesItsReadme) {
  const std::string path = std::string(SPARSEPORT_TEST_DATA_DIR) + "/cora.mtx.gz";
  if (std::string(SPARSEPORT_TEST_DATA_DIR).empty() || !std::filesystem::exists(path))
    GTEST_SKIP() << "no shared data folder with cora.mtx.gz (SPARSEPORT_DATA_DIR='" << SPARSEPORT_TEST_DATA_DIR << "')";
  const Output o = run_cli("info --json '" + path + "'");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 1u);
  // ../shared/data/README.md: 2,708 rows, 10,556 nonzeros after expanding symmetry, max degree 168.
  EXPECT_EQ(num(rows[0], "rows"), 2708);
  EXPECT_EQ(num(rows[0], "nnz"), 10556);
  EXPECT_EQ(num(rows[0], "deg_max"), 168);
  EXPECT_TRUE(is_true(rows[0], "pattern_symmetric"));
}

TEST(CliInfo, MissingFileIsARuntimeErrorNamingIt) {
  const Output o = run_cli("info /nonexistent/dir/none.mtx");
  EXPECT_EQ(o.code, 1) << describe(o);
  EXPECT_NE(o.err.find("/nonexistent/dir/none.mtx"), std::string::npos) << o.err;
}

// ---- devices -----------------------------------------------------------------------------------

TEST(CliDevices, ListsAllFourBackendsWithStatusAndVariants) {
  const Output o = run_cli("devices");
  ASSERT_EQ(o.code, 0) << describe(o);
  for (const char* token : {"reference", "openmp", "cuda", "kokkos"})
    EXPECT_TRUE(std::regex_search(o.out, std::regex(std::string("(^|\n)") + token + ": "))) << token << "\n" << o.out;
  for (const sp::PluginInfo& p : sp::plugins()) {
    EXPECT_NE(o.out.find(p.name + ": " + (p.reason.empty() ? sp::name(p.status) : "")), std::string::npos) << p.name;
    if (!p.reason.empty()) {
      EXPECT_NE(o.out.find(p.reason), std::string::npos) << p.name;
    }
    for (const sp::VariantInfo& v : p.variants) {
      EXPECT_NE(o.out.find(v.name), std::string::npos) << v.name;
      EXPECT_NE(o.out.find(v.doc), std::string::npos) << v.doc;
    }
  }
}

TEST(CliDevices, JsonHasOneObjectPerBackend) {
  const Output o = run_cli("devices --json");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), sp::plugins().size());
  std::set<std::string> names;
  for (size_t i = 0; i < rows.size(); ++i) {
    const sp::PluginInfo& p = sp::plugins()[i];
    EXPECT_EQ(str(rows[i], "backend"), p.name);
    EXPECT_EQ(str(rows[i], "status"), sp::name(p.status));
    EXPECT_EQ(field(rows[i], "variants").kind, JsonValue::raw);
    names.insert(p.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"reference", "openmp", "cuda", "kokkos"}));
}

// ---- usage -------------------------------------------------------------------------------------

struct UsageCase {
  std::string args, must_mention;
};
void PrintTo(const UsageCase& c, std::ostream* os) { *os << "'" << c.args << "'"; }
class CliUsage : public testing::TestWithParam<UsageCase> {};

TEST_P(CliUsage, ExitsWithCode2AndSaysWhy) {
  const Output o = run_cli(GetParam().args);
  EXPECT_EQ(o.code, 2) << describe(o);
  EXPECT_NE(o.err.find(GetParam().must_mention), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("--help"), std::string::npos) << "a usage error should point at --help: " << o.err;
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, CliUsage,
    testing::Values(UsageCase{"", "no command"}, UsageCase{"frobnicate", "frobnicate"},
                    UsageCase{"--frob", "--frob"}, UsageCase{"run --op spmm --bogus-flag", "--bogus-flag"},
                    UsageCase{"run --F 8", "--op"}, UsageCase{"run --op nosuchop", "nosuchop"},
                    UsageCase{"run --op spmm --F abc", "--F"}, UsageCase{"run --op spmm --reps 0", "--reps"},
                    UsageCase{"run --op spmm --reduce median", "median"},
                    UsageCase{"run --op spmm --dtype f8", "f8"}, UsageCase{"run --op spmm --F", "--F"},
                    UsageCase{"run --op spmm --op sddmm", "--op"}, UsageCase{"run --op spmm a b", "'b'"},
                    UsageCase{"info", "GRAPH"}, UsageCase{"info --bogus x", "--bogus"},
                    UsageCase{"devices extra", "extra"}, UsageCase{"devices --json=1", "--json"}),
    [](const testing::TestParamInfo<UsageCase>& param) { return sanitized(param.param.args); });

TEST(CliUsage, EveryCommandHasHelp) {
  for (const char* cmd : {"info", "run", "devices", "cache", "tune"}) {
    const Output o = run_cli(std::string(cmd) + " --help");
    EXPECT_EQ(o.code, 0) << describe(o);
    EXPECT_NE(o.out.find(std::string("usage: sparseport ") + cmd), std::string::npos) << o.out;
    const Output h = run_cli(std::string("help ") + cmd);
    EXPECT_EQ(h.code, 0) << describe(h);
    EXPECT_EQ(h.out, o.out);
  }
  const Output top = run_cli("--help");
  EXPECT_EQ(top.code, 0);
  for (const char* cmd : {"info", "run", "devices", "cache", "tune"}) EXPECT_NE(top.out.find(cmd), std::string::npos) << top.out;
}

TEST(CliUsage, VersionMatchesTheLibrary) {
  const Output o = run_cli("--version");
  EXPECT_EQ(o.code, 0) << describe(o);
  EXPECT_NE(o.out.find(sp::version()), std::string::npos) << o.out;
}

}  // namespace

// ---- scheduler: cache and tune -----------------------------------------------------------------

TEST(CliScheduler, RunRecordsADecisionThatCacheListsShowsAndClears) {
  if (sp::plugin("openmp").status != sp::PluginStatus::available) GTEST_SKIP() << "the openmp backend is not built";
  const std::string dir = testing::TempDir() + "sparseport_cli_cache_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string env = "SPARSEPORT_CACHE_DIR='" + dir + "' ";
  const Output r = run_cli("run --op spmm --backend openmp --json rmat:12:8", env + "SPARSEPORT_SCHEDULER=probe");
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::vector<JsonObject> rows = parse_lines(r.out);
  ASSERT_EQ(rows.size(), 1u) << describe(r);
  const std::string chosen = str(rows[0], "chosen");
  EXPECT_NE(chosen.find("spmm."), std::string::npos) << describe(r);
  // A cold decision: the model alone, or timed (at full size, or on the probe sample).
  const std::string how = str(rows[0], "decision");
  EXPECT_TRUE(how.rfind("model", 0) == 0 || how.rfind("timed", 0) == 0 || how.rfind("probe", 0) == 0) << describe(r);
  const Output l = run_cli("cache list --cache-dir '" + dir + "'");
  ASSERT_EQ(l.code, 0) << describe(l);
  EXPECT_NE(l.out.find(chosen), std::string::npos) << describe(l);
  EXPECT_NE(l.out.find("verified"), std::string::npos) << describe(l);
  const Output s = run_cli("cache show --cache-dir '" + dir + "' /spmm/F64/");
  ASSERT_EQ(s.code, 0) << describe(s);
  EXPECT_GE(parse_lines(s.out).size(), 1u) << describe(s);
  const Output c = run_cli("cache clear --cache-dir '" + dir + "'");
  ASSERT_EQ(c.code, 0) << describe(c);
  EXPECT_EQ(run_cli("cache list --cache-dir '" + dir + "'").out.find(chosen), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CliScheduler, TuneOracleJsonHasTheIssueFieldsPerGraph) {
  if (sp::plugin("openmp").status != sp::PluginStatus::available) GTEST_SKIP() << "the openmp backend is not built";
  const Output o = run_cli("tune --oracle --op spmm --backend openmp --F 16 --reps 2 --json rmat:10:8 band:3000:4");
  ASSERT_EQ(o.code, 0) << describe(o);
  const std::vector<JsonObject> rows = parse_lines(o.out);
  ASSERT_EQ(rows.size(), 2u) << describe(o);
  EXPECT_EQ(str(rows[0], "graph"), "rmat:10:8");
  EXPECT_EQ(str(rows[1], "graph"), "band:3000:4");
  for (const JsonObject& r : rows) {
    EXPECT_EQ(str(r, "op"), "spmm");
    EXPECT_EQ(str(r, "backend"), "openmp");
    EXPECT_EQ(num(r, "F"), 16);
    EXPECT_NE(str(r, "chosen").find("spmm."), std::string::npos);
    EXPECT_NE(str(r, "best").find("spmm."), std::string::npos);
    EXPECT_GE(num(r, "regret"), 0.0);
    EXPECT_GE(num(r, "cold_cost_ops"), 0.0);
    EXPECT_GT(num(r, "hit_overhead_us"), 0.0);
    EXPECT_EQ(str(r, "hit_source"), "cache hit");
    EXPECT_EQ(str(r, "hit_variant"), str(r, "chosen"));
    EXPECT_TRUE(is_true(r, "verified"));
    // The oracle's times (interleaved rounds): one per applicable variant, rows and merge_path among
    // them, all positive, and "best" the fastest of them.
    double fastest = 1e300;
    std::string fastest_v;
    int timed = 0;
    for (const auto& [k, v] : r)
      if (k.rfind("ms:", 0) == 0) {
        ++timed;
        EXPECT_GT(num(r, k), 0.0) << k;
        if (num(r, k) < fastest) fastest = num(r, k), fastest_v = k.substr(3);
      }
    EXPECT_GT(num(r, "ms:spmm.rows"), 0.0);
    EXPECT_GT(num(r, "ms:spmm.merge_path"), 0.0);
    EXPECT_GE(timed, 2);
    EXPECT_EQ(str(r, "best"), fastest_v);
  }
}
