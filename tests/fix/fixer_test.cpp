// grist fix end to end on small models: every may-fail hazard repaired and every check run, each check able to
// fail and a failure reported as such; the repair's constant chosen by the proof; the witness replayed.
#include <cfloat>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/scan.h"
#include "config/manifest.h"
#include "fix/fixer.h"
#include "fix/verify.h"
#include "onnx/import.h"
#include "report/fix_report.h"
#include "report/witness.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(GRIST_SOURCE_DIR) / "tests/models";

// Options for fast tests: iteration budgets, not seconds.
FixOptions quick(Manifest m) {
  FixOptions o;
  o.manifest = std::move(m);
  o.has_manifest = true;
  o.batch = o.manifest.batch_size > 0 ? o.manifest.batch_size : 1;
  o.hunt_seconds = 60;  // never reached: the iterations bound the hunt
  o.hunt_iterations = 40;
  o.train_steps = 10;
  o.train_seconds = 60;
  o.data_batches = 2;
  o.precondition_probes = 60;
  return o;
}

struct Loaded {
  Manifest manifest;
  Graph graph;
};

Loaded load_toy() {
  auto m = read_manifest((kModels / "logreg_toy.toml").string());
  EXPECT_TRUE(m.is_ok()) << m.message();
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  default_inputs(*g, *m);
  return {std::move(m).value(), std::move(g).value()};
}

// grist fix on a bare model (no manifest), its input x assumed in [−100, 100], no preconditions.
Result<FixResult> fix_bare(const Graph& g) {
  Manifest m;
  default_inputs(g, m);
  FixOptions o = quick(m);
  o.has_manifest = false;
  o.assumed["x"] = {-100, 100};
  o.preconditions = false;
  return fix_model(g, o);
}

// Check (c) between two models on seeded default data (float inputs uniform in [0, 1)), 4 rows a batch.
Result<DataComparison> compare_on_default_data(const Graph& a, const Graph& b) {
  Manifest m;
  default_inputs(a, m);
  auto data = Dataset::create(m, a, 4, 1);
  if (!data) return data.error();
  DataCheckOptions dc;
  dc.manifest = &m;
  dc.data = &*data;
  dc.batch = 4;
  return compare_on_data(a, b, dc);
}

}  // namespace

TEST(Fix, RepairsBothLogsOfTheLogisticToyAndEveryCheckPasses) {
  Loaded toy = load_toy();
  auto r = fix_model(toy.graph, quick(toy.manifest));
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->hazards.size(), 2u);
  EXPECT_EQ(r->hazards[0].match.kind, RepairKind::LogSigmoid);
  EXPECT_EQ(r->hazards[1].match.kind, RepairKind::LogOneMinusSigmoid);
  for (const HazardFix& h : r->hazards) {
    EXPECT_TRUE(h.fixed()) << h.site.label();
    EXPECT_EQ(h.scan.state, CheckState::Passed) << h.scan.detail;
    EXPECT_EQ(h.hunt.state, CheckState::Passed) << h.hunt.detail;
    EXPECT_EQ(h.data.state, CheckState::Passed) << h.data.detail;
    EXPECT_EQ(h.training.state, CheckState::Passed) << h.training.detail;
    EXPECT_TRUE(h.local.any_finite) << h.local.text;  // −softplus(±x) is safe for every finite x
  }
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->fixed_scan.count(Verdict::MayFail), 0);
  // What is written is what was verified: the bytes read back to the same graph.
  auto back = import_onnx_bytes(r->fixed_bytes, "fixed");
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back->nodes.size(), r->fixed.nodes.size());
  // The report names the repair in all three languages and every check.
  const std::string text = to_text(*r, FixContext{"logreg_toy.onnx", "logreg_toy.fixed.onnx", 940});
  for (const char* want : {"F.logsigmoid", "tf.math.log_sigmoid", "Neg(Softplus(Neg(x)))", "(a) scan:     passed",
                           "(b) hunt:     passed", "(c) data:     passed", "(d) training: passed"})
    EXPECT_NE(text.find(want), std::string::npos) << want;
}

