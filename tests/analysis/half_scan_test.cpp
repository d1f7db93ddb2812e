// The scan under a 16-bit precision (issue 16): intervals rounded to the format as the run rounds (a property
// test of the rounding's soundness), the format's own danger zones, and the verdict "safe in float32, may fail
// in float16" on the models whose float32 run is finite and whose float16 run is not.
#include <cmath>
#include <cstdio>
#include <limits>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "analysis/format_rounding.h"
#include "analysis/half_hazards.h"
#include "analysis/scan.h"
#include "report/scan_report.h"
#include "support/half_models.h"
#include "tensor/half.h"

using namespace grist;
using namespace grist::testing::half_models;

namespace {

float round_in(DType format, float x) {
  return format == DType::Float16 ? half_bits_to_float(float_to_half_bits(x))
                                  : bfloat16_bits_to_float(float_to_bfloat16_bits(x));
}

// A float32 value of any magnitude the formats meet: around their max, their subnormals, and in between.
float any_float() {
  const int exponent = *rc::gen::inRange(-30, 20);
  const double mantissa = *rc::gen::inRange(-4096, 4097) / 2048.0;
  constexpr float kScales[] = {1.0f, 65504.0f / 16, 3.0e38f / (1 << 20)};
  const float scale = kScales[*rc::gen::inRange(0, 3)];
  return static_cast<float>(mantissa * std::ldexp(1.0, exponent) * scale);
}

// What the scan says about one site of a model, under a precision, with its inputs in [lo, hi].
const HazardVerdict* verdict(const ScanReport& r, Failure f, const std::string& op) {
  for (const HazardVerdict& v : r.verdicts)
    if (v.site.failure == f && v.site.op_type == op) return &v;
  return nullptr;
}

ScanReport scan_in(const Graph& g, Precision p, double lo, double hi) {
  ScanOptions o;
  o.precision = p;
  for (ValueId id : g.inputs) o.assumed[g.value(id).name] = Interval{lo, hi};
  auto r = scan(g, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  if (r && ::testing::Test::HasFailure()) std::printf("%s", to_text(*r, std::string(precision_name(p))).c_str());
  return r ? std::move(r).value() : ScanReport{};
}

}  // namespace

// Soundness of the outward rounding: every float32 value in [lo, hi], rounded to the format, lies in the
// rounded interval.
RC_GTEST_PROP(FormatRounding, EveryRoundedValueOfTheIntervalLiesInItsRounding, ()) {
  const DType format = *rc::gen::inRange(0, 2) == 0 ? DType::Float16 : DType::BFloat16;
  float a = any_float(), b = any_float();
  if (a > b) std::swap(a, b);
  const Interval r = round_interval_to_format({a, b}, format);
  for (int k = 0; k <= 16; ++k) {
    // The ends, and points between them (the float32 values nearest each).
    const float x = k == 0 ? a : k == 16 ? b : static_cast<float>(a + (static_cast<double>(b) - a) * k / 16.0);
    if (!(a <= x && x <= b)) continue;
    const double y = round_in(format, x);
    RC_ASSERT(r.lo <= y);
    RC_ASSERT(y <= r.hi);
  }
}

RC_GTEST_PROP(FormatRounding, ADoubleBoundBetweenFloatsStillBoundsTheRoundedValues, ()) {
  const DType format = *rc::gen::inRange(0, 2) == 0 ? DType::Float16 : DType::BFloat16;
  const float x = any_float();
  // A bound a hair inside x's neighbours: the rounding must take the float32 values beyond it.
  const double lo = std::nextafter(static_cast<double>(x), -kInf), hi = std::nextafter(static_cast<double>(x), kInf);
  const Interval r = round_interval_to_format({lo, hi}, format);
  const double y = round_in(format, x);
  RC_ASSERT(r.lo <= y);
  RC_ASSERT(y <= r.hi);
}

TEST(FormatRounding, Float16OverflowsToInfinityFrom65520AndFlushesBelowHalfItsSmallestSubnormal) {
  EXPECT_EQ(round_interval_to_format({0, 65519}, DType::Float16).hi, 65504);
  EXPECT_EQ(round_interval_to_format({0, 65520}, DType::Float16).hi, kInf);
  EXPECT_EQ(round_interval_to_format({-70000, 1}, DType::Float16).lo, -kInf);
  const Interval tiny = round_interval_to_format({1e-9, 2e-8}, DType::Float16);
  EXPECT_EQ(tiny.lo, 0);
  EXPECT_EQ(tiny.hi, 0);  // below 2^-25: every value flushes to 0
  EXPECT_EQ(round_interval_to_format({0, 65520}, DType::BFloat16).hi, 65536);  // bfloat16 keeps float32's range
  const Interval open = round_interval_to_format({-kInf, kInf}, DType::Float16);
  EXPECT_EQ(open.lo, -kInf);
  EXPECT_EQ(open.hi, kInf);
}

TEST(FormatDanger, Float16sExpDangerIsLn65504AndItsTinyIsTheSmallestSubnormal) {
  EXPECT_NEAR(format_limits(DType::Float16).exp_danger, 11.09, 0.01);
  EXPECT_EQ(format_limits(DType::Float16).tiny, std::ldexp(1.0, -24));
  EXPECT_EQ(format_limits(DType::Float16).max, 65504);
  EXPECT_EQ(format_limits(DType::Undefined).exp_danger, 87.5);  // DEBAR's, for float32
  Node node;
  const IntervalTensor z = IntervalTensor::filled(DType::Float32, Shape{2}, {0, 12});
  const IntervalTensor* in[] = {&z};
  EXPECT_FALSE(failure_kind(Failure::ExpOverflow).meets_danger(DangerContext{node, z, in, {}}));
  EXPECT_TRUE(failure_kind(Failure::ExpOverflow).meets_danger(DangerContext{node, z, in, {}, DType::Float16}));
  EXPECT_EQ(danger_in_format(Failure::ExpOverflow, DType::Float16), "≥ 11.09 = ln 65504 (float16)");
}

TEST(HalfScan, ANormIsSafeInFloat32AndItsSumOfSquaresMayOverflowFloat16) {
  const Graph g = norm_model();
  const ScanReport fp32 = scan_in(g, Precision::Fp32, -100, 100);
  EXPECT_EQ(fp32.count(Verdict::MayFail), 0);
  const ScanReport fp16 = scan_in(g, Precision::Fp16, -100, 100);
  const HazardVerdict* v = verdict(fp16, Failure::HalfOverflow, "ReduceSumSquare");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, Verdict::MayFail);
  EXPECT_TRUE(v->safe_in_float32);
  EXPECT_EQ(v->operand.hi, kInf);  // 160000 rounds to +inf
  // Inputs within [-60, 60]: Σx² ≤ 57600 fits, and the scan proves it.
  const ScanReport small = scan_in(g, Precision::Fp16, -60, 60);
  EXPECT_EQ(verdict(small, Failure::HalfOverflow, "ReduceSumSquare")->verdict, Verdict::ProvedSafe);
}

