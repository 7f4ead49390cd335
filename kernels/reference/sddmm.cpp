// SPDX-License-Identifier: Apache-2.0
#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V, class A>
void sddmm_entries(const sparseport_sddmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* x = detail::as<V>(args.x.data);
  const V* y = detail::as<V>(args.y.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t f = args.x.cols;
  for (int64_t i = 0; i < args.a.rows; ++i) {
    const V* xi = x + i * args.x.ld;
    for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
      const V* yj = y + static_cast<int64_t>(ci[e]) * args.y.ld;
      A dot = A(0);
      for (int64_t k = 0; k < f; ++k) dot += static_cast<A>(xi[k]) * static_cast<A>(yj[k]);
      const A aval = av != nullptr ? static_cast<A>(av[e]) : A(1);
      out[e * args.out.ld] = static_cast<V>(aval * dot);
    }
  }
}

}  // namespace

void sddmm(const sparseport_sddmm_args& args, bool f64acc) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() {
    if (f64acc)
      sddmm_entries<I, V, double>(args);
    else
      sddmm_entries<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
