// Indexing ops: Gather/GatherElements/GatherND and the scatters pinned against the ONNX examples and
// numpy, negative-index wrapping, out-of-range indices as errors naming the node, OneHot, NonZero, TopK
// ordering (ties, NaN), and gradients against finite differences (with repeated indices, which sum).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace grist::testing {
namespace {

Tensor ints(std::initializer_list<int64_t> v) {
  return Tensor::from<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
}
Tensor doubles(const Shape& s, std::initializer_list<double> v) { return Tensor::from<double>(s, v); }

Tensor iota(const Shape& s) {
  Tensor t(DType::Float64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = static_cast<double>(i);
  return t;
}

std::string error_of(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  auto r = try_run_node(spec, inputs);
  return r ? std::string() : r.message();
}

// ---- Gather ----

TEST(Gather, NegativeIndicesCountFromTheEnd) {
  auto y = run_node(Spec("Gather").constants({1}), {iota({3, 2}), ints({2, -3})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {4, 5, 0, 1}), y[0]));
}

TEST(Gather, IndexShapeReplacesTheAxis) {
  auto y = run_node(Spec("Gather").attr("axis", attr_int(1)).constants({1}),
                    {iota({2, 3}), Tensor::from<int32_t>({2, 2}, {0, 2, -1, 1})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2, 2, 2}, {0, 2, 2, 1, 3, 5, 5, 4}), y[0]));
}

TEST(Gather, OutOfRangeIndexIsAnErrorNamingTheNode) {
  std::string e = error_of(Spec("Gather").constants({1}), {iota({3, 2}), ints({0, 3})});
  EXPECT_NE(e.find("Gather_0"), std::string::npos) << e;
  EXPECT_NE(e.find("index 3"), std::string::npos) << e;
  EXPECT_NE(error_of(Spec("Gather").constants({1}), {iota({3, 2}), ints({-4})}), "");
  EXPECT_NE(error_of(Spec("Gather").constants({1}), {iota({3, 2}), doubles({1}, {0})}), "");  // float indices
}

TEST(Gather, GradientSumsRepeatedIndices) {
  Rng rng(1);
  expect_gradient_matches(Spec("Gather").attr("axis", attr_int(1)).constants({1}),
                          {random_tensor(rng, {2, 3, 2}), Tensor::from<int64_t>({2, 2}, {0, 2, 0, -1})});
}

// ---- GatherElements ----

TEST(GatherElements, PicksAlongTheAxisPerElement) {
  auto y = run_node(Spec("GatherElements").attr("axis", attr_int(1)).constants({1}),
                    {doubles({2, 2}, {1, 2, 3, 4}), Tensor::from<int64_t>({2, 2}, {0, 0, -1, 0})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {1, 1, 4, 3}), y[0]));
  EXPECT_NE(error_of(Spec("GatherElements").constants({1}), {iota({2, 2}), Tensor::from<int64_t>({1, 1}, {2})}), "");
}

TEST(GatherElements, GradientSumsRepeatedIndices) {
  Rng rng(2);
  expect_gradient_matches(Spec("GatherElements").attr("axis", attr_int(0)).constants({1}),
                          {random_tensor(rng, {3, 2}), Tensor::from<int64_t>({3, 2}, {0, 2, 0, 0, -1, 1})});
}

// ---- GatherND ----

TEST(GatherND, TuplesPickElementsOrSlices) {
  Tensor data = doubles({2, 2}, {0, 1, 2, 3});
  auto y = run_node(Spec("GatherND").constants({1}), {data, Tensor::from<int64_t>({2, 2}, {0, 0, 1, 1})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2}, {0, 3}), y[0]));
  y = run_node(Spec("GatherND").constants({1}), {data, Tensor::from<int64_t>({2, 1}, {1, 0})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {2, 3, 0, 1}), y[0]));
}

TEST(GatherND, BatchDimsIndexWithinEachBatch) {
  auto y = run_node(Spec("GatherND").attr("batch_dims", attr_int(1)).constants({1}),
                    {iota({2, 2, 2}), Tensor::from<int64_t>({2, 1}, {1, 0})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {2, 3, 4, 5}), y[0]));
  EXPECT_NE(error_of(Spec("GatherND").constants({1}), {iota({2, 2}), Tensor::from<int64_t>({1, 3}, {0, 0, 0})}), "");
  EXPECT_NE(error_of(Spec("GatherND").constants({1}), {iota({2, 2}), Tensor::from<int64_t>({1, 2}, {0, 2})}), "");
}

