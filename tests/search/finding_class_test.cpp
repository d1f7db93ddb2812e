// What a finding says about how it was reached: input-reached, training-reached (crafted training batches,
// replayed from the witness) or weights-perturbed; and that a non-finite gradient a later op masks is
// reported as masked, never as a trigger.
#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "report/witness.h"
#include "search/hunt.h"
#include "support/test_models.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
using grist::testing::GraphBuilder;
namespace fs = std::filesystem;

namespace {


using Loaded = grist::testing::LoadedModel;
Loaded load(const std::string& name) { return grist::testing::load_test_model(name); }

HazardOutcome hunt_first(const Graph& g, Manifest m) {
  HuntOptions o;
  o.manifest = std::move(m);
  o.batch_size = o.manifest.batch_size > 0 ? o.manifest.batch_size : 1;
  auto r = hunt(g, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  EXPECT_FALSE(r->outcomes.empty());
  return r->outcomes.empty() ? HazardOutcome{} : r->outcomes.front();
}

// The toy's regression, loss = mean((x·w − y)²) with w = 1, for graphs that add hazards of their own to it.
GraphBuilder toy_regression() {
  GraphBuilder b;
  b.input("x", DType::Float32, {4, 1})
      .input("y", DType::Float32, {4, 1})
      .constant("w", Tensor::from<float>({1}, {1.0f}))
      .node("Mul", {"x", "w"}, {"p"})
      .node("Sub", {"p", "y"}, {"d"})
      .node("Mul", {"d", "d"}, {"sq"})
      .node("ReduceMean", {"sq"}, {"loss"}, {{"keepdims", grist::testing::attr_int(0)}});
  return b;
}

// tests/models/crafted_training_toy: log(1.5 − x·w) with x ≤ 1 and w = 1, trained towards y ≈ x ≈ 0.95.
Manifest toy_manifest(const Loaded& l, bool craft) {
  Manifest m = l.manifest;
  m.search.max_iterations = 200;  // 50 iterations of inputs alone, then 75 of crafted training
  if (!craft) m.search.training_share = 0;
  m.search.weight_change = 0;  // no weight search: what is found is reached by inputs or training
  return m;
}

}  // namespace

TEST(FindingClass, InputsAloneAndTheProgramsOwnTrainingNeverBreakTheToy) {
  Loaded l = load("crafted_training_toy");
  HazardOutcome o = hunt_first(l.graph, toy_manifest(l, false));
  EXPECT_FALSE(o.triggered) << o.event.describe();
  EXPECT_EQ(o.iterations, 200);
  EXPECT_EQ(o.training_from, 0);
}

TEST(FindingClass, CraftedTrainingBatchesReachTheToysFailureAndSaySo) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.search.race_training = false;  // the course's crafting, at the inputs' clock
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_EQ(o.strategy, "grist+training");
  EXPECT_EQ(o.training_from, 51);
  EXPECT_EQ(o.weights_from, 0);
  EXPECT_EQ(o.pass, TriggerPass::Monitored);
  EXPECT_EQ(o.event.node_name, "/Log");
  // SGD lr 0.5 on x = y − 0.15·k: w = 1.119, 1.262, 1.420, 1.576 (PyTorch gives the same), and 1.5 − 1·w < 0
  // after the fourth step.
  ASSERT_EQ(o.witness.training.size(), 4u);
  EXPECT_EQ(o.iterations, 55);
  // The witness starts from the program's own weights then: w untouched by training on x = y (its loss is 0).
  ASSERT_EQ(o.witness.weights.count("w"), 1u);
  EXPECT_FLOAT_EQ(o.witness.weights.at("w").data<float>()[0], 1.0f);
  ASSERT_TRUE(o.witness.optimizer.has_value());
  // Every crafted batch stays in the data's clip range [0, 1] and keeps the data's labels.
  for (const auto& step : o.witness.training) {
    const Tensor& x = step.batch.at("x");
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_GE(x.data<float>()[i], 0.0f);
      EXPECT_LE(x.data<float>()[i], 1.0f);
    }
    EXPECT_EQ(step.batch.at("y").data<float>()[2], 1.0f);
  }
}

