// SPDX-License-Identifier: Apache-2.0
// The decision cache under faults: a folder that cannot be made (under a regular file, under
// /proc: tests run as root, where permissions stop nothing), symbolic links (a linked folder is
// followed, a linked decisions.jsonl is refused), a folder or FIFO in place of the file, a full
// disk, no file locks and read errors (the fault-injection switch), hand-edited lines, and another
// process truncating, rewriting and deleting the file while this one appends and reads. The cache
// must never fail an op, never leave a torn line, never return a corrupt record, and say why once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "scheduler/cache.hpp"
#include "sparseport/sparseport.hpp"
#include "core/fault.hpp"
#include "../common/scoped.hpp"
#include "../common/text_files.hpp"

namespace {

using sparseport_test::TempDir;
using sparseport_test::ScopedEnv;

using namespace sparseport;
using namespace sparseport::scheduler;
namespace fs = std::filesystem;

struct ArmedFaults {
  explicit ArmedFaults(const char* sites) { detail::set_fault_sites(sites); }
  ~ArmedFaults() { detail::set_fault_sites(""); }
};

// Every record of these tests satisfies variant == "v-" + key, so a spliced one would show.
Record record(const std::string& key, size_t padding = 40) {
  return {{"schema", std::to_string(kCacheSchema)}, {"key", key},  {"versions", "v=1"}, {"variant", "v-" + key},
          {"vendor", "spmm.vendor"},                {"op", "spmm"}, {"reason", std::string(padding, 'r')}};
}

using sparseport::test::count_of;
using sparseport::test::slurp;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// append must throw exactly BackendError with every part in its message.
void expect_append_refused(const CacheFile& f, const Record& r, const std::vector<std::string>& parts) {
  try {
    f.append(r);
    ADD_FAILURE() << "append to " << f.path << " did not fail";
  } catch (const BackendError& e) {
    EXPECT_EQ(typeid(e), typeid(BackendError)) << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
  }
}

// ---- folders that cannot be made ---------------------------------------------------------------------

TEST(CacheFaults, FolderUnderARegularFileIsNotCreatedAndSaysWhyOnce) {
  TempDir dir;
  const std::string file = dir.path + "/plain-file";
  write_file(file, "not a folder\n");
  const CacheFile f(file + "/sub");
  expect_append_refused(f, record("k"), {"cannot create the decision cache folder", file + "/sub", "Not a directory"});
  testing::internal::CaptureStderr();
  std::string why;
  EXPECT_FALSE(f.try_append(record("k1"), &why));
  EXPECT_FALSE(f.try_append(record("k2"), &why));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(why.find("Not a directory"), std::string::npos) << why;
  EXPECT_EQ(count_of(err, "decision not cached"), 1u) << "one warning per reason: " << err;
  EXPECT_NE(err.find(file + "/sub"), std::string::npos) << err;
  testing::internal::CaptureStderr();
  EXPECT_TRUE(f.read().empty());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "no cache yet is not worth a warning";
  EXPECT_EQ(slurp(file), "not a folder\n");
}

TEST(CacheFaults, FolderUnderProcIsNotCreated) {
  const CacheFile f("/proc/sparseport-cache-fault-test/sub");
  expect_append_refused(f, record("k"), {"cannot create the decision cache folder", "/proc/sparseport-cache-fault-test"});
  EXPECT_TRUE(f.read().empty());
}

// ---- symbolic links -----------------------------------------------------------------------------------

TEST(CacheFaults, SymlinkedDecisionsFileIsNeitherWrittenNorRead) {
  TempDir dir;
  const std::string target = dir.path + "/precious.txt";
  write_file(target, "precious\n");
  const CacheFile f(dir.path);
  ASSERT_EQ(::symlink(target.c_str(), f.path.c_str()), 0);
  expect_append_refused(f, record("k"), {f.path, "symbolic link", "SPARSEPORT_CACHE_DIR"});
  EXPECT_EQ(slurp(target), "precious\n") << "the link's target was written";
  testing::internal::CaptureStderr();
  EXPECT_TRUE(f.read().empty());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  // A link to /dev/full is refused before any write is tried.
  ASSERT_EQ(::unlink(f.path.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/full", f.path.c_str()), 0);
  expect_append_refused(f, record("k"), {"symbolic link"});
}

TEST(CacheFaults, SymlinkedFolderToAFolderIsFollowed) {
  TempDir real, links;
  const std::string link = links.path + "/cache";
  ASSERT_EQ(::symlink(real.path.c_str(), link.c_str()), 0);
  CacheFile(link).append(record("k1"));
  const std::vector<Record> rs = CacheFile(real.path).read();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].at("variant"), "v-k1");
}

TEST(CacheFaults, SymlinkedFolderToAFileOrToNothingIsRefused) {
  TempDir dir;
  const std::string file = dir.path + "/file", to_file = dir.path + "/to-file", dangling = dir.path + "/dangling";
  write_file(file, "x\n");
  ASSERT_EQ(::symlink(file.c_str(), to_file.c_str()), 0);
  ASSERT_EQ(::symlink((dir.path + "/missing").c_str(), dangling.c_str()), 0);
  expect_append_refused(CacheFile(to_file), record("k"), {to_file, "symbolic link to " + file, "not a folder"});
  expect_append_refused(CacheFile(dangling), record("k"), {dangling, "not a folder", "does not exist"});
  EXPECT_EQ(slurp(file), "x\n");
  EXPECT_FALSE(fs::exists(dir.path + "/missing")) << "a dangling link's target was created";
}

// ---- not a regular file -------------------------------------------------------------------------------

TEST(CacheFaults, AFolderOrAFifoInPlaceOfTheFileIsRefusedWithoutHanging) {
  TempDir dir;
  const CacheFile f(dir.path);
  fs::create_directories(f.path);
  expect_append_refused(f, record("k"), {f.path});
  testing::internal::CaptureStderr();
  EXPECT_TRUE(f.read().empty());
  EXPECT_NE(testing::internal::GetCapturedStderr().find("not a regular file"), std::string::npos);
  TempDir dir2;  // warnings are once per text: a fresh path for the FIFO
  const CacheFile fifo(dir2.path);
  ASSERT_EQ(::mkfifo(fifo.path.c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  expect_append_refused(fifo, record("k"), {fifo.path});  // no reader: ENXIO, not a blocked open
  testing::internal::CaptureStderr();
  EXPECT_TRUE(fifo.read().empty());                       // O_NONBLOCK: no writer, no wait
  EXPECT_NE(testing::internal::GetCapturedStderr().find("not a regular file"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// ---- full disk, no locks, read errors (fault injection) ---------------------------------------------

TEST(CacheFaults, FullDiskLeavesNoTornLineAndTheNextAppendWorks) {
  TempDir dir;
  const CacheFile f(dir.path);
  f.append(record("good1"));
  const std::string before = slurp(f.path);
  {
    ArmedFaults armed("cache_write");
    expect_append_refused(f, record("lost", 300),
                          {"writing the decision cache", f.path, "No space left on device", "partial line was removed"});
    EXPECT_EQ(slurp(f.path), before) << "a torn line stayed in the file";
    testing::internal::CaptureStderr();
    std::string why;
    EXPECT_FALSE(f.try_append(record("lost2", 300), &why));
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(why.find("No space left on device"), std::string::npos) << why;
    EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
    EXPECT_EQ(slurp(f.path), before);
  }
  f.append(record("good2"));
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = f.read();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "no corrupt line";
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].at("key"), "good1");
  EXPECT_EQ(rs[1].at("key"), "good2");
}

// A writer killed with SIGKILL inside its write() (Linux stops a long buffered write between two
// folios for a fatal signal: appending 16 MiB lines, 59 of 60 kills tore one on Linux 6.18/ext4),
// or a machine that went down mid-append, leaves the start of a line without its newline, and
// cannot cut it back as a failed write does. The next append must not be glued to it: the glued
// line would fail its checksum and take the next writer's good decision with it, for every reader,
// for good (before the fix, rs held only "before").
TEST(CacheFaults, ALineTornByAKilledWriterCostsNoOtherLine) {
  TempDir dir, scratch;
  const CacheFile f(dir.path);
  f.append(record("before"));
  bool stale = false;
  ASSERT_TRUE(f.lookup("before", "v=1", &stale));  // this process has read the file up to here
  // What the killed writer left: the first part of a real line.
  const CacheFile whole(scratch.path);
  whole.append(record("torn", 300));
  const std::string line = slurp(whole.path);
  {
    std::ofstream out(f.path, std::ios::binary | std::ios::app);
    out << line.substr(0, line.size() / 2);
  }
  testing::internal::CaptureStderr();
  f.append(record("after"));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("cut short by a writer that died mid-append"), std::string::npos) << said;
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = f.read();
  const std::optional<Record> hit = f.lookup("after", "v=1", &stale);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(rs.size(), 2u) << err;
  EXPECT_EQ(rs[0].at("key"), "before");
  EXPECT_EQ(rs[1].at("key"), "after");
  EXPECT_TRUE(hit.has_value()) << "a process that had read the file before lost the next decision";
  EXPECT_EQ(count_of(slurp(f.path), "\n"), 2u) << "the torn part stayed in the file";
  EXPECT_EQ(err, "") << "no line is corrupt once the torn part is gone";
  // A file holding nothing but a torn line is cut to nothing, then appended to.
  TempDir only;
  const CacheFile g(only.path);
  write_file(g.path, line.substr(0, line.size() / 3));
  testing::internal::CaptureStderr();
  g.append(record("first"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("cut short"), std::string::npos);
  testing::internal::CaptureStderr();
  const std::vector<Record> gs = g.read();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0].at("key"), "first");
}

TEST(CacheFaults, WithoutLocksNothingIsWrittenButReadingGoesOn) {
  TempDir dir;
  const CacheFile f(dir.path);
  f.append(record("good1"));
  const std::string before = slurp(f.path);
  ArmedFaults armed("cache_lock");
  expect_append_refused(f, record("k"), {"cannot lock the decision cache", f.path, "No locks available"});
  EXPECT_EQ(slurp(f.path), before);
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = f.read();
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].at("key"), "good1");
  EXPECT_NE(err.find("reading it unlocked"), std::string::npos) << err;
}