TEST(GatherND, GradientSumsRepeatedTuples) {
  Rng rng(3);
  expect_gradient_matches(Spec("GatherND").constants({1}),
                          {random_tensor(rng, {3, 2, 2}), Tensor::from<int64_t>({3, 2}, {0, 1, 2, 0, 0, 1})});
  expect_gradient_matches(Spec("GatherND").attr("batch_dims", attr_int(1)).constants({1}),
                          {random_tensor(rng, {2, 3, 2}), Tensor::from<int64_t>({2, 2, 1}, {1, 1, 0, 2})});
}

// ---- ScatterElements, Scatter, ScatterND ----

TEST(ScatterElements, WritesUpdatesAtTheIndexedPositions) {
  // The example from the ONNX operator documentation.
  auto y = run_node(Spec("ScatterElements").constants({1}),
                    {doubles({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}), Tensor::from<int64_t>({2, 3}, {1, 0, 2, 0, 2, 1}),
                     doubles({2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({3, 3}, {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2}), y[0]));
}

TEST(ScatterElements, AddReductionSumsDuplicates) {
  auto y =
      run_node(Spec("ScatterElements").attr("axis", attr_int(1)).attr("reduction", attr_string("add")).constants({1}),
               {doubles({1, 5}, {1, 2, 3, 4, 5}), Tensor::from<int64_t>({1, 2}, {1, 1}), doubles({1, 2}, {1.1, 2.1})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({1, 5}, {1, 5.2, 3, 4, 5}), y[0]));
}

TEST(ScatterElements, GradientToDataAndUpdates) {
  Rng rng(4);
  for (const char* reduction : {"none", "add"}) {
    SCOPED_TRACE(reduction);
    expect_gradient_matches(
        Spec("ScatterElements").attr("axis", attr_int(1)).attr("reduction", attr_string(reduction)).constants({1}),
        {random_tensor(rng, {2, 4}), Tensor::from<int64_t>({2, 2}, {3, 0, -1, 1}), random_tensor(rng, {2, 2})});
  }
  expect_gradient_matches(
      Spec("Scatter").opset(10).constants({1}),
      {random_tensor(rng, {3, 2}), Tensor::from<int64_t>({1, 2}, {2, 0}), random_tensor(rng, {1, 2})});
}

TEST(ScatterElements, MulReductionHasNoGradient) {
  Spec spec = Spec("ScatterElements").attr("reduction", attr_string("mul")).constants({1});
  Rng rng(5);
  std::vector<Tensor> in{random_tensor(rng, {3}), ints({0}), random_tensor(rng, {1})};
  EXPECT_EQ(error_of(spec, in), "");  // the forward works
  Graph g = make_single_node_graph(spec, in);
  auto ex = Executor::create(g);
  ASSERT_TRUE(ex.is_ok());
  for (size_t i = 0; i < g.inputs.size(); ++i) ASSERT_TRUE(ex->set_input(g.inputs[i], in[i == 0 ? 0 : 2]).is_ok());
  ASSERT_TRUE(ex->forward().is_ok());
  EXPECT_FALSE(ex->backward(g.outputs[0]).is_ok());
}

TEST(ScatterND, WritesSlicesAtIndexTuples) {
  auto y = run_node(Spec("ScatterND").constants({1}),
                    {doubles({8}, {1, 2, 3, 4, 5, 6, 7, 8}), Tensor::from<int64_t>({4, 1}, {4, 3, 1, 7}),
                     doubles({4}, {9, 10, 11, 12})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(doubles({8}, {1, 11, 3, 10, 9, 6, 7, 12}), y[0]));
  EXPECT_NE(error_of(Spec("ScatterND").constants({1}), {iota({8}), Tensor::from<int64_t>({1, 1}, {0}), iota({2})}), "");
}

TEST(ScatterND, GradientToDataAndUpdates) {
  Rng rng(6);
  expect_gradient_matches(
      Spec("ScatterND").constants({1}),
      {random_tensor(rng, {3, 2}), Tensor::from<int64_t>({2, 1}, {2, 0}), random_tensor(rng, {2, 2})});
  expect_gradient_matches(
      Spec("ScatterND").attr("reduction", attr_string("add")).constants({1}),
      {random_tensor(rng, {3, 2}), Tensor::from<int64_t>({2, 2}, {2, 1, 2, 1}), random_tensor(rng, {2})});
}

// ---- OneHot, NonZero, TopK ----

TEST(OneHot, NegativeIndicesWrapAndOutOfRangeOnesStayOff) {
  auto y = run_node(Spec("OneHot").opset(11),
                    {ints({0, -1, 3, 5}), Tensor::scalar<int64_t>(4), Tensor::from<float>({2}, {0, 2})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<float>({4, 4}, {2, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0}), y[0]));
}

TEST(OneHot, AxisPlacesTheDepthDimension) {
  auto y = run_node(Spec("OneHot").attr("axis", attr_int(0)),
                    {doubles({2}, {1.7, 0}), Tensor::scalar<float>(3), ints({0, 1})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({3, 2}, {0, 1, 1, 0, 0, 0}), y[0]));
  EXPECT_NE(error_of(Spec("OneHot"), {ints({0}), Tensor::scalar<int64_t>(3), ints({0, 1, 2})}), "");
}

TEST(NonZero, ListsCoordinatesPerDimension) {
  auto y = run_node(Spec("NonZero"), {Tensor::from<float>({2, 2}, {1, 0, -2, 3})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({2, 3}, {0, 1, 1, 0, 0, 1}), y[0]));
  y = run_node(Spec("NonZero"), {Tensor::from<bool>({3}, {false, false, false})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), (Shape{1, 0}));
}

TEST(TopK, LargestAlongTheLastAxis) {
  auto y = run_node(Spec("TopK").outputs(2).constants({1}), {doubles({2, 4}, {0, 1, 2, 3, 7, 6, 5, 4}), ints({2})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({2, 2}, {3, 2, 7, 6}), y[0]));
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({2, 2}, {3, 2, 0, 1}), y[1]));
}

TEST(TopK, SmallestBreaksTiesByLowerIndex) {
  auto y = run_node(Spec("TopK").attr("largest", attr_int(0)).outputs(2).constants({1}),
                    {Tensor::from<int32_t>({4}, {3, 1, 1, 2}), ints({3})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_close(Tensor::from<int32_t>({3}, {1, 1, 2}), y[0]));
  EXPECT_TRUE(tensors_close(ints({1, 2, 3}), y[1]));
}

TEST(TopK, NanRanksAboveEveryNumber) {
  auto y = run_node(Spec("TopK").outputs(2).constants({1}), {doubles({3}, {1, NAN, 3}), ints({2})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({2}, {NAN, 3}), y[0]));
  EXPECT_TRUE(tensors_close(ints({1, 2}), y[1]));
  y = run_node(Spec("TopK").attr("largest", attr_int(0)).outputs(2).constants({1}),
               {doubles({3}, {1, NAN, 3}), ints({3})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({3}, {1, 3, NAN}), y[0]));
}

TEST(TopK, Opset9TakesKAsAttributeAndKBeyondTheAxisIsAnError) {
  auto y = run_node(Spec("TopK").attr("k", attr_int(1)).attr("axis", attr_int(0)).outputs(2).opset(9),
                    {doubles({2, 2}, {1, 4, 3, 2})});
  ASSERT_EQ(y.size(), 2u);
  EXPECT_TRUE(tensors_close(doubles({1, 2}, {3, 4}), y[0]));
  EXPECT_NE(error_of(Spec("TopK").outputs(2).constants({1}), {doubles({2}, {1, 2}), ints({3})}), "");
}

TEST(TopK, GradientGoesToTheSelectedElements) {
  Rng rng(7);
  expect_gradient_matches(Spec("TopK").attr("axis", attr_int(0)).outputs(2).constants({1}),
                          {random_tensor(rng, {4, 3}), ints({2})});
  expect_gradient_matches(Spec("TopK").attr("largest", attr_int(0)).outputs(2).constants({1}),
                          {random_tensor(rng, {2, 5}), ints({3})});
}

TEST(IndexingOps, RepeatedPassesAllocateNothing) {
  Rng rng(8);
  Tensor x = random_tensor(rng, {4, 6});
  Tensor idx = Tensor::from<int64_t>({2, 2}, {0, 3, -1, 1});
  EXPECT_EQ(0u, allocations_after_first_pass(Spec("Gather").constants({1}), {x, idx}));
  EXPECT_EQ(0u, allocations_after_first_pass(Spec("GatherElements").constants({1}), {x, idx}));
  EXPECT_EQ(0u, allocations_after_first_pass(Spec("GatherND").constants({1}), {x, idx}));
  EXPECT_EQ(0u, allocations_after_first_pass(Spec("ScatterElements").constants({1}), {x, idx, random_tensor(rng, {2, 2})}));
  EXPECT_EQ(0u, allocations_after_first_pass(Spec("TopK").outputs(2).constants({1}), {x, ints({3})}));
}

}  // namespace
}  // namespace grist::testing
