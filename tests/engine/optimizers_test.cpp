// Optimizers follow their framework's update rule exactly. PyTorch expectations were computed with
// Debian's torch 1.13 (torch.optim, float64); TensorFlow ones from TF1's documented update rules
// (tf.train.*Optimizer), re-derived in numpy. Three steps from w = [0.5, -1.2, 2.0] with fixed gradients.
#include <gtest/gtest.h>

#include "engine/optimizers.h"
#include "support/op_test_util.h"

using namespace grist;

namespace {

std::vector<double> three_steps(OptimizerConfig c) {
  Tensor w = Tensor::from<double>({3}, {0.5, -1.2, 2.0});
  const Tensor grads[3] = {Tensor::from<double>({3}, {0.1, -0.3, 0.7}), Tensor::from<double>({3}, {-0.2, 0.05, 0.4}),
                           Tensor::from<double>({3}, {0.3, 0.0, -0.6})};
  Optimizer opt(c, {});
  for (const Tensor& g : grads) {
    Tensor* p = &w;
    const Tensor* gp = &g;
    EXPECT_TRUE(opt.step(std::span<Tensor* const>(&p, 1), std::span<const Tensor* const>(&gp, 1)).is_ok());
  }
  return {w.data<double>()[0], w.data<double>()[1], w.data<double>()[2]};
}

OptimizerConfig make(OptimizerKind k, Framework f, double lr) {
  OptimizerConfig c = OptimizerConfig::defaults(k, f);
  c.lr = lr;
  return c;
}

void expect_near3(const std::vector<double>& got, std::vector<double> want) {
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-12 + 1e-10 * std::fabs(want[i])) << "element " << i;
}

}  // namespace

TEST(Optimizers, PlainSgdMatchesPyTorch) {
  expect_near3(three_steps(make(OptimizerKind::SGD, Framework::PyTorch, 0.1)), {0.48, -1.175, 1.95});
}

TEST(Optimizers, SgdMomentumMatchesPyTorch) {
  auto c = make(OptimizerKind::SGD, Framework::PyTorch, 0.1);
  c.momentum = 0.9;
  expect_near3(three_steps(c), {0.4809, -1.1282, 1.7943});
  c.nesterov = true;
  expect_near3(three_steps(c), {0.46281, -1.11038, 1.76487});
}

TEST(Optimizers, AdamMatchesPyTorch) {
  expect_near3(three_steps(make(OptimizerKind::Adam, Framework::PyTorch, 0.1)),
               {0.402286253947743, -1.00451714416806, 1.78409910124188});
  auto c = make(OptimizerKind::Adam, Framework::PyTorch, 0.1);
  c.weight_decay = 0.01;
  expect_near3(three_steps(c), {0.39786584596805, -0.996394375144245, 1.78085360081847});
}

TEST(Optimizers, AdamTensorFlowUsesEpsilonHat) {
  expect_near3(three_steps(make(OptimizerKind::Adam, Framework::TensorFlow, 0.1)),
               {0.402286538136557, -1.00451734071547, 1.78409918682628});
}

TEST(Optimizers, AdagradMatchesPyTorchAndTensorFlow) {
  expect_near3(three_steps(make(OptimizerKind::Adagrad, Framework::PyTorch, 0.1)),
               {0.409264346607693, -1.11643989875846, 1.91008833759141});
  // TF1: accumulator starts at 0.1 and there is no epsilon.
  expect_near3(three_steps(make(OptimizerKind::Adagrad, Framework::TensorFlow, 0.1)),
               {0.460251399922076, -1.1425713374848, 1.9196292205234});
}

TEST(Optimizers, RmsPropMatchesPyTorch) {
  expect_near3(three_steps(make(OptimizerKind::RMSProp, Framework::PyTorch, 0.1)),
               {-0.408180717527459, -0.36520492886186, 1.10238621550064});
  auto c = make(OptimizerKind::RMSProp, Framework::PyTorch, 0.1);
  c.centered = true;
  c.momentum = 0.5;
  expect_near3(three_steps(c), {-0.719115412880881, 0.310179306182667, 0.0882455417897168});
}

TEST(Optimizers, RmsPropTensorFlowStartsMeanSquareAtOne) {
  expect_near3(three_steps(make(OptimizerKind::RMSProp, Framework::TensorFlow, 0.1)),
               {0.476802594534754, -1.17406130117097, 1.95155736119839});
  auto c = make(OptimizerKind::RMSProp, Framework::TensorFlow, 0.1);
  c.centered = true;
  c.momentum = 0.5;
  expect_near3(three_steps(c), {0.479970910771299, -1.1532006645865, 1.87554575630863});
}

TEST(Optimizers, MissingGradientLeavesParameterAlone) {
  Tensor w = Tensor::from<double>({2}, {1.0, 2.0});
  Optimizer opt(make(OptimizerKind::Adam, Framework::PyTorch, 0.1), {});
  Tensor* p = &w;
  const Tensor* g = nullptr;
  ASSERT_TRUE(opt.step(std::span<Tensor* const>(&p, 1), std::span<const Tensor* const>(&g, 1)).is_ok());
  EXPECT_EQ(w.data<double>()[0], 1.0);
  EXPECT_EQ(w.data<double>()[1], 2.0);
}

TEST(Optimizers, MismatchedGradientIsAnError) {
  Tensor w = Tensor::from<double>({2}, {1.0, 2.0});
  Tensor g = Tensor::from<double>({3}, {1.0, 2.0, 3.0});
  Optimizer opt(make(OptimizerKind::SGD, Framework::PyTorch, 0.1), {});
  Tensor* p = &w;
  const Tensor* gp = &g;
  EXPECT_FALSE(opt.step(std::span<Tensor* const>(&p, 1), std::span<const Tensor* const>(&gp, 1)).is_ok());
}

TEST(Optimizers, ParsesNamesCaseInsensitively) {
  EXPECT_EQ(*parse_optimizer_kind("Adam"), OptimizerKind::Adam);
  EXPECT_EQ(*parse_optimizer_kind("RMSProp"), OptimizerKind::RMSProp);
  EXPECT_FALSE(parse_optimizer_kind("lbfgs").is_ok());
}
