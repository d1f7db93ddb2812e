// Elementwise family: gradients against finite differences for every differentiable op and attribute
// variant, IEEE edge cases, integer semantics and error paths.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "support/op_test_util.h"

namespace grist {
namespace {

using testing::allocations_after_first_pass;
using testing::BackwardFrom;
using testing::attr_float;
using testing::attr_string;
using testing::expect_bounds_sound;
using testing::expect_gradient_matches;
using testing::gradients_of;
using testing::GradCheckOptions;
using testing::make_single_node_graph;
using testing::node_spec;
using testing::NodeSpec;
using testing::random_tensor;
using testing::run_node;
using testing::tensors_close;
using testing::try_run_node;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Random float64 values with |x| in [lo, hi) and a random sign: keeps clear of kinks at 0.
Tensor away_from_zero(Rng& rng, const Shape& shape, double lo = 0.2, double hi = 2.0) {
  Tensor t = random_tensor(rng, shape, lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (rng.uniform() < 0.5) t.data<double>()[i] = -t.data<double>()[i];
  return t;
}

Tensor doubles(const Shape& shape, std::initializer_list<double> v) { return Tensor::from<double>(shape, v); }
Tensor floats(const Shape& shape, std::initializer_list<float> v) { return Tensor::from<float>(shape, v); }

// Output 0 of a one-node run.
Tensor forward_of(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  auto out = run_node(spec, inputs);
  return out.empty() ? Tensor() : out[0];
}

// ---------------------------------------------------------------------------------------------------
// Unary gradients

struct UnaryCase {
  std::string op;
  double lo, hi;            // input range
  bool signed_range;        // |x| in [lo, hi) with random sign (avoids a kink at 0)
  std::vector<std::pair<std::string, Attribute>> attributes = {};
  std::string label = "";   // test name suffix for attribute variants
};

class UnaryGradient : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryGradient, MatchesFiniteDifferences) {
  const UnaryCase& c = GetParam();
  Rng rng(11);
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3, 4}}) {
    Tensor x = c.signed_range ? away_from_zero(rng, shape, c.lo, c.hi) : random_tensor(rng, shape, c.lo, c.hi);
    expect_gradient_matches(node_spec(c.op, c.attributes), {x});
  }
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise, UnaryGradient,
    ::testing::Values(UnaryCase{"Neg", -3, 3, false}, UnaryCase{"Abs", 0.1, 3, true},
                      UnaryCase{"Sign", 0.1, 3, true}, UnaryCase{"Relu", 0.1, 3, true},
                      UnaryCase{"LeakyRelu", 0.1, 3, true},
                      UnaryCase{"LeakyRelu", 0.1, 3, true, {{"alpha", attr_float(0.3)}}, "Alpha"},
                      UnaryCase{"Sqrt", 0.1, 4, false}, UnaryCase{"Exp", -3, 3, false}, UnaryCase{"Log", 0.1, 5, false},
                      UnaryCase{"Reciprocal", 0.3, 3, true}, UnaryCase{"Sigmoid", -6, 6, false},
                      UnaryCase{"Tanh", -3, 3, false}, UnaryCase{"Softplus", -8, 8, false},
                      UnaryCase{"Softplus", 21, 40, false, {}, "AboveThreshold"}, UnaryCase{"Softsign", 0.1, 4, true},
                      UnaryCase{"Erf", -2, 2, false}, UnaryCase{"Floor", 0.1, 0.9, false},
                      UnaryCase{"Ceil", 0.1, 0.9, false}, UnaryCase{"Round", 0.1, 0.4, false},
                      UnaryCase{"Identity", -3, 3, false}, UnaryCase{"HardSigmoid", -2, 2, false},
                      UnaryCase{"HardSigmoid", -2.5, 2.5, false, {{"alpha", attr_float(1.0 / 6)}}, "PyTorch"},
                      UnaryCase{"HardSwish", -2.9, 2.9, false},
                      UnaryCase{"HardSwish", 3.1, 6, true, {}, "Saturated"}, UnaryCase{"Elu", 0.1, 3, true},
                      UnaryCase{"Selu", 0.1, 3, true}, UnaryCase{"Celu", 0.1, 3, true},
                      UnaryCase{"Celu", 0.1, 3, true, {{"alpha", attr_float(0.5)}}, "Alpha"},
                      UnaryCase{"ThresholdedRelu", 1.2, 3, true}, UnaryCase{"Mish", -5, 5, false},
                      UnaryCase{"Mish", 21, 30, false, {}, "AboveSoftplusThreshold"},
                      UnaryCase{"Gelu", -4, 4, false},
                      UnaryCase{"Gelu", -4, 4, false, {{"approximate", attr_string("tanh")}}, "Tanh"}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) { return info.param.op + info.param.label; });