TEST(CacheFaults, ReadErrorReplaysNothingWithAWarning) {
  TempDir dir;
  const CacheFile f(dir.path);
  f.append(record("good1"));
  ArmedFaults armed("cache_read");
  testing::internal::CaptureStderr();
  bool stale = true;
  EXPECT_FALSE(f.lookup("good1", "v=1", &stale).has_value());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(stale);
  EXPECT_NE(err.find("reading the decision cache"), std::string::npos) << err;
  EXPECT_NE(err.find("Input/output error"), std::string::npos) << err;
}

// ---- checksums --------------------------------------------------------------------------------------

TEST(CacheFaults, ChecksumsCatchAnEditedLineWhilePlainLinesStillRead) {
  TempDir dir;
  const CacheFile f(dir.path);
  f.append(record("k1"));
  std::string text = slurp(f.path);
  ASSERT_EQ(text.back(), '\n');
  const size_t crc = text.rfind(",\"crc\":\"");
  ASSERT_NE(crc, std::string::npos) << text;
  EXPECT_EQ(text.size() - crc, std::string(",\"crc\":\"").size() + 16 + 3) << "16 hex digits, then \"}\\n: " << text;
  const size_t at = text.find("v-k1");
  ASSERT_NE(at, std::string::npos);
  text[at + 3] = '7';  // "v-k7": the same length, a different decision
  write_file(f.path, text);
  f.append(record("k2"));
  {
    std::ofstream out(f.path, std::ios::app);
    // Schema 1 (before checksums): another schema's line, ignored without a word.
    out << "{\"key\":\"k3\",\"op\":\"spmm\",\"schema\":1,\"variant\":\"v-k3\",\"versions\":\"v=1\"}\n";
    // This schema without a checksum: what a splice of two lines can look like, so refused.
    out << "{\"key\":\"k4\",\"op\":\"spmm\",\"schema\":" << kCacheSchema
        << ",\"variant\":\"v-k4\",\"versions\":\"v=1\"}\n";
  }
  f.append(record("k5"));
  testing::internal::CaptureStderr();
  const std::vector<Record> rs = f.read();
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].at("key"), "k2");
  EXPECT_EQ(rs[1].at("key"), "k5");
  for (const Record& r : rs) EXPECT_EQ(r.count("crc"), 0u) << "the checksum is not part of the record";
  EXPECT_NE(err.find(f.path + ":1"), std::string::npos) << err;
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
  EXPECT_NE(err.find(f.path + ":4"), std::string::npos) << err;
  EXPECT_NE(err.find("no checksum"), std::string::npos) << err;
  EXPECT_EQ(err.find(f.path + ":3"), std::string::npos) << "another schema's line is not corrupt: " << err;
}

