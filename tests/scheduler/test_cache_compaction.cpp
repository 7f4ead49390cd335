// SPDX-License-Identifier: Apache-2.0
// The decision cache's bound (cache.cpp, compact): the append that would take decisions.jsonl past
// SPARSEPORT_CACHE_MAX_BYTES (4 MiB by default) rewrites it with the newest valid line of each
// (key, versions) pair, the oldest pairs dropped until half the bound is left, and renames it over the
// file; a writer that waited for the old file's lock appends to the new one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/cache.hpp"
#include "../common/scoped.hpp"
#include "../common/text_files.hpp"

namespace {

using namespace sparseport::scheduler;
using sparseport::test::count_of;
using sparseport::test::slurp;
using sparseport_test::ScopedEnv;
using sparseport_test::TempDir;

// ~600 bytes a line, so that 64 KiB holds about a hundred.
Record record(const std::string& key, int n, const std::string& versions = "v=1") {
  return {{"schema", std::to_string(kCacheSchema)}, {"key", key}, {"versions", versions}, {"variant", "v-" + key},
          {"op", "spmm"}, {"n", std::to_string(n)}, {"reason", std::string(500, 'r')}};
}

// "k<i>" (appended, not "k" + to_string: GCC 12 warns about that concatenation, -Wrestrict).
std::string key_of(int i) {
  std::string k = "k";
  k += std::to_string(i);
  return k;
}

// The records of the file, checked to read without a warning (no corrupt line).
std::vector<Record> read_clean(const CacheFile& f) {
  testing::internal::CaptureStderr();
  std::vector<Record> rs = f.read();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "") << "a line of " << f.path << " did not read back";
  return rs;
}

constexpr size_t kLimit = 65536;

TEST(CacheCompaction, TheFileStaysUnderItsBoundWithTheNewestDecisions) {
  TempDir dir;
  ScopedEnv limit("SPARSEPORT_CACHE_MAX_BYTES", std::to_string(kLimit).c_str());
  const CacheFile f(dir.path);
  const int n = 400;  // ~240 kB appended: several compactions
  size_t largest = 0;
  for (int i = 0; i < n; ++i) {
    f.append(record(key_of(i), i));
    largest = std::max<size_t>(largest, std::filesystem::file_size(f.path));
  }
  EXPECT_LE(largest, kLimit) << "the file outgrew SPARSEPORT_CACHE_MAX_BYTES";
  const std::vector<Record> rs = read_clean(f);
  ASSERT_FALSE(rs.empty());
  EXPECT_LT(rs.size(), static_cast<size_t>(n)) << "nothing was dropped: no compaction ran";
  // What stays is the newest decisions, in the order they were made, ending with the last one.
  for (size_t i = 0; i < rs.size(); ++i)
    EXPECT_EQ(rs[i].at("key"), key_of(n - static_cast<int>(rs.size()) + static_cast<int>(i)));
  bool stale = false;
  const auto last = f.lookup(key_of(n - 1), "v=1", &stale);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->at("n"), std::to_string(n - 1));
  EXPECT_FALSE(f.lookup("k0", "v=1", &stale).has_value()) << "the oldest decision should have been dropped";
  EXPECT_FALSE(std::filesystem::exists(f.path + ".compact." + std::to_string(::getpid()))) << "the temporary file stayed";
}

// A compaction killed before its rename leaves its file; the next compaction removes it.
TEST(CacheCompaction, ADeadCompactionsFileIsRemovedByTheNext) {
  TempDir dir;
  ScopedEnv limit("SPARSEPORT_CACHE_MAX_BYTES", std::to_string(kLimit).c_str());
  const CacheFile f(dir.path);
  const std::string dead = f.path + ".compact.999999999";
  {
    std::ofstream out(dead);
    out << "half a compacted file";
  }
  for (int i = 0; i < 200; ++i) f.append(record(key_of(i), i));  // ~120 kB: compacts
  EXPECT_LE(std::filesystem::file_size(f.path), kLimit);
  EXPECT_FALSE(std::filesystem::exists(dead)) << "a dead compaction's file stayed";
  EXPECT_TRUE(std::filesystem::exists(f.path));
}

