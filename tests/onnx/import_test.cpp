// The importer turns exported models into graphs and refuses bad files with one clear line.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "onnx/import.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {
const fs::path kModels = fs::path(GRIST_SOURCE_DIR) / "tests/models";

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST(Import, TorchMlpBecomesSortedGraphWithNamedWeightsAndSymbolicBatch) {
  auto g = import_onnx_file((kModels / "mlp.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  ASSERT_EQ(g->inputs.size(), 1u);
  const Value& x = g->value(g->inputs[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, DType::Float32);
  ASSERT_TRUE(x.shape.has_value());
  EXPECT_EQ((*x.shape)[0].symbol, "batch");
  EXPECT_EQ((*x.shape)[1].size, 20);
  EXPECT_NE(g->find_value("fc1.weight"), kNoValue);
  EXPECT_EQ(g->initializers.size(), 4u);
  ASSERT_EQ(g->nodes.size(), 3u);
  EXPECT_EQ(g->nodes[0].op_type, "Gemm");
  EXPECT_EQ(g->nodes[0].opset, 13);
  // Shape inference filled in the intermediate value between the two layers.
  const Value& hidden = g->value(g->nodes[1].inputs[0]);
  ASSERT_TRUE(hidden.shape.has_value());
  EXPECT_EQ((*hidden.shape)[1].size, 16);
}

TEST(Import, NotAnOnnxFileIsRefusedNamingTheFile) {
  auto g = import_onnx_bytes("this is not a protobuf at all \x01\x02\xff", "notes.txt");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.message().find("notes.txt"), std::string::npos) << g.message();
  EXPECT_NE(g.message().find("not an ONNX model"), std::string::npos) << g.message();
}

TEST(Import, EmptyFileIsRefused) {
  auto g = import_onnx_bytes("", "empty.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.message().find("empty"), std::string::npos) << g.message();
}

TEST(Import, EveryTruncationOfARealModelIsRefusedOrImportsCleanly) {
  const std::string bytes = read_bytes(kModels / "mlp.onnx");
  ASSERT_GT(bytes.size(), 100u);
  int refused = 0;
  for (size_t cut = 1; cut < bytes.size(); cut += 7) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), "cut.onnx");
    if (!g) {
      ++refused;
      EXPECT_EQ(g.message().find('\n'), std::string::npos) << "one line: " << g.message();
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(Import, MissingFileSaysSo) {
  auto g = import_onnx_file("/nonexistent/model.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.message().find("cannot open"), std::string::npos);
}

TEST(Import, HugeInitializerIsRefusedBeforeAllocating) {
  auto g = import_onnx_file((kModels / "huge_initializer.onnx").string());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.message().find("huge"), std::string::npos) << g.message();
}

TEST(Import, EveryUnsupportedOpIsListedWithItsNodesAtOnce) {
  auto g = import_onnx_file((kModels / "unsupported_ops.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  auto ex = Executor::create(*g);
  ASSERT_FALSE(ex.is_ok());
  const std::string& m = ex.message();
  EXPECT_NE(m.find("LSTM (lstm_a, lstm_b)"), std::string::npos) << m;
  EXPECT_NE(m.find("Det (det_1)"), std::string::npos) << m;
  EXPECT_EQ(m.find("Relu"), std::string::npos) << m;
}