// ---------------------------------------------------------------------------------------------------
// Binary gradients, with every broadcasting layout the kernels special-case

struct ShapePair {
  Shape a, b;
  std::string label;
};

const ShapePair kShapePairs[] = {
    {{2, 3}, {2, 3}, "SameShape"},     {{2, 3, 4}, {}, "ScalarRight"},     {{}, {3, 2}, "ScalarLeft"},
    {{2, 3, 4}, {4}, "RowRight"},      {{1, 3, 4}, {2, 3, 4}, "RowLeft"},  {{2, 1, 4}, {3, 1}, "General"},
    {{3, 1}, {1, 1, 4}, "OuterOnly"},  {{2, 3}, {1}, "SingleElement"},
};

class BinaryGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(BinaryGradient, MatchesFiniteDifferencesUnderBroadcasting) {
  const std::string& op = GetParam();
  Rng rng(5);
  for (const ShapePair& s : kShapePairs) {
    SCOPED_TRACE(s.label);
    Tensor a = op == "Pow" ? random_tensor(rng, s.a, 0.5, 2.0) : away_from_zero(rng, s.a);
    Tensor b = op == "Pow" ? random_tensor(rng, s.b, -2.0, 2.0) : away_from_zero(rng, s.b, 0.5, 2.0);
    expect_gradient_matches(node_spec(op), {a, b});
  }
}

INSTANTIATE_TEST_SUITE_P(Elementwise, BinaryGradient, ::testing::Values("Add", "Sub", "Mul", "Div", "Pow", "PRelu"));

TEST(PowGradient, ConstantExponentsTakingTheSpecialisedPaths) {
  Rng rng(3);
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.7, 0.0}) {
    SCOPED_TRACE(e);
    Tensor base = random_tensor(rng, {2, 5}, 0.5, 2.0);
    expect_gradient_matches(node_spec("Pow"), {base, Tensor::scalar(e)});
  }
}

TEST(PowGradient, IntegerExponentDifferentiatesTheBaseOnly) {
  Rng rng(4);
  Tensor base = away_from_zero(rng, {3, 4});
  Tensor exponent = Tensor::from<int64_t>({4}, {0, 1, 2, 3});
  GradCheckOptions opts;
  opts.wrt = {0};
  expect_gradient_matches(node_spec("Pow"), {base, exponent}, opts);
}

TEST(PowGradient, FollowsPyTorchAtZeroBase) {
  // d/db at e = 0 is 0 (not 0·0^-1 = NaN); d/de at b = 0, e >= 0 is 0 (not 0·log 0 = NaN).
  auto g = gradients_of(node_spec("Pow"), {doubles({3}, {0, 0, 0}), doubles({3}, {0, 2, 0.5})});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({3}, {0, 0, kInf}), g[0]));
  EXPECT_TRUE(tensors_close(doubles({3}, {0, 0, 0}), g[1]));
}

TEST(PowGradient, MixedFloatWidthsGiveEachInputItsOwnType) {
  auto g = gradients_of(node_spec("Pow"), {doubles({2}, {2, 3}), floats({2}, {2, 1})});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({2}, {4, 1}), g[0]));
  EXPECT_TRUE(tensors_close(floats({2}, {4 * std::log(2.0f), 3 * std::log(3.0f)}), g[1]));
}

// ---------------------------------------------------------------------------------------------------
// Variadic ops

class VariadicGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(VariadicGradient, MatchesFiniteDifferencesWithBroadcasting) {
  Rng rng(9);
  const std::string& op = GetParam();
  // Continuous random values: Max/Min never tie, so finite differences are valid.
  expect_gradient_matches(node_spec(op), {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {4}),
                                         random_tensor(rng, {3, 1})});
  expect_gradient_matches(node_spec(op), {random_tensor(rng, {3, 2}), random_tensor(rng, {3, 2})});
  expect_gradient_matches(node_spec(op), {random_tensor(rng, {5})});
}

