// SPDX-License-Identifier: Apache-2.0
// Resource limits and faults on the host backends: int32 limits (front-end checks on small fake
// views whose huge sizes are refused before any pointer is read, a structural result that outgrows
// int32 on every backend and variant, generators and the Matrix Market loader), allocation
// failures (sizes no allocator can give, a std::bad_alloc inside a kernel, the host_alloc fault
// site) and the fault-injection switch itself. Every error is checked for its exact class, the op,
// argument and numbers in its message, untouched outputs, and a context that still works after.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "sparseport/sparseport.hpp"
#include "core/fault.hpp"
#include "../common/oom_steps.hpp"
#include "../common/scoped.hpp"

namespace sp = sparseport;

namespace {

using sparseport_test::expect_error;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// Arms fault sites for one scope.
struct ArmedFaults {
  explicit ArmedFaults(const char* sites) { sp::detail::set_fault_sites(sites); }
  ~ArmedFaults() { sp::detail::set_fault_sites(""); }
};

// Whether a huge allocation is certain to fail rather than succeed lazily and be touched: not
// under AddressSanitizer (it aborts on sizes beyond its limit) nor with vm.overcommit_memory=1.
std::string why_no_real_oom() {
  if (kAsan) return "AddressSanitizer aborts on allocations beyond its limit instead of failing them";
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  if (f >> mode && mode == 1) return "vm.overcommit_memory=1 lets huge allocations succeed";
  return {};
}

// Every compiled-in plugin that runs here on host memory (reference, openmp, kokkos on the host).
std::vector<std::string> host_backends() {
  std::vector<std::string> out;
  for (const sp::PluginInfo& p : sp::plugins())
    if (p.status == sp::PluginStatus::available && p.table->memory_space == SPARSEPORT_MEMORY_HOST)
      out.push_back(p.name);
  return out;
}

// The 3 x 4 running example: row 0: cols 1 3; row 1 empty; row 2: cols 0 1 2.
struct Example {
  std::vector<int32_t> rowptr{0, 2, 2, 5}, colind{1, 3, 0, 1, 2};
  std::vector<float> values{2, -1, 1, 3, 0.5};
  sp::CsrView view() const {
    return sp::make_csr<int32_t, float>(3, 4, 5, rowptr.data(), colind.data(), values.data());
  }
};

// A small spmm with a hand-computed result: the context still works after a failure.
void expect_context_works(const sp::Context& ctx) {
  const Example a;
  sp::HostDense<float> b(4, 2), c(3, 2, -1, 7.0f);
  for (int64_t j = 0; j < 4; ++j) b(j, 0) = static_cast<float>(j + 1), b(j, 1) = 1.0f;
  sp::Buffer scratch = ctx.allocate(4096);
  EXPECT_NE(scratch.data(), nullptr) << ctx.backend();
  sp::spmm(ctx, a.view(), b.view(), c.mut());
  const std::vector<float> want{0.0f, 1.0f, 0.0f, 0.0f, 8.5f, 4.5f};
  EXPECT_EQ(c.data, want) << "spmm on " << ctx.backend() << " after a failure";
}

bool all_equal(const std::vector<float>& v, float x) {
  for (float y : v)
    if (!(y == x)) return false;
  return true;
}

constexpr float kPoison = -12345.0f;
constexpr int64_t kBeyondInt32 = int64_t{1} << 31;  // 2147483648

// ---- the switch ---------------------------------------------------------------------------------

TEST(FaultSwitch, SetterArmsExactlyTheNamedSites) {
  EXPECT_FALSE(sp::detail::fault_armed("host_alloc"));
  {
    ArmedFaults armed("host_alloc, cache_write");
    EXPECT_TRUE(sp::detail::fault_armed("host_alloc"));
    EXPECT_TRUE(sp::detail::fault_armed("cache_write"));
    EXPECT_FALSE(sp::detail::fault_armed("device_alloc"));
    EXPECT_FALSE(sp::detail::fault_armed("host"));  // whole names only
    EXPECT_FALSE(sp::detail::fault_armed("nonsense"));
  }
  EXPECT_FALSE(sp::detail::fault_armed("host_alloc"));
  EXPECT_FALSE(sp::detail::fault_armed("cache_write"));
  expect_error<sp::InvalidArgument>([] { sp::detail::set_fault_sites("host_alloc,disk_full"); },
                                    {"set_fault_sites", "disk_full", "host_alloc, device_alloc"});
  EXPECT_FALSE(sp::detail::fault_armed("host_alloc")) << "a refused list arms nothing";
}

TEST(FaultSwitch, CountedSiteLetsNChecksPassThenFailsOnce) {
  {
    ArmedFaults armed("host_alloc@2, cache_read");
    EXPECT_FALSE(sp::detail::fault_armed("host_alloc"));
    EXPECT_FALSE(sp::detail::fault_armed("host_alloc"));
    EXPECT_FALSE(sp::detail::fault_armed("device_alloc")) << "another site's check does not count";
    EXPECT_EQ(sp::detail::set_fault_sites("host_alloc@0, cache_read"), "host_alloc@0,cache_read")
        << "the count left is listed";
    EXPECT_TRUE(sp::detail::fault_armed("host_alloc")) << "the third check fails";
    EXPECT_FALSE(sp::detail::fault_armed("host_alloc")) << "once";
    EXPECT_TRUE(sp::detail::fault_armed("cache_read")) << "an uncounted site keeps failing";
    EXPECT_TRUE(sp::detail::fault_armed("cache_read"));
    EXPECT_EQ(sp::detail::set_fault_sites("cache_read"), "cache_read") << "a fired counted site is not listed";
  }
  expect_error<sp::InvalidArgument>([] { sp::detail::set_fault_sites("host_alloc@x"); },
                                    {"set_fault_sites", "host_alloc@x", "site@N"});
  expect_error<sp::InvalidArgument>([] { sp::detail::set_fault_sites("host_alloc@-1"); }, {"host_alloc@-1"});
  EXPECT_FALSE(sp::detail::fault_armed("host_alloc")) << "a refused list arms nothing";
}

TEST(FaultSwitch, EnvironmentVariableArmsSitesAndWarns) {
  ::setenv("SPARSEPORT_FAULT_INJECT", "cache_read, host_alloc,bogus", 1);
  sp::detail::reset_fault_sites_from_env();
  testing::internal::CaptureStderr();
  const bool host = sp::detail::fault_armed("host_alloc");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(host);
  EXPECT_TRUE(sp::detail::fault_armed("cache_read"));
  EXPECT_FALSE(sp::detail::fault_armed("cache_write"));
  EXPECT_NE(err.find("SPARSEPORT_FAULT_INJECT"), std::string::npos) << err;
  EXPECT_NE(err.find("bogus"), std::string::npos) << "an unknown site is named: " << err;
  EXPECT_NE(err.find("cache_read,host_alloc"), std::string::npos) << "the armed sites are named: " << err;
  ::unsetenv("SPARSEPORT_FAULT_INJECT");
  sp::detail::reset_fault_sites_from_env();
  EXPECT_FALSE(sp::detail::fault_armed("host_alloc"));
}

// ---- allocation failures --------------------------------------------------------------------------

TEST(HostOutOfMemory, SizeNoAllocatorCanGiveIsOutOfMemoryAndTheContextStaysUsable) {
  for (const std::string& backend : host_backends()) {
    SCOPED_TRACE(backend);
    const sp::Context ctx = sp::Context::create(backend);
    // Near SIZE_MAX: rounding up to the alignment would wrap around to a few bytes.
    const size_t huge = std::numeric_limits<size_t>::max() - 8;
    const sp::OutOfMemory e = expect_error<sp::OutOfMemory>(
        [&] { (void)ctx.allocate(huge); }, {"sparseport: allocating", std::to_string(huge) + " bytes", ctx.backend()});
    EXPECT_EQ(e.requested_bytes(), huge);
    EXPECT_FALSE(e.native_name().empty());
    expect_context_works(ctx);
  }
}

TEST(HostOutOfMemory, OnePebibyteFailsCleanly) {
  if (const std::string why = why_no_real_oom(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  for (const std::string& backend : host_backends()) {
    SCOPED_TRACE(backend);
    const sp::Context ctx = sp::Context::create(backend);
    const size_t pib = size_t{1} << 50;  // more than a 47-bit address space holds
    const sp::OutOfMemory e = expect_error<sp::OutOfMemory>(
        [&] { (void)ctx.allocate(pib); }, {"1125899906842624 bytes", "1.0 PiB", ctx.backend()});
    EXPECT_EQ(e.requested_bytes(), pib);
    expect_context_works(ctx);
  }
}

TEST(HostOutOfMemory, InjectedHostAllocFailureNamesTheBytesAndTheOp) {
  for (const std::string& backend : host_backends()) {
    SCOPED_TRACE(backend);
    const sp::Context ctx = sp::Context::create(backend);
    const Example a;
    {
      ArmedFaults armed("host_alloc");
      const sp::OutOfMemory e =
          expect_error<sp::OutOfMemory>([&] { (void)ctx.allocate(4096); }, {"4096 bytes", ctx.backend()});
      EXPECT_EQ(e.requested_bytes(), 4096u);
      // A structural op's result is allocated through the same slot: the op and the array are named.
      const sp::OutOfMemory t = expect_error<sp::OutOfMemory>(
          [&] { (void)sp::csr_transpose(ctx, a.view()); },
          {"sparseport::csr_transpose[" + ctx.backend() + "]", "the result's rowptr", "5 elements", "bytes"});
      EXPECT_GT(t.requested_bytes(), 0u);
      const std::vector<int32_t> rows{2, 0};
      expect_error<sp::OutOfMemory>([&] { (void)sp::csr_slice_rows(ctx, a.view(), sp::make_index(2, rows.data())); },
                                    {"sparseport::csr_slice_rows[" + ctx.backend() + "]", "the result's rowptr"});
    }
    expect_context_works(ctx);
    const sp::CsrMatrix t = sp::csr_transpose(ctx, a.view());
    EXPECT_EQ(t.nnz, 5);
  }
}

TEST(HostOutOfMemory, BadAllocInsideAKernelBecomesOutOfMemoryWithNoPartialOutput) {
  if (const std::string why = why_no_real_oom(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  // segment_reduce.serial keeps one accumulator per output element: out claims 2^30 x 2^16 floats
  // (256 TiB, more than the address space), so its first allocation fails. `out` points at a small
  // poisoned buffer that the kernel never reaches.
  const sp::Context ctx = sp::Context::create("reference");
  const int64_t n = int64_t{1} << 30, f = int64_t{1} << 16;
  const std::vector<int32_t> index{0};
  const std::vector<float> src(static_cast<size_t>(f), 1.0f);
  std::vector<float> poisoned(1024, kPoison);
  const sp::OutOfMemory e = expect_error<sp::OutOfMemory>(
      [&] {
        sp::segment_reduce(ctx, sp::make_index(1, index.data()), sp::make_dense<float>(1, f, f, src.data()),
                           sp::make_dense<float>(n, f, f, poisoned.data()), {.variant = "segment_reduce.serial"});
      },
      {"sparseport::segment_reduce[reference]", "host memory", "std::bad_alloc"});
  EXPECT_EQ(e.native_name(), "std::bad_alloc");
  EXPECT_EQ(e.requested_bytes(), 0u) << "a std::bad_alloc does not say its size";
  EXPECT_TRUE(all_equal(poisoned, kPoison)) << "out was written before the failure";
  expect_context_works(ctx);
}

// ---- int32 limits: fake views refused before any pointer is read -------------------------------------

TEST(Int32Limits, FrontEndRefusesNnzBeyondInt32BeforeReadingAnything) {
  // nnz = 2^31 on int32 indices; rowptr and colind are tiny arrays that must never be read.
  const std::vector<int32_t> rowptr{0, 0}, colind{0};
  const std::vector<float> vals{1.0f};
  const sp::CsrView fake = sp::make_csr<int32_t, float>(1, 1, kBeyondInt32, rowptr.data(), colind.data(), vals.data());
  const std::string count = std::to_string(kBeyondInt32);
  for (const std::string& backend : host_backends()) {
    SCOPED_TRACE(backend);
    const sp::Context ctx = sp::Context::create(backend);
    const std::string at = "[" + ctx.backend() + "]";
    sp::HostDense<float> b(1, 4), c(1, 4, -1, kPoison);
    expect_error<sp::InvalidArgument>([&] { sp::spmm(ctx, fake, b.view(), c.mut()); },
                                      {"sparseport::spmm" + at, "A", count, "int32", "int64"});
    EXPECT_TRUE(all_equal(c.data, kPoison)) << "spmm wrote C";
    sp::HostDense<float> dense(1, 1, -1, kPoison);
    const std::vector<int32_t> pick{0};
    expect_error<sp::InvalidArgument>(
        [&] { sp::csr_slice_rows_dense(ctx, fake, sp::make_index(1, pick.data()), dense.mut()); },
        {"sparseport::csr_slice_rows_dense" + at, count, "int32"});
    EXPECT_TRUE(all_equal(dense.data, kPoison)) << "csr_slice_rows_dense wrote out";
    expect_error<sp::InvalidArgument>([&] { (void)sp::csr_transpose(ctx, fake); },
                                      {"sparseport::csr_transpose" + at, count, "int32"});
    expect_error<sp::InvalidArgument>([&] { (void)sp::csr_slice_rows(ctx, fake, sp::make_index(1, pick.data())); },
                                      {"sparseport::csr_slice_rows" + at, count, "int32"});
    expect_error<sp::InvalidArgument>(
        [&] { (void)sp::csr_induced_subgraph(ctx, fake, sp::make_index(1, pick.data())); },
        {"sparseport::csr_induced_subgraph" + at, count, "int32"});
    expect_context_works(ctx);
  }
}

TEST(Int32Limits, SliceRowsRefusesMoreResultRowsThanInt32BeforeReadingThem) {
  const Example a;
  const int32_t never_read = 0;
  for (const std::string& backend : host_backends()) {
    SCOPED_TRACE(backend);
    const sp::Context ctx = sp::Context::create(backend);
    expect_error<sp::InvalidArgument>(
        [&] { (void)sp::csr_slice_rows(ctx, a.view(), sp::make_index(kBeyondInt32, &never_read)); },
        {"sparseport::csr_slice_rows[" + ctx.backend() + "]", "rows has 2147483648 entries", "int32", "int64"});
    // Distinct vertices cannot outnumber the rows; refused before the (nonexistent) entries are read.
    const std::vector<int32_t> sq_rowptr{0, 1, 2}, sq_colind{1, 0};
    const sp::CsrView sq = sp::make_csr<int32_t, float>(2, 2, 2, sq_rowptr.data(), sq_colind.data());
    expect_error<sp::InvalidArgument>(
        [&] { (void)sp::csr_induced_subgraph(ctx, sq, sp::make_index(kBeyondInt32, &never_read)); },
        {"sparseport::csr_induced_subgraph[" + ctx.backend() + "]", "vertices has 2147483648 entries", "2 rows"});
    expect_context_works(ctx);
  }
}

// ---- int32 limits: a structural result that outgrows int32 ----------------------------------------

TEST(Int32Limits, SliceRowsResultBeyondInt32IsRefusedOnEveryBackendAndVariant) {
  // One row of 2^16 entries picked 2^15 + 1 times: 2^31 + 2^16 result entries from 256 KiB of input.
  // Phase 0 counts them in int64 and refuses before anything is stored in the int32 rowptr, so no
  // gigabytes are ever allocated.
  const int64_t width = int64_t{1} << 16, picks = (int64_t{1} << 15) + 1;
  std::vector<int32_t> rowptr{0, static_cast<int32_t>(width)}, colind(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) colind[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  const sp::CsrView a = sp::make_csr<int32_t, float>(1, width, width, rowptr.data(), colind.data());
  const std::vector<int32_t> rows(static_cast<size_t>(picks), 0);
  const std::string total = std::to_string(width * picks);  // 2147549184
  for (const std::string& backend : host_backends()) {
    const sp::Context ctx = sp::Context::create(backend);
    for (const std::string& variant : ctx.plugin().variants_of(SPARSEPORT_OP_CSR_SLICE_ROWS)) {
      SCOPED_TRACE(backend + " " + variant);
      expect_error<sp::InvalidArgument>(
          [&] { (void)sp::csr_slice_rows(ctx, a, sp::make_index(picks, rows.data()), {.variant = variant}); },
          {"sparseport::csr_slice_rows[" + ctx.backend() + "]", total, "int32", "2147483647", "use int64"});
    }
    // Just below the limit's neighbourhood the same matrix slices fine.
    const sp::CsrMatrix ok = sp::csr_slice_rows(ctx, a, sp::make_index(3, rows.data()));
    EXPECT_EQ(ok.nnz, 3 * width) << backend;
    expect_context_works(ctx);
  }
}

// ---- int32 limits: generators and the Matrix Market loader --------------------------------------------

TEST(Int32Limits, GeneratorsRefuseBeyondInt32BeforeAllocating) {
  expect_error<sp::InvalidArgument>([] { (void)sp::generate<int32_t, float>("er:100000:1"); },
                                    {"er:100000:1", "10000000000", "int32", "int64"});
  expect_error<sp::InvalidArgument>([] { (void)sp::generate<int32_t, float>("rmat:27:16"); },
                                    {"rmat:27:16", "2147483648", "int64"});
  expect_error<sp::InvalidArgument>([] { (void)sp::generate<int32_t, float>("band:3000000000:2"); },
                                    {"band:3000000000:2", "3000000000", "int64"});
  expect_error<sp::InvalidArgument>([] { (void)sp::generate<int32_t, float>("hubs:2000000000:2:1:2000000000"); },
                                    {"hubs:2000000000:2:1:2000000000", "int64"});
}

TEST(Int32Limits, GeneratorBeyondHostMemoryIsASparsePortErrorNotABadAlloc) {
  if (const std::string why = why_no_real_oom(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  // 2^46 rows fit int64 indices, but their rowptr alone (512 TiB) fits no machine: refused up front
  // (InvalidArgument naming the memory it needs), or OutOfMemory when the allocation fails.
  const std::string spec = "er:" + std::to_string(int64_t{1} << 46) + ":0";
  try {
    (void)sp::generate<int64_t, float>(spec);
    ADD_FAILURE() << spec << " was generated";
  } catch (const sp::OutOfMemory& e) {
    EXPECT_EQ(e.native_name(), "std::bad_alloc");
    EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << e.what();
  } catch (const sp::InvalidArgument& e) {
    EXPECT_EQ(typeid(e), typeid(sp::InvalidArgument)) << e.what();
    EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
  }
}

TEST(Int32Limits, MatrixMarketEntriesBeyondInt32AreRefusedFromTheHeader) {
  const std::string path = testing::TempDir() + "sparseport-faults-huge.mtx";
  {
    std::ofstream out(path);
    out << "%%MatrixMarket matrix coordinate real general\n10 10 3000000000\n1 1 1.0\n";
  }
  expect_error<sp::InvalidArgument>([&] { (void)sp::read_matrix_market<int32_t, float>(path); },
                                    {"read_matrix_market", path, "3000000000", "2147483647", "int64_t"});
  // int64 indices accept the header, and then the file is simply short: a ParseError, not a crash.
  EXPECT_THROW((void)(sp::read_matrix_market<int64_t, float>(path)), sp::ParseError);
  std::remove(path.c_str());
}

// ---- out of memory in the middle of an op -------------------------------------------------------

// Every allocation of every op family fails in turn on each host backend (tests/common/oom_steps.hpp):
// OutOfMemory or a verified result, never a crash or a wrong answer, and the context works after.
// Leaks are the sanitizer build's to find (LeakSanitizer in the debug-sanitize preset); on the GPU,
// CudaResources.EveryAllocationOfEveryOpFamilyFailsInTurn also counts the device memory held.
TEST(FaultOutOfMemoryMidOp, EveryAllocationOfEveryOpFamilyFailsInTurn) {
  for (const std::string& backend : host_backends()) {
    const sp::Context ctx = sp::Context::create(backend);
    for (const char* family : sp::test::kOpFamilies) {
      const sp::test::OomSteps r = sp::test::fail_each_allocation(ctx, family, "host_alloc", [](int) {});
      std::printf("[ oom      ] %s %s: %d steps out of memory, %d absorbed\n", backend.c_str(), family,
                  r.out_of_memory, r.absorbed);
    }
  }
}

}  // namespace