TEST(Fix, AHazardNoRepairIsProvedForIsReportedNotFixed) {
  // exp(x)·1e30: every limit of the catalogue still overflows the product, so no repair passes check (a).
  grist::testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {1, 4});
  b.constant("big", Tensor::scalar<float>(1e30f));
  b.node("Exp", {"x"}, {"e"}).node("Mul", {"e", "big"}, {"y"}).output("y");
  Graph g = b.build();
  g.value(g.find_value("y")).dtype = DType::Float32;
  g.value(g.find_value("y")).shape = std::vector<Dim>{Dim{1, {}}, Dim{4, {}}};
  auto r = fix_bare(g);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->hazards.size(), 1u);
  const HazardFix& h = r->hazards[0];
  EXPECT_FALSE(h.repaired);
  EXPECT_FALSE(h.fixed());
  EXPECT_EQ(h.scan.state, CheckState::Failed);
  EXPECT_EQ(h.attempts.size(), repair_entry(RepairKind::ExpClamp).values.size());
  EXPECT_FALSE(r->changed);  // nothing proved, nothing written
  const std::string text = to_text(*r, FixContext{"m", "", 0});
  EXPECT_NE(text.find("NOT FIXED"), std::string::npos) << text;
}

TEST(Fix, ATrainingThatDivergesInBothModelsIsNotTheRepairs) {
  Loaded toy = load_toy();
  FixOptions o = quick(toy.manifest);
  o.manifest.train.optimizer.lr = 1e38;  // the training itself diverges, with or without the repair
  o.preconditions = false;
  auto r = fix_model(toy.graph, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->training.result.state, CheckState::Failed);
  EXPECT_EQ(r->original_training.result.state, CheckState::Failed);
  ASSERT_FALSE(r->hazards.empty());
  for (const HazardFix& h : r->hazards) {
    EXPECT_TRUE(h.repaired);
    EXPECT_NE(h.training.detail.find("not the repair's"), std::string::npos) << h.training.detail;
  }
  const std::string text = to_text(*r, FixContext{"toy", "", 0});
  EXPECT_NE(text.find("(d) training: FAILED"), std::string::npos) << text;  // the model's own line says so
}

TEST(Fix, TheDataCheckCanFail) {
  // Two models that differ: log(x) and log(x + 1).
  grist::testing::GraphBuilder a(17), b(17);
  a.input("x", DType::Float32, {-1, 3}).node("Log", {"x"}, {"y"}).output("y");
  b.input("x", DType::Float32, {-1, 3}).constant("one", Tensor::scalar<float>(1.0f));
  b.node("Add", {"x", "one"}, {"x1"}).node("Log", {"x1"}, {"y"}).output("y");
  Graph ga = a.build(), gb = b.build();
  auto same = compare_on_default_data(ga, ga);
  ASSERT_TRUE(same.is_ok()) << same.message();
  EXPECT_EQ(same->result.state, CheckState::Passed) << same->result.detail;
  EXPECT_EQ(same->worst, 0);
  auto differ = compare_on_default_data(ga, gb);
  ASSERT_TRUE(differ.is_ok()) << differ.message();
  EXPECT_EQ(differ->result.state, CheckState::Failed) << differ->result.detail;
  EXPECT_GT(differ->worst, 0.1);
}