namespace {
// Writes the finding's witness and replays it: it fails again after `steps` crafted training steps.
void expect_witness_replays(const Loaded& l, const HazardOutcome& o, int64_t steps) {
  const fs::path dir = fs::temp_directory_path() / fs::path("grist-finding-class-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto files = write_witness(dir.string(), l.manifest.model, l.manifest, o);
  ASSERT_TRUE(files.is_ok()) << files.message();
  auto replay = replay_witness(files->json);
  ASSERT_TRUE(replay.is_ok()) << replay.message();
  EXPECT_TRUE(replay->reproduced) << replay->message;
  EXPECT_EQ(replay->training_steps, steps);
  fs::remove_all(dir);
}
}  // namespace

TEST(FindingClass, ATrainingReachedWitnessReplaysItsTrainingSteps) {
  Loaded l = load("crafted_training_toy");
  HazardOutcome o = hunt_first(l.graph, toy_manifest(l, true));
  ASSERT_TRUE(o.triggered);
  expect_witness_replays(l, o, 4);
}

// tests/models/label_craft_toy: the data is all class 1, whose rows only lower W₀; log(1.5 − x·W₀) needs
// W₀ > 1.5. Crafted batches reach it only by labelling rows class 0, a label from the label set the data lacks.
// Crafting starts at once: the inputs alone would first carry x to 0, where z = 0 and no label moves W (both
// labels' gains are 0), and the crafted batch starts from that batch.
Manifest label_toy_manifest(const Loaded& l, bool craft_labels) {
  Manifest m = toy_manifest(l, true);
  m.search.weights_after = 0;
  m.search.craft_labels = craft_labels;
  return m;
}

TEST(FindingClass, CraftedBatchesKeepingTheDatasLabelsNeverReachTheLabelToy) {
  Loaded l = load("label_craft_toy");
  HazardOutcome o = hunt_first(l.graph, label_toy_manifest(l, false));
  EXPECT_FALSE(o.triggered) << o.event.describe();
  EXPECT_EQ(o.crafting_attempts, 1);  // crafting ran from iteration 1, could not get there, and was undone
  EXPECT_EQ(o.iterations, 200);
}

TEST(FindingClass, CraftedBatchesChoosingTheirLabelsReachTheLabelToyAndReplay) {
  Loaded l = load("label_craft_toy");
  HazardOutcome o = hunt_first(l.graph, label_toy_manifest(l, true));
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_EQ(o.strategy, "grist+training");
  EXPECT_EQ(o.event.node_name, "/Log");
  ASSERT_FALSE(o.witness.training.empty());
  // The crafted labels are one-hot rows of the label set, and class 0 (which the data never holds) is among them.
  int64_t class0 = 0;
  for (const auto& step : o.witness.training) {
    const Tensor& y = step.batch.at("y");
    ASSERT_EQ(y.shape(), (Shape{4, 2}));
    for (int64_t r = 0; r < 4; ++r) {
      const float a = y.data<float>()[2 * r], b = y.data<float>()[2 * r + 1];
      EXPECT_TRUE((a == 1 && b == 0) || (a == 0 && b == 1)) << a << " " << b;
      class0 += a == 1;
    }
  }
  EXPECT_GT(class0, 0);
  expect_witness_replays(l, o, static_cast<int64_t>(o.witness.training.size()));
}

// The same toy with its labels smoothed by preprocessing (scale 0.9, offset 0.05): the crafted rows hold 0.95 and
// 0.05 as the data's do.
TEST(FindingClass, CraftedLabelsKeepTheInputsPreprocessing) {
  Loaded l = load("label_craft_toy");
  Manifest m = label_toy_manifest(l, true);
  m.inputs.at("y").scale = 0.9;
  m.inputs.at("y").offset = 0.05;
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  ASSERT_FALSE(o.witness.training.empty());
  bool chosen = false;
  for (const auto& step : o.witness.training) {
    const Tensor& y = step.batch.at("y");
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float v = y.data<float>()[i];
      EXPECT_TRUE(v == 0.95f || v == 0.05f) << v;
    }
    chosen |= y.data<float>()[0] == 0.95f;
  }
  EXPECT_TRUE(chosen);
}

