// The opt-in input steps (search.step = adam | line): each lands where the sign step of a fixed ε hops over the
// failure for ever, and the faithful loop takes the study's sign step whatever is asked.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/manifest.h"
#include "report/witness.h"
#include "search/adam_step.h"
#include "search/hunt.h"
#include "search/line_step.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"
#include "support/test_models.h"

using namespace grist;
using grist::testing::attr_int;
using grist::testing::GraphBuilder;

namespace {

HazardOutcome hunt_first(const Graph& g, Manifest m) {
  HuntOptions o;
  o.manifest = std::move(m);
  o.batch_size = o.manifest.batch_size > 0 ? o.manifest.batch_size : 1;
  auto r = hunt(g, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  EXPECT_FALSE(r->outcomes.empty());
  return r->outcomes.empty() ? HazardOutcome{} : r->outcomes.front();
}

// loss = Σ log(relu(|x − 0.325| − 0.025)): the log's operand is 0 only for x in [0.3, 0.35], a band narrower
// than ε = 0.15. From x = 1 the sign steps visit 1 − 0.15k: 0.4, 0.25, 0.4, … and never land in it.
Graph narrow_band_graph() {
  return GraphBuilder()
      .input("x", DType::Float32, {-1, 1})
      .constant("c", Tensor::from<float>({}, {0.325f}))
      .constant("d", Tensor::from<float>({}, {0.025f}))
      .node("Sub", {"x", "c"}, {"u"})
      .node("Abs", {"u"}, {"a"})
      .node("Sub", {"a", "d"}, {"b"})
      .node("Relu", {"b"}, {"v"})
      .node("Log", {"v"}, {"l"})
      .node("ReduceSum", {"l"}, {"loss"}, {{"keepdims", attr_int(0)}})
      .output("loss")
      .build();
}

Manifest narrow_band_manifest(StepRule step) {
  Manifest m;
  m.loss = "loss";
  m.batch_size = 1;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::Values;
  x.values = Tensor::from<double>({1, 1}, {1.0});
  m.inputs["x"] = x;
  m.search.max_iterations = 200;
  m.search.switch_data = false;
  m.search.weight_change = 0;  // the inputs alone: no weight search to land in the band for them
  m.search.step = step;
  return m;
}

}  // namespace

TEST(StepRules, SignStepsHopOverANarrowBandForEver) {
  HazardOutcome o = hunt_first(narrow_band_graph(), narrow_band_manifest(StepRule::Sign));
  EXPECT_FALSE(o.triggered) << o.event.describe();
  EXPECT_EQ(o.iterations, 200);
}

TEST(StepRules, AdamsMomentsSettleIntoTheBand) {
  HazardOutcome o = hunt_first(narrow_band_graph(), narrow_band_manifest(StepRule::Adam));
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.event.op_type, "Log");
  EXPECT_EQ(o.iterations, 21);
  EXPECT_EQ(o.finding_class, FindingClass::InputReached);
}

TEST(StepRules, TheLineSearchHalvesItsStepIntoTheBand) {
  HazardOutcome o = hunt_first(narrow_band_graph(), narrow_band_manifest(StepRule::Line));
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.event.op_type, "Log");
  EXPECT_EQ(o.iterations, 5);
  EXPECT_EQ(o.finding_class, FindingClass::InputReached);
}

// A crawl: free 3×5 logits, log(softmax) — the sign step closes the gap by 0.3 an iteration; the line search's
// accepted step doubles up to 256·ε, so the gap of ≈103 closes in a fraction of the iterations.
TEST(StepRules, TheLineSearchOutrunsTheSignStepsCrawl) {
  auto l = grist::testing::load_test_model("free_logits");
  Manifest sign = l.manifest, line = l.manifest;
  sign.search.max_iterations = line.search.max_iterations = 1000;
  line.search.step = StepRule::Line;
  HazardOutcome s = hunt_first(l.graph, sign), o = hunt_first(l.graph, line);
  ASSERT_TRUE(s.triggered && o.triggered);
  EXPECT_EQ(s.iterations, 300);  // the loss's backward (1/p) overflows before p reaches 0 (hunt_test)
  EXPECT_EQ(o.iterations, 10);
}

// --faithful is the study's loop exactly: the known answer (GRIST.md §4) whatever step is asked.
TEST(StepRules, TheFaithfulLoopTakesTheSignStepWhateverIsAsked) {
  auto l = grist::testing::load_test_model("free_logits");
  for (StepRule step : {StepRule::Sign, StepRule::Adam, StepRule::Line}) {
    Manifest m = l.manifest;
    m.search.faithful = true;
    m.search.max_iterations = 1000;
    m.search.step = step;
    HazardOutcome o = hunt_first(l.graph, m);
    ASSERT_TRUE(o.triggered);
    EXPECT_EQ(o.iterations, 345);
  }
}

