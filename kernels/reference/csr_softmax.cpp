// SPDX-License-Identifier: Apache-2.0
// csr_softmax (ABI 1.6): the weights of csr_attention_backward, by csr_attention's recipe: the
// score scale * s in the value type, the row shifted by its first score that no later one beats,
// so a NaN score or a row of all -inf or with a +inf makes the row's sum, and every weight of the
// row, NaN. As the oracle, exp, the sum and the division run in double. The front end also runs
// this slot on a host copy for a plugin without one (src/ops/backward_attention.cpp).
#include <cmath>
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V>
void softmax_rows(const sparseport_csr_softmax_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  V* p = detail::as_mut<V>(args.scores);
  const V scale = static_cast<V>(args.scale);
  std::vector<double> x;
  for (int64_t i = 0; i < args.a.rows; ++i) {
    V* row = p + static_cast<int64_t>(rp[i]);
    const auto deg = static_cast<size_t>(rp[i + 1] - rp[i]);
    if (deg == 0) continue;
    x.resize(deg);
    for (size_t t = 0; t < deg; ++t) x[t] = static_cast<double>(static_cast<V>(scale * row[t]));
    double top = x[0];
    for (size_t t = 1; t < deg; ++t) top = x[t] > top ? x[t] : top;
    double z = 0.0;
    for (double& s : x) z += s = std::exp(s - top);
    for (size_t t = 0; t < deg; ++t) row[t] = static_cast<V>(x[t] / z);
  }
}

}  // namespace

void csr_softmax(const sparseport_csr_softmax_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { softmax_rows<I, V>(args); });
}

}  // namespace sparseport::reference
