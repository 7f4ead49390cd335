// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "kernels/reference/reduce.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

// Message e is w[e] * x[src[e],:]; it is formed one element at a time and never stored.
template <class I, class V, class A>
void gather_reduce(const sparseport_gather_scatter_args& args) {
  const I* dst = detail::as<I>(args.edges.row);
  const I* src = detail::as<I>(args.edges.col);
  const V* w = detail::as<V>(args.edges.values);
  const V* x = detail::as<V>(args.x.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t n = args.out.rows, f = args.out.cols;
  std::vector<A> acc(static_cast<size_t>(n * f));
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t e = 0; e < args.edges.nnz; ++e) {
    const int64_t i = dst[e];
    A* ai = acc.data() + i * f;
    const V* xs = x + static_cast<int64_t>(src[e]) * args.x.ld;
    const A we = w != nullptr ? static_cast<A>(w[e]) : A(1);
    for (int64_t j = 0; j < f; ++j)
      ai[j] = fold(args.reduce, ai[j], we * static_cast<A>(xs[j]), count[static_cast<size_t>(i)]);
    ++count[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < f; ++j)
      out[i * args.out.ld + j] =
          static_cast<V>(finish(args.reduce, acc[static_cast<size_t>(i * f + j)], count[static_cast<size_t>(i)]));
}

}  // namespace

void gather_scatter(const sparseport_gather_scatter_args& args, bool f64acc) {
  detail::dispatch(args.edges.index_type, args.out.value_type, [&]<class I, class V>() {
    if (f64acc)
      gather_reduce<I, V, double>(args);
    else
      gather_reduce<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
