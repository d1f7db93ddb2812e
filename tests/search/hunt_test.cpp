// The hunt on exported models: the study's known answers (GRIST.md §4), each variant, optimizer, switching
// rule, clipping, decay, flush-to-zero and the budget, pinned so a change of behaviour shows.
#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "search/hunt.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(GRIST_SOURCE_DIR) / "tests/models";

struct Loaded {
  Graph graph;
  Manifest manifest;
};

Loaded load(const std::string& name) {
  auto m = read_manifest((kModels / (name + ".toml")).string());
  EXPECT_TRUE(m.is_ok()) << m.message();
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  return {std::move(g).value(), std::move(m).value()};
}

HazardOutcome hunt_first(const Loaded& l, const std::function<void(Manifest&)>& tweak = {}) {
  HuntOptions o;
  o.manifest = l.manifest;
  o.manifest.search.time_limit = 1.0;  // minutes; every case here ends far sooner or by max_iterations
  if (tweak) tweak(o.manifest);
  o.batch_size = o.manifest.batch_size;
  auto r = hunt(l.graph, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  EXPECT_FALSE(r->outcomes.empty());
  return r->outcomes.empty() ? HazardOutcome{} : r->outcomes.front();
}

}  // namespace

TEST(HuntKnownAnswers, FreeLogitsUnderflowAtTheStudysIteration) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  ASSERT_TRUE(o.triggered);
  // The study's counter: 346 (GRIST.md §4 allows 345–347).
  EXPECT_NEAR(l.manifest.expect.study_count(o.iterations), 346, 1);
  EXPECT_EQ(o.event.op_type, "Log");
  EXPECT_EQ(o.site.pattern, "log(softmax)");
}

TEST(HuntKnownAnswers, LogisticRegressionToyTriggersAt236WithSgdOnTheMonitoredBatch) {
  Loaded l = load("logreg_toy");
  HazardOutcome o = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  ASSERT_TRUE(o.triggered);
  EXPECT_NEAR(l.manifest.expect.study_count(o.iterations), 236, 1);
  EXPECT_EQ(o.event.node_name, "/Log");
  // Training changed the weights, so the witness carries them.
  EXPECT_EQ(o.witness.weights.count("W"), 1u);
}

TEST(HuntKnownAnswers, GristDefaultIsNoLaterThanTheFaithfulLoop) {
  Loaded l = load("logreg_toy");
  HazardOutcome faithful = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  HazardOutcome grist = hunt_first(l);
  ASSERT_TRUE(grist.triggered);
  EXPECT_LE(grist.iterations, faithful.iterations);
}

TEST(HuntVariants, OriginalInputsNeverMoveSoFreeLogitsStayFinite) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.search.variant = Variant::Original;
    m.search.max_iterations = 600;
  });
  EXPECT_FALSE(o.triggered);
  EXPECT_EQ(o.iterations, 600);
  EXPECT_EQ(o.strategy, "original");
}

TEST(HuntVariants, RandomSamplesInRangeStayFinite) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.search.variant = Variant::Random;
    m.search.max_iterations = 300;
  });
  EXPECT_FALSE(o.triggered);
  EXPECT_EQ(o.strategy, "random");
}

TEST(HuntSettings, FlushToZeroUnderflowsSoftmaxEarlier) {
  Loaded l = load("free_logits");
  HazardOutcome kept = hunt_first(l);
  HazardOutcome flushed = hunt_first(l, [](Manifest& m) { m.ftz = true; });
  ASSERT_TRUE(kept.triggered && flushed.triggered);
  // A gap of ≈87.3 instead of ≈103.3 at 0.3 per iteration: about 53 iterations sooner.
  EXPECT_NEAR(static_cast<double>(kept.iterations - flushed.iterations), 53, 3);
}

TEST(HuntSettings, DecayShrinksTheStepAndDelaysTheTrigger) {
  Loaded l = load("free_logits");
  HazardOutcome plain = hunt_first(l);
  HazardOutcome decayed = hunt_first(l, [](Manifest& m) {
    m.search.decay = true;
    m.search.decay_steps = 200;
    m.search.decay_rate = 0.5;
  });
  ASSERT_TRUE(plain.triggered && decayed.triggered);
  // 200 iterations at 0.3 per iteration, then 0.15: the remaining gap takes twice as long.
  EXPECT_GT(decayed.iterations, plain.iterations + 100);
}

