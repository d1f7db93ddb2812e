#include "tensor/half.h"

#include <bit>

namespace grist {

namespace {

// Rounds the integer `v` right by `shift` bits (1..31), ties to even.
inline uint32_t shift_round_even(uint32_t v, int shift) {
  const uint32_t kept = v >> shift;
  const uint32_t rest = v & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  return kept + (rest > halfway || (rest == halfway && (kept & 1u)));
}

}  // namespace

uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: the payload's top bits, never the pattern of inf
    const uint32_t payload = (ax & 0x007fffffu) >> 13;
    return static_cast<uint16_t>(sign | 0x7c00u | (payload ? payload : 1u));
  }
  // 65520 = 65504 + half an ulp: the tie rounds to the even neighbour, 65536, which is inf.
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {  // a normal half (>= 2^-14): rebias the exponent, round the mantissa's 13 low bits
    return static_cast<uint16_t>(sign | shift_round_even(ax - 0x38000000u, 13));
  }
  // Subnormal (or zero) in half: the value in units of 2^-24, rounded. Below 2^-25 (or at it, a tie) it is 0.
  const int exponent = static_cast<int>(ax >> 23);
  if (exponent < 102) return sign;
  const uint32_t mantissa = (ax & 0x007fffffu) | 0x00800000u;
  return static_cast<uint16_t>(sign | shift_round_even(mantissa, 126 - exponent));
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa × 2^-24, exact in float32
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  // Adding 0x7fff plus the kept part's lowest bit rounds to nearest even; a carry past the largest finite
  // value lands on inf's pattern, as it should.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void widen(std::span<const Half> src, float* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = half_bits_to_float(src[i].bits);
}

void widen(std::span<const BFloat16> src, float* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = bfloat16_bits_to_float(src[i].bits);
}

void narrow(std::span<const float> src, Half* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i].bits = float_to_half_bits(src[i]);
}

void narrow(std::span<const float> src, BFloat16* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i].bits = float_to_bfloat16_bits(src[i]);
}

void round_to_half(std::span<float> v) {
  for (float& x : v) x = half_bits_to_float(float_to_half_bits(x));
}

void round_to_bfloat16(std::span<float> v) {
  for (float& x : v) x = bfloat16_bits_to_float(float_to_bfloat16_bits(x));
}

}  // namespace grist
