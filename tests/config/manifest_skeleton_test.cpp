// `grist init`'s skeleton (config/manifest_skeleton.h): roles, sources and the loss guessed from names, types
// and shapes, each guess said, keys quoted where TOML needs it; what it writes reads back and makes batches.
#include "config/manifest_skeleton.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "data/dataset.h"
#include "data/test_files.h"
#include "onnx/import.h"
#include "support/graph_builder.h"

namespace grist {
namespace {

using testing::GraphBuilder;
using testing::ScratchDir;

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

// The skeleton written into `dir` and read back as a manifest, its batches made from it.
Result<Manifest> round_trip(const ScratchDir& dir, const Graph& g, const std::string& text) {
  auto m = read_manifest(dir.write("m.toml", text));
  if (!m) return m.error();
  const int64_t batch = m->batch_size > 0 ? m->batch_size : g.fixed_batch_size().value_or(1);
  auto data = Dataset::create(*m, g, batch, 0);
  if (!data) return data.error();
  Batch b;
  GRIST_TRY(data->next_batch(b));
  return m;
}

std::string skeleton(const Graph& g, const std::string& fashion_dir = kFashionMnist) {
  SkeletonOptions o;
  o.model_path = "net.onnx";
  o.model_label = "net.onnx";
  o.fashion_mnist_dir = fashion_dir;
  return manifest_skeleton(g, o);
}

// An MNIST classifier as TensorFlow programs feed it: 784 floats a row, integer labels, a keep probability.
Graph mnist_classifier() {
  return GraphBuilder(13)
      .input("x", DType::Float32, {-1, 784})
      .input("y", DType::Int64, {-1})
      .input("keep_prob", DType::Float32, {})
      .constant("W", Tensor(DType::Float32, Shape{784, 10}))
      .node("MatMul", {"x", "W"}, {"z"})
      .node("Mul", {"z", "keep_prob"}, {"zk"})
      .node("SoftmaxCrossEntropyLoss", {"zk", "y"}, {"loss"})
      .output("loss")
      .output("zk")
      .build();
}

TEST(ManifestSkeleton, GuessesDataLabelsSettingsAndTheLossAndSaysSo) {
  if (!std::filesystem::exists(std::string(kFashionMnist) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "install Debian's dataset-fashion-mnist";
  const Graph g = mnist_classifier();
  const std::string text = skeleton(g);
  for (const char* want : {"model = \"net.onnx\"",
                           "loss = \"loss\"                   # guess: named like a loss",
                           "[inputs.x]                      # float32 [batch, 784]",
                           "role = \"data\"                   # guess: a float input with a batch dimension",
                           "source = \"fashion-mnist:train-images\" # guess: 784 values a row read as 28×28 images",
                           "scale = 0.00392156862745098",
                           "[inputs.y]                      # int64 [batch]",
                           "role = \"label\"                  # guess: an integer input is a label",
                           "source = \"fashion-mnist:train-labels\"",
                           "[inputs.keep_prob]              # float32 []",
                           "role = \"fixed\"                  # guess: no batch dimension",
                           "values = [1.0]                  # guess: a keep probability",
                           "size = 100                      # guess: the batch dimension is symbolic",
                           "# optimizer = \"adam\"", "#   W  float32 [784, 10]"})
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << text;
  for (size_t at = 0, next; at < text.size(); at = next + 1) {
    next = text.find('\n', at);
    EXPECT_LE(text.substr(at, next - at).size(), 120u) << text.substr(at, next - at);
  }
  ScratchDir dir;
  auto m = round_trip(dir, g, text);
  ASSERT_TRUE(m) << m.message() << "\n" << text;
  EXPECT_EQ(m->loss, "loss");
  EXPECT_EQ(m->inputs.at("x").role, InputRole::Data);
  EXPECT_EQ(m->inputs.at("x").source, InputSource::FashionMnist);
  EXPECT_EQ(m->inputs.at("y").role, InputRole::Label);
  EXPECT_EQ(m->inputs.at("keep_prob").role, InputRole::Fixed);
  EXPECT_EQ(m->batch_size, 100);
  EXPECT_FALSE(m->train.enabled);  // the training step is the user's to state
}

// Without the data set (or a row that is no image) data and labels are drawn: uniform in [0, 1), labels over
// the classes the loss scores.
TEST(ManifestSkeleton, WithoutADataSetInputsAreDrawnInTheirRange) {
  const Graph g = mnist_classifier();
  const std::string text = skeleton(g, "/nonexistent");
  EXPECT_EQ(text.find("fashion-mnist"), std::string::npos) << text;
  EXPECT_NE(text.find("uniform = [0.0, 10.0]"), std::string::npos) << text;
  ScratchDir dir;
  auto m = round_trip(dir, g, text);
  ASSERT_TRUE(m) << m.message() << "\n" << text;
  EXPECT_EQ(m->inputs.at("x").source, InputSource::Uniform);
  EXPECT_EQ(m->inputs.at("y").uniform_hi, 10.0);
}

// Names TOML cannot take bare are quoted; a float input named like labels is a label; a model without an
// output that reads as a loss gets none (the user names it).
TEST(ManifestSkeleton, QuotesNamesAndGuessesTheLossOnlyWhereAnOutputFits) {
  const Graph g = GraphBuilder(13)
                      .input("input:0", DType::Float32, {-1, 3})
                      .input("labels", DType::Float32, {-1, 3})
                      .node("Sub", {"input:0", "labels"}, {"d"})
                      .output("d")
                      .build();
  const std::string text = skeleton(g);
  EXPECT_NE(text.find("[inputs.\"input:0\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("role = \"label\"                  # guess: its name reads as labels"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# loss = \"...\"                  # no output reads as a loss (outputs: d)"), std::string::npos)
      << text;
  ScratchDir dir;
  auto m = round_trip(dir, g, text);
  ASSERT_TRUE(m) << m.message() << "\n" << text;
  EXPECT_TRUE(m->loss.empty());
  EXPECT_EQ(m->inputs.at("labels").role, InputRole::Label);
}

// A model exported with one sample ([1, 3, H, W], as torchvision's examples export) takes its image as data in
// batches of one; a one-element setting beside it stays fixed.
TEST(ManifestSkeleton, AnImageExportedWithBatchOneIsDataInBatchesOfOne) {
  const Graph g = GraphBuilder(13)
                      .input("image", DType::Float32, {1, 3, 4, 4})
                      .input("gain", DType::Float32, {1})
                      .node("Mul", {"image", "gain"}, {"y"})
                      .output("y")
                      .build();
  const std::string text = skeleton(g, "/nonexistent");
  ScratchDir dir;
  auto m = round_trip(dir, g, text);
  ASSERT_TRUE(m) << m.message() << "\n" << text;
  EXPECT_EQ(m->inputs.at("image").role, InputRole::Data) << text;
  EXPECT_EQ(m->inputs.at("gain").role, InputRole::Fixed) << text;
  EXPECT_EQ(m->batch_size, 1) << text;
}

// Every model of tests/models and the zoo (where exported) gets a skeleton that reads back and makes batches.
TEST(ManifestSkeleton, EveryCommittedModelGetsOneThatRuns) {
  namespace fs = std::filesystem;
  int checked = 0;
  std::vector<std::string> models;
  for (const auto& e : fs::directory_iterator(std::string(GRIST_SOURCE_DIR) + "/tests/models"))
    if (e.path().extension() == ".onnx") models.push_back(e.path().string());
  for (const auto& e : fs::directory_iterator(std::string(GRIST_SOURCE_DIR) + "/zoo"))
    if (fs::exists(e.path() / "model.onnx")) models.push_back((e.path() / "model.onnx").string());
  for (const std::string& path : models) {
    auto g = import_onnx_file(path);
    if (!g) continue;  // the models made to be refused (unsupported ops, future opsets, huge constants)
    ScratchDir dir;
    auto m = round_trip(dir, *g, skeleton(*g));
    EXPECT_TRUE(m) << path << ": " << m.message();
    checked += m.is_ok();
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace grist
