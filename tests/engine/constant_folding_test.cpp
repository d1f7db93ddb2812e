// Constant folding of shape arithmetic (graph/constant_folding.h): the executor runs a Shape → Gather →
// Unsqueeze → Concat → Reshape chain once and then only the Reshape, with the outputs and gradients of the
// unfolded graph; what a trained weight's values reach, a symbolic batch that changes, an integer initializer
// overridden and a Constant holding NaN are run again.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "graph/constant_folding.h"
#include "ops/registry.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::attr_int;
using grist::testing::attr_ints;
using grist::testing::attr_tensor;
using grist::testing::GraphBuilder;
using grist::testing::tensors_close;

namespace {

Executor make_executor(const Graph& g, bool fold) {
  ExecutorOptions o;
  o.fold_constants = fold;
  auto ex = Executor::create(g, o);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  return std::move(ex).value();
}

Tensor ramp(const Shape& shape, float scale) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>(i % 7 - 3);
  return t;
}

// y = x reshaped to [x.shape[0], -1] the way PyTorch exports x.view(x.size(0), -1); loss = sum(y * y).
Graph flatten_chain(std::vector<int64_t> x_dims) {
  return GraphBuilder()
      .input("x", DType::Float32, std::move(x_dims))
      .constant("zero", Tensor::scalar<int64_t>(0))
      .constant("axes", Tensor::from<int64_t>({1}, {0}))
      .node("Shape", {"x"}, {"shape"})
      .node("Gather", {"shape", "zero"}, {"rows"}, {{"axis", attr_int(0)}})
      .node("Unsqueeze", {"rows", "axes"}, {"rows1"})
      .node("Constant", {}, {"rest"}, {{"value", attr_tensor(Tensor::from<int64_t>({1}, {-1}))}})
      .node("Concat", {"rows1", "rest"}, {"target"}, {{"axis", attr_int(0)}})
      .node("Reshape", {"x", "target"}, {"y"})
      .node("Mul", {"y", "y"}, {"yy"})
      .node("ReduceSum", {"yy"}, {"loss"}, {{"keepdims", attr_int(0)}})
      .output("loss")
      .output("y")
      .build();
}

// Forward and backward on both executors with the same input; the same outputs and input gradient.
void expect_same_pass(const Graph& g, Executor& folded, Executor& plain, const Tensor& x) {
  const ValueId y = g.find_value("y"), loss = g.find_value("loss"), xid = g.find_value("x");
  for (Executor* ex : {&folded, &plain}) {
    ASSERT_TRUE(ex->set_input("x", x).is_ok());
    ASSERT_TRUE(ex->forward().is_ok());
    ASSERT_TRUE(ex->backward(loss).is_ok());
  }
  EXPECT_TRUE(tensors_close(plain.value(y), folded.value(y), 0, 0));
  EXPECT_TRUE(tensors_close(plain.value(loss), folded.value(loss), 0, 0));
  ASSERT_NE(folded.grad(xid), nullptr);
  EXPECT_TRUE(tensors_close(*plain.grad(xid), *folded.grad(xid), 0, 0));
}

}  // namespace

TEST(ConstantFolding, ShapeChainFoldsToTheReshapeWithTheSameOutputsAndGradients) {
  Graph g = flatten_chain({2, 3, 4});
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  expect_same_pass(g, folded, plain, ramp({2, 3, 4}, 0.5f));
  EXPECT_EQ(folded.nodes_run(), 8u);  // the first pass runs everything
  EXPECT_EQ(folded.value(g.find_value("y")).shape(), (Shape{2, 12}));
  expect_same_pass(g, folded, plain, ramp({2, 3, 4}, -1.25f));
  // Shape, Gather, Unsqueeze, Constant and Concat kept: Reshape, Mul and ReduceSum run.
  EXPECT_EQ(folded.nodes_run(), 3u);
  EXPECT_EQ(plain.nodes_run(), 8u);
  EXPECT_EQ(folded.value(g.find_value("target")).data<int64_t>()[0], 2);
  EXPECT_FALSE(folded.forward_event().found);
}

TEST(ConstantFolding, CandidatesAreTheShapeArithmeticOnly) {
  Graph g = flatten_chain({2, 3, 4});
  const auto candidates = fold_candidates(g, [](const Node&) { return true; });
  std::vector<std::string> folded;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (candidates[n]) folded.push_back(g.nodes[n].op_type);
  std::sort(folded.begin(), folded.end());
  EXPECT_EQ(folded, (std::vector<std::string>{"Concat", "Constant", "Gather", "Shape", "Unsqueeze"}));
  // A random op is never one.
  const auto none = fold_candidates(g, [](const Node& n) { return n.op_type != "Shape"; });
  EXPECT_EQ(std::count(none.begin(), none.end(), 1), 1);  // the Constant: nothing else has constant operands
}