TEST(HuntSettings, ClippingHoldsTheSearchedInputInsideItsRange) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.inputs["z"].range = ClipRange::Explicit;
    m.inputs["z"].lo = -20;
    m.inputs["z"].hi = 20;
    m.search.max_iterations = 1000;
  });
  // A gap of at most 40 cannot underflow a softmax entry, so it never triggers.
  EXPECT_FALSE(o.triggered);
}

TEST(HuntSettings, BudgetStopsASearchThatCannotSucceed) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.search.variant = Variant::Original;
    m.search.time_limit = 0.2 / 60.0;  // 0.2 s
  });
  EXPECT_FALSE(o.triggered);
  // The hazard's share is the 0.2 s less what loading and the scan took; the search runs it out and stops.
  EXPECT_GT(o.budget_s, 0.1);
  EXPECT_LE(o.budget_s, 0.2);
  EXPECT_GE(o.seconds, o.budget_s);
  EXPECT_LT(o.seconds, 1.0);
  EXPECT_GT(o.iterations, 0);
}

TEST(HuntOptimizers, EachOptimizerTrainsTheToyAndFindsTheBug) {
  Loaded l = load("logreg_toy");
  std::vector<int64_t> iterations;
  for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Adagrad, OptimizerKind::RMSProp}) {
    HazardOutcome o = hunt_first(l, [k](Manifest& m) {
      m.train.optimizer = OptimizerConfig::defaults(k, Framework::PyTorch);
      m.train.optimizer.lr = 0.5;
      m.search.max_iterations = 5000;
    });
    EXPECT_TRUE(o.triggered) << static_cast<int>(k);
    iterations.push_back(o.iterations);
  }
  // The optimizers move the weights differently, so the iteration counts differ.
  std::sort(iterations.begin(), iterations.end());
  EXPECT_EQ(std::unique(iterations.begin(), iterations.end()), iterations.end());
}

TEST(HuntTargets, UnknownTargetIsAnErrorListingTheHazards) {
  Loaded l = load("logreg_toy");
  HuntOptions o;
  o.manifest = l.manifest;
  o.manifest.target = "/NoSuchNode";
  o.batch_size = 6;
  auto r = hunt(l.graph, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("/Log"), std::string::npos) << r.message();
}

TEST(HuntTargets, AllHuntsEveryHazardAndLog1MinusVHasItsPattern) {
  Loaded l = load("logreg_toy");
  HuntOptions o;
  o.manifest = l.manifest;
  o.manifest.search.max_iterations = 3000;
  o.all = true;
  o.batch_size = 6;
  auto r = hunt(l.graph, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->hazards.size(), 2u);
  EXPECT_EQ(r->outcomes.size(), 2u);
  EXPECT_EQ(r->hazards[1].pattern, "log(1 - v)");
  EXPECT_EQ(r->hazards[1].objective, Objective::MinAbsOneMinus);
  EXPECT_TRUE(r->outcomes[1].triggered);
}

TEST(HuntWeights, SteppingWeightsReachesWhatInputsAloneCannot) {
  Loaded l = load("logreg_toy");
  auto no_training = [](Manifest& m) {
    m.train.enabled = false;  // W stays at zero: sigmoid(x·0 + 0) = 0.5 whatever x is
    m.search.max_iterations = 2000;
  };
  HuntOptions o;
  o.manifest = l.manifest;
  no_training(o.manifest);
  o.batch_size = 6;
  auto inputs_only = hunt(l.graph, o);
  ASSERT_TRUE(inputs_only.is_ok()) << inputs_only.message();
  for (const auto& out : inputs_only->outcomes) EXPECT_FALSE(out.triggered);

  HazardOutcome with_weights = hunt_first(l, [&](Manifest& m) {
    no_training(m);
    m.search.weight_change = 0.05;
  });
  ASSERT_TRUE(with_weights.triggered);
  EXPECT_EQ(with_weights.strategy, "grist+weights");
  EXPECT_EQ(with_weights.witness.weights.count("W"), 1u);  // the weights it reached are part of the witness
}
