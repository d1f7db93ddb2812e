// The two 16-bit float formats (IEEE binary16 "float16" and Google's "bfloat16") as stored bit patterns, with
// exact conversions to and from float32: round to nearest even, overflow to ±inf, subnormals kept, NaN kept.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace grist {


// Element types of Float16 and BFloat16 tensors: only storage. Kernels never compute on them; the executor
// widens them to float32, runs the float32 kernel and rounds the result back once (as PyTorch's CPU does).
struct Half {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};

// binary16: 1 sign, 5 exponent, 10 mantissa bits; largest finite 65504, smallest subnormal 2^-24.
// A NaN keeps its sign and the top 10 bits of its payload (numpy's rule; a payload that would vanish becomes 1).
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);

// bfloat16: float32's top 16 bits. A NaN becomes the quiet NaN 0x7FC0, as in PyTorch's c10::BFloat16.
uint16_t float_to_bfloat16_bits(float f);
inline float bfloat16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

template <> constexpr DType dtype_of<Half>() { return DType::Float16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }

inline Half to_half(float f) { return Half{float_to_half_bits(f)}; }
inline BFloat16 to_bfloat16(float f) { return BFloat16{float_to_bfloat16_bits(f)}; }
inline float to_float(Half h) { return half_bits_to_float(h.bits); }
inline float to_float(BFloat16 b) { return bfloat16_bits_to_float(b.bits); }

// Whole-buffer passes (the executor's widening and rounding of every half tensor).
void widen(std::span<const Half> src, float* dst);
void widen(std::span<const BFloat16> src, float* dst);
void narrow(std::span<const float> src, Half* dst);
void narrow(std::span<const float> src, BFloat16* dst);
// Rounds float32 values in place to the nearest value the format holds (still stored as float32).
void round_to_half(std::span<float> v);
void round_to_bfloat16(std::span<float> v);

// What one rounding pass saw, for the executor's first-producer notes: how many values were NaN/±inf before
// and after it, how many are zero after it, and how many of those it flushed (non-zero before).
struct RoundingTally {
  int64_t nonfinite_before = 0, nonfinite_after = 0, zeros_after = 0, flushed = 0;
};
// One pass that reads `src`, writes its rounding to `dst` (src.size() floats; may be src itself) and, given a
// tally, counts as it goes: an amp cast is a copy and its rounding at once, and a scanned rounding needs no
// separate passes for its counts.
void round_to_half(std::span<const float> src, float* dst, RoundingTally* tally = nullptr);
void round_to_bfloat16(std::span<const float> src, float* dst, RoundingTally* tally = nullptr);

}  // namespace grist
