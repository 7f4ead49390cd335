// SPDX-License-Identifier: Apache-2.0
// The plugin's convert slot (ABI 1.7): a dense array from one value type into another, in the
// space's memory. The front end's float32 path for 16-bit values runs on it where that memory is a
// device's (Kokkos-CUDA); on a host space the front end converts host memory itself and this slot
// does the same work. One thread an element. Widening is exact; narrowing rounds once to nearest
// even with half.hpp's conversions (NaN stays NaN, overflow goes to infinity), except double to a
// 16-bit type, which goes through float (the ops' results come from float accumulators).
#include <cstdint>

#include "sparseport/half.hpp"
#include "kernels/kokkos/common.hpp"
#include "kernels/kokkos/kernels.hpp"

namespace sparseport::kokkos {
namespace {

// The stored type of each ABI value type, read as double and written from double.
template <int T>
struct Val;
template <>
struct Val<SPARSEPORT_F32> {
  using type = float;
  KOKKOS_INLINE_FUNCTION static double load(float x) { return x; }
  KOKKOS_INLINE_FUNCTION static float store(double x) { return static_cast<float>(x); }
};
template <>
struct Val<SPARSEPORT_F64> {
  using type = double;
  KOKKOS_INLINE_FUNCTION static double load(double x) { return x; }
  KOKKOS_INLINE_FUNCTION static double store(double x) { return x; }
};
template <>
struct Val<SPARSEPORT_F16> {
  using type = uint16_t;
  KOKKOS_INLINE_FUNCTION static double load(uint16_t x) { return detail::float_from_half_bits(x); }
  KOKKOS_INLINE_FUNCTION static uint16_t store(double x) { return detail::half_bits_from(static_cast<float>(x)); }
};
template <>
struct Val<SPARSEPORT_BF16> {
  using type = uint16_t;
  KOKKOS_INLINE_FUNCTION static double load(uint16_t x) { return detail::float_from_bf16_bits(x); }
  KOKKOS_INLINE_FUNCTION static uint16_t store(double x) { return detail::bf16_bits_from(static_cast<float>(x)); }
};

template <int S, int D>
void convert_typed(const sparseport_dense& src, const sparseport_dense_mut& dst) {
  const auto* s = static_cast<const typename Val<S>::type*>(src.data);
  auto* d = static_cast<typename Val<D>::type*>(dst.data);
  const int64_t cols = src.cols, sld = src.ld, dld = dst.ld;
  Kokkos::parallel_for(
      "sparseport::kokkos::convert", Range(0, src.rows * src.cols), KOKKOS_LAMBDA(const int64_t t) {
        const int64_t i = t / cols, j = t - i * cols;
        d[i * dld + j] = Val<D>::store(Val<S>::load(s[i * sld + j]));
      });
  end_op();
}

// Named templates, not a generic lambda: nvcc rejects KOKKOS_LAMBDA inside one (common.hpp).
template <int S>
void convert_from(const sparseport_dense& src, const sparseport_dense_mut& dst) {
  switch (dst.value_type) {
    case SPARSEPORT_F64: return convert_typed<S, SPARSEPORT_F64>(src, dst);
    case SPARSEPORT_F16: return convert_typed<S, SPARSEPORT_F16>(src, dst);
    case SPARSEPORT_BF16: return convert_typed<S, SPARSEPORT_BF16>(src, dst);
    default: return convert_typed<S, SPARSEPORT_F32>(src, dst);
  }
}

}  // namespace

void convert(const sparseport_dense& src, const sparseport_dense_mut& dst) {
  if (src.rows <= 0 || src.cols <= 0) return;
  switch (src.value_type) {
    case SPARSEPORT_F64: return convert_from<SPARSEPORT_F64>(src, dst);
    case SPARSEPORT_F16: return convert_from<SPARSEPORT_F16>(src, dst);
    case SPARSEPORT_BF16: return convert_from<SPARSEPORT_BF16>(src, dst);
    default: return convert_from<SPARSEPORT_F32>(src, dst);
  }
}

}  // namespace sparseport::kokkos
