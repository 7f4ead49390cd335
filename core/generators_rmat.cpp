// SPDX-License-Identifier: Apache-2.0
// RMAT (Kronecker) graphs: rmat:SCALE:EDGEFACTOR with the Graph500 probabilities, rmatp with
// given ones, and powerlaw (rmat:16:8). Separate because it is the one family that draws whole
// edges by recursive quadrant choice and sorts them as keys (pattern_from_draws).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "core/generators_internal.hpp"

namespace sparseport::detail::gen {
namespace {

// RMAT: each draw picks one of four quadrants per level, SCALE levels.
template <class I, class K>
Pattern<I> rmat_from_keys(int64_t n, int64_t scale, int64_t draws, const RmatThresholds& t, uint64_t key) {
  const auto levels = static_cast<int>(scale);
  Stream rng{key};
  return pattern_from_draws<I, K>(n, levels, draws, [&] {
    uint64_t r = 0, c = 0, x = 0;
    for (int l = 0; l < levels; ++l) {
      if ((l & 1) == 0) x = rng.next();  // 32 bits per level
      const auto u = static_cast<uint32_t>(x >> (32 * (l & 1)));
      // Quadrant 0 = a (top left), 1 = b (top right), 2 = c (bottom left), 3 = d; branch-free
      // because the choice is unpredictable.
      const unsigned q = static_cast<unsigned>(u >= t.a) + static_cast<unsigned>(u >= t.ab) +
                         static_cast<unsigned>(u >= t.abc);
      r = (r << 1) | (q >> 1);
      c = (c << 1) | (q & 1u);
    }
    return std::pair<uint64_t, uint64_t>{r, c};
  });
}

}  // namespace

// rmat:SCALE:EDGEFACTOR (Graph500 probabilities) and rmatp:SCALE:EDGEFACTOR:A:B:C.
template <class I>
Pattern<I> make_rmat(const Spec& s, uint64_t key) {
  const int64_t scale = s.whole(0);
  const int64_t edge_factor = s.whole(1);
  RmatThresholds t = kGraph500;
  if (s.name() == "rmatp") {
    const double a = s.fraction(2), b = s.fraction(3), c = s.fraction(4);
    // Each sum is one IEEE addition: the same thresholds everywhere. The slack lets A+B+C that are
    // 1 in decimal (0.1+0.2+0.7 = 1.0000000000000002 in binary) through.
    const double ab = a + b, abc = ab + c;
    if (abc > 1.0 + 1e-9) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", abc);
      s.refuse("A+B+C is " + std::string(buf) + ", above 1 (D = 1-A-B-C is the fourth quadrant's probability)");
    }
    const auto threshold = [](double x) {
      return std::min<uint64_t>(static_cast<uint64_t>(std::llround(std::ldexp(x, 32))), uint64_t{1} << 32);
    };
    t = {threshold(a), threshold(ab), threshold(abc)};
  }
  if (scale > 40) s.refuse("SCALE is " + std::to_string(scale) + ", above the limit 40");
  const int64_t n = int64_t{1} << scale;
  check_rows_fit<I>(s, n);
  const long double draws_ld = static_cast<long double>(edge_factor) * static_cast<long double>(n);
  check_nnz_fits<I>(s, "EDGEFACTOR*2^SCALE = " + fmt_count(draws_ld) + " drawn", draws_ld);
  check_memory<I>(s, n, draws_ld, draws_ld * 2 * (2 * scale <= 64 ? 8 : 16));  // the keys, sorted out of place
  const int64_t draws = edge_factor * n;

  if (2 * scale <= 64) return rmat_from_keys<I, uint64_t>(n, scale, draws, t, key);
  return rmat_from_keys<I, u128>(n, scale, draws, t, key);
}

template Pattern<int32_t> make_rmat<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_rmat<int64_t>(const Spec&, uint64_t);

}  // namespace sparseport::detail::gen
