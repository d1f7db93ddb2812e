// Every exported zoo model, run by grist on its fixed example data, gives what PyTorch computed at export
// time (zoo/<id>/reference.npz), so a zoo model and its engine run cannot silently diverge. Subjects whose
// model.onnx has not been exported (/usr/bin/python3 zoo/zoo_export.py) are skipped and counted.
#include <filesystem>

#include <gtest/gtest.h>

#include "data/npz.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "support/op_test_util.h"

using namespace grist;
namespace fs = std::filesystem;

TEST(ZooReference, ExportedModelsMatchPyTorchOnTheirExampleData) {
  const fs::path zoo = fs::path(GRIST_SOURCE_DIR) / "zoo";
  int checked = 0, missing = 0;
  for (const auto& e : fs::directory_iterator(zoo)) {
    const fs::path ref = e.path() / "reference.npz";
    if (!fs::exists(ref)) continue;
    const fs::path model = e.path() / "model.onnx";
    if (!fs::exists(model)) {
      ++missing;
      continue;
    }
    const std::string id = e.path().filename().string();
    auto g = import_onnx_file(model.string());
    ASSERT_TRUE(g.is_ok()) << id << ": " << g.message();
    auto arrays = read_npz(ref.string());
    ASSERT_TRUE(arrays.is_ok()) << id << ": " << arrays.message();
    ExecutorOptions opts;
    opts.dropout_training = false;  // the reference ran with dropout off
    auto ex = Executor::create(*g, opts);
    ASSERT_TRUE(ex.is_ok()) << id << ": " << ex.message();
    for (const auto& [key, t] : *arrays)
      if (key.rfind("input:", 0) == 0) {
        ASSERT_TRUE(ex->set_input(key.substr(6), t).is_ok()) << id << " " << key;
      }
    auto st = ex->forward();
    ASSERT_TRUE(st.is_ok()) << id << ": " << st.message();
    for (const auto& [key, t] : *arrays) {
      if (key.rfind("output:", 0) != 0) continue;
      ValueId out = g->find_value(key.substr(7));
      ASSERT_NE(out, kNoValue) << id << " " << key;
      // Sums of many float32 terms in another order: a little more room than single ops get.
      EXPECT_TRUE(grist::testing::tensors_close(t, ex->value(out), 1e-4, 1e-5)) << "zoo " << id << " " << key;
    }
    ++checked;
  }
  std::printf("zoo reference: %d exported subjects match PyTorch; %d not exported (skipped)\n", checked, missing);
  if (checked == 0) GTEST_SKIP() << "no zoo model exported: /usr/bin/python3 zoo/zoo_export.py";
}
