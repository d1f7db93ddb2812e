// Reduce*, ArgMax/ArgMin and CumSum: forward semantics (axes forms, keepdims, IEEE edge cases), gradients
// against finite differences, the gradient conventions that finite differences cannot pin (ties, zeros),
// and CumSum's interval transfer against float32 summation.
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/intervals.h"
#include "support/op_test_util.h"

namespace grist {
namespace {

using testing::allocations_after_first_pass;
using testing::BackwardFrom;
using testing::attr_int;
using testing::attr_ints;
using testing::expect_gradient_matches;
using testing::node_spec;
using testing::NodeSpec;
using testing::random_tensor;
using testing::run_node;
using testing::tensors_close;
using testing::try_run_node;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor axes_tensor(std::vector<int64_t> axes) {
  Tensor t(DType::Int64, Shape{static_cast<int64_t>(axes.size())});
  std::copy(axes.begin(), axes.end(), t.data<int64_t>());
  return t;
}

// A Reduce* node with axes as an attribute (opset 11 form) and the given keepdims.
NodeSpec reduce_spec(const std::string& op, std::vector<int64_t> axes, int64_t keepdims = 1) {
  NodeSpec spec = node_spec(op, {{"keepdims", attr_int(keepdims)}});
  spec.opset = 11;
  if (!axes.empty()) spec.attributes.push_back({"axes", attr_ints(std::move(axes))});
  return spec;
}

// The gradient of Σ y with respect to input 0, as the executor computes it.
Tensor gradient_of_sum(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  Graph g = testing::make_single_node_graph(spec, inputs);
  auto ex = Executor::create(g);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  if (!ex) return {};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId id = g.find_value("in" + std::to_string(i));
    if (inputs[i].defined() && g.value(id).kind == ValueKind::Input) {
      EXPECT_TRUE(ex->set_input(id, inputs[i]).is_ok());
    }
  }
  EXPECT_TRUE(ex->forward().is_ok());
  auto st = ex->backward(g.outputs[0]);
  EXPECT_TRUE(st.is_ok()) << st.message();
  const Tensor* grad = ex->grad(g.find_value("in0"));
  EXPECT_NE(grad, nullptr);
  return grad ? *grad : Tensor();
}

const Tensor kMatrix = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});

TEST(ReduceSum, AxesAsInputFromOpset13WithKeepdims) {
  NodeSpec spec = node_spec("ReduceSum", {{"keepdims", attr_int(1)}});
  auto y = run_node(spec, {kMatrix, axes_tensor({1})});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 1}, {6, 15}), y[0]));
}

TEST(ReduceSum, AxesAsAttributeBeforeOpset13WithoutKeepdims) {
  auto y = run_node(reduce_spec("ReduceSum", {0}, 0), {kMatrix});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{3}, {5, 7, 9}), y[0]));
}

TEST(ReduceSum, NegativeAxisCountsFromTheBack) {
  auto y = run_node(reduce_spec("ReduceSum", {-1}, 0), {kMatrix});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2}, {6, 15}), y[0]));
}

TEST(ReduceSum, EmptyAxesReduceEverything) {
  NodeSpec spec = node_spec("ReduceSum", {{"keepdims", attr_int(0)}});
  auto y = run_node(spec, {kMatrix, axes_tensor({})});
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(21), y[0]));
  auto omitted = run_node(spec, {kMatrix});
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(21), omitted[0]));
}

TEST(ReduceSum, NoopWithEmptyAxesIsIdentity) {
  NodeSpec spec = node_spec("ReduceSum", {{"noop_with_empty_axes", attr_int(1)}});
  auto y = run_node(spec, {kMatrix, axes_tensor({})});
  EXPECT_TRUE(tensors_close(kMatrix, y[0]));
}

TEST(ReduceSum, Float32AccumulationOverflowsToInf) {
  auto y = run_node(reduce_spec("ReduceSum", {}, 0), {Tensor::from<float>(Shape{3}, {3e38f, 3e38f, -3e38f})});
  EXPECT_EQ(y[0].data<float>()[0], kInf);
}

