// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <vector>

#include "kernels/reference/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::reference {
namespace {

// Unfused and by the book: all scores of a row, then a softmax shifted by the row maximum (so exp
// cannot overflow), then the weighted sum of V rows. Repeated columns count as separate keys.
template <class I, class V, class A>
void attention_rows(const sparseport_attention_args& args) {
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* q = detail::as<V>(args.q.data);
  const V* k = detail::as<V>(args.k.data);
  const V* v = detail::as<V>(args.v.data);
  V* out = detail::as_mut<V>(args.out.data);
  const int64_t f = args.q.cols, fv = args.out.cols;
  const A scale = static_cast<A>(args.scale);
  std::vector<A> score, acc(static_cast<size_t>(fv));
  for (int64_t i = 0; i < args.a.rows; ++i) {
    const int64_t begin = rp[i], deg = rp[i + 1] - begin;
    V* oi = out + i * args.out.ld;
    if (deg == 0) {
      for (int64_t j = 0; j < fv; ++j) oi[j] = V(0);
      continue;
    }
    score.assign(static_cast<size_t>(deg), A(0));
    const V* qi = q + i * args.q.ld;
    A top = A(0);
    for (int64_t t = 0; t < deg; ++t) {
      const V* kj = k + static_cast<int64_t>(ci[begin + t]) * args.k.ld;
      A dot = A(0);
      for (int64_t x = 0; x < f; ++x) dot += static_cast<A>(qi[x]) * static_cast<A>(kj[x]);
      score[static_cast<size_t>(t)] = scale * dot;
      top = t == 0 || score[static_cast<size_t>(t)] > top ? score[static_cast<size_t>(t)] : top;
    }
    A z = A(0);
    for (A& s : score) {
      s = std::exp(s - top);
      z += s;
    }
    acc.assign(static_cast<size_t>(fv), A(0));
    for (int64_t t = 0; t < deg; ++t) {
      const V* vj = v + static_cast<int64_t>(ci[begin + t]) * args.v.ld;
      const A p = score[static_cast<size_t>(t)];
      for (int64_t j = 0; j < fv; ++j) acc[static_cast<size_t>(j)] += p * static_cast<A>(vj[j]);
    }
    for (int64_t j = 0; j < fv; ++j) oi[j] = static_cast<V>(acc[static_cast<size_t>(j)] / z);
  }
}

}  // namespace

void csr_attention(const sparseport_attention_args& args, bool f64acc) {
  detail::dispatch(args.a.index_type, args.out.value_type, [&]<class I, class V>() {
    if (f64acc)
      attention_rows<I, V, double>(args);
    else
      attention_rows<I, V, V>(args);
  });
}

}  // namespace sparseport::reference
