// amp-fp16 training in the hunt: loss scaling as GradScaler does it. An overflow of the scaled gradients is
// the scaler's normal business (the step skipped, the scale halved, training goes on); a forward that
// overflows the format is a genuine failure, found and named.
#include <filesystem>
#include <fstream>
#include <memory>

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "onnx/import.h"
#include "search/hunt.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

struct Written {
  fs::path dir;
  Graph graph;
  Manifest manifest;
  ~Written() { fs::remove_all(dir); }
};

// h = MatMul(x, w) with x [1, 2] the searched data and w [2, 2] the trained weight, then `tail` (nodes given as
// op, inputs, output; a ReduceSum keeps no dimensions) computing the scalar "loss" and, as an output too, "e".
struct TailNode {
  std::string op;
  std::vector<std::string> inputs;
  std::string output;
  float constant = 0;  // for "Constant"
};

std::unique_ptr<Written> write_model(const std::string& name, std::vector<float> w, std::vector<TailNode> tail,
                                     const std::string& manifest_tail) {
  auto t = std::make_unique<Written>();
  t->dir = fs::temp_directory_path() / ("grist_hunt_amp_" + name);
  fs::create_directories(t->dir);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name(name);
  auto declare = [](onnx::ValueInfoProto* v, const std::string& value, std::vector<int64_t> dims) {
    v->set_name(value);
    auto* type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape();
    for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x", {1, 2});
  declare(g->add_output(), "loss", {});
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->add_dims(2);
  for (float v : w) init->add_float_data(v);
  tail.insert(tail.begin(), TailNode{"MatMul", {"x", "w"}, "h"});
  for (const TailNode& n : tail) {
    if (n.output == "e") declare(g->add_output(), "e", {1, 2});  // the hazard's result, kept as an output
    auto* node = g->add_node();
    node->set_op_type(n.op);
    node->set_name(n.output);
    for (const auto& in : n.inputs) node->add_input(in);
    node->add_output(n.output);
    if (n.op == "ReduceSum") {
      auto* keep = node->add_attribute();
      keep->set_name("keepdims");
      keep->set_type(onnx::AttributeProto::INT);
      keep->set_i(0);
    } else if (n.op == "Constant") {
      auto* value = node->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      value->mutable_t()->add_float_data(n.constant);
    }
  }
  std::ofstream(t->dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
  std::ofstream(t->dir / "manifest.toml") << "model = \"model.onnx\"\nloss = \"loss\"\n" << manifest_tail;
  auto manifest = read_manifest((t->dir / "manifest.toml").string());
  EXPECT_TRUE(manifest.is_ok()) << manifest.message();
  auto graph = import_onnx_file(manifest->model);
  EXPECT_TRUE(graph.is_ok()) << graph.message();
  t->graph = std::move(graph).value();
  t->manifest = std::move(manifest).value();
  return t;
}

HazardOutcome hunt_in(const Written& t, Precision p) {
  HuntOptions o;
  o.manifest = t.manifest;
  o.manifest.precision = p;
  o.manifest.search.time_limit = 10.0;  // minutes: a backstop; the manifests bound the iterations
  o.use_scan = false;                   // every hazard hunted, in float32 too
  o.batch_size = 1;
  auto r = hunt(t.graph, o);
  EXPECT_TRUE(r.is_ok()) << r.message();
  EXPECT_FALSE(r->outcomes.empty());
  return r->outcomes.empty() ? HazardOutcome{} : r->outcomes.front();
}

const std::string kTraining =
    "[batch]\nsize = 1\n[train]\noptimizer = \"sgd\"\nframework = \"pytorch\"\nlr = 1e-6\nbatch = \"monitored\"\n";

}  // namespace

// loss = Σ x·w: dL/dh is the scale itself, and h is float16 (MatMul's result), so 65536 rounds to inf in the
// first step (65504 is float16's largest) and 32768 is finite after; x stays in [0, 1], so dL/dw ≤ 32768.
// The hazard hunted, exp(x) on x ≤ 1, cannot fire.
TEST(HuntAmp, AScaledGradientOverflowSkipsOneStepHalvesTheScaleAndTrainingGoesOn) {
  auto t = write_model("overflow_once", {0.5f, 0.25f, 0.125f, 1.0f},
                       {{"ReduceSum", {"h"}, "loss"}, {"Exp", {"x"}, "e"}},
                       "[inputs.x]\nrole = \"data\"\nvalues = [[0.5, 0.25]]\nrange = [0.0, 1.0]\n" + kTraining +
                           "[search]\nmax_iterations = 30\nweight_change = 0\n");
  HazardOutcome o = hunt_in(*t, Precision::AmpFp16);
  EXPECT_FALSE(o.triggered) << o.event.describe();
  EXPECT_EQ(o.iterations, 30);
  EXPECT_EQ(o.scaler_skipped_steps, 1);
  EXPECT_EQ(o.loss_scale, 32768.0);
  EXPECT_FALSE(o.scale_collapsed);

  HazardOutcome fp32 = hunt_in(*t, Precision::Fp32);
  EXPECT_FALSE(fp32.triggered);
  EXPECT_EQ(fp32.loss_scale, 0.0);  // no loss scaling outside amp
  EXPECT_EQ(fp32.scaler_skipped_steps, 0);
}

// loss = Σ exp(1e-4·x·w) with x ∈ [0, 300] and w's first column 200: the search drives x up (the objective is
// exp's operand), and h = x·w passes 65504 long before exp's operand nears float32's 88.7: float16's MatMul
// overflows, a genuine failure whatever the scale; float32 stays finite all the way to the clip bound.
TEST(HuntAmp, AForwardOverflowInFloat16IsAGenuineFailureFloat32DoesNotHave) {
  auto t = write_model("forward_overflow", {200.0f, 0.0f, 200.0f, 0.0f},
                       {{"Constant", {}, "k", 1e-4f}, {"Mul", {"h", "k"}, "s"}, {"Exp", {"s"}, "e"},
                        {"ReduceSum", {"e"}, "loss"}},
                       "[inputs.x]\nrole = \"data\"\nvalues = [[1.0, 1.0]]\nrange = [0.0, 300.0]\n" + kTraining +
                           "[search]\nmax_iterations = 60\nchange = 20\nweight_change = 0\n");
  HazardOutcome o = hunt_in(*t, Precision::AmpFp16);
  ASSERT_TRUE(o.triggered);
  EXPECT_EQ(o.event.op_type, "MatMul");
  EXPECT_FALSE(o.event.in_backward);
  EXPECT_FALSE(o.scale_collapsed);

  HazardOutcome fp32 = hunt_in(*t, Precision::Fp32);
  EXPECT_FALSE(fp32.triggered) << fp32.event.describe();
}

// loss = Σ sqrt(x·w) at w = 0: sqrt′(0) = ∞ whatever the scale. Each step is skipped and the scale halved,
// 65536 → 1 in 16 steps; the 17th pass, at scale 1, is still infinite and leaves 0.5: below the floor, the
// gradient's inf is the model's own, reported then, with the producer of that unscaled pass. float32 training
// fires at the first step.
TEST(HuntAmp, AGradientInfiniteAtEveryScaleFailsOnceTheScaleCollapses) {
  auto t = write_model("collapse", {0.0f, 0.0f, 0.0f, 0.0f}, {{"Sqrt", {"h"}, "e"}, {"ReduceSum", {"e"}, "loss"}},
                       "[inputs.x]\nrole = \"data\"\nvalues = [[0.5, 0.25]]\nrange = [0.0, 1.0]\n" + kTraining +
                           "[search]\nmax_iterations = 100\nweight_change = 0\n");
  HazardOutcome o = hunt_in(*t, Precision::AmpFp16);
  ASSERT_TRUE(o.triggered) << o.stopped;
  EXPECT_EQ(o.pass, TriggerPass::TrainingBackward);
  EXPECT_TRUE(o.scale_collapsed);
  EXPECT_EQ(o.scaler_skipped_steps, 17);
  EXPECT_EQ(o.loss_scale, 0.5);
  EXPECT_EQ(o.iterations, 17);
  EXPECT_EQ(o.event.op_type, "Sqrt");
  ASSERT_TRUE(o.witness.scaler.has_value());
  EXPECT_EQ(o.witness.scaler->scale, 1.0f);  // the scale that pass was seeded with

  HazardOutcome fp32 = hunt_in(*t, Precision::Fp32);
  ASSERT_TRUE(fp32.triggered);
  EXPECT_EQ(fp32.pass, TriggerPass::TrainingBackward);
  EXPECT_EQ(fp32.iterations, 1);
  EXPECT_FALSE(fp32.scale_collapsed);
}
