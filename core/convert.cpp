// SPDX-License-Identifier: Apache-2.0
#include "core/convert.hpp"

#include <cstdint>
#include <type_traits>

#include "sparseport/half.hpp"

namespace sparseport::detail {
namespace {

template <class F>
void with_type(int32_t t, F&& f) {
  switch (t) {
    case SPARSEPORT_F64: return f(double{});
    case SPARSEPORT_F16: return f(half{});
    case SPARSEPORT_BF16: return f(bfloat16{});
    default: return f(float{});
  }
}

// Through float for the 16-bit side (exact widening; the narrowing rounds once), through double
// between float and double.
template <class D, class S>
D convert_one(S s) {
  if constexpr (std::is_same_v<S, double> || std::is_same_v<D, double>)
    return D(static_cast<double>(s));
  else
    return D(static_cast<float>(s));
}

}  // namespace

void convert_host(const sparseport_dense& src, const sparseport_dense_mut& dst) {
  with_type(src.value_type, [&](auto s0) {
    using S = decltype(s0);
    with_type(dst.value_type, [&](auto d0) {
      using D = decltype(d0);
      const S* s = static_cast<const S*>(src.data);
      D* d = static_cast<D*>(dst.data);
      for (int64_t i = 0; i < src.rows; ++i)
        for (int64_t j = 0; j < src.cols; ++j) d[i * dst.ld + j] = convert_one<D>(s[i * src.ld + j]);
    });
  });
}

}  // namespace sparseport::detail
