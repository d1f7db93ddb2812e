// Logic family: comparisons, boolean ops, IsNaN/IsInf and Where (whose gradient is checked against finite
// differences), with broadcasting, every dtype class and error paths.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/op_test_util.h"

namespace grist {
namespace {

using testing::attr_int;
using testing::expect_gradient_matches;
using testing::node_spec;
using testing::NodeSpec;
using testing::random_tensor;
using testing::run_node;
using testing::tensors_close;
using testing::try_run_node;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor doubles(const Shape& shape, std::initializer_list<double> v) { return Tensor::from<double>(shape, v); }
Tensor bools(const Shape& shape, std::initializer_list<bool> v) { return Tensor::from<bool>(shape, v); }

Tensor forward_of(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  auto out = run_node(spec, inputs);
  return out.empty() ? Tensor() : out[0];
}

// ---------------------------------------------------------------------------------------------------
// Comparisons

TEST(Comparison, BroadcastsARowAgainstAMatrix) {
  Tensor a = doubles({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = doubles({3}, {2, 2, 6});
  EXPECT_TRUE(tensors_close(bools({2, 3}, {0, 1, 0, 0, 0, 1}), forward_of(node_spec("Equal"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 3}, {1, 0, 1, 0, 0, 0}), forward_of(node_spec("Less"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 3}, {1, 1, 1, 0, 0, 1}), forward_of(node_spec("LessOrEqual"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 3}, {0, 0, 0, 1, 1, 0}), forward_of(node_spec("Greater"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 3}, {0, 1, 0, 1, 1, 1}), forward_of(node_spec("GreaterOrEqual"), {a, b})));
}

TEST(Comparison, GeneralBroadcastOfColumnAndRow) {
  Tensor a = Tensor::from<int32_t>({3, 1}, {1, 2, 3});
  Tensor b = Tensor::from<int32_t>({1, 2}, {2, 3});
  EXPECT_TRUE(tensors_close(bools({3, 2}, {1, 1, 0, 1, 0, 0}), forward_of(node_spec("Less"), {a, b})));
}

TEST(Comparison, NaNComparesFalseEvenWithItself) {
  Tensor a = doubles({2}, {kNaN, kNaN});
  Tensor b = doubles({2}, {kNaN, 1});
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(tensors_close(bools({2}, {0, 0}), forward_of(node_spec(op), {a, b})));
  }
}

TEST(Comparison, IntegerTypesCompareExactly) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  Tensor a = Tensor::from<int64_t>({2}, {big, big - 1});
  Tensor b = Tensor::from<int64_t>({2}, {big, big});
  EXPECT_TRUE(tensors_close(bools({2}, {1, 0}), forward_of(node_spec("Equal"), {a, b})));
  Tensor u = Tensor::from<uint8_t>({2}, {255, 0});
  Tensor v = Tensor::from<uint8_t>({2}, {0, 255});
  EXPECT_TRUE(tensors_close(bools({2}, {1, 0}), forward_of(node_spec("Greater"), {u, v})));
}

TEST(Comparison, EqualAcceptsBoolButOrderingDoesNot) {
  Tensor a = bools({2}, {true, false});
  Tensor b = bools({2}, {true, true});
  EXPECT_TRUE(tensors_close(bools({2}, {1, 0}), forward_of(node_spec("Equal"), {a, b})));
  EXPECT_FALSE(try_run_node(node_spec("Less"), {a, b}).is_ok());
}

TEST(Comparison, RejectsMismatchedTypesAndShapes) {
  EXPECT_FALSE(try_run_node(node_spec("Equal"), {doubles({1}, {1}), Tensor::from<float>({1}, {1})}).is_ok());
  auto r = try_run_node(node_spec("Greater"), {doubles({2}, {1, 2}), doubles({3}, {1, 2, 3})});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("Greater_0"), std::string::npos) << "the error names the node: " << r.message();
}

// ---------------------------------------------------------------------------------------------------
// Boolean logic

TEST(BooleanLogic, TruthTablesWithBroadcasting) {
  Tensor a = bools({2, 2}, {0, 0, 1, 1});
  Tensor b = bools({2}, {0, 1});
  EXPECT_TRUE(tensors_close(bools({2, 2}, {0, 0, 0, 1}), forward_of(node_spec("And"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 2}, {0, 1, 1, 1}), forward_of(node_spec("Or"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 2}, {0, 1, 1, 0}), forward_of(node_spec("Xor"), {a, b})));
  EXPECT_TRUE(tensors_close(bools({2, 2}, {1, 1, 0, 0}), forward_of(node_spec("Not"), {a})));
}

TEST(BooleanLogic, RejectsNonBoolInputs) {
  Tensor x = Tensor::from<int32_t>({1}, {1});
  EXPECT_FALSE(try_run_node(node_spec("And"), {x, x}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Not"), {x}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Or"), {bools({1}, {true}), x}).is_ok());
}

