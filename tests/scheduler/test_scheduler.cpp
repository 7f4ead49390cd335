// SPDX-License-Identifier: Apache-2.0
// The scheduler (DESIGN.md section 4): guardrail, decision cache (replay, version invalidation,
// concurrent writers in real processes, corrupt lines), stratified sampling, signatures, and the
// whole pipeline on a fake plugin whose speed we control (so revert and fallback are certain).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "scheduler/cache.hpp"
#include "scheduler/cache_stats.hpp"
#include "scheduler/estimate.hpp"
#include "scheduler/model.hpp"
#include "scheduler/options.hpp"
#include "scheduler/timing.hpp"
#include "scheduler/select.hpp"
#include "scheduler/shape_class.hpp"
#include "scheduler/summary.hpp"
#include "sparseport/sparseport.hpp"
#include "../common/scoped.hpp"

// The models compiled into the library (scheduler/CMakeLists.txt generates the list; model.cpp
// declares it): the tests below check every shipped one.
namespace sparseport::scheduler::detail_models {
const std::vector<std::pair<std::string, const char*>>& shipped();
}  // namespace sparseport::scheduler::detail_models

namespace {

using sparseport_test::ScopedEnv;
using sparseport_test::TempDir;

using namespace sparseport;
using namespace sparseport::scheduler;

Record record(const std::string& key, const std::string& variant, const std::string& versions = "v=1") {
  return {{"schema", std::to_string(kCacheSchema)}, {"key", key}, {"versions", versions}, {"variant", variant},
          {"vendor", "spmm.vendor"}, {"op", "spmm"}, {"verified", "true"}, {"reverted", "false"},
          {"reason", "test \"quoted\" reason"}};
}

// ---- guardrail -----------------------------------------------------------------------------------

TEST(SchedulerGuardrail, AcceptsANativeVariantOnlyBelowAlphaTimesTheVendor) {
  EXPECT_EQ(guardrail({{"a", 0.90}, {"b", 0.99}}, "vendor", 1.0, 0.95).variant, "a");
  EXPECT_EQ(guardrail({{"a", 0.96}}, "vendor", 1.0, 0.95).variant, "vendor");
  EXPECT_NE(guardrail({{"a", 0.96}}, "vendor", 1.0, 0.95).reason.find("guardrail"), std::string::npos);
  EXPECT_EQ(guardrail({{"a", 0.95}}, "vendor", 1.0, 0.95).variant, "a");  // at the bound: accepted
  EXPECT_EQ(guardrail({{"a", -1}, {"b", 0.5}}, "vendor", 1.0, 0.95).variant, "b");  // a failed
  EXPECT_EQ(guardrail({{"a", -1}}, "vendor", 1.0, 0.95).variant, "vendor");
  EXPECT_EQ(guardrail({{"a", 2.0}}, "vendor", -1, 0.95).variant, "a");  // the vendor failed
}

// ---- cache ---------------------------------------------------------------------------------------

TEST(SchedulerCache, RecordsRoundTripThroughTheFile) {
  TempDir dir;
  CacheFile f(dir.path);
  f.append(record("k1", "spmm.rows"));
  f.append(record("k2", "spmm.merge_path"));
  f.append(record("k1", "spmm.merge_path"));  // later lines win
  bool stale = true;
  const auto hit = f.lookup("k1", "v=1", &stale);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->at("variant"), "spmm.merge_path");
  EXPECT_EQ(hit->at("reason"), "test \"quoted\" reason");
  EXPECT_FALSE(stale);
  EXPECT_FALSE(f.lookup("k3", "v=1", &stale).has_value());
  EXPECT_EQ(f.read().size(), 3u);
  EXPECT_EQ(f.clear(), 3u);
  EXPECT_TRUE(f.read().empty());
}

// The parser copies a string's plain runs whole (a new process's cache hit parses one ~1.2 kB
// line): every escape between, before and after such runs must still come out as written, a key
// given twice keeps its last value, and a string cut inside an escape is refused.
TEST(SchedulerCache, EveryEscapeRoundTripsBetweenPlainRunsAndACutStringIsRefused) {
  Record r = record("k1", "spmm.rows");
  const std::string tricky = std::string("\\lead \"q\" mid\\\\ tab\t nl\n cr\r ctl") + char(1) + "end\\";
  r["reason"] = tricky;
  r["features"] = std::string(300, 'x') + "\"" + std::string(300, 'y');
  std::string error;
  const std::optional<Record> back = parse_record(format_record(r), &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, r);
  const std::optional<Record> twice = parse_record(R"({"a":"1","b":"x\u0041y","a":"2"})", &error);
  ASSERT_TRUE(twice.has_value()) << error;
  EXPECT_EQ(twice->at("a"), "2");
  EXPECT_EQ(twice->at("b"), "xAy");
  EXPECT_FALSE(parse_record(R"({"a":"abc\)", &error).has_value());
  EXPECT_FALSE(parse_record(R"({"a":"abc)", &error).has_value());
  EXPECT_FALSE(parse_record(R"({"a":"x\q"})", &error).has_value());  // no such escape
}

// A key looked up again replays the line it replayed before without parsing it again (the same
// few class keys answer every sampled subgraph of a mini-batch), but never in place of a newer valid
// line of that key, nor for other versions.
TEST(SchedulerCache, ARepeatedLookupKeepsItsLineOnlyUntilANewerOneComes) {
  TempDir dir;
  CacheFile f(dir.path);
  bool stale = true;
  f.append(record("k", "spmm.rows"));
  ASSERT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.rows");
  ASSERT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.rows");
  f.append(record("k", "spmm.merge_path"));
  EXPECT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.merge_path") << "the kept line hid a newer one";
  std::ofstream(f.path, std::ios::app) << "{\"key\":\"k\",\"variant\":\"spmm.torn\"}\n";  // corrupt: skipped
  f.append(record("k", "spmm.hub_split", "v=2"));                 // a newer line of other versions
  std::optional<Record> hit = f.lookup("k", "v=1", &stale);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->at("variant"), "spmm.merge_path");
  EXPECT_FALSE(stale);
  hit = f.lookup("k", "v=2", &stale);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->at("variant"), "spmm.hub_split") << "the line kept for v=1 answered v=2";
  EXPECT_FALSE(f.lookup("k", "v=3", &stale).has_value());
  EXPECT_TRUE(stale);
  EXPECT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.merge_path");
}

// A process keeps the cache file open between lookups and asks the descriptor whether it changed;
// a file renamed over it or unlinked must still be seen at the next lookup, as through the path.
TEST(SchedulerCache, AFileRenamedOverTheCacheOrUnlinkedIsSeenAtTheNextLookup) {
  TempDir dir;
  CacheFile f(dir.path);
  bool stale = false;
  f.append(record("k", "spmm.rows"));
  ASSERT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.rows");
  {
    CacheFile other(dir.path, "next.jsonl");
    other.append(record("k", "spmm.merge_path"));
    ASSERT_EQ(::rename(other.path.c_str(), f.path.c_str()), 0);
  }
  EXPECT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.merge_path") << "the replaced file was still read";
  ASSERT_EQ(::unlink(f.path.c_str()), 0);
  EXPECT_FALSE(f.lookup("k", "v=1", &stale).has_value()) << "a decision of the unlinked file was replayed";
  f.append(record("k", "spmm.hub_split"));
  EXPECT_EQ(f.lookup("k", "v=1", &stale)->at("variant"), "spmm.hub_split");
}

// holds_prefix() answers whether some key begins with a prefix, before and after the file is
// indexed by key (from the ninth key looked up, or above 64 kB), and sees every append; it is what
// lets the scheduler skip a new shape's signature (a false answer must mean that lookups miss).
TEST(SchedulerCache, HoldsPrefixSeesEveryKeyBeforeAndAfterTheFullIndex) {
  TempDir dir;
  CacheFile f(dir.path);
  EXPECT_FALSE(f.holds_prefix("dev/csr")) << "no file yet";
  f.append(record("dev/csr10x10:5:00ff/spmm/F8", "spmm.rows"));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:5:"));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:5:00ff/spmm/F8"));
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:6:"));
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:5:00ff/spmm/F8/")) << "longer than the key";
  EXPECT_FALSE(f.holds_prefix("other/csr10x10:5:"));
  bool stale = false;
  for (int k = 0; k < 12; ++k) EXPECT_FALSE(f.lookup("absent" + std::to_string(k), "v=1", &stale).has_value());
  // Now indexed by key: the same answers, and a later append is seen.
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:5:"));
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:6:"));
  f.append(record("dev/csr10x10:6:abcd/spmm/F8", "spmm.rows"));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:6:"));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:"));
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:7:"));
  // A file above 64 kB in a process that looked nothing up is indexed before the first answer.
  TempDir big;
  CacheFile g(big.path);
  for (int k = 0; k < 400; ++k) g.append(record("dev/csr" + std::to_string(k) + "x9:9:0/spmm", "spmm.rows"));
  ASSERT_GT(std::filesystem::file_size(g.path), size_t{64} << 10);
  EXPECT_TRUE(g.holds_prefix("dev/csr399x9:9:"));
  EXPECT_FALSE(g.holds_prefix("dev/csr400x9:9:"));
}

// holds_prefix(..., recent = true), the shape question of a mini-batch's class decisions: a "no"
// may come from a look at the file less than kRecentCheckSeconds old, but never once this process
// appended or cleared since, and a "yes" (after which an exact lookup rereads nothing) is always
// the file's. Another writer's line (here appended by hand) is seen once the window has passed or
// anything asks the file.
TEST(SchedulerCache, ARecentShapeQuestionSkipsTheFileOnlyForANoAndNeverAfterItsOwnAppend) {
  TempDir dir;
  CacheFile f(dir.path);
  const auto line_of = [](const std::string& key) {  // a valid line, as another process writes it
    TempDir other;
    CacheFile g(other.path);
    g.append(record(key, "spmm.rows"));
    std::ifstream in(g.path);
    std::string l;
    std::getline(in, l);
    return l + "\n";
  };
  const auto by_hand = [&](const std::string& key) { std::ofstream(f.path, std::ios::app) << line_of(key); };
  f.append(record("dev/csr10x10:5:00ff/spmm/F8", "spmm.rows"));
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:6:", true)) << "asked the file: its own append ended the window";
  const auto looked = std::chrono::steady_clock::now();
  by_hand("dev/csr10x10:6:abcd/spmm/F8");
  const bool seen = f.holds_prefix("dev/csr10x10:6:", true);
  if (std::chrono::steady_clock::now() - looked < std::chrono::duration<double>(0.5 * kRecentCheckSeconds)) {
    EXPECT_FALSE(seen) << "within the window a no is what was read (the file was not asked)";
  }
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:6:")) << "without recent the file is asked";
  // This process's own append: the next question asks the file, window or not.
  by_hand("dev/csr10x10:7:abcd/spmm/F8");
  f.append(record("dev/csr10x10:8:abcd/spmm/F8", "spmm.rows"));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:7:", true)) << "an append of this process left the window open";
  // A yes asks the file, and what it reads then answers the next no.
  by_hand("dev/csr10x10:9:abcd/spmm/F8");
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:5:", true));
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:9:", true)) << "the yes above read the file";
  bool stale = false;
  EXPECT_TRUE(f.lookup("dev/csr10x10:9:abcd/spmm/F8", "v=1", &stale, false).has_value());
  // Cleared by this process: no record is answered from the window.
  f.clear();
  EXPECT_FALSE(f.holds_prefix("dev/csr10x10:5:", true));
  by_hand("dev/csr10x10:5:00ff/spmm/F8");
  EXPECT_TRUE(f.holds_prefix("dev/csr10x10:5:", true)) << "the file made afresh (the index was cleared)";
}

// Context::create reads the decision cache (SPARSEPORT_CACHE_DIR) into the process's index, so
// that the first decision's lookup opens and reads nothing (select.hpp, warm_up; a new process's
// cache hit paid the read and the first run of the parser on its hot path).
TEST(SchedulerCache, CreatingAContextReadsTheCacheSoThatTheFirstLookupReadsNothing) {
  TempDir dir;
  CacheFile f(dir.path);
  f.append(record("warm/k1", "spmm.rows"));
  f.append(record("warm/k2", "spmm.merge_path"));
  const ScopedEnv cache_dir("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  const CacheStats before = cache_stats();
  const Context ctx = Context::create("reference");
  const CacheStats created = cache_stats();
  EXPECT_EQ(created.opens, before.opens + 1) << "the context read the file once";
  EXPECT_GE(created.bytes_read, before.bytes_read + std::filesystem::file_size(f.path));
  bool stale = true;
  const std::optional<Record> hit = f.lookup("warm/k2", "v=1", &stale);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->at("variant"), "spmm.merge_path");
  const CacheStats looked = cache_stats();
  EXPECT_EQ(looked.opens, created.opens) << "the lookup opened nothing";
  EXPECT_EQ(looked.bytes_read, created.bytes_read) << "nor read anything";
  // A decision appended after the context was made is still found (the lookup reads what grew).
  f.append(record("warm/k3", "spmm.rows"));
  EXPECT_TRUE(f.lookup("warm/k3", "v=1", &stale).has_value());
}

// preload(prefix), which Context::create makes with its device's hash: the newest line of each of
// the last 16 keys with the prefix is parsed and checked when the context is made, so that a new
// process's first hit on one of them parses nothing (in a new process that parse was 15-33 us of a
// 66 us hit on the 2-core VM). Other keys, older keys and lines appended since are parsed by the
// lookup as before, and a newer line of a preloaded key wins over the kept one.
TEST(SchedulerCache, PreloadKeepsTheNewestLinesOfItsPrefixesKeysSoThatTheirFirstHitParsesNothing) {
  TempDir dir;
  CacheFile f(dir.path);
  f.append(record("dev/a", "spmm.rows"));
  for (int k = 0; k < 20; ++k) f.append(record("dev/k" + std::to_string(k), "spmm.rows"));
  f.append(record("other/c", "spmm.rows"));
  f.append(record("dev/a", "spmm.merge_path"));  // dev/a's newest line: one of the last 16 keys
  f.preload("dev/");
  bool stale = true;
  const auto parses = [&](const std::string& key, const std::string& variant) {
    const uint64_t before = cache_stats().parsed;
    const std::shared_ptr<const Record> r = f.lookup_shared(key, "v=1", &stale);
    EXPECT_TRUE(r != nullptr) << key;
    if (r != nullptr) {
      EXPECT_EQ(r->at("variant"), variant) << key;
    }
    return cache_stats().parsed - before;
  };
  EXPECT_EQ(parses("dev/a", "spmm.merge_path"), 0u) << "the newest line of dev/a was kept";
  for (int k = 5; k < 20; ++k) EXPECT_EQ(parses("dev/k" + std::to_string(k), "spmm.rows"), 0u) << "dev/k" << k;
  EXPECT_EQ(parses("dev/k4", "spmm.rows"), 1u) << "beyond the last 16 keys: parsed by its lookup";
  EXPECT_EQ(parses("other/c", "spmm.rows"), 1u) << "another prefix: parsed by its lookup";
  EXPECT_EQ(parses("other/c", "spmm.rows"), 0u) << "and kept from then on";
  f.append(record("dev/a", "spmm.hub_split"));
  EXPECT_EQ(parses("dev/a", "spmm.hub_split"), 1u) << "an appended line of a kept key is read and wins";
}

// lookup() reads the file once and then only what was appended since: each decision appended
// between lookups is seen, a line half written when read is read again once complete, and a file
// cleared and written afresh (perhaps with the same inode number) is read from its start.
TEST(SchedulerCache, LookupsSeeEveryAppendAndARewrittenFile) {
  TempDir dir;
  CacheFile f(dir.path);
  bool stale = false;
  // (appends to a std::string: GCC 12 warns falsely, -Wrestrict, on "literal" + std::string)
  const auto name = [](const char* prefix, int i) {
    std::string s = prefix;
    s += std::to_string(i);
    return s;
  };
  for (int i = 0; i < 50; ++i) {
    f.append(record(name("k", i), name("spmm.v", i)));
    const auto hit = f.lookup(name("k", i), "v=1", &stale);
    ASSERT_TRUE(hit.has_value()) << i;
    EXPECT_EQ(hit->at("variant"), name("spmm.v", i));
    ASSERT_TRUE(f.lookup("k0", "v=1", &stale).has_value()) << "an early record lost after append " << i;
  }
  // A line without its newline yet (a writer caught mid-line), then its end.
  const std::string line = [&] {
    TempDir other;
    CacheFile g(other.path);
    g.append(record("torn", "spmm.torn"));
    std::ifstream in(g.path);
    std::string l;
    std::getline(in, l);
    return l;
  }();
  {
    std::ofstream out(f.path, std::ios::app);
    out << line.substr(0, line.size() / 2);
  }
  EXPECT_FALSE(f.lookup("torn", "v=1", &stale).has_value());
  {
    std::ofstream out(f.path, std::ios::app);
    out << line.substr(line.size() / 2) << "\n";
  }
  const auto torn = f.lookup("torn", "v=1", &stale);
  ASSERT_TRUE(torn.has_value()) << "the completed line was not read again";
  EXPECT_EQ(torn->at("variant"), "spmm.torn");
  // Cleared, then longer than before with other records: nothing of the old file is replayed.
  EXPECT_EQ(f.clear(), 51u);
  for (int i = 0; i < 80; ++i) f.append(record(name("new", i), "spmm.new"));
  EXPECT_FALSE(f.lookup("k0", "v=1", &stale).has_value()) << "a record of the cleared file was replayed";
  EXPECT_FALSE(f.lookup("torn", "v=1", &stale).has_value());
  EXPECT_TRUE(f.lookup("new79", "v=1", &stale).has_value());
  EXPECT_TRUE(f.lookup("new0", "v=1", &stale).has_value());
}

// Issue 35: a process reads the file once; a lookup of a file that did not change reads none of it,
// whichever key (hit or miss) and through whichever CacheFile, also once every line is indexed (from
// the ninth key); a line appended by another process is seen, and only it is read (with the first
// bytes, which tell that the file is the same). Before, every lookup re-read the first 256 bytes,
// and a new process parsed every record of the file.
TEST(SchedulerCache, ALookupReadsOnlyWhatWasAppendedSinceTheLastRead) {
  TempDir dir;
  CacheFile f(dir.path);
  const auto name = [](const char* prefix, int i) {
    std::string s = prefix;
    s += std::to_string(i);
    return s;
  };
  for (int i = 0; i < 40; ++i) f.append(record(name("k", i), name("spmm.v", i)));
  f.append(record("k5", "spmm.newer"));
  bool stale = false;
  const CacheStats s0 = cache_stats();
  ASSERT_TRUE(f.lookup("k3", "v=1", &stale).has_value());
  const CacheStats s1 = cache_stats();
  EXPECT_EQ(s1.opens - s0.opens, 1u);
  EXPECT_EQ(s1.bytes_read - s0.bytes_read, std::filesystem::file_size(f.path)) << "the first lookup reads the file once";
  for (int i = 0; i < 40; ++i) {
    const auto hit = CacheFile(dir.path).lookup(name("k", i), "v=1", &stale);
    ASSERT_TRUE(hit.has_value()) << i;
    EXPECT_EQ(hit->at("variant"), i == 5 ? std::string("spmm.newer") : name("spmm.v", i)) << "the newer line wins";
    EXPECT_FALSE(f.lookup(name("missing", i), "v=1", &stale).has_value());
    EXPECT_FALSE(f.lookup(name("k", i), "v=2", &stale).has_value());
    EXPECT_TRUE(stale);
  }
  const CacheStats s2 = cache_stats();
  EXPECT_EQ(s2.lookups - s1.lookups, 120u);
  EXPECT_EQ(s2.bytes_read, s1.bytes_read) << "lookups re-read a file that did not change";
  EXPECT_EQ(s2.opens, s1.opens) << "lookups reopened a file that did not change";
  // Another process appends: its line is seen, and only it is read.
  const auto before = std::filesystem::file_size(f.path);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CacheFile(dir.path).append(record("other", "spmm.other"));
    CacheFile(dir.path).append(record("k7", "spmm.newer"));
    std::_Exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto appended = std::filesystem::file_size(f.path) - before;
  const auto other = f.lookup("other", "v=1", &stale);
  ASSERT_TRUE(other.has_value()) << "another process's line was not seen";
  EXPECT_EQ(other->at("variant"), "spmm.other");
  EXPECT_EQ(f.lookup("k7", "v=1", &stale)->at("variant"), "spmm.newer");
  const CacheStats s3 = cache_stats();
  EXPECT_EQ(s3.opens - s2.opens, 1u);
  EXPECT_LE(s3.bytes_read - s2.bytes_read, appended + 256) << "more than the appended lines and the first bytes";
  EXPECT_GE(s3.bytes_read - s2.bytes_read, appended);
}

