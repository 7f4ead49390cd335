// SPDX-License-Identifier: Apache-2.0
// Device memory running out, on a GPU: a dense operand twice the size of the device, a structural
// op whose result does not fit (512 GiB of columns from a few MiB of input), an int32 result that
// would overflow its rowptr, and cudaMalloc failing on purpose (SPARSEPORT_FAULT_INJECT's
// device_alloc site). Each raises OutOfMemory (or InvalidArgument for int32) naming the op or the
// allocation, the bytes and the device's free and total memory, writes nothing, and leaves the
// context usable: the non-sticky cudaErrorMemoryAllocation is cleared, and a small op runs after.
// Then out of memory in the middle of an op: every device allocation of every op family (operands,
// plans, formats, the scratch pool's temporaries) fails in turn, and the context holds exactly the
// device memory it held before.
// Without a GPU every test skips and says why.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "cuda_test.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/plan.hpp"
#include "core/fault.hpp"
#include "../common/oom_steps.hpp"
#include "../common/scoped.hpp"

namespace {

using sparseport_test::expect_error;

using namespace sparseport;
using namespace cuda_test;

constexpr float kPoison = -3.0f;

struct ArmedFaults {
  explicit ArmedFaults(const char* sites) { detail::set_fault_sites(sites); }
  ~ArmedFaults() { detail::set_fault_sites(""); }
};

// memory_bytes from the device signature (cudaDeviceProp::totalGlobalMem).
size_t device_memory_bytes(const Context& ctx) {
  const std::string sig = device_signature(ctx);
  const size_t at = sig.find("memory_bytes=");
  if (at == std::string::npos) return 0;
  return static_cast<size_t>(std::stoull(sig.substr(at + 13)));
}

// A small op checked against the host: the context still works after the failure.
void expect_context_works(const Context& ctx) {
  HostCsr<int32_t, float> h;
  h.rows = 3;
  h.cols = 4;
  h.rowptr = {0, 2, 2, 5};
  h.colind = {1, 3, 0, 1, 2};
  h.values = {2, -1, 1, 3, 0.5};
  const DevCsr<int32_t, float> a = to_device(ctx, h);
  HostDense<float> b(4, 2), c(3, 2, -1, 7.0f);
  for (int64_t j = 0; j < 4; ++j) b(j, 0) = static_cast<float>(j + 1), b(j, 1) = 1.0f;
  const DevDense<float> db = to_device(ctx, b), dc = to_device(ctx, c);
  spmm(ctx, a.view, db.view(), dc.mut());
  EXPECT_EQ(to_host(ctx, dc).data, (std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f, 8.5f, 4.5f})) << "spmm after a failure";
  const CsrMatrix t = csr_transpose(ctx, a.view);
  EXPECT_EQ(t.nnz, 5);
}

TEST(CudaResources, DenseOperandTwiceTheDeviceMemoryIsOutOfMemory) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  const size_t total = device_memory_bytes(ctx);
  ASSERT_GT(total, 0u) << device_signature(ctx);
  const size_t want = 2 * total;
  const OutOfMemory e = expect_error<OutOfMemory>(
      [&] { (void)ctx.allocate(want); },
      {"cuda:0", std::to_string(want) + " bytes", "cudaErrorMemoryAllocation", "free of"});
  EXPECT_EQ(e.requested_bytes(), want);
  EXPECT_EQ(e.native_name(), "cudaErrorMemoryAllocation");
  expect_context_works(ctx);
}

TEST(CudaResources, StructuralResultLargerThanTheDeviceIsOutOfMemoryNamingTheOp) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  // int64: one row of 2^20 entries picked 2^16 times is 2^36 result entries, 512 GiB of columns.
  const int64_t width = int64_t{1} << 20, picks = int64_t{1} << 16;
  HostCsr<int64_t, float> h;
  h.rows = 1;
  h.cols = width;
  h.rowptr = {0, width};
  h.colind.resize(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) h.colind[static_cast<size_t>(j)] = j;
  const DevCsr<int64_t, float> a = to_device(ctx, h);
  const Buffer rows = upload(ctx, std::vector<int64_t>(static_cast<size_t>(picks), 0));
  const std::string bytes = std::to_string((width * picks) * 8);
  const OutOfMemory e = expect_error<OutOfMemory>(
      [&] { (void)csr_slice_rows(ctx, a.view, make_index(picks, static_cast<const int64_t*>(rows.data()))); },
      {"sparseport::csr_slice_rows[cuda:0]", "the result's colind", bytes + " bytes", "cudaErrorMemoryAllocation",
       "free of"});
  EXPECT_EQ(e.requested_bytes(), static_cast<size_t>(width * picks) * 8);
  expect_context_works(ctx);
}