// ---------------------------------------------------------------------------------------------------
// IsNaN / IsInf

TEST(IsNaN, FlagsOnlyNaN) {
  Tensor x = Tensor::from<float>({4}, {1.0f, std::nanf(""), std::numeric_limits<float>::infinity(), -0.0f});
  EXPECT_TRUE(tensors_close(bools({4}, {0, 1, 0, 0}), forward_of(node_spec("IsNaN"), {x})));
  EXPECT_FALSE(try_run_node(node_spec("IsNaN"), {Tensor::from<int32_t>({1}, {1})}).is_ok());
}

TEST(IsInf, DetectAttributesSelectTheSign) {
  Tensor x = doubles({4}, {kInf, -kInf, kNaN, 1e308});
  EXPECT_TRUE(tensors_close(bools({4}, {1, 1, 0, 0}), forward_of(node_spec("IsInf"), {x})));
  EXPECT_TRUE(tensors_close(bools({4}, {1, 0, 0, 0}),
                            forward_of(node_spec("IsInf", {{"detect_negative", attr_int(0)}}), {x})));
  EXPECT_TRUE(tensors_close(bools({4}, {0, 1, 0, 0}),
                            forward_of(node_spec("IsInf", {{"detect_positive", attr_int(0)}}), {x})));
  EXPECT_TRUE(tensors_close(bools({4}, {0, 0, 0, 0}),
                            forward_of(node_spec("IsInf", {{"detect_positive", attr_int(0)}, {"detect_negative", attr_int(0)}}),
                                       {x})));
}

// ---------------------------------------------------------------------------------------------------
// Where

TEST(Where, SelectsWithThreeWayBroadcasting) {
  Tensor cond = bools({2, 1}, {true, false});
  Tensor x = Tensor::from<int64_t>({3}, {1, 2, 3});
  Tensor y = Tensor::from<int64_t>({}, {9});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({2, 3}, {1, 2, 3, 9, 9, 9}), forward_of(node_spec("Where"), {cond, x, y})));
}

TEST(Where, KeepsNaNOnlyWhereItIsSelected) {
  Tensor cond = bools({2}, {true, false});
  Tensor x = doubles({2}, {kNaN, kNaN});
  Tensor y = doubles({2}, {0, 5});
  EXPECT_TRUE(tensors_close(doubles({2}, {kNaN, 5}), forward_of(node_spec("Where"), {cond, x, y})));
}

TEST(Where, GradientMatchesFiniteDifferences) {
  Rng rng(8);
  Tensor cond_same = bools({2, 3}, {1, 0, 1, 0, 0, 1});
  expect_gradient_matches(node_spec("Where"), {cond_same, random_tensor(rng, {2, 3}), random_tensor(rng, {2, 3})});
  // X and Y broadcast differently from the condition: their gradients are summed back to their shapes.
  Tensor cond_col = bools({2, 1}, {1, 0});
  expect_gradient_matches(node_spec("Where"), {cond_col, random_tensor(rng, {3}), random_tensor(rng, {2, 3})});
  expect_gradient_matches(node_spec("Where"), {cond_same, random_tensor(rng, {}), random_tensor(rng, {2, 1})});
}

TEST(Where, RejectsNonBoolConditionAndMismatchedBranches) {
  Tensor x = doubles({2}, {1, 2});
  EXPECT_FALSE(try_run_node(node_spec("Where"), {Tensor::from<int32_t>({2}, {1, 0}), x, x}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Where"), {bools({2}, {1, 0}), x, Tensor::from<float>({2}, {1, 2})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Where"), {bools({3}, {1, 0, 1}), x, x}).is_ok());
}

}  // namespace
}  // namespace grist
