// Manifest keys that describe the program's own training and search (docs/MANIFEST.md): pre-training steps
// before the hunt (train.pretrain_steps), a fresh batch of the source for every training step (train.batch =
// "fresh"), fresh dropout masks for a training step on the monitored batch (train.masks), an initializer as a
// search variable (search.variables) and the objective chosen for a hazard (search.objective).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "config/manifest.h"
#include "data/dataset.h"
#include "data/npz.h"
#include "data/test_files.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "search/hunt.h"
#include "search/pretraining.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"
#include "support/test_models.h"

namespace grist {
namespace {

using testing::ScratchDir;

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// loss = mean((dropout(x·W + b) − y)²) trains W and b; the hazard is Log(x · gain), which the data input x (or the
// scalar gain) reaches: min|x·gain| steps one element of x by ε = 0.15 an iteration, 0.5 → ≤ 0 at the fifth.
Graph linear_toy(bool dropout) {
  testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {-1, 2}).input("y", DType::Float32, {-1, 1});
  b.constant("W", Tensor::from<float>(Shape{2, 1}, {0.5f, -0.25f}));
  b.constant("b", Tensor::from<float>(Shape{1}, {0.1f}));
  b.constant("gain", Tensor::from<float>(Shape{1}, {1.0f}));
  b.constant("ratio", Tensor::scalar<float>(0.5f));
  b.node("MatMul", {"x", "W"}, {"h"}).node("Add", {"h", "b"}, {"h2"});
  if (dropout) {
    b.node("Dropout", {"h2", "ratio"}, {"d"});
  } else {
    b.node("Identity", {"h2"}, {"d"});
  }
  b.node("Sub", {"d", "y"}, {"e"}).node("Mul", {"e", "e"}, {"e2"});
  b.node("ReduceMean", {"e2"}, {"loss"}, {{"keepdims", testing::attr_int(0)}}).output("loss");
  b.node("Mul", {"x", "gain"}, {"xs"}).node("Log", {"xs"}, {"lg"}).output("lg");
  return b.build();
}

constexpr const char* kLinearToy = R"(
model = "toy.onnx"
loss = "loss"
[inputs.x]
role = "data"
values = [[0.5, 0.9], [0.6, 0.8], [0.7, 0.95], [0.8, 0.6], [0.9, 0.7], [1.0, 0.65],
          [0.55, 0.85], [0.65, 0.75], [0.75, 0.9], [0.85, 0.55], [0.95, 0.6], [0.6, 0.7]]
[inputs.y]
role = "label"
values = [[1.0], [0.0], [1.0], [0.0], [1.0], [0.0], [0.5], [0.25], [0.75], [1.0], [0.0], [0.5]]
[batch]
size = 6
shuffle = false
[search]
switch_data = false
max_iterations = 50
weight_change = 0.0
training_share = 0.0
)";

Manifest read_toy(const ScratchDir& dir, const std::string& extra) {
  auto m = read_manifest(dir.write("m.toml", std::string(kLinearToy) + extra));
  EXPECT_TRUE(m.is_ok()) << m.message();
  return m.is_ok() ? std::move(m).value() : Manifest{};
}

