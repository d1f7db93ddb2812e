// Nodes on float16/bfloat16 tensors: computed in float32 and rounded once to the half type (PyTorch's CPU
// rule), forward and backward; non-float results and casts keep their types; no allocation once warm. And
// --precision for float32 models: fp16/bf16 round everything, amp-* what autocast computes in the format.
#include <cmath>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"
#include "tensor/half.h"

using namespace grist;
using grist::testing::attr_int;
using grist::testing::GraphBuilder;

namespace {

Tensor in_type(DType t, const Shape& shape, std::initializer_list<float> values) {
  Tensor f = Tensor::from<float>(shape, values), h;
  cast_tensor(f, t, h);
  return h;
}

Executor make_executor(const Graph& g) {
  auto ex = Executor::create(g);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  return std::move(ex).value();
}

Graph binary(const char* op, DType t) {
  return GraphBuilder().input("a", t, {-1}).input("b", t, {-1}).node(op, {"a", "b"}, {"y"}).output("y").build();
}

TEST(HalfExecutor, AnAddIsRoundedOnceToFloat16) {
  Graph g = binary("Add", DType::Float16);
  Executor ex = make_executor(g);
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even, 1. 2048 + 1 is not representable: 2048.
  ASSERT_TRUE(ex.set_input("a", in_type(DType::Float16, {3}, {1.0f, 2048.0f, 60000.0f})).is_ok());
  ASSERT_TRUE(ex.set_input("b", in_type(DType::Float16, {3}, {0x1p-11f, 1.0f, 6000.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  const Tensor& y = ex.value(g.find_value("y"));
  ASSERT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(y.get_as_double(0), 1.0);
  EXPECT_EQ(y.get_as_double(1), 2048.0);
  EXPECT_TRUE(std::isinf(y.get_as_double(2)));  // 66000 > 65504
  ASSERT_TRUE(ex.forward_event().found);
  EXPECT_EQ(ex.forward_event().op_type, "Add");
}

TEST(HalfExecutor, BFloat16KeepsFloat32sRangeWithEightBitsOfMantissa) {
  Graph g = binary("Mul", DType::BFloat16);
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("a", in_type(DType::BFloat16, {2}, {1e30f, 1.0f + 0x1p-7f})).is_ok());
  ASSERT_TRUE(ex.set_input("b", in_type(DType::BFloat16, {2}, {1e5f, 1.0f + 0x1p-7f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  const Tensor& y = ex.value(g.find_value("y"));
  ASSERT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_FALSE(ex.forward_event().found);  // 1e35 is far from overflow in bfloat16
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14, rounded to 8 bits: 1 + 2^-6.
  EXPECT_EQ(y.get_as_double(1), 1.0 + 0x1p-6);
}

TEST(HalfExecutor, ExpOfTwelveOverflowsInFloat16Only) {
  for (DType t : {DType::Float32, DType::Float16}) {
    Graph g = GraphBuilder().input("x", t, {1}).node("Exp", {"x"}, {"y"}).output("y").build();
    Executor ex = make_executor(g);
    ASSERT_TRUE(ex.set_input("x", in_type(t, {1}, {12.0f})).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    EXPECT_EQ(ex.forward_event().found, t == DType::Float16) << dtype_name(t);  // e^12 ≈ 162755 > 65504
    if (t == DType::Float16) {
      EXPECT_EQ(ex.forward_event().node_name, g.nodes[0].name);
    }
  }
}

TEST(HalfExecutor, AMatMulAccumulatesInFloat32AndRoundsOnce) {
  Graph g = GraphBuilder()
                .input("x", DType::Float16, {1, 3})
                .constant("w", in_type(DType::Float16, {3, 1}, {1, 1, 1}))
                .node("MatMul", {"x", "w"}, {"y"})
                .output("y")
                .build();
  Executor ex = make_executor(g);
  // Summed in half, 1 + 2^-11 would round to 1 twice; in float32 the sum is 1 + 2^-10, which half holds.
  ASSERT_TRUE(ex.set_input("x", in_type(DType::Float16, {1, 3}, {1.0f, 0x1p-11f, 0x1p-11f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(g.find_value("y")).data<Half>()[0].bits, 0x3c01u);
}

TEST(HalfExecutor, GradientsOfHalfTensorsAreHalf) {
  Graph g = GraphBuilder()
                .input("x", DType::Float16, {3})
                .node("Mul", {"x", "x"}, {"sq"})
                .node("ReduceSum", {"sq"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("x", in_type(DType::Float16, {3}, {1.5f, -3.0f, 40000.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_TRUE(std::isinf(ex.value(g.find_value("loss")).get_as_double(0)));
  EXPECT_EQ(ex.forward_event().op_type, "Mul");  // 40000² overflows in the product already
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  const Tensor* gx = ex.grad(g.find_value("x"));
  ASSERT_NE(gx, nullptr);
  ASSERT_EQ(gx->dtype(), DType::Float16);
  // d/dx x·x = 2x through both edges of Mul (accumulated in half): 3, -6; 80000 overflows.
  EXPECT_EQ(gx->get_as_double(0), 3.0);
  EXPECT_EQ(gx->get_as_double(1), -6.0);
  EXPECT_TRUE(std::isinf(gx->get_as_double(2)));
}

TEST(HalfExecutor, NonFloatResultsAndCastsKeepTheirTypes) {
  Graph g = GraphBuilder()
                .input("a", DType::Float16, {2})
                .input("b", DType::Float16, {2})
                .node("Greater", {"a", "b"}, {"gt"})
                .node("Shape", {"a"}, {"shape"})
                .node("ArgMax", {"a"}, {"arg"})
                .node("Cast", {"a"}, {"wide"}, {{"to", attr_int(static_cast<int64_t>(DType::Float32))}})
                .node("Add", {"wide", "wide"}, {"sum32"})
                .output("gt")
                .output("shape")
                .output("arg")
                .output("sum32")
                .build();
  Executor ex = make_executor(g);
  ASSERT_TRUE(ex.set_input("a", in_type(DType::Float16, {2}, {40000.0f, 2.0f})).is_ok());
  ASSERT_TRUE(ex.set_input("b", in_type(DType::Float16, {2}, {1.0f, 3.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(g.find_value("gt")).dtype(), DType::Bool);
  EXPECT_EQ(ex.value(g.find_value("shape")).dtype(), DType::Int64);
  EXPECT_EQ(ex.value(g.find_value("arg")).dtype(), DType::Int64);
  const Tensor& sum = ex.value(g.find_value("sum32"));
  ASSERT_EQ(sum.dtype(), DType::Float32);
  EXPECT_EQ(sum.data<float>()[0], 80000.0f);  // computed in float32 after the Cast: no overflow
  EXPECT_FALSE(ex.forward_event().found);
}

TEST(HalfExecutor, SteadyStateIterationsAllocateNothing) {
  Graph g = GraphBuilder()
                .input("x", DType::Float16, {-1, 4})
                .constant("w", in_type(DType::Float16, {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
                .constant("b", in_type(DType::Float16, {3}, {0.1f, 0.2f, 0.3f}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Add", {"h", "b"}, {"hb"})
                .node("Tanh", {"hb"}, {"t"})
                .node("Softmax", {"t"}, {"p"}, {{"axis", attr_int(1)}})
                .node("Log", {"p"}, {"lp"})
                .node("ReduceMean", {"lp"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g);
  Tensor x = in_type(DType::Float16, {2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, -0.1f, -0.2f, 0.5f, 0.0f});
  ValueId loss = g.find_value("loss");
  auto iterate = [&] {
    ASSERT_TRUE(ex.set_input("x", x).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    ASSERT_TRUE(ex.backward(loss).is_ok());
  };
  iterate();
  iterate();
  ASSERT_EQ(ex.grad(g.find_value("w"))->dtype(), DType::Float16);
  const uint64_t before = Tensor::allocation_count();
  for (int i = 0; i < 10; ++i) iterate();
  EXPECT_EQ(Tensor::allocation_count(), before);
}

// --precision for float32 models: values stay float32, rounded to the 16-bit format where the mode says.

Executor make_executor(const Graph& g, Precision p) {
  ExecutorOptions o;
  o.precision = p;
  auto ex = Executor::create(g, o);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  return std::move(ex).value();
}

bool holds_half_values(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (half_bits_to_float(float_to_half_bits(v)) != v && !std::isnan(v)) return false;
  }
  return true;
}

TEST(SimulatedPrecision, Fp16RoundsEveryOutputAndOverflowsWhereFloat16Would) {
  Graph g = GraphBuilder().input("x", DType::Float32, {2}).node("Exp", {"x"}, {"y"}).output("y").build();
  for (Precision p : {Precision::Fp32, Precision::Fp16, Precision::Bf16}) {
    Executor ex = make_executor(g, p);
    ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({2}, {0.1f, 12.0f})).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    const Tensor& y = ex.value(g.find_value("y"));
    ASSERT_EQ(y.dtype(), DType::Float32);  // stored as float32 whatever the mode
    EXPECT_EQ(ex.forward_event().found, p == Precision::Fp16) << precision_name(p);
    const float e01 = std::exp(0.1f);
    const float expected = p == Precision::Fp16   ? half_bits_to_float(float_to_half_bits(e01))
                           : p == Precision::Bf16 ? bfloat16_bits_to_float(float_to_bfloat16_bits(e01))
                                                  : e01;
    EXPECT_EQ(y.data<float>()[0], expected) << precision_name(p);
  }
}

TEST(SimulatedPrecision, Fp16RoundsInputsAndGradients) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .node("Mul", {"x", "x"}, {"sq"})
                .node("ReduceSum", {"sq"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g, Precision::Fp16);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({2}, {1.0f + 0x1p-12f, 0.3f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(g.find_value("x")).data<float>()[0], 1.0f);  // the input itself rounded (1 + 2^-12 → 1)
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  const Tensor* gx = ex.grad(g.find_value("x"));
  ASSERT_NE(gx, nullptr);
  EXPECT_TRUE(holds_half_values(*gx));
  EXPECT_EQ(gx->data<float>()[0], 2.0f);
}

TEST(SimulatedPrecision, AutocastRunsMatMulInTheFormatAndKeepsExpInFloat32) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 2})
                .constant("w", Tensor::from<float>({2, 1}, {1.0f, 1.0f}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Exp", {"h"}, {"y"})
                .node("Add", {"h", "h"}, {"hh"})
                .output("y")
                .output("hh")
                .build();
  // x·w = 6 + 6.0001: the MatMul reads its inputs cast to float16 (6.0001 → 6) and rounds its result; Exp reads
  // that float16 value and stays float32 (e^12 ≈ 162755 does not overflow); Add follows its float16 inputs.
  Executor amp = make_executor(g, Precision::AmpFp16);
  ASSERT_TRUE(amp.set_input("x", Tensor::from<float>({1, 2}, {6.0f, 6.0001f})).is_ok());
  ASSERT_TRUE(amp.forward().is_ok());
  EXPECT_EQ(amp.value(g.find_value("h")).data<float>()[0], 12.0f);
  EXPECT_EQ(amp.value(g.find_value("y")).data<float>()[0], std::exp(12.0f));
  EXPECT_FALSE(amp.forward_event().found);
  EXPECT_EQ(amp.value(g.find_value("x")).data<float>()[1], 6.0001f);  // autocast leaves inputs in float32
  Executor fp16 = make_executor(g, Precision::Fp16);
  ASSERT_TRUE(fp16.set_input("x", Tensor::from<float>({1, 2}, {6.0f, 6.0001f})).is_ok());
  ASSERT_TRUE(fp16.forward().is_ok());
  ASSERT_TRUE(fp16.forward_event().found);
  EXPECT_EQ(fp16.forward_event().op_type, "Exp");
}

TEST(SimulatedPrecision, AutocastFollowsTheInputsTypeAndGradientsToo) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 2})
                .constant("w", Tensor::from<float>({2, 1}, {0.5f, 0.25f}))
                .constant("b", Tensor::from<float>({1}, {1e-4f}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Add", {"h", "b"}, {"hb"})   // a weight beside a float16 value: float16 (a split linear)
                .node("Add", {"hb", "x"}, {"mixed"})  // a float32 activation joins: float32
                .node("ReduceSum", {"mixed"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g, Precision::AmpFp16);
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({1, 2}, {1.0f, 0.3f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_TRUE(holds_half_values(ex.value(g.find_value("hb"))));
  const float hb = ex.value(g.find_value("hb")).data<float>()[0];
  EXPECT_EQ(ex.value(g.find_value("mixed")).data<float>()[1], hb + 0.3f);  // not rounded
  ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  // The gradient reaching the weight went through the float16 MatMul: float16 values.
  const Tensor* gw = ex.grad(g.find_value("w"));
  ASSERT_NE(gw, nullptr);
  EXPECT_TRUE(holds_half_values(*gw));
  // 0.3 as float16 is 0.2998..., the MatMul saw that: dL/dw1 = 2 · x1 (both Add outputs' columns sum to 2).
  EXPECT_EQ(gw->data<float>()[1], 2.0f * half_bits_to_float(float_to_half_bits(0.3f)));
}

TEST(SimulatedPrecision, AutocastSteadyStateAllocatesNothing) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 4})
                .constant("w", Tensor::from<float>({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
                .node("MatMul", {"x", "w"}, {"h"})
                .node("Tanh", {"h"}, {"t"})
                .node("Softmax", {"t"}, {"p"}, {{"axis", attr_int(1)}})
                .node("Log", {"p"}, {"lp"})
                .node("ReduceMean", {"lp"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  Executor ex = make_executor(g, Precision::AmpBf16);
  Tensor x = Tensor::from<float>({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, -0.1f, -0.2f, 0.5f, 0.0f});
  auto iterate = [&] {
    ASSERT_TRUE(ex.set_input("x", x).is_ok());
    ASSERT_TRUE(ex.forward().is_ok());
    ASSERT_TRUE(ex.backward(g.find_value("loss")).is_ok());
  };
  iterate();
  iterate();
  const uint64_t before = Tensor::allocation_count();
  for (int i = 0; i < 10; ++i) iterate();
  EXPECT_EQ(Tensor::allocation_count(), before);
}

// The rounded copy of a weight is kept between passes, and made again as soon as the weight changes: through
// mutable_value (an optimizer step, the weight search) or set_input.
TEST(SimulatedPrecision, AutocastRoundsAWeightAgainOnlyAfterItChanges) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 2})
                .constant("w", Tensor::from<float>({2, 1}, {0.1f, 0.0f}))
                .node("MatMul", {"x", "w"}, {"y"})
                .output("y")
                .build();
  Executor ex = make_executor(g, Precision::AmpFp16);
  const ValueId w = g.find_value("w"), y = g.find_value("y");
  auto half = [](float v) { return half_bits_to_float(float_to_half_bits(v)); };
  ASSERT_TRUE(ex.set_input("x", Tensor::from<float>({1, 2}, {1.0f, 1.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(y).data<float>()[0], half(0.1f));
  ASSERT_TRUE(ex.forward().is_ok());  // the cached copy
  EXPECT_EQ(ex.value(y).data<float>()[0], half(0.1f));
  ex.mutable_value(w).data<float>()[1] = 0.3f;
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(y).data<float>()[0], half(half(0.1f) + half(0.3f)));
  ASSERT_TRUE(ex.set_input("w", Tensor::from<float>({2, 1}, {0.7f, 0.0f})).is_ok());
  ASSERT_TRUE(ex.forward().is_ok());
  EXPECT_EQ(ex.value(y).data<float>()[0], half(0.7f));
  // The master weight itself stays float32.
  EXPECT_EQ(ex.value(w).data<float>()[0], 0.7f);
}

}  // namespace