// clip → exp → sqrt under flush-to-zero (a log-variance made a standard deviation, as VAEs write it). Below the
// clip's lower bound exp(−100) flushes to 0 and sqrt′(0) = ∞, but Clip's backward gives the input a 0 there:
// the gradient the user takes is finite, as PyTorch's is. Inside (−100, −87.3) the ∞ reaches the input.
namespace {


Manifest clip_exp_sqrt_manifest(double x0) {
  Manifest m;
  m.loss = "loss";
  m.ftz = true;
  m.batch_size = 1;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::Values;
  x.values = Tensor::from<double>({1, 2}, {x0, 1.0});
  m.inputs["x"] = x;
  m.search.max_iterations = 50;
  m.search.switch_data = false;
  m.target = "2";  // hazard #2, the Sqrt (#1 is the Exp)
  return m;
}

}  // namespace

TEST(MaskedGradients, ASqrtGradientThatClipMasksIsReportedAsMaskedNotAsATrigger) {
  Graph g = grist::testing::clip_exp_sqrt_graph({-1, 2});
  HazardOutcome o = hunt_first(g, clip_exp_sqrt_manifest(-120.0));
  EXPECT_FALSE(o.triggered) << o.event.describe();
  EXPECT_EQ(o.iterations, 50);
  // Every iteration's loss backward met it; the input never moved, since Clip's gradient there is 0.
  EXPECT_EQ(o.masked_count, 50);
  EXPECT_EQ(o.masked_iteration, 1);
  EXPECT_EQ(o.masked.op_type, "Sqrt");
  EXPECT_TRUE(o.masked.masked);
}

TEST(MaskedGradients, TheSameSqrtGradientInsideTheClipRangeIsATrigger) {
  Graph g = grist::testing::clip_exp_sqrt_graph({-1, 2});
  HazardOutcome o = hunt_first(g, clip_exp_sqrt_manifest(-95.0));
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.iterations, 1);
  EXPECT_EQ(o.pass, TriggerPass::LossBackward);
  EXPECT_EQ(o.event.op_type, "Sqrt");
  EXPECT_EQ(o.finding_class, FindingClass::InputReached);
  EXPECT_EQ(o.masked_count, 0);
}

// With the stall rule the stages after the inputs end when the search stalls, not on their share of the budget:
// crafted training whose steps cannot move the weight (lr 1e-9) stops improving the objective, and the weights
// join within its window (30 iterations, or half of the stage's) instead of at the end of its share (iteration
// 125), as the default clock has them.
TEST(FindingClass, CraftedTrainingThatStallsHandsOverToTheWeightsEarly) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.train.optimizer.lr = 1e-9;
  m.search.weight_change = 0.01;
  m.search.race_weights = false;  // the clocks, not the race
  m.search.stall_rule = true;
  HazardOutcome o = hunt_first(l.graph, m);
  EXPECT_EQ(o.training_from, 51);
  EXPECT_GT(o.weights_from, 51);
  EXPECT_LE(o.weights_from, 51 + 31);
  m.search.stall_rule = false;
  HazardOutcome clocked = hunt_first(l.graph, m);
  EXPECT_EQ(clocked.training_from, 51);
  EXPECT_EQ(clocked.weights_from, 125);  // 51 + half of the 149 iterations left
}