TEST(SchedulerCache, EntriesFromOtherVersionsAreIgnored) {
  TempDir dir;
  CacheFile f(dir.path);
  f.append(record("k", "spmm.rows", "driver_version=12.0;library_version=0.1.0"));
  bool stale = false;
  EXPECT_FALSE(f.lookup("k", "driver_version=13.0;library_version=0.1.0", &stale).has_value());
  EXPECT_TRUE(stale);
  EXPECT_TRUE(f.lookup("k", "driver_version=12.0;library_version=0.1.0", &stale).has_value());
}

TEST(SchedulerCache, CorruptAndTruncatedLinesAreSkippedWithAWarning) {
  TempDir dir;
  CacheFile f(dir.path);
  f.append(record("good1", "spmm.rows"));
  {
    std::ofstream out(f.path, std::ios::app);
    out << "{\"schema\":1,\"key\":\"bad\",\"variant\n";            // broken string
    out << "this is not json\n";                                   // not an object
    out << "{\"schema\":1,\"key\":\"nofields\"}\n";               // missing fields
  }
  f.append(record("good2", "spmm.merge_path"));
  {
    std::ofstream out(f.path, std::ios::app);
    out << "{\"schema\":1,\"key\":\"cut\",\"versions\":\"v=1\",\"variant\":\"x\",\"op\":\"spmm\"}";  // no newline
  }
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = f.read();
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].at("key"), "good1");
  EXPECT_EQ(rs[1].at("key"), "good2");
  EXPECT_NE(err.find(f.path + ":2"), std::string::npos) << err;
  EXPECT_NE(err.find(f.path + ":3"), std::string::npos) << err;
  EXPECT_NE(err.find("missing field"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST(SchedulerCache, ConcurrentWriterProcessesLoseAndCorruptNothing) {
  TempDir dir;
  constexpr int kProcs = 8, kLines = 300;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      CacheFile f(dir.path);
      for (int i = 0; i < kLines; ++i) {
        // Appends, not "p" + std::string&&: GCC 12 -O3 reports a false -Wrestrict there (PR 105651).
        std::string key = "p";
        key += std::to_string(p);
        key += '-';
        key += std::to_string(i);
        Record r = record(key, "spmm.rows");
        r["padding"] = std::string(static_cast<size_t>(100 + 37 * (i % 50)), 'x');  // lines of varied length
        f.append(r);
      }
      std::_Exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(k, &status, 0), k);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = CacheFile(dir.path).read();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // no corrupt line
  ASSERT_EQ(rs.size(), static_cast<size_t>(kProcs * kLines));
  std::set<std::string> keys;
  for (const Record& r : rs) keys.insert(r.at("key"));
  EXPECT_EQ(keys.size(), static_cast<size_t>(kProcs * kLines));
}

// ---- sampling, signatures, estimate ----------------------------------------------------------------

// The share of A's entries in rows of at least `hub` entries, and the longest row over all entries,
// of the full matrix or of a sample (whole rows, then cut rows at their kept length).
struct WorkShape {
  double hub_share = 0, longest = 0;
};
WorkShape work_shape(const std::vector<int64_t>& lengths, int64_t hub) {
  double all = 0, hubs = 0, longest = 0;
  for (const int64_t d : lengths) {
    all += static_cast<double>(d);
    if (d >= hub) hubs += static_cast<double>(d);
    longest = std::max(longest, static_cast<double>(d));
  }
  return {hubs / all, longest / all};
}
std::vector<int64_t> row_lengths(const std::vector<int64_t>& rowptr) {
  std::vector<int64_t> d;
  for (size_t i = 0; i + 1 < rowptr.size(); ++i) d.push_back(rowptr[i + 1] - rowptr[i]);
  return d;
}
std::vector<int64_t> sample_lengths(const std::vector<int64_t>& rowptr, const ProbeSample::Rows& pick) {
  std::vector<int64_t> d;
  for (const int64_t r : pick.rows) d.push_back(rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]);
  for (const auto& [r, k] : pick.cut) d.push_back(k);
  return d;
}

// time_variant's beaten_at (the probe's kBeaten cut): a variant whose steady call already took
// longer is left at that call, not timed over its repeats. A table whose spmm slot counts its calls
// and sleeps 2 ms: its first call (the warm-up) is over 20 batch targets (1 ms), so no second
// warm-up; then the repeats' first batch is steady, and beaten.
int g_sleepy_calls = 0;
int sleepy_spmm(const sparseport_exec*, const char*, const sparseport_spmm_args*, sparseport_status*) {
  ++g_sleepy_calls;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return SPARSEPORT_OK;
}

TEST(SchedulerProbe, AVariantBeatenOnASteadyCallIsNotRepeated) {
  sparseport_plugin table{};
  table.memory_space = SPARSEPORT_MEMORY_HOST;
  table.spmm = &sleepy_spmm;
  PluginInfo plugin;
  plugin.name = "sleepy";
  plugin.table = &table;
  const sparseport_exec exec{};
  const sparseport_spmm_args args{};
  sparseport_status st{};
  const auto timed = [&](double beaten_at, double first_call = -1) {
    g_sleepy_calls = 0;
    const double s = time_variant(plugin, exec, SPARSEPORT_OP_SPMM, "slow", &args, 5, true, &st, beaten_at, first_call);
    EXPECT_GE(s, 2e-3);
    return g_sleepy_calls;
  };
  EXPECT_EQ(timed(0), 6);     // the warm-up and 5 repeats
  EXPECT_EQ(timed(60.0), 6);  // not beaten: the same
  EXPECT_EQ(timed(1e-3), 2);  // beaten on the first repeat
  // The probe's vendor: its argument-checking first call stands in for the warm-up's first.
  EXPECT_EQ(timed(0, 2e-3), 5);
  EXPECT_EQ(timed(1e-3, 2e-3), 1);
  // A first call shorter than 20 batch targets (50 us on host memory): the warm-up's second call
  // follows, as it would after the warm-up's own first.
  EXPECT_EQ(timed(0, 1e-5), 6);
}

TEST(SchedulerProbe, StratifiedSampleKeepsTheHubsShareOfTheWork) {
  // 100000 rows of degree 2, eleven hubs of degree 5000, one mega-row of 10^6.
  std::vector<int64_t> rowptr{0};
  for (int64_t i = 0; i < 100011; ++i) {
    const int64_t d = i == 70000 ? 1000000 : (i % 10000 == 5 ? 5000 : 2);
    rowptr.push_back(rowptr.back() + d);
  }
  const ProbeSample::Rows pick = ProbeSample::sample_rows(rowptr, 0.03, 512);
  EXPECT_NEAR(static_cast<double>(pick.rows.size()), 0.03 * 100000, 10) << "3 % of the degree-2 rows, whole";
  EXPECT_TRUE(std::is_sorted(pick.rows.begin(), pick.rows.end()));
  EXPECT_EQ(std::adjacent_find(pick.rows.begin(), pick.rows.end()), pick.rows.end());
  // The hubs' strata hold fewer than 1 / 0.03 rows each: every hub is in the sample, cut to 3 %.
  ASSERT_EQ(pick.cut.size(), 12u);
  for (const auto& [r, k] : pick.cut) {
    EXPECT_TRUE(r == 70000 || r % 10000 == 5) << r;
    EXPECT_EQ(k, r == 70000 ? 30000 : 150) << r;
    EXPECT_EQ(std::find(pick.rows.begin(), pick.rows.end(), r), pick.rows.end()) << "row " << r << " twice";
  }
  // What a hub costs relative to the rest is what it costs at full size: the hubs' share of the
  // entries, and the longest row over all entries (a variant that gives a row to one warp waits for it).
  const WorkShape full = work_shape(row_lengths(rowptr), 100), sample = work_shape(sample_lengths(rowptr, pick), 100);
  EXPECT_NEAR(sample.hub_share, full.hub_share, 0.01);
  EXPECT_NEAR(sample.longest / full.longest, 1.0, 0.02);
  // Small matrices: the minimum, or every row, whole.
  std::vector<int64_t> small{0};
  for (int i = 0; i < 300; ++i) small.push_back(small.back() + 3);
  EXPECT_EQ(ProbeSample::sample_rows(small, 0.03, 512).rows.size(), 300u);
  std::vector<int64_t> mid{0};
  for (int i = 0; i < 5000; ++i) mid.push_back(mid.back() + 3);
  const ProbeSample::Rows m = ProbeSample::sample_rows(mid, 0.03, 512);
  EXPECT_NEAR(static_cast<double>(m.rows.size()), 512, 2);
  EXPECT_TRUE(m.cut.empty());
}

// sample_rows picks in two passes over rowptr as stored; the reference below is the algorithm it
// replaced (a vector of rows per stratum, then a sort). The same rows and cuts on generated graphs of
// every shape class, from int32 and int64 storage.
ProbeSample::Rows reference_sample_rows(const std::vector<int64_t>& rowptr, double frac, int64_t min_rows) {
  const int64_t rows = static_cast<int64_t>(rowptr.size()) - 1;
  ProbeSample::Rows out;
  if (rows <= min_rows) {
    for (int64_t i = 0; i < rows; ++i) out.rows.push_back(i);
    return out;
  }
  const double f = std::min(1.0, std::max(frac, static_cast<double>(min_rows) / static_cast<double>(rows)));
  std::vector<std::vector<int64_t>> strata(65);
  for (int64_t i = 0; i < rows; ++i)
    strata[std::bit_width(static_cast<uint64_t>(rowptr[static_cast<size_t>(i) + 1] - rowptr[static_cast<size_t>(i)]))]
        .push_back(i);
  for (size_t b = 0; b < strata.size(); ++b) {
    const std::vector<int64_t>& st = strata[b];
    if (st.empty()) continue;
    const double want = f * static_cast<double>(st.size());
    if (want < 0.5 && b >= 1 && f * std::ldexp(1.0, static_cast<int>(b) - 1) >= 1.0) {
      for (const int64_t r : st)
        out.cut.emplace_back(
            r, std::max<int64_t>(1, std::llround(f * static_cast<double>(rowptr[static_cast<size_t>(r) + 1] -
                                                                         rowptr[static_cast<size_t>(r)]))));
      continue;
    }
    const auto size = static_cast<int64_t>(st.size());
    const int64_t n = std::clamp<int64_t>(std::llround(want), 1, size);
    for (int64_t j = 0; j < n; ++j) out.rows.push_back(st[static_cast<size_t>((j * size) / n)]);
  }
  std::sort(out.rows.begin(), out.rows.end());
  std::sort(out.cut.begin(), out.cut.end());
  if (out.rows.empty()) {
    for (const auto& [r, k] : out.cut) out.rows.push_back(r);
    out.cut.clear();
  }
  return out;
}

TEST(SchedulerProbe, StratifiedSampleIsTheReferencesFromEitherIndexWidth) {
  int inputs = 0;
  for (const char* spec : {"chunglu:200000:10:2.1", "chunglu:50000:16:2.5", "rmat:15:16", "er:30000:0.0003",
                           "band:20000:5", "megarow:20000:4:0.2", "hubs:30000:4:20:3000"}) {
    const HostCsr<int64_t, float> g = generate<int64_t, float>(spec);
    std::vector<int32_t> narrow(g.rowptr.begin(), g.rowptr.end());
    for (const double frac : {0.03, 0.25}) {
      for (const int64_t min_rows : {int64_t{64}, int64_t{512}, int64_t{100000}}) {
        const ProbeSample::Rows want = reference_sample_rows(g.rowptr, frac, min_rows);
        Structure s;
        s.rows = g.rows;
        s.nnz = g.nnz();
        s.index_type = SPARSEPORT_I32;
        s.host_rowptr = narrow.data();
        for (const ProbeSample::Rows& got : {ProbeSample::sample_rows(g.rowptr, frac, min_rows),
                                             ProbeSample::sample_rows(s, frac, min_rows)}) {
          EXPECT_EQ(got.rows, want.rows) << spec << " frac " << frac << " min " << min_rows;
          EXPECT_EQ(got.cut, want.cut) << spec << " frac " << frac << " min " << min_rows;
        }
        ++inputs;
      }
    }
  }
  EXPECT_EQ(inputs, 42);
  // A stratum whose rows are all cut beside one of whole rows; and rows of degree 0 only.
  std::vector<int64_t> hubs{0};
  for (int64_t i = 0; i < 2000; ++i) hubs.push_back(hubs.back() + (i % 500 == 7 ? 4000 : (i % 2)));
  EXPECT_EQ(ProbeSample::sample_rows(hubs, 0.03, 64).cut, reference_sample_rows(hubs, 0.03, 64).cut);
  EXPECT_EQ(ProbeSample::sample_rows(hubs, 0.03, 64).rows, reference_sample_rows(hubs, 0.03, 64).rows);
  EXPECT_FALSE(ProbeSample::sample_rows(hubs, 0.03, 64).cut.empty());
  const std::vector<int64_t> empty_rows(1001, 0);
  EXPECT_EQ(ProbeSample::sample_rows(empty_rows, 0.03, 64).rows, reference_sample_rows(empty_rows, 0.03, 64).rows);
  EXPECT_EQ(ProbeSample::sample_rows(empty_rows, 0.03, 64).rows.size(), 64u);
}

// On generated power-law graphs (Chung-Lu, the exponents of social graphs) the sample's share of
// work in the top strata stays near the full matrix's. Before the cut rows, one whole row per sparse
// stratum made it 3.6-6.6x larger (10 % of the entries at full size, 60 % in the sample).
TEST(SchedulerProbe, PowerLawSampleKeepsTheHubsShareOfTheWork) {
  for (const char* spec : {"chunglu:200000:10:2.1", "chunglu:200000:16:2.5", "rmat:16:16"}) {
    const HostCsr<int64_t, float> g = generate<int64_t, float>(spec);
    const ProbeSample::Rows pick = ProbeSample::sample_rows(g.rowptr, 0.03, 512);
    for (const int64_t hub : {int64_t{256}, int64_t{1024}}) {
      const WorkShape full = work_shape(row_lengths(g.rowptr), hub);
      // Cut rows count by their full length: a hub stays a hub in the sample's strata.
      std::vector<int64_t> lens;
      double in_hubs = 0, all = 0;
      for (const int64_t r : pick.rows) {
        const int64_t d = g.rowptr[static_cast<size_t>(r) + 1] - g.rowptr[static_cast<size_t>(r)];
        all += static_cast<double>(d);
        if (d >= hub) in_hubs += static_cast<double>(d);
      }
      for (const auto& [r, k] : pick.cut) {
        all += static_cast<double>(k);
        if (g.rowptr[static_cast<size_t>(r) + 1] - g.rowptr[static_cast<size_t>(r)] >= hub) in_hubs += static_cast<double>(k);
      }
      EXPECT_NEAR(in_hubs / all, full.hub_share, 0.25 * full.hub_share + 0.005) << spec << ", rows >= " << hub;
    }
    int64_t entries = 0;
    for (const int64_t d : sample_lengths(g.rowptr, pick)) entries += d;
    EXPECT_LT(static_cast<double>(entries), 0.06 * static_cast<double>(g.nnz())) << spec << ": the sample stays small";
  }
}

TEST(SchedulerSignature, HashCoversHardwareNotVersionsAndIsStable) {
  const DeviceSignature a = make_signature({{"kind", "gpu"}, {"sms", "132"}, {"driver_version", "13.0"}});
  const DeviceSignature b = make_signature({{"kind", "gpu"}, {"sms", "132"}, {"driver_version", "13.1"}});
  const DeviceSignature c = make_signature({{"kind", "gpu"}, {"sms", "114"}, {"driver_version", "13.0"}});
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.versions_text(), b.versions_text());
  EXPECT_NE(a.hash, c.hash);
  EXPECT_EQ(a.hash.size(), 16u);
  // The real host: stable, with the library and ABI versions (through the openmp plugin, the one
  // whose signature names cores, caches and SIMD).
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  Context ctx = Context::create("openmp");
  const std::string s1 = sparseport::device_signature(ctx), s2 = sparseport::device_signature(ctx);
  EXPECT_EQ(s1, s2);
  for (const char* key : {"kind=cpu", "cores=", "l1d_bytes=", "simd=", "threads=", "library_version=", "abi_version=", "hash="})
    EXPECT_NE(s1.find(key), std::string::npos) << key << " missing in\n" << s1;
}

// A context makes the signature of its thread count when the count is set, as create() makes the
// default count's: the first op's decision then only looks it up (issue 35: a new process's cache
// hit on openmp with 2 threads spent 41-46 of its 77 us making it).
TEST(SchedulerSignature, SetThreadsMakesTheSignatureBeforeTheFirstDecision) {
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  Context ctx = Context::create("openmp");
  EXPECT_TRUE(device_signature_made(ctx.plugin(), ctx.exec()));  // create(): the default count's
  sparseport_exec with_13 = ctx.exec();
  with_13.threads = 13;  // a count nothing in this process has used
  EXPECT_FALSE(device_signature_made(ctx.plugin(), with_13));
  ctx.set_threads(13);
  EXPECT_TRUE(device_signature_made(ctx.plugin(), ctx.exec()));
  EXPECT_NE(sparseport::device_signature(ctx).find("threads=13\n"), std::string::npos) << sparseport::device_signature(ctx);
}

TEST(SchedulerEstimate, RowMappedVariantsPayForAMegaRowBalancedOnesDoNot) {
  const DeviceSignature gpu = make_signature({{"kind", "gpu"}, {"sms", "132"}, {"l2_bytes", "52428800"}, {"peak_gbps", "3350"}});
  Structure s;
  s.rows = 100000;
  s.cols = 100000;
  s.rowptr = {0};
  for (int64_t i = 0; i < s.rows; ++i) s.rowptr.push_back(s.rowptr.back() + (i == 0 ? 900000 : 1));
  s.nnz = s.rowptr.back();
  ProblemInfo p;
  p.features = p.features_out = 64;
  p.value_type = SPARSEPORT_F32;
  p.index_type = SPARSEPORT_I32;
  const Features f = features_of(s, p, 1024);
  EXPECT_EQ(f.max_degree, 900000);
  EXPECT_EQ(f.p50, 1);
  EXPECT_EQ(f.hubs, 1);
  const auto est = estimate(machine(gpu), f, p, {"spmm.row_warp", "spmm.nnz_balanced", "spmm.hub_split"});
  ASSERT_EQ(est.size(), 3u);
  EXPECT_EQ(est.back().variant, "spmm.row_warp");
  EXPECT_GT(est.back().seconds, 5 * est.front().seconds);
}

// ---- the pipeline on a fake plugin ----------------------------------------------------------------
//
// "fake" copies the reference plugin's table (memory, slicing) and replaces spmm: the variant
// spmm.trap is 30x faster than the vendor on small inputs (the probe) and 4x slower on large ones
// (full size), so the probe picks it and the full-size check must revert it; spmm.second is the
// probe's runner-up and the fastest at full size.

std::atomic<int> g_calls{0};
// The full-size spins of spmm.vendor and spmm.second: by default the vendor takes 10x or more
// (a wide margin); NarrowMargin makes it 1.5x with a 100 ms gap: a preemption of 100 ms more on one
// side is needed either to make spmm.second lose its check (which then times it once more: a third
// call) or to take the measured margin to 2x. With 100 against 150 ms (50 ms either way) a CI
// rehearsal on a 2-core VM loaded by a second build failed teach_class's count of 2 calls
// (2026-12-04).
std::atomic<double> g_vendor_full_s{0.050};
std::atomic<double> g_second_full_s{0.001};
std::atomic<double> g_trap_full_s{0.200};  // always 150 ms or more above the vendor
struct WideMargin {  // 2x even when the reference's computation behind each variant takes 100 ms
  WideMargin() { g_vendor_full_s = 0.250, g_trap_full_s = 0.400; }
  ~WideMargin() { g_vendor_full_s = 0.050, g_trap_full_s = 0.200; }
};
struct NarrowMargin {
  NarrowMargin() { g_vendor_full_s = 0.300, g_second_full_s = 0.200, g_trap_full_s = 0.450; }
  ~NarrowMargin() { g_vendor_full_s = 0.050, g_second_full_s = 0.001, g_trap_full_s = 0.200; }
};

void spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

