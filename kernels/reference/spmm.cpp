// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "kernels/reference/reduce.hpp"
#include "src/core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V, class A>
void spmm_rows(const sparseport_spmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* b = detail::as<V>(args.b.data);
  V* c = detail::as_mut<V>(args.c.data);
  const int64_t f = args.c.cols;
  const A alpha = static_cast<A>(args.alpha), beta = static_cast<A>(args.beta);
  std::vector<A> acc(static_cast<size_t>(f));
  for (int64_t i = 0; i < args.a.rows; ++i) {
    const int64_t begin = rp[i], deg = rp[i + 1] - begin;
    for (int64_t t = 0; t < deg; ++t) {
      const int64_t e = begin + t;
      const A aval = av != nullptr ? static_cast<A>(av[e]) : A(1);
      const V* bj = b + static_cast<int64_t>(ci[e]) * args.b.ld;
      for (int64_t j = 0; j < f; ++j)
        acc[static_cast<size_t>(j)] = fold(args.reduce, acc[static_cast<size_t>(j)], aval * static_cast<A>(bj[j]), t);
    }
    V* c_row = c + i * args.c.ld;
    for (int64_t j = 0; j < f; ++j) {
      // beta == 0 must not read C: 0 * NaN would leak an uninitialised or NaN C into the result.
      const A old = args.beta != 0.0 ? beta * static_cast<A>(c_row[j]) : A(0);
      c_row[j] = static_cast<V>(alpha * finish(args.reduce, acc[static_cast<size_t>(j)], deg) + old);
    }
  }
}

}  // namespace

void spmm(const sparseport_spmm_args& args, bool f64acc) {
  detail::dispatch(args.a.index_type, args.c.value_type, [&]<class I, class V>() {
    if (f64acc)
      spmm_rows<I, V, double>(args);
    else
      spmm_rows<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