HazardOutcome hunt_with(const Graph& g, const Manifest& m) {
  HuntOptions o;
  o.manifest = m;
  o.manifest.search.time_limit = 10.0;  // minutes: a backstop; the budget is the iteration count
  o.batch_size = m.batch_size;
  o.use_scan = false;
  auto r = hunt(g, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() && !r->outcomes.empty() ? r->outcomes.front() : HazardOutcome{};
}

// `steps` of the manifest's optimizer on the source's batches in order, written by hand (the program's loop).
std::map<std::string, Tensor> train_by_hand(const Graph& g, const Manifest& m, int64_t skip_batches, int64_t steps,
                                            OptimizerState* state = nullptr) {
  auto ex = Executor::create(g);
  EXPECT_TRUE(ex.is_ok());
  auto data = Dataset::create(m, g, m.batch_size, m.search.seed);
  EXPECT_TRUE(data.is_ok()) << data.message();
  std::vector<ValueId> params;
  for (ValueId id : g.initializers)
    if (is_float(g.value(id).dtype) && (m.train.all_params || std::count(m.train.params.begin(),
                                                                          m.train.params.end(), g.value(id).name)))
      params.push_back(id);
  Optimizer opt(m.train.optimizer, params);
  Batch b;
  for (int64_t i = 0; i < skip_batches; ++i) EXPECT_TRUE(data->next_batch(b));
  for (int64_t i = 0; i < steps; ++i) {
    EXPECT_TRUE(data->next_batch(b));
    for (const auto& [name, t] : b) EXPECT_TRUE(ex->set_input(name, t));
    EXPECT_TRUE(ex->forward());
    EXPECT_TRUE(ex->backward(g.find_value(m.loss), params));
    EXPECT_TRUE(opt.step(*ex));
  }
  std::map<std::string, Tensor> weights;
  for (ValueId id : params) weights[g.value(id).name] = ex->value(id);
  if (state) *state = opt.state();
  return weights;
}

TEST(TrainingProgram, PretrainingThenHuntingIsHuntingFromTheCheckpointAfterThoseSteps) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  const Manifest m =
      read_toy(dir, "[train]\noptimizer = \"adam\"\nlr = 0.05\nbatch = \"monitored\"\nparams = [\"W\", \"b\"]\n");
  constexpr int64_t kSteps = 7;
  OptimizerState state;
  const auto by_hand = train_by_hand(g, m, 0, kSteps, &state);
  // What pretrain() reached is the program's loop, bit for bit, Adam's moments and step count included.
  auto loaded = Dataset::create(m, g, m.batch_size, m.search.seed);
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  auto c = pretrain(g, m, *loaded, kSteps, nullptr);
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(c->steps, kSteps);
  ASSERT_EQ(c->weights.size(), 2u);
  for (const auto& [name, w] : by_hand) {
    EXPECT_TRUE(bit_identical(c->weights.at(name), w)) << name;
    EXPECT_FALSE(bit_identical(w, *g.value(g.find_value(name)).initial)) << name << " trained";
  }
  EXPECT_TRUE(bit_identical(c->slots.at("first").at("W"), state.first[0]));
  EXPECT_TRUE(bit_identical(c->slots.at("second").at("b"), state.second[1]));

  // The hand-trained state as a checkpoint file: hunting from it is hunting after pretrain_steps.
  NamedTensors arrays{{"optimizer.steps", Tensor::scalar<int64_t>(kSteps)}};
  const char* names[] = {"W", "b"};
  for (size_t k = 0; k < 2; ++k) {
    arrays.emplace_back(std::string("weight:") + names[k], by_hand.at(names[k]));
    arrays.emplace_back(std::string("optimizer.first:") + names[k], state.first[k]);
    arrays.emplace_back(std::string("optimizer.second:") + names[k], state.second[k]);
  }
  ASSERT_TRUE(write_npz(dir.path("after.npz"), arrays));
  Manifest resumed = m;
  resumed.train.checkpoint = dir.path("after.npz");
  Manifest pretrained = m;
  pretrained.train.pretrain_steps = kSteps;
  const HazardOutcome a = hunt_with(g, resumed), b = hunt_with(g, pretrained), plain = hunt_with(g, m);
  ASSERT_TRUE(a.triggered && b.triggered && plain.triggered);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.training_steps, kSteps + a.iterations - 1);
  EXPECT_EQ(b.training_steps, a.training_steps);
  for (const char* name : names) {
    ASSERT_TRUE(a.witness.weights.count(name) && b.witness.weights.count(name)) << name;
    EXPECT_TRUE(bit_identical(a.witness.weights.at(name), b.witness.weights.at(name))) << name;
    EXPECT_FALSE(bit_identical(a.witness.weights.at(name), plain.witness.weights.at(name))) << name;
  }
}

// The arrays of a checkpoint file holding `c` (as a program would save it), the loss scaler's state optional.
NamedTensors checkpoint_arrays(const Checkpoint& c, bool with_scaler) {
  NamedTensors arrays{{"optimizer.steps", Tensor::scalar<int64_t>(c.steps)}};
  for (const auto& [name, w] : c.weights) arrays.emplace_back("weight:" + name, w);
  for (const auto& [slot, by_name] : c.slots)
    for (const auto& [name, t] : by_name) arrays.emplace_back("optimizer." + slot + ":" + name, t);
  if (with_scaler && c.scaler) {
    arrays.emplace_back("scaler.scale", Tensor::scalar<float>(c.scaler->scale));
    arrays.emplace_back("scaler.growth_tracker", Tensor::scalar<int64_t>(c.scaler->growth_tracker));
  }
  return arrays;
}