int fake_spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a, sparseport_status* st) {
  ++g_calls;
  const std::string v = variant;
  const bool big = a->a.rows > 5000;
  // Gaps of 3x or more on the probe and of 49 ms or more at full size: the reference computation
  // below takes a few milliseconds at full size, and a loaded machine (ctest -j8 beside other GPU
  // work, a 2-core VM at load 6) stretches it and preempts the spins by tens of milliseconds;
  // neither may reorder the variants (19 ms was seen to be too little). spmm.slow is 14 ms behind
  // spmm.second on the probe, where each of them gets one timed call (both are over 4x the trap):
  // at 5 ms, one preemption on a loaded 2-core CI machine made it the probe's runner-up, and a
  // reverted trap went to it instead of spmm.second (AClassHoldingTheVendorIsDecidedColdAtItsRechecks).
  if (v == "spmm.trap") spin(big ? g_trap_full_s.load() : 0.0001);
  if (v == "spmm.vendor") spin(big ? g_vendor_full_s.load() : 0.003);
  if (v == "spmm.slow") spin(0.015);
  if (v == "spmm.second") spin(big ? g_second_full_s.load() : 0.001);
  return plugin("reference").table->spmm(x, "spmm.serial", a, st);
}

const sparseport_variant kFakeVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.vendor", SPARSEPORT_VARIANT_VENDOR | SPARSEPORT_VARIANT_DEFAULT, "vendor"},
    {SPARSEPORT_OP_SPMM, "spmm.trap", 0, "fast on the probe, slow at full size"},
    {SPARSEPORT_OP_SPMM, "spmm.slow", 0, "always slow"},
    {SPARSEPORT_OP_SPMM, "spmm.second", 0, "second on the probe, faster than the vendor at full size"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", SPARSEPORT_VARIANT_DEFAULT, "slice"},
};

// The registry's view of a fake table: available, its variants as the table lists them.
PluginInfo info_of(const sparseport_plugin& table) {
  PluginInfo p;
  p.name = table.name;
  p.status = PluginStatus::available;
  p.table = &table;
  for (int32_t i = 0; i < table.n_variants; ++i) {
    const sparseport_variant& v = table.variants[i];
    p.variants.push_back({static_cast<sparseport_op>(v.op), v.name, (v.flags & SPARSEPORT_VARIANT_DEFAULT) != 0,
                          (v.flags & SPARSEPORT_VARIANT_VENDOR) != 0, v.doc});
  }
  return p;
}

PluginInfo fake_plugin() {
  static sparseport_plugin table = [] {
    sparseport_plugin t = *plugin("reference").table;
    t.name = "fake";
    t.variants = kFakeVariants;
    t.n_variants = static_cast<int32_t>(sizeof kFakeVariants / sizeof kFakeVariants[0]);
    t.spmm = &fake_spmm;
    t.device_signature = [](void*, char* buf, size_t len, sparseport_status*) {
      std::snprintf(buf, len, "kind=cpu\nmodel=fake\nthreads=1\nl3_bytes=1000000\nfake_version=1\n");
      return 0;
    };
    return t;
  }();
  return info_of(table);
}

struct Problem {
  HostCsr<int32_t, float> a;
  HostDense<float> b, c;
  sparseport_spmm_args args() {
    return {{a.rows, a.cols, a.nnz(), a.rowptr.data(), a.colind.data(), a.values.data(), SPARSEPORT_I32, SPARSEPORT_F32},
            {b.rows, b.cols, b.ld, b.data.data(), SPARSEPORT_F32},
            {c.rows, c.cols, c.ld, c.data.data(), SPARSEPORT_F32},
            SPARSEPORT_REDUCE_SUM,
            1.0,
            0.0,
            nullptr,
            0};
  }
};

Problem make_problem(int64_t rows) {
  Problem p;
  p.a = generate<int32_t, float>("er:" + std::to_string(rows) + ":0.001");
  p.b = HostDense<float>(p.a.cols, 8);
  for (size_t i = 0; i < p.b.data.size(); ++i) p.b.data[i] = static_cast<float>(i % 7) - 3.0f;
  p.c = HostDense<float>(p.a.rows, 8);
  return p;
}

// The sample a plugin gets: a CSR of the whole rows (sliced by the backend) then the cut rows' first
// entries, with their values; built through the reference plugin's memory calls.
TEST(SchedulerProbe, ProbeSampleOnTheBackendIsTheChosenRows) {
  std::vector<int64_t> rowptr{0};
  Problem pb;
  pb.a.rows = pb.a.cols = 20000;
  for (int64_t i = 0; i < 20000; ++i) {
    const int64_t d = i == 777 ? 9000 : (i % 5000 == 3 ? 700 : 1 + i % 3);
    for (int64_t t = 0; t < d; ++t) {
      pb.a.colind.push_back(static_cast<int32_t>((i * 131 + t * 7) % 20000));
      pb.a.values.push_back(static_cast<float>(i) + static_cast<float>(t) / 16384.0f);
    }
    rowptr.push_back(static_cast<int64_t>(pb.a.colind.size()));
    pb.a.rowptr.push_back(static_cast<int32_t>(pb.a.colind.size()));
  }
  pb.b = HostDense<float>(20000, 4);
  pb.c = HostDense<float>(20000, 4);
  sparseport_spmm_args args = pb.args();
  const std::vector<int32_t>& colind = pb.a.colind;
  const std::vector<float>& values = pb.a.values;
  Structure s;
  s.rows = s.cols = 20000;
  s.nnz = pb.a.nnz();
  s.index_type = SPARSEPORT_I32;
  s.host_rowptr = pb.a.rowptr.data();
  SchedulerOptions o;
  o.probe_frac = 0.03;
  o.min_probe_rows = 64;
  const PluginInfo ref = plugin("reference");
  ProbeSample sample(ref, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, s, o);
  const ProbeSample::Rows pick = ProbeSample::sample_rows(rowptr, o.probe_frac, o.min_probe_rows);
  ASSERT_EQ(pick.cut.size(), 5u) << "the 700-entry rows and the 9000-entry row";
  const auto& a = static_cast<const sparseport_spmm_args*>(sample.args())->a;
  ASSERT_EQ(a.rows, static_cast<int64_t>(pick.rows.size() + pick.cut.size()));
  const auto* srp = static_cast<const int32_t*>(a.rowptr);
  const auto* sci = static_cast<const int32_t*>(a.colind);
  const auto* sv = static_cast<const float*>(a.values);
  EXPECT_EQ(srp[0], 0);
  EXPECT_EQ(srp[a.rows], a.nnz);
  int64_t i = 0;
  const auto expect_row = [&](int64_t r, int64_t k) {
    ASSERT_EQ(srp[i + 1] - srp[i], k) << "sample row " << i << " (row " << r << ")";
    for (int64_t t = 0; t < k; ++t) {
      EXPECT_EQ(sci[srp[i] + t], colind[static_cast<size_t>(rowptr[static_cast<size_t>(r)] + t)]) << r;
      EXPECT_EQ(sv[srp[i] + t], values[static_cast<size_t>(rowptr[static_cast<size_t>(r)] + t)]) << r;
    }
    ++i;
  };
  for (const int64_t r : pick.rows) expect_row(r, rowptr[static_cast<size_t>(r) + 1] - rowptr[static_cast<size_t>(r)]);
  for (const auto& [r, k] : pick.cut) expect_row(r, k);
  EXPECT_NE(sample.description().find("hub rows cut"), std::string::npos) << sample.description();
}

SchedulerOptions options(const TempDir& dir, SchedulerMode mode, double alpha = 0.95) {
  SchedulerOptions o;
  o.mode = mode;
  o.cache_dir = dir.path;
  o.alpha = alpha;
  o.probe_repeats = 3;
  o.min_probe_rows = 64;
  o.probe_frac = 0.01;
  o.full_size_ms = 1e-6;  // every candidate counts as slow: decided on the probe sample, checked at full size
  return o;
}

TEST(SchedulerPipeline, ProbeChoiceThatLosesAtFullSizeIsRevertedAndRecorded) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(20000);
  sparseport_spmm_args args = pb.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_FALSE(plan->decided);
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "probe");
  EXPECT_TRUE(plan->decision.reverted) << plan->decision.reason;
  // Reverted to the fastest variant measured at full size: the probe's runner-up (1 ms there), not
  // the vendor (50 ms).
  EXPECT_EQ(plan->decision.variant, "spmm.second") << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("reverted"), std::string::npos);
  EXPECT_NE(plan->decision.reason.find("runner-up"), std::string::npos) << plan->decision.reason;
  // The vendor was 30x the trap on the probe, but the trap took far more than its extrapolation at
  // full size: the vendor is timed after all (check.hpp).
  EXPECT_NE(plan->decision.reason.find("the vendor timed after all"), std::string::npos) << plan->decision.reason;
  for (const char* v : {"spmm.trap", "spmm.vendor", "spmm.second"}) {
    bool seen = false;
    for (const Decision::Candidate& c : plan->decision.candidates)
      if (c.variant == v) seen = c.measured_ms > 0 && c.probe_ms > 0;
    EXPECT_TRUE(seen) << v << " measured on the probe and at full size";
  }
  // The output is the op's result whatever ran last.
  HostDense<float> want(pb.a.rows, 8);
  sparseport_spmm_args ref = args;
  ref.c.data = want.data.data();
  sparseport_status st{};
  ASSERT_EQ(plugin("reference").table->spmm(nullptr, "spmm.serial", &ref, &st), 0);
  EXPECT_EQ(pb.c.data, want.data);
  // Recorded: a new plan replays the reverted decision without probing.
  g_calls = 0;
  auto again = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_TRUE(again->decided);
  EXPECT_EQ(again->decision.source, "cache hit");
  EXPECT_EQ(again->decision.variant, "spmm.second");
  EXPECT_TRUE(again->decision.reverted);
  execute(again, &args, "test");
  EXPECT_EQ(g_calls.load(), 1) << "a cache hit runs the op once, no probe";
}

std::vector<float> reference_result(Problem& pb);  // the reference plugin's result (below)

// The vendor 3x or more behind on the probe, and the choice as fast at full size as the probe
// extrapolates: the check times the choice only (its call is the op's own), not the vendor.
TEST(SchedulerPipeline, AVendorFarBehindOnTheProbeIsNotTimedAtFullSize) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);  // small: the trap takes 0.1 ms and the vendor 3 ms at any size
  sparseport_spmm_args args = pb.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "probe");
  EXPECT_EQ(plan->decision.variant, "spmm.trap") << plan->decision.reason;
  EXPECT_TRUE(plan->decision.verified);
  EXPECT_FALSE(plan->decision.reverted);
  EXPECT_NE(plan->decision.reason.find("the vendor not timed at full size"), std::string::npos)
      << plan->decision.reason;
  for (const Decision::Candidate& c : plan->decision.candidates) {
    if (c.variant == "spmm.vendor") {
      EXPECT_LT(c.measured_ms, 0) << "the vendor ran on the probe only";
    }
    if (c.variant == "spmm.trap") {
      EXPECT_GT(c.measured_ms, 0) << "the choice is timed at full size";
    }
  }
  EXPECT_EQ(pb.c.data, reference_result(pb));
  std::string full_size = "(no record)";
  for (const Record& r : CacheFile(dir.path).read())
    if (r.count("full_size") != 0) full_size = r.at("full_size");
  EXPECT_NE(full_size.find("spmm.trap"), std::string::npos) << full_size;
  EXPECT_EQ(full_size.find("spmm.vendor"), std::string::npos) << full_size;
}

// A variant whose first full-size call builds its per-matrix state (a plan) and loses the check on
// that call alone is timed once more before it is judged: "stateful" takes 150 ms on its first call
// at full size and 1 ms after, the vendor 50 ms; 10 ms against 15 on the probe (1.5x, under the 3x
// at which the vendor would not be timed at all). The probe's times are long beside a preempted
// spin's overrun: at 2 against 3 ms, four busy threads on the 2-core CPU (ctest -j4) stretched both
// to 6-10 ms, the ratio fell under the guardrail's 0.95 and the vendor was kept, half the runs.
std::atomic<bool> g_stateful_built{false};
std::atomic<int> g_stateful_calls{0};  // spmm.stateful's calls at full size
int stateful_spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a, sparseport_status* st) {
  const std::string v = variant;
  const bool big = a->a.rows > 5000;
  if (v == "spmm.vendor") spin(big ? 0.050 : 0.015);
  if (v == "spmm.stateful") spin(!big ? 0.010 : g_stateful_built.exchange(true) ? 0.001 : 0.150);
  if (v == "spmm.stateful" && big) ++g_stateful_calls;
  return plugin("reference").table->spmm(x, "spmm.serial", a, st);
}

const sparseport_variant kStatefulVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.vendor", SPARSEPORT_VARIANT_VENDOR | SPARSEPORT_VARIANT_DEFAULT, "vendor"},
    {SPARSEPORT_OP_SPMM, "spmm.stateful", 0, "slow on its first full-size call, fast after"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", SPARSEPORT_VARIANT_DEFAULT, "slice"},
};

// The fake plugin's table under another name, with variants and an spmm slot of its own.
template <size_t N>
sparseport_plugin fake_table(const char* name, const sparseport_variant (&variants)[N],
                             decltype(sparseport_plugin::spmm) spmm) {
  sparseport_plugin t = *fake_plugin().table;
  t.name = name;
  t.variants = variants;
  t.n_variants = static_cast<int32_t>(N);
  t.spmm = spmm;
  return t;
}

// The fake plugin's table with spmm.stateful beside its vendor.
PluginInfo stateful_plugin() {
  static const sparseport_plugin table = fake_table("stateful", kStatefulVariants, &stateful_spmm);
  return info_of(table);
}

TEST(SchedulerPipeline, AChoiceThatLosesOnlyItsFirstFullSizeCallIsTimedAgainAndKept) {
  const PluginInfo stateful = stateful_plugin();
  g_stateful_built = false;
  TempDir dir;
  Problem pb = make_problem(20000);
  sparseport_spmm_args args = pb.args();
  auto plan = prepare(stateful, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "probe");
  EXPECT_EQ(plan->decision.variant, "spmm.stateful") << plan->decision.reason;
  EXPECT_FALSE(plan->decision.reverted) << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("spmm.stateful timed twice at full size"), std::string::npos)
      << plan->decision.reason;
  EXPECT_EQ(pb.c.data, reference_result(pb)) << "the last call is the kept variant's";
  // Recorded as kept: a new plan replays it.
  auto again = prepare(stateful, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_EQ(again->decision.source, "cache hit");
  EXPECT_EQ(again->decision.variant, "spmm.stateful");
}

// The check's skip path on that variant: its first full-size call (150 ms) is over kScaleSlack times
// the expected 20 ms, so it is timed once more (1 ms) and the vendor stays out. The op's own call is
// the first one (the caller's first call pays its first touches and state with or without the
// check), so the check's overhead is the second: op_seconds is the first call's time.
// Each fake call also runs the reference spmm for its result: ~2 ms on this problem in a Release
// build, ~50 ms in the Debug sanitizer build (debug-sanitize preset), where a second call of 51 ms
// went over the 40 ms the test allowed it. So the expected time is the 20 ms plus that call, timed
// here; the first call's 150 ms stays over twice that while the reference takes under 110 ms.
TEST(SchedulerPipeline, ASkippedVendorsCheckCountsTheFirstCallAsTheOpsOwn) {
  const PluginInfo stateful = stateful_plugin();
  g_stateful_built = false;
  Problem pb = make_problem(20000);
  sparseport_spmm_args args = pb.args();
  double reference_s = 1e300;
  for (int rep = 0; rep < 2; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    reference_result(pb);
    reference_s = std::min(reference_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  ASSERT_LT(reference_s, 0.100) << "a build this slow cannot tell the 150 ms first call from twice the expected time";
  ProbeEvidence evidence;
  evidence.chosen_s = 0.020 + reference_s;
  evidence.vendor_s = 0.500;
  evidence.work_fraction = 1.0;
  const CheckResult r = full_size_check(stateful, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, "spmm.stateful",
                                        "spmm.vendor", "", "test", evidence);
  EXPECT_TRUE(r.vendor_skipped) << r.note;
  EXPECT_EQ(r.variant, "spmm.stateful");
  ASSERT_EQ(r.measured.size(), 1u);
  EXPECT_LT(r.measured[0].second, 2 * evidence.chosen_s) << "the second call, judged against 2 x (20 ms + the reference's)";
  EXPECT_GE(r.op_seconds, 0.150) << "the first call, with its 150 ms state build";
  EXPECT_EQ(pb.c.data, reference_result(pb));
}

// The block sample (check.hpp): where the probe's margin is under kSkipMargin (1.5x here), the
// vendor's full-size call is left out when its time on the blocks, extrapolated, is kBlockMargin
// (1.5) times the pick's full-size call or more; else the vendor is timed at full size. The blocks
// are asked for only where the vendor's call on them is expected to last kBlockCallSeconds, and a
// measured call shorter than that leaves nothing out. Timings on the blocks come from the callback,
// so only the full-size calls spin (spmm.stateful, built: 1 ms; the vendor 50 ms).
TEST(SchedulerPipeline, TheBlockSampleLeavesTheVendorOutOnlyWhereItLostThereByTheMargin) {
  const PluginInfo stateful = stateful_plugin();
  Problem pb = make_problem(20000);
  sparseport_spmm_args args = pb.args();
  ProbeEvidence evidence;  // 1.5x on the probe, the vendor 30 ms expected at full size: 3.75 ms on the blocks
  evidence.chosen_s = 0.010;
  evidence.vendor_s = 0.015;
  evidence.work_fraction = 0.5;
  // vendor_ms: the vendor's time on the blocks extrapolated to full size, against the pick's call
  // (1 ms of spin and the reference spmm; 16-26 ms with both cores busy). block_s, where given, is
  // the vendor's measured call on the blocks instead (the same extrapolation).
  double asked_fraction = 0;
  const auto check_with = [&](double vendor_ms, int* asked, double block_s = -1) {
    g_stateful_built = true;
    return full_size_check(stateful, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, "spmm.stateful", "spmm.vendor", "",
                           "test", evidence, [&](double fraction) {
                             ++*asked;
                             asked_fraction = fraction;
                             BlockTimes b;
                             b.vendor_s = block_s > 0 ? block_s : fraction * vendor_ms * 1e-3;
                             b.chosen_s = std::min(fraction * 0.001, b.vendor_s / 10);  // well within the margin there
                             b.work_fraction = b.vendor_s / (vendor_ms * 1e-3);
                             b.description = "the test's blocks";
                             return b;
                           });
  };
  int asked = 0;
  const CheckResult skip = check_with(1e4, &asked);  // 10 s: beyond any load's stretch of the pick's call
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(asked_fraction, kBlockFraction) << "30 ms expected of the vendor: a call on 1/8 of it lasts 3.75 ms";
  EXPECT_TRUE(skip.vendor_skipped) << skip.note;
  EXPECT_EQ(skip.variant, "spmm.stateful");
  ASSERT_EQ(skip.measured.size(), 1u) << "the pick's full-size call only";
  EXPECT_NE(skip.note.find("the test's blocks"), std::string::npos) << skip.note;
  EXPECT_EQ(pb.c.data, reference_result(pb));

  asked = 0;
  // 1 ms extrapolated from 0.6 ms on the blocks: under 1.5x the pick's call (1 ms of spin at least).
  g_stateful_calls = 0;
  const CheckResult timed = check_with(1, &asked, 0.6e-3);
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(timed.vendor_skipped) << timed.note;
  bool vendor_timed = false;
  for (const auto& [v, t] : timed.measured) vendor_timed = vendor_timed || v == "spmm.vendor";
  EXPECT_TRUE(vendor_timed) << "1 ms extrapolated is under the margin: the vendor is timed at full size";
  EXPECT_EQ(timed.variant, "spmm.stateful") << timed.note;
  EXPECT_EQ(pb.c.data, reference_result(pb)) << "the last call is the kept variant's";
  EXPECT_EQ(g_stateful_calls.load(), 2) << "the op's own call, then after the vendor's the one that leaves its "
                                           "result; not a second call before the vendor's: "
                                        << timed.note;

  // 10 s extrapolated, but from a call of 0.1 ms on the blocks: the vendor's fixed costs could make
  // up most of it, so it leaves nothing out.
  asked = 0;
  const CheckResult brief = check_with(1e4, &asked, 1e-4);
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(brief.vendor_skipped) << brief.note;

  // A pick expected to take 1.5 ms and a vendor 3 ms: 1/8 of the vendor's would last 0.375 ms, under
  // kBlockCallSeconds, so the blocks take 1/6 of the entries (0.5 ms of the vendor's). The share is
  // the vendor's: a pick this short got no blocks when it was set from the pick's time.
  evidence.chosen_s = 0.0015;
  evidence.vendor_s = 0.003;
  evidence.work_fraction = 1.0;
  asked = 0;
  const CheckResult shorter = check_with(1e4, &asked);
  EXPECT_EQ(asked, 1);
  EXPECT_NEAR(asked_fraction, kBlockCallSeconds / 0.003, 1e-12);
  EXPECT_TRUE(shorter.vendor_skipped) << shorter.note;

  // The vendor expected at 1.5 ms: even kBlockFractionMax of it (0.375 ms) is too short to weigh its
  // fixed costs.
  evidence.chosen_s = 0.001;
  evidence.vendor_s = 0.0015;
  asked = 0;
  const CheckResult short_op = check_with(1e4, &asked);
  EXPECT_EQ(asked, 0) << "no block sample where the vendor's call on it would be this short";
  EXPECT_FALSE(short_op.vendor_skipped);
}

// The probe sample's rows: without a row over 8x the mean degree, runs of consecutive rows (the
// locality of neighbouring rows kept); with hub rows, rows stratified by degree (the hubs' share of
// the work kept). Both 20000 rows, the probe forced; the reason names the sample.
TEST(SchedulerProbe, ASampleWithoutHubsIsRunsOfRowsAndOneWithHubsIsStratified) {
  const PluginInfo fake = fake_plugin();
  for (const auto& [spec, how] : {std::pair<std::string, std::string>{"er:20000:0.001", "blocks of consecutive rows (no hub rows)"},
                                  {"hubs:20000:20:20:4000", "stratified by degree"}}) {
    TempDir dir;
    Problem pb;
    pb.a = generate<int32_t, float>(spec);
    pb.b = HostDense<float>(pb.a.cols, 8);
    pb.c = HostDense<float>(pb.a.rows, 8);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
    execute(plan, &args, "test");
    EXPECT_EQ(plan->decision.source, "probe") << spec << ": " << plan->decision.reason;
    EXPECT_NE(plan->decision.reason.find(how), std::string::npos) << spec << ": " << plan->decision.reason;
  }
}

// ProbeSample::block_rows: kBlocks runs of consecutive rows, ascending, each around its entry
// quantile, together about the fraction asked of the entries; nothing where a mega-row would make
// them more than twice that.
TEST(SchedulerProbe, TheBlockSampleIsRunsOfRealRowsAroundTheEntryQuantiles) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> rowptr{0};
  for (int i = 0; i < 100000; ++i) rowptr.push_back(rowptr.back() + ((i / 500) % 7 == 0 ? 0 : static_cast<int64_t>(rng() % 40)));
  const auto nnz = static_cast<double>(rowptr.back());
  const ProbeSample::Rows b = ProbeSample::block_rows(rowptr, 0.125, 4);
  ASSERT_FALSE(b.rows.empty());
  EXPECT_TRUE(b.cut.empty());
  EXPECT_TRUE(std::is_sorted(b.rows.begin(), b.rows.end()));
  EXPECT_EQ(std::adjacent_find(b.rows.begin(), b.rows.end()), b.rows.end()) << "no row twice";
  int runs = 1;
  int64_t entries = 0;
  for (size_t j = 0; j < b.rows.size(); ++j) {
    runs += j > 0 && b.rows[j] != b.rows[j - 1] + 1;
    entries += rowptr[static_cast<size_t>(b.rows[j]) + 1] - rowptr[static_cast<size_t>(b.rows[j])];
  }
  EXPECT_EQ(runs, 4);
  EXPECT_NEAR(static_cast<double>(entries) / nnz, 0.125, 0.002);
  for (int k = 0; k < 4; ++k) {  // the row holding quantile (2k + 1) / 8 is taken
    const auto centre = static_cast<int64_t>(nnz * (2 * k + 1) / 8);
    const auto row = std::upper_bound(rowptr.begin() + 1, rowptr.end(), centre) - rowptr.begin() - 1;
    EXPECT_TRUE(std::binary_search(b.rows.begin(), b.rows.end(), row)) << "quantile " << 2 * k + 1 << "/8";
  }
  // A mega-row of 60 % of the entries: a block would hold it whole, 5x the fraction asked.
  std::vector<int64_t> mega{0, 10, 20, 620, 630, 1000};
  EXPECT_TRUE(ProbeSample::block_rows(mega, 0.125, 4).rows.empty());
}

TEST(SchedulerPipeline, GuardrailKeepsTheVendorWhenNoNativeIsFastEnough) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);  // small: trap is 30x faster than the vendor here
  sparseport_spmm_args args = pb.args();
  // alpha 0.001: trap (0.1 ms) would need to beat 0.001 x vendor (3 ms; at load 8 on 2 cores a
  // busy-spinning vendor was preempted to 14-21 ms, which beat 0.01).
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe, 0.001));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.variant, "spmm.vendor");
  EXPECT_NE(plan->decision.reason.find("guardrail"), std::string::npos) << plan->decision.reason;
  // With the default alpha the trap wins on this small input and stays (it is faster at this size).
  auto plan2 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(plan2, &args, "test");
  EXPECT_EQ(plan2->decision.variant, "spmm.trap") << plan2->decision.reason;
  EXPECT_FALSE(plan2->decision.reverted);
  EXPECT_TRUE(plan2->decision.verified);
}

