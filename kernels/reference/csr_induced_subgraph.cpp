// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V>
void induced_subgraph(const sparseport_induced_subgraph_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* vert = detail::as<I>(args.vertices.data);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  const int64_t s = args.vertices.n;
  // The map is rebuilt in each phase: the plugin keeps no state between the two calls.
  std::vector<int64_t> local(static_cast<size_t>(args.a.rows), -1);
  for (int64_t t = 0; t < s; ++t) local[static_cast<size_t>(vert[t])] = t;
  if (args.phase == 0) {
    // Counted in int64 and checked before anything is stored in rowptr.
    std::vector<int64_t> kept(static_cast<size_t>(s), 0);
    int64_t total = 0;
    for (int64_t t = 0; t < s; ++t) {
      for (int64_t e = rp[vert[t]]; e < rp[vert[t] + 1]; ++e)
        kept[static_cast<size_t>(t)] += local[static_cast<size_t>(ci[e])] >= 0 ? 1 : 0;
      total += kept[static_cast<size_t>(t)];
    }
    detail::check_result_fits<I>(total, "the induced subgraph holds");
    orp[0] = 0;
    for (int64_t t = 0; t < s; ++t) orp[t + 1] = static_cast<I>(orp[t] + kept[static_cast<size_t>(t)]);
    return;
  }
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  for (int64_t t = 0; t < s; ++t) {
    int64_t o = orp[t];
    for (int64_t e = rp[vert[t]]; e < rp[vert[t] + 1]; ++e) {
      const int64_t c = local[static_cast<size_t>(ci[e])];
      if (c < 0) continue;
      oci[o] = static_cast<I>(c);
      if (ov != nullptr) ov[o] = av[e];
      ++o;
    }
  }
}

}  // namespace

void csr_induced_subgraph(const sparseport_induced_subgraph_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { induced_subgraph<I, V>(args); });
}

}  // namespace sparseport::reference
