// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "core/counter_rng.hpp"

namespace sparseport {
namespace {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Maps 64 random bits to a V in [lo, hi). The bounds are the V values closest to lo and hi that
// stay inside the interval, because rounding lo + u*(hi-lo) to V (or to double) may land on hi.
template <class V>
class UniformMap {
 public:
  UniformMap(double lo, double hi) : lo_(lo), width_(hi - lo) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || !std::isfinite(width_))
      throw InvalidArgument("sparseport::fill_random: the interval [" + num(lo) + ", " + num(hi) +
                            ") is empty or not finite (need finite lo < hi).");
    first_ = static_cast<V>(lo);
    while (static_cast<double>(first_) < lo) first_ = std::nextafter(first_, std::numeric_limits<V>::infinity());
    last_ = static_cast<V>(hi);
    while (static_cast<double>(last_) >= hi) last_ = std::nextafter(last_, -std::numeric_limits<V>::infinity());
    if (first_ > last_)
      throw InvalidArgument("sparseport::fill_random: no " + std::string(sizeof(V) == 4 ? "float" : "double") +
                            " lies in [" + num(lo) + ", " + num(hi) + ").");
  }

  V operator()(uint64_t r) const {
    // volatile keeps the product rounded on its own: where the compiler contracts a*b+c into a
    // fused multiply-add (the default on aarch64 and POWER), the last bit could differ.
    volatile double scaled = detail::unit53(r) * width_;
    const auto v = static_cast<V>(lo_ + scaled);
    return v < first_ ? first_ : (v > last_ ? last_ : v);
  }

 private:
  double lo_, width_;
  V first_{}, last_{};
};

}  // namespace

template <class V>
void fill_random(HostDense<V>& m, uint64_t seed, double lo, double hi) {
  if (m.rows < 0 || m.cols < 0 || m.ld < m.cols)
    throw InvalidArgument("sparseport::fill_random: the matrix is " + std::to_string(m.rows) + " x " +
                          std::to_string(m.cols) + " with ld " + std::to_string(m.ld) +
                          " (need non-negative sizes and ld >= cols).");
  if (static_cast<int64_t>(m.data.size()) < m.rows * m.ld)
    throw InvalidArgument("sparseport::fill_random: the matrix is " + std::to_string(m.rows) + " x " +
                          std::to_string(m.cols) + " with ld " + std::to_string(m.ld) + " but holds " +
                          std::to_string(m.data.size()) + " elements (need rows*ld = " + std::to_string(m.rows * m.ld) +
                          ").");
  const UniformMap<V> map(lo, hi);
  for (int64_t i = 0; i < m.rows; ++i) {
    // One stream per row, indexed by column: the value of (i, j) does not depend on ld.
    const uint64_t row_key = detail::derive_key(seed, static_cast<uint64_t>(i));
    V* row = m.data.data() + i * m.ld;
    for (int64_t j = 0; j < m.ld; ++j) row[j] = map(detail::word_at(row_key, static_cast<uint64_t>(j)));
  }
}

template <class V>
void fill_random(std::vector<V>& v, uint64_t seed, double lo, double hi) {
  const UniformMap<V> map(lo, hi);
  const uint64_t row_key = detail::derive_key(seed, 0);
  for (size_t j = 0; j < v.size(); ++j) v[j] = map(detail::word_at(row_key, j));
}

// 16 bits: the float32 draws of the same seed, rounded once; a draw that rounds up to hi (or past
// it) takes the interval's first 16-bit value instead, so every value stays in [lo, hi).
template <class V16>
void round_into(V16* out, const float* in, size_t n, double lo, double hi) {
  V16 first(static_cast<float>(lo));
  if (static_cast<double>(static_cast<float>(first)) < lo) first = V16::from_bits(static_cast<uint16_t>(first.bits + (lo >= 0 ? 1 : -1)));
  for (size_t i = 0; i < n; ++i) {
    const V16 v(in[i]);
    out[i] = static_cast<double>(static_cast<float>(v)) >= hi ? first : v;
  }
}

template <>
void fill_random<half>(HostDense<half>& m, uint64_t seed, double lo, double hi) {
  HostDense<float> f(m.rows, m.cols, m.ld);
  fill_random(f, seed, lo, hi);
  round_into(m.data.data(), f.data.data(), m.data.size(), lo, hi);
}
template <>
void fill_random<bfloat16>(HostDense<bfloat16>& m, uint64_t seed, double lo, double hi) {
  HostDense<float> f(m.rows, m.cols, m.ld);
  fill_random(f, seed, lo, hi);
  round_into(m.data.data(), f.data.data(), m.data.size(), lo, hi);
}
template <>
void fill_random<half>(std::vector<half>& v, uint64_t seed, double lo, double hi) {
  std::vector<float> f(v.size());
  fill_random(f, seed, lo, hi);
  round_into(v.data(), f.data(), v.size(), lo, hi);
}
template <>
void fill_random<bfloat16>(std::vector<bfloat16>& v, uint64_t seed, double lo, double hi) {
  std::vector<float> f(v.size());
  fill_random(f, seed, lo, hi);
  round_into(v.data(), f.data(), v.size(), lo, hi);
}

template void fill_random<float>(HostDense<float>&, uint64_t, double, double);
template void fill_random<double>(HostDense<double>&, uint64_t, double, double);
template void fill_random<float>(std::vector<float>&, uint64_t, double, double);
template void fill_random<double>(std::vector<double>&, uint64_t, double, double);

}  // namespace sparseport