// A model file for the fake device: every variant a one-leaf tree, so the prediction of variant v
// is exactly its value (log2 of its time over the floor).
std::string one_leaf_model(const std::string& device_class, double margin,
                           const std::vector<std::pair<std::string, double>>& predictions, double sigma = 0.1) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string variants;
  for (const auto& [v, y] : predictions) {
    if (!variants.empty()) variants += ',';
    variants += '"';
    variants += v;
    variants += "\": {\"base\": 0, \"trees\": [{\"split\": [-1], \"threshold\": [0], \"left\": [0], ";
    variants += "\"right\": [0], \"value\": [";
    variants += std::to_string(y);
    variants += "]}]}";
  }
  std::string out = "{\"format\": \"sparseport-trees-1\", \"device_class\": \"";
  out += device_class;
  out += "\", \"features\": [\"f:log2_nnz\"], \"ops\": {\"spmm\": {\"margin\": ";
  out += std::to_string(margin);
  out += ", \"sigma\": ";
  out += std::to_string(sigma);
  out += ", \"variants\": {";
  out += variants;
  out += "}}}}";
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(SchedulerModel, AConfidentModelDecidesAloneAndAnUnsureOneIsTimed) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // Lead of spmm.second over the next (the vendor): 1.0 (log2), margin 0.5: the model decides alone.
  write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 0.5,
                                                        {{"spmm.second", 1.0}, {"spmm.vendor", 2.0},
                                                         {"spmm.trap", 3.0}, {"spmm.slow", 4.0}}));
  g_calls = 0;
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "model") << plan->decision.reason;
  EXPECT_TRUE(plan->decision.model_alone);
  EXPECT_NEAR(plan->decision.lead, 1.0, 1e-9);
  EXPECT_EQ(plan->decision.model.rfind("own", 0), 0u) << plan->decision.model;
  // No timing to decide; the pick is then checked against the vendor on this first call (the
  // vendor's call and the pick's, the op's own), as in automatic mode. At this size the two are
  // 3 ms and 1 ms, a gap a loaded machine can reverse: the check may then revert the pick (to the
  // faster measured), which the reason says. ...TheModelsPickIsChecked... tests the check itself.
  EXPECT_TRUE(plan->decision.verified);
  EXPECT_GE(g_calls.load(), 2) << "the vendor's call and the op's";
  if (!plan->decision.reverted) {
    EXPECT_EQ(plan->decision.variant, "spmm.second");
    // Loaded the same way, the pick can lose only its first call; the check then times it once
    // more before keeping it (83ee4a3), which the reason says: one call more (seen in a CI
    // rehearsal beside a CUDA build, 2026-12-04).
    const bool retimed = plan->decision.reason.find("timed twice") != std::string::npos;
    EXPECT_EQ(g_calls.load(), retimed ? 3 : 2) << plan->decision.reason;
  } else {
    EXPECT_NE(plan->decision.reason.find("reverted"), std::string::npos) << plan->decision.reason;
  }
  ASSERT_EQ(plan->decision.candidates.size(), 4u);
  EXPECT_NEAR(plan->decision.candidates[0].predicted_ms, 2 * plan->decision.floor_ms, 1e-9);
  EXPECT_FALSE(plan->decision.inputs.empty());

  // Margin 2 (above the lead 1): not sure, so the candidates are timed at full size, and the
  // measurement decides, not the model. The pick is checked against the recorded times (the fastest
  // measured native if within alpha of the vendor, else the vendor), not against the spin times:
  // with a 5 ms budget each candidate gets one timed call, and on a loaded 2-core machine one
  // preemption reorders the trap (0.1 ms) and spmm.second (1 ms).
  TempDir models2;
  ScopedEnv model_dir2("SPARSEPORT_MODEL_DIR", models2.path.c_str());
  write_file(models2.path + "/fake.json", one_leaf_model("fake-x86_64", 2.0,
                                                         {{"spmm.second", 1.0}, {"spmm.vendor", 2.0},
                                                          {"spmm.trap", 3.0}, {"spmm.slow", 4.0}}));
  SchedulerOptions o = options(dir, SchedulerMode::probe);
  o.full_size_ms = 1e3;
  auto timed = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
  execute(timed, &args, "test");
  EXPECT_FALSE(timed->decision.model_alone);
  EXPECT_EQ(timed->decision.source, "timed") << timed->decision.reason;
  double vendor_ms = -1;
  const Decision::Candidate* fastest = nullptr;
  for (const Decision::Candidate& c : timed->decision.candidates) {
    if (c.measured_ms < 0) continue;  // beyond the top k predicted
    if (c.variant == timed->decision.vendor) vendor_ms = c.measured_ms;
    else if (fastest == nullptr || c.measured_ms < fastest->measured_ms) fastest = &c;
  }
  ASSERT_NE(fastest, nullptr) << timed->decision.timing;
  ASSERT_GT(vendor_ms, 0) << timed->decision.timing;
  const std::string want = fastest->measured_ms <= o.alpha * vendor_ms ? fastest->variant : timed->decision.vendor;
  EXPECT_EQ(timed->decision.variant, want) << timed->decision.reason;
  EXPECT_EQ(timed->decision.timing.find("full size") != std::string::npos, true) << timed->decision.timing;
  EXPECT_TRUE(timed->decision.verified) << "measured at full size: no separate check";
}

TEST(SchedulerModel, TheModelsPickIsCheckedAgainstTheVendorOnItsFirstCallAndItsRecordHitsUnchecked) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(20000);  // full size: the trap takes 200 ms, the vendor 50, second 1
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // The model is sure (lead 1 over margin 0.5) and wrong: it believes the trap is the fastest.
  write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 0.5,
                                                        {{"spmm.trap", 0.0}, {"spmm.second", 1.0},
                                                         {"spmm.vendor", 2.0}, {"spmm.slow", 3.0}}));
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "model") << plan->decision.reason;
  EXPECT_TRUE(plan->decision.model_alone);
  EXPECT_TRUE(plan->decision.verified) << "checked against the vendor on the first call";
  EXPECT_TRUE(plan->decision.reverted) << plan->decision.reason;
  // Reverted to the fastest measured at full size: the model's second native, not the vendor.
  EXPECT_EQ(plan->decision.variant, "spmm.second") << plan->decision.reason;
  EXPECT_EQ(pb.c.data, reference_result(pb)) << "the output is the op's result";
  // The record is verified: a new plan (another process's) replays it without a check.
  g_calls = 0;
  auto again = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_EQ(again->decision.source, "cache hit");
  EXPECT_TRUE(again->decision.verified);
  execute(again, &args, "test");
  EXPECT_EQ(again->decision.variant, "spmm.second");
  EXPECT_EQ(g_calls.load(), 1) << "a hit of a checked model decision runs the op once";
}

TEST(SchedulerModel, AVendorPredictedFarBehindIsNotTimedWhenThePickRunsAsPredicted) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(20000);  // full size: second takes 1 ms, the vendor 50
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // log2(t / floor): second predicted at 2^20 floors (far above its real 1 ms: it runs well within
  // twice its prediction), the vendor 32x that, the others further. one_leaf_model writes no sigma.
  write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 0.5,
                                                        {{"spmm.second", 20.0}, {"spmm.vendor", 25.0},
                                                         {"spmm.trap", 26.0}, {"spmm.slow", 27.0}}));
  g_calls = 0;
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  execute(plan, &args, "test");
  EXPECT_EQ(plan->decision.source, "model") << plan->decision.reason;
  EXPECT_EQ(plan->decision.variant, "spmm.second");
  EXPECT_TRUE(plan->decision.verified);
  EXPECT_EQ(g_calls.load(), 1) << "the pick's call only: " << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("the vendor not timed at full size"), std::string::npos) << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("by the model's prediction"), std::string::npos) << plan->decision.reason;
  EXPECT_EQ(pb.c.data, reference_result(pb));
}

// Where the budget affords one call each of the two best predicted, both natives, and the host
// backend's own model errs by less than 15 % (sigma), the model's pick runs without that timing and
// is checked against the vendor on its first call; a model that errs more still times the two.
TEST(SchedulerModel, AnUnsureButAccurateModelsPickIsCheckedInsteadOfTwoSingleCalls) {
  const PluginInfo fake = fake_plugin();
  for (const double sigma : {0.1, 0.5}) {
    TempDir dir, models;
    Problem pb = make_problem(2000);  // full size: second 0.1 ms, slow 0.5, the vendor 5, the trap 20
    sparseport_spmm_args args = pb.args();
    ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
    // Unsure (margin 9), every variant with a tree of its own; the vendor predicted third, and the
    // predictions far above the spins, so that one call each of the candidates exceeds the budget.
    write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 9.0,
                                                          {{"spmm.second", 20.0}, {"spmm.slow", 20.5},
                                                           {"spmm.vendor", 22.0}, {"spmm.trap", 23.0}},
                                                          sigma));
    SchedulerOptions o = options(dir, SchedulerMode::automatic);
    o.full_size_ms = 1e12;  // at full size, however long the predictions
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
    execute(plan, &args, "test");
    const Decision& d = plan->decision;
    EXPECT_FALSE(d.model_alone) << "below its margin: not the confident path";
    std::map<std::string, double> measured;
    for (const Decision::Candidate& c : d.candidates)
      if (c.measured_ms >= 0) measured[c.variant] = c.measured_ms;
    if (sigma < std::log2(1.15)) {
      EXPECT_EQ(d.source, "model") << d.reason;
      EXPECT_EQ(d.timing, "none");
      EXPECT_TRUE(d.verified) << "checked against the vendor on its first call: " << d.reason;
      EXPECT_EQ(measured.count("spmm.trap"), 0u) << d.reason;
      // The pick is the best predicted unless its check lost to the vendor on a preempted call, which
      // the reason then says.
      if (d.variant != "spmm.second") {
        EXPECT_NE(d.reason.find("revert"), std::string::npos) << d.reason;
      }
    } else {
      EXPECT_EQ(d.source, "timed") << d.reason;
      EXPECT_EQ(measured.count("spmm.second") + measured.count("spmm.slow"), 2u) << "the two best predicted, timed";
    }
    EXPECT_EQ(pb.c.data, reference_result(pb)) << "sigma " << sigma;
  }
}

// A timed decision times the best predicted last, by its first call alone where that already beats
// the other's timed call, and that call is the op's own: the other's warm-up and timed call and the
// pick's one call, three calls in all where there were five (both timed twice, then the op). With
// beta != 0 the op reads C, so the result must be the pick's one call on the C the caller gave.
TEST(SchedulerModel, ATimedDecisionsLastCallIsThePicksAndTheOpsOwn) {
  const PluginInfo fake = fake_plugin();
  for (const float beta : {0.0f, 0.5f}) {
    TempDir dir, models;
    Problem pb = make_problem(2000);  // small: second takes 1 ms, slow 15, the vendor 3, the trap 0.1
    for (size_t i = 0; i < pb.c.data.size(); ++i) pb.c.data[i] = static_cast<float>(i % 5) - 2.0f;
    sparseport_spmm_args args = pb.args();
    args.beta = beta;
    std::vector<float> want = pb.c.data;
    {
      sparseport_spmm_args ref = args;
      ref.c.data = want.data();
      sparseport_status st{};
      ASSERT_EQ(plugin("reference").table->spmm(nullptr, "spmm.serial", &ref, &st), 0);
    }
    ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
    // Unsure (margin 9) and inaccurate (sigma 0.5: no pick without timing), second then slow
    // predicted best, the vendor third, the predictions far above the spins: one call each of the
    // two best predicted is the whole timing.
    write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 9.0,
                                                          {{"spmm.second", 20.0}, {"spmm.slow", 20.5},
                                                           {"spmm.vendor", 22.0}, {"spmm.trap", 23.0}},
                                                          0.5));
    SchedulerOptions o = options(dir, SchedulerMode::automatic);
    o.full_size_ms = 1e12;
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
    g_calls = 0;
    execute(plan, &args, "test");
    const Decision& d = plan->decision;
    EXPECT_EQ(d.source, "timed") << d.reason;
    EXPECT_EQ(d.variant, "spmm.second") << d.reason;
    std::map<std::string, double> measured;
    for (const Decision::Candidate& c : d.candidates)
      if (c.measured_ms >= 0) measured[c.variant] = c.measured_ms;
    EXPECT_EQ(measured.count("spmm.second") + measured.count("spmm.slow"), 2u) << "the two best predicted, timed";
    // 15 ms against 1 ms: a preempted spin would have to last 14 ms longer to give second a second call.
    EXPECT_EQ(g_calls.load(), 3) << "slow's two calls and second's one, which is the op's: " << d.reason;
    EXPECT_EQ(pb.c.data, want) << "beta " << beta;
    EXPECT_GT(d.decide_seconds, 0.0);
    // The next call of the plan runs the pick once.
    g_calls = 0;
    pb.c.data.assign(pb.c.data.size(), 0.0f);
    args.beta = 0.0f;
    execute(plan, &args, "test");
    EXPECT_EQ(g_calls.load(), 1);
  }
}

TEST(SchedulerModel, AVariantTheModelWasNotTrainedOnIsTimedWhateverItsRank) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(20000);  // full size: the trap takes 200 ms, the vendor 50, slow 5, second 1
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // An unsure model (margin 9) with no tree for spmm.second, as cuda-sm90 has none for merge_path:
  // second is ranked by its estimate scaled to the others, here level with slow, after it (the
  // stable sort), so that with the two best natives timed (top_k 2) it would never run. The
  // predictions are far above the spins, so that one call each exceeds the budget (5 ms at this size)
  // and only the two best predicted are timed.
  write_file(models.path + "/fake.json", one_leaf_model("fake-x86_64", 9.0,
                                                        {{"spmm.trap", 20.0}, {"spmm.slow", 21.0},
                                                         {"spmm.vendor", 22.0}}));
  SchedulerOptions o = options(dir, SchedulerMode::automatic);
  o.full_size_ms = 1e12;  // at full size, however long the predictions
  o.top_k = 2;
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
  execute(plan, &args, "test");
  const Decision& d = plan->decision;
  EXPECT_FALSE(d.model_alone);
  EXPECT_EQ(d.source, "timed") << d.reason;
  EXPECT_NE(d.timing.find("the variants the model was not trained on"), std::string::npos) << d.timing;
  std::map<std::string, double> measured;
  for (const Decision::Candidate& c : d.candidates)
    if (c.measured_ms >= 0) measured[c.variant] = c.measured_ms;
  EXPECT_EQ(measured.count("spmm.second"), 1u) << "the untrained variant is timed: " << d.timing;
  EXPECT_EQ(measured.count("spmm.trap") + measured.count("spmm.slow"), 2u) << "and the two best predicted";
  EXPECT_EQ(measured.count("spmm.vendor"), 0u) << "the vendor, predicted third, is not";
  // The pick is the fastest measured (second's 1 ms against slow's 5 and the trap's 200 on an idle
  // machine; a preempted call can reorder second and slow, never the pick and the measurements).
  const auto fastest = std::min_element(measured.begin(), measured.end(),
                                        [](const auto& x, const auto& y) { return x.second < y.second; });
  EXPECT_EQ(d.variant, fastest->first) << d.reason;
  EXPECT_EQ(pb.c.data, reference_result(pb));
}

TEST(SchedulerModel, AnotherDevicesModelIsCorrectedByTheMeasurementsMadeHere) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // Only another backend's model ships: it believes the slow variant is the fastest.
  write_file(models.path + "/other.json", one_leaf_model("other-x86_64", 9.0,
                                                         {{"spmm.slow", 0.0}, {"spmm.vendor", 1.0},
                                                          {"spmm.trap", 1.5}, {"spmm.second", 2.0}}));
  SchedulerOptions o = options(dir, SchedulerMode::probe);
  o.full_size_ms = 1e3;
  auto first = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
  execute(first, &args, "test");
  EXPECT_NE(first->decision.model.find("nearest: other-x86_64"), std::string::npos) << first->decision.model;
  const DeviceSignature sig = device_signature(fake, {nullptr, 1, 0});
  const Correction c = load_correction(dir.path, sig.hash, "spmm");
  EXPECT_GE(c.measurements, 3) << "the full-size times were recorded for the transfer";
  // spmm.slow measured far above its prediction, the trap below: their corrections say so.
  EXPECT_GT(c.bias("spmm.slow"), c.bias("spmm.trap"));
  auto second = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
  execute(second, &args, "test");
  EXPECT_NE(second->decision.model.find("transfer measurements"), std::string::npos) << second->decision.model;
  EXPECT_NE(second->decision.candidates.front().variant, "spmm.slow")
      << "after the correction the slow variant is no longer predicted fastest";
}

