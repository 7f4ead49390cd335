// SPDX-License-Identifier: Apache-2.0
// segment_reduce (sorted index) and scatter_reduce (any order): the message reductions of
// kernels/kokkos/common.hpp with message e = src row e.
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
Messages<I, V> messages(const sparseport_segment_args& args) {
  Messages<I, V> m;
  m.count = args.index.n;
  m.f = args.out.cols;
  m.dst = detail::as<I>(args.index.data);
  m.rows = detail::as<V>(args.src.data);
  m.ld = args.src.ld;
  m.out = detail::as_mut<V>(args.out.data);
  m.out_rows = args.out.rows;
  m.out_ld = args.out.ld;
  m.reduce = args.reduce;
  return m;
}

}  // namespace

void segment_reduce_team_segments(const sparseport_segment_args& args) {
  detail::dispatch(args.index.index_type, args.out.value_type,
                   [&]<class I, class V>() { reduce_sorted<I, V>(messages<I, V>(args)); });
}

void segment_reduce_atomic(const sparseport_segment_args& args) {
  detail::dispatch(args.index.index_type, args.out.value_type,
                   [&]<class I, class V>() { reduce_atomic<I, V>(messages<I, V>(args)); });
}

}  // namespace sparseport::kokkos