TEST(ReduceSum, IntegerInputsStayIntegers) {
  auto y = run_node(reduce_spec("ReduceSum", {1}, 0), {Tensor::from<int32_t>(Shape{2, 2}, {1, 2, 3, 4})});
  EXPECT_TRUE(tensors_close(Tensor::from<int32_t>(Shape{2}, {3, 7}), y[0]));
}

TEST(ReduceMean, MeanOfAnEmptyGroupIsNaN) {
  auto y = run_node(reduce_spec("ReduceMean", {0}, 0), {Tensor(DType::Float32, Shape{0, 2})});
  ASSERT_EQ(y[0].shape(), (Shape{2}));
  EXPECT_TRUE(std::isnan(y[0].data<float>()[0]));
}

TEST(ReduceMax, PropagatesNaN) {
  auto y = run_node(reduce_spec("ReduceMax", {1}, 0), {Tensor::from<float>(Shape{2, 2}, {kNaN, 1, 2, 3})});
  EXPECT_TRUE(std::isnan(y[0].data<float>()[0]));
  EXPECT_EQ(y[0].data<float>()[1], 3.0f);
}

TEST(ReduceLogSum, LogOfZeroSumIsMinusInf) {
  auto y = run_node(reduce_spec("ReduceLogSum", {}, 0), {Tensor::from<float>(Shape{2}, {1, -1})});
  EXPECT_EQ(y[0].data<float>()[0], -kInf);
}

TEST(ReduceLogSumExp, StableForLargeInputs) {
  auto y = run_node(reduce_spec("ReduceLogSumExp", {}, 0), {Tensor::from<float>(Shape{2}, {1000, 1000})});
  EXPECT_FLOAT_EQ(y[0].data<float>()[0], 1000.0f + std::log(2.0f));
}

TEST(ReduceLogSumExp, InfiniteMaximumIsNotSubtracted) {
  auto y = run_node(reduce_spec("ReduceLogSumExp", {1}, 0),
                    {Tensor::from<float>(Shape{2, 2}, {-kInf, -kInf, kInf, 1})});
  EXPECT_EQ(y[0].data<float>()[0], -kInf);
  EXPECT_EQ(y[0].data<float>()[1], kInf);
}

TEST(Reduce, RejectsOutOfRangeAndRepeatedAxes) {
  EXPECT_FALSE(try_run_node(reduce_spec("ReduceMean", {2}), {kMatrix}).is_ok());
  EXPECT_FALSE(try_run_node(reduce_spec("ReduceMean", {1, -1}), {kMatrix}).is_ok());
  NodeSpec spec = node_spec("ReduceSum", {});
  EXPECT_FALSE(try_run_node(spec, {kMatrix, axes_tensor({0, 1, 0})}).is_ok());
}

TEST(Reduce, RejectsIntegerInputForLogarithmicOps) {
  EXPECT_FALSE(try_run_node(reduce_spec("ReduceLogSumExp", {}), {Tensor::from<int32_t>(Shape{2}, {1, 2})}).is_ok());
}

// ---- Gradients ------------------------------------------------------------------------------

struct AxesCase {
  std::vector<int64_t> axes;
  int64_t keepdims;
};
const AxesCase kAxesCases[] = {{{1}, 1}, {{1}, 0}, {{0, 2}, 1}, {{-1}, 0}, {{}, 0}, {{}, 1}, {{0, 1, 2}, 0}};

// Values in ±[0.2, 1.2): away from the kinks of |x| and from ties.
Tensor values_away_from_zero(Rng& rng, const Shape& shape) {
  Tensor t = random_tensor(rng, shape, 0.2, 1.2);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (rng.uniform() < 0.5) t.data<double>()[i] = -t.data<double>()[i];
  return t;
}

