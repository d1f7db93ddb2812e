// The hunt on exported models: the study's known answers (GRIST.md §4), each variant, optimizer, switching
// rule, clipping, decay, flush-to-zero and the budget, pinned so a change of behaviour shows.
#include <filesystem>
#include <fstream>
#include <memory>

#include <onnx/onnx_pb.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "data/dataset.h"
#include "search/hunt.h"
#include "support/test_models.h"
#include "support/graph_builder.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {


using Loaded = grist::testing::LoadedModel;
Loaded load(const std::string& name) { return grist::testing::load_test_model(name); }

HazardOutcome hunt_first(const Loaded& l, const std::function<void(Manifest&)>& tweak = {}) {
  HuntOptions o;
  o.manifest = l.manifest;
  // Budgets by iteration count, so the weights join (after a quarter of it) at a fixed iteration whatever the
  // machine's speed; the time limit is only a backstop that no case here comes near.
  o.manifest.search.time_limit = 10.0;  // minutes
  o.manifest.search.max_iterations = 5000;
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
  // The study's counter: 346 (GRIST.md §4 allows 345–347; grist's count is exact, so it is pinned).
  EXPECT_EQ(o.iterations, 345);
  EXPECT_EQ(l.manifest.expect.study_count(o.iterations), 346);
  EXPECT_EQ(o.event.op_type, "Log");
  EXPECT_EQ(o.site.pattern, "log(softmax)");
}

TEST(HuntKnownAnswers, LogisticRegressionToyTriggersAt236WithSgdOnTheMonitoredBatch) {
  Loaded l = load("logreg_toy");
  HazardOutcome o = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.iterations, 235);
  EXPECT_EQ(l.manifest.expect.study_count(o.iterations), 236);
  EXPECT_EQ(o.event.node_name, "/Log");
  // Training changed the weights, so the witness carries them.
  EXPECT_EQ(o.witness.weights.count("W"), 1u);
}

// The default loop scans every pass, and still fires where the study's loop does on this toy.
TEST(HuntKnownAnswers, GristDefaultFiresAtTheFaithfulLoopsIteration) {
  Loaded l = load("logreg_toy");
  HazardOutcome faithful = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  HazardOutcome grist = hunt_first(l);
  ASSERT_TRUE(faithful.triggered && grist.triggered);
  EXPECT_EQ(faithful.iterations, 235);
  EXPECT_EQ(grist.iterations, 235);
  EXPECT_EQ(grist.event.node_name, "/Log");
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
  EXPECT_EQ(o.iterations, 300);  // every iteration ran, none fired
  EXPECT_EQ(o.strategy, "random");
}

// These two pin the forward's underflow, so they run the faithful loop: grist's default also scans the
// loss's backward, where 1/p overflows for a denormal p some 46 iterations before p reaches 0.
TEST(HuntSettings, FlushToZeroUnderflowsSoftmaxEarlier) {
  Loaded l = load("free_logits");
  auto faithful = [](Manifest& m) { m.search.faithful = true; };
  HazardOutcome kept = hunt_first(l, faithful);
  HazardOutcome flushed = hunt_first(l, [&](Manifest& m) {
    faithful(m);
    m.ftz = true;
  });
  ASSERT_TRUE(kept.triggered && flushed.triggered);
  // A gap of ≈87.3 instead of ≈103.3 at 0.3 per iteration: 55 iterations sooner.
  EXPECT_EQ(kept.iterations, 345);
  EXPECT_EQ(flushed.iterations, 290);
}

TEST(HuntSettings, DecayShrinksTheStepAndDelaysTheTrigger) {
  Loaded l = load("free_logits");
  HazardOutcome plain = hunt_first(l, [](Manifest& m) { m.search.faithful = true; });
  HazardOutcome decayed = hunt_first(l, [](Manifest& m) {
    m.search.faithful = true;
    m.search.decay = true;
    m.search.decay_steps = 200;
    m.search.decay_rate = 0.5;
  });
  ASSERT_TRUE(plain.triggered && decayed.triggered);
  // 200 iterations at 0.3 per iteration, then 0.15: the remaining gap takes twice as long.
  EXPECT_EQ(plain.iterations, 345);
  EXPECT_EQ(decayed.iterations, 580);
}

