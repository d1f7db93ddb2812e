// float32 ⇄ float16/bfloat16 conversions, bit for bit against numpy's float16 and PyTorch's CPU bfloat16
// (tests/tensor/half_fixture.inc, generated offline by tests/tensor/gen/half_fixture.py).
#include <bit>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "tensor/half.h"
#include "tensor/half_tensor.h"

namespace grist {
namespace {

struct HalfCase {
  uint32_t f32, f16, bf16, f16_widened;
};
#include "tensor/half_fixture.inc"

bool is_nan_bits(uint32_t f32) { return (f32 & 0x7fffffffu) > 0x7f800000u; }

TEST(Half, RoundsLikeNumpysFloat16) {
  int checked = 0;
  for (const HalfCase& c : kHalfCases) {
    const float f = std::bit_cast<float>(c.f32);
    EXPECT_EQ(float_to_half_bits(f), c.f16) << std::hex << "float32 bits 0x" << c.f32;
    EXPECT_EQ(std::bit_cast<uint32_t>(half_bits_to_float(static_cast<uint16_t>(c.f16))), c.f16_widened)
        << std::hex << "float16 bits 0x" << c.f16;
    ++checked;
  }
  EXPECT_GT(checked, 2000);
}

TEST(Half, WholeBufferPassesAgreeWithTheScalarConversions) {
  // The buffer passes may convert eight values at a time (F16C); NaN blocks and tails take the scalar path.
  std::vector<float> values;
  for (const HalfCase& c : kHalfCases) values.push_back(std::bit_cast<float>(c.f32));
  std::vector<Half> h(values.size());
  std::vector<float> back(values.size()), rounded = values, rounded_b = values;
  narrow(values, h.data());
  widen(h, back.data());
  round_to_half(rounded);
  round_to_bfloat16(rounded_b);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t expected = float_to_half_bits(values[i]);
    EXPECT_EQ(h[i].bits, expected) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(half_bits_to_float(expected))) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(rounded[i]), std::bit_cast<uint32_t>(half_bits_to_float(expected))) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(rounded_b[i]),
              std::bit_cast<uint32_t>(bfloat16_bits_to_float(float_to_bfloat16_bits(values[i])))) << i;
  }
}

// The one-pass rounding (a copy and its rounding; a rounding that counts as it goes, for the executor's
// first-producer notes) writes what the scalar conversions give, and counts what separate passes would count.
TEST(Half, OnePassRoundingCopiesRoundsAndCountsLikeSeparatePasses) {
  std::vector<float> values;
  for (const HalfCase& c : kHalfCases) values.push_back(std::bit_cast<float>(c.f32));
  values.push_back(0.0f);
  values.push_back(-0.0f);
  values.push_back(1e-30f);  // flushes to 0 in float16, not in bfloat16
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bfloat16" : "float16");
    std::vector<float> copy(values.size()), in_place = values;
    RoundingTally tally;
    if (bf16) {
      round_to_bfloat16(values, copy.data());
      round_to_bfloat16(in_place, in_place.data(), &tally);
    } else {
      round_to_half(values, copy.data());
      round_to_half(in_place, in_place.data(), &tally);
    }
    RoundingTally expected;
    for (size_t i = 0; i < values.size(); ++i) {
      const float want = bf16 ? bfloat16_bits_to_float(float_to_bfloat16_bits(values[i]))
                              : half_bits_to_float(float_to_half_bits(values[i]));
      EXPECT_EQ(std::bit_cast<uint32_t>(copy[i]), std::bit_cast<uint32_t>(want)) << i;
      EXPECT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(want)) << i;
      expected.nonfinite_before += !std::isfinite(values[i]);
      expected.nonfinite_after += !std::isfinite(want);
      expected.zeros_after += want == 0.0f;
      expected.flushed += want == 0.0f && values[i] != 0.0f;
    }
    EXPECT_EQ(tally.nonfinite_before, expected.nonfinite_before);
    EXPECT_EQ(tally.nonfinite_after, expected.nonfinite_after);
    EXPECT_EQ(tally.zeros_after, expected.zeros_after);
    EXPECT_EQ(tally.flushed, expected.flushed);
    EXPECT_GT(expected.flushed, 0);
    if (!bf16) {
      EXPECT_GT(expected.nonfinite_after, expected.nonfinite_before);  // overflows to inf counted
    }
  }
}

// Under --ftz the executor sets DAZ, which makes a float comparison take float32 subnormals for 0: the vector
// pass must still count their rounding to 0 in float16 as a flush, as the scalar path (bit patterns) does.
TEST(Half, FlushesOfFloat32SubnormalsAreCountedUnderDenormalsAreZero) {
  std::vector<float> values(16, 1.0f);
  for (size_t i = 0; i < values.size(); i += 2) values[i] = std::bit_cast<float>(0x00000010u + static_cast<uint32_t>(i));
  RoundingTally tally;
  {
    FlushDenormalsScope daz(true);
    round_to_half(values, values.data(), &tally);
  }
  EXPECT_EQ(tally.flushed, 8);
  EXPECT_EQ(tally.zeros_after, 8);
}