TEST(SchedulerModel, WithoutItsBackendsModelTheSameHardwaresComesBeforeAnotherDevices) {
  TempDir dir, models;
  const PluginInfo fake = fake_plugin();  // device class fake-x86_64
  Problem pb = make_problem(2000);
  sparseport_spmm_args args = pb.args();
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  const std::vector<std::pair<std::string, double>> leaves = {
      {"spmm.second", 1.0}, {"spmm.vendor", 2.0}, {"spmm.trap", 3.0}, {"spmm.slow", 4.0}};
  // "aaa-sm90" comes first by name (as cuda-sm90 before openmp-x86_64); a GPU's model is the last resort.
  write_file(models.path + "/aaa.json", one_leaf_model("aaa-sm90", 9.0, leaves));
  write_file(models.path + "/zzz.json", one_leaf_model("zzz-x86_64", 9.0, leaves));
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::model));
  execute(plan, &args, "test");
  EXPECT_NE(plan->decision.model.find("nearest: zzz-x86_64 for fake-x86_64 (another backend, same hardware)"),
            std::string::npos)
      << plan->decision.model;
  // With only the GPU's model, that one.
  TempDir dir2, models2;
  ScopedEnv model_dir2("SPARSEPORT_MODEL_DIR", models2.path.c_str());
  write_file(models2.path + "/aaa.json", one_leaf_model("aaa-sm90", 9.0, leaves));
  auto plan2 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir2, SchedulerMode::model));
  execute(plan2, &args, "test");
  EXPECT_NE(plan2->decision.model.find("nearest: aaa-sm90 for fake-x86_64 (another backend)"), std::string::npos)
      << plan2->decision.model;
}

TEST(SchedulerModel, KokkosOnAGpuIsAGpuClassAndTakesAGpusModelNotTheKokkosCpuOne) {
  // kokkos's signature names its execution space and no kind (backends/kokkos/runtime.cpp).
  EXPECT_EQ(device_class("kokkos", make_signature({{"exec_space", "Cuda"}, {"memory_space", "CudaSpace"}})),
            "kokkos-smunknown");
  EXPECT_EQ(device_class("kokkos", make_signature({{"exec_space", "OpenMP"}, {"memory_space", "HostSpace"}})).rfind("kokkos-sm", 0),
            std::string::npos);
  TempDir models;
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  const std::vector<std::pair<std::string, double>> leaves = {{"spmm.vendor", 1.0}};
  write_file(models.path + "/cuda.json", one_leaf_model("cuda-sm90", 9.0, leaves));
  write_file(models.path + "/kokkos.json", one_leaf_model("kokkos-x86_64", 9.0, leaves));
  write_file(models.path + "/openmp.json", one_leaf_model("openmp-x86_64", 9.0, leaves));
  std::string how;
  const CostModel* m = model_for("kokkos-smunknown", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "cuda-sm90") << how;
  m = model_for("cuda-sm80", &how);  // another GPU: its backend's model on another GPU
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "cuda-sm90") << how;
  EXPECT_NE(how.find("(same backend)"), std::string::npos) << how;
  m = model_for("kokkos-x86_64", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(how, "own (kokkos-x86_64)");
  m = model_for("openmp-aarch64", &how);  // another CPU: its backend's model on another CPU
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "openmp-x86_64") << how;
  // What the kokkos plugin says on Kokkos-CUDA (backends/kokkos/runtime.cpp, gpu_signature): the
  // GPU's class by its compute capability, which without a kokkos-sm90 model (none in this folder;
  // one ships, next test) takes cuda-sm90's, and a GPU's roofline (an
  // H200's bandwidth, not one host thread's 12 GB/s).
  const DeviceSignature kokkos_cuda = make_signature({{"exec_space", "Cuda"}, {"kind", "gpu"},
                                                      {"compute_capability", "9.0"}, {"sms", "132"},
                                                      {"l2_bytes", "52428800"}, {"peak_gbps", "4800"}});
  EXPECT_EQ(device_class("kokkos", kokkos_cuda), "kokkos-sm90");
  m = model_for("kokkos-sm90", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "cuda-sm90") << how;
  const Machine gpu = machine(kokkos_cuda);
  EXPECT_TRUE(gpu.gpu);
  EXPECT_NEAR(gpu.bandwidth, 0.85e9 * 4800, 1e6);
  EXPECT_EQ(gpu.cache_bytes, 52428800.0);
  EXPECT_FALSE(machine(make_signature({{"exec_space", "Cuda"}})).gpu)
      << "without kind=gpu (the plugin before gpu_signature) the roofline took it for a host thread";
}

TEST(SchedulerModel, KokkosOnCudaTakesAKokkosSm90ModelOfItsOwnWhenThereIsOne) {
  // With a kokkos-sm90 model beside the others, the class on Kokkos-CUDA takes it (without one it
  // takes cuda-sm90's, above); the CPU classes keep theirs. A kokkos GPU of no known compute
  // capability (HIP, SYCL, or CUDA without its properties) now takes the same backend's GPU model
  // before another backend's.
  TempDir models;
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  const std::vector<std::pair<std::string, double>> leaves = {{"spmm.vendor", 1.0}};
  write_file(models.path + "/cuda-sm90.json", one_leaf_model("cuda-sm90", 9.0, leaves));
  write_file(models.path + "/kokkos-sm90.json", one_leaf_model("kokkos-sm90", 9.0, leaves));
  write_file(models.path + "/kokkos-x86_64.json", one_leaf_model("kokkos-x86_64", 9.0, leaves));
  write_file(models.path + "/openmp-x86_64.json", one_leaf_model("openmp-x86_64", 9.0, leaves));
  const DeviceSignature kokkos_cuda = make_signature({{"exec_space", "Cuda"}, {"kind", "gpu"},
                                                      {"compute_capability", "9.0"}, {"memory_space", "CudaSpace"}});
  ASSERT_EQ(device_class("kokkos", kokkos_cuda), "kokkos-sm90");
  std::string how;
  const CostModel* m = model_for("kokkos-sm90", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "kokkos-sm90") << how;
  EXPECT_EQ(how, "own (kokkos-sm90)");
  m = model_for("cuda-sm90", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(how, "own (cuda-sm90)");
  m = model_for("kokkos-x86_64", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(how, "own (kokkos-x86_64)");
  m = model_for("kokkos-smunknown", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "kokkos-sm90") << how;
  EXPECT_NE(how.find("(same backend)"), std::string::npos) << how;
  m = model_for("cuda-sm80", &how);  // a CUDA GPU still takes the cuda backend's model, not kokkos's
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "cuda-sm90") << how;
}

TEST(SchedulerModel, EveryShippedModelParsesAsItsOwnClassAndKokkosOnCudaHasOne) {
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", nullptr);  // the models compiled into the library
  ScopedEnv model_off("SPARSEPORT_MODEL", nullptr);
  std::vector<std::string> classes;
  for (const auto& [name, text] : detail_models::shipped()) {
    classes.push_back(name);
    std::string how;
    const CostModel* m = model_for(name, &how);  // the file's name is its class (scheduler/models/<class>.json)
    ASSERT_NE(m, nullptr) << name << ": " << how;
    EXPECT_EQ(m->device_class(), name) << how;
    EXPECT_EQ(how, "own (" + name + ")");
    EXPECT_NE(m->op("spmm"), nullptr) << name;
  }
  for (const char* cls : {"cuda-sm90", "openmp-x86_64", "kokkos-x86_64", "kokkos-sm90"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), cls), classes.end()) << cls << " is not shipped";
  EXPECT_EQ(std::find(classes.begin(), classes.end(), "test-fixture"), classes.end()) << "fixtures are not shipped";
  // What the kokkos plugin reports on Kokkos-CUDA on an H200 (backends/kokkos/runtime.cpp).
  const DeviceSignature kokkos_cuda = make_signature({{"exec_space", "Cuda"}, {"kind", "gpu"},
                                                      {"compute_capability", "9.0"}, {"memory_space", "CudaSpace"}});
  std::string how;
  const CostModel* m = model_for(device_class("kokkos", kokkos_cuda), &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(how, "own (kokkos-sm90)");
  // Trained on records of every variant with hub_split's whole rows on a device (2026-12-07, an
  // H100: benchmarks/results/2026-12-07-s37.md), so that hub_split is ranked by a tree of its own.
  // A model trained before that kernel had none (it was timed beside the pick instead).
  for (const char* v : {"spmm.hub_split", "spmm.team_rows", "spmm.kokkoskernels"})
    EXPECT_TRUE(m->predict("spmm", v, m->columns({})).has_value()) << v;
  // cuda-sm90's spmm, retrained with every cuda variant's records (2026-12-07, an H100:
  // benchmarks/results/2026-12-07-s38.md): the variants added after its first training have trees
  // of their own, so a cold decision no longer times them beside the two best predicted.
  m = model_for("cuda-sm90", &how);
  ASSERT_NE(m, nullptr) << how;
  for (const char* v : {"spmm.merge_path", "spmm.vector_rows", "spmm.hub_split", "spmm.cusparse"})
    EXPECT_TRUE(m->predict("spmm", v, m->columns({})).has_value()) << v;
  // Kokkos-OpenMP keeps its own.
  m = model_for(device_class("kokkos", make_signature({{"exec_space", "OpenMP"}, {"memory_space", "HostSpace"}})), &how);
  ASSERT_NE(m, nullptr) << how;
#if defined(__x86_64__)
  EXPECT_EQ(how, "own (kokkos-x86_64)");
#endif
}

TEST(SchedulerModel, AModelThatDoesNotParseIsPassedOverForTheNearestThatDoes) {
  TempDir models;
  ScopedEnv model_dir("SPARSEPORT_MODEL_DIR", models.path.c_str());
  // Its class is indexed from its head, its body is parsed only when asked for, and fails.
  write_file(models.path + "/broken.json",
             "{\"format\": \"sparseport-trees-1\", \"device_class\": \"fake-x86_64\", \"ops\": [1, 2");
  write_file(models.path + "/other.json", one_leaf_model("other-x86_64", 9.0, {{"spmm.vendor", 1.0}}));
  std::string how;
  const CostModel* m = model_for("fake-x86_64", &how);
  ASSERT_NE(m, nullptr) << how;
  EXPECT_EQ(m->device_class(), "other-x86_64") << how;
  EXPECT_EQ(model_for("fake-x86_64", &how), m) << "parsed once, the failure remembered";
}

TEST(SchedulerModel, TransferBiasIsShrunkTowardTheMeanResidual) {
  Correction c;
  c.residuals["a"] = {3.0, 1};
  c.residuals["b"] = {-1.0, 1};
  // mean residual 1, lambda 2: a (3 + 2) / 3, b (-1 + 2) / 3, an unmeasured variant (0 + 2) / 2.
  EXPECT_NEAR(c.bias("a"), 5.0 / 3, 1e-12);
  EXPECT_NEAR(c.bias("b"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(c.bias("never"), 1.0, 1e-12);
  EXPECT_EQ(Correction{}.bias("a"), 0.0);
}

TEST(SchedulerPipeline, ReplayIsDeterministicAndAMissUsesTheVendor) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);
  sparseport_spmm_args args = pb.args();
  auto miss = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  execute(miss, &args, "test");
  EXPECT_EQ(miss->decision.source, "replay miss");
  EXPECT_EQ(miss->decision.variant, "spmm.vendor");
  EXPECT_TRUE(CacheFile(dir.path).read().empty()) << "replay never writes";
  auto probed = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(probed, &args, "test");
  for (int run = 0; run < 3; ++run) {
    auto r = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
    EXPECT_EQ(r->decision.source, "replay");
    EXPECT_EQ(r->decision.variant, probed->decision.variant);
  }
  // Another F is another key.
  Problem pb16 = make_problem(2000);
  pb16.b = HostDense<float>(pb16.a.cols, 16);
  pb16.c = HostDense<float>(pb16.a.rows, 16);
  sparseport_spmm_args a16 = pb16.args();
  EXPECT_FALSE(prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &a16, options(dir, SchedulerMode::replay))->decision.verified);
}

// A cached decision naming a variant the backend no longer offers (one since retired, see
// plugins/cuda/README.md) is decided afresh, never replayed: the plugin would refuse every call.
TEST(SchedulerPipeline, ACachedDecisionForARetiredVariantIsNotReplayed) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem pb = make_problem(2000);
  sparseport_spmm_args args = pb.args();
  auto probed = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::probe));
  execute(probed, &args, "test");
  const CacheFile f(dir.path);
  const std::vector<Record> records = f.read();
  ASSERT_FALSE(records.empty());
  Record retired = records.back();
  retired["variant"] = "spmm.retired";
  f.append(retired);  // the last line of a key wins
  auto replay = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::replay));
  EXPECT_EQ(replay->decision.source, "replay miss");
  execute(replay, &args, "test");
  EXPECT_EQ(replay->decision.variant, "spmm.vendor");
  auto again = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, options(dir, SchedulerMode::automatic));
  EXPECT_FALSE(again->decided);
  execute(again, &args, "test");
  EXPECT_NE(again->decision.source, "cache hit");
  EXPECT_NE(again->decision.variant, "spmm.retired");
}

// ---- shape classes (issue 35): a matrix the cache never saw, decided by others of its shape -------

// Members: 20000 rows (the fake's full-size spins), mean degree 6 (120k entries, so that the
// reference's computation behind every fake variant stays small beside the spins on a loaded
// machine; 6 lies mid-way in its half-octave, 2 log2(6) = 5.2, so every seed has one shape).
Problem make_member(uint64_t seed) {
  Problem p;
  p.a = generate<int32_t, float>("er:20000:0.0003@" + std::to_string(seed));
  p.b = HostDense<float>(p.a.cols, 8);
  for (size_t i = 0; i < p.b.data.size(); ++i) p.b.data[i] = static_cast<float>(i % 7) - 3.0f;
  p.c = HostDense<float>(p.a.rows, 8);
  return p;
}

SchedulerOptions class_options(const TempDir& dir) {
  SchedulerOptions o = options(dir, SchedulerMode::automatic);
  o.class_checks = 3;
  return o;
}

// The reference plugin's result for args.
std::vector<float> reference_result(Problem& pb) {
  HostDense<float> want(pb.a.rows, 8);
  sparseport_spmm_args ref = pb.args();
  ref.c.data = want.data.data();
  sparseport_status st{};
  EXPECT_EQ(plugin("reference").table->spmm(nullptr, "spmm.serial", &ref, &st), 0);
  return want.data;
}

std::optional<Record> class_line(const TempDir& dir) {
  std::optional<Record> last;
  for (const Record& r : CacheFile(dir.path).read())
    if (r.at("key").find("/class:") != std::string::npos) last = r;
  return last;
}

// With a narrow margin (the vendor under 2x the variant at full size), members 1-3 teach the class
// (the first decided cold, the next two take its variant and are checked at full size against the
// vendor); from the fourth on a member replays it: one call, no timing.
// check_calls: a full-size check's calls (a device backend's also warms the vendor up: 3).
std::shared_ptr<detail::PlanState> teach_class(const TempDir& dir, const PluginInfo& fake, int check_calls = 2) {
  const NarrowMargin narrow;
  std::shared_ptr<detail::PlanState> last;
  for (uint64_t m = 1; m <= 3; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
    EXPECT_FALSE(plan->class_key.empty()) << "member " << m;
    if (m == 1) {
      EXPECT_FALSE(plan->decided) << "no class yet: a cold decision";
    } else {
      EXPECT_EQ(plan->decision.source, "class") << "member " << m;
      EXPECT_TRUE(plan->verify_pending) << "a learning class's member is checked at full size";
    }
    g_calls = 0;
    execute(plan, &args, "test");
    EXPECT_EQ(plan->decision.variant, "spmm.second") << plan->decision.reason;
    EXPECT_TRUE(plan->decision.verified);
    if (m > 1) {
      EXPECT_EQ(g_calls.load(), check_calls) << "the check: the vendor's call and the variant's (the op's own)";
    }
    EXPECT_EQ(pb.c.data, reference_result(pb));
    const std::optional<Record> cls = class_line(dir);
    EXPECT_TRUE(cls.has_value());
    if (cls) {
      EXPECT_EQ(cls->at("variant"), "spmm.second");
      EXPECT_EQ(cls->at("checks"), std::to_string(m));
      EXPECT_EQ(cls->count("margin"), 1u);
      if (cls->count("margin") == 1) {
        EXPECT_GT(std::stod(cls->at("margin")), 0.0);
        EXPECT_LT(std::stod(cls->at("margin")), 2.0) << "the narrow margin this test needs";
      }
      EXPECT_EQ(cls->at("source"), "class");
      EXPECT_EQ(cls->at("key"), plan->class_key);
    }
    last = plan;
  }
  return last;
}

TEST(SchedulerShapeClass, AMatrixOfAKnownShapeReplaysItsClassAfterThreeCheckedMembers) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  const auto third = teach_class(dir, fake);
  for (uint64_t m = 4; m <= 6; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
    EXPECT_EQ(plan->class_key, third->class_key) << "one shape: " << plan->class_text;
    EXPECT_TRUE(plan->decided);
    EXPECT_EQ(plan->decision.source, "class");
    EXPECT_EQ(plan->decision.variant, "spmm.second");
    EXPECT_FALSE(plan->decision.verified);
    EXPECT_NE(plan->decision.reason.find("shape class"), std::string::npos) << plan->decision.reason;
    g_calls = 0;
    const size_t lines = CacheFile(dir.path).read().size();
    execute(plan, &args, "test");
    if (!plan->decision.verified) {  // not one of the 1 in 256 re-checked members
      EXPECT_EQ(g_calls.load(), 1) << "a class hit runs the op once: no timing";
      EXPECT_EQ(CacheFile(dir.path).read().size(), lines) << "an unchecked class hit writes nothing";
    }
    EXPECT_EQ(pb.c.data, reference_result(pb));
  }
  // A matrix of another shape (10x fewer rows) is decided cold; so is any matrix in deterministic
  // mode, and with classes off.
  Problem small = make_problem(2000);
  sparseport_spmm_args sargs = small.args();
  auto other = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &sargs, class_options(dir));
  EXPECT_FALSE(other->decided);
  EXPECT_NE(other->class_key, third->class_key);
  Problem seventh = make_member(7);
  sparseport_spmm_args args7 = seventh.args();
  auto det = prepare(fake, {nullptr, 1, SPARSEPORT_EXEC_DETERMINISTIC}, SPARSEPORT_OP_SPMM, &args7, class_options(dir));
  EXPECT_NE(det->decision.source, "class");
  EXPECT_TRUE(det->class_key.empty());
  SchedulerOptions off = class_options(dir);
  off.class_checks = -1;
  auto no_class = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args7, off);
  EXPECT_FALSE(no_class->decided);
  EXPECT_TRUE(no_class->class_key.empty());
}