TEST(HuntSettings, ClippingHoldsTheSearchedInputInsideItsRange) {
  Loaded l = load("free_logits");
  auto clipped = [](Manifest& m) {
    m.inputs["z"].range = ClipRange::Explicit;
    m.inputs["z"].lo = -20;
    m.inputs["z"].hi = 20;
    m.search.max_iterations = 1000;
  };
  // A gap of at most 40 cannot underflow a softmax entry: the scan proves it for every run (no weights, and
  // the clip keeps the search in the box), so the hunt spends nothing on it...
  HazardOutcome skipped = hunt_first(l, clipped);
  EXPECT_FALSE(skipped.triggered);
  EXPECT_EQ(skipped.iterations, 0);
  EXPECT_EQ(skipped.skipped.rfind("proved safe for every run by the interval scan", 0), 0u) << skipped.skipped;
  // ...and searched anyway, it never triggers, though every iteration ran.
  HuntOptions o;
  o.manifest = l.manifest;
  clipped(o.manifest);
  o.use_scan = false;
  o.batch_size = o.manifest.batch_size;
  auto r = hunt(l.graph, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_FALSE(r->outcomes.front().triggered);
  EXPECT_EQ(r->outcomes.front().iterations, 1000);
}

TEST(HuntSettings, AnIterationBudgetStopsASearchThatCannotSucceed) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.search.variant = Variant::Original;
    m.search.max_iterations = 250;
  });
  EXPECT_FALSE(o.triggered);
  EXPECT_EQ(o.iterations, 250);
  EXPECT_TRUE(o.stopped.empty()) << o.stopped;
}

// Without an iteration budget the time limit ends the search. What is pinned is how the budget is shared
// and kept, not how long anything took: the hazard's share never exceeds the limit, and the search stops
// only once it has spent its share.
TEST(HuntSettings, ATimeBudgetAloneEndsTheSearchOnceItsShareIsSpent) {
  Loaded l = load("free_logits");
  HazardOutcome o = hunt_first(l, [](Manifest& m) {
    m.search.variant = Variant::Original;
    m.search.max_iterations = 0;
    m.search.time_limit = 0.2 / 60.0;  // 0.2 s
  });
  EXPECT_FALSE(o.triggered);
  EXPECT_LE(o.budget_s, 0.2);
  EXPECT_GE(o.seconds, o.budget_s);
}

TEST(HuntOptimizers, EachOptimizerTrainsTheToyAndFindsTheBug) {
  Loaded l = load("logreg_toy");
  std::vector<std::string> found;  // producer, iteration and pass of each optimizer's trigger
  for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Adagrad, OptimizerKind::RMSProp}) {
    HazardOutcome o = hunt_first(l, [k](Manifest& m) {
      m.train.optimizer = OptimizerConfig::defaults(k, Framework::PyTorch);
      m.train.optimizer.lr = 0.5;
      m.search.max_iterations = 5000;
    });
    EXPECT_TRUE(o.triggered) << static_cast<int>(k);
    found.push_back(fmt::format("{} at {} ({})", o.event.node_name, o.iterations, pass_name(o.pass)));
  }
  // The optimizers move the weights differently, so the iteration counts differ.
  // RMSProp's first step is lr·g/√(0.01·g²) = ±5 per weight: sigmoid saturates to 1 and log(1 − h) fires at once.
  EXPECT_EQ(found, (std::vector<std::string>{"/Log at 312 (monitored forward)", "/Log at 143 (monitored forward)",
                                             "/Log at 271 (monitored forward)", "/Log_1 at 2 (monitored forward)"}));
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
  for (const HazardOutcome& out : r->outcomes) EXPECT_TRUE(out.triggered) << out.site.label();
  // log(h) first, from the initial model, where the study's toy fires; then log(1 − h) goes on from the weights
  // and optimizer state the program's training had reached by then (234 steps), not from the initial model
  // (where a hunt of it alone fires at iteration 69): one run, both hazards.
  EXPECT_EQ(r->outcomes[0].site.node_name, "/Log");
  EXPECT_EQ(r->outcomes[0].iterations, 235);
  EXPECT_EQ(r->outcomes[0].training_steps, 234);
  EXPECT_EQ(r->outcomes[1].site.node_name, "/Log_1");
  EXPECT_EQ(r->outcomes[1].event.node_name, "/Log_1");
  EXPECT_EQ(r->outcomes[1].iterations, 28);
  EXPECT_EQ(r->outcomes[1].training_steps, 234 + 27);
}