// ---- another process truncating, rewriting and deleting the file ------------------------------------

TEST(CacheFaults, ConcurrentTruncateRewriteAndDeleteNeverYieldACorruptRecord) {
  TempDir dir;
  const CacheFile f(dir.path);
  for (int i = 0; i < 20; ++i) f.append(record("seed" + std::to_string(i), 20 + 7 * static_cast<size_t>(i)));
  constexpr double kSeconds = 1.5;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // No lock and no care: cut the file, rewrite it from spliced pieces of itself (lines starting
    // and ending anywhere) in small writes, or delete it.
    std::mt19937_64 rng(20261122);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(kSeconds);
    while (std::chrono::steady_clock::now() < end) {
      const std::string old = slurp(f.path);
      const uint64_t action = rng() % 4;
      if (action == 0) {
        // A failed truncate only means this round changes nothing (glibc's warn_unused_result is
        // not silenced by a cast to void in g++).
        const int rc = ::truncate(f.path.c_str(), old.empty() ? 0 : static_cast<off_t>(rng() % old.size()));
        static_cast<void>(rc);
      } else if (action == 3) {
        (void)::unlink(f.path.c_str());
      } else if (!old.empty()) {
        const size_t a = rng() % old.size(), b = rng() % old.size();
        const std::string spliced = old.substr(a, rng() % (old.size() - a + 1)) + old.substr(b) + old.substr(0, a);
        const int fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
          for (size_t at = 0; at < spliced.size(); at += 97)
            if (::write(fd, spliced.data() + at, std::min<size_t>(97, spliced.size() - at)) < 0) break;
          ::close(fd);
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    }
    std::_Exit(0);
  }
  testing::internal::CaptureStderr();
  size_t appended = 0, reads = 0, seen = 0, bad = 0;
  std::string first_bad;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(kSeconds);
  while (std::chrono::steady_clock::now() < end) {
    const std::string key = "p" + std::to_string(appended);
    try {
      f.append(record(key, 10 + 13 * (appended % 40)));
      ++appended;
    } catch (const std::exception& e) {
      ++bad;
      if (first_bad.empty()) first_bad = std::string("append threw: ") + e.what();
    }
    if (appended % 3 != 0) continue;
    ++reads;
    for (const Record& r : f.read()) {
      ++seen;
      const bool ok = r.count("key") && r.count("variant") && r.count("versions") && r.count("op") &&
                      r.count("schema") && !r.count("crc") && r.at("variant") == "v-" + r.at("key") &&
                      r.at("versions") == "v=1" && r.at("op") == "spmm";
      if (!ok && ++bad == 1) first_bad = "corrupt record: " + format_record(r);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(bad, 0u) << first_bad;
  EXPECT_GT(reads, 0u);
  EXPECT_GT(seen, 0u) << "the reader never saw a record";
  std::printf("[ info ] %zu appends, %zu reads, %zu records checked, %zu lines skipped (%zu by their checksum) while "
              "a rewriter ran\n",
              appended, reads, seen, count_of(err, "skipped a corrupt"), count_of(err, "checksum"));
}

// ---- through an op ----------------------------------------------------------------------------------

// The openmp plugin has several spmm variants, so an op there probes and stores a decision.
std::string no_openmp_reason() {
  const PluginInfo& p = plugin("openmp");
  if (p.status == PluginStatus::available) return {};
  return std::string("the openmp plugin is not available here (") + name(p.status) + "): " + p.reason;
}

// spmm of a generated pattern with integer B: sums are exact, so openmp equals the reference exactly.
// Whether a decision of this source is one the scheduler writes to the cache (a cold decision).
bool stores(const std::string& source) {
  return source == "timed" || source == "probe" || source == "model" || source == "estimate";
}

// Returns the decision of the scheduled openmp call, read right after it while its context (and so
// its plan) is alive: last_decision() after this function would name the reference call below, a
// requested variant (so the tests that looked at it that way always skipped their checks).
Decision expect_spmm_right(const std::string& spec) {
  const HostCsr<int32_t, float> a = generate<int32_t, float>(spec, {.seed = 3, .pattern = true});
  HostDense<float> b(a.cols, 16), c(a.rows, 16, -1, -7.0f), want(a.rows, 16);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(static_cast<int>(i % 9) - 4);
  const Context ctx = Context::create("openmp");
  spmm(ctx, a.view(), b.view(), c.mut());
  const Decision d = last_decision();
  spmm(Context::create("reference"), a.view(), b.view(), want.mut(), {.variant = "spmm.serial"});
  EXPECT_EQ(c.data, want.data) << spec;
  return d;
}

TEST(CacheFaults, AnOpWithAnUnwritableCacheRunsRightAndWarnsOncePerReason) {
  if (const std::string why = no_openmp_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  TempDir dir;
  const std::string file = dir.path + "/plain-file";
  write_file(file, "x\n");
  const ScopedEnv cache("SPARSEPORT_CACHE_DIR", (file + "/sub").c_str());
  const ScopedEnv mode("SPARSEPORT_SCHEDULER", "probe");
  const ScopedEnv repeats("SPARSEPORT_PROBE_REPEATS", "1");
  const ScopedEnv log("SPARSEPORT_LOG", nullptr);
  clear_plan_memo();
  testing::internal::CaptureStderr();
  const std::string source = expect_spmm_right("er:3000:0.004").source;
  expect_spmm_right("er:3100:0.004");
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(stores(source)) << source << ": a cold decision, which the scheduler tries to store";
  EXPECT_EQ(count_of(err, "decision not cached"), 1u) << err;
  EXPECT_NE(err.find("Not a directory"), std::string::npos) << err;
  // SPARSEPORT_LOG=scheduler says it at every decision.
  const ScopedEnv log_on("SPARSEPORT_LOG", "scheduler");
  clear_plan_memo();
  testing::internal::CaptureStderr();
  expect_spmm_right("er:3200:0.004");
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_NE(logged.find("decision not cached"), std::string::npos) << logged;
  clear_plan_memo();
}

TEST(CacheFaults, AnOpWithAFullDiskRunsRightAndLeavesTheCacheClean) {
  if (const std::string why = no_openmp_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  TempDir dir;
  const ScopedEnv cache("SPARSEPORT_CACHE_DIR", dir.path.c_str());
  const ScopedEnv mode("SPARSEPORT_SCHEDULER", "probe");
  const ScopedEnv repeats("SPARSEPORT_PROBE_REPEATS", "1");
  clear_plan_memo();
  const CacheFile f(dir.path);
  {
    ArmedFaults armed("cache_write");
    testing::internal::CaptureStderr();
    const std::string source = expect_spmm_right("er:3000:0.005").source;
    const std::string err = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(stores(source)) << source << ": a cold decision, which the scheduler tries to store";
    EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  }
  testing::internal::CaptureStderr();
  EXPECT_TRUE(f.read().empty());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "a torn line was left behind";
  clear_plan_memo();
  const std::string again = expect_spmm_right("er:3000:0.005").source;
  ASSERT_TRUE(stores(again)) << again;
  EXPECT_GE(f.read().size(), 1u) << "the disk has room again";
  clear_plan_memo();
}

}  // namespace