// spmm's sum and mean run the same native kernels: a shape whose class exists for mean only (a GNN's
// forward aggregation) starts its sum decisions (the backward's, over the transpose) from the mean
// class's pick, checked at full size against the sum's own vendor, where a cold decision would probe
// first. The vendor being the same, the mean member's full-size lead over it (tens of times here) is
// the check's evidence: the pick is timed (the op's own call) and the vendor left out. The check
// teaches the sum's own class. max borrows nothing.
TEST(SchedulerShapeClass, ASumWithoutAClassOfItsOwnStartsFromItsShapesMeanClassCheckedAgainstTheVendor) {
  // The vendor at 250 ms: with 50 ms the lead fell to 2.98 on the 2-core VM under a parallel build
  // (the reference's computation behind each call stretched to ~20 ms), and the check timed the vendor.
  const WideMargin wide;
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem first = make_member(1);
  sparseport_spmm_args mean = first.args();
  mean.reduce = SPARSEPORT_REDUCE_MEAN;
  auto cold = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &mean, class_options(dir));
  EXPECT_FALSE(cold->decided) << "no class yet: a cold decision";
  execute(cold, &mean, "test");
  ASSERT_EQ(cold->decision.variant, "spmm.second") << cold->decision.reason;
  const std::optional<Record> mean_class = class_line(dir);
  ASSERT_TRUE(mean_class.has_value());
  EXPECT_EQ(mean_class->at("key"), cold->class_key);
  ASSERT_EQ(mean_class->count("lead"), 1u) << "the vendor's lead, timed at full size";
  EXPECT_GE(std::stod(mean_class->at("lead")), 3.0);

  Problem pb = make_member(2);
  sparseport_spmm_args sum = pb.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &sum, class_options(dir));
  EXPECT_NE(plan->class_key, cold->class_key) << "sum's class is its own";
  EXPECT_TRUE(plan->decided);
  EXPECT_EQ(plan->decision.source, "class");
  EXPECT_EQ(plan->decision.variant, "spmm.second");
  EXPECT_NE(plan->decision.reason.find("of spmm mean"), std::string::npos) << plan->decision.reason;
  EXPECT_TRUE(plan->verify_pending) << "another reduction's pick is always checked";
  g_calls = 0;
  execute(plan, &sum, "test");
  EXPECT_EQ(plan->decision.vendor, "spmm.vendor");
  EXPECT_EQ(plan->decision.variant, "spmm.second") << plan->decision.reason;
  EXPECT_TRUE(plan->decision.verified);
  // The check: the variant's call (the op's own), the vendor left out. A second call of the variant
  // where the first ran over kScaleSlack x the expected time (first touches; on the 2-core VM under a
  // parallel build 3 runs in 30 took it), never the vendor's.
  EXPECT_LE(g_calls.load(), 2) << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("the vendor not timed at full size"), std::string::npos)
      << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("of another reduction"), std::string::npos) << plan->decision.reason;
  EXPECT_EQ(pb.c.data, reference_result(pb));
  const std::optional<Record> sum_class = class_line(dir);
  ASSERT_TRUE(sum_class.has_value());
  EXPECT_EQ(sum_class->at("key"), plan->class_key);
  EXPECT_EQ(sum_class->at("variant"), "spmm.second");
  EXPECT_EQ(sum_class->at("checks"), "1");

  Problem third = make_member(3);
  sparseport_spmm_args max = third.args();
  max.reduce = SPARSEPORT_REDUCE_MAX;
  auto other = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &max, class_options(dir));
  EXPECT_FALSE(other->decided) << "max has no class and borrows none: " << other->decision.reason;
}

// A variant whose first call on a matrix builds its per-matrix state (tc_window's format):
// spmm.built takes 80 ms on a matrix's first full-size call and 1 ms after, the vendor 20 ms a call.
// Decided at full size, it wins on steady time (its build is spent by then). Replayed where nothing
// is built yet (a new plan on the cache hit, a shape class's next member), it runs only where the
// plan's expected calls repay the build: 1 + 79 / E ms against 20 ms. Margins of 4x at E = 1 and
// 18x at E = 1000, so a preempted spin on a loaded 2-core machine does not flip either.
std::mutex g_built_mu;
std::set<const void*> g_built;  // the matrices (row pointers) spmm.built has built its state for
int builder_spmm(const sparseport_exec* x, const char* variant, const sparseport_spmm_args* a, sparseport_status* st) {
  const std::string v = variant;
  const bool big = a->a.rows > 5000;
  if (v == "spmm.vendor") spin(big ? 0.020 : 0.002);
  if (v == "spmm.built") {
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(g_built_mu);
      first = g_built.insert(a->a.rowptr).second;
    }
    spin(!big ? 0.0005 : first ? 0.080 : 0.001);
  }
  return plugin("reference").table->spmm(x, "spmm.serial", a, st);
}

const sparseport_variant kBuilderVariants[] = {
    {SPARSEPORT_OP_SPMM, "spmm.vendor", SPARSEPORT_VARIANT_VENDOR | SPARSEPORT_VARIANT_DEFAULT, "vendor"},
    {SPARSEPORT_OP_SPMM, "spmm.built", 0, "builds per-matrix state on its first call, fast after"},
    {SPARSEPORT_OP_CSR_SLICE_ROWS, "csr_slice_rows.serial", SPARSEPORT_VARIANT_DEFAULT, "slice"},
};

PluginInfo builder_plugin() {
  static const sparseport_plugin table = fake_table("builder", kBuilderVariants, &builder_spmm);
  return info_of(table);
}

size_t built_count() {
  std::lock_guard<std::mutex> lock(g_built_mu);
  return g_built.size();
}

// Every matrix is new to spmm.built again (as in a new process; freed arrays' addresses are reused).
void forget_builds() {
  std::lock_guard<std::mutex> lock(g_built_mu);
  g_built.clear();
}

TEST(SchedulerAmortise, AReplayRunsTheVendorWhereTheExpectedCallsDoNotRepayTheVariantsBuild) {
  const PluginInfo builder = builder_plugin();
  forget_builds();
  TempDir dir;
  Problem pb = make_problem(20000);
  sparseport_spmm_args args = pb.args();
  SchedulerOptions o = options(dir, SchedulerMode::automatic);
  o.full_size_ms = 1e12;  // timed at full size: a warm-up and a timed call each
  o.class_checks = -1;
  auto cold = prepare(builder, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, o);
  execute(cold, &args, "test");
  ASSERT_EQ(cold->decision.source, "timed") << cold->decision.reason;
  EXPECT_EQ(cold->decision.variant, "spmm.built") << "steady time decides where the builds are spent";
  std::map<std::string, double> build;
  for (const Decision::Candidate& c : cold->decision.candidates) build[c.variant] = c.build_ms;
  EXPECT_GT(build["spmm.built"], 40.0) << "80 ms first call, 1 ms steady";
  EXPECT_GE(build["spmm.vendor"], 0.0);
  EXPECT_LT(build["spmm.vendor"], build["spmm.built"]);
  bool stale = false;
  const std::optional<Record> rec = CacheFile(dir.path).lookup(cold->key, cold->versions, &stale);
  ASSERT_TRUE(rec.has_value());
  for (const char* f : {"steady_ms", "build_ms", "vendor_steady_ms", "vendor_build_ms"})
    EXPECT_EQ(rec->count(f), 1u) << f << " in " << format_record(*rec);
  EXPECT_EQ(pb.c.data, reference_result(pb));

  // New plans on the same matrix, as a new process's would be (this process's state of it is
  // forgotten, so a call of spmm.built builds again).
  const auto replay = [&](int64_t expected_calls) {
    forget_builds();
    SchedulerOptions e = o;
    e.expected_calls = expected_calls;
    auto plan = prepare(builder, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, e);
    EXPECT_EQ(plan->decision.source, "cache hit");
    EXPECT_FALSE(plan->verify_pending) << "a replayed, verified decision is not timed again";
    std::fill(pb.c.data.begin(), pb.c.data.end(), 0.0f);
    execute(plan, &args, "test");
    EXPECT_EQ(pb.c.data, reference_result(pb));
    return plan;
  };
  const auto once = replay(1);
  EXPECT_EQ(once->decision.variant, "spmm.vendor") << once->decision.reason;
  EXPECT_NE(once->decision.reason.find("over the 1 expected call(s), spmm.built's build"), std::string::npos)
      << once->decision.reason;
  EXPECT_EQ(built_count(), 0u) << "the vendor ran: nothing was built";
  const auto many = replay(1000);
  EXPECT_EQ(many->decision.variant, "spmm.built") << many->decision.reason;
  EXPECT_EQ(built_count(), 1u);
  const auto unset = replay(0);  // 0: many (SPARSEPORT_EXPECTED_CALLS, default)
  EXPECT_EQ(unset->decision.variant, "spmm.built") << unset->decision.reason;
  EXPECT_EQ(CacheFile(dir.path).lookup(cold->key, cold->versions, &stale)->at("variant"), "spmm.built")
      << "the record stays for plans that expect more calls";
}

// A shape class's member builds its own state: the class's record carries the times of the member
// that taught it, and a member that expects one call runs the vendor, unchecked.
TEST(SchedulerAmortise, AClassMemberThatExpectsOneCallRunsTheVendorAndOneThatExpectsManyTheClasssVariant) {
  const PluginInfo builder = builder_plugin();
  forget_builds();
  TempDir dir;
  SchedulerOptions o = class_options(dir);
  o.full_size_ms = 1e12;
  Problem first = make_member(1);
  sparseport_spmm_args a1 = first.args();
  auto cold = prepare(builder, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &a1, o);
  execute(cold, &a1, "test");
  ASSERT_EQ(cold->decision.variant, "spmm.built") << cold->decision.reason;
  const std::optional<Record> cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  EXPECT_EQ(cls->count("build_ms"), 1u) << format_record(*cls);
  const auto member = [&](uint64_t m, int64_t expected_calls) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    SchedulerOptions e = o;
    e.expected_calls = expected_calls;
    auto plan = prepare(builder, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, e);
    EXPECT_EQ(plan->decision.source, "class") << "a 20x lead makes the class ready after one member";
    const size_t before = built_count();
    execute(plan, &args, "test");
    EXPECT_EQ(pb.c.data, reference_result(pb));
    return std::make_pair(plan->decision, built_count() - before);
  };
  const auto [one, built_one] = member(2, 1);
  EXPECT_EQ(one.variant, "spmm.vendor") << one.reason;
  EXPECT_NE(one.reason.find("expected call"), std::string::npos) << one.reason;
  EXPECT_EQ(built_one, 0u);
  const auto [many, built_many] = member(3, 0);
  EXPECT_EQ(many.variant, "spmm.built") << many.reason;
  EXPECT_EQ(built_many, 1u);
}

// On host memory a ready class's member whose shape no exact decision has is decided without its
// signature (the hash of every row pointer: half of a sampled subgraph's class decision), while a
// matrix whose shape the cache holds is signed and replays its own exact decision, not the class's.
TEST(SchedulerShapeClass, AReadyClassDecidesANewShapeWithoutSigningItAndAKnownShapeReplaysItsOwnDecision) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  const auto third = teach_class(dir, fake);
  int unsigned_hits = 0;
  for (uint64_t m = 4; m <= 8; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
    ASSERT_TRUE(plan->decided);
    EXPECT_EQ(plan->decision.source, "class");
    EXPECT_EQ(plan->class_key, third->class_key);
    if (plan->verify_pending) {
      EXPECT_FALSE(plan->key.empty()) << "a checked member is signed: check() records it under its key";
      continue;
    }
    EXPECT_TRUE(plan->key.empty()) << plan->key;
    EXPECT_TRUE(plan->graph.empty()) << plan->graph;
    ++unsigned_hits;
    execute(plan, &args, "test");
    EXPECT_EQ(pb.c.data, reference_result(pb));
  }
  EXPECT_GT(unsigned_hits, 0);
  // The third member was checked at full size and recorded under its exact key: a new plan for it
  // hashes it (its shape is in the cache) and replays that record.
  Problem again = make_member(3);
  sparseport_spmm_args args3 = again.args();
  auto plan3 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args3, class_options(dir));
  EXPECT_EQ(plan3->decision.source, "cache hit") << plan3->decision.reason;
  EXPECT_EQ(plan3->key, third->key);
  execute(plan3, &args3, "test");
  EXPECT_EQ(again.c.data, reference_result(again));
}

// The fake plugin as a device backend would look to the scheduler: its memory space says device (the
// arrays are the reference plugin's host memory all the same), so the scheduler summarizes through
// the plugin's slot, which records what each call asked for.
std::vector<uint32_t> g_summaries;
int32_t g_report_problem = SPARSEPORT_INDEX_OK;  // what the fake's index check reports

PluginInfo device_fake_plugin() {
  static sparseport_plugin table = [] {
    sparseport_plugin t = *fake_plugin().table;
    t.name = "fake_device";
    t.memory_space = SPARSEPORT_MEMORY_DEVICE;
    t.summarize_csr = [](const sparseport_exec*, const sparseport_csr* a, uint32_t want, sparseport_csr_summary* out,
                         sparseport_status*) {
      g_summaries.push_back(want);
      *out = summarize_host(*a, want);
      if ((want & SPARSEPORT_SUMMARY_CHECK) != 0) {
        out->index_checked = 1;  // the members are valid CSRs, unless a test says otherwise
        out->index_problem = g_report_problem;
      }
      return 0;
    };
    return t;
  }();
  return info_of(table);
}

// The summary a class decision asks of a device plugin: DEGREES (row lengths only) of one built
// against ABI 1.9 or later, FEATURES of an older one (which does not know the bit). A cold decision
// after a DEGREES summary makes the FEATURES pass the model reads; after a FEATURES summary it
// reuses it. Both give one class: DEGREES's numbers are FEATURES's row part (summarize_host).
TEST(SchedulerShapeClass, ADevicePluginGivesAClassItsRowLengthsAloneWhereItsAbiKnowsDegrees) {
  for (const bool old_abi : {false, true}) {
    SCOPED_TRACE(old_abi ? "ABI 1.8" : "ABI 1.9");
    TempDir dir;
    static sparseport_plugin old_table = *device_fake_plugin().table;
    old_table.abi_version = (1u << 16) | 8u;
    const PluginInfo fake = old_abi ? info_of(old_table) : device_fake_plugin();
    const uint32_t rows = old_abi ? SPARSEPORT_SUMMARY_FEATURES : SPARSEPORT_SUMMARY_DEGREES;
    Problem pb = make_member(1);
    sparseport_spmm_args args = pb.args();
    g_summaries.clear();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir), /*check_indices=*/true);
    EXPECT_FALSE(plan->decided) << "no class yet: a cold decision";
    ASSERT_EQ(g_summaries.size(), 1u);
    EXPECT_EQ(g_summaries[0], SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK | rows);
    EXPECT_EQ(plan->features.has_value(), old_abi) << "FEATURES are kept for the decision, row lengths are not";
    EXPECT_FALSE(plan->class_key.empty());
    execute(plan, &args, "test");
    EXPECT_EQ(pb.c.data, reference_result(pb));
    if (old_abi) {
      EXPECT_EQ(g_summaries.size(), 1u) << "the decision reused the class's FEATURES";
    } else {
      ASSERT_GE(g_summaries.size(), 2u);
      EXPECT_EQ(g_summaries[1], SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES)
          << "the cold decision's features pass";
    }
    // The same member's class from a FEATURES summary on the host: the same key.
    const sparseport_csr_summary host = summarize_host(args.a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES);
    const sparseport_csr_summary deg = summarize_host(args.a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_DEGREES);
    EXPECT_EQ(deg.max_degree, host.max_degree);
    for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) EXPECT_EQ(deg.degree_hist[b], host.degree_hist[b]) << "bucket " << b;
    EXPECT_EQ(shape_class(features_of(deg, plan->info, 0)), shape_class(features_of(host, plan->info, 0)));
  }
}

// In device memory a class decision makes one summary of A, not two: the shape class's row lengths
// (DEGREES, ABI 1.9) come in the signature's pass (with the index check when the caller asks for
// it), and where the cache holds no decision of A's shape the exact lookup is not made. The summary
// comes before the shape question (select.cpp says why), so a matrix whose shape the cache holds
// gets its row lengths in that one pass too, and replays its own exact decision; where no class
// can decide (classes off), the pass reads no row lengths.
TEST(SchedulerShapeClass, InDeviceMemoryANewShapesClassDecisionMakesOneSummaryWithItsRowLengths) {
  TempDir dir;
  const PluginInfo fake = device_fake_plugin();
  const auto third = teach_class(dir, fake, 3);
  constexpr uint32_t kSigRowsCheck =
      SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_DEGREES | SPARSEPORT_SUMMARY_CHECK;
  for (uint64_t m = 4; m <= 6; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    g_summaries.clear();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir), /*check_indices=*/true);
    ASSERT_TRUE(plan->decided);
    EXPECT_EQ(plan->decision.source, "class") << plan->decision.reason;
    EXPECT_EQ(plan->class_key, third->class_key);
    EXPECT_EQ(plan->index_problem, SPARSEPORT_INDEX_OK);
    ASSERT_EQ(g_summaries.size(), 1u) << "one pass over A";
    EXPECT_EQ(g_summaries[0], kSigRowsCheck);
    EXPECT_FALSE(plan->key.empty()) << "device memory is signed in that pass";
    execute(plan, &args, "test");
    EXPECT_EQ(pb.c.data, reference_result(pb));
  }
  // The third member's shape is in the cache (checked at full size, recorded under its key): its
  // summary has no features, and it replays that record.
  Problem again = make_member(3);
  sparseport_spmm_args args3 = again.args();
  g_summaries.clear();
  auto plan3 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args3, class_options(dir), /*check_indices=*/true);
  EXPECT_EQ(plan3->decision.source, "cache hit") << plan3->decision.reason;
  EXPECT_EQ(plan3->key, third->key);
  ASSERT_EQ(g_summaries.size(), 1u);
  EXPECT_EQ(g_summaries[0], kSigRowsCheck);
  execute(plan3, &args3, "test");
  EXPECT_EQ(again.c.data, reference_result(again));
  // Classes off: the signature and the check alone, and the exact decision replayed all the same.
  SchedulerOptions no_class = class_options(dir);
  no_class.class_checks = -1;  // 0 is "unset" (SPARSEPORT_CLASS_CHECKS or 3), -1 is off
  g_summaries.clear();
  auto plan4 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args3, no_class, /*check_indices=*/true);
  EXPECT_EQ(plan4->decision.source, "cache hit") << plan4->decision.reason;
  ASSERT_EQ(g_summaries.size(), 1u);
  EXPECT_EQ(g_summaries[0], SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK);
}

// A one-shot op's first call on device arrays (scheduler::IndexRide): the index check rides on
// the scheduler's summary of A (one pass, SPARSEPORT_SUMMARY_CHECK) and the op's own check is not
// made; a remembered plan and a named variant make no summary, so the op checks; a violation the
// summary reports hands over to the op's check, which throws before any variant runs, and leaves no
// plan remembered.
TEST(SchedulerIndexRide, AOneShotCallChecksAInTheSummaryOrHasTheOpCheckIt) {
  TempDir dir;
  const ScopedEnv cache_dir("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  const ScopedEnv mode("SPARSEPORT_SCHEDULER", "auto");
  const PluginInfo fake = device_fake_plugin();
  clear_memo();
  // The op's side (ops::csr_after_summary): a verdict of 0 records A as checked; any other verdict
  // is the op's own check, which throws where it finds a violation.
  int checks = 0, checked = 0;
  bool violation = false;  // what the op's check finds
  const IndexRide ride{[&](int32_t problem) {
    if (problem == SPARSEPORT_INDEX_OK) {
      ++checked;
      return;
    }
    ++checks;
    if (violation) throw InvalidArgument("test: A.colind[3] = 99 is out of range");
  }};
  Problem pb = make_problem(2000);  // small: the fake's variants spin a few ms at most
  sparseport_spmm_args args = pb.args();
  // First call: the summary checks A, the op does not.
  g_summaries.clear();
  run(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, "", "test", &ride);
  ASSERT_FALSE(g_summaries.empty());
  EXPECT_NE(g_summaries[0] & SPARSEPORT_SUMMARY_CHECK, 0u) << "the check rides on the first summary";
  EXPECT_EQ(checks, 0);
  EXPECT_EQ(checked, 1);
  EXPECT_EQ(pb.c.data, reference_result(pb));
  // The same arrays again with a ride (ValidateMode::always gives one on every call): the
  // remembered plan makes no summary, so the op checks.
  g_summaries.clear();
  run(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, "", "test", &ride);
  EXPECT_TRUE(g_summaries.empty());
  EXPECT_EQ(checks, 1);
  // A named variant: no summary, the op checks.
  run(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, "spmm.second", "test", &ride);
  EXPECT_EQ(checks, 2);
  // A violation the summary reports: the op's check throws its message, no variant runs, and the
  // plan is not remembered (the next call summarizes again).
  Problem bad = make_problem(2500);
  sparseport_spmm_args bad_args = bad.args();
  g_report_problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
  violation = true;
  g_calls = 0;
  EXPECT_THROW(
      {
        try {
          run(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &bad_args, "", "test", &ride);
        } catch (const InvalidArgument& e) {
          EXPECT_STREQ(e.what(), "test: A.colind[3] = 99 is out of range");
          throw;
        }
      },
      InvalidArgument);
  EXPECT_EQ(g_calls, 0) << "no variant ran on A";
  EXPECT_EQ(checks, 3);
  // A summary that reports a violation the op's check lets through: an internal error, not a run.
  violation = false;
  g_summaries.clear();
  EXPECT_THROW(run(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &bad_args, "", "test", &ride), Error);
  EXPECT_FALSE(g_summaries.empty()) << "the failed call's plan was not remembered";
  EXPECT_EQ(g_calls, 0);
  g_report_problem = SPARSEPORT_INDEX_OK;
  clear_memo();
}

// A vendor that took 2x the class's variant or more at full size: the first member's check makes
// the class ready, and the next member replays it unchecked.
TEST(SchedulerShapeClass, AWideMarginAtFullSizeMakesTheClassReadyAfterOneCheck) {
  const WideMargin wide;
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem first = make_member(1);
  sparseport_spmm_args args1 = first.args();
  auto cold = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args1, class_options(dir));
  EXPECT_FALSE(cold->decided);
  execute(cold, &args1, "test");
  EXPECT_EQ(cold->decision.variant, "spmm.second") << cold->decision.reason;
  EXPECT_TRUE(cold->decision.verified);
  const std::optional<Record> cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  EXPECT_EQ(cls->at("checks"), "1");
  ASSERT_EQ(cls->count("margin"), 1u);
  EXPECT_GE(std::stod(cls->at("margin")), 2.0) << "vendor 250 ms, spmm.second 1 ms, each plus the reference's computation";
  for (uint64_t m = 2; m <= 3; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
    EXPECT_EQ(plan->decision.source, "class");
    EXPECT_EQ(plan->decision.variant, "spmm.second");
    g_calls = 0;
    execute(plan, &args, "test");
    if (!plan->decision.verified) {  // not a re-checked member
      EXPECT_EQ(g_calls.load(), 1) << "a ready class's member runs the op once";
    }
    EXPECT_EQ(pb.c.data, reference_result(pb));
  }
}

