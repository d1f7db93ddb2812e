// Training checkpoints (engine/checkpoint.h): resuming from one at its step gives the very update continuing
// would have given (Adam's moments and bias correction included), and every checkpoint that does not fit the
// model or its optimizer is refused rather than half used.
#include "engine/checkpoint.h"

#include <cstring>

#include <gtest/gtest.h>

#include "data/npz.h"
#include "data/test_files.h"
#include "support/graph_builder.h"

namespace grist {
namespace {

using testing::GraphBuilder;
using testing::ScratchDir;

Graph two_weights() {
  return GraphBuilder()
      .input("x", DType::Float32, {-1, 2})
      .constant("w1", Tensor::from<float>(Shape{3}, {0.5f, -1.0f, 2.0f}))
      .constant("w2", Tensor::from<float>(Shape{2, 2}, {1.0f, 0.25f, -0.5f, 3.0f}))
      .node("MatMul", {"x", "w2"}, {"o"})
      .output("o")
      .build();
}

// The gradient of step k (made up, different each step).
Tensor gradient(const Tensor& like, int k) {
  Tensor g(DType::Float32, like.shape());
  for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = 0.1f * static_cast<float>((i + 1) * (k % 3 + 1)) - 0.2f;
  return g;
}

// k updates of both weights, from `w`.
void steps(Optimizer& opt, std::vector<Tensor>& w, int from, int count) {
  for (int k = from; k < from + count; ++k) {
    std::vector<Tensor> g = {gradient(w[0], k), gradient(w[1], k)};
    std::vector<Tensor*> params = {&w[0], &w[1]};
    std::vector<const Tensor*> grads = {&g[0], &g[1]};
    ASSERT_TRUE(opt.step(params, grads));
  }
}

// The checkpoint of an optimizer and its weights, as a program would save it.
std::string save(const ScratchDir& dir, const Optimizer& opt, const std::vector<Tensor>& w) {
  const OptimizerState st = opt.state();
  NamedTensors arrays = {{"weight:w1", w[0]}, {"weight:w2", w[1]}};
  const char* names[] = {"w1", "w2"};
  for (size_t k = 0; k < 2; ++k)
    for (auto [slot, tensors] : {std::pair{"first", &st.first}, std::pair{"second", &st.second},
                                 std::pair{"mean", &st.mean}})
      if ((*tensors)[k].defined()) arrays.emplace_back(fmt::format("optimizer.{}:{}", slot, names[k]), (*tensors)[k]);
  arrays.emplace_back("optimizer.steps", Tensor::scalar<int64_t>(st.steps));
  EXPECT_TRUE(write_npz(dir.path("ckpt.npz"), arrays));
  return dir.path("ckpt.npz");
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Checkpoint, ResumingAtItsStepGivesTheUpdateContinuingGives) {
  const Graph g = two_weights();
  const std::vector<ValueId> params = {g.find_value("w1"), g.find_value("w2")};
  for (Framework fw : {Framework::PyTorch, Framework::TensorFlow})
    for (OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::RMSProp, OptimizerKind::SGD}) {
      OptimizerConfig config = OptimizerConfig::defaults(kind, fw);
      config.momentum = kind == OptimizerKind::Adam ? 0.0 : 0.9;
      config.centered = kind == OptimizerKind::RMSProp;
      SCOPED_TRACE(fmt::format("{} {}", optimizer_kind_name(kind), fw == Framework::TensorFlow ? "tf" : "torch"));
      // The program: 5 updates, checkpointed after 3.
      Optimizer program(config, params);
      std::vector<Tensor> w = {*g.value(params[0]).initial, *g.value(params[1]).initial};
      steps(program, w, 0, 3);
      ScratchDir dir;
      auto c = read_checkpoint(save(dir, program, w));
      ASSERT_TRUE(c) << c.message();
      EXPECT_EQ(c->steps, 3);
      steps(program, w, 3, 2);

      // grist resuming: the model with the checkpoint's weights, the optimizer with its state.
      auto resumed = with_checkpoint_weights(g, *c);
      ASSERT_TRUE(resumed) << resumed.message();
      auto state = checkpoint_state(*c, *resumed, params, config);
      ASSERT_TRUE(state) << state.message();
      Optimizer again(config, params);
      again.set_state(std::move(state).value());
      std::vector<Tensor> v = {*resumed->value(params[0]).initial, *resumed->value(params[1]).initial};
      steps(again, v, 3, 2);
      EXPECT_EQ(again.steps_taken(), 5);
      EXPECT_TRUE(same_bits(v[0], w[0]) && same_bits(v[1], w[1])) << "the resumed updates differ from continuing";

      // Restarting the optimizer at step 0 from the same weights is another program (the test can fail).
      Optimizer restarted(config, params);
      std::vector<Tensor> u = {*resumed->value(params[0]).initial, *resumed->value(params[1]).initial};
      steps(restarted, u, 3, 2);
      EXPECT_FALSE(same_bits(u[1], w[1])) << "restarting at step 0 changed nothing: the test shows nothing";
    }
}

TEST(Checkpoint, WhatDoesNotFitTheModelOrTheOptimizerIsRefused) {
  const Graph g = two_weights();
  const std::vector<ValueId> both = {g.find_value("w1"), g.find_value("w2")};
  const OptimizerConfig adam = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::PyTorch);
  const Tensor w1 = *g.value(both[0]).initial, w2 = *g.value(both[1]).initial;
  struct Case {
    NamedTensors arrays;
    std::vector<ValueId> params;
    OptimizerConfig config;
    std::string expected;
  };
  const Tensor steps3 = Tensor::scalar<int64_t>(3);
  const Case cases[] = {
      {{{"w1", w1}}, both, adam, "unexpected array 'w1' (a checkpoint holds weight:NAME"},
      {{{"optimizer.first:w1", w1}}, both, adam, "it holds optimizer state but no optimizer.steps"},
      {{{"optimizer.steps", Tensor::scalar<float>(3)}}, both, adam, "optimizer.steps must be one non-negative integer"},
      {{{"weight:w3", w1}}, both, adam, "weight:w3 names no initializer of the model"},
      {{{"weight:x", w1}}, both, adam, "weight:x names no initializer of the model"},
      {{{"weight:w1", w2}}, both, adam, "weight:w1 is float32 [2, 2], but the model's is float32 [3]"},
      {{{"optimizer.first:w1", w1}, {"optimizer.second:w1", w1}, {"optimizer.first:w2", w2}, {"optimizer.steps", steps3}},
       both, adam, "3 steps taken, but no optimizer.second:w2 (Adam reads it; starting it at zero would change"},
      {{{"optimizer.first:w1", w1}, {"optimizer.second:w1", w1}, {"optimizer.steps", steps3}}, {both[1]}, adam,
       "optimizer.first:w1 is for a weight the optimizer does not train"},
      {{{"optimizer.second:w1", w1}, {"optimizer.steps", steps3}}, both,
       OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch), "optimizer.second is state SGD does not keep"},
      {{{"optimizer.first:w1", w2}, {"optimizer.second:w1", w1}, {"optimizer.first:w2", w2},
        {"optimizer.second:w2", w2}, {"optimizer.steps", steps3}},
       both, adam, "optimizer.first:w1 is float32 [2, 2], but the weight is float32 [3]"},
      {{{"scaler.scale", Tensor::scalar<float>(0)}, {"scaler.growth_tracker", steps3}}, both, adam,
       "scaler.scale must be one positive finite float32"},
      {{{"scaler.scale", Tensor::scalar<double>(1024)}, {"scaler.growth_tracker", steps3}}, both, adam,
       "scaler.scale must be one positive finite float32"},
      {{{"scaler.scale", Tensor::scalar<float>(1024)}, {"scaler.growth_tracker", Tensor::scalar<int64_t>(-1)}}, both,
       adam, "scaler.growth_tracker must be one non-negative integer"},
      {{{"scaler.scale", Tensor::scalar<float>(1024)}}, both, adam,
       "it holds scaler.scale but not scaler.growth_tracker"},
      {{{"scaler.growth_tracker", steps3}}, both, adam, "it holds scaler.growth_tracker but not scaler.scale"},
  };
  for (const Case& c : cases) {
    ScratchDir dir;
    ASSERT_TRUE(write_npz(dir.path("c.npz"), c.arrays));
    auto ckpt = read_checkpoint(dir.path("c.npz"));
    std::string message = ckpt ? "" : ckpt.message();
    if (ckpt) {
      auto resumed = with_checkpoint_weights(g, *ckpt);
      if (!resumed) message = resumed.message();
      else if (auto st = checkpoint_state(*ckpt, g, c.params, c.config); !st) message = st.message();
    }
    EXPECT_NE(message.find(c.expected), std::string::npos) << "got:  " << message << "\nwant: " << c.expected;
    EXPECT_EQ(message.rfind(dir.path("c.npz"), 0), 0u) << "names the file: " << message;
  }
}

