// SPDX-License-Identifier: Apache-2.0
// Reductions of F-wide messages into output rows by a destination index: segment_reduce (the
// messages are src's rows, the index sorted), scatter_reduce (index in any order) and
// gather_scatter (message e is w[e] * x[col[e], :], destinations sorted). Message e goes to row
// key[e]; it is row pick[e] of src when pick is set, else row e.
#pragma once

#include "kernels/cuda/common.cuh"

namespace sparseport::cuda {

template <class I, class V>
struct SegParams {
  int64_t E = 0, F = 0, N = 0;
  const I* key = nullptr;
  const I* pick = nullptr;
  const V* w = nullptr;
  const V* src = nullptr;
  int64_t lds = 0;
  V* out = nullptr;
  int64_t ldo = 0;
  bool mean = false;
};

template <class I, class V>
SegParams<I, V> seg_params(const sparseport_segment_args& a) {
  SegParams<I, V> p;
  p.E = a.index.n;
  p.F = a.src.cols;
  p.N = a.out.rows;
  p.key = static_cast<const I*>(a.index.data);
  p.src = static_cast<const V*>(a.src.data);
  p.lds = a.src.ld;
  p.out = static_cast<V*>(a.out.data);
  p.ldo = a.out.ld;
  p.mean = a.reduce == SPARSEPORT_REDUCE_MEAN;
  return p;
}

template <class I, class V>
SegParams<I, V> seg_params(const sparseport_gather_scatter_args& a) {
  SegParams<I, V> p;
  p.E = a.edges.nnz;
  p.F = a.x.cols;
  p.N = a.out.rows;
  p.key = static_cast<const I*>(a.edges.row);
  p.pick = static_cast<const I*>(a.edges.col);
  p.w = static_cast<const V*>(a.edges.values);
  p.src = static_cast<const V*>(a.x.data);
  p.lds = a.x.ld;
  p.out = static_cast<V*>(a.out.data);
  p.ldo = a.out.ld;
  p.mean = a.reduce == SPARSEPORT_REDUCE_MEAN;
  return p;
}

// The sorted reduction (segment_nnz_balanced.cu) and the atomic baseline (segment_atomic.cu).
// deterministic: no atomics, a fixed order of every floating-point operation (see
// segment_nnz_balanced.cu).
void reduce_sorted(const State& s, int32_t index_type, int32_t value_type, int32_t reduce, const void* params,
                   bool deterministic = false);
void reduce_atomic(const State& s, int32_t index_type, int32_t value_type, int32_t reduce, const void* params);

}  // namespace sparseport::cuda