// amp-fp16 training (GradScaler's loss scaling) with labels large enough that the first scaled gradients
// overflow float16: the scaler skips steps and backs the scale off before the updates start. Pre-training
// scales the loss as the hunt's training does, and its checkpoint keeps the scaler's state, so hunting after
// pretrain_steps and hunting from that checkpoint's file are one run bit for bit; the same file without the
// scaler's arrays restarts the scale at 65536: another run (the test can fail).
TEST(TrainingProgram, AnAmpProgramResumesWithItsLossScalersState) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  std::string toy = kLinearToy;
  const std::string labels =
      "values = [[1.0], [0.0], [1.0], [0.0], [1.0], [0.0], [0.5], [0.25], [0.75], [1.0], [0.0], [0.5]]";
  ASSERT_NE(toy.find(labels), std::string::npos);
  toy.replace(toy.find(labels), labels.size(),
              "values = [[1000.0], [0.0], [1000.0], [0.0], [1000.0], [0.0], [500.0], [250.0], [750.0], [1000.0], "
              "[0.0], [500.0]]");
  auto read = read_manifest(dir.write("amp.toml", toy + "[numerics]\nprecision = \"amp-fp16\"\n[train]\n"
                                                        "optimizer = \"sgd\"\nlr = 1e-6\nbatch = \"monitored\"\n"
                                                        "params = [\"W\", \"b\"]\n"));
  ASSERT_TRUE(read) << read.message();
  const Manifest m = std::move(read).value();
  constexpr int64_t kSteps = 20;
  auto loaded = Dataset::create(m, g, m.batch_size, m.search.seed);
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  auto c = pretrain(g, m, *loaded, kSteps, nullptr);
  ASSERT_TRUE(c.is_ok()) << c.message();
  ASSERT_TRUE(c->scaler.has_value());
  std::printf("after %lld amp-fp16 steps: scale %g, growth tracker %lld\n", static_cast<long long>(kSteps),
              c->scaler->scale, static_cast<long long>(c->scaler->growth_tracker));
  EXPECT_LT(c->scaler->scale, 65536.0f) << "no step was skipped: the scaler's state shows nothing";
  EXPECT_GT(c->scaler->growth_tracker, 0) << "no update was taken after the skips";
  EXPECT_FALSE(bit_identical(c->weights.at("W"), *g.value(g.find_value("W")).initial)) << "W trained";

  ASSERT_TRUE(write_npz(dir.path("with.npz"), checkpoint_arrays(*c, true)));
  ASSERT_TRUE(write_npz(dir.path("without.npz"), checkpoint_arrays(*c, false)));
  Manifest resumed = m, pretrained = m, unscaled = m;
  resumed.train.checkpoint = dir.path("with.npz");
  pretrained.train.pretrain_steps = kSteps;
  unscaled.train.checkpoint = dir.path("without.npz");
  const HazardOutcome a = hunt_with(g, resumed), b = hunt_with(g, pretrained), other = hunt_with(g, unscaled);
  ASSERT_TRUE(a.triggered && b.triggered && other.triggered);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.training_steps, b.training_steps);
  EXPECT_EQ(a.loss_scale, b.loss_scale);
  EXPECT_EQ(a.scaler_skipped_steps, b.scaler_skipped_steps);
  for (const char* name : {"W", "b"}) {
    ASSERT_TRUE(a.witness.weights.count(name) && b.witness.weights.count(name)) << name;
    EXPECT_TRUE(bit_identical(a.witness.weights.at(name), b.witness.weights.at(name))) << name;
  }
  // Restarting the scale at GradScaler's 65536 skips the steps again.
  EXPECT_NE(other.loss_scale, a.loss_scale);
  EXPECT_GT(other.scaler_skipped_steps, a.scaler_skipped_steps);
}

