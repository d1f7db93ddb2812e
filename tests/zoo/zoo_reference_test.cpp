// Every zoo model, run by grist on its fixed example data, gives what PyTorch computed at export time
// (zoo/<id>/reference.npz, committed), so a zoo model and its engine run cannot silently diverge. Every
// committed reference is checked: a subject whose model.onnx has not been exported fails, naming the
// command that exports it (`make test` runs it first).
#include <filesystem>

#include <gtest/gtest.h>

#include "data/npz.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "support/op_test_util.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

// The committed references (zoo/*/reference.npz), counted so a lost one shows.
constexpr int kReferences = 64;

}  // namespace

TEST(ZooReference, EveryExportedModelMatchesPyTorchOnItsExampleData) {
  const fs::path zoo = fs::path(GRIST_SOURCE_DIR) / "zoo";
  int references = 0, checked = 0, compared = 0;
  std::vector<std::string> missing;
  for (const auto& e : fs::directory_iterator(zoo)) {
    const fs::path ref = e.path() / "reference.npz";
    if (!fs::exists(ref)) continue;
    ++references;
    const std::string id = e.path().filename().string();
    SCOPED_TRACE("zoo subject " + id);
    const fs::path model = e.path() / "model.onnx";
    if (!fs::exists(model)) {
      missing.push_back(id);
      continue;
    }
    auto g = import_onnx_file(model.string());
    ASSERT_TRUE(g.is_ok()) << g.message();
    auto arrays = read_npz(ref.string());
    ASSERT_TRUE(arrays.is_ok()) << arrays.message();
    ExecutorOptions opts;
    opts.dropout_training = false;  // the reference ran with dropout off
    auto ex = Executor::create(*g, opts);
    ASSERT_TRUE(ex.is_ok()) << ex.message();
    int inputs = 0, outputs = 0;
    for (const auto& [key, t] : *arrays)
      if (key.rfind("input:", 0) == 0) {
        ASSERT_TRUE(ex->set_input(key.substr(6), t).is_ok()) << key;
        ++inputs;
      }
    EXPECT_EQ(inputs, static_cast<int>(g->inputs.size())) << "the reference must feed every model input";
    auto st = ex->forward();
    ASSERT_TRUE(st.is_ok()) << st.message();
    for (const auto& [key, t] : *arrays) {
      if (key.rfind("output:", 0) != 0) continue;
      ValueId out = g->find_value(key.substr(7));
      ASSERT_NE(out, kNoValue) << key;
      // Sums of many float32 terms in another order: a little more room than single ops get.
      EXPECT_TRUE(grist::testing::tensors_close(t, ex->value(out), 1e-4, 1e-5)) << key;
      ++outputs;
    }
    EXPECT_GT(outputs, 0) << "a reference without outputs checks nothing";
    compared += outputs;
    ++checked;
  }
  std::string list;
  for (const auto& id : missing) list += (list.empty() ? "" : ",") + id;
  EXPECT_TRUE(missing.empty()) << missing.size() << " subjects not exported (" << list
                               << "): run /usr/bin/python3 zoo/zoo_export.py (make test does)";
  EXPECT_EQ(references, kReferences) << "zoo/*/reference.npz files: one was added or lost; update kReferences";
  EXPECT_EQ(checked, references);
  std::printf("zoo reference: %d of %d committed references checked, %d outputs match PyTorch\n", checked, references,
              compared);
}
