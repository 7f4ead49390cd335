// SPDX-License-Identifier: Apache-2.0
// 16-bit value types on the host: sparseport::half (IEEE binary16) and sparseport::bfloat16.
// Storage only: arithmetic converts to float (implicitly) and back (explicitly), so a sum over a
// 16-bit array accumulates in float32 unless the code asks otherwise. Bit-compatible with CUDA's
// __half and __nv_bfloat16 and with torch.float16 / torch.bfloat16, so arrays pass between them
// unchanged. Conversions from float round to nearest even, keep NaN a NaN and send overflow to
// infinity; float -> half -> float and float -> bfloat16 -> float are exact for representable values.
#pragma once

#include <cstdint>
#include <cstring>

// The bit conversions below are also device code where a GPU compiler includes this header (the
// kokkos plugin's convert slot on a device space, kernels/kokkos/convert.cpp).
#if defined(__CUDACC__) || defined(__HIPCC__)
#define SPARSEPORT_HOST_DEVICE __host__ __device__
#else
#define SPARSEPORT_HOST_DEVICE
#endif

namespace sparseport {

namespace detail {
SPARSEPORT_HOST_DEVICE inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
SPARSEPORT_HOST_DEVICE inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round-to-nearest-even float -> binary16 (F. Giesen's float_to_half_fast3_rtne).
SPARSEPORT_HOST_DEVICE inline uint16_t half_bits_from(float f) {
  uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (x < 0x38800000u) {
    // Below 2^-14 (subnormal or zero): adding 0.5 lines the mantissa up so that its last bit is
    // 2^-24, the smallest subnormal, and the FPU's own rounding is the nearest-even we want.
    const uint32_t r = bits_of(float_of(x) + 0.5f) - 0x3f000000u;
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent (127 -> 15) and round half to even
  return static_cast<uint16_t>(sign | (x >> 13));
}

SPARSEPORT_HOST_DEVICE inline float float_from_half_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign != 0 ? -v : v;
  }
  if (e == 31) return float_of(sign | 0x7f800000u | (m << 13));
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

SPARSEPORT_HOST_DEVICE inline uint16_t bf16_bits_from(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
SPARSEPORT_HOST_DEVICE inline float float_from_bf16_bits(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }
}  // namespace detail

struct half {
  uint16_t bits = 0;

  half() = default;
  explicit half(float f) : bits(detail::half_bits_from(f)) {}
  // Through float: double -> float -> half rounds twice, which can differ from a direct rounding
  // only for a double exactly between two halves after its float rounding; results stored by the
  // ops come from float32 accumulators, so they round once.
  explicit half(double d) : half(static_cast<float>(d)) {}
  explicit half(int i) : half(static_cast<float>(i)) {}
  operator float() const { return detail::float_from_half_bits(bits); }
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float f) : bits(detail::bf16_bits_from(f)) {}
  explicit bfloat16(double d) : bfloat16(static_cast<float>(d)) {}
  explicit bfloat16(int i) : bfloat16(static_cast<float>(i)) {}
  operator float() const { return detail::float_from_bf16_bits(bits); }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2, "16-bit values are 2 bytes");

// The type a value type accumulates in: float for the 16-bit types, itself otherwise. Kernels take
// it as a separate template parameter (storage V, accumulator A), so a new storage type (fp8) or a
// float32-storage/float64-accumulate mode is one specialisation here.
template <class V>
struct accumulator {
  using type = V;
};
template <>
struct accumulator<half> {
  using type = float;
};
template <>
struct accumulator<bfloat16> {
  using type = float;
};
template <class V>
using accumulator_t = typename accumulator<V>::type;

}  // namespace sparseport
