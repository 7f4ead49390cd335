// SPDX-License-Identifier: Apache-2.0
// Small dense helpers: fill, the spmm of a matrix without entries (C = beta * C, arg = -1), and the
// L2 column tile of the row-engine spmm variants.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cuda/common.cuh"
#include "sparseport/errors.hpp"

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
    const int64_t w = vt == SPARSEPORT_F64 ? 8 : 4;
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

// A column tile's B must fit in kL2Share of L2 (the rest holds the C and A lines streaming past);
// tiles are whole multiples of kL2TileCols columns (128-byte rows at fp32, so each gather stays
// whole lines), and a matrix whose B rows are gathered fewer than kL2MinReuse times each on average
// has no reuse for L2 to keep. Each extra tile reads A's rowptr, colind and values once more.
constexpr double kL2Share = 0.75;
constexpr int64_t kL2TileCols = 32;
constexpr int64_t kL2MinReuse = 2;

int64_t spmm_l2_tile(const State& s, const sparseport_spmm_args& a) {
  const int64_t F = a.b.cols;
  if (const char* v = std::getenv("SPARSEPORT_L2_TILE"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long long t = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || t < 0)
      throw InvalidArgument(std::string("SPARSEPORT_L2_TILE='") + v +
                            "' is not a whole number of columns (0: one pass over F)");
    return t == 0 ? F : std::min<int64_t>(t, F);
  }
  const int64_t w = a.b.value_type == SPARSEPORT_F64 ? 8 : 4;
  const int64_t budget = static_cast<int64_t>(kL2Share * static_cast<double>(s.info().l2_bytes));
  const int64_t k = a.a.cols;
  if (F <= kL2TileCols || k <= 0 || a.a.nnz < kL2MinReuse * k || k * F * w <= budget) return F;
  const int64_t tile = budget / (k * w) / kL2TileCols * kL2TileCols;
  // Not even kL2TileCols columns fit: tiles would only multiply A's reads.
  return tile < kL2TileCols ? F : tile;
}

}  // namespace sparseport::cuda