// The same witness data is reached differently under another step rule: the sidecar records the rule the
// inputs were stepped by, the faithful loop's sign step when it overrode the one asked, and replay reports it.
TEST(StepRules, TheWitnessRecordsTheStepRuleAndReplayReportsIt) {
  namespace fs = std::filesystem;
  auto l = grist::testing::load_test_model("free_logits");
  const fs::path dir = fs::temp_directory_path() / ("grist-step-rule-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::pair<bool, const char*> cases[] = {{false, "line"}, {true, "sign"}};
  for (const auto& [faithful, recorded] : cases) {
    Manifest m = l.manifest;
    m.search.faithful = faithful;
    m.search.max_iterations = 1000;
    m.search.step = StepRule::Line;
    HazardOutcome o = hunt_first(l.graph, m);
    ASSERT_TRUE(o.triggered);
    EXPECT_EQ(o.iterations, faithful ? 345 : 10);
    auto files = write_witness(dir.string(), l.manifest.model, m, o);
    ASSERT_TRUE(files.is_ok()) << files.message();
    auto replay = replay_witness(files->json);
    ASSERT_TRUE(replay.is_ok()) << replay.message();
    EXPECT_TRUE(replay->reproduced) << replay->message;
    EXPECT_EQ(replay->step, recorded) << "faithful " << faithful;
    // The same finding written under a variant that draws its inputs records no step rule.
    Manifest drawn = m;
    drawn.search.variant = Variant::Random;
    auto drawn_files = write_witness((dir / "drawn").string(), l.manifest.model, drawn, o);
    ASSERT_TRUE(drawn_files.is_ok()) << drawn_files.message();
    std::ifstream sidecar(drawn_files->json);
    EXPECT_TRUE(nlohmann::json::parse(sidecar).at("config").at("step").is_null());
    auto drawn_replay = replay_witness(drawn_files->json);
    ASSERT_TRUE(drawn_replay.is_ok()) << drawn_replay.message();
    EXPECT_EQ(drawn_replay->step, "");
  }
  fs::remove_all(dir);
}

TEST(AdamStep, AFlippingGradientShrinksTheStepAndANanNeverLeaks) {
  AdamStep adam;
  RowStepStats st;
  Tensor x = Tensor::from<float>({1, 2}, {0.0f, 0.0f});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  adam.step(x, Tensor::from<float>({1, 2}, {1.0f, nan}), 0.1, std::nullopt, st);
  EXPECT_NEAR(x.data<float>()[0], -0.1f, 1e-6);  // the first step is ε·sign, as the sign step's
  EXPECT_EQ(x.data<float>()[1], 0.0f);           // a NaN gradient: no moments, no move
  const float before = x.data<float>()[0];
  adam.step(x, Tensor::from<float>({1, 2}, {-1.0f, 0.0f}), 0.1, std::nullopt, st);
  const float back = x.data<float>()[0] - before;
  EXPECT_GT(back, 0.0f);
  EXPECT_LT(back, 0.1f);  // the moments partly cancel: a shorter step back than ε
  EXPECT_EQ(x.data<float>()[1], 0.0f);
}

// An input the model stores in float16 (a `.half()` export) moves too, and stays float16.
TEST(AdamStep, AndTheSignStepMoveFloat16InputsInTheirOwnType) {
  auto half = [](std::initializer_list<float> v) {
    Tensor h;
    cast_tensor(Tensor::from<float>({1, 2}, v), DType::Float16, h);
    return h;
  };
  auto value = [](const Tensor& t, int64_t i) { return t.get_as_double(i); };
  AdamStep adam;
  RowStepStats st;
  Tensor x = half({1.0f, 2.0f});
  adam.step(x, half({1.0f, -1.0f}), 0.5, std::nullopt, st);
  ASSERT_EQ(x.dtype(), DType::Float16);
  EXPECT_EQ(value(x, 0), 0.5);
  EXPECT_EQ(value(x, 1), 2.5);
  EXPECT_EQ(st.updated[0], 1.0);
  Tensor y = half({1.0f, 2.0f});
  sign_step(y, half({1.0f, -1.0f}), 0.25, std::make_pair(0.0, 2.125), st);
  ASSERT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(value(y, 0), 0.75);
  EXPECT_EQ(value(y, 1), 2.125);  // clipped
  EXPECT_EQ(st.clipped[0], 0.5);
}

TEST(LineStep, HalvesUntilTheObjectiveFallsAndFallsBackToTheSignStep) {
  LineStep line;
  std::vector<RowStepStats> stats;
  Tensor x = Tensor::from<double>({1, 1}, {1.0});
  Tensor g = Tensor::from<double>({1, 1}, {1.0});
  std::vector<LineStep::Input> in{{&x, &g, std::nullopt}};
  // O(x) = |x − 0.85|: 0.15 at x = 1. α = ε = 0.4 → 0.6 in the first trial: worse; 0.2 → 0.8: lower, kept.
  auto o = [&]() -> Result<double> { return std::fabs(x.data<double>()[0] - 0.85); };
  ASSERT_TRUE(line.step(in, 0.4, 0.15, o, stats).is_ok());
  EXPECT_NEAR(x.data<double>()[0], 0.8, 1e-12);
  EXPECT_EQ(line.trials(), 2);
  EXPECT_DOUBLE_EQ(line.last_alpha(), 0.2);
  // Nothing lowers an objective of 0: seven trials from 2·0.2, then the plain sign step of ε, and α starts again.
  ASSERT_TRUE(line.step(in, 0.4, 0.0, o, stats).is_ok());
  EXPECT_EQ(line.trials(), 9);
  EXPECT_NEAR(x.data<double>()[0], 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(line.last_alpha(), 0.0);
}
