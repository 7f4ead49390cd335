// SPDX-License-Identifier: Apache-2.0
// gather_scatter: the message reductions of kernels/kokkos/common.hpp with message e =
// w[e] * x[src[e],:], formed on the fly (the E x F messages are never stored).
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::kokkos {
namespace {

template <class I, class V>
Messages<I, V> messages(const sparseport_gather_scatter_args& args) {
  Messages<I, V> m;
  m.count = args.edges.nnz;
  m.f = args.out.cols;
  m.dst = detail::as<I>(args.edges.row);
  m.pick = detail::as<I>(args.edges.col);
  m.w = detail::as<V>(args.edges.values);
  m.rows = detail::as<V>(args.x.data);
  m.ld = args.x.ld;
  m.out = detail::as_mut<V>(args.out.data);
  m.out_rows = args.out.rows;
  m.out_ld = args.out.ld;
  m.reduce = args.reduce;
  return m;
}

}  // namespace

void gather_scatter_team_segments(const sparseport_gather_scatter_args& args) {
  detail::dispatch(args.edges.index_type, args.out.value_type,
                   [&]<class I, class V>() { reduce_sorted<I, V>(messages<I, V>(args)); });
}

void gather_scatter_atomic(const sparseport_gather_scatter_args& args) {
  detail::dispatch(args.edges.index_type, args.out.value_type,
                   [&]<class I, class V>() { reduce_atomic<I, V>(messages<I, V>(args)); });
}

}  // namespace sparseport::kokkos
