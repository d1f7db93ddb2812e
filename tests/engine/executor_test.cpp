// The executor: forward and reverse mode over hand-built graphs, the first-producer scan in both
// passes, flush-to-zero, input checks, and no allocation once shapes are stable.
#include <cmath>
#include <limits>
#include <new>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "support/graph_builder.h"
#include "support/test_models.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::GraphBuilder;

namespace {
// Counts operator new calls so the hot loop can be shown not to allocate.
uint64_t g_news = 0;
}  // namespace

// malloc/free behind new/delete on purpose; GCC cannot see the pairing.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

Executor make_executor(const Graph& g, ExecutorOptions o = {}) {
  auto ex = Executor::create(g, o);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  return std::move(ex).value();
}

// log(softmax(z)) summed: the study's most common bug.
Graph log_softmax_graph() {
  return GraphBuilder()
      .input("z", DType::Float32, {2, 3})
      .node("Softmax", {"z"}, {"p"}, {{"axis", grist::testing::attr_int(1)}})
      .node("Log", {"p"}, {"logp"})
      .node("ReduceSum", {"logp"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
      .output("loss")
      .build();
}

}  // namespace

TEST(Executor, NamesLogAsProducerWhenSoftmaxUnderflowsNotTheSumThatPropagates) {
  Graph g = log_softmax_graph();
  Executor ex = make_executor(g);
  // Row 1 has a gap of 110 > 103.97: its smallest softmax entry underflows to exactly 0 in float32.
  ASSERT_TRUE(ex.set_input("z", Tensor::from<float>({2, 3}, {0.1f, 0.2f, 0.3f, 0.0f, 110.0f, 50.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  const NonFiniteEvent& e = ex.forward_event();
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.op_type, "Log");
  EXPECT_EQ(e.value_name, "logp");
  EXPECT_EQ(e.first_index, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(e.first_value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(e.counts.neg_inf, 1);
  ASSERT_EQ(e.inputs.size(), 1u);
  EXPECT_TRUE(e.inputs[0].has_value);
  EXPECT_EQ(e.inputs[0].value, 0.0);
  EXPECT_FALSE(std::isfinite(ex.value(g.find_value("loss")).data<float>()[0]));
}

TEST(Executor, SoftmaxGapOf103StillGivesADenormalNotZero) {
  Graph g = log_softmax_graph();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("z", Tensor::from<float>({2, 3}, {0, 0, 0, 0.0f, 103.0f, 50.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_FALSE(ex.forward_event().found) << ex.forward_event().describe();
  EXPECT_GT(ex.value(g.find_value("p")).data<float>()[3], 0.0f);
}

TEST(Executor, FlushToZeroMakesTheSameGapUnderflow) {
  Graph g = log_softmax_graph();
  ExecutorOptions o;
  o.flush_denormals = true;
  Executor ex = make_executor(g, o);
  ASSERT_TRUE(ex.set_input("z", Tensor::from<float>({2, 3}, {0, 0, 0, 0.0f, 103.0f, 50.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.forward_event().found);
  EXPECT_EQ(ex.forward_event().op_type, "Log");
}

TEST(Executor, NamesTheGradientNodeThatTurnsFiniteGradientsInfinite) {
  // sqrt(0) = 0 is finite, but its derivative 1/(2·sqrt(0)) is +inf.
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {3})
                .node("Sqrt", {"x"}, {"s"})
                .node("ReduceSum", {"s"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({3}, {4.0f, 0.0f, 1.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_FALSE(ex.forward_event().found);
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  const NonFiniteEvent& e = ex.backward_event();
  ASSERT_TRUE(e.found);
  EXPECT_TRUE(e.in_backward);
  EXPECT_EQ(e.op_type, "Sqrt");
  EXPECT_EQ(e.value_name, "x");
  EXPECT_EQ(e.first_index, (std::vector<int64_t>{1}));
  EXPECT_EQ(e.counts.pos_inf, 1);
  EXPECT_EQ(ex.grad(g.find_value("x"))->data<float>()[0], 0.25f);
}

TEST(Executor, GradientsOfAValueReadTwiceAccumulate) {
  // y = x·x + x  →  dy/dx = 2x + 1
  Graph g = GraphBuilder()
                .input("x", DType::Float64, {2})
                .node("Mul", {"x", "x"}, {"sq"})
                .node("Add", {"sq", "x"}, {"y"})
                .output("y")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<double>({2}, {3.0, -0.5})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.backward(g.find_value("y")).is_ok());
  const Tensor* gx = ex.grad(g.find_value("x"));
  ASSERT_NE(gx, nullptr);
  EXPECT_DOUBLE_EQ(gx->data<double>()[0], 7.0);
  EXPECT_DOUBLE_EQ(gx->data<double>()[1], 0.0);
}

TEST(Executor, WeightsGetGradientsAndConstantIntegerOperandsDoNot) {
  Tensor w = Tensor::from<float>({2, 2}, {1, 2, 3, 4});
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 2})
                .constant("w", w)
                .constant("shape", Tensor::from<int64_t>({1}, {-1}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Reshape", {"h", "shape"}, {"flat"})
                .node("ReduceSum", {"flat"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({1, 2}, {1, 1})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  ASSERT_NE(ex.grad(g.find_value("w")), nullptr);
  EXPECT_EQ(ex.grad(g.find_value("w"))->data<float>()[0], 1.0f);
  EXPECT_EQ(ex.grad(g.find_value("shape")), nullptr);
  EXPECT_EQ(ex.grad(g.find_value("x"))->data<float>()[0], 3.0f);  // row sums of w
}

TEST(Executor, RefusesInputOfWrongDtypeOrShapeNamingIt) {
  Graph g = log_softmax_graph();
  Executor ex = make_executor(g);
  auto st = ex.set_input("z", Tensor::from<double>({2, 3}, {0, 0, 0, 0, 0, 0}));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'z' expects float32 data, got float64"), std::string::npos) << st.message();
  st = ex.set_input("z", Tensor::from<float>({3, 2}, {0, 0, 0, 0, 0, 0}));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("dimension 0"), std::string::npos) << st.message();
  EXPECT_FALSE(ex.set_input("nope", Tensor::from<float>({1}, {0})).is_ok());
}

TEST(Executor, ForwardWithoutDataNamesTheMissingInput) {
  Graph g = log_softmax_graph();
  Executor ex = make_executor(g);
  auto st = ex.forward();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("'z'"), std::string::npos) << st.message();
}

TEST(Executor, SteadyStateIterationsAllocateNothing) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 4})
                .constant("w", Tensor::from<float>({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
                .constant("b", Tensor::from<float>({3}, {0.1f, 0.2f, 0.3f}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Add", {"h", "b"}, {"hb"})
                .node("Tanh", {"hb"}, {"t"})
                .node("Softmax", {"t"}, {"p"}, {{"axis", grist::testing::attr_int(1)}})
                .node("Log", {"p"}, {"lp"})
                .node("ReduceMean", {"lp"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  Tensor x = Tensor::from<float>({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, -0.1f, -0.2f, 0.5f, 0.0f});
  ValueId loss = g.find_value("loss");
  auto iterate = [&] {
    ASSERT_TRUE(ex.set_input("x", x).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    ASSERT_TRUE(ex.backward(loss).is_ok());
  };
  iterate();
  iterate();
  uint64_t tensors_before = Tensor::allocation_count();
  uint64_t news_before = g_news;
  for (int i = 0; i < 10; ++i) iterate();
  EXPECT_EQ(Tensor::allocation_count(), tensors_before);
  EXPECT_EQ(g_news, news_before);
}

// y = sqrt(exp(clip(x, -100, 87))) under flush-to-zero: for x in (-100, -87.3) exp flushes to 0 and sqrt′(0) = ∞,
// then ∞·0 = NaN through Exp's backward. Clip passes that NaN on inside its range and masks it outside.

TEST(Executor, ANonFiniteGradientThatAClipMasksIsNotABackwardFailure) {
  Graph g = grist::testing::clip_exp_sqrt_graph({2});
  ExecutorOptions o;
  o.flush_denormals = true;
  Executor ex = make_executor(g, o);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({2}, {-120.0f, 1.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_FALSE(ex.forward_event().found);
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  EXPECT_FALSE(ex.backward_event().found) << ex.backward_event().describe();
  const NonFiniteEvent& masked = ex.masked_backward_event();
  ASSERT_TRUE(masked.found);
  EXPECT_TRUE(masked.masked);
  EXPECT_EQ(masked.op_type, "Sqrt");
  const Tensor* gx = ex.grad(g.find_value("x"));
  ASSERT_NE(gx, nullptr);
  EXPECT_EQ(gx->data<float>()[0], 0.0f);  // what PyTorch's and TensorFlow's Clip backward give as well
}

TEST(Executor, ANonFiniteGradientInsideTheClipRangeReachesTheInput) {
  Graph g = grist::testing::clip_exp_sqrt_graph({2});
  ExecutorOptions o;
  o.flush_denormals = true;
  Executor ex = make_executor(g, o);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({2}, {-95.0f, 1.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  const NonFiniteEvent& e = ex.backward_event();
  ASSERT_TRUE(e.found);
  EXPECT_FALSE(e.masked);
  EXPECT_EQ(e.op_type, "Sqrt");  // the producer, not Exp or Clip, which only propagate
  EXPECT_FALSE(ex.masked_backward_event().found);
  EXPECT_TRUE(std::isnan(ex.grad(g.find_value("x"))->data<float>()[0]));
}

TEST(Executor, OfTwoNonFiniteGradientsTheOneThatReachesTheWantedGradientIsReported) {
  // loss = Σ sqrt(relu(x)) + Σ log(w): sqrt′(0) = ∞ where x < 0 is masked by Relu's backward (a select, as in
  // PyTorch); log′(w) = 1/w at w = 0 reaches w.
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .input("w", DType::Float32, {2})
                .node("Relu", {"x"}, {"r"})
                .node("Sqrt", {"r"}, {"s"})
                .node("Log", {"w"}, {"lw"})
                .node("Add", {"s", "lw"}, {"sum"})
                .node("ReduceSum", {"sum"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({2}, {-1.0f, 4.0f})).is_ok());
  ASSERT_TRUE(ex.set_input("w", Tensor::from<float>({2}, {1.0f, 0.5f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  EXPECT_FALSE(ex.backward_event().found) << ex.backward_event().describe();
  ASSERT_TRUE(ex.masked_backward_event().found);
  EXPECT_EQ(ex.masked_backward_event().op_type, "Sqrt");
  // Now w reaches 0 as well: 1/w = inf lands in w's gradient; the masked sqrt is not the failure.
  ASSERT_TRUE(ex.set_input("w", Tensor::from<float>({2}, {0.0f, 0.5f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  ASSERT_TRUE(ex.backward_event().found);
  EXPECT_EQ(ex.backward_event().op_type, "Log");
  EXPECT_EQ(ex.backward_event().value_name, "w");
  EXPECT_FALSE(ex.masked_backward_event().found);
}