TEST(HalfScan, AHandWrittenSoftmaxMeetsFloat16sExpDangerAt11) {
  const Graph g = softmax_model();
  // (float32 cannot prove the denominator: the sum's error bound reaches below 0 over exp's wide range.)
  EXPECT_EQ(verdict(scan_in(g, Precision::Fp32, -15, 15), Failure::ExpOverflow, "Exp")->verdict, Verdict::ProvedSafe);
  const ScanReport fp16 = scan_in(g, Precision::Fp16, -15, 15);
  const HazardVerdict* v = verdict(fp16, Failure::ExpOverflow, "Exp");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, Verdict::MayFail);
  EXPECT_TRUE(v->safe_in_float32);
  EXPECT_EQ(v->danger, "≥ 11.09 = ln 65504 (float16)");
  // Logits up to 10: exp fits (22026), but eight of them summed may not (176000).
  const ScanReport ten = scan_in(g, Precision::Fp16, -10, 10);
  EXPECT_EQ(verdict(ten, Failure::ExpOverflow, "Exp")->verdict, Verdict::ProvedSafe);
  EXPECT_EQ(verdict(ten, Failure::HalfOverflow, "ReduceSum")->verdict, Verdict::MayFail);
}

TEST(HalfScan, AnAttentionScoreProductMayOverflowUnderAmpFp16ButNotBf16) {
  const Graph g = attention_model();
  EXPECT_EQ(scan_in(g, Precision::Fp32, -100, 100).count(Verdict::MayFail), 0);
  const ScanReport amp = scan_in(g, Precision::AmpFp16, -100, 100);
  const HazardVerdict* v = verdict(amp, Failure::HalfOverflow, "MatMul");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, Verdict::MayFail);
  EXPECT_TRUE(v->safe_in_float32);
  const ScanReport bf16 = scan_in(g, Precision::AmpBf16, -100, 100);
  EXPECT_EQ(verdict(bf16, Failure::HalfOverflow, "MatMul")->verdict, Verdict::ProvedSafe);
}

