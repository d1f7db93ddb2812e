// Loss scaling as torch.cuda.amp.GradScaler does it: its state machine, rule by rule (PyTorch's own kernels,
// _amp_update_scale_ and _amp_foreach_non_finite_check_and_unscale_, have no CPU version in Debian's torch 1.13,
// so the rules are pinned here from their source), and its step on an executor's gradients.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "engine/grad_scaler.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::GraphBuilder;
using grist::testing::attr_int;

namespace {

TEST(GradScalerRules, StartsAtGradScalersDefaults) {
  GradScaler s;
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.config().growth_factor, 2.0);
  EXPECT_EQ(s.config().backoff_factor, 0.5);
  EXPECT_EQ(s.config().growth_interval, 2000);
  EXPECT_FALSE(s.collapsed());
}

TEST(GradScalerRules, AnInfGradientHalvesTheScaleAndResetsTheTracker) {
  GradScaler s;
  for (int i = 0; i < 5; ++i) s.update(false);
  EXPECT_EQ(s.growth_tracker(), 5);
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(GradScalerRules, TheScaleDoublesAfter2000ConsecutiveGoodSteps) {
  GradScaler s;
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.growth_tracker(), 1999);
  s.update(false);  // the 2000th
  EXPECT_EQ(s.scale(), 131072.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(GradScalerRules, ASkippedStepRestartsTheCountTowardsGrowth) {
  GradScaler s;
  for (int i = 0; i < 1500; ++i) s.update(false);
  s.update(true);  // 32768, tracker 0
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 32768.0f);
  s.update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
}

TEST(GradScalerRules, GrowthThatWouldOverflowFloat32KeepsTheScale) {
  GradScaler s(GradScalerConfig{std::ldexp(1.0, 127), 2.0, 0.5, 3});
  for (int i = 0; i < 3; ++i) s.update(false);
  EXPECT_EQ(s.scale(), std::ldexp(1.0f, 127));  // 2^128 is inf in float32: not taken
  EXPECT_EQ(s.growth_tracker(), 0);             // the tracker resets all the same
}

TEST(GradScalerRules, SeventeenBackoffsFrom65536FallBelowTheFloorAndEnoughReachZero) {
  GradScaler s;
  for (int i = 0; i < 16; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_FALSE(s.collapsed());
  s.update(true);
  EXPECT_EQ(s.scale(), 0.5f);
  EXPECT_TRUE(s.collapsed());
  // float32 halvings: 2^-149 (the least subnormal) and then 0, as the float32 tensor PyTorch keeps would.
  for (int i = 0; i < 148; ++i) s.update(true);
  EXPECT_EQ(s.scale(), std::ldexp(1.0f, -149));
  s.update(true);
  EXPECT_EQ(s.scale(), 0.0f);
  EXPECT_TRUE(s.collapsed());
  EXPECT_EQ(s.skipped_steps(), 17 + 149);
}

TEST(GradScalerRules, UnscaleMultipliesByTheFloat32ReciprocalAndFlagsInfAndNan) {
  GradScaler s(GradScalerConfig{3.0});  // 1/3 is not exact: the reciprocal is rounded to float32 first
  Tensor a = Tensor::from<float>({3}, {3.0f, -6.0f, 1.0f});
  std::vector<Tensor> out;
  std::vector<const Tensor*> grads{&a, nullptr};
  EXPECT_TRUE(s.unscale(grads, out));
  ASSERT_EQ(out.size(), 2u);
  const float inv = static_cast<float>(1.0 / 3.0);
  EXPECT_EQ(out[0].data<float>()[0], 3.0f * inv);
  EXPECT_EQ(out[0].data<float>()[1], -6.0f * inv);
  EXPECT_EQ(out[0].data<float>()[2], 1.0f * inv);
  EXPECT_FALSE(out[1].defined());
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    Tensor b = Tensor::from<float>({2}, {1.0f, bad});
    std::vector<const Tensor*> with_bad{&a, &b};
    EXPECT_FALSE(s.unscale(with_bad, out));
  }
}

TEST(GradScalerRules, TheSeedIsTheScaleShapedLikeTheLoss) {
  GradScaler s;
  Tensor loss = Tensor::from<float>({2}, {0.5f, 1.0f});
  Tensor seed;
  s.fill_seed(loss, seed);
  ASSERT_EQ(seed.shape(), loss.shape());
  EXPECT_EQ(seed.data<float>()[0], 65536.0f);
  EXPECT_EQ(seed.data<float>()[1], 65536.0f);
}

// loss = Σ sqrt(w) + Σ w·x: at w = 0 sqrt′ is ∞ at every scale, so every step is skipped until the scale
// collapses; the optimizer never moves w.
TEST(GradScalerStep, AGradientInfiniteAtEveryScaleSkipsEveryStepUntilTheScaleCollapses) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .constant("w", Tensor::from<float>({2}, {0.0f, 1.0f}))
                .node("Sqrt", {"w"}, {"r"})
                .node("Mul", {"w", "x"}, {"wx"})
                .node("Add", {"r", "wx"}, {"s"})
                .node("ReduceSum", {"s"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  ExecutorOptions eo;
  eo.precision = Precision::AmpFp16;
  auto ex = Executor::create(g, eo);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  const ValueId w = g.find_value("w"), loss = g.find_value("loss");
  OptimizerConfig oc = OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch);
  Optimizer opt(oc, {w});
  GradScaler s;
  Tensor seed;
  int steps = 0;
  while (!s.collapsed() && steps < 100) {
    ASSERT_TRUE(ex->set_input("x", Tensor::from<float>({2}, {1.0f, 2.0f})).is_ok());
    ASSERT_TRUE(ex->forward().is_ok());
    s.fill_seed(ex->value(loss), seed);
    const Tensor* sp = &seed;
    ASSERT_TRUE(ex->backward(std::span(&loss, 1), std::span(&sp, 1), std::span(&w, 1)).is_ok());
    auto stepped = s.step(opt, *ex);
    ASSERT_TRUE(stepped.is_ok());
    EXPECT_FALSE(*stepped);
    s.update();
    ++steps;
  }
  EXPECT_EQ(steps, 17);
  EXPECT_EQ(s.skipped_steps(), 17);
  EXPECT_EQ(opt.steps_taken(), 0);
  EXPECT_EQ(ex->value(w).data<float>()[1], 1.0f);
}

// With finite scaled gradients the optimizer sees the unscaled ones: one SGD step of lr 0.01 on
// loss = Σ w·x moves w by −0.01·x, exactly as without scaling (x and the scale are powers of two).
TEST(GradScalerStep, AFiniteStepUsesTheUnscaledGradients) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {2})
                .constant("w", Tensor::from<float>({2}, {1.0f, 1.0f}))
                .node("Mul", {"w", "x"}, {"wx"})
                .node("ReduceSum", {"wx"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  ExecutorOptions eo;
  eo.precision = Precision::AmpFp16;
  auto ex = Executor::create(g, eo);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  const ValueId w = g.find_value("w"), loss = g.find_value("loss");
  Optimizer opt(OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch), {w});
  GradScaler s(GradScalerConfig{1024.0});
  Tensor seed;
  ASSERT_TRUE(ex->set_input("x", Tensor::from<float>({2}, {0.5f, 2.0f})).is_ok());
  ASSERT_TRUE(ex->forward().is_ok());
  s.fill_seed(ex->value(loss), seed);
  const Tensor* sp = &seed;
  ASSERT_TRUE(ex->backward(std::span(&loss, 1), std::span(&sp, 1), std::span(&w, 1)).is_ok());
  EXPECT_EQ(ex->grad(w)->data<float>()[1], 2048.0f);  // scaled
  auto stepped = s.step(opt, *ex);
  ASSERT_TRUE(stepped.is_ok());
  EXPECT_TRUE(*stepped);
  s.update();
  EXPECT_EQ(s.growth_tracker(), 1);
  EXPECT_FLOAT_EQ(ex->value(w).data<float>()[0], 1.0f - 0.01f * 0.5f);
  EXPECT_FLOAT_EQ(ex->value(w).data<float>()[1], 1.0f - 0.01f * 2.0f);
}

