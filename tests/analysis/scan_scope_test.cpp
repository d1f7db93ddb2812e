// What a proof covers: a weight the training step updates is not a constant, whatever its size; a verdict
// says whether it holds for every run, for the weight ranges the user stated, for the first N steps of the
// optimizer, or only at the initial weights; and the step bound is checked against training itself.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scan.h"
#include "analysis/training_bounds.h"
#include "config/manifest.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "onnx/import.h"
#include "support/graph_builder.h"

using namespace grist;
using grist::testing::GraphBuilder;
namespace fs = std::filesystem;

namespace {

const HazardVerdict& verdict_of(const ScanReport& r, const std::string& op) {
  for (const HazardVerdict& v : r.verdicts)
    if (v.site.op_type == op) return v;
  ADD_FAILURE() << "no " << op << " hazard";
  static HazardVerdict none;
  return none;
}

// loss = w·1 (its gradient is 1 whatever w is) and log(w) beside it: Adam moves w down by lr·1/(1 + ε)
// each step, so from w = 0.105 with lr 0.01 the log holds for 10 steps and fails at the 11th.
Graph log_of_a_trained_scalar() {
  return GraphBuilder()
      .constant("w", Tensor::scalar<float>(0.105f))
      .constant("one", Tensor::scalar<float>(1.0f))
      .node("Mul", {"w", "one"}, {"loss"})
      .node("Log", {"w"}, {"log_w"})
      .output("loss")
      .output("log_w")
      .build();
}

Manifest adam_manifest(bool trains) {
  Manifest m;
  m.loss = "loss";
  m.train.enabled = trains;
  m.train.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::PyTorch);
  m.train.optimizer.lr = 0.01;
  return m;
}

}  // namespace

TEST(ScanScope, ATrainedScalarWeightIsNotAConstant) {
  // SUBJECTS.md bug 26's toy: sigmoid(x·W + b), W [2, 1] and b [1] zero-initialised, SGD lr 1.
  auto m = read_manifest((fs::path(GRIST_SOURCE_DIR) / "tests/models/logreg_toy.toml").string());
  ASSERT_TRUE(m.is_ok()) << m.message();
  auto g = import_onnx_file(m->model);
  ASSERT_TRUE(g.is_ok()) << g.message();
  ScanOptions o;
  o.manifest = &*m;
  auto r = scan(*g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->trained_weights, 2);
  for (const HazardVerdict& v : r->verdicts) {
    // At W = b = 0 the operand is sigmoid(0) = 0.5 exactly, but SGD's step has no bound: not a proof.
    EXPECT_EQ(v.verdict, Verdict::MayFail) << v.site.label();
    EXPECT_TRUE(v.trained_operand);
    EXPECT_FALSE(v.fails_initially);
  }
  int listed = 0;
  for (const RangeAssumption& a : r->assumptions)
    if (a.name == "W" || a.name == "b") {
      ++listed;
      EXPECT_EQ(a.kind, "trained weight");
      EXPECT_EQ(a.range.lo, -kInf);
      EXPECT_EQ(a.range.hi, kInf);
    }
  EXPECT_EQ(listed, 2);
}

