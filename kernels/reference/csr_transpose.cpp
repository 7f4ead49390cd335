// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

// A counting sort by column. Walking A's rows in order and entries in storage order makes it
// stable: within each row of A^T the entries come in A's row order (and storage order for repeats).
template <class I, class V>
void transpose(const sparseport_transpose_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  I* orp = detail::as_mut<I>(args.out.rowptr);
  I* oci = detail::as_mut<I>(args.out.colind);
  V* ov = detail::as_mut<V>(args.out.values);
  I* perm = detail::as_mut<I>(args.perm);
  const int64_t k = args.a.cols;
  for (int64_t c = 0; c <= k; ++c) orp[c] = 0;
  for (int64_t e = 0; e < args.a.nnz; ++e) ++orp[ci[e] + 1];
  for (int64_t c = 0; c < k; ++c) orp[c + 1] += orp[c];
  std::vector<int64_t> next(orp, orp + k);
  for (int64_t i = 0; i < args.a.rows; ++i) {
    for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
      const int64_t o = next[static_cast<size_t>(ci[e])]++;
      oci[o] = static_cast<I>(i);
      if (ov != nullptr) ov[o] = av[e];
      if (perm != nullptr) perm[o] = static_cast<I>(e);
    }
  }
}

}  // namespace

void csr_transpose(const sparseport_transpose_args& args) {
  detail::dispatch(args.a.index_type, args.a.value_type, [&]<class I, class V>() { transpose<I, V>(args); });
}

}  // namespace sparseport::reference
