// In-place tails (OpDef::in_place): a forward-only run (release_dead_values) computes an elementwise node into the
// buffer of an input no later node reads. Every graph output, and the first-producer report with the producer's
// input values, must be those of a run that gives every value a buffer of its own, bit for bit.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::attr_float;
using grist::testing::GraphBuilder;

namespace {

Executor run(const Graph& g, bool release, const Tensor& x) {
  ExecutorOptions o;
  o.release_dead_values = release;
  auto ex = Executor::create(g, o);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  EXPECT_TRUE(ex->set_input("x", x).is_ok());
  EXPECT_TRUE(ex->forward().is_ok());
  return std::move(ex).value();
}

// The graph run with and without in-place tails: the same outputs bit for bit, the same first producer with the
// same operands at its first non-finite element.
void expect_as_separate_buffers(const Graph& g, const Tensor& x) {
  const Executor apart = run(g, false, x), in_place = run(g, true, x);
  for (ValueId out : g.outputs) {
    const Tensor &a = apart.value(out), &b = in_place.value(out);
    ASSERT_EQ(a.shape(), b.shape()) << g.value(out).name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << g.value(out).name << " differs";
  }
  const NonFiniteEvent &e = apart.forward_event(), &f = in_place.forward_event();
  ASSERT_EQ(e.found, f.found);
  EXPECT_EQ(e.node, f.node);
  EXPECT_EQ(e.value_name, f.value_name);
  EXPECT_EQ(e.first_index, f.first_index);
  ASSERT_EQ(e.inputs.size(), f.inputs.size());
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    EXPECT_EQ(e.inputs[i].name, f.inputs[i].name);
    EXPECT_EQ(e.inputs[i].has_value, f.inputs[i].has_value);
    EXPECT_EQ(e.inputs[i].value, f.inputs[i].value) << "operand " << e.inputs[i].name << " of " << e.node_name;
  }
}

const Tensor kX = Tensor::from<float>({4}, {0.5f, -2.0f, 3.0f, 7.0f});

}  // namespace

// a is read by Relu and again by Add: Relu must not take its buffer.
TEST(InPlace, AValueWithTwoConsumersKeepsItsBuffer) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .node("Neg", {"x"}, {"a"})
                      .node("Relu", {"a"}, {"r"})
                      .node("Add", {"a", "r"}, {"y"})
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, kX);
}

// A graph output read by a Relu stays the graph's output.
TEST(InPlace, AGraphOutputFeedingAReluIsNotOverwritten) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .node("Neg", {"x"}, {"a"})
                      .node("Relu", {"a"}, {"y"})
                      .output("a")
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, kX);
  const Executor ex = run(g, true, kX);
  EXPECT_EQ(ex.value(g.find_value("a")).data<float>()[1], 2.0f);
}

// Clip's input is also read by the Add after it.
TEST(InPlace, AClipWhoseInputAnAddReadsLater) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .node("Mul", {"x", "x"}, {"m"})
                      .node("Clip", {"m"}, {"k"}, {{"min", attr_float(0.0)}, {"max", attr_float(6.0)}})
                      .node("Add", {"k", "m"}, {"y"})
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, kX);
}

// A broadcast Add may take its full-shaped operand's buffer, never the smaller one's.
TEST(InPlace, ABroadcastAddTakesOnlyAnOperandOfItsOutputShape) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .constant("one", Tensor::from<float>({1}, {1.0f}))
                      .node("Neg", {"one"}, {"s"})
                      .node("Neg", {"x"}, {"a"})
                      .node("Add", {"s", "a"}, {"b"})
                      .node("Sub", {"b", "s2"}, {"y"})
                      .node("Abs", {"one"}, {"s2"})
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, kX);
}

// BatchNormalization (inference) then Relu, both in place.
TEST(InPlace, BatchNormalizationThenRelu) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {1, 2, 2})
                      .constant("scale", Tensor::from<float>({2}, {1.5f, -0.5f}))
                      .constant("bias", Tensor::from<float>({2}, {0.25f, 1.0f}))
                      .constant("mean", Tensor::from<float>({2}, {0.1f, -0.3f}))
                      .constant("var", Tensor::from<float>({2}, {2.0f, 0.7f}))
                      .node("Mul", {"x", "x"}, {"m"})
                      .node("BatchNormalization", {"m", "scale", "bias", "mean", "var"}, {"b"})
                      .node("Relu", {"b"}, {"y"})
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, Tensor::from<float>({1, 2, 2}, {0.5f, -2.0f, 3.0f, 7.0f}));
}