INSTANTIATE_TEST_SUITE_P(Elementwise, VariadicGradient, ::testing::Values("Sum", "Mean", "Max", "Min"));

TEST(MaxGradient, TiesShareTheGradientEvenly) {
  auto g = gradients_of(node_spec("Max"), {doubles({2}, {1, 5}), doubles({2}, {1, 2}), doubles({}, {1})});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_TRUE(tensors_close(doubles({2}, {1.0 / 3, 1}), g[0]));
  EXPECT_TRUE(tensors_close(doubles({2}, {1.0 / 3, 0}), g[1]));
  EXPECT_TRUE(tensors_close(doubles({}, {1.0 / 3}), g[2]));
}

TEST(VariadicForward, FoldsLeftToRightWithBroadcasting) {
  Tensor a = doubles({2, 2}, {1, 8, 3, 4});
  Tensor b = doubles({2}, {5, 2});
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {6, 10, 8, 6}), forward_of(node_spec("Sum"), {a, b})));
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {3, 5, 4, 3}), forward_of(node_spec("Mean"), {a, b})));
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {5, 8, 5, 4}), forward_of(node_spec("Max"), {a, b})));
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {1, 2, 3, 2}), forward_of(node_spec("Min"), {a, b})));
}

TEST(VariadicForward, MaxAndMinPropagateNaNWhereverItAppears) {
  Tensor a = doubles({2}, {kNaN, 1});
  Tensor b = doubles({2}, {0, kNaN});
  EXPECT_TRUE(tensors_close(doubles({2}, {kNaN, kNaN}), forward_of(node_spec("Max"), {a, b})));
  EXPECT_TRUE(tensors_close(doubles({2}, {kNaN, kNaN}), forward_of(node_spec("Min"), {b, a})));
}

TEST(VariadicForward, MaxSupportsUnsignedIntegers) {
  Tensor a = Tensor::from<uint32_t>({3}, {1, 4000000000u, 7});
  Tensor b = Tensor::from<uint32_t>({3}, {2, 5, 7});
  EXPECT_TRUE(tensors_close(Tensor::from<uint32_t>({3}, {2, 4000000000u, 7}), forward_of(node_spec("Max"), {a, b})));
}

