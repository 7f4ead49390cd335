// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "kernels/reference/reduce.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

// One accumulator per output element, fed in index order: the order of index does not matter to
// a serial loop, so the same code serves the sorted and the unsorted op.
template <class I, class V, class A>
void reduce_messages(const sparseport_segment_args& args) {
  const I* index = detail::as<I>(args.index.data);
  const V* src = detail::as<V>(args.src.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t n = args.out.rows, f = args.out.cols;
  std::vector<A> acc(static_cast<size_t>(n * f));
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t e = 0; e < args.index.n; ++e) {
    const int64_t i = index[e];
    A* ai = acc.data() + i * f;
    const V* se = src + e * args.src.ld;
    for (int64_t j = 0; j < f; ++j)
      ai[j] = fold(args.reduce, ai[j], static_cast<A>(se[j]), count[static_cast<size_t>(i)]);
    ++count[static_cast<size_t>(i)];
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < f; ++j)
      out[i * args.out.ld + j] =
          static_cast<V>(finish(args.reduce, acc[static_cast<size_t>(i * f + j)], count[static_cast<size_t>(i)]));
}

}  // namespace

void segment_reduce(const sparseport_segment_args& args, bool f64acc) {
  detail::dispatch(args.index.index_type, args.out.value_type, [&]<class I, class V>() {
    if (f64acc)
      reduce_messages<I, V, double>(args);
    else
      reduce_messages<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