TEST(Half, EdgesOfTheFormat) {
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bffu);                // largest finite
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bffu);               // below the halfway point
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00u);                // the tie rounds to even: inf
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00u);
  EXPECT_EQ(float_to_half_bits(0x1p-24f), 0x0001u);                // smallest subnormal
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000u);                // half of it: a tie, to even (0)
  EXPECT_EQ(float_to_half_bits(0x1.000002p-25f), 0x0001u);         // just above the tie
  EXPECT_EQ(float_to_half_bits(0x3p-25f), 0x0002u);                // 1.5 units: a tie, to even (2)
  EXPECT_EQ(float_to_half_bits(0x1.002p0f), 0x3c00u);              // 1 + 2^-11: tie, to even (1)
  EXPECT_EQ(float_to_half_bits(0x1.006p0f), 0x3c02u);              // 1 + 3·2^-11: tie, to even (1 + 2^-9)
  EXPECT_EQ(float_to_half_bits(0x1.ffcp-15f), 0x0400u);            // rounds up into the normals
  EXPECT_EQ(half_bits_to_float(0x0001u), 0x1p-24f);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::quiet_NaN()) & 0x8000u, 0x8000u);  // sign kept
}

TEST(Half, EveryPatternWidensExactlyAndRoundsBackToItself) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = half_bits_to_float(static_cast<uint16_t>(h));
    const uint32_t e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) {
      EXPECT_EQ(std::isnan(f), m != 0) << h;
      EXPECT_EQ(std::isinf(f), m == 0) << h;
    } else {
      // binary16's definition, computed in double: (-1)^s · 2^(e-15) · (1 + m/1024), subnormals 2^-14 · m/1024.
      const double magnitude = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, static_cast<int>(e) - 25);
      EXPECT_EQ(static_cast<double>(f), (h & 0x8000u) ? -magnitude : magnitude) << h;
    }
    EXPECT_EQ(float_to_half_bits(f), h) << h;  // NaN payloads too: their top bits survive the round trip
  }
}

TEST(BFloat16, RoundsLikePyTorchOnCpu) {
  int checked = 0;
  for (const HalfCase& c : kHalfCases) {
    const uint16_t got = float_to_bfloat16_bits(std::bit_cast<float>(c.f32));
    if (is_nan_bits(c.f32)) {
      // PyTorch's tensor conversion writes 0xffff for NaN, its arithmetic 0x7fc0 (c10::BFloat16); both NaN.
      EXPECT_EQ(got, 0x7fc0u);
      EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(static_cast<uint16_t>(c.bf16))));
      continue;
    }
    EXPECT_EQ(got, c.bf16) << std::hex << "float32 bits 0x" << c.f32;
    ++checked;
  }
  EXPECT_GT(checked, 1900);
}

TEST(BFloat16, EdgesOfTheFormat) {
  EXPECT_EQ(float_to_bfloat16_bits(0x1.01p0f), 0x3f80u);   // 1 + 2^-8: tie, to even
  EXPECT_EQ(float_to_bfloat16_bits(0x1.03p0f), 0x3f82u);   // 1 + 3·2^-8: tie, to even
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7f80u);  // overflows to inf
  EXPECT_EQ(float_to_bfloat16_bits(0x1p-133f), 0x0001u);   // subnormals are kept
  EXPECT_EQ(bfloat16_bits_to_float(0x0001u), 0x1p-133f);
}

TEST(HalfTensor, CastsBetweenFloat32AndTheHalfTypes) {
  Tensor x = Tensor::from<float>({4}, {1.0f, 65520.0f, 0x1p-24f, -2.5f});
  Tensor h, back;
  cast_tensor(x, DType::Float16, h);
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.data<Half>()[1].bits, 0x7c00u);
  cast_tensor(h, DType::Float32, back);
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isinf(back.data<float>()[1]));
  EXPECT_EQ(back.data<float>()[2], 0x1p-24f);
  Tensor b, i;
  cast_tensor(h, DType::BFloat16, b);
  EXPECT_EQ(b.get_as_double(3), -2.5);
  cast_tensor(b, DType::Int32, i);
  EXPECT_EQ(i.data<int32_t>()[3], -2);
}

TEST(HalfTensor, NarrowingRoundsTheFloat32ScratchToo) {
  Tensor wide = Tensor::from<float>({2}, {1.0f + 0x1p-12f, 70000.0f}), h;
  narrow_to_half(wide, DType::Float16, h);
  EXPECT_EQ(wide.data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isinf(wide.data<float>()[1]));
  EXPECT_EQ(h.data<Half>()[0].bits, 0x3c00u);
}

}  // namespace
}  // namespace grist