TEST(VariadicForward, RejectsNoInputsAndMixedTypes) {
  EXPECT_FALSE(try_run_node(node_spec("Sum"), {}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Max"), {doubles({1}, {1}), floats({1}, {1})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Sum"), {doubles({2}, {1, 2}), doubles({3}, {1, 2, 3})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Mean"), {Tensor::from<int32_t>({1}, {1})}).is_ok());
}

// ---------------------------------------------------------------------------------------------------
// Clip

TEST(ClipGradient, BoundsAsInputs) {
  Rng rng(2);
  Tensor x = random_tensor(rng, {3, 4}, -2, 2);
  // Keep clear of the bounds themselves, where the derivative jumps.
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::fabs(std::fabs(x.data<double>()[i]) - 1.0) < 0.05) x.data<double>()[i] = 0.3;
  GradCheckOptions opts;
  opts.wrt = {0};
  expect_gradient_matches(node_spec("Clip"), {x, Tensor::scalar(-1.0), Tensor::scalar(1.0)}, opts);
  expect_gradient_matches(node_spec("Clip"), {x, Tensor::scalar(-1.0)}, opts);
  expect_gradient_matches(node_spec("Clip"), {x, Tensor(), Tensor::scalar(1.0)}, opts);
}

TEST(ClipGradient, BoundsAsAttributesBeforeOpset11) {
  Rng rng(6);
  Tensor x = random_tensor(rng, {10}, -0.45, 0.45);
  NodeSpec spec = node_spec("Clip", {{"min", attr_float(-0.5)}, {"max", attr_float(0.25)}});
  spec.opset = 6;
  expect_gradient_matches(spec, {x});
}

TEST(ClipGradient, PassesAtTheBoundsThemselvesLikePyTorch) {
  auto g = gradients_of(node_spec("Clip"), {doubles({4}, {-1, 1, -2, 2}), Tensor::scalar(-1.0), Tensor::scalar(1.0)});
  ASSERT_FALSE(g.empty());
  EXPECT_TRUE(tensors_close(doubles({4}, {1, 1, 0, 0}), g[0]));
}

TEST(ClipForward, KeepsNaNAndInfinityWhenABoundIsOmitted) {
  Tensor x = doubles({4}, {kNaN, kInf, -kInf, -3});
  EXPECT_TRUE(tensors_close(doubles({4}, {kNaN, kInf, -2, -2}), forward_of(node_spec("Clip"), {x, Tensor::scalar(-2.0)})));
}

TEST(ClipForward, MinAboveMaxGivesMax) {
  Tensor x = doubles({3}, {-5, 0, 5});
  EXPECT_TRUE(tensors_close(doubles({3}, {1, 1, 1}),
                            forward_of(node_spec("Clip"), {x, Tensor::scalar(2.0), Tensor::scalar(1.0)})));
}

TEST(ClipForward, IntegerDefaultsAreTheTypeLimits) {
  Tensor x = Tensor::from<int8_t>({3}, {-128, 0, 127});
  EXPECT_TRUE(tensors_close(x, forward_of(node_spec("Clip"), {x})));
  EXPECT_TRUE(tensors_close(Tensor::from<int8_t>({3}, {-128, 0, 5}),
                            forward_of(node_spec("Clip"), {x, Tensor(), Tensor::scalar<int8_t>(5)})));
}

TEST(ClipForward, RejectsNonScalarOrMistypedBounds) {
  Tensor x = doubles({2}, {1, 2});
  EXPECT_FALSE(try_run_node(node_spec("Clip"), {x, doubles({2}, {0, 1})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Clip"), {x, Tensor::scalar(0.0f)}).is_ok());
}

// ---------------------------------------------------------------------------------------------------
// IEEE edge cases: no clamping, no epsilons

struct EdgeCase {
  std::string op;
  double x, expected;
};

TEST(UnaryForward, KeepsIeeeSpecialValues) {
  // Softsign(inf) is inf/inf = NaN: the formula PyTorch's nn.Softsign and the ONNX reference evaluate.
  const EdgeCase cases[] = {
      {"Log", 0, -kInf},      {"Log", -1, kNaN},         {"Log", kInf, kInf},        {"Sqrt", -1, kNaN},
      {"Sqrt", -0.0, -0.0},   {"Reciprocal", 0, kInf},   {"Reciprocal", -0.0, -kInf}, {"Exp", 1000, kInf},
      {"Exp", -kInf, 0},      {"Sigmoid", -1000, 0},     {"Sigmoid", 1000, 1},       {"Sigmoid", kNaN, kNaN},
      {"Tanh", kInf, 1},      {"Softplus", 1000, 1000},  {"Softplus", -1000, 0},     {"Softplus", kInf, kInf},
      {"Softsign", kInf, kNaN},  {"Relu", kNaN, kNaN},      {"Relu", -kInf, 0},         {"LeakyRelu", -kInf, -kInf},
      {"Sign", kNaN, kNaN},   {"Sign", -0.0, 0},         {"Abs", -kInf, kInf},       {"Erf", kInf, 1},
      {"Floor", kNaN, kNaN},  {"Round", 0.5, 0},         {"Round", 1.5, 2},          {"Round", 2.5, 2},
      {"Round", -2.5, -2},    {"Ceil", -0.5, -0.0},      {"Neg", kNaN, kNaN},
  };
  for (const EdgeCase& c : cases) {
    SCOPED_TRACE(c.op + "(" + std::to_string(c.x) + ")");
    for (DType t : {DType::Float32, DType::Float64}) {
      Tensor x(DType::Float64, {1});
      x.data<double>()[0] = c.x;
      Tensor xt, expected, e64(DType::Float64, {1});
      e64.data<double>()[0] = c.expected;
      cast_tensor(x, t, xt);
      cast_tensor(e64, t, expected);
      Tensor y = forward_of(node_spec(c.op), {xt});
      EXPECT_TRUE(tensors_close(expected, y, 1e-6, 0));
      if (c.expected == 0 && y.defined()) {
        EXPECT_EQ(std::signbit(c.expected), std::signbit(y.get_as_double(0))) << "sign of zero";
      }
    }
  }
}

TEST(UnaryForward, Float32IsComputedInFloat32) {
  // volatile: the expected values must come from the same runtime libm calls, not compile-time folding.
  volatile float xs[] = {0.1f, 1.3f, -2.7f, 17.f};
  for (float v : xs) {
    Tensor x = floats({1}, {v});
    EXPECT_EQ(std::exp(v), forward_of(node_spec("Exp"), {x}).data<float>()[0]);
    EXPECT_EQ(std::tanh(v), forward_of(node_spec("Tanh"), {x}).data<float>()[0]);
    EXPECT_EQ(std::erf(v), forward_of(node_spec("Erf"), {x}).data<float>()[0]);
    EXPECT_EQ(1.0f / (1.0f + std::exp(-v)), forward_of(node_spec("Sigmoid"), {x}).data<float>()[0]);
  }
}

TEST(UnaryGradientEdges, StayIeeeAtTheSingularities) {
  // d sqrt at 0 is +inf; d log at 0 is +inf; d reciprocal at 0 is -inf.
  EXPECT_TRUE(tensors_close(doubles({1}, {kInf}), gradients_of(node_spec("Sqrt"), {doubles({1}, {0})})[0]));
  EXPECT_TRUE(tensors_close(doubles({1}, {kInf}), gradients_of(node_spec("Log"), {doubles({1}, {0})})[0]));
  EXPECT_TRUE(tensors_close(doubles({1}, {-kInf}), gradients_of(node_spec("Reciprocal"), {doubles({1}, {0})})[0]));
  // Relu and Abs have subgradient 0 at 0, as in PyTorch.
  EXPECT_TRUE(tensors_close(doubles({1}, {0}), gradients_of(node_spec("Relu"), {doubles({1}, {0})})[0]));
  EXPECT_TRUE(tensors_close(doubles({1}, {0}), gradients_of(node_spec("Abs"), {doubles({1}, {0})})[0]));
}

TEST(UnaryForward, RejectsTypesTheOpDoesNotDefine) {
  EXPECT_FALSE(try_run_node(node_spec("Log"), {Tensor::from<int32_t>({1}, {1})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Neg"), {Tensor::from<uint8_t>({1}, {1})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Abs"), {Tensor::from<bool>({1}, {true})}).is_ok());
}

TEST(UnaryForward, IntegerNegAbsReluSignWrapLikeTwosComplement) {
  Tensor x = Tensor::from<int8_t>({4}, {-128, -3, 0, 7});
  EXPECT_TRUE(tensors_close(Tensor::from<int8_t>({4}, {-128, 3, 0, -7}), forward_of(node_spec("Neg"), {x})));
  EXPECT_TRUE(tensors_close(Tensor::from<int8_t>({4}, {-128, 3, 0, 7}), forward_of(node_spec("Abs"), {x})));
  EXPECT_TRUE(tensors_close(Tensor::from<int8_t>({4}, {0, 0, 0, 7}), forward_of(node_spec("Relu"), {x})));
  EXPECT_TRUE(tensors_close(Tensor::from<int8_t>({4}, {-1, -1, 0, 1}), forward_of(node_spec("Sign"), {x})));
  Tensor u = Tensor::from<uint16_t>({2}, {0, 9});
  EXPECT_TRUE(tensors_close(Tensor::from<uint16_t>({2}, {0, 1}), forward_of(node_spec("Sign"), {u})));
}

TEST(IdentityForward, CopiesAnyType) {
  Tensor b = Tensor::from<bool>({3}, {true, false, true});
  EXPECT_TRUE(tensors_close(b, forward_of(node_spec("Identity"), {b})));
}

// ---------------------------------------------------------------------------------------------------
// Binary forward semantics

TEST(BinaryForward, FloatDivisionFollowsIeee) {
  Tensor a = doubles({4}, {1, -1, 0, kInf});
  Tensor b = doubles({4}, {0, 0, 0, kInf});
  EXPECT_TRUE(tensors_close(doubles({4}, {kInf, -kInf, kNaN, kNaN}), forward_of(node_spec("Div"), {a, b})));
}

TEST(BinaryForward, IntegerDivisionTruncatesTowardZero) {
  Tensor a = Tensor::from<int32_t>({4}, {7, -7, 7, std::numeric_limits<int32_t>::min()});
  Tensor b = Tensor::from<int32_t>({4}, {2, 2, -2, -1});
  EXPECT_TRUE(tensors_close(Tensor::from<int32_t>({4}, {3, -3, -3, std::numeric_limits<int32_t>::min()}),
                            forward_of(node_spec("Div"), {a, b})));
}

TEST(BinaryForward, IntegerDivisionByZeroIsAnErrorNotATrap) {
  auto r = try_run_node(node_spec("Div"), {Tensor::from<int64_t>({2}, {1, 2}), Tensor::from<int64_t>({2}, {1, 0})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("division by zero"), std::string::npos) << r.message();
}

TEST(Activations, GeluRefusesAnUnknownApproximateByName) {
  auto r = try_run_node(node_spec("Gelu", {{"approximate", attr_string("fast")}}), {floats({2}, {1, 2})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("unknown approximate 'fast'"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("Gelu_0"), std::string::npos) << "the error names the node: " << r.message();
}

TEST(BinaryForward, IntegerArithmeticWrapsAround) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  EXPECT_TRUE(tensors_close(Tensor::from<int32_t>({1}, {std::numeric_limits<int32_t>::min()}),
                            forward_of(node_spec("Add"), {Tensor::from<int32_t>({1}, {max}), Tensor::scalar<int32_t>(1)})));
  EXPECT_TRUE(tensors_close(Tensor::from<uint8_t>({2}, {44, 156}),
                            forward_of(node_spec("Add"), {Tensor::from<uint8_t>({2}, {200, 100}),
                                                         Tensor::from<uint8_t>({2}, {100, 56})})));
  EXPECT_TRUE(tensors_close(Tensor::from<uint16_t>({1}, {1}),
                            forward_of(node_spec("Mul"), {Tensor::from<uint16_t>({1}, {65535}),
                                                         Tensor::from<uint16_t>({1}, {65535})})));
  EXPECT_TRUE(tensors_close(Tensor::from<uint8_t>({1}, {255}),
                            forward_of(node_spec("Sub"), {Tensor::from<uint8_t>({1}, {0}), Tensor::from<uint8_t>({1}, {1})})));
}

TEST(BinaryForward, RejectsMismatchedTypesAndShapes) {
  EXPECT_FALSE(try_run_node(node_spec("Add"), {doubles({2}, {1, 2}), floats({2}, {1, 2})}).is_ok());
  auto r = try_run_node(node_spec("Mul"), {doubles({2}, {1, 2}), doubles({3}, {1, 2, 3})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("Mul_0"), std::string::npos) << "the error names the node: " << r.message();
  EXPECT_FALSE(try_run_node(node_spec("Add"), {Tensor::from<bool>({1}, {true}), Tensor::from<bool>({1}, {true})}).is_ok());
}

TEST(PowForward, FloatSpecialValues) {
  Tensor b = doubles({5}, {0, 0, -8, -2, kInf});
  Tensor e = doubles({5}, {-1, 0, 1.0 / 3, 2, -1});
  EXPECT_TRUE(tensors_close(doubles({5}, {kInf, 1, kNaN, 4, 0}), forward_of(node_spec("Pow"), {b, e})));
}

TEST(PowForward, ScalarExponentFastPathsMatchStdPow) {
  Tensor b = floats({4}, {0.0f, 1.5f, 3.0f, 7.25f});
  for (float e : {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, -2.0f, 1.3f}) {
    Tensor y = forward_of(node_spec("Pow"), {b, Tensor::scalar(e)});
    for (int64_t i = 0; i < b.numel(); ++i)
      EXPECT_FLOAT_EQ(std::pow(b.data<float>()[i], e), y.data<float>()[i]) << "e = " << e << ", i = " << i;
  }
}

TEST(PowForward, FloatBaseTakesAnyNumericExponent) {
  Tensor b = floats({3}, {1, 2, 3});
  EXPECT_TRUE(tensors_close(floats({3}, {1, 4, 27}), forward_of(node_spec("Pow"), {b, Tensor::from<int64_t>({3}, {4, 2, 3})})));
  EXPECT_TRUE(tensors_close(floats({3}, {1, 4, 9}), forward_of(node_spec("Pow"), {b, Tensor::scalar<uint32_t>(2)})));
  EXPECT_TRUE(tensors_close(floats({3}, {1, 0.5f, 1.0f / 3}), forward_of(node_spec("Pow"), {b, Tensor::scalar(-1.0)})));
}

TEST(PowForward, IntegerBaseStaysInteger) {
  Tensor b = Tensor::from<int64_t>({5}, {2, 2, -1, 3, 0});
  Tensor e = Tensor::from<int64_t>({5}, {10, -1, -3, 0, -2});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({5}, {1024, 0, -1, 1, 0}), forward_of(node_spec("Pow"), {b, e})));
  // A float exponent is evaluated in double precision and truncated back, like numpy's astype.
  Tensor bi = Tensor::from<int32_t>({3}, {1, 2, 3});
  EXPECT_TRUE(tensors_close(Tensor::from<int32_t>({3}, {1, 2, 5}),
                            forward_of(node_spec("Pow"), {bi, Tensor::scalar(1.5f)})));
}

TEST(PowForward, RejectsBaseTypesOnnxDoesNotDefine) {
  EXPECT_FALSE(try_run_node(node_spec("Pow"), {Tensor::from<uint8_t>({1}, {2}), Tensor::scalar(2.0f)}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Pow"), {floats({1}, {2}), Tensor::from<bool>({1}, {true})}).is_ok());
}

// ---------------------------------------------------------------------------------------------------
// The steady state allocates nothing: kernels reuse their outputs, gradients and scratch slots.

TEST(ElementwiseSteadyState, RepeatedPassesAllocateNothing) {
  Rng rng(1);
  // Positive values: no NaN or Inf, so the executor's non-finite reports stay out of the count.
  const std::vector<Tensor> inputs = {random_tensor(rng, {4, 3, 5}, 0.5, 2), random_tensor(rng, {3, 1}, 0.5, 2)};
  for (const char* op : {"Add", "Div", "Pow", "Max", "Mean"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(0u, allocations_after_first_pass(node_spec(op), inputs, BackwardFrom::FirstOutput, /*extra_passes=*/2));
  }
}

// ---------------------------------------------------------------------------------------------------
// The activations models export: known values, and interval transfers that enclose the kernel on boxes that
// straddle their kinks, minima and saturations (Mish is opset 18: the conformance data has no case for it).

TEST(Activations, MatchKnownValues) {
  auto one = [](const NodeSpec& spec, float x) {
    return forward_of(spec, {Tensor::scalar<float>(x)}).get_as_double(0);
  };
  EXPECT_DOUBLE_EQ(one(node_spec("HardSwish"), -1.5f), -0.375);
  EXPECT_DOUBLE_EQ(one(node_spec("HardSwish"), 4.f), 4.0);
  EXPECT_DOUBLE_EQ(one(node_spec("HardSwish"), -4.f), 0.0);
  EXPECT_NEAR(one(node_spec("HardSigmoid"), 1.f), 0.7, 1e-7);
  EXPECT_NEAR(one(node_spec("Mish"), 1.f), 0.8650983882673103, 1e-6);
  EXPECT_NEAR(one(node_spec("Mish"), -1.192431f), -0.3088434, 1e-6);
  EXPECT_TRUE(std::isnan(one(node_spec("Mish"), -INFINITY)));  // −inf·tanh(0), as PyTorch
  // Gelu as PyTorch 1.13's torch.nn.functional.gelu gives it in float32, at its minimum and at large |x|.
  for (const char* form : {"none", "tanh"}) {
    SCOPED_TRACE(form);
    const NodeSpec gelu = node_spec("Gelu", {{"approximate", attr_string(form)}});
    EXPECT_NEAR(one(gelu, -0.75f), std::string(form) == "tanh" ? -0.17003947496414185 : -0.16997046768665314, 1e-7);
    EXPECT_NEAR(one(gelu, 1.f), std::string(form) == "tanh" ? 0.8411920070648193 : 0.8413447141647339, 1e-7);
    EXPECT_EQ(one(gelu, -100.f), 0.0);
    EXPECT_EQ(one(gelu, -1e30f), 0.0);
    EXPECT_EQ(one(gelu, 1e30f), static_cast<double>(1e30f));
    EXPECT_EQ(one(gelu, INFINITY), INFINITY);
    EXPECT_TRUE(std::isnan(one(gelu, -INFINITY)));  // −inf·0, as PyTorch
    EXPECT_TRUE(std::isnan(one(gelu, NAN)));
  }
  EXPECT_NEAR(one(node_spec("Elu"), -1.f), std::expm1(-1.0), 1e-7);
  EXPECT_NEAR(one(node_spec("Selu"), -1.f), 1.0507009873554805 * 1.6732632423543772 * std::expm1(-1.0), 1e-6);
  EXPECT_NEAR(one(node_spec("Celu", {{"alpha", attr_float(2)}}), -1.f), 2 * std::expm1(-0.5), 1e-7);
  EXPECT_DOUBLE_EQ(one(node_spec("ThresholdedRelu"), 1.f), 0.0);  // not above α = 1
  const Tensor prelu = forward_of(node_spec("PRelu"), {Tensor::from<float>(Shape{2}, {-2, 3}),
                                                       Tensor::from<float>(Shape{1}, {0.25f})});
  EXPECT_DOUBLE_EQ(prelu.get_as_double(0), -0.5);
  EXPECT_DOUBLE_EQ(prelu.get_as_double(1), 3.0);
}

TEST(Activations, IntervalTransfersEncloseTheKernel) {
  const Tensor x(DType::Float32, Shape{3, 4});
  const std::vector<Interval> boxes = {{-4, -1}, {-2, 0.5}, {-3.5, 3.5}, {-10, 10}, {2, 5}, {-kInf, -50}, {-kInf, kInf}};
  const NodeSpec specs[] = {node_spec("HardSwish"),
                            node_spec("HardSigmoid"),
                            node_spec("HardSigmoid", {{"alpha", attr_float(-0.5)}}),
                            node_spec("Mish"),
                            node_spec("Gelu"),
                            node_spec("Gelu", {{"approximate", attr_string("tanh")}}),
                            node_spec("Elu"),
                            node_spec("Selu"),
                            node_spec("Celu", {{"alpha", attr_float(0.5)}}),
                            node_spec("ThresholdedRelu"),
                            node_spec("ThresholdedRelu", {{"alpha", attr_float(-1)}})};
  uint64_t seed = 1;
  for (const NodeSpec& spec : specs)
    for (const Interval& box : boxes) {
      SCOPED_TRACE(spec.op_type + " on [" + std::to_string(box.lo) + ", " + std::to_string(box.hi) + "]");
      expect_bounds_sound(spec, {x}, {box}, seed++);
    }
  for (const Interval& box : boxes) {
    SCOPED_TRACE("PRelu on [" + std::to_string(box.lo) + ", " + std::to_string(box.hi) + "]");
    expect_bounds_sound(node_spec("PRelu"), {x, Tensor(DType::Float32, Shape{4})}, {box, {-0.5, 0.75}}, seed++);
  }
}

TEST(Activations, NonMonotoneTransfersAreTight) {
  auto hull = [](const NodeSpec& spec, Interval box) {
    const auto bounds = expect_bounds_sound(spec, {Tensor(DType::Float32, Shape{2})}, {box}, 9);
    return bounds.empty() ? Interval{} : bounds[0].hull();
  };
  const Interval swish = hull(node_spec("HardSwish"), {-4, 1});  // minimum −3/8 at −3/2, then up to 2/3
  EXPECT_NEAR(swish.lo, -0.375, 1e-5);
  EXPECT_NEAR(swish.hi, 2.0 / 3, 1e-5);
  const Interval mish = hull(node_spec("Mish"), {-3, 0});
  EXPECT_NEAR(mish.lo, -0.3088434, 1e-6);
  EXPECT_NEAR(mish.hi, 0.0, 1e-5);
  const Interval gelu = hull(node_spec("Gelu"), {-3, -0.5});  // minimum −0.16997 at −0.7518
  // 5e-6: the transfer widens absolutely for 1 + erf's cancellation (16·2⁻²⁴·|x|, |x| ≤ 3 here).
  EXPECT_NEAR(gelu.lo, -0.1699712, 5e-6);
  EXPECT_NEAR(gelu.hi, -0.0040497, 5e-6);  // Gelu(−3) = −3·Φ(−3)
  const Interval gelu_tanh = hull(node_spec("Gelu", {{"approximate", attr_string("tanh")}}), {-1, 0});
  EXPECT_NEAR(gelu_tanh.lo, -0.1700408, 5e-6);
  EXPECT_NEAR(gelu_tanh.hi, 0.0, 1e-5);
}

}  // namespace
}  // namespace grist
