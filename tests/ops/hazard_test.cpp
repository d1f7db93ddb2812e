// The failure-kind and objective tables (ops/hazard.cpp): every kind is listed once, with its danger test.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ops/hazard.h"

namespace grist {
namespace {

TEST(FailureKinds, EveryFailureHasOneEntryWithADangerTest) {
  std::set<std::string> ids;
  for (int i = 0; i <= static_cast<int>(Failure::HalfUnderflow); ++i) {
    const Failure f = static_cast<Failure>(i);
    const FailureKind& k = failure_kind(f);
    EXPECT_EQ(k.failure, f) << "Failure " << i << " is missing from the table";
    EXPECT_NE(k.meets_danger, nullptr) << k.id;
    EXPECT_FALSE(k.danger.empty()) << k.id;
    EXPECT_TRUE(ids.insert(std::string(k.id)).second) << k.id << " twice";
  }
}

TEST(FailureKinds, DangerTestsReadTheirIntervals) {
  Node node;
  const IntervalTensor positive = IntervalTensor::filled(DType::Float32, Shape{2}, {0.5, 3});
  const IntervalTensor straddling = IntervalTensor::filled(DType::Float32, Shape{2}, {-1, 1});
  auto meets = [&](Failure f, const IntervalTensor& v) {
    const IntervalTensor* in[] = {&v};
    return failure_kind(f).meets_danger(DangerContext{node, v, in, {}});
  };
  EXPECT_FALSE(meets(Failure::LogOfNonPositive, positive));
  EXPECT_TRUE(meets(Failure::LogOfNonPositive, straddling));
  EXPECT_FALSE(meets(Failure::DivisionByZero, positive));
  EXPECT_TRUE(meets(Failure::DivisionByZero, straddling));
  EXPECT_FALSE(meets(Failure::ExpOverflow, positive));
  EXPECT_TRUE(meets(Failure::ExpOverflow, IntervalTensor::filled(DType::Float32, Shape{2}, {0, 88})));
  // Pow: a zero base is dangerous only with an exponent that may be negative.
  const IntervalTensor exponent = IntervalTensor::filled(DType::Float32, Shape{}, {2, 2});
  const IntervalTensor* pow_in[] = {&straddling, &exponent};
  EXPECT_FALSE(failure_kind(Failure::PowZeroToNegative).meets_danger(DangerContext{node, straddling, pow_in, {}}));
}

TEST(Objectives, EveryObjectiveHasOneEntryThatSeedsItsExtremum) {
  Tensor v(DType::Float32, Shape{3});
  v.data<float>()[0] = 2.f;
  v.data<float>()[1] = -0.25f;
  v.data<float>()[2] = 5.f;
  for (int i = 0; i <= static_cast<int>(Objective::None); ++i) {
    const Objective o = static_cast<Objective>(i);
    const ObjectiveKind& k = objective_kind(o);
    EXPECT_EQ(k.objective, o) << "Objective " << i << " is missing from the table";
    Tensor seed;
    const ObjectiveValue r = k.evaluate(v, seed);
    EXPECT_EQ(seed.shape(), v.shape()) << k.name;
    if (o == Objective::None) {
      EXPECT_EQ(r.index, -1);
    }
  }
  Tensor seed;
  const ObjectiveValue r = evaluate_objective(Objective::MinAbs, v, seed);
  EXPECT_EQ(r.index, 1);
  EXPECT_DOUBLE_EQ(r.value, 0.25);
  EXPECT_EQ(seed.data<float>()[1], -1.f);  // d|v|/dv at a negative v
}

}  // namespace
}  // namespace grist
