// Models of opsets 18 to 21 (what PyTorch 2's exporters write), which Debian's libonnx 1.12 does not know: each
// imports, and grist's outputs match ONNX Runtime's (tests/e2e/export_newer_opsets.py writes them into the build
// folder, tests/oracle/ort_run.js runs them; the `e2e_models` target makes both).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/npy.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "support/op_test_util.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = GRIST_NEWER_OPSETS;

struct Case {
  std::string name, model;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, .npy file
  std::vector<std::string> outputs;
};

// The cases the generator listed; none when it has not run (the test then fails on the missing ort.json).
std::vector<Case> cases() {
  std::ifstream f(kDir / "cases.json");
  if (!f) return {};
  std::vector<Case> out;
  for (const auto& j : nlohmann::json::parse(f)) {
    Case c{j.at("case"), j.at("model"), {}, j.at("outputs").get<std::vector<std::string>>()};
    for (const auto& [k, v] : j.at("inputs").items()) c.inputs.emplace_back(k, v.get<std::string>());
    out.push_back(std::move(c));
  }
  return out;
}

// One test over the whole list: the cases come from a file the build writes after the tests are discovered.
void expect_matches_onnx_runtime(const Case& c) {
  auto g = import_onnx_file((kDir / c.model).string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  ExecutorOptions opts;
  opts.dropout_training = false;
  auto ex = Executor::create(*g, opts);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  for (const auto& [name, file] : c.inputs) {
    auto t = read_npy((kDir / file).string());
    ASSERT_TRUE(t.is_ok()) << t.message();
    ASSERT_TRUE(ex->set_input(name, *t).is_ok()) << name;
  }
  Status st = ex->forward();
  ASSERT_TRUE(st.is_ok()) << st.message();
  for (const std::string& o : c.outputs) {
    auto ort = read_npy((kDir / (c.name + ".ort." + o + ".npy")).string());
    ASSERT_TRUE(ort.is_ok()) << ort.message();
    const ValueId id = g->find_value(o);
    ASSERT_NE(id, kNoValue) << o;
    EXPECT_TRUE(grist::testing::tensors_close(*ort, ex->value(id), 1e-5, 1e-6)) << "output " << o;
  }
}

}  // namespace

// Every listed model, after ONNX Runtime ran them all: an empty or partial list cannot read as a pass.
TEST(NewerOpsets, EveryModelImportsAndMatchesOnnxRuntime) {
  std::ifstream f(kDir / "ort.json");
  ASSERT_TRUE(f) << kDir << " has no ort.json: build the e2e_models target (make test does)";
  const auto ran = nlohmann::json::parse(f).at("cases");
  const auto listed = cases();
  EXPECT_GE(listed.size(), 19u);
  EXPECT_EQ(ran.size(), listed.size());
  for (const Case& c : listed) {
    SCOPED_TRACE(c.name);
    expect_matches_onnx_runtime(c);
  }
  std::printf("[ e2e ] %zu models of opsets 18-21 compared with ONNX Runtime\n", listed.size());
}