// Exp, computing into m's buffer, overflows; the Clip after it clamps +Inf to 6, so the output is finite. The report
// still names Exp with m's value at the element (100), which the in-place pass had overwritten with +Inf.
TEST(InPlace, AnInPlaceFirstProducerIsReportedWithItsInput) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .node("Mul", {"x", "x"}, {"m"})
                      .node("Exp", {"m"}, {"e"})
                      .node("Clip", {"e"}, {"y"}, {{"min", attr_float(0.0)}, {"max", attr_float(6.0)}})
                      .output("y")
                      .build();
  const Tensor x = Tensor::from<float>({4}, {0.5f, 10.0f, 1.0f, 2.0f});
  expect_as_separate_buffers(g, x);
  const Executor ex = run(g, true, x);
  const NonFiniteEvent& e = ex.forward_event();
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.op_type, "Exp");
  EXPECT_EQ(e.first_index, std::vector<int64_t>{1});
  ASSERT_EQ(e.inputs.size(), 1u);
  EXPECT_EQ(e.inputs[0].value, 100.0);
  EXPECT_EQ(ex.value(g.find_value("y")).data<float>()[1], 6.0f);
}

// The producer ran in a buffer of its own (a Div of the graph input); the Relu after it, in place, propagates.
TEST(InPlace, AProducerBeforeAnInPlaceTail) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .constant("z", Tensor::from<float>({4}, {1.0f, 0.0f, 2.0f, 0.0f}))
                      .node("Div", {"x", "z"}, {"d"})
                      .node("Relu", {"d"}, {"r"})
                      .node("Neg", {"r"}, {"y"})
                      .output("y")
                      .build();
  expect_as_separate_buffers(g, kX);
}

// The chain allocates one buffer per pass (Neg's output, taken over by Relu, then by Clip, the graph output), where
// buffers of their own would take two (a and r): the in-place path is really taken.
TEST(InPlace, AChainOfMapsAllocatesOneBuffer) {
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {4})
                      .node("Neg", {"x"}, {"a"})
                      .node("Relu", {"a"}, {"r"})
                      .node("Clip", {"r"}, {"y"}, {{"min", attr_float(0.0)}, {"max", attr_float(6.0)}})
                      .output("y")
                      .build();
  for (const bool release : {false, true}) {
    Executor ex = run(g, release, kX);
    const uint64_t before = Tensor::allocation_count();
    ASSERT_TRUE(ex.forward().is_ok());
    EXPECT_EQ(Tensor::allocation_count() - before, release ? 1u : 0u) << "release " << release;
  }
}