TEST(ConstantFolding, ATrainedWeightsShapeFoldsButNotWhatItsValuesReach) {
  // index = argmax(w) picks a column of x; x is reshaped to [-1, w's length]: only the shape of w is constant.
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2, 4})
                .constant("w", Tensor::from<float>({4}, {0.1f, 0.9f, 0.2f, 0.3f}))
                .node("ArgMax", {"w"}, {"index"}, {{"keepdims", attr_int(1)}})
                .node("Gather", {"x", "index"}, {"column"}, {{"axis", attr_int(1)}})
                .node("Shape", {"w"}, {"w_shape"})
                .node("Constant", {}, {"minus1"}, {{"value", attr_tensor(Tensor::from<int64_t>({1}, {-1}))}})
                .node("Concat", {"minus1", "w_shape"}, {"target"}, {{"axis", attr_int(0)}})
                .node("Reshape", {"x", "target"}, {"x2"})
                .node("Add", {"x2", "column"}, {"y"})
                .node("ReduceSum", {"y"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .output("y")
                .build();
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  const Tensor x = ramp({2, 4}, 1.0f);
  expect_same_pass(g, folded, plain, x);
  expect_same_pass(g, folded, plain, x);
  EXPECT_EQ(folded.nodes_run(), 5u);  // ArgMax, Gather, Reshape, Add, ReduceSum
  // A training step moves the argmax to column 3: the folded run follows it.
  const ValueId w = g.find_value("w");
  for (Executor* ex : {&folded, &plain}) ex->mutable_value(w).data<float>()[3] = 2.0f;
  expect_same_pass(g, folded, plain, x);
  EXPECT_EQ(folded.value(g.find_value("index")).data<int64_t>()[0], 3);
  EXPECT_EQ(folded.nodes_run(), 5u);
}

TEST(ConstantFolding, ASymbolicBatchFoldsWhileItStaysAndIsRecomputedWhenItChanges) {
  Graph g = flatten_chain({-1, 3, 2});
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  expect_same_pass(g, folded, plain, ramp({2, 3, 2}, 1.0f));
  expect_same_pass(g, folded, plain, ramp({2, 3, 2}, 2.0f));
  EXPECT_EQ(folded.nodes_run(), 3u);
  // Batch 5: Shape sees another shape, and everything after it runs again.
  expect_same_pass(g, folded, plain, ramp({5, 3, 2}, 1.0f));
  EXPECT_EQ(folded.nodes_run(), 7u);  // Shape, Gather, Unsqueeze, Concat and the three float nodes
  EXPECT_EQ(folded.value(g.find_value("y")).shape(), (Shape{5, 6}));
  expect_same_pass(g, folded, plain, ramp({5, 3, 2}, 3.0f));
  EXPECT_EQ(folded.nodes_run(), 3u);
}

TEST(ConstantFolding, AnIntegerInitializerSetAsAnInputRunsWhatReadsItAgain) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2, 3, 4})
                .constant("rest", Tensor::from<int64_t>({1}, {-1}))
                .constant("axes", Tensor::from<int64_t>({1}, {0}))
                .constant("zero", Tensor::scalar<int64_t>(0))
                .node("Shape", {"x"}, {"shape"})
                .node("Gather", {"shape", "zero"}, {"rows"}, {{"axis", attr_int(0)}})
                .node("Unsqueeze", {"rows", "axes"}, {"rows1"})
                .node("Concat", {"rows1", "rest"}, {"target"}, {{"axis", attr_int(0)}})
                .node("Reshape", {"x", "target"}, {"y"})
                .node("ReduceSum", {"y"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .output("y")
                .build();
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  expect_same_pass(g, folded, plain, ramp({2, 3, 4}, 1.0f));
  expect_same_pass(g, folded, plain, ramp({2, 3, 4}, 1.0f));
  EXPECT_EQ(folded.nodes_run(), 2u);
  for (Executor* ex : {&folded, &plain}) ASSERT_TRUE(ex->set_input("rest", Tensor::from<int64_t>({2}, {4, 3})).is_ok());
  expect_same_pass(g, folded, plain, ramp({2, 3, 4}, 1.0f));
  EXPECT_EQ(folded.value(g.find_value("y")).shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(folded.nodes_run(), 3u);  // Concat, Reshape, ReduceSum
}

TEST(ConstantFolding, AConstantHoldingNaNIsNeverFoldedAndStaysTheFirstProducer) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {3})
                .node("Constant", {}, {"c"}, {{"value", attr_tensor(Tensor::from<float>({3}, {1.0f, nan, 2.0f}))}})
                .node("Add", {"x", "c"}, {"y"})
                .output("y")
                .build();
  Executor ex = make_executor(g, true);
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({3}, {1, 2, 3})).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    ASSERT_TRUE(ex.forward_event().found) << "pass " << pass;
    EXPECT_EQ(ex.forward_event().op_type, "Constant") << "pass " << pass;
    EXPECT_EQ(ex.nodes_run(), 2u) << "pass " << pass;
  }
}