TEST(HalfScan, AVarianceUnderASqrtMayFlushToZeroInFloat16Only) {
  const Graph g = variance_model();
  const ScanReport fp32 = scan_in(g, Precision::Fp32, -1e-3, 3e-3);
  EXPECT_EQ(verdict(fp32, Failure::SqrtOfNegative, "Sqrt")->verdict, Verdict::ProvedSafe);
  const ScanReport fp16 = scan_in(g, Precision::Fp16, -1e-3, 3e-3);
  const HazardVerdict* v = verdict(fp16, Failure::HalfUnderflow, "Sqrt");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, Verdict::MayFail);
  EXPECT_TRUE(v->safe_in_float32);
  EXPECT_EQ(v->operand.lo, 0);  // ε = 1e-8 itself flushes to 0 in float16
}

// A model stored in float16 (a `.half()` export) scanned at the default precision: its values are float16's,
// rounded as the engine rounds them, and its sites meet float16's danger zones, not float32's.
TEST(HalfScan, AModelStoredInFloat16IsScannedInFloat16AtFp32) {
  const Graph norm = stored_in(norm_model(), DType::Float16);
  const ScanReport wide = scan_in(norm, Precision::Fp32, -100, 100);
  const HazardVerdict* v = verdict(wide, Failure::HalfOverflow, "ReduceSumSquare");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->verdict, Verdict::MayFail);
  EXPECT_EQ(v->operand.hi, kInf);  // Σx² up to 160000 rounds to +inf
  EXPECT_TRUE(v->safe_in_float32);
  EXPECT_EQ(v->danger, "|result| > 65504 (float16)");
  // The report says what the stored format alone breaks, as under --precision fp16.
  EXPECT_EQ(wide.stored_format, DType::Float16);
  const std::string text = to_text(wide, "norm16");
  EXPECT_NE(text.find("model stored in float16: intervals rounded to float16"), std::string::npos) << text;
  EXPECT_NE(text.find("safe in float32, may fail in float16"), std::string::npos) << text;
  const nlohmann::json j = to_json(wide, "norm16");
  EXPECT_EQ(j.value("stored_format", ""), "float16");
  const ScanReport small = scan_in(norm, Precision::Fp32, -60, 60);  // Σx² ≤ 57600 fits
  ASSERT_NE(verdict(small, Failure::HalfOverflow, "ReduceSumSquare"), nullptr);
  EXPECT_EQ(verdict(small, Failure::HalfOverflow, "ReduceSumSquare")->verdict, Verdict::ProvedSafe);
  const Graph softmax = stored_in(softmax_model(), DType::Float16);
  const ScanReport fifteen = scan_in(softmax, Precision::Fp32, -15, 15);
  const HazardVerdict* e = verdict(fifteen, Failure::ExpOverflow, "Exp");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->verdict, Verdict::MayFail);
  EXPECT_EQ(e->danger, "≥ 11.09 = ln 65504 (float16)");
  const ScanReport ten = scan_in(softmax, Precision::Fp32, -10, 10);
  EXPECT_EQ(verdict(ten, Failure::ExpOverflow, "Exp")->verdict, Verdict::ProvedSafe);
  // bfloat16 keeps float32's range: the same norm fits.
  const ScanReport bf16 = scan_in(stored_in(norm_model(), DType::BFloat16), Precision::Fp32, -100, 100);
  EXPECT_EQ(bf16.stored_format, DType::BFloat16);
  EXPECT_EQ(scan_in(norm_model(), Precision::Fp32, -100, 100).stored_format, DType::Undefined);  // float32-stored
  ASSERT_NE(verdict(bf16, Failure::HalfOverflow, "ReduceSumSquare"), nullptr);
  EXPECT_EQ(verdict(bf16, Failure::HalfOverflow, "ReduceSumSquare")->verdict, Verdict::ProvedSafe);
}
