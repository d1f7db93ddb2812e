// A command hands a loaded model's weights to its executor without copying them: the largest weight of a model is
// then held once, not twice (docs/PERFORMANCE.md, "Session 11: load peak").
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "onnx/import.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {
const fs::path kModels = fs::path(GRIST_SOURCE_DIR) / "tests/models";
}  // namespace

TEST(WeightHandover, TakeInitialMovesTheGraphsOnlyReferenceAndCopiesASharedOne) {
  auto g = import_onnx_file((kModels / "mlp.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  const ValueId w = g->find_value("fc1.weight");
  const ValueId b = g->find_value("fc1.bias");
  ASSERT_NE(w, kNoValue);
  ASSERT_NE(b, kNoValue);

  const std::byte* buffer = g->value(w).initial->raw();
  const Tensor expected = *g->value(w).initial;
  Tensor taken = g->take_initial(w);
  EXPECT_EQ(taken.raw(), buffer) << "an unshared weight must be moved out, not copied";
  EXPECT_EQ(g->value(w).initial, nullptr);
  ASSERT_EQ(taken.nbytes(), expected.nbytes());
  EXPECT_EQ(std::memcmp(taken.raw(), expected.raw(), taken.nbytes()), 0);

  // Another owner (a copy of the graph) keeps its tensor whole.
  const std::shared_ptr<const Tensor> shared = g->value(b).initial;
  Tensor copy = g->take_initial(b);
  EXPECT_NE(copy.raw(), shared->raw());
  ASSERT_EQ(copy.nbytes(), shared->nbytes());
  EXPECT_EQ(std::memcmp(copy.raw(), shared->raw(), copy.nbytes()), 0);
  EXPECT_TRUE(g->take_initial(b).raw() == nullptr) << "taken once, the value holds none";
}

TEST(WeightHandover, SetInputFromATemporaryTakesItsBuffer) {
  auto g = import_onnx_file((kModels / "mlp.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  const ValueId w = g->find_value("fc1.weight");
  Tensor weight = g->take_initial(w);
  const Tensor expected = weight;
  auto ex = Executor::create(*g);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  const std::byte* buffer = weight.raw();
  ASSERT_TRUE(ex->set_input(w, std::move(weight)).is_ok());
  EXPECT_EQ(ex->value(w).raw(), buffer) << "the executor must take the tensor's buffer, not copy it";
  EXPECT_EQ(std::memcmp(ex->value(w).raw(), expected.raw(), expected.nbytes()), 0);

  // The checks of the copying set_input hold for a moved tensor too.
  Tensor wrong(DType::Float64, expected.shape());
  auto st = ex->set_input(w, std::move(wrong));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("expects float32 data, got float64"), std::string::npos) << st.message();
}