namespace {

// m = x·x, then BatchNormalization (inference) and `tail` reading its output alone: the pair a forward-only run
// computes in one pass (ops/fused_tail.h).
Attribute tensor_attr(float v) {
  Attribute a;
  a.type = Attribute::Type::Tensor;
  a.t = std::make_shared<const Tensor>(Tensor::from<float>({}, {v}));
  return a;
}

// `tail` "Clip": limits 0 and 6 from initializers; "Clip6": from Constant nodes between the BatchNormalization and
// the Clip, as PyTorch exports ReLU6 (`hi` its upper limit).
Graph batch_norm_then(const std::string& tail, float var0, bool second_reader = false, float hi = 6.0f,
                      std::vector<int64_t> dims = {1, 2, 3}) {
  GraphBuilder b;
  b.input("x", DType::Float32, std::move(dims))
      .constant("scale", Tensor::from<float>({2}, {1.5f, -0.5f}))
      .constant("bias", Tensor::from<float>({2}, {0.25f, 1.0f}))
      .constant("mean", Tensor::from<float>({2}, {0.1f, -0.3f}))
      .constant("var", Tensor::from<float>({2}, {var0, 0.7f}))
      .constant("lo", Tensor::from<float>({}, {0.0f}))
      .constant("hi", Tensor::from<float>({}, {6.0f}))
      .node("Mul", {"x", "x"}, {"m"})
      .node("BatchNormalization", {"m", "scale", "bias", "mean", "var"}, {"b"}, {{"epsilon", attr_float(0.0)}});
  if (tail == "Clip") {
    b.node("Clip", {"b", "lo", "hi"}, {"y"});
  } else if (tail == "Clip6") {
    b.node("Constant", {}, {"lo6"}, {{"value", tensor_attr(0.0f)}})
        .node("Constant", {}, {"hi6"}, {{"value", tensor_attr(hi)}})
        .node("Clip", {"b", "lo6", "hi6"}, {"y"});
  } else {
    b.node(tail, {"b"}, {"y"});
  }
  if (second_reader) b.node("Add", {"b", "y"}, {"z"}).output("z");
  return b.output("y").build();
}

const float kPlusInf = std::numeric_limits<float>::infinity();
const float kQuietNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

// NaN and Inf arriving from the graph input pass through the fused pair as through the two nodes: Clip turns +Inf
// into 6, NaN stays NaN, -0 stays -0.
TEST(InPlace, BatchNormalizationWithItsClampPropagatesAsApart) {
  const Tensor x = Tensor::from<float>({1, 2, 3}, {kQuietNaN, kPlusInf, 0.0f, -0.0f, 40.0f, 0.3f});
  for (const char* tail : {"Relu", "Clip", "Clip6"}) {
    SCOPED_TRACE(tail);
    expect_as_separate_buffers(batch_norm_then(tail, 2.0f), x);
    expect_as_separate_buffers(batch_norm_then(tail, 2.0f, true), x);
  }
}

// A late layer's shape (1,100 channels of 2×2: the fused pass normalises and clamps runs of 1,024 channels): every
// value is the formula's, clamped, bit for bit. Channel 1,050 has zero variance: with finite inputs the
// BatchNormalization is the first producer of its Inf, at its first element; a NaN arriving in the second run
// reaches the output as apart, and then no node is the first producer.
TEST(InPlace, AFusedBatchNormalizationOverRunsOfChannelsGivesTheFormulasBits) {
  const int64_t channels = 1100, inner = 4;
  std::vector<float> scale, bias, mean, var, finite_x;
  for (int64_t c = 0; c < channels; ++c) {
    scale.push_back(0.5f + static_cast<float>(c % 7) / 5.0f);
    bias.push_back(static_cast<float>(c % 11) / 3.0f - 1.5f);
    mean.push_back(static_cast<float>(c % 5) / 7.0f + 0.01f);
    var.push_back(c == 1050 ? 0.0f : 0.1f + static_cast<float>(c % 13) / 9.0f);
    for (int64_t i = 0; i < inner; ++i) finite_x.push_back(static_cast<float>((c * inner + i) % 17) / 4.0f - 2.0f);
  }
  auto tensor = [](Shape shape, const std::vector<float>& v) {
    Tensor t(DType::Float32, shape);
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  const Graph g = GraphBuilder()
                      .input("x", DType::Float32, {1, channels, 2, 2})
                      .constant("scale", tensor({channels}, scale))
                      .constant("bias", tensor({channels}, bias))
                      .constant("mean", tensor({channels}, mean))
                      .constant("var", tensor({channels}, var))
                      .constant("lo", Tensor::from<float>({}, {0.0f}))
                      .constant("hi", Tensor::from<float>({}, {6.0f}))
                      .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"b"},
                            {{"epsilon", attr_float(0.0)}})
                      .node("Clip", {"b", "lo", "hi"}, {"y"})
                      .output("y")
                      .build();
  for (bool nan_input : {false, true}) {
    SCOPED_TRACE(nan_input ? "a NaN input" : "finite inputs");
    std::vector<float> xs = finite_x;
    if (nan_input) xs[1030 * inner + 1] = kQuietNaN;
    const Tensor x = tensor({1, channels, 2, 2}, xs);
    expect_as_separate_buffers(g, x);
    const Executor ex = run(g, true, x);
    const float* y = ex.value(g.find_value("y")).data<float>();
    for (int64_t i = 0; i < channels * inner; ++i) {
      const auto c = static_cast<size_t>(i / inner);
      const float a = scale[c] * (1.0f / std::sqrt(var[c]));
      const float b = (xs[static_cast<size_t>(i)] - mean[c]) * a + bias[c];
      if (std::isnan(b)) {
        ASSERT_TRUE(std::isnan(y[i])) << "element " << i;
      } else {
        ASSERT_EQ(y[i], std::min(std::max(b, 0.0f), 6.0f)) << "element " << i;
      }
    }
    const NonFiniteEvent& e = ex.forward_event();
    ASSERT_EQ(e.found, !nan_input);
    if (nan_input) continue;
    EXPECT_EQ(e.op_type, "BatchNormalization");
    EXPECT_EQ(e.first_index, (std::vector<int64_t>{0, 1050, 0, 0}));
  }
}