// A learning class whose last check left the vendor out (it had lost by kSkipMargin on the probe and
// the variant ran as expected) lends that evidence to its next member's check, scaled by rows +
// entries: the variant is timed (the op's own call) and the vendor only where the variant ran over
// kScaleSlack times the scaled time. The class line carries the evidence on while checks skip.
TEST(SchedulerShapeClass, ALearningClassLendsItsVendorSkipToTheNextMembersCheck) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  Problem first = make_member(1);
  sparseport_spmm_args args1 = first.args();
  auto cold = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args1, class_options(dir));
  execute(cold, &args1, "test");
  std::optional<Record> cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  // As if the first member's check had skipped the vendor (the fake's probe picks spmm.trap, which
  // its check reverts): a learning class (1 check, no full-size margin) with the evidence. The
  // expected time is generous (1 s for the first member's work): the variant passes.
  const double work1 = static_cast<double>(first.a.rows + first.a.nnz());
  Record lent = *cls;
  lent["checks"] = "1";
  lent.erase("margin");
  lent["skip_margin"] = "10";
  lent["pick_ms"] = "1000";
  lent["pick_work"] = std::to_string(static_cast<long long>(work1));
  CacheFile(dir.path).append(lent);
  Problem second = make_member(2);
  sparseport_spmm_args args2 = second.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args2, class_options(dir));
  ASSERT_EQ(plan->decision.source, "class");
  ASSERT_TRUE(plan->verify_pending);
  g_calls = 0;
  execute(plan, &args2, "test");
  EXPECT_EQ(g_calls.load(), 1) << "the variant's call only: " << plan->decision.reason;
  EXPECT_EQ(plan->decision.variant, "spmm.second");
  EXPECT_TRUE(plan->decision.verified);
  EXPECT_NE(plan->decision.reason.find("the vendor not timed at full size: 10x"), std::string::npos)
      << plan->decision.reason;
  EXPECT_NE(plan->decision.reason.find("on another member of its shape class"), std::string::npos);
  EXPECT_EQ(second.c.data, reference_result(second));
  cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  EXPECT_EQ(cls->at("checks"), "2");
  EXPECT_EQ(cls->count("margin"), 0u) << "the vendor was not timed: no full-size margin";
  ASSERT_EQ(cls->count("skip_margin"), 1u) << "passed on";
  EXPECT_EQ(cls->at("skip_margin"), "10");
  const double pick_ms = std::stod(cls->at("pick_ms"));
  EXPECT_GT(pick_ms, 0.0);
  EXPECT_LT(pick_ms, 1000.0) << "this member's own full-size time";
  EXPECT_EQ(cls->at("pick_work"), std::to_string(static_cast<long long>(second.a.rows + second.a.nnz())));

  // An expectation the variant cannot meet (1 us for a member's work): timed twice, then the vendor
  // after all, and the class goes on from that check (the vendor timed: its lead, no evidence).
  Record tight = *cls;
  tight["pick_ms"] = "0.001";
  CacheFile(dir.path).append(tight);
  Problem third = make_member(3);
  sparseport_spmm_args args3 = third.args();
  auto plan3 = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args3, class_options(dir));
  ASSERT_EQ(plan3->decision.source, "class");
  g_calls = 0;
  execute(plan3, &args3, "test");
  EXPECT_GE(g_calls.load(), 3) << "twice the variant, then the vendor: " << plan3->decision.reason;
  EXPECT_NE(plan3->decision.reason.find("the vendor timed after all"), std::string::npos) << plan3->decision.reason;
  EXPECT_EQ(plan3->decision.variant, "spmm.second") << "the vendor is 50 ms, the variant 1 ms";
  EXPECT_EQ(third.c.data, reference_result(third));
  cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  EXPECT_EQ(cls->count("skip_margin"), 0u) << "a check that timed the vendor lends nothing";
  EXPECT_EQ(cls->count("margin"), 1u);
}

// A ready class holding the vendor (a noisy first decision): the members it would recheck are
// decided cold instead, and a native that wins there relearns the class.
TEST(SchedulerShapeClass, AClassHoldingTheVendorIsDecidedColdAtItsRechecks) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  const auto third = teach_class(dir, fake);
  std::optional<Record> cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  Record vendor_class = *cls;
  vendor_class["variant"] = "spmm.vendor";
  vendor_class["checks"] = "99";
  vendor_class.erase("margin");  // 1 in 256 rechecked
  CacheFile(dir.path).append(vendor_class);
  int replayed = 0;
  for (uint64_t m = 100; m < 100 + 4096; ++m) {
    Problem pb = make_member(m);
    sparseport_spmm_args args = pb.args();
    auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
    if (plan->decided) {
      EXPECT_EQ(plan->decision.source, "class");
      EXPECT_EQ(plan->decision.variant, "spmm.vendor");
      EXPECT_FALSE(plan->verify_pending) << "nothing to check against the vendor itself";
      ++replayed;
      continue;
    }
    // A member the class would recheck: decided cold (probe, then checked at full size).
    EXPECT_EQ(plan->class_key, third->class_key);
    execute(plan, &args, "test");
    EXPECT_EQ(plan->decision.variant, "spmm.second") << plan->decision.reason;
    EXPECT_EQ(pb.c.data, reference_result(pb));
    cls = class_line(dir);
    ASSERT_TRUE(cls.has_value());
    EXPECT_EQ(cls->at("variant"), "spmm.second");
    EXPECT_NE(cls->at("reason").find("relearned"), std::string::npos) << cls->at("reason");
    EXPECT_GT(replayed, 0) << "most members replay the class";
    return;
  }
  ADD_FAILURE() << "no member of 4096 was a recheck (1 in 256 expected)";
}

TEST(SchedulerShapeClass, RechecksGetRarerAsTheVendorsFullSizeCostGrows) {
  // A recheck costs the vendor's call, margin times the variant's; 1 in N keeps that at 1 % of the
  // members' op time (margin / N <= 0.01) within [256, 4096], powers of two.
  EXPECT_EQ(class_recheck_every(0), 256u) << "margin unknown";
  EXPECT_EQ(class_recheck_every(1.2), 256u);
  EXPECT_EQ(class_recheck_every(2.56), 256u);
  EXPECT_EQ(class_recheck_every(2.57), 512u);
  EXPECT_EQ(class_recheck_every(4.6), 512u);
  EXPECT_EQ(class_recheck_every(10), 1024u);
  EXPECT_EQ(class_recheck_every(1e6), 4096u);
  for (double m : {0.5, 1.0, 3.0, 7.0, 20.0, 40.0})
    EXPECT_LE(m / static_cast<double>(class_recheck_every(m)), std::max(0.01, m / 4096)) << m;
}

// The sampled positions of an array of n entries as plugin_abi.h defines them, written with one
// 128-bit division per sample: every entry when n <= S = SPARSEPORT_SUMMARY_SAMPLE, else R = S / L
// runs of L = SPARSEPORT_SUMMARY_RUN entries, run r from floor(r * (n - L) / (R - 1)).
std::vector<int64_t> defined_sample_positions(int64_t n) {
  constexpr int64_t S = SPARSEPORT_SUMMARY_SAMPLE, L = SPARSEPORT_SUMMARY_RUN, R = S / L;
  std::vector<int64_t> at;
  for (int64_t j = 0; j < std::min(n, S); ++j)
    at.push_back(n <= S ? j
                        : static_cast<int64_t>(static_cast<summary_u128>(j / L) * static_cast<uint64_t>(n - L) /
                                               static_cast<uint64_t>(R - 1)) +
                              j % L);
  return at;
}

// A signature hash as plugin_abi.h defines it: each sampled entry hashed with its position.
template <class I>
uint64_t defined_sample_hash(const std::vector<I>& v) {
  const std::vector<int64_t> at = defined_sample_positions(static_cast<int64_t>(v.size()));
  uint64_t h = 0;
  for (const int64_t p : at) h += hash_term(static_cast<int64_t>(v[static_cast<size_t>(p)]), p);
  return hash_finish(h, static_cast<int64_t>(at.size()));
}

// The host summary's hashes are those plugin_abi.h defines (the cuda plugin's kernel must give the
// same bits): rowptr and colind each sampled, sizes on both sides of the sample's size, including
// rows + 1 and nnz below it (every entry: the hash all entries gave before issue 35, so cache
// lines of small matrices still replay; checked against that formula too).
TEST(SchedulerSummary, TheHashesAreTheAbisDefinition) {
  constexpr int64_t S = SPARSEPORT_SUMMARY_SAMPLE;
  const std::vector<int64_t> row_counts = {0, 1, S - 2, S - 1, S, 997, 100003};
  const std::vector<int64_t> entry_counts = {0, 1, 5, S - 1, S, S + 1, 3 * S - 2, 49999, 100003, int64_t{1} << 20};
  for (const int64_t rows : row_counts)
    for (const int64_t nnz : entry_counts) {
      if (rows == 0 && nnz > 0) continue;
      HostCsr<int32_t, float> g;
      g.rows = rows;
      g.cols = 1 << 20;
      std::mt19937_64 rng(static_cast<uint64_t>(nnz * 31 + rows));
      for (int64_t e = 0; e < nnz; ++e) g.colind.push_back(static_cast<int32_t>(rng() % (1u << 20)));
      for (int64_t i = 1; i <= g.rows; ++i) g.rowptr.push_back(static_cast<int32_t>(i * nnz / g.rows));
      const sparseport_csr a{g.rows, g.cols, nnz, g.rowptr.data(), g.colind.data(), nullptr, SPARSEPORT_I32,
                             SPARSEPORT_F32};
      const sparseport_csr_summary got = summarize_host(a, SPARSEPORT_SUMMARY_SIGNATURE);
      EXPECT_EQ(got.rowptr_hash, defined_sample_hash(g.rowptr)) << rows << " rows, " << nnz << " entries";
      EXPECT_EQ(got.colind_hash, defined_sample_hash(g.colind)) << rows << " rows, " << nnz << " entries";
      uint64_t all = 0;  // before issue 35: every rowptr entry, and colind at j * nnz / S (j, for nnz <= S)
      for (int64_t i = 0; i <= g.rows; ++i) all += hash_term(g.rowptr[static_cast<size_t>(i)], i);
      if (rows + 1 <= S) {
        EXPECT_EQ(got.rowptr_hash, hash_finish(all, rows + 1)) << rows;
      }
      all = 0;
      for (int64_t e = 0; e < nnz; ++e) all += hash_term(g.colind[static_cast<size_t>(e)], e);
      if (nnz <= S) {
        EXPECT_EQ(got.colind_hash, hash_finish(all, nnz)) << nnz;
      }
    }
}

// What the sampled signature tells apart, on a matrix much longer than the sample (issue 35). The
// key holds rows, cols and nnz exactly, and rowptr and colind at S positions each (runs of L
// consecutive entries, the first and the last among them). So:
//  - a row one entry longer (or shorter) anywhere: nnz differs, and so does rowptr[rows] (sampled);
//  - row r one entry shorter and a later row r2 one longer, colind the same (rows r + 1 .. r2
//    start one earlier): told apart exactly when a sampled rowptr position lies in (r, r2], so
//    always when r2 - r exceeds the longest stretch between runs; between neighbouring rows whose
//    boundary is not sampled, not;
//  - a changed column: told apart exactly when its position is sampled;
//  - rows reordered (a permutation changes rowptr nearly everywhere): told apart.
// Matrices not told apart differ in few places, and share a performance decision only.
TEST(SchedulerSummary, TheSampledSignatureTellsApartWhatItSamples) {
  const int64_t rows = 200003;
  std::mt19937_64 rng(35);
  HostCsr<int32_t, float> base;
  base.rows = base.cols = rows;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t d = 1 + static_cast<int64_t>(rng() % 8);
    for (int64_t k = 0; k < d; ++k) base.colind.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(rows)));
    base.rowptr.push_back(static_cast<int32_t>(base.colind.size()));
  }
  base.values.assign(base.colind.size(), 1.0f);
  const auto signature = [](const HostCsr<int32_t, float>& g) {
    const sparseport_csr a{g.rows, g.cols, g.nnz(), g.rowptr.data(), g.colind.data(), nullptr, SPARSEPORT_I32,
                           SPARSEPORT_F32};
    return graph_signature(summarize_host(a, SPARSEPORT_SUMMARY_SIGNATURE));
  };
  const std::string sig = signature(base);
  // The sampled rowptr positions, as plugin_abi.h defines them, and the longest stretch between them.
  const std::vector<int64_t> row_samples = defined_sample_positions(rows + 1);
  std::vector<bool> sampled(static_cast<size_t>(rows) + 1, false);
  for (const int64_t p : row_samples) sampled[static_cast<size_t>(p)] = true;
  int64_t stretch = 0;
  for (size_t k = 1; k < row_samples.size(); ++k) stretch = std::max(stretch, row_samples[k] - row_samples[k - 1] - 1);
  const int64_t spacing = stretch + 1;
  ASSERT_GT(spacing, SPARSEPORT_SUMMARY_RUN) << "the runs leave stretches unsampled";
  // Row r one entry shorter and row r2 > r one longer, colind unchanged: rows r + 1 .. r2 start
  // one entry earlier (each hands its last entry on to the next).
  const auto move = [&](int64_t r, int64_t r2) {
    HostCsr<int32_t, float> g = base;
    for (int64_t i = r + 1; i <= r2; ++i) --g.rowptr[static_cast<size_t>(i)];
    return g;
  };
  ASSERT_EQ(signature(base), sig) << "stable";

  {  // One more entry in a row in the middle.
    HostCsr<int32_t, float> g = base;
    const int64_t r = rows / 2 + 7;
    g.colind.insert(g.colind.begin() + g.rowptr[static_cast<size_t>(r) + 1], 3);
    for (int64_t i = r + 1; i <= rows; ++i) ++g.rowptr[static_cast<size_t>(i)];
    g.values.push_back(1.0f);
    EXPECT_NE(signature(g), sig) << "a row one entry longer";
  }
  int64_t untold = 0;
  for (int64_t k = 0; k < 40; ++k) {
    const int64_t r = rows / 4 + static_cast<int64_t>(rng() % static_cast<uint64_t>(rows / 2));
    EXPECT_NE(signature(move(r, r + spacing)), sig) << "an entry moved " << spacing << " rows on from row " << r;
    // Neighbouring rows: told apart exactly when the boundary r + 1 is sampled.
    const bool at_sample = sampled[static_cast<size_t>(r) + 1];
    untold += !at_sample;
    EXPECT_EQ(signature(move(r, r + 1)) != sig, at_sample) << "an entry moved from row " << r << " to the next";
  }
  EXPECT_GT(untold, 0) << "the blind spot was exercised";
  for (const size_t j : {size_t{1}, row_samples.size() / 2, row_samples.size() - 2}) {  // sampled boundaries, inside
    const int64_t r = row_samples[j] - 1;
    EXPECT_NE(signature(move(r, r + 1)), sig) << "an entry moved across sampled row boundary " << r + 1;
  }
  {  // Columns: told apart at a sampled position, not elsewhere.
    const std::vector<int64_t> col_samples = defined_sample_positions(base.nnz());
    const int64_t at = col_samples[col_samples.size() / 2], off = (at + col_samples[col_samples.size() / 2 + SPARSEPORT_SUMMARY_RUN]) / 2;
    ASSERT_EQ(std::count(col_samples.begin(), col_samples.end(), off), 0) << "off is between two runs";
    HostCsr<int32_t, float> g = base;
    g.colind[static_cast<size_t>(at)] = static_cast<int32_t>((g.colind[static_cast<size_t>(at)] + 1) % rows);
    EXPECT_NE(signature(g), sig) << "a sampled column changed";
    g = base;
    g.colind[static_cast<size_t>(off)] = static_cast<int32_t>((g.colind[static_cast<size_t>(off)] + 1) % rows);
    EXPECT_EQ(signature(g), sig) << "a column between samples changed";
  }
  {  // The rows in reverse order.
    HostCsr<int32_t, float> g;
    g.rows = g.cols = rows;
    for (int64_t i = rows - 1; i >= 0; --i) {
      for (int32_t e = base.rowptr[static_cast<size_t>(i)]; e < base.rowptr[static_cast<size_t>(i) + 1]; ++e)
        g.colind.push_back(base.colind[static_cast<size_t>(e)]);
      g.rowptr.push_back(static_cast<int32_t>(g.colind.size()));
    }
    g.values = base.values;
    EXPECT_NE(signature(g), sig) << "rows reversed";
  }
}

// The block counts are plugin_abi.h's definition (the cuda plugin's kernel must give the same
// numbers): the 32-row blocks b = floor(j * nblocks / B), each one's first BLOCK_CAP entries, their
// distinct columns and distinct 32-column segments, written here as the definition (each block
// sorted). summarize_host counts them with stamps while the columns are few against the sampled
// entries, else by sorting: inputs on both sides of that, with duplicates, unsorted rows, empty
// rows, blocks over the cap, more blocks than are sampled, both index types.
TEST(SchedulerSummary, TheBlockCountsAreTheAbisDefinition) {
  std::mt19937_64 rng(11);
  // bad: one column in ~50 is out of range (below 0 or at cols and above). The ABI forbids it, but
  // FEATURES may be asked before the index check, and then the plugins' summaries (the CUDA one
  // among them, tests/cuda/test_cuda_summary.cpp) count it as a value of its own.
  const auto check = [&](auto index, int64_t rows, int64_t cols, int64_t max_degree, bool bad, const std::string& what) {
    using I = decltype(index);
    std::vector<I> rowptr{0}, colind;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t d = rng() % 4 == 0 ? 0 : static_cast<int64_t>(rng() % static_cast<uint64_t>(max_degree + 1));
      for (int64_t k = 0; k < d; ++k) {
        // Near the diagonal with repeats (shared segments and duplicates), or anywhere.
        const int64_t c = rng() % 2 == 0 ? (i * cols / rows + static_cast<int64_t>(rng() % 64)) % cols
                                         : static_cast<int64_t>(rng() % static_cast<uint64_t>(cols));
        const int64_t off = static_cast<int64_t>(rng() % 64);
        colind.push_back(static_cast<I>(bad && rng() % 50 == 0 ? (rng() % 2 == 0 ? -1 - off : cols + off) : c));
      }
      rowptr.push_back(static_cast<I>(colind.size()));
    }
    const auto nnz = static_cast<int64_t>(colind.size());
    const sparseport_csr a{rows, cols, nnz, rowptr.data(), colind.data(), nullptr,
                           sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32, SPARSEPORT_F32};
    const sparseport_csr_summary got = summarize_host(a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES);
    const int64_t nblocks = (rows + 31) / 32, blocks = std::min<int64_t>(nblocks, SPARSEPORT_SUMMARY_BLOCKS);
    int64_t entries = 0, distinct = 0, segments = 0;
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t b = j * nblocks / blocks;
      const int64_t first = rowptr[static_cast<size_t>(32 * b)];
      const int64_t last = rowptr[static_cast<size_t>(std::min<int64_t>(32 * b + 32, rows))];
      std::vector<int64_t> c(colind.begin() + first,
                             colind.begin() + first + std::min<int64_t>(last - first, SPARSEPORT_SUMMARY_BLOCK_CAP));
      std::sort(c.begin(), c.end());
      entries += static_cast<int64_t>(c.size());
      c.erase(std::unique(c.begin(), c.end()), c.end());
      distinct += static_cast<int64_t>(c.size());
      for (int64_t& x : c) x >>= 5;
      segments += static_cast<int64_t>(std::unique(c.begin(), c.end()) - c.begin());
    }
    EXPECT_EQ(got.blocks, blocks) << what;
    EXPECT_EQ(got.block_entries, entries) << what;
    EXPECT_EQ(got.block_distinct, distinct) << what;
    EXPECT_EQ(got.block_segments, segments) << what;
  };
  for (const int64_t rows : {1, 31, 33, 1000, 32 * 2048 + 77, 200000})
    for (const int64_t cols : {int64_t{1}, int64_t{40}, int64_t{5000}, int64_t{1} << 30})
      for (const int64_t degree : {3, 40, 300}) {
        if (rows * degree > 4'000'000) continue;
        const std::string what = std::to_string(rows) + " rows, " + std::to_string(cols) + " columns, degree <= " +
                                 std::to_string(degree);
        check(int32_t{}, rows, cols, degree, false, what + ", int32");
        if (rows <= 1000) check(int64_t{}, rows, cols, degree, false, what + ", int64");
        if (rows <= 33 * 32) check(int32_t{}, rows, cols, degree, true, what + ", int32, columns out of range");
      }
}

