// SPDX-License-Identifier: Apache-2.0
// Small dense helpers: fill, and the spmm of a matrix without entries (C = beta * C, arg = -1).
#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(3)

namespace sparseport::cuda {
namespace {

template <class V>
__global__ void __launch_bounds__(kBlock) fill_kernel(V* data, int64_t rows, int64_t cols, int64_t ld, V value) {
  const int64_t total = rows * cols;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[(t / cols) * ld + t % cols] = value;
}

template <class V>
__global__ void __launch_bounds__(kBlock) scale_kernel(V* data, int64_t rows, int64_t cols, int64_t ld, V beta) {
  const int64_t total = rows * cols;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    V& x = data[(t / cols) * ld + t % cols];
    x = beta * x;
  }
}

}  // namespace

void dense_fill(const State& s, void* data, int64_t rows, int64_t cols, int64_t ld, int32_t vt, double value) {
  if (rows <= 0 || cols <= 0) return;
  if (value == 0.0) {
    const int64_t w = sparseport_value_size(vt);
    check(cudaMemset2DAsync(data, static_cast<size_t>(ld * w), 0, static_cast<size_t>(cols * w),
                            static_cast<size_t>(rows), s.stream()),
          "cudaMemset2DAsync");
    return;
  }
  dispatch_value(vt, [&](auto v) {
    using V = decltype(v);
    fill_kernel<V><<<blocks_for(rows * cols), kBlock, 0, s.stream()>>>(static_cast<V*>(data), rows, cols, ld,
                                                                      static_cast<V>(value));
  });
  check_launch("fill");
}

void index_fill(const State& s, void* data, int64_t rows, int64_t cols, int64_t ld, int32_t it, int64_t value) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_index(it, [&](auto i) {
    using I = decltype(i);
    fill_kernel<I><<<blocks_for(rows * cols), kBlock, 0, s.stream()>>>(static_cast<I*>(data), rows, cols, ld,
                                                                      static_cast<I>(value));
  });
  check_launch("index fill");
}

void spmm_empty(const State& s, const sparseport_spmm_args& a) {
  const sparseport_dense_mut& c = a.c;
  if (a.arg != nullptr && (a.reduce == SPARSEPORT_REDUCE_MAX || a.reduce == SPARSEPORT_REDUCE_MIN))
    index_fill(s, a.arg, c.rows, c.cols, a.arg_ld, a.a.index_type, -1);
  if (a.beta == 0.0) {
    dense_fill(s, c.data, c.rows, c.cols, c.ld, c.value_type, 0.0);
    return;
  }
  dispatch_value(c.value_type, [&](auto v) {
    using V = decltype(v);
    scale_kernel<V><<<blocks_for(c.rows * c.cols), kBlock, 0, s.stream()>>>(static_cast<V*>(c.data), c.rows, c.cols,
                                                                           c.ld, static_cast<V>(a.beta));
  });
  check_launch("spmm empty (scale C by beta)");
}

}  // namespace sparseport::cuda