// craft_early decouples the two clocks: on the toy the inputs are pinned at their clip bound within a few
// iterations (x·w ≤ 1 < 1.5), so crafted training joins once their objective stops improving (kFrozen = 3
// iterations) instead of at the clock's iteration 51, and reaches the failure as training-reached.
TEST(FindingClass, CraftEarlyStartsCraftedTrainingWhenTheInputsStall) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.search.craft_early = true;
  m.search.race_training = false;  // the course's own crafting
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_GT(o.training_from, 2);  // the inputs had their iterations first
  EXPECT_LT(o.training_from, 12);
  EXPECT_EQ(o.weights_from, 0);
  expect_witness_replays(l, o, static_cast<int64_t>(o.witness.training.size()));
}

// ... while the weights keep their clock: crafted training that cannot move the weight (lr 1e-9) stalls and is
// undone (attempts of 30, 60, ... iterations, each after as many of the program's own); at the inputs' clock
// (iteration 51) the last attempt begins, as crafting would without craft_early, and is not undone, and the
// weights join when they would have without it (iteration 51 + half of the 149 left = 125), not sooner.
TEST(FindingClass, CraftEarlyKeepsTheWeightsClock) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.train.optimizer.lr = 1e-9;
  m.search.weight_change = 0.01;
  m.search.race_weights = false;  // the clocks, not the race
  m.search.craft_early = true;
  HazardOutcome o = hunt_first(l.graph, m);
  EXPECT_EQ(o.weights_from, 125);
  EXPECT_EQ(o.crafting_attempts, 2);  // from before iteration 12 for 30, then 30 of the program's own
  EXPECT_EQ(o.training_from, 51);     // the second begins at the clock, not after 30 more of its own
}

// Where no data input reaches the hazard (Div(x, w): its divisor is the weight alone, as in zoo 28a), crafted
// training starts at once with or without craft_early, and takes its course as without it: one attempt, and the
// weights join at the same iteration (2 + half of the 198 left = 101). craft_early's later clock and its undone
// attempts are for crafting that began because the inputs stalled; here the later clock made 28a wait (31 s
// against 6 s, session 15).
TEST(FindingClass, CraftEarlyLeavesTheClockOfAWeightOnlyDivisorAlone) {
  Loaded l = load("crafted_training_toy");
  Graph g = toy_regression()
                .node("Div", {"x", "w"}, {"ratio"})
                .output("loss")
                .output("ratio")
                .build();
  Manifest m = toy_manifest(l, true);
  m.target.clear();
  m.search.weight_change = 0.01;
  m.search.race_weights = false;  // the clocks, not the race
  for (bool craft_early : {false, true}) {
    m.search.craft_early = craft_early;
    HazardOutcome o = hunt_first(g, m);
    EXPECT_EQ(o.site.op_type, "Div") << craft_early;
    EXPECT_EQ(o.training_from, 2) << craft_early;
    EXPECT_EQ(o.crafting_attempts, 1) << craft_early;  // one attempt, its weights kept for the weight search
    EXPECT_EQ(o.weights_from, 101) << craft_early;
  }
}

// Crafted training that ends with no weight search to follow (--reach training) is undone: the program's own
// training goes on from the weights it had reached, since a witness replays crafted steps but not the program's
// own steps after them, and a later finding would otherwise be called training-reached without replaying.
TEST(FindingClass, CraftingThatEndsWithNothingToFollowIsUndone) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.train.optimizer.lr = 1e-9;  // crafting cannot move the weight
  HazardOutcome o = hunt_first(l.graph, m);
  EXPECT_FALSE(o.triggered);
  EXPECT_EQ(o.iterations, 200);
  EXPECT_EQ(o.crafting_attempts, 1);
  EXPECT_EQ(o.training_from, 0);  // undone at iteration 125
  EXPECT_EQ(o.strategy, "grist");
}

namespace {
// The toy with a weight that crafted training cannot move (lr 1e-9) and weight steps of 0.01.
Manifest weight_only_toy(const Loaded& l) {
  Manifest m = toy_manifest(l, true);
  m.train.optimizer.lr = 1e-9;
  m.search.weight_change = 0.01;
  return m;
}

// Its failure found by the race's twin: steps of 0.01 from iteration 2 carry w from 1 to 1.5 at iteration 52 (the
// program's loss was 0 after iteration 1, so there is no optimizer-sized stage); the witness replays.
void expect_the_twins_finding(const Loaded& l, const HazardOutcome& o) {
  ASSERT_TRUE(o.triggered);
  EXPECT_TRUE(o.weights_race);
  EXPECT_EQ(o.finding_class, FindingClass::WeightsPerturbed);
  EXPECT_EQ(o.weights_from, 2);
  EXPECT_EQ(o.iterations, 52);
  expect_witness_replays(l, o, 0);
}
}  // namespace

