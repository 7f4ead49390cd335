// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "kernels/reference/reduce.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

// Bitwise equality: NaN equals the same NaN, and -0 differs from +0 (fold keeps the first of the two).
template <class A>
bool same_bits(A x, A y) {
  return std::memcmp(&x, &y, sizeof(A)) == 0;
}

template <class I, class V, class A>
void spmm_rows(const sparseport_spmm_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const V* b = detail::as<V>(args.b.data);
  V* c = detail::as_mut<V>(args.c.data);
  const int64_t f = args.c.cols;
  const A alpha = static_cast<A>(args.alpha), beta = static_cast<A>(args.beta);
  // arg (max/min): the entry whose product the fold kept. fold() replaces acc only with a strictly
  // better term or the first NaN, so the first of equal products stays: the lowest position wins.
  I* arg = args.reduce == SPARSEPORT_REDUCE_MAX || args.reduce == SPARSEPORT_REDUCE_MIN ? detail::as_mut<I>(args.arg)
                                                                                        : nullptr;
  std::vector<A> acc(static_cast<size_t>(f));
  for (int64_t i = 0; i < args.a.rows; ++i) {
    const int64_t begin = rp[i], deg = rp[i + 1] - begin;
    I* arg_row = arg != nullptr ? arg + i * args.arg_ld : nullptr;
    if (arg_row != nullptr)
      for (int64_t j = 0; j < f; ++j) arg_row[j] = I(-1);
    for (int64_t t = 0; t < deg; ++t) {
      const int64_t e = begin + t;
      const A aval = av != nullptr ? static_cast<A>(av[e]) : A(1);
      const V* bj = b + static_cast<int64_t>(ci[e]) * args.b.ld;
      for (int64_t j = 0; j < f; ++j) {
        A& a_j = acc[static_cast<size_t>(j)];
        const A before = a_j;
        a_j = fold(args.reduce, a_j, aval * static_cast<A>(bj[j]), t);
        // A changed bit pattern (or the first term) means this entry now holds the row's extreme.
        if (arg_row != nullptr && (t == 0 || !same_bits(before, a_j))) arg_row[j] = static_cast<I>(e);
      }
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