TEST(HuntWeights, WeightsJoinAfterTheInputsShareAndReachWhatInputsAloneCannot) {
  Loaded l = load("logreg_toy");
  auto no_training = [](Manifest& m) {
    m.train.enabled = false;  // W stays at zero: sigmoid(x·0 + 0) = 0.5 whatever x is
    m.search.max_iterations = 2000;
  };
  HuntOptions o;
  o.manifest = l.manifest;
  no_training(o.manifest);
  o.manifest.search.weight_change = 0;  // inputs only, as GRIST
  o.batch_size = 6;
  // With nothing to move the weights, the scan proves both logs safe for inputs in [-50, 50]; the unclipped
  // search may leave that box, so both are still searched, each for all of its 2,000 iterations...
  auto inputs_only = hunt(l.graph, o);
  ASSERT_TRUE(inputs_only.is_ok()) << inputs_only.message();
  ASSERT_EQ(inputs_only->outcomes.size(), 2u);
  for (const auto& out : inputs_only->outcomes) {
    EXPECT_FALSE(out.triggered);
    EXPECT_EQ(out.iterations, 2000);
    EXPECT_TRUE(out.skipped.empty()) << out.skipped;
  }
  // ...and without the scan the same: searching the inputs alone for every one of the 2,000 iterations reaches
  // neither.
  o.use_scan = false;
  auto searched = hunt(l.graph, o);
  ASSERT_TRUE(searched.is_ok()) << searched.message();
  ASSERT_EQ(searched->outcomes.size(), 2u);
  for (const auto& out : searched->outcomes) {
    EXPECT_FALSE(out.triggered);
    EXPECT_TRUE(out.skipped.empty()) << out.skipped;
    EXPECT_EQ(out.iterations, 2000);
    EXPECT_EQ(out.weights_from, 0);
  }

  // Without the weights race the weights join after a quarter of the budget (here: of max_iterations)...
  HazardOutcome clocked = hunt_first(l, [&](Manifest& m) {
    no_training(m);
    m.search.race_weights = false;
  });
  ASSERT_TRUE(clocked.triggered);
  EXPECT_EQ(clocked.strategy, "grist+weights");
  EXPECT_EQ(clocked.weights_from, 501);
  EXPECT_EQ(clocked.iterations, 661);
  EXPECT_EQ(clocked.witness.weights.count("W"), 1u);  // the weights it reached are part of the witness
  // ...and by default the race's twin steps them from the second iteration: the same failure 499 iterations sooner.
  HazardOutcome by_default = hunt_first(l, no_training);
  ASSERT_TRUE(by_default.triggered);
  EXPECT_TRUE(by_default.weights_race);
  EXPECT_EQ(by_default.weights_from, 2);
  EXPECT_EQ(by_default.iterations, 162);
  EXPECT_EQ(by_default.witness.weights.count("W"), 1u);

  HazardOutcome from_start = hunt_first(l, [&](Manifest& m) {
    no_training(m);
    m.search.weight_change = 0.05;
    m.search.weights_after = 0;
  });
  ASSERT_TRUE(from_start.triggered);
  EXPECT_EQ(from_start.weights_from, 1);
  EXPECT_EQ(from_start.iterations, 48);

  // The study's loop never steps weights: it runs all its iterations (the scan left out) and reaches neither.
  o.manifest.search.faithful = true;
  o.manifest.search.weight_change = 0.01;
  auto faithful = hunt(l.graph, o);
  ASSERT_TRUE(faithful.is_ok()) << faithful.message();
  ASSERT_EQ(faithful->outcomes.size(), 2u);
  for (const auto& out : faithful->outcomes) {
    EXPECT_FALSE(out.triggered);
    EXPECT_EQ(out.iterations, 2000);
    EXPECT_EQ(out.weights_from, 0);
  }
}

// A model written on the spot: y = op(x[, w]) with x [1, 2] the searched data, w a [2] weight when given,
// and optionally loss = ReduceSum(y); with its manifest, in a temporary folder removed with it.
struct TinyModel {
  fs::path dir;
  Loaded loaded;
  ~TinyModel() { fs::remove_all(dir); }
};