TEST(TrainingProgram, PretrainingThatFailsIsAnErrorNamingTheStep) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  // lr 1e30: the first update overflows the weights.
  const Manifest m = read_toy(dir, "[train]\noptimizer = \"sgd\"\nlr = 1e30\npretrain_steps = 3\n");
  HuntOptions o;
  o.manifest = m;
  o.batch_size = 6;
  auto r = hunt(g, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("pre-training step"), std::string::npos) << r.message();
}

TEST(TrainingProgram, AFreshTrainingBatchIsTheSourcesNextBatchEveryIteration) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  const std::string train = "[train]\noptimizer = \"sgd\"\nlr = 0.1\nbatch = ";
  const Manifest fresh = read_toy(dir, train + "\"fresh\"\n");
  const HazardOutcome out = hunt_with(g, fresh);
  ASSERT_TRUE(out.triggered);
  EXPECT_EQ(out.pass, TriggerPass::Monitored);
  EXPECT_EQ(out.iterations, 5);
  // The persistent batch took the source's first batch; each training step the next (rows 6–11, 0–5, ...),
  // never the searched one.
  const auto by_hand = train_by_hand(g, fresh, 1, out.iterations - 1);
  const HazardOutcome monitored = hunt_with(g, read_toy(dir, train + "\"monitored\"\n"));
  ASSERT_TRUE(monitored.triggered);
  for (const char* name : {"W", "b"}) {
    ASSERT_TRUE(out.witness.weights.count(name)) << name;
    EXPECT_TRUE(bit_identical(out.witness.weights.at(name), by_hand.at(name))) << name;
    EXPECT_FALSE(bit_identical(out.witness.weights.at(name), monitored.witness.weights.at(name))) << name;
  }
}

TEST(TrainingProgram, ATrainingStepOnTheMonitoredBatchDrawsFreshDropoutMasksUnlessTold) {
  ScratchDir dir;
  const std::string train = "[monitor]\ndropout = true\n[train]\noptimizer = \"sgd\"\nlr = 0.1\n"
                            "batch = \"monitored\"\ndropout = true\n";
  const Manifest fresh = read_toy(dir, train);
  const Manifest reuse = read_toy(dir, train + "masks = \"reuse\"\n");
  EXPECT_TRUE(fresh.train.fresh_masks);
  EXPECT_FALSE(reuse.train.fresh_masks);
  const Graph g = linear_toy(true);
  const HazardOutcome a = hunt_with(g, fresh), b = hunt_with(g, reuse);
  ASSERT_TRUE(a.triggered && b.triggered);
  ASSERT_EQ(a.iterations, b.iterations);  // the hazard does not depend on the masks
  // Fresh masks: a second draw every iteration (the generator has moved on further), and another gradient.
  EXPECT_NE(a.witness.rng_state, b.witness.rng_state);
  EXPECT_FALSE(bit_identical(a.witness.weights.at("W"), b.witness.weights.at("W")));
  // Without dropout the fresh forward is the monitored one: the same run either way.
  const Graph plain = linear_toy(false);
  const HazardOutcome c = hunt_with(plain, fresh), d = hunt_with(plain, reuse);
  ASSERT_TRUE(c.triggered && d.triggered);
  EXPECT_EQ(c.iterations, d.iterations);
  EXPECT_TRUE(bit_identical(c.witness.weights.at("W"), d.witness.weights.at("W")));
}

TEST(TrainingProgram, ASearchVariableIsSteppedBesideTheData) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  // x is clipped to [0.5, 1]: only the gain moving can bring x·gain to 0.
  Manifest m = read_toy(dir, "");
  m.inputs.at("x").range = ClipRange::Explicit;
  m.inputs.at("x").lo = 0.5;
  m.inputs.at("x").hi = 1.0;
  const HazardOutcome without = hunt_with(g, m);
  EXPECT_FALSE(without.triggered);
  m.search_variables = {"gain"};
  const HazardOutcome with = hunt_with(g, m);
  ASSERT_TRUE(with.triggered);
  EXPECT_EQ(with.finding_class, FindingClass::InputReached);
  // 1 → 1 − 7 × 0.15 < 0: the seventh step crossed zero, the eighth pass fails.
  EXPECT_EQ(with.iterations, 8);
  ASSERT_EQ(with.witness.weights.count("gain"), 1u);
  EXPECT_LT(with.witness.weights.at("gain").get_as_double(0), 0.0);

  m.search_variables = {"xs"};
  HuntOptions o;
  o.manifest = m;
  o.batch_size = 6;
  auto bad = hunt(g, o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("search.variables names 'xs', which is not a float initializer"), std::string::npos)
      << bad.message();
}

