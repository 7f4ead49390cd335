// SPDX-License-Identifier: Apache-2.0
// The float64 oracle of csr_attention's forward and backward (backward.hpp's formulas), shared by
// the float (tests/conformance/backward_attention_segment.cpp) and the 16-bit
// (tests/conformance/values16.cpp) conformance tests. The *_abs fields are the same sums over the
// magnitudes of the terms, the bound the tolerances scale with. The *_floor fields bound what the
// 16-bit intermediates (P and dS, each stored in the value type) add where they are subnormal: such
// a rounding errs by up to half the smallest subnormal whatever the value, not by u16 of it. Each
// is the sum, over the result's terms, of what one unit of absolute error in P_e or dS_e moves it:
// |scale k_j| (|dp_e| + |D_i| + 1) for dQ (P_e reaches dS_e through dp_e - D_i), the same with q_i
// for dK, |dO_i| for dV.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "sparseport/views.hpp"

namespace sparseport::testing {

struct AttentionOracle {
  HostDense<double> out, dq, dk, dv, dq_abs, dk_abs, dv_abs, dq_floor, dk_floor, dv_floor;
};

// The forward and the gradients as backward.hpp writes them, in double; the softmax with the
// reference's arithmetic (the row's first unbeaten score as the shift), so NaN and infinities land
// where the forward puts them. D = rowsum(dO o O) uses out as the caller passes it (rounded to V).
template <class I, class V>
AttentionOracle attention_oracle(const HostCsr<I, V>& a, const HostDense<V>& q, const HostDense<V>& k,
                                 const HostDense<V>& v, const HostDense<V>& dout, double scale) {
  const int64_t F = q.cols, Fv = v.cols;
  AttentionOracle o;
  o.out = HostDense<double>(a.rows, Fv);
  o.dq = o.dq_abs = o.dq_floor = HostDense<double>(a.rows, F);
  o.dk = o.dk_abs = o.dk_floor = HostDense<double>(a.cols, F);
  o.dv = o.dv_abs = o.dv_floor = HostDense<double>(a.cols, Fv);
  std::vector<double> p(static_cast<size_t>(a.nnz()));
  const auto rp = [&](int64_t i) { return static_cast<int64_t>(a.rowptr[static_cast<size_t>(i)]); };
  const auto col = [&](int64_t e) { return static_cast<int64_t>(a.colind[static_cast<size_t>(e)]); };
  for (int64_t i = 0; i < a.rows; ++i) {
    if (rp(i) == rp(i + 1)) continue;
    double top = 0.0, z = 0.0;
    for (int64_t e = rp(i); e < rp(i + 1); ++e) {
      double dot = 0.0;
      for (int64_t f = 0; f < F; ++f) dot += static_cast<double>(q(i, f)) * static_cast<double>(k(col(e), f));
      p[static_cast<size_t>(e)] = scale * dot;
      top = e == rp(i) || p[static_cast<size_t>(e)] > top ? p[static_cast<size_t>(e)] : top;
    }
    for (int64_t e = rp(i); e < rp(i + 1); ++e) z += p[static_cast<size_t>(e)] = std::exp(p[static_cast<size_t>(e)] - top);
    for (int64_t e = rp(i); e < rp(i + 1); ++e) {
      p[static_cast<size_t>(e)] /= z;
      for (int64_t c = 0; c < Fv; ++c) o.out(i, c) += p[static_cast<size_t>(e)] * static_cast<double>(v(col(e), c));
    }
  }
  for (int64_t i = 0; i < a.rows; ++i) {
    double d = 0.0, d_abs = 0.0;
    for (int64_t c = 0; c < Fv; ++c) {
      const double oc = static_cast<double>(static_cast<V>(o.out(i, c)));
      d += static_cast<double>(dout(i, c)) * oc;
      d_abs += std::fabs(static_cast<double>(dout(i, c)) * oc);
    }
    for (int64_t e = rp(i); e < rp(i + 1); ++e) {
      const int64_t j = col(e);
      const double pe = p[static_cast<size_t>(e)];
      double dp = 0.0, dp_abs = 0.0;
      for (int64_t c = 0; c < Fv; ++c) {
        const double g = static_cast<double>(dout(i, c)), vj = static_cast<double>(v(j, c));
        dp += g * vj;
        dp_abs += std::fabs(g * vj);
        o.dv(j, c) += pe * g;
        o.dv_abs(j, c) += std::fabs(pe * g);
        o.dv_floor(j, c) += std::fabs(g);
      }
      const double ds = pe * (dp - d), ds_abs = std::fabs(pe) * (dp_abs + d_abs), ds_floor = dp_abs + d_abs + 1.0;
      for (int64_t f = 0; f < F; ++f) {
        const double kj = static_cast<double>(k(j, f)), qi = static_cast<double>(q(i, f));
        o.dq(i, f) += scale * ds * kj;
        o.dq_abs(i, f) += std::fabs(scale * kj) * ds_abs;
        o.dq_floor(i, f) += std::fabs(scale * kj) * ds_floor;
        o.dk(j, f) += scale * ds * qi;
        o.dk_abs(j, f) += std::fabs(scale * qi) * ds_abs;
        o.dk_floor(j, f) += std::fabs(scale * qi) * ds_floor;
      }
    }
  }
  return o;
}

}  // namespace sparseport::testing
