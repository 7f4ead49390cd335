// SPDX-License-Identifier: Apache-2.0
// csr_softmax (ABI 1.6): csr_attention_backward's weights, a thread per row (as csr_attention.onepass
// gives each row one team thread), the entries of a row in order: no atomics, no reduction whose
// shape depends on the launch, so the same bits on every run. The arithmetic is the forward's, in
// the value type: s = scale * score, the row's first score that no later one beats as the shift,
// exp, the sum, each weight exp / sum. Shifting by the row's maximum up front rather than online
// (the forward's running maximum) changes only rounding, with one exception where this is the
// better answer: a row whose first score is -inf among finite ones gives that key weight 0 here
// (as the reference), where the online form starts from exp(-inf - -inf) = NaN.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
void softmax_rows(const sparseport_csr_softmax_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  V* p = detail::as_mut<V>(args.scores);
  const V scale = static_cast<V>(args.scale);
  Kokkos::parallel_for(
      "sparseport::kokkos::csr_softmax", Range(0, args.a.rows), KOKKOS_LAMBDA(const int64_t i) {
        const int64_t begin = static_cast<int64_t>(rp[i]), end = static_cast<int64_t>(rp[i + 1]);
        if (end == begin) return;
        V top = scale * p[begin];
        for (int64_t e = begin + 1; e < end; ++e) {
          const V s = scale * p[e];
          top = s > top ? s : top;
        }
        V z = V(0);
        for (int64_t e = begin; e < end; ++e) {
          const V x = exp_of(scale * p[e] - top);
          p[e] = x;
          z += x;
        }
        for (int64_t e = begin; e < end; ++e) p[e] = p[e] / z;
      });
  end_op();
}

}  // namespace

void csr_softmax(const sparseport_csr_softmax_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { softmax_rows<I, V>(args); });
}

}  // namespace sparseport::kokkos