// The FEATURES entry pass (max degree, degree and distance histograms, distance sum) and the
// sampled blocks (entries, distinct columns and segments) are split over threads on large inputs;
// their numbers are integer counts and sums, so every split gives the one thread's numbers. Inputs
// of 1.1-1.6M rows + entries (4+ parts of kEntriesPerThread, so 2, 3 and 4 threads all split): a
// mega-row with half the entries where a part boundary falls inside it, runs of empty rows, square
// and rectangular (the scaled diagonal), both index types, and columns enough that one thread
// counts the blocks by stamps and four, each with a quarter of the sampled entries, by sorting.
// Each split is counted twice: on threads the scheduler starts, and through a plugin's run_parts
// slot (ABI 1.10): the openmp plugin's OpenMP team where it is compiled in, and a slot that runs the
// parts on the calling thread last part first (any order of the parts gives the same numbers).
TEST(SchedulerSummary, TheEntryPassGivesTheSameNumbersOnAnyNumberOfThreads) {
  using RunParts = decltype(PartRunner::run_parts);
  std::vector<std::pair<std::string, RunParts>> runners{{"the scheduler's threads", nullptr}};
  const RunParts backwards = [](const sparseport_exec*, int64_t parts, void (*fn)(int64_t, void*), void* arg,
                                sparseport_status*) {
    for (int64_t p = parts - 1; p >= 0; --p) fn(p, arg);
    return int{SPARSEPORT_OK};
  };
  runners.emplace_back("one thread, the last part first", backwards);
  if (plugin("openmp").table != nullptr) runners.emplace_back("the openmp plugin's team", plugin("openmp").table->run_parts);
  else std::printf("the openmp plugin is not compiled in: its run_parts slot not checked here\n");
  std::mt19937_64 rng(23);
  const auto check = [&](auto index, int64_t rows, int64_t cols, bool mega, const std::string& what) {
    using I = decltype(index);
    std::vector<I> rowptr{0}, colind;
    for (int64_t i = 0; i < rows; ++i) {
      int64_t d = (i / 1000) % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 16);  // runs of 1000 empty rows
      if (mega && i == rows / 3) d = 600'000;
      for (int64_t k = 0; k < d; ++k)
        colind.push_back(static_cast<I>(rng() % 2 == 0 ? (i * cols / rows + static_cast<int64_t>(rng() % 64)) % cols
                                                       : static_cast<int64_t>(rng() % static_cast<uint64_t>(cols))));
      rowptr.push_back(static_cast<I>(colind.size()));
    }
    const sparseport_csr a{rows, cols, static_cast<int64_t>(colind.size()), rowptr.data(), colind.data(), nullptr,
                           sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32, SPARSEPORT_F32};
    ASSERT_GE(a.rows + a.nnz, 4 * (int64_t{1} << 18)) << what << ": too small to be split 4 ways";
    const uint32_t want = SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES;
    const sparseport_csr_summary one = summarize_host(a, want, 1);
    ASSERT_GT(one.distance_sum, 0u) << what;
    for (const auto& [runner, run_parts] : runners)
    for (const int threads : {2, 3, 4}) {
      const sparseport_exec exec{nullptr, threads, 0};
      const sparseport_csr_summary got = summarize_host(a, want, threads, PartRunner{run_parts, &exec});
      const std::string at = what + ", " + std::to_string(threads) + " threads, " + runner;
      EXPECT_EQ(got.max_degree, one.max_degree) << at;
      EXPECT_EQ(got.distance_sum, one.distance_sum) << at;
      for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
        EXPECT_EQ(got.degree_hist[b], one.degree_hist[b]) << at << ", degree bucket " << b;
        EXPECT_EQ(got.distance_hist[b], one.distance_hist[b]) << at << ", distance bucket " << b;
      }
      EXPECT_EQ(got.rowptr_hash, one.rowptr_hash) << at;
      EXPECT_EQ(got.colind_hash, one.colind_hash) << at;
      EXPECT_EQ(got.blocks, one.blocks) << at;
      EXPECT_EQ(got.block_entries, one.block_entries) << at;
      EXPECT_EQ(got.block_distinct, one.block_distinct) << at;
      EXPECT_EQ(got.block_segments, one.block_segments) << at;
    }
  };
  check(int32_t{}, 150'000, 150'000, false, "square, int32");
  check(int32_t{}, 120'000, 150'000, true, "a mega-row, rectangular, int32");
  check(int64_t{}, 150'000, 90'000, false, "rectangular, int64");
  check(int64_t{}, 100'000, 100'000, true, "a mega-row, square, int64");
  check(int32_t{}, 150'000, 2'000'000, false, "wide: the blocks by stamps on one thread, by sorts on four");
}

// Where a plugin has the run_parts slot, the FEATURES pass's parts go through it, each part once, in
// one call (the numbers alone could not tell: the scheduler's own threads give the same); a slot that
// fails gives the plugin's message, and where the pass comes from. rmat:17:8 (1.1M rows + entries)
// splits 4 ways on 4 threads.
TEST(SchedulerSummary, TheFeaturesPassRunsItsPartsThroughThePluginsRunPartsSlot) {
  static std::vector<int64_t> ran;
  static int calls = 0;
  ran.clear();
  calls = 0;
  const auto counting = [](const sparseport_exec* x, int64_t parts, void (*fn)(int64_t, void*), void* arg,
                           sparseport_status*) {
    ++calls;
    EXPECT_EQ(x->threads, 4);
    for (int64_t p = 0; p < parts; ++p) {
      ran.push_back(p);
      fn(p, arg);
    }
    return int{SPARSEPORT_OK};
  };
  const auto m = generate<int32_t, float>("rmat:17:8");
  const sparseport_csr a{m.rows, m.cols, m.nnz(), m.rowptr.data(), m.colind.data(), nullptr, SPARSEPORT_I32, SPARSEPORT_F32};
  ASSERT_GE(a.rows + a.nnz, 4 * (int64_t{1} << 18));
  const uint32_t want = SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES;
  const sparseport_exec exec{nullptr, 4, 0};
  const sparseport_csr_summary got = summarize_host(a, want, 4, PartRunner{counting, &exec});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran, (std::vector<int64_t>{0, 1, 2, 3}));
  const sparseport_csr_summary one = summarize_host(a, want, 1);
  EXPECT_EQ(got.distance_sum, one.distance_sum);
  EXPECT_EQ(got.block_distinct, one.block_distinct);

  const auto failing = [](const sparseport_exec*, int64_t, void (*)(int64_t, void*), void*, sparseport_status* st) {
    st->code = SPARSEPORT_ERR_BACKEND;
    std::snprintf(st->message, sizeof st->message, "no worker threads to be had (test)");
    return int{SPARSEPORT_ERR_BACKEND};
  };
  try {
    summarize_host(a, want, 4, PartRunner{failing, &exec});
    ADD_FAILURE() << "a failing run_parts slot gave a summary";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("no worker threads to be had (test)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("run_parts"), std::string::npos) << e.what();
  }
}

// The class's row-length pass: up to 4096 rows it gives summarize_host's degree histogram and
// maximum degree exactly (empty rows, rows of every bucket up to 2^17 entries, both index types);
// above, the maximum stays exact, the histogram of 4096 evenly spaced rows adds up to the row count,
// and the quantiles the class reads land in the exact histogram's bucket or a neighbour.
TEST(SchedulerShapeClass, TheRowLengthPassIsTheSummarysHistogramOrASampleOfIt) {
  std::mt19937_64 rng(7);
  ProblemInfo info;
  info.features = info.features_out = 64;
  info.value_type = SPARSEPORT_F32;
  info.index_type = SPARSEPORT_I32;
  const auto check = [&](auto index, const std::vector<int64_t>& degrees, const std::string& what) {
    using I = decltype(index);
    std::vector<I> rowptr{0};
    for (const int64_t d : degrees) rowptr.push_back(static_cast<I>(rowptr.back() + d));
    const auto rows = static_cast<int64_t>(degrees.size());
    const int64_t nnz = rowptr.back();
    std::vector<I> colind(static_cast<size_t>(nnz), 0);
    const sparseport_csr a{rows, rows, nnz, rowptr.data(), colind.data(), nullptr,
                           sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32, SPARSEPORT_F32};
    const sparseport_csr_summary want = summarize_host(a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES);
    const sparseport_csr_summary got = degree_summary(a);
    EXPECT_EQ(got.rows, rows) << what;
    EXPECT_EQ(got.nnz, nnz) << what;
    EXPECT_EQ(got.max_degree, want.max_degree) << what;
    int64_t total = 0;
    for (int b = 0; b < SPARSEPORT_SUMMARY_BUCKETS; ++b) {
      total += got.degree_hist[b];
      if (rows <= 4096) {
        EXPECT_EQ(got.degree_hist[b], want.degree_hist[b]) << what << " bucket " << b;
      }
    }
    EXPECT_EQ(total, rows) << what;
    const Features fg = features_of(got, info, 0), fw = features_of(want, info, 0);
    for (const auto& [q, g, w] : {std::tuple{"p50", fg.p50, fw.p50}, {"p90", fg.p90, fw.p90}, {"p99", fg.p99, fw.p99}})
      EXPECT_LE(std::abs(summary_bucket(static_cast<uint64_t>(g)) - summary_bucket(static_cast<uint64_t>(w))), 1)
          << what << " " << q << " " << g << " against " << w;
  };
  for (const int64_t rows : {0, 1, 15, 16, 17, 1000, 4096, 4099, 50000}) {
    std::vector<int64_t> power(static_cast<size_t>(rows)), empty(static_cast<size_t>(rows), 0), mixed;
    for (auto& d : power) d = static_cast<int64_t>(std::pow(2.0, static_cast<double>(rng() % 1200) / 100.0)) - 1;
    for (int64_t i = 0; i < rows; ++i) mixed.push_back(i % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 40));
    if (rows > 3) mixed[static_cast<size_t>(rows / 2)] = int64_t{1} << 17;  // one mega-row
    for (const auto& [name, degrees] : {std::pair{"power", &power}, {"empty", &empty}, {"mixed", &mixed}}) {
      const std::string what = std::string(name) + " rows=" + std::to_string(rows);
      check(int32_t{}, *degrees, what + " int32");
      check(int64_t{}, *degrees, what + " int64");
    }
  }
}

TEST(SchedulerShapeClass, TheShapeIsCoarseForOneSamplerAndSeparatesOtherShapes) {
  ProblemInfo info;
  info.features = info.features_out = 64;
  info.value_type = SPARSEPORT_F32;
  info.index_type = SPARSEPORT_I32;
  const auto shape_of = [&](const std::string& spec) {
    HostCsr<int32_t, float> g = generate<int32_t, float>(spec);
    const sparseport_csr a{g.rows, g.cols, g.nnz(), g.rowptr.data(), g.colind.data(), g.values.data(), SPARSEPORT_I32,
                           SPARSEPORT_F32};
    return shape_class(features_of(summarize_host(a, SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES), info,
                                   256));
  };
  EXPECT_EQ(shape_of("er:20000:0.002@1"), shape_of("er:20000:0.002@2"));
  EXPECT_NE(shape_of("er:20000:0.002@1"), shape_of("er:20000:0.008@1")) << "4x the degree";
  EXPECT_NE(shape_of("er:20000:0.002@1"), shape_of("chunglu:20000:40:2.1@1")) << "same size, a power-law tail";
  EXPECT_NE(shape_of("er:20000:0.002@1"), shape_of("er:5000:0.008@1")) << "same degree, 4x fewer rows";
  for (const char c : shape_of("chunglu:20000:20:2.1@1"))
    EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') << "a key needs no escape";
}

TEST(SchedulerShapeClass, AClassThatLosesAtFullSizeIsRevertedAndRelearnedAndNeverWrong) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  const auto third = teach_class(dir, fake);
  std::optional<Record> cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  // A learning class naming the trap (4x slower than the vendor at full size): its member is checked,
  // reverted to the vendor, and the class starts afresh from it.
  Record bad = *cls;
  bad["variant"] = "spmm.trap";
  bad["checks"] = "1";
  CacheFile(dir.path).append(bad);
  Problem pb = make_member(11);
  sparseport_spmm_args args = pb.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
  EXPECT_EQ(plan->decision.variant, "spmm.trap");
  EXPECT_TRUE(plan->verify_pending);
  execute(plan, &args, "test");
  EXPECT_TRUE(plan->decision.reverted) << plan->decision.reason;
  EXPECT_EQ(plan->decision.variant, "spmm.vendor");
  EXPECT_EQ(pb.c.data, reference_result(pb));
  cls = class_line(dir);
  ASSERT_TRUE(cls.has_value());
  EXPECT_EQ(cls->at("variant"), "spmm.vendor");
  EXPECT_EQ(cls->at("checks"), "1");
  EXPECT_NE(cls->at("reason").find("relearned"), std::string::npos) << cls->at("reason");
  // The member's own decision is cached under its exact key, with its source.
  auto again = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
  EXPECT_EQ(again->decision.source, "cache hit");
  EXPECT_EQ(again->decision.variant, "spmm.vendor");
  // Even a ready class naming the trap (a cache edited by hand, a device that changed under it)
  // costs speed, never a result.
  bad["checks"] = "99";
  CacheFile(dir.path).append(bad);
  Problem pb2 = make_member(12);
  sparseport_spmm_args args2 = pb2.args();
  auto slow = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args2, class_options(dir));
  EXPECT_EQ(slow->decision.variant, "spmm.trap");
  execute(slow, &args2, "test");
  EXPECT_EQ(pb2.c.data, reference_result(pb2));
}

TEST(SchedulerShapeClass, TheClassLineLivesInTheCacheFileAmongCorruptAndTornLines) {
  TempDir dir;
  const PluginInfo fake = fake_plugin();
  const auto third = teach_class(dir, fake);
  const std::string path = CacheFile(dir.path).path;
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"schema\":\"2\",\"key\":\"" << third->class_key << "\",\"variant\":\"spmm.trap\"}\n";  // no checksum
    out << "not json at all\n";
  }
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // A copy of the class line cut in the middle (a torn write) at the end of the file.
  const size_t at = text.find("\"key\":\"" + third->class_key);
  ASSERT_NE(at, std::string::npos);
  const size_t start = text.rfind('\n', at) + 1;
  {
    std::ofstream out(path, std::ios::app);
    out << text.substr(start, (text.find('\n', at) - start) / 2);
  }
  Problem pb = make_member(21);
  sparseport_spmm_args args = pb.args();
  auto plan = prepare(fake, {nullptr, 1, 0}, SPARSEPORT_OP_SPMM, &args, class_options(dir));
  EXPECT_EQ(plan->decision.source, "class");
  EXPECT_EQ(plan->decision.variant, "spmm.second") << "the corrupt and torn lines are skipped";
  execute(plan, &args, "test");
  EXPECT_EQ(pb.c.data, reference_result(pb));
  size_t classes = 0, exact = 0;
  for (const Record& r : CacheFile(dir.path).read())
    (r.at("key").find("/class:") != std::string::npos ? classes : exact) += 1;
  EXPECT_EQ(exact, 4u) << "the first member's probe decision and its check, the next two members' checks";
  EXPECT_EQ(classes, 3u) << "one class line per member that taught it";
}

TEST(SchedulerPipeline, PlansOnTheOpenMPBackendComputeTheRightAnswer) {
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  TempDir dir;
  Context ctx = Context::create("openmp");
  const auto a = generate<int32_t, float>("rmat:12:8");
  HostDense<float> b(a.cols, 32), c(a.rows, 32), want(a.rows, 32);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(i % 11) * 0.25f - 1.0f;
  SchedulerOptions o = options(dir, SchedulerMode::probe);
  SpmmPlan plan(ctx, a.view(), 32, {}, o);
  plan.run(b.view(), c.mut());
  EXPECT_EQ(plan.decision().source, "probe");
  EXPECT_FALSE(plan.decision().variant.empty());
  spmm(Context::create("reference"), a.view(), b.view(), want.mut());
  for (size_t i = 0; i < want.data.size(); ++i) ASSERT_NEAR(c.data[i], want.data[i], 1e-4 * (1 + std::abs(want.data[i])));
  o.mode = SchedulerMode::replay;
  SpmmPlan replay(ctx, a.view(), 32, {}, o);
  EXPECT_EQ(replay.decision().source, "replay");
  EXPECT_EQ(replay.decision().variant, plan.decision().variant);
  EXPECT_THROW(replay.run(HostDense<float>(a.cols, 16).view(), c.mut()), DimensionMismatch);
}

TEST(SchedulerPipeline, EveryPlanKindMatchesTheReferenceAndRefusesBadArguments) {
  if (plugin("openmp").table == nullptr) GTEST_SKIP() << "skipped: the openmp plugin is not compiled in";
  TempDir dir;
  Context ctx = Context::create("openmp"), ref = Context::create("reference");
  const auto a = generate<int32_t, float>("rmat:11:8");
  const int64_t F = 16;
  HostDense<float> x(a.rows, F), y(a.cols, F), v(a.cols, F);
  for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i % 7) * 0.2f - 0.5f;
  v = y;
  const SchedulerOptions o = options(dir, SchedulerMode::probe);
  const auto close = [](const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
  };
  {
    HostDense<float> out(a.nnz(), 1), want(a.nnz(), 1);
    SddmmPlan plan(ctx, a.view(), F, {}, o);
    plan.run(x.view(), y.view(), out.mut());
    sddmm(ref, a.view(), x.view(), y.view(), want.mut());
    close(out.data, want.data);
    EXPECT_FALSE(plan.decision().source.empty());
  }
  {
    HostDense<float> out(a.rows, F), want(a.rows, F);
    AttentionPlan plan(ctx, a.view(), F, {}, o);
    plan.run(x.view(), y.view(), v.view(), out.mut());
    csr_attention(ref, a.view(), x.view(), y.view(), v.view(), want.mut());
    close(out.data, want.data);
  }
  {
    HostCoo<int32_t, float> coo;
    coo.rows = a.rows;
    coo.cols = a.cols;
    for (int64_t i = 0; i < a.rows; ++i)
      for (int32_t e = a.rowptr[i]; e < a.rowptr[i + 1]; ++e) {
        coo.row.push_back(static_cast<int32_t>(i));
        coo.col.push_back(a.colind[e]);
        coo.values.push_back(a.values[e]);
      }
    HostDense<float> out(a.rows, F), want(a.rows, F);
    GatherScatterPlan plan(ctx, coo.view(), F, {Reduce::max, {}}, o);
    plan.run(y.view(), out.mut());
    gather_scatter(ref, coo.view(), y.view(), want.mut(), {Reduce::max, {}});
    close(out.data, want.data);
  }
  // A named variant bypasses the scheduler and says so; a negative F and a wrong width are refused.
  SpmmPlan named(ctx, a.view(), F, {Reduce::sum, 1.0, 0.0, "spmm.rows"}, o);
  EXPECT_EQ(named.decision().source, "requested");
  EXPECT_EQ(named.decision().variant, "spmm.rows");
  EXPECT_THROW(SpmmPlan(ctx, a.view(), -1, {}, o), InvalidArgument);
  HostDense<float> c(a.rows, F);
  EXPECT_THROW(named.run(HostDense<float>(a.cols, F + 1).view(), c.mut()), DimensionMismatch);
  SpmmPlan unknown(ctx, a.view(), F, {Reduce::sum, 1.0, 0.0, "spmm.nope"}, o);
  EXPECT_THROW(unknown.run(y.view(), c.mut()), Unsupported);
}

}  // namespace
