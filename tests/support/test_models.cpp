#include "support/test_models.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "onnx/import.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

namespace grist::testing {

LoadedModel load_test_model(const std::string& name) {
  const std::filesystem::path manifest = std::filesystem::path(GRIST_SOURCE_DIR) / "tests/models" / (name + ".toml");
  auto m = read_manifest(manifest.string());
  EXPECT_TRUE(m.is_ok()) << m.message();
  if (!m) return {};
  auto g = import_onnx_file(m->model);
  EXPECT_TRUE(g.is_ok()) << g.message();
  if (!g) return {};
  return {std::move(g).value(), std::move(m).value()};
}

Graph clip_exp_sqrt_graph(std::vector<int64_t> dims) {
  return GraphBuilder()
      .input("x", DType::Float32, std::move(dims))
      .constant("lo", Tensor::from<float>({}, {-100.0f}))
      .constant("hi", Tensor::from<float>({}, {87.0f}))
      .node("Clip", {"x", "lo", "hi"}, {"c"})
      .node("Exp", {"c"}, {"e"})
      .node("Sqrt", {"e"}, {"s"})
      .node("ReduceSum", {"s"}, {"loss"}, {{"keepdims", attr_int(0)}})
      .output("loss")
      .build();
}

}  // namespace grist::testing