// The weights race (SearchConfig::race_weights), judged in iterations under max_iterations. The clocks let the
// toy's weights join at iteration 125, in optimizer-sized steps until 162: nothing in 200 iterations. The race's
// twin reaches log(1.5 − x·w)'s failure first; the course then ends where its own weights join, where it could only
// find a later weights-perturbed one.
TEST(FindingClass, TheWeightsRaceReachesAWeightOnlyFailureBeforeTheClocks) {
  Loaded l = load("crafted_training_toy");
  Manifest m = weight_only_toy(l);
  m.search.race_weights = false;
  HazardOutcome clocked = hunt_first(l.graph, m);
  EXPECT_EQ(clocked.weights_from, 125);
  EXPECT_FALSE(clocked.triggered);
  m.search.race_weights = true;
  HazardOutcome raced = hunt_first(l.graph, m);
  expect_the_twins_finding(l, raced);
  EXPECT_EQ(raced.course_iterations, 125);  // its weights joined at 125; it stopped before its next pass
}

// ... and never takes a better class away: at the toy's own lr crafted training reaches the failure at iteration
// 55 (training-reached), as without the race. The twin's steps of 0.6 fail at its iteration 2 (w = 1.6 in the
// training pass): the earlier weights-perturbed trigger is noted, the training-reached finding reported.
TEST(FindingClass, TheWeightsRaceLeavesATrainingReachedFindingToTheCourse) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.search.weight_change = 0.6;
  m.search.race_weights = true;
  m.search.race_training = false;  // the course's crafting, not the training race's
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_FALSE(o.weights_race);
  EXPECT_EQ(o.iterations, 55);
  EXPECT_EQ(o.race_iterations, 2);
  expect_witness_replays(l, o, 4);
}

// On a time budget the twin runs on a thread of its own beside the course (what the sanitizer builds check): the
// toy's twin fails within milliseconds, and the course stops once its own weights join, after the inputs' quarter
// (0.5 s) and crafting's half of the rest.
TEST(FindingClass, TheWeightsRaceRunsOnASecondThreadOnATimedBudget) {
  Loaded l = load("crafted_training_toy");
  Manifest m = weight_only_toy(l);
  m.search.max_iterations = 0;
  m.search.time_limit = 2.0 / 60;  // minutes
  m.search.race_weights = true;
  HazardOutcome o = hunt_first(l.graph, m);
  expect_the_twins_finding(l, o);
  EXPECT_GT(o.course_iterations, o.iterations);
}

// The training race (SearchConfig::race_training), judged in iterations under max_iterations: its twin crafts from
// the second iteration and reaches the toy's failure after the same four crafted steps the course takes from its
// clock (iteration 51); the course ends there, and the twin's training-reached finding, 45 iterations sooner, is
// reported. Its witness replays the four steps from the weights after the program's first step (w = 1: its loss on
// x = y is 0).
TEST(FindingClass, TheTrainingRaceReachesACraftedFailureBeforeTheInputsClock) {
  Loaded l = load("crafted_training_toy");
  HazardOutcome o = hunt_first(l.graph, toy_manifest(l, true));
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_TRUE(o.training_race);
  EXPECT_FALSE(o.weights_race);
  EXPECT_EQ(o.training_from, 2);
  EXPECT_EQ(o.iterations, 6);
  EXPECT_EQ(o.course_iterations, 50);  // it stopped where its own crafting would have begun
  ASSERT_EQ(o.witness.weights.count("w"), 1u);
  EXPECT_FLOAT_EQ(o.witness.weights.at("w").data<float>()[0], 1.0f);
  expect_witness_replays(l, o, 4);
}