std::unique_ptr<TinyModel> tiny_model(const std::string& name, const std::string& op, std::vector<float> weight,
                                      bool with_loss, const std::string& manifest_tail) {
  auto t = std::make_unique<TinyModel>();
  t->dir = fs::temp_directory_path() / ("grist_hunt_" + name);
  fs::create_directories(t->dir);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name(name);
  auto declare = [](onnx::ValueInfoProto* v, const char* value, std::vector<int64_t> dims) {
    v->set_name(value);
    auto* type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape();  // a scalar has a shape with no dimensions
    for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x", {1, 2});
  declare(g->add_output(), "y", {1, 2});
  auto* node = g->add_node();
  node->set_op_type(op);
  node->set_name("hazard");
  node->add_input("x");
  node->add_output("y");
  if (!weight.empty()) {
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(static_cast<int64_t>(weight.size()));
    for (float v : weight) w->add_float_data(v);
    node->add_input("w");
  }
  if (with_loss) {
    auto* sum = g->add_node();
    sum->set_op_type("ReduceSum");
    sum->set_name("sum");
    sum->add_input("y");
    sum->add_output("loss");
    auto* keep = sum->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
    declare(g->add_output(), "loss", {});
  }
  std::ofstream(t->dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
  std::ofstream(t->dir / "manifest.toml") << "model = \"model.onnx\"\n" << (with_loss ? "loss = \"loss\"\n" : "")
                                           << manifest_tail;
  auto manifest = read_manifest((t->dir / "manifest.toml").string());
  EXPECT_TRUE(manifest.is_ok()) << manifest.message();
  auto graph = import_onnx_file(manifest->model);
  EXPECT_TRUE(graph.is_ok()) << graph.message();
  t->loaded = Loaded{std::move(graph).value(), std::move(manifest).value()};
  return t;
}

// x / w with w = [0.5, 0.3] a weight: no input step can reach the divisor, so the weights join at the second
// iteration (after one backward showed it), with an exact step δ = O/(∂O/∂w) = 0.3 on w[1]: zero at once,
// where sign steps of any fixed size would hop over it.
TEST(HuntWeights, AHazardNoInputReachesGetsAnExactWeightStep) {
  auto t = tiny_model("weight_divisor", "Div", {0.5f, 0.3f}, false,
                      "[inputs.x]\nrole = \"data\"\nvalues = [[1.0, 1.0]]\nrange = \"none\"\n[batch]\nsize = 1\n"
                      "[search]\nmax_iterations = 100\n");
  HazardOutcome o = hunt_first(t->loaded);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.weights_from, 2);
  EXPECT_EQ(o.iterations, 3);  // w[1] = 0 after the second iteration's step; x / 0 = Inf in the third forward
  EXPECT_EQ(o.event.node_name, "hazard");
  ASSERT_EQ(o.witness.weights.count("w"), 1u);
  EXPECT_EQ(o.witness.weights.at("w").get_as_double(0), 0.5);  // only the steepest weight moves
  EXPECT_EQ(o.witness.weights.at("w").get_as_double(1), 0.0);
}

// sqrt(0) = 0 is finite, its derivative is not: a model that does not train still has its loss's backward
// scanned (zoo bug 5). x[1]: 0.25 -> 0.125 -> 0 in two steps of 0.125; the third iteration's backward fires.
TEST(HuntPasses, TheLossGradientIsScannedWhenTheModelDoesNotTrain) {
  const std::string manifest = "[inputs.x]\nrole = \"data\"\nvalues = [[0.5, 0.25]]\nrange = \"none\"\n"
                               "[batch]\nsize = 1\n[search]\nchange = 0.125\nmax_iterations = 10\n";
  auto t = tiny_model("sqrt_gradient", "Sqrt", {}, true, manifest);
  HazardOutcome o = hunt_first(t->loaded);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.iterations, 3);
  EXPECT_EQ(o.pass, TriggerPass::LossBackward);
  EXPECT_EQ(o.event.node_name, "hazard");
  EXPECT_TRUE(o.event.in_backward);

  HazardOutcome faithful = hunt_first(t->loaded, [](Manifest& m) { m.search.faithful = true; });
  // The study's loop checks the loss only: finite at x = 0, so it fires one step later, at sqrt(-0.125).
  ASSERT_TRUE(faithful.triggered);
  EXPECT_EQ(faithful.iterations, 4);
  EXPECT_EQ(faithful.pass, TriggerPass::Monitored);
}

// The default run stops at the first trigger, so the order decides what is found: the producer nearest the
// loss goes first within its kind (a model's own bug is most often its loss's log), whatever the execution
// order. Here Log (four nodes from the output) runs before Sqrt (one node from it).
TEST(HuntPlan, TheHazardNearestTheLossIsHuntedFirst) {
  grist::testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {-1, 2}).constant("two", Tensor::scalar<float>(2.0f));
  b.node("Log", {"x"}, {"l"}).node("Mul", {"l", "two"}, {"m1"}).node("Mul", {"m1", "two"}, {"m2"});
  b.node("Mul", {"m2", "two"}, {"m3"}).node("Sqrt", {"x"}, {"r"}).node("Add", {"m3", "r"}, {"y"}).output("y");
  const Graph g = b.build();
  HuntOptions o;
  default_inputs(g, o.manifest);
  o.manifest.search.max_iterations = 3;
  o.manifest.search.time_limit = 10.0;
  o.all = true;
  o.batch_size = 1;
  std::vector<std::string> turns;  // the hazard of each turn, in order
  o.on_progress = [&](const Progress& p) {
    if (p.iteration == 1) turns.push_back(p.hazard);
  };
  auto r = hunt(g, o);
  ASSERT_TRUE(r.is_ok()) << r.message();
  ASSERT_EQ(r->hazards.size(), 2u);
  EXPECT_EQ(r->hazards[0].op_type, "Log");  // the execution order
  ASSERT_FALSE(turns.empty());
  EXPECT_EQ(turns[0], r->hazards[1].label());  // Sqrt's turn first
  EXPECT_EQ(r->outcomes.size(), 2u);
}
