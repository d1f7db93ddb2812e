#include "tensor/half.h"

#include <bit>
#include <cstring>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define GRIST_HAVE_F16C 1
#endif

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

// The whole-buffer passes use the CPU's float16 conversions (F16C) eight values at a time where the build has
// them: the same round-to-nearest-even results, except that they quiet a signalling NaN, so a block holding
// a NaN takes the exact scalar path.
#ifdef GRIST_HAVE_F16C
namespace {
constexpr int kRoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
inline bool any_nan(__m256 x) { return _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0; }
inline bool any_half_nan(const Half* h) {
  uint16_t bits[8];
  std::memcpy(bits, h, sizeof bits);
  bool nan = false;
  for (uint16_t b : bits) nan |= (b & 0x7fffu) > 0x7c00u;
  return nan;
}
}  // namespace
#endif

void widen(std::span<const Half> src, float* dst) {
  size_t i = 0;
#ifdef GRIST_HAVE_F16C
  for (; i + 8 <= src.size(); i += 8) {
    if (any_half_nan(&src[i])) {
      for (size_t k = i; k < i + 8; ++k) dst[k] = half_bits_to_float(src[k].bits);
      continue;
    }
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&src[i]));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < src.size(); ++i) dst[i] = half_bits_to_float(src[i].bits);
}

void widen(std::span<const BFloat16> src, float* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = bfloat16_bits_to_float(src[i].bits);
}

void narrow(std::span<const float> src, Half* dst) {
  size_t i = 0;
#ifdef GRIST_HAVE_F16C
  for (; i + 8 <= src.size(); i += 8) {
    const __m256 x = _mm256_loadu_ps(src.data() + i);
    if (any_nan(x)) {
      for (size_t k = i; k < i + 8; ++k) dst[k].bits = float_to_half_bits(src[k]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(x, kRoundNearest));
  }
#endif
  for (; i < src.size(); ++i) dst[i].bits = float_to_half_bits(src[i]);
}

void narrow(std::span<const float> src, BFloat16* dst) {
  for (size_t i = 0; i < src.size(); ++i) dst[i].bits = float_to_bfloat16_bits(src[i]);
}

namespace {

constexpr uint32_t kAbsBits = 0x7fffffffu, kInfBits = 0x7f800000u;

// The tally's counts for one value: x before rounding, y after.
inline void tally_one(uint32_t x, uint32_t y, RoundingTally& t) {
  t.nonfinite_before += (x & kAbsBits) >= kInfBits;
  t.nonfinite_after += (y & kAbsBits) >= kInfBits;
  const bool zero = (y & kAbsBits) == 0;
  t.zeros_after += zero;
  t.flushed += zero && (x & kAbsBits) != 0;
}

template <bool kTally>
void round_half_pass(const float* src, float* dst, size_t n, RoundingTally& t) {
  size_t i = 0;
#ifdef GRIST_HAVE_F16C
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kAbsBits)));
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kInfBits)));
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    if (any_nan(x)) {
      for (size_t k = i; k < i + 8; ++k) {
        const float y = half_bits_to_float(float_to_half_bits(src[k]));
        if constexpr (kTally) tally_one(std::bit_cast<uint32_t>(src[k]), std::bit_cast<uint32_t>(y), t);
        dst[k] = y;
      }
      continue;
    }
    const __m256 y = _mm256_cvtph_ps(_mm256_cvtps_ph(x, kRoundNearest));
    _mm256_storeu_ps(dst + i, y);
    if constexpr (kTally) {
      // No NaN in the block: not finite means |value| = inf (an ordered comparison suffices).
      t.nonfinite_before += std::popcount(static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, abs_mask), inf, _CMP_EQ_OQ))));
      t.nonfinite_after += std::popcount(static_cast<unsigned>(
          _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(y, abs_mask), inf, _CMP_EQ_OQ))));
      const auto zy = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(y, zero, _CMP_EQ_OQ)));
      // x's zeros by bit pattern: under --ftz (DAZ) a float comparison takes float32 subnormals for 0, and their
      // flush to 0 in the format would go uncounted (the scalar path compares patterns). AVX has no 256-bit
      // integer compare: two 128-bit halves.
      const __m256i xi = _mm256_castps_si256(_mm256_and_ps(x, abs_mask));
      const __m128i z128 = _mm_setzero_si128();
      const auto zx = static_cast<unsigned>(
          _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm256_castsi256_si128(xi), z128))) |
          (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm256_extractf128_si256(xi, 1), z128))) << 4));
      t.zeros_after += std::popcount(zy);
      t.flushed += std::popcount(zy & ~zx);
    }
  }
#endif
  for (; i < n; ++i) {
    const float y = half_bits_to_float(float_to_half_bits(src[i]));
    if constexpr (kTally) tally_one(std::bit_cast<uint32_t>(src[i]), std::bit_cast<uint32_t>(y), t);
    dst[i] = y;
  }
}

// Branch-free, so the compiler vectorises it: the rounded pattern, or the quiet NaN where the value is NaN.
inline uint32_t round_bfloat16_bits(uint32_t x) {
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
  return (x & kAbsBits) > kInfBits ? 0x7fc00000u : rounded;
}

template <bool kTally>
void round_bfloat16_pass(const float* src, float* dst, size_t n, RoundingTally& t) {
  if constexpr (!kTally) {
    for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(round_bfloat16_bits(std::bit_cast<uint32_t>(src[i])));
  } else {
    // Integer counters, so the counting vectorises with the rounding.
    uint64_t nonfinite_before = 0, nonfinite_after = 0, zeros = 0, flushed = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t x = std::bit_cast<uint32_t>(src[i]);
      const uint32_t y = round_bfloat16_bits(x);
      dst[i] = std::bit_cast<float>(y);
      nonfinite_before += (x & kAbsBits) >= kInfBits;
      nonfinite_after += (y & kAbsBits) >= kInfBits;
      const uint32_t zero = (y & kAbsBits) == 0;
      zeros += zero;
      flushed += zero & ((x & kAbsBits) != 0);
    }
    t.nonfinite_before += static_cast<int64_t>(nonfinite_before);
    t.nonfinite_after += static_cast<int64_t>(nonfinite_after);
    t.zeros_after += static_cast<int64_t>(zeros);
    t.flushed += static_cast<int64_t>(flushed);
  }
}

}  // namespace

void round_to_half(std::span<float> v) { round_to_half(v, v.data()); }
void round_to_bfloat16(std::span<float> v) { round_to_bfloat16(v, v.data()); }

void round_to_half(std::span<const float> src, float* dst, RoundingTally* tally) {
  RoundingTally unused;
  if (tally) round_half_pass<true>(src.data(), dst, src.size(), *tally);
  else round_half_pass<false>(src.data(), dst, src.size(), unused);
}

void round_to_bfloat16(std::span<const float> src, float* dst, RoundingTally* tally) {
  RoundingTally unused;
  if (tally) round_bfloat16_pass<true>(src.data(), dst, src.size(), *tally);
  else round_bfloat16_pass<false>(src.data(), dst, src.size(), unused);
}

}  // namespace grist