TEST(ConstantFolding, AFiniteFloatConstantIsKeptAndNotRunAgain) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {3})
                .node("Constant", {}, {"c"}, {{"value", attr_tensor(Tensor::from<float>({3}, {1.0f, 0.5f, 2.0f}))}})
                .node("Div", {"x", "c"}, {"y"})
                .output("y")
                .build();
  Executor ex = make_executor(g, true);
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({3}, {1, 2, 3})).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    EXPECT_EQ(ex.nodes_run(), pass == 0 ? 2u : 1u);  // the Div on float data always runs
    EXPECT_FLOAT_EQ(ex.value(g.find_value("y")).data<float>()[1], 4.0f);
  }
}

// The kept Constants are float32; a pass under simulated float16 rounds them (0.1 → 0.0999755859375), so a
// precision change must drop what was kept; a pass that frees its values keeps them (d too, no graph output) and
// folds as the others do. Each pass is checked against an executor that never folds, under the same options.
TEST(ConstantFolding, APrecisionChangeOrAFreeingPassDropsWhatWasKept) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {3})
                .node("Constant", {}, {"c"}, {{"value", attr_tensor(Tensor::from<float>({3}, {1.0f, 0.1f, 2.0f}))}})
                .node("Constant", {}, {"d"}, {{"value", attr_tensor(Tensor::from<float>({3}, {3.0f, 5.0f, 7.0f}))}})
                .node("Div", {"x", "c"}, {"y"})
                .node("Mul", {"y", "d"}, {"z"})
                .output("z")
                .output("c")
                .build();
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  const ValueId z = g.find_value("z"), c = g.find_value("c");
  struct Pass {
    Precision precision;
    bool release;
    size_t folded_nodes_run;
  };
  const Pass passes[] = {{Precision::Fp32, false, 4}, {Precision::Fp32, false, 2}, {Precision::Fp16, false, 4},
                         {Precision::Fp16, false, 2}, {Precision::Fp32, false, 4}, {Precision::Fp32, true, 2},
                         {Precision::Fp32, true, 2},  {Precision::Fp32, false, 2}};
  for (size_t p = 0; p < std::size(passes); ++p) {
    for (Executor* ex : {&folded, &plain}) {
      ex->options().precision = passes[p].precision;
      ex->options().release_dead_values = passes[p].release;
      ASSERT_TRUE(ex->set_input("x", Tensor::from<float>({3}, {1, 2, 3})).is_ok());
      ASSERT_TRUE(ex->forward().is_ok()) << "pass " << p;
    }
    EXPECT_EQ(folded.nodes_run(), passes[p].folded_nodes_run) << "pass " << p;
    EXPECT_TRUE(tensors_close(plain.value(c), folded.value(c), 0, 0)) << "pass " << p;
    EXPECT_TRUE(tensors_close(plain.value(z), folded.value(z), 0, 0)) << "pass " << p;
  }
  // Float16 really rounds the Constant: otherwise the test could not tell a stale one.
  plain.options().precision = Precision::Fp16;
  ASSERT_TRUE(plain.forward().is_ok());
  EXPECT_NE(plain.value(c).data<float>()[1], 0.1f);
}

// A forward-only run (release_dead_values) keeps the folded Constant c and the shape arithmetic from pass to pass:
// neither the freeing of dead values nor Neg's in-place output, which takes a dead operand's buffer, may take them.
TEST(ConstantFolding, AForwardOnlyRunKeepsWhatItFolds) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {3})
                .node("Constant", {}, {"c"}, {{"value", attr_tensor(Tensor::from<float>({3}, {1.0f, 0.5f, 2.0f}))}})
                .node("Neg", {"c"}, {"n"})
                .node("Shape", {"x"}, {"s"})
                .node("Reshape", {"n", "s"}, {"r"})
                .node("Mul", {"x", "r"}, {"y"})
                .output("y")
                .build();
  Executor folded = make_executor(g, true), plain = make_executor(g, false);
  const ValueId y = g.find_value("y");
  for (int pass = 0; pass < 3; ++pass) {
    for (Executor* ex : {&folded, &plain}) {
      ex->options().release_dead_values = true;
      ASSERT_TRUE(ex->set_input("x", Tensor::from<float>({3}, {1, 2, static_cast<float>(pass)})).is_ok());
      ASSERT_TRUE(ex->forward().is_ok()) << "pass " << pass;
    }
    EXPECT_EQ(folded.nodes_run(), pass == 0 ? 5u : 3u) << "pass " << pass;  // Constant and Shape folded
    EXPECT_TRUE(tensors_close(plain.value(y), folded.value(y), 0, 0)) << "pass " << pass;
  }
}