void check_gradient_for_all_axes(const std::string& op, double lo, double hi) {
  Rng rng(11);
  for (const auto& c : kAxesCases) {
    SCOPED_TRACE(::testing::Message() << op << " axes.size=" << c.axes.size() << " keepdims=" << c.keepdims);
    Tensor x = lo < 0 ? values_away_from_zero(rng, Shape{2, 3, 4}) : random_tensor(rng, Shape{2, 3, 4}, lo, hi);
    expect_gradient_matches(reduce_spec(op, c.axes, c.keepdims), {x});
  }
}

TEST(ReduceGradient, Sum) { check_gradient_for_all_axes("ReduceSum", -1, 1); }
TEST(ReduceGradient, Mean) { check_gradient_for_all_axes("ReduceMean", -1, 1); }
TEST(ReduceGradient, SumSquare) { check_gradient_for_all_axes("ReduceSumSquare", -1, 1); }
TEST(ReduceGradient, L1) { check_gradient_for_all_axes("ReduceL1", -1, 1); }
TEST(ReduceGradient, L2) { check_gradient_for_all_axes("ReduceL2", -1, 1); }
TEST(ReduceGradient, LogSum) { check_gradient_for_all_axes("ReduceLogSum", 0.5, 2); }
TEST(ReduceGradient, LogSumExp) { check_gradient_for_all_axes("ReduceLogSumExp", -3, 3); }
TEST(ReduceGradient, Prod) { check_gradient_for_all_axes("ReduceProd", 0.5, 1.5); }
TEST(ReduceGradient, Max) { check_gradient_for_all_axes("ReduceMax", -1, 1); }
TEST(ReduceGradient, Min) { check_gradient_for_all_axes("ReduceMin", -1, 1); }

TEST(ReduceGradient, SumWithAxesInput) {
  Rng rng(3);
  NodeSpec spec = node_spec("ReduceSum", {{"keepdims", attr_int(0)}});
  spec.constant_inputs = {1};
  expect_gradient_matches(spec, {random_tensor(rng, Shape{3, 4}), axes_tensor({0})});
}

TEST(ReduceGradient, ProdIsExactWithZerosInTheGroup) {
  // One zero: only the zero gets a gradient (the product of the others). Two zeros: all gradients are 0.
  const Tensor x = Tensor::from<double>(Shape{2, 3}, {2, 0, 3, 0, 0, 5});
  expect_gradient_matches(reduce_spec("ReduceProd", {1}), {x});
  auto g = gradient_of_sum(reduce_spec("ReduceProd", {1}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{2, 3}, {0, 6, 0, 0, 0, 0}), g));
}

TEST(ReduceGradient, MaxSplitsTiesEvenlyLikeTorchAmax) {
  auto g = gradient_of_sum(reduce_spec("ReduceMax", {1}), {Tensor::from<double>(Shape{1, 4}, {1, 3, 3, 2})});
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{1, 4}, {0, 0.5, 0.5, 0}), g));
}

TEST(ReduceGradient, L2IsZeroAtZeroNormLikeTorch) {
  auto g = gradient_of_sum(reduce_spec("ReduceL2", {}), {Tensor::from<double>(Shape{2}, {0, 0})});
  EXPECT_TRUE(tensors_close(Tensor::from<double>(Shape{2}, {0, 0}), g));
}

TEST(ReduceGradient, LogSumOfZeroSumIsInfinite) {
  auto g = gradient_of_sum(reduce_spec("ReduceLogSum", {}), {Tensor::from<double>(Shape{2}, {1, -1})});
  EXPECT_EQ(g.data<double>()[0], std::numeric_limits<double>::infinity());
}

TEST(ReduceGradient, NoopWithEmptyAxesPassesGradientThrough) {
  NodeSpec spec = node_spec("ReduceSum", {{"noop_with_empty_axes", attr_int(1)}});
  Rng rng(5);
  expect_gradient_matches(spec, {random_tensor(rng, Shape{2, 3})});
}

// ---- ArgMax / ArgMin ------------------------------------------------------------------------