TEST(TrainingProgram, TheManifestChoosesAHazardsObjective) {
  ScratchDir dir;
  const Graph g = linear_toy(false);
  const HazardOutcome automatic = hunt_with(g, read_toy(dir, ""));
  ASSERT_TRUE(automatic.triggered);
  Manifest m = read_toy(dir, "");
  m.target = automatic.site.node_name;
  // min max(x·gain): the largest element down each step, so that all of them are below 0.5 before one fails.
  m.objective = "max";
  m.search.max_iterations = 500;
  const HazardOutcome out = hunt_with(g, m);
  ASSERT_TRUE(out.triggered);
  EXPECT_EQ(out.site.objective, Objective::Max);
  EXPECT_GT(out.iterations, automatic.iterations);
  auto moved = [&](const HazardOutcome& o) {
    const Tensor& x = o.witness.inputs.at("x");
    const Tensor& x0 = m.inputs.at("x").values;
    int64_t n = 0;
    for (int64_t i = 0; i < x.numel(); ++i) n += x.get_as_double(i) != static_cast<float>(x0.get_as_double(i));
    return n;
  };
  EXPECT_EQ(moved(automatic), 1);
  EXPECT_EQ(moved(out), 12);
  m.objective_value = "no such value";
  HuntOptions o;
  o.manifest = m;
  o.batch_size = 6;
  auto bad = hunt(g, o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.message().find("search.objective_value 'no such value' is not a value of the model"),
            std::string::npos) << bad.message();
}

}  // namespace
}  // namespace grist