TEST(CudaResources, Int32ResultBeyondInt32IsRefusedBeforeTheScanWraps) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  const int64_t width = int64_t{1} << 16, picks = (int64_t{1} << 15) + 1;
  HostCsr<int32_t, float> h;
  h.rows = 1;
  h.cols = width;
  h.rowptr = {0, static_cast<int32_t>(width)};
  h.colind.resize(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j) h.colind[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  const DevCsr<int32_t, float> a = to_device(ctx, h);
  const Buffer rows = upload(ctx, std::vector<int32_t>(static_cast<size_t>(picks), 0));
  for (const std::string& variant : plugin("cuda").variants_of(SPARSEPORT_OP_CSR_SLICE_ROWS)) {
    SCOPED_TRACE(variant);
    expect_error<InvalidArgument>(
        [&] {
          (void)csr_slice_rows(ctx, a.view, make_index(picks, static_cast<const int32_t*>(rows.data())),
                               {.variant = variant});
        },
        {"sparseport::csr_slice_rows[cuda:0]", std::to_string(width * picks), "int32", "use int64"});
  }
  expect_context_works(ctx);
}

TEST(CudaResources, InjectedDeviceAllocFailureIsOutOfMemoryAndWritesNothing) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  HostDense<float> poison(4, 8, -1, kPoison);
  const DevDense<float> out = to_device(ctx, poison);
  HostCsr<int32_t, float> h;
  h.rows = 2;
  h.cols = 8;
  h.rowptr = {0, 1, 2};
  h.colind = {3, 5};
  h.values = {1.0f, 2.0f};
  const DevCsr<int32_t, float> a = to_device(ctx, h);
  {
    ArmedFaults armed("device_alloc");
    const OutOfMemory e = expect_error<OutOfMemory>(
        [&] { (void)ctx.allocate(1024); }, {"cuda:0", "1024 bytes", "cudaErrorMemoryAllocation", "SPARSEPORT_FAULT_INJECT"});
    EXPECT_EQ(e.requested_bytes(), 1024u);
    // A structural op allocates its result through the same path: the op and the array are named.
    expect_error<OutOfMemory>([&] { (void)csr_transpose(ctx, a.view); },
                              {"sparseport::csr_transpose[cuda:0]", "the result's rowptr", "bytes"});
  }
  EXPECT_EQ(to_host(ctx, out).data, poison.data) << "a failed allocation wrote to an unrelated buffer";
  expect_context_works(ctx);
}

TEST(CudaResources, FakeInt32ViewBeyondInt32WritesNoOutput) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  // nnz = 2^31 on int32 indices: refused before the (tiny) arrays are read on the device.
  const Buffer rowptr = upload(ctx, std::vector<int32_t>{0, 0});
  const Buffer colind = upload(ctx, std::vector<int32_t>{0});
  const CsrView fake{1, 1, int64_t{1} << 31, rowptr.data(), colind.data(), nullptr, IndexType::i32, ValueType::f32};
  const Buffer pick = upload(ctx, std::vector<int32_t>{0});
  HostDense<float> poison(1, 1, -1, kPoison);
  const DevDense<float> out = to_device(ctx, poison);
  expect_error<InvalidArgument>(
      [&] { csr_slice_rows_dense(ctx, fake, make_index(1, static_cast<const int32_t*>(pick.data())), out.mut()); },
      {"sparseport::csr_slice_rows_dense[cuda:0]", "2147483648", "int32"});
  EXPECT_EQ(to_host(ctx, out).data, poison.data);
  expect_context_works(ctx);
}

// Device memory the context holds once its queued work has run (plugins/cuda/diagnostics.h).
struct Held {
  uint64_t allocated = 0, scratch = 0;
};
Held held(const Context& ctx) {
  sparseport_cuda_diagnostics d{};
  EXPECT_EQ(sparseport_cuda_get_diagnostics(ctx.exec().state, &d), 0);
  return {d.allocated_bytes, d.scratch_bytes};
}

TEST(CudaResources, EveryAllocationOfEveryOpFamilyFailsInTurn) {
  CUDA_TEST_REQUIRE_GPU();
  const Context ctx = Context::create("cuda");
  for (const char* family : sparseport::test::kOpFamilies) {
    clear_plan_memo();
    const Held before = held(ctx);
    const sparseport::test::OomSteps r =
        sparseport::test::fail_each_allocation(ctx, family, "device_alloc", [&](int step) {
          const Held now = held(ctx);
          EXPECT_EQ(now.allocated, before.allocated) << family << " step " << step << ": buffers left allocated";
          EXPECT_EQ(now.scratch, before.scratch) << family << " step " << step << ": scratch (plans, formats) left in use";
        });
    std::printf("[ oom      ] cuda %s: %d steps out of memory, %d absorbed; held %llu + %llu bytes before and after\n",
                family, r.out_of_memory, r.absorbed, static_cast<unsigned long long>(before.allocated),
                static_cast<unsigned long long>(before.scratch));
  }
}

}  // namespace