TEST(ArgMax, AlongAxisWithAndWithoutKeepdims) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {1, 5, 2, 7, 0, 7});
  auto kept = run_node(node_spec("ArgMax", {{"axis", attr_int(1)}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{2, 1}, {1, 0}), kept[0]));
  auto dropped = run_node(node_spec("ArgMax", {{"axis", attr_int(0)}, {"keepdims", attr_int(0)}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{3}, {1, 0, 1}), dropped[0]));
}

TEST(ArgMax, SelectLastIndexBreaksTiesToTheLast) {
  const Tensor x = Tensor::from<float>(Shape{1, 3}, {7, 0, 7});
  auto y = run_node(node_spec("ArgMax", {{"axis", attr_int(-1)}, {"select_last_index", attr_int(1)}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{1, 1}, {2}), y[0]));
}

TEST(ArgMax, NaNCountsAsTheMaximumAndTheMinimum) {
  const Tensor x = Tensor::from<float>(Shape{4}, {1, kNaN, 9, -9});
  EXPECT_EQ(run_node(node_spec("ArgMax", {}), {x})[0].data<int64_t>()[0], 1);
  EXPECT_EQ(run_node(node_spec("ArgMin", {}), {x})[0].data<int64_t>()[0], 1);
}

TEST(ArgMin, IntegerInputAndSelectLastIndex) {
  const Tensor x = Tensor::from<int32_t>(Shape{2, 2}, {3, 3, 4, 1});
  auto first = run_node(node_spec("ArgMin", {{"axis", attr_int(1)}, {"keepdims", attr_int(0)}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{2}, {0, 1}), first[0]));
  auto last = run_node(
      node_spec("ArgMin", {{"axis", attr_int(1)}, {"keepdims", attr_int(0)}, {"select_last_index", attr_int(1)}}),
      {x});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{2}, {1, 1}), last[0]));
}

TEST(ArgMax, RejectsBadAxisAndEmptyAxis) {
  EXPECT_FALSE(try_run_node(node_spec("ArgMax", {{"axis", attr_int(2)}}), {kMatrix}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("ArgMax", {{"axis", attr_int(0)}}), {Tensor(DType::Float32, Shape{0, 2})}).is_ok());
}

// ---- CumSum ---------------------------------------------------------------------------------

NodeSpec cumsum_spec(int64_t exclusive, int64_t reverse) {
  NodeSpec spec = node_spec("CumSum", {{"exclusive", attr_int(exclusive)}, {"reverse", attr_int(reverse)}});
  spec.constant_inputs = {1};
  return spec;
}

TEST(CumSum, ExclusiveAndReverseAlongAnAxisInput) {
  const Tensor axis = Tensor::scalar<int32_t>(1);
  auto y = [&](int64_t e, int64_t r) { return run_node(cumsum_spec(e, r), {kMatrix, axis})[0]; };
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 3}, {1, 3, 6, 4, 9, 15}), y(0, 0)));
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 3}, {0, 1, 3, 0, 4, 9}), y(1, 0)));
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 3}, {6, 5, 3, 15, 11, 6}), y(0, 1)));
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 3}, {5, 3, 0, 11, 6, 0}), y(1, 1)));
  // Axis 0 given as a negative int64, on integers.
  const Tensor ints = Tensor::from<int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>(Shape{2, 3}, {1, 2, 3, 5, 7, 9}),
                            run_node(cumsum_spec(0, 0), {ints, axes_tensor({-2})})[0]));
}

TEST(CumSum, Float32SumsOverflowToInfinity) {
  const Tensor x = Tensor::from<float>(Shape{3}, {3e38f, 3e38f, -3e38f});
  auto y = run_node(cumsum_spec(0, 0), {x, Tensor::scalar<int64_t>(0)});
  EXPECT_EQ(y[0].data<float>()[1], kInf);
  EXPECT_EQ(y[0].data<float>()[2], kInf);
}

TEST(CumSum, RejectsBadAxis) {
  EXPECT_FALSE(try_run_node(cumsum_spec(0, 0), {kMatrix, Tensor::scalar<int64_t>(2)}).is_ok());
  EXPECT_FALSE(try_run_node(cumsum_spec(0, 0), {kMatrix, axes_tensor({0, 1})}).is_ok());
  EXPECT_FALSE(try_run_node(cumsum_spec(0, 0), {kMatrix, Tensor::scalar<float>(0)}).is_ok());
}