// w1 read once, w2 twice (its gradient a sum of two edges): loss = Σ (w1·x + w2·x + w2·x).
Graph two_weights_three_uses() {
  return GraphBuilder()
      .input("x", DType::Float32, {3})
      .constant("w1", Tensor::from<float>({3}, {0.3f, -1.7f, 2.9f}))
      .constant("w2", Tensor::from<float>({3}, {1.1f, 0.45f, -0.8f}))
      .node("Mul", {"w1", "x"}, {"a"})
      .node("Mul", {"w2", "x"}, {"b"})
      .node("Mul", {"x", "w2"}, {"c"})
      .node("Add", {"a", "b"}, {"ab"})
      .node("Add", {"ab", "c"}, {"s"})
      .node("ReduceSum", {"s"}, {"loss"}, {{"keepdims", attr_int(0)}})
      .output("loss")
      .build();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// step() checks the gradients with the backward's own scan and unscales inside the optimizer's update; that is
// unscale() then the optimizer's step on the unscaled copies, bit for bit, for every rule (a scale whose
// reciprocal is inexact, weight decay on, so the unscaled gradient is added to before it is used).
TEST(GradScalerStep, TheFusedStepIsUnscaleThenStepBitForBit) {
  const Graph g = two_weights_three_uses();
  const std::vector<ValueId> params = {g.find_value("w1"), g.find_value("w2")};
  const ValueId loss = g.find_value("loss");
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Adagrad, OptimizerKind::RMSProp})
    for (Framework fw : {Framework::PyTorch, Framework::TensorFlow}) {
      OptimizerConfig oc = OptimizerConfig::defaults(kind, fw);
      oc.momentum = kind == OptimizerKind::Adam ? 0.0 : 0.9;
      oc.centered = kind == OptimizerKind::RMSProp;
      oc.weight_decay = 0.01;
      SCOPED_TRACE(std::string(optimizer_kind_name(kind)) + (fw == Framework::PyTorch ? " torch" : " tf"));
      auto fused_ex = Executor::create(g), split_ex = Executor::create(g);
      ASSERT_TRUE(fused_ex.is_ok() && split_ex.is_ok());
      Optimizer fused_opt(oc, params), split_opt(oc, params);
      GradScaler fused(GradScalerConfig{3000.0}), split(GradScalerConfig{3000.0});
      Tensor seed;
      std::vector<Tensor> unscaled;
      for (int k = 0; k < 3; ++k) {
        const Tensor x = Tensor::from<float>({3}, {0.7f + 0.1f * static_cast<float>(k), -1.3f, 2.2f});
        for (Executor* e : {&*fused_ex, &*split_ex}) {
          ASSERT_TRUE(e->set_input("x", x).is_ok());
          ASSERT_TRUE(e->forward().is_ok());
          fused.fill_seed(e->value(loss), seed);
          const Tensor* sp = &seed;
          ASSERT_TRUE(e->backward(std::span(&loss, 1), std::span(&sp, 1), params).is_ok());
        }
        auto stepped = fused.step(fused_opt, *fused_ex);
        ASSERT_TRUE(stepped.is_ok() && *stepped);
        std::vector<const Tensor*> grads = {split_ex->grad(params[0]), split_ex->grad(params[1])};
        ASSERT_TRUE(split.unscale(grads, unscaled));
        std::vector<Tensor*> ws = {&split_ex->mutable_value(params[0]), &split_ex->mutable_value(params[1])};
        std::vector<const Tensor*> us = {&unscaled[0], &unscaled[1]};
        ASSERT_TRUE(split_opt.step(ws, us).is_ok());
      }
      for (ValueId id : params) EXPECT_TRUE(same_bits(fused_ex->value(id), split_ex->value(id))) << g.value(id).name;
      EXPECT_FALSE(same_bits(fused_ex->value(params[0]), *g.value(params[0]).initial)) << "w1 moved";
    }
}

