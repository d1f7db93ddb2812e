#include "support/test_models.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "onnx/import.h"

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

}  // namespace grist::testing