namespace grist {
namespace {

// A one-dimensional GAN: G(z) = z·Wg + bg, D(v) = σ(v·Wd + bd); D minimises −mean(log D(x) + log(1 − D(G(z)))),
// G minimises −mean(log D(G(z))). The hazard hunted is Log(x) beside them (x reaches 0 at the fifth iteration),
// so that the training before it is the program's own, four iterations of it.
Graph gan_toy() {
  testing::GraphBuilder b(17);
  b.input("x", DType::Float32, {-1, 1}).input("z", DType::Float32, {-1, 1});
  b.constant("Wg", Tensor::from<float>(Shape{1, 1}, {0.5f})).constant("bg", Tensor::from<float>(Shape{1}, {0.0f}));
  b.constant("Wd", Tensor::from<float>(Shape{1, 1}, {1.0f})).constant("bd", Tensor::from<float>(Shape{1}, {0.0f}));
  b.constant("one", Tensor::scalar<float>(1.0f));
  b.node("MatMul", {"z", "Wg"}, {"gz"}).node("Add", {"gz", "bg"}, {"g"});
  b.node("MatMul", {"x", "Wd"}, {"dxr"}).node("Add", {"dxr", "bd"}, {"dx"}).node("Sigmoid", {"dx"}, {"real"});
  b.node("MatMul", {"g", "Wd"}, {"dgr"}).node("Add", {"dgr", "bd"}, {"dg"}).node("Sigmoid", {"dg"}, {"fake"});
  b.node("Log", {"real"}, {"log_real"}).node("Sub", {"one", "fake"}, {"not_fake"});
  b.node("Log", {"not_fake"}, {"log_not_fake"}).node("Add", {"log_real", "log_not_fake"}, {"d_sum"});
  b.node("ReduceMean", {"d_sum"}, {"d_mean"}, {{"keepdims", testing::attr_int(0)}}).node("Neg", {"d_mean"}, {"d_loss"});
  b.node("Log", {"fake"}, {"log_fake"});
  b.node("ReduceMean", {"log_fake"}, {"g_mean"}, {{"keepdims", testing::attr_int(0)}});
  b.node("Neg", {"g_mean"}, {"g_loss"});
  b.node("Log", {"x"}, {"log_x"});
  b.output("d_loss").output("g_loss").output("log_x");
  return b.build();
}

constexpr const char* kGanToy = R"(
model = "gan.onnx"
[inputs.x]
role = "data"
values = [[0.5], [0.6], [0.7], [0.8], [0.9], [1.0], [0.55], [0.65], [0.75], [0.85], [0.95], [0.6]]
[inputs.z]
role = "fixed"
source = "normal"
redraw = true                   # the program draws its noise every loop
[batch]
size = 6
shuffle = false
[train]
batch = "fresh"                 # and its real batch: the hand loop below can follow it exactly
[[train.phases]]
loss = "d_loss"
optimizer = "sgd"
lr = 0.5
params = ["Wd", "bd"]
[[train.phases]]
loss = "g_loss"
optimizer = "adam"
lr = 0.05
params = ["Wg", "bg"]
steps = 2
[search]
switch_data = false
max_iterations = 50
weight_change = 0.0
)";

TEST(TrainingProgram, AGansGeneratorTrainsOnItsOwnLossWithItsOwnOptimizer) {
  ScratchDir dir;
  const Graph g = gan_toy();
  auto read = read_manifest(dir.write("gan.toml", kGanToy));
  ASSERT_TRUE(read.is_ok()) << read.message();
  Manifest m = std::move(read).value();
  ASSERT_EQ(m.train.phases.size(), 2u);
  EXPECT_EQ(m.loss, "d_loss");
  for (const auto& s : find_hazards(g))
    if (g.value(s.operand_value).name == "x") m.target = std::to_string(s.id);
  ASSERT_FALSE(m.target.empty());
  const HazardOutcome out = hunt_with(g, m);
  ASSERT_TRUE(out.triggered);
  EXPECT_EQ(out.pass, TriggerPass::Monitored);
  EXPECT_EQ(out.finding_class, FindingClass::InputReached);
  ASSERT_EQ(out.iterations, 5);

  // The program's loop by hand: each iteration its noise redrawn and its next real batch, one SGD step of D on
  // d_loss, then two Adam steps of G on g_loss.
  auto ex = Executor::create(g);
  ASSERT_TRUE(ex.is_ok());
  auto data = Dataset::create(m, g, 6, m.search.seed);
  ASSERT_TRUE(data.is_ok()) << data.message();
  auto ids = [&](std::vector<std::string> names) {
    std::vector<ValueId> v;
    for (const auto& n : names) v.push_back(g.find_value(n));
    return v;
  };
  const std::vector<ValueId> d_params = ids({"Wd", "bd"}), g_params = ids({"Wg", "bg"});
  Optimizer d_opt(m.train.phases[0].optimizer, d_params), g_opt(m.train.phases[1].optimizer, g_params);
  Batch persistent, fresh;
  ASSERT_TRUE(data->next_batch(persistent));
  auto g_loss = [&] {
    EXPECT_TRUE(ex->forward());
    return ex->value(g.find_value("g_loss")).get_as_double(0);
  };
  for (int64_t it = 1; it < out.iterations; ++it) {
    ASSERT_TRUE(data->redraw(persistent));
    ASSERT_TRUE(data->next_batch(fresh));
    fresh["z"] = persistent.at("z");
    for (const auto& [name, t] : fresh) ASSERT_TRUE(ex->set_input(name, t));
    ASSERT_TRUE(ex->forward());
    ASSERT_TRUE(ex->backward(g.find_value("d_loss"), d_params));
    ASSERT_TRUE(d_opt.step(*ex));
    const double before = g_loss();
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(ex->forward());
      ASSERT_TRUE(ex->backward(g.find_value("g_loss"), g_params));
      ASSERT_TRUE(g_opt.step(*ex));
    }
    // G's steps lower G's loss against the D of this iteration: G trains, and the way its optimizer drives it.
    EXPECT_LT(g_loss(), before) << "iteration " << it;
  }
  for (const char* name : {"Wd", "bd", "Wg", "bg"}) {
    ASSERT_EQ(out.witness.weights.count(name), 1u) << name;
    EXPECT_TRUE(bit_identical(out.witness.weights.at(name), ex->value(g.find_value(name)))) << name;
    EXPECT_FALSE(bit_identical(out.witness.weights.at(name), *g.value(g.find_value(name)).initial)) << name;
  }
  EXPECT_EQ(out.witness.trained, (std::vector<std::string>{"Wd", "bd", "Wg", "bg"}));
}

}  // namespace
}  // namespace grist
