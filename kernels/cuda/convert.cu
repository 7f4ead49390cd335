// SPDX-License-Identifier: Apache-2.0
// The plugin's convert slot (ABI 1.7): a dense array from one value type into another, on the
// context's stream. The front end's float32 path for 16-bit values runs on it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

// Widening goes through float (exact for 16 bits) or double; narrowing rounds once, to nearest
// even, with the intrinsics' NaN and overflow-to-infinity behaviour.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class D, class S>
__device__ __forceinline__ D convert_one(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<S, double>) {
    if constexpr (std::is_same_v<D, __half>) return __double2half(s);
    else if constexpr (std::is_same_v<D, __nv_bfloat16>) return __double2bfloat16(s);
    else return static_cast<D>(s);
  } else if constexpr (std::is_same_v<D, double>) {
    return static_cast<double>(to_float(s));
  } else if constexpr (std::is_same_v<D, __half>) {
    return __float2half_rn(to_float(s));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    return __float2bfloat16_rn(to_float(s));
  } else {
    return to_float(s);
  }
}

template <class D, class S>
__global__ void convert_kernel(const S* __restrict__ src, int64_t src_ld, D* __restrict__ dst, int64_t dst_ld,
                               int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = t / cols, j = t % cols;
    dst[i * dst_ld + j] = convert_one<D>(src[i * src_ld + j]);
  }
}

template <class F>
void with_type(int32_t t, F&& f) {
  switch (t) {
    case SPARSEPORT_F64: return f(double{});
    case SPARSEPORT_F16: return f(__half{});
    case SPARSEPORT_BF16: return f(__nv_bfloat16{});
    default: return f(float{});
  }
}

}  // namespace

void convert(const State& s, const sparseport_dense& src, const sparseport_dense_mut& dst) {
  if (src.rows <= 0 || src.cols <= 0) return;
  // Both contiguous: one row, no division per element.
  const bool flat = src.ld == src.cols && dst.ld == dst.cols;
  const int64_t rows = flat ? 1 : src.rows, cols = flat ? src.rows * src.cols : src.cols;
  with_type(src.value_type, [&](auto s0) {
    using S = decltype(s0);
    with_type(dst.value_type, [&](auto d0) {
      using D = decltype(d0);
      // Capped grid: the grid-stride loop covers the rest.
      const unsigned blocks = blocks_for(rows * cols) < 8192u ? blocks_for(rows * cols) : 8192u;
      convert_kernel<D, S><<<blocks, kBlock, 0, s.stream()>>>(static_cast<const S*>(src.data), flat ? cols : src.ld,
                                                             static_cast<D*>(dst.data), flat ? cols : dst.ld, rows, cols);
      check_launch("convert");
    });
  });
}

}  // namespace sparseport::cuda