// With var 0 and epsilon 0, the BatchNormalization divides by 0: it is the first producer, though the Clip after
// it clamps its +Inf to 6. The report names it, with the operands at its first non-finite element, as when the two
// run apart.
TEST(InPlace, AFusedBatchNormalizationIsReportedAsTheProducer) {
  const Graph g = batch_norm_then("Clip", 0.0f);
  const Tensor x = Tensor::from<float>({1, 2, 3}, {0.5f, 2.0f, 1.0f, 3.0f, 4.0f, 0.25f});
  expect_as_separate_buffers(g, x);
  const Executor ex = run(g, true, x);
  const NonFiniteEvent& e = ex.forward_event();
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.op_type, "BatchNormalization");
  EXPECT_EQ(e.value_name, "b");
  EXPECT_EQ(e.first_index, (std::vector<int64_t>{0, 0, 0}));
  ASSERT_FALSE(e.inputs.empty());
  EXPECT_EQ(e.inputs[0].value, 0.25);  // m = 0.5·0.5
  EXPECT_EQ(ex.value(g.find_value("y")).data<float>()[0], 6.0f);
}

// The same with the limits from Constant nodes between the pair, which the fused pass reads without running them.
TEST(InPlace, AFusedBatchNormalizationBeforeConstantLimitsIsReportedAsTheProducer) {
  const Graph g = batch_norm_then("Clip6", 0.0f);
  const Tensor x = Tensor::from<float>({1, 2, 3}, {0.5f, 2.0f, 1.0f, 3.0f, 4.0f, 0.25f});
  expect_as_separate_buffers(g, x);
  const Executor ex = run(g, true, x);
  EXPECT_EQ(ex.forward_event().op_type, "BatchNormalization");
  EXPECT_EQ(ex.value(g.find_value("y")).data<float>()[0], 6.0f);
}

// A Constant limit of +Inf is itself a first producer (after the BatchNormalization, which is finite here): it runs.
TEST(InPlace, AnInfiniteConstantLimitStillRunsAndIsReported) {
  const Graph g = batch_norm_then("Clip6", 2.0f, false, kPlusInf);
  const Tensor x = Tensor::from<float>({1, 2, 3}, {0.5f, 2.0f, 1.0f, 3.0f, 4.0f, 0.25f});
  expect_as_separate_buffers(g, x);
  const Executor ex = run(g, true, x);
  ASSERT_TRUE(ex.forward_event().found);
  EXPECT_EQ(ex.forward_event().op_type, "Constant");
}

// Batch 1 clamps runs of whole channels (two runs here: a channel of 64·64 values each), batches clamp
// the whole tensor: a NaN, an Inf and values beyond both limits in each run.
TEST(InPlace, FusedRunsAndBatchesPropagateAsApart) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 2, 64, 64}, std::vector<int64_t>{3, 2, 5, 7}}) {
    Tensor x(DType::Float32, Shape(dims));
    float* p = x.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>((i * 37) % 101) * 0.05f - 1.0f;
    p[5] = kQuietNaN;
    p[x.numel() / 2 + 3] = kPlusInf;
    p[x.numel() - 1] = -kPlusInf;
    for (const char* tail : {"Relu", "Clip6"}) {
      SCOPED_TRACE(tail);
      expect_as_separate_buffers(batch_norm_then(tail, 2.0f, false, 6.0f, dims), x);
    }
  }
}

// The residual Add before its Relu, fused: NaN and Inf pass as apart; an Add overflowing to +Inf (3e38 + 3e38,
// which a Clip would clamp to 6) is still reported, with its operands.
TEST(InPlace, AnAddWithItsClampPropagatesAndIsReportedAsApart) {
  for (const char* tail : {"Relu", "Clip"}) {
    SCOPED_TRACE(tail);
    GraphBuilder b;
    b.input("x", DType::Float32, {4})
        .constant("lo", Tensor::from<float>({}, {0.0f}))
        .constant("hi", Tensor::from<float>({}, {6.0f}))
        .node("Neg", {"x"}, {"m"})
        .node("Abs", {"x"}, {"k"})
        .node("Add", {"m", "k"}, {"a"});
    if (std::string(tail) == "Clip") b.node("Clip", {"a", "lo", "hi"}, {"y"});
    else b.node("Relu", {"a"}, {"y"});
    const Graph g = b.output("y").build();
    expect_as_separate_buffers(g, Tensor::from<float>({4}, {kQuietNaN, kPlusInf, -3.0f, 0.5f}));
    const Tensor big = Tensor::from<float>({4}, {1.0f, -3e38f, 2.0f, -3e38f});
    expect_as_separate_buffers(g, big);
    const Executor ex = run(g, true, big);
    ASSERT_TRUE(ex.forward_event().found);
    EXPECT_EQ(ex.forward_event().value_name, "a");
    EXPECT_EQ(ex.forward_event().first_index, std::vector<int64_t>{1});
  }
}