TEST(CacheCompaction, SupersededLinesGoFirstAndEachPairKeepsItsNewest) {
  TempDir dir;
  ScopedEnv limit("SPARSEPORT_CACHE_MAX_BYTES", std::to_string(kLimit).c_str());
  const CacheFile f(dir.path);
  // Two keys, one of them under two library versions, decided again and again: three pairs.
  for (int i = 0; i < 150; ++i) {
    f.append(record("a", i));
    f.append(record("a", 1000 + i, "v=2"));
    f.append(record("b", 2000 + i));
  }
  EXPECT_LE(std::filesystem::file_size(f.path), kLimit);
  const std::vector<Record> rs = read_clean(f);
  std::set<std::string> pairs;
  for (const Record& r : rs) pairs.insert(r.at("key") + "/" + r.at("versions"));
  EXPECT_EQ(pairs, (std::set<std::string>{"a/v=1", "a/v=2", "b/v=1"})) << "a pair was lost";
  bool stale = false;
  EXPECT_EQ(f.lookup("a", "v=1", &stale)->at("n"), "149");
  EXPECT_EQ(f.lookup("a", "v=2", &stale)->at("n"), "1149");
  EXPECT_EQ(f.lookup("b", "v=1", &stale)->at("n"), "2149");
}

TEST(CacheCompaction, CorruptLinesAreDroppedAndTheDecisionsAroundThemKept) {
  TempDir dir;
  ScopedEnv limit("SPARSEPORT_CACHE_MAX_BYTES", std::to_string(kLimit).c_str());
  const CacheFile f(dir.path);
  f.append(record("before", 1));
  {
    std::ofstream out(f.path, std::ios::app);
    out << "{\"not\": \"a decision\"\n" << std::string(kLimit, 'x') << "\n";  // past the bound by itself
  }
  testing::internal::CaptureStderr();
  f.append(record("after", 2));  // compacts: the corrupt lines go, both decisions stay
  testing::internal::GetCapturedStderr();
  EXPECT_LT(std::filesystem::file_size(f.path), size_t{4096});
  const std::vector<Record> rs = read_clean(f);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].at("key"), "before");
  EXPECT_EQ(rs[1].at("key"), "after");
}

// A writer blocked on the old file's lock while another process compacts must not append to the old
// file, which nobody reads after the rename: its line must land in the new one.
TEST(CacheCompaction, AWriterThatWaitedForTheReplacedFileAppendsToTheNewOne) {
  TempDir dir;
  const CacheFile f(dir.path);
  f.append(record("old", 1));
  const int held = ::open(f.path.c_str(), O_RDWR);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  std::thread writer([&] { f.append(record("waited", 2)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the writer now waits for the lock
  // What a compaction does: a new file renamed over the old one, under the old one's lock.
  const std::string next = f.path + ".test";
  {
    std::ofstream out(next, std::ios::binary);
    out << slurp(f.path);
  }
  ASSERT_EQ(std::rename(next.c_str(), f.path.c_str()), 0);
  ::flock(held, LOCK_UN);
  ::close(held);
  writer.join();
  const std::vector<Record> rs = read_clean(f);
  ASSERT_EQ(rs.size(), 2u) << slurp(f.path);
  EXPECT_EQ(rs[1].at("key"), "waited");
}

TEST(CacheCompaction, ABadBoundIsNamedAndTheDefaultKept) {
  TempDir dir;
  ScopedEnv limit("SPARSEPORT_CACHE_MAX_BYTES", "12kB");
  const CacheFile f(dir.path);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 200; ++i) f.append(record(key_of(i), i));  // ~120 kB: under 4 MiB
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(err, "SPARSEPORT_CACHE_MAX_BYTES=12kB is not a byte count"), 1u) << err;
  EXPECT_EQ(read_clean(f).size(), 200u) << "the default bound (4 MiB) dropped decisions";
}

}  // namespace