// ... and never takes an input-reached finding away: with labels y = 1.6·x the program's own training (lr 0.05)
// carries w past 1.5 by itself, and with the inputs at x = 1 the log fails at iteration 21, before the inputs'
// clock; crafting from the start gets there sooner (training-reached at iteration 12, as a search that crafts at
// once shows), but the course's finding, of the better class, is the one reported.
TEST(FindingClass, TheTrainingRaceLeavesAnInputReachedFindingToTheCourse) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.train.optimizer.lr = 0.05;
  Tensor& y = m.inputs.at("y").values;
  ASSERT_EQ(y.dtype(), DType::Float64);  // as written
  for (int64_t i = 0; i < y.numel(); ++i) y.data<double>()[i] *= 1.6;
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.finding_class, FindingClass::InputReached);
  EXPECT_FALSE(o.training_race);
  EXPECT_EQ(o.iterations, 21);
  m.search.race_training = false;
  m.search.weights_after = 0;  // crafting from the first iterations, as the twin does
  HazardOutcome crafted_at_once = hunt_first(l.graph, m);
  ASSERT_TRUE(crafted_at_once.triggered);
  EXPECT_EQ(crafted_at_once.finding_class, FindingClass::TrainingReached);
  EXPECT_EQ(crafted_at_once.iterations, 12);
}

// On a time budget the training twin runs on the second thread, after the weights twin (none here: the toy's
// manifest searches no weight), beside the course, which ends at its inputs' clock (a quarter of 2 s).
TEST(FindingClass, TheTrainingRaceRunsOnASecondThreadOnATimedBudget) {
  Loaded l = load("crafted_training_toy");
  Manifest m = toy_manifest(l, true);
  m.search.max_iterations = 0;
  m.search.time_limit = 2.0 / 60;  // minutes
  HazardOutcome o = hunt_first(l.graph, m);
  ASSERT_TRUE(o.triggered);
  EXPECT_TRUE(o.training_race);
  EXPECT_EQ(o.finding_class, FindingClass::TrainingReached);
  EXPECT_GT(o.course_iterations, o.iterations);
  expect_witness_replays(l, o, static_cast<int64_t>(o.witness.training.size()));
}

// Of the divisors that no data input reaches, the one nearest zero at the initial weights is hunted first (one
// forward pass decides): exact weight steps settle such hazards fast, but those that cannot reach zero take
// seconds each to give up (zoo 28a). Here 8·w comes first in the execution order and 0.001·w first in the plan.
TEST(HuntPlan, OfTheWeightOnlyDivisorsTheNearestZeroAtTheStartIsHuntedFirst) {
  Loaded l = load("crafted_training_toy");
  Graph g = toy_regression()
                .constant("far", Tensor::from<float>({2}, {8.0f, 9.0f}))
                .constant("near", Tensor::from<float>({2}, {0.001f, 0.002f}))
                .node("Mul", {"w", "far"}, {"a"})
                .node("Mul", {"w", "near"}, {"b"})
                .node("Div", {"x", "a"}, {"ratio_far"})
                .node("Div", {"x", "b"}, {"ratio_near"})
                .output("loss")
                .output("ratio_far")
                .output("ratio_near")
                .build();
  Manifest m = toy_manifest(l, true);
  m.target.clear();
  m.search.weight_change = 0.01;
  HuntOptions o;
  o.manifest = m;
  o.batch_size = 4;
  auto r = hunt(g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_FALSE(r->outcomes.empty());
  ASSERT_EQ(r->hazards.size(), 2u);  // in the execution order: 8·w, then 0.001·w
  EXPECT_EQ(g.value(r->hazards[0].objective_value).name, "a");
  EXPECT_EQ(g.value(r->hazards[1].objective_value).name, "b");
  EXPECT_EQ(r->outcomes.front().site.id, r->hazards[1].id);  // hunted first
}
