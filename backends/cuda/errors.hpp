// SPDX-License-Identifier: Apache-2.0
// The one place where CUDA runtime and cuSPARSE status codes become sparseport exceptions:
// BackendError carrying the native code and name, or DeviceFault for a sticky error (one that
// leaves the process's CUDA context on that device unusable).
#pragma once

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <string>

namespace sparseport::cuda {

// Whether err is one of the errors after which every later CUDA call in the process fails too.
bool is_sticky(cudaError_t err);

// Throw BackendError (or DeviceFault when sticky) saying that `what` failed with err.
[[noreturn]] void raise(cudaError_t err, const std::string& what);
// cuSPARSE statuses are BackendError, unless the CUDA context underneath holds a sticky error:
// then that error is what the caller needs to see, as a DeviceFault.
[[noreturn]] void raise(cusparseStatus_t st, const std::string& what);

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) raise(err, what);
}
inline void check(cusparseStatus_t st, const char* what) {
  if (st != CUSPARSE_STATUS_SUCCESS) raise(st, what);
}

// After a kernel launch: a bad launch configuration, or a sticky fault of an earlier kernel.
void check_launch(const char* kernel);

}  // namespace sparseport::cuda