TEST(Fix, ATensorThatIsZeroInExactArithmeticIsRoundingNoiseNotADifference) {
  // z = Σ softmax(x) − 4 over a batch of 4 rows is 0 in exact arithmetic; computed as Σ exp(log_softmax(x)) − 4
  // the rounding differs. Relative to itself the noise differs by O(1) (as a shared scalar bias's gradient
  // under softmax cross-entropy does); in float64 both are below 1e-12 of y's scale: not a difference.
  auto build = [](bool stable) {
    grist::testing::GraphBuilder g(13);
    g.input("x", DType::Float32, {-1, 7}).constant("four", Tensor::scalar<float>(4.0f));
    if (stable) {
      g.node("LogSoftmax", {"x"}, {"ls"}, {{"axis", grist::testing::attr_int(1)}}).node("Exp", {"ls"}, {"p"});
    } else {
      g.node("Softmax", {"x"}, {"p"}, {{"axis", grist::testing::attr_int(1)}});
    }
    g.node("ReduceSum", {"p"}, {"s"}, {{"keepdims", grist::testing::attr_int(0)}}).node("Sub", {"s", "four"}, {"z"});
    g.node("Identity", {"x"}, {"y"}).output("z").output("y");
    return g.build();
  };
  Graph ga = build(false), gb = build(true);
  auto r = compare_on_default_data(ga, gb);
  ASSERT_TRUE(r.is_ok()) << r.message();
  const TensorDifference* z = nullptr;
  for (const auto& d : r->tensors)
    if (d.name.find('z') != std::string::npos) z = &d;
  ASSERT_NE(z, nullptr);
  EXPECT_GT(z->relative, 1e-5) << "no float32 noise to tell apart: the case checks nothing";
  EXPECT_TRUE(z->zero_in_exact);
  EXPECT_EQ(r->result.state, CheckState::Passed) << r->result.detail;
  EXPECT_NE(r->result.detail.find("0 in exact arithmetic"), std::string::npos) << r->result.detail;
}

TEST(Fix, AnExpClampThatWouldOverflowTheSumAfterItTakesALowerLimit) {
  // Σ over 1,000 terms of exp(x), x in [-100, 100]: with the limit 87 the sum of clamped exps still overflows
  // (1,000·e^87 > FLT_MAX); the proof rejects it and takes 80.
  grist::testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {1, 1000});
  b.node("Exp", {"x"}, {"e"}).node("ReduceSum", {"e"}, {"s"}).output("s");
  Graph g = b.build();
  g.value(g.find_value("s")).dtype = DType::Float32;
  g.value(g.find_value("s")).shape = std::vector<Dim>{Dim{1, {}}, Dim{1, {}}};
  auto r = fix_bare(g);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->hazards.size(), 1u);
  const HazardFix& h = r->hazards[0];
  ASSERT_TRUE(h.repaired) << h.scan.detail;
  EXPECT_EQ(h.match.kind, RepairKind::ExpClamp);
  EXPECT_EQ(h.applied.constant, 80);
  ASSERT_GE(h.attempts.size(), 2u);
  EXPECT_EQ(h.attempts[0].constant, 87);
  EXPECT_NE(h.attempts[0].outcome.find("overflow"), std::string::npos) << h.attempts[0].outcome;
}

