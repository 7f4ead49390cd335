// SPDX-License-Identifier: Apache-2.0
// Shared by the two csr_attention variants.
#pragma once

#include "kernels/cuda/common.cuh"

namespace sparseport::cuda {

template <class I, class V>
struct AttnParams {
  int64_t m = 0, F = 0, Fv = 0;
  const I* rowptr = nullptr;
  const I* colind = nullptr;
  const V* q = nullptr;
  int64_t ldq = 0;
  const V* k = nullptr;
  int64_t ldk = 0;
  const V* v = nullptr;
  int64_t ldv = 0;
  V* out = nullptr;
  int64_t ldo = 0;
  V scale = V(1);
  // Rows with more entries are left to the split path of csr_attention.fused; INT64_MAX otherwise.
  int64_t skip_above = INT64_MAX;
};

template <class I, class V>
AttnParams<I, V> attn_params(const sparseport_attention_args& a) {
  AttnParams<I, V> p;
  p.m = a.a.rows;
  p.F = a.q.cols;
  p.Fv = a.v.cols;
  p.rowptr = static_cast<const I*>(a.a.rowptr);
  p.colind = static_cast<const I*>(a.a.colind);
  p.q = static_cast<const V*>(a.q.data);
  p.ldq = a.q.ld;
  p.k = static_cast<const V*>(a.k.data);
  p.ldk = a.k.ld;
  p.v = static_cast<const V*>(a.v.data);
  p.ldv = a.v.ld;
  p.out = static_cast<V*>(a.out.data);
  p.ldo = a.out.ld;
  p.scale = static_cast<V>(a.scale);
  return p;
}

}  // namespace sparseport::cuda
