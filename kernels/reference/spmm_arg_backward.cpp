// SPDX-License-Identifier: Apache-2.0
// The gradients of spmm max/min through the forward's arg (sparseport_spmm_arg_backward_args):
// each output element's gradient flows to the one entry that won it, nowhere else.
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V, class A>
void arg_backward(const sparseport_spmm_arg_backward_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* arg = detail::as<I>(args.arg);
  const V* dc = detail::as<V>(args.dc.data);
  const V* b = detail::as<V>(args.b.data);
  V* db = detail::as_mut<V>(args.db.data);
  V* dv = detail::as_mut<V>(args.dvalues.data);
  const int64_t m = args.a.rows, F = args.dc.cols;
  // dvalues[e]: the sum over the columns f that entry e won, in f order.
  if (dv != nullptr) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
        A s = 0;
        const V* bj = b + static_cast<int64_t>(ci[e]) * args.b.ld;
        for (int64_t f = 0; f < F; ++f)
          if (arg[i * args.arg_ld + f] == static_cast<I>(e))
            s += static_cast<A>(dc[i * args.dc.ld + f]) * static_cast<A>(bj[f]);
        dv[e * args.dvalues.ld] = static_cast<V>(s);
      }
    }
  }
  // db[j,:]: rows of A in order, so every element's terms are added in row order, with or without
  // the transpose (the transpose lists a column's entries in A's row order too).
  if (db != nullptr) {
    const int64_t k = args.db.rows;
    std::vector<A> acc(static_cast<size_t>(k * F), A(0));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t f = 0; f < F; ++f) {
        const int64_t e = static_cast<int64_t>(arg[i * args.arg_ld + f]);
        if (e < 0) continue;
        const A w = av != nullptr ? static_cast<A>(av[e]) : A(1);
        acc[static_cast<size_t>(static_cast<int64_t>(ci[e]) * F + f)] += static_cast<A>(dc[i * args.dc.ld + f]) * w;
      }
    }
    for (int64_t j = 0; j < k; ++j)
      for (int64_t f = 0; f < F; ++f) db[j * args.db.ld + f] = static_cast<V>(acc[static_cast<size_t>(j * F + f)]);
  }
}

}  // namespace

void spmm_arg_backward(const sparseport_spmm_arg_backward_args& args, bool f64acc) {
  detail::dispatch(args.a.index_type, args.dc.value_type, [&]<class I, class V>() {
    if (f64acc)
      arg_backward<I, V, double>(args);
    else
      arg_backward<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