// A gradient summed over two uses can overflow although each use's part is finite: the step sees the sum's inf
// (w2's edges are 2e38 each here), not only what the scan saw edge by edge.
TEST(GradScalerStep, AGradientWhoseSumOverflowsSkipsTheStep) {
  const Graph g = two_weights_three_uses();
  auto ex = Executor::create(g);
  ASSERT_TRUE(ex.is_ok());
  const ValueId loss = g.find_value("loss"), w2 = g.find_value("w2");
  Optimizer opt(OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch), {w2});
  GradScaler s(GradScalerConfig{1.0});
  ASSERT_TRUE(ex->set_input("x", Tensor::from<float>({3}, {2e38f, 1.0f, 1.0f})).is_ok());
  ASSERT_TRUE(ex->forward().is_ok());
  Tensor seed;
  s.fill_seed(ex->value(loss), seed);
  const Tensor* sp = &seed;
  ASSERT_TRUE(ex->backward(std::span(&loss, 1), std::span(&sp, 1), std::span(&w2, 1)).is_ok());
  ASSERT_TRUE(std::isinf(ex->grad(w2)->data<float>()[0]));
  auto stepped = s.step(opt, *ex);
  ASSERT_TRUE(stepped.is_ok());
  EXPECT_FALSE(*stepped);
  EXPECT_EQ(opt.steps_taken(), 0);
}

}  // namespace
