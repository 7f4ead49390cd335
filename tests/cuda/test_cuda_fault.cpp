// SPDX-License-Identifier: Apache-2.0
// How CUDA and cuSPARSE failures reach the user. The mapping tests run anywhere (they call the
// backend's one mapping function directly, no device needed). The real-fault test makes a kernel
// read far outside B on purpose, so it is kept in its own program: a sticky fault leaves the
// whole process's CUDA context unusable, and CTest runs every test in a fresh process anyway.
// Leave this program out of compute-sanitizer runs: the fault is the point.
#include <gtest/gtest.h>

#include <limits>

#include "backends/cuda/errors.hpp"
#include "cuda_test.hpp"
#include "plugins/cuda/diagnostics.h"

namespace {

using namespace sparseport;
using namespace cuda_test;

TEST(CudaErrors, StickyRuntimeErrorsBecomeDeviceFaults) {
  for (cudaError_t err : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorMisalignedAddress,
                          cudaErrorIllegalInstruction, cudaErrorHardwareStackError}) {
    EXPECT_TRUE(cuda::is_sticky(err)) << cudaGetErrorName(err);
    try {
      cuda::raise(err, "a kernel");
      ADD_FAILURE() << "raise returned";
    } catch (const DeviceFault& e) {
      EXPECT_EQ(e.native_code(), static_cast<int>(err));
      EXPECT_EQ(e.native_name(), cudaGetErrorName(err));
      EXPECT_NE(std::string(e.what()).find("a kernel failed with " + e.native_name()), std::string::npos) << e.what();
    }
  }
}

TEST(CudaErrors, OtherRuntimeErrorsAreBackendErrors) {
  for (cudaError_t err : {cudaErrorMemoryAllocation, cudaErrorInvalidValue, cudaErrorInvalidConfiguration,
                          cudaErrorNoDevice, cudaErrorInsufficientDriver}) {
    EXPECT_FALSE(cuda::is_sticky(err)) << cudaGetErrorName(err);
    try {
      cuda::raise(err, "cudaMalloc of 8 bytes");
      ADD_FAILURE() << "raise returned";
    } catch (const DeviceFault& e) {
      ADD_FAILURE() << cudaGetErrorName(err) << " is not sticky but became a DeviceFault: " << e.what();
    } catch (const BackendError& e) {
      EXPECT_EQ(e.native_code(), static_cast<int>(err));
      EXPECT_EQ(e.native_name(), cudaGetErrorName(err));
    }
  }
}

TEST(CudaErrors, CusparseStatusesCarryTheirName) {
  try {
    cuda::raise(CUSPARSE_STATUS_NOT_SUPPORTED, "cusparseSpMM");
    ADD_FAILURE() << "raise returned";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.native_name(), "CUSPARSE_STATUS_NOT_SUPPORTED");
    EXPECT_EQ(e.native_code(), static_cast<int>(CUSPARSE_STATUS_NOT_SUPPORTED));
    EXPECT_NE(std::string(e.what()).find("cusparseSpMM failed with CUSPARSE_STATUS_NOT_SUPPORTED"), std::string::npos)
        << e.what();
  }
}

TEST(CudaFault, IllegalAddressPoisonsTheContext) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  // A column far beyond B with the index checks off (they would refuse it before any kernel ran),
  // so the kernel faults: what a bad dense pointer or unchecked indices still can do.
  ctx.set_validate(ValidateMode::off);
  HostCsr<int32_t, float> a;
  a.rows = 4;
  a.cols = 8;
  a.rowptr = {0, 1, 2, 3, 4};
  a.colind = {0, 1, std::numeric_limits<int32_t>::max() - 1, 2};
  a.values = {1, 1, 1, 1};
  const auto da = to_device(ctx, a);
  const DevDense<float> db = to_device(ctx, HostDense<float>(8, 32, 32, 1.0f));
  const DevDense<float> dc = to_device(ctx, HostDense<float>(4, 32, 32, 0.0f));
  try {
    spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.row_warp"});
    ctx.synchronize();
    ADD_FAILURE() << "reading 256 GiB past B did not fault";
  } catch (const DeviceFault& e) {
    EXPECT_EQ(e.native_name(), "cudaErrorIllegalAddress") << e.what();
  }
  sparseport_cuda_diagnostics d{};
  ASSERT_EQ(sparseport_cuda_get_diagnostics(ctx.exec().state, &d), 0);
  EXPECT_EQ(d.poisoned, 1);
  // Every later call says why at once, and the process is still alive to hear it.
  EXPECT_THROW(spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::sum, 1.0, 0.0, "spmm.row_warp"}), DeviceFault);
  EXPECT_THROW(ctx.synchronize(), DeviceFault);
}

}  // namespace
