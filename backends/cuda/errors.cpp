// SPDX-License-Identifier: Apache-2.0
#include "backends/cuda/errors.hpp"

#include "sparseport/errors.hpp"

namespace sparseport::cuda {

bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

void raise(cudaError_t err, const std::string& what) {
  const std::string name = cudaGetErrorName(err);
  std::string msg = what + " failed with " + name + " (" + cudaGetErrorString(err) + ")";
  if (is_sticky(err)) {
    msg += "; this is a sticky device fault: the CUDA context of this process on the device is unusable from now on";
    throw DeviceFault(msg, static_cast<int>(err), name);
  }
  // Clears the non-sticky error so that the next, unrelated check does not report it again.
  (void)cudaGetLastError();
  throw BackendError(msg, static_cast<int>(err), name);
}

void raise(cusparseStatus_t st, const std::string& what) {
  const cudaError_t pending = cudaPeekAtLastError();
  if (is_sticky(pending)) raise(pending, what + " (cuSPARSE said " + cusparseGetErrorName(st) + ")");
  throw BackendError(what + " failed with " + cusparseGetErrorName(st) + " (" + cusparseGetErrorString(st) + ")",
                     static_cast<int>(st), cusparseGetErrorName(st));
}

void check_launch(const char* kernel) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) raise(err, std::string("launching kernel ") + kernel);
}

}  // namespace sparseport::cuda