TEST(ScanScope, AdamsStepBoundProvesTheStepsTrainingReallyTakesBeforeTheFailure) {
  Graph g = log_of_a_trained_scalar();
  Manifest m = adam_manifest(true);
  ScanOptions o;
  o.manifest = &m;
  auto r = scan(g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const HazardVerdict& v = verdict_of(*r, "Log");
  ASSERT_EQ(v.verdict, Verdict::ProvedSafe);
  EXPECT_EQ(v.scope, Scope::Steps);
  // Σ_{t≤10} lr·C_t = 0.1017 < 0.105 ≤ Σ_{t≤11} lr·C_t = 0.1122 (C_t from 1 up to 1.05 here).
  EXPECT_EQ(v.safe_steps, 10);
  EXPECT_FALSE(v.steps_capped);

  // Training itself: finite for the 10 steps proved, −inf or NaN at the 11th.
  auto ex = Executor::create(g);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  const ValueId w = g.find_value("w"), loss = g.find_value("loss"), log_w = g.find_value("log_w");
  Optimizer adam(m.train.optimizer, {w});
  for (int step = 1; step <= 11; ++step) {
    ASSERT_TRUE(ex->forward().is_ok());
    ASSERT_TRUE(ex->backward(loss, std::vector<ValueId>{w}).is_ok());
    ASSERT_TRUE(adam.step(*ex).is_ok());
    ASSERT_TRUE(ex->forward().is_ok());
    const float log_value = ex->value(log_w).data<float>()[0];
    if (step <= 10) {
      EXPECT_TRUE(std::isfinite(log_value)) << "step " << step;
    } else {
      EXPECT_FALSE(std::isfinite(log_value)) << "w = " << ex->value(w).data<float>()[0];
    }
  }
}

TEST(ScanScope, AModelThatDoesNotTrainKeepsItsProofsForEveryRun) {
  Graph g = log_of_a_trained_scalar();
  Manifest m = adam_manifest(false);
  ScanOptions o;
  o.manifest = &m;
  auto r = scan(g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const HazardVerdict& v = verdict_of(*r, "Log");
  EXPECT_EQ(v.verdict, Verdict::ProvedSafe);
  EXPECT_EQ(v.scope, Scope::EveryRun);
  EXPECT_FALSE(v.trained_operand);
  EXPECT_EQ(r->trained_weights, 0);
}

TEST(ScanScope, SgdHasNoStepBoundAndTheBoundedOptimizersHaveTheirs) {
  OptimizerConfig sgd = OptimizerConfig::defaults(OptimizerKind::SGD, Framework::PyTorch);
  EXPECT_FALSE(max_weight_move(sgd, 1).has_value());
  OptimizerConfig adagrad = OptimizerConfig::defaults(OptimizerKind::Adagrad, Framework::TensorFlow);
  EXPECT_DOUBLE_EQ(*max_weight_move(adagrad, 7), 7 * adagrad.lr);
  OptimizerConfig rms = OptimizerConfig::defaults(OptimizerKind::RMSProp, Framework::PyTorch);
  EXPECT_NEAR(*max_weight_move(rms, 1), rms.lr / std::sqrt(1 - rms.decay), 1e-15);
  rms.centered = true;
  EXPECT_FALSE(max_weight_move(rms, 1).has_value());
  OptimizerConfig adam = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::TensorFlow);
  EXPECT_DOUBLE_EQ(*max_weight_move(adam, 1), adam.lr);  // C_1 = 1: the first step is lr exactly
  // The factor's limit (1−β1)/√((1−β2)(1−β1²/β2)) = 7.27 for the defaults: a long run moves less than that.
  const double limit = 0.1 / std::sqrt(0.001 * (1 - 0.81 / 0.999));
  EXPECT_LT(*max_weight_move(adam, 2000000), adam.lr * limit * 2000000);
  EXPECT_GT(*max_weight_move(adam, 2000000), adam.lr * 2000000);
}

// Adam's bound against the worst gradients one can feed it: random sign and magnitude sequences, scaled
// to make |m|/√v large, never move a weight further than the bound says.
TEST(ScanScope, AdamNeverMovesAWeightFurtherThanItsBound) {
  OptimizerConfig c = OptimizerConfig::defaults(OptimizerKind::Adam, Framework::PyTorch);
  c.lr = 1.0;
  for (double growth : {1.0, 1.02, 1.05, 1.1}) {
    Tensor w = Tensor::scalar<double>(0.0), g = Tensor::scalar<double>(0.0);
    Optimizer opt(c, {0});
    double gi = 1e-6;
    for (int t = 1; t <= 300; ++t) {
      g.data<double>()[0] = gi;
      gi *= growth;  // a gradient that keeps growing makes the old, small ones weigh little in v
      Tensor* params[] = {&w};
      const Tensor* grads[] = {&g};
      ASSERT_TRUE(opt.step(params, grads).is_ok());
      EXPECT_LE(std::fabs(w.data<double>()[0]), *max_weight_move(c, t) * (1 + 1e-12)) << "growth " << growth << " t " << t;
    }
  }
}