// An amp-* program's loss scaler (GradScaler.state_dict()'s scale and _growth_tracker) is read with the rest; a
// checkpoint without one has none (the hunt's scaler starts at GradScaler's defaults).
TEST(Checkpoint, ALossScalersStateIsRead) {
  ScratchDir dir;
  ASSERT_TRUE(write_npz(dir.path("amp.npz"), {{"scaler.scale", Tensor::scalar<float>(512.0f)},
                                              {"scaler.growth_tracker", Tensor::scalar<int64_t>(37)},
                                              {"optimizer.steps", Tensor::scalar<int64_t>(40)}}));
  auto c = read_checkpoint(dir.path("amp.npz"));
  ASSERT_TRUE(c) << c.message();
  ASSERT_TRUE(c->scaler.has_value());
  EXPECT_EQ(c->scaler->scale, 512.0f);
  EXPECT_EQ(c->scaler->growth_tracker, 37);
  EXPECT_EQ(c->scaler->skipped_steps, 0);  // a resumed run counts its own
  ASSERT_TRUE(write_npz(dir.path("plain.npz"), {{"optimizer.steps", Tensor::scalar<int64_t>(40)}}));
  auto plain = read_checkpoint(dir.path("plain.npz"));
  ASSERT_TRUE(plain) << plain.message();
  EXPECT_FALSE(plain->scaler.has_value());
}

}  // namespace
}  // namespace grist