TEST(CumSumGradient, IsTheCumSumOfTheGradientTheOtherWay) {
  Rng rng(21);
  for (int64_t e : {0, 1})
    for (int64_t r : {0, 1})
      for (int64_t axis : {0, 1, -1}) {
        SCOPED_TRACE(::testing::Message() << "exclusive " << e << " reverse " << r << " axis " << axis);
        expect_gradient_matches(cumsum_spec(e, r), {random_tensor(rng, Shape{3, 4, 2}), axes_tensor({axis})});
      }
}

// The analysis's bounds of CumSum along `axis` for x in `box` (per element when `per_element`), checked to
// hold the float32 kernel's outputs (testing::expect_bounds_sound).
IntervalTensor expect_cumsum_bounds_sound(const NodeSpec& spec, const Shape& shape, int64_t axis, Interval box,
                                          bool per_element) {
  auto bounds = testing::expect_bounds_sound(
      spec, {Tensor(DType::Float32, shape), Tensor::scalar<int64_t>(axis)}, {box, {}}, 22,
      per_element ? testing::BoxLayout::PerElement : testing::BoxLayout::OneInterval);
  return bounds.empty() ? IntervalTensor{} : bounds[0];
}

TEST(CumSumBounds, EncloseFloat32RunningSums) {
  // 0.1f added 4000 times drifts far from 4000·0.1f in float32: the γ_n widening covers it.
  const float tenth = 0.1f;
  const IntervalTensor drift = expect_cumsum_bounds_sound(cumsum_spec(0, 0), {1, 4000}, 1, {tenth, tenth}, true);
  EXPECT_LE(drift.hi_at(3999) - drift.lo_at(3999), 1.0);
  for (int64_t e : {0, 1})
    for (int64_t r : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "exclusive " << e << " reverse " << r);
      const IntervalTensor b = expect_cumsum_bounds_sound(cumsum_spec(e, r), {3, 50}, 1, {-1, 3}, true);
      // The running sum of k values grows to [−k, 3k], a little wider for rounding.
      const int64_t last = r ? 0 : 49;
      EXPECT_LE(b.hi_at(last), (e ? 49 : 50) * 3 * 1.0001);
      EXPECT_GE(b.hi_at(last), (e ? 49 : 50) * 3);
      EXPECT_FALSE(b.may_be_nan);
    }
  // One interval for a large input, along the axis of size 4: each output sums at most 4 terms.
  const IntervalTensor large = expect_cumsum_bounds_sound(cumsum_spec(0, 0), {4, 2000}, 0, {0, 1}, false);
  EXPECT_LE(large.hull().hi, 4.001);
  EXPECT_GE(large.hull().lo, 0);
  // Sums that may overflow are unbounded, and may be NaN (inf − inf).
  const IntervalTensor overflow = expect_cumsum_bounds_sound(cumsum_spec(0, 0), {4}, 0, {-3e38, 3e38}, true);
  EXPECT_TRUE(overflow.may_be_nan);
}

// ---- Steady state ---------------------------------------------------------------------------

TEST(Reduce, RepeatedPassesAllocateNoTensorBuffers) {
  Rng rng(9);
  const std::vector<Tensor> inputs = {random_tensor(rng, Shape{4, 3, 5}, 0.5, 2)};
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceProd", "ReduceLogSum", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(0u, allocations_after_first_pass(reduce_spec(op, {1}), inputs, BackwardFrom::FirstOutput,
                                               /*extra_passes=*/2));
  }
  EXPECT_EQ(0u, allocations_after_first_pass(cumsum_spec(1, 1), {inputs[0], Tensor::scalar<int64_t>(1)},
                                             BackwardFrom::FirstOutput, /*extra_passes=*/2));
}

}  // namespace
}  // namespace grist
