// SPDX-License-Identifier: Apache-2.0
#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

template <class I, class V>
void slice_rows(const sparseport_slice_rows_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* pick = detail::as<I>(args.rows.data);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  if (args.phase == 0) {
    // Counted in int64 first: repeated rows can hold more entries than index type I can address.
    int64_t total = 0;
    for (int64_t t = 0; t < args.rows.n; ++t) total += static_cast<int64_t>(rp[pick[t] + 1] - rp[pick[t]]);
    detail::check_result_fits<I>(total, "the selected rows hold");
    orp[0] = 0;
    for (int64_t t = 0; t < args.rows.n; ++t) orp[t + 1] = orp[t] + (rp[pick[t] + 1] - rp[pick[t]]);
    return;
  }
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  for (int64_t t = 0; t < args.rows.n; ++t) {
    int64_t o = orp[t];
    for (int64_t e = rp[pick[t]]; e < rp[pick[t] + 1]; ++e, ++o) {
      oci[o] = ci[e];
      if (ov != nullptr) ov[o] = av[e];
    }
  }
}

template <class I, class V>
void slice_rows_dense(const sparseport_slice_rows_dense_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  const I* pick = detail::as<I>(args.rows.data);
  for (int64_t t = 0; t < args.rows.n; ++t) {
    // Only the first out.cols elements of a row are ours; padding up to ld belongs to the caller.
    V* ot = detail::as_mut<V>(args.out.data) + t * args.out.ld;
    for (int64_t j = 0; j < args.out.cols; ++j) ot[j] = V(0);
    for (int64_t e = rp[pick[t]]; e < rp[pick[t] + 1]; ++e) ot[ci[e]] += av != nullptr ? av[e] : V(1);
  }
}

}  // namespace

void csr_slice_rows(const sparseport_slice_rows_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { slice_rows<I, V>(args); });
}

void csr_slice_rows_dense(const sparseport_slice_rows_dense_args& args) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() { slice_rows_dense<I, V>(args); });
}

}  // namespace sparseport::reference