TEST(Fix, TheWitnessThatBrokeTheOriginalRunsFiniteOnTheRepairedModel) {
  Loaded toy = load_toy();
  HuntOptions ho;
  ho.manifest = toy.manifest;
  ho.manifest.search.max_iterations = 2000;
  ho.batch_size = toy.manifest.batch_size;
  auto hunted = hunt(toy.graph, ho);
  ASSERT_TRUE(hunted.is_ok()) << hunted.message();
  const HazardOutcome* trigger = nullptr;
  for (const auto& out : hunted->outcomes)
    if (out.triggered) trigger = &out;
  ASSERT_NE(trigger, nullptr) << "the toy's hunt must trigger";
  const fs::path dir = fs::temp_directory_path() / ("grist-fix-witness-" + std::to_string(::getpid()));
  auto files = write_witness(dir.string(), toy.manifest.model, toy.manifest, *trigger);
  ASSERT_TRUE(files.is_ok()) << files.message();
  auto w = read_witness(files->json);
  ASSERT_TRUE(w.is_ok()) << w.message();
  FixOptions o = quick(toy.manifest);
  o.witness = *w;
  o.preconditions = false;
  auto r = fix_model(toy.graph, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  bool checked = false;
  for (const HazardFix& h : r->hazards)
    if (h.witness.state != CheckState::NotRun) {
      checked = true;
      EXPECT_EQ(h.witness.state, CheckState::Passed) << h.witness.detail;
    }
  EXPECT_TRUE(checked);
  EXPECT_NE(r->witness_on_original.find("Log"), std::string::npos) << r->witness_on_original;
  EXPECT_EQ(r->witness_on_fixed, "finite");

  // The same witness with its inputs set to 0 (x·W + b at the toy's weights is then finite for both logs) breaks
  // nothing: it shows nothing about the repair, and the check says so instead of passing.
  WitnessData benign = *w;
  for (auto& [name, t] : benign.inputs)
    if (is_float(t.dtype())) t.fill_zero();
  o.witness = benign;
  auto b = fix_model(toy.graph, o);
  ASSERT_TRUE(b.is_ok()) << b.message();
  EXPECT_EQ(b->witness_on_original, "finite");
  checked = false;
  for (const HazardFix& h : b->hazards)
    if (h.witness.state != CheckState::NotRun) {
      checked = true;
      EXPECT_EQ(h.witness.state, CheckState::Failed) << h.witness.detail;
      EXPECT_FALSE(h.fixed());
    }
  EXPECT_TRUE(checked);
  fs::remove_all(dir);
}

// Check (d) runs at least one step whatever its time cap, and asked for none it is not a pass.
TEST(Fix, TheTrainingCheckRunsAStepBeforeItsTimeCapAndNoStepIsNoPass) {
  Loaded toy = load_toy();
  auto data = Dataset::create(toy.manifest, toy.graph, toy.manifest.batch_size, 1);
  ASSERT_TRUE(data.is_ok()) << data.message();
  auto capped = run_training(toy.graph, toy.manifest, *data, toy.manifest.batch_size, 5, 1, 0.0);
  ASSERT_TRUE(capped.is_ok()) << capped.message();
  EXPECT_EQ(capped->steps, 1);
  EXPECT_EQ(capped->result.state, CheckState::Passed) << capped->result.detail;
  auto none = run_training(toy.graph, toy.manifest, *data, toy.manifest.batch_size, 0, 1, 1.0);
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_EQ(none->steps, 0);
  EXPECT_EQ(none->result.state, CheckState::NotRun) << none->result.detail;
}

TEST(Fix, SarifCarriesAFixOnEachRepairedResult) {
  Loaded toy = load_toy();
  FixOptions o = quick(toy.manifest);
  o.preconditions = false;
  auto r = fix_model(toy.graph, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  auto sarif = to_sarif(*r, FixContext{"logreg_toy.onnx", "logreg_toy.fixed.onnx", 940});
  const auto& results = sarif["runs"][0]["results"];
  ASSERT_EQ(results.size(), 2u);
  for (const auto& res : results) {
    ASSERT_TRUE(res.contains("fixes")) << res.dump();
    const auto& change = res["fixes"][0]["artifactChanges"][0];
    EXPECT_EQ(change["artifactLocation"]["uri"], "logreg_toy.onnx");
    EXPECT_EQ(change["replacements"][0]["deletedRegion"]["byteLength"], 940);
    EXPECT_FALSE(change["replacements"][0]["insertedContent"]["binary"].get<std::string>().empty());
  }
  // A model too large to embed gets the verified fix in the message only.
  auto small = to_sarif(*r, FixContext{"logreg_toy.onnx", "x", 940}, 10);
  EXPECT_FALSE(small["runs"][0]["results"][0].contains("fixes"));
}

TEST(Fix, AnUnknownHazardIsAnError) {
  Loaded toy = load_toy();
  FixOptions o = quick(toy.manifest);
  o.hazard = "/NoSuchNode";
  auto r = fix_model(toy.graph, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("/NoSuchNode"), std::string::npos) << r.message();
}
