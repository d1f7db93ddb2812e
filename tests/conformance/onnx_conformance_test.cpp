// Runs the ONNX project's own per-operator conformance tests (Debian's libonnx-testdata) for every test
// whose ops grist supports, comparing with the tolerances of ONNX's backend test runner (rtol 1e-3,
// atol 1e-7). Tests listed in expected_failures_*.txt must fail (each with its reason written there); one
// that starts passing fails the run so the list stays true.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/executor.h"
#include "onnx/import.h"
#include "onnx/tensor_proto.h"
#include "ops/registry.h"
#include "support/op_test_util.h"

namespace fs = std::filesystem;
using namespace grist;

namespace {

const fs::path kNodeDir = fs::path(GRIST_ONNX_TESTDATA) / "node";

std::map<std::string, std::string> load_expected_failures() {
  // One list per op family: tests/conformance/expected_failures_<family>.txt.
  std::map<std::string, std::string> r;
  for (const auto& e : fs::directory_iterator(fs::path(GRIST_SOURCE_DIR) / "tests/conformance")) {
    const std::string fname = e.path().filename().string();
    if (fname.rfind("expected_failures", 0) != 0 || e.path().extension() != ".txt") continue;
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto sp = line.find_first_of(" \t");
      std::string name = line.substr(0, sp);
      std::string reason = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
      r[name] = reason;
    }
  }
  return r;
}

// Runs one conformance test directory; returns "" on success or the reason it failed.
std::string run_case(const fs::path& dir, const Graph& g) {
  auto ex = Executor::create(g);
  if (!ex) return ex.message();
  int sets = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    ++sets;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      auto t = read_tensor_pb((entry.path() / fmt::format("input_{}.pb", i)).string());
      if (!t) return t.message();
      auto st = ex->set_input(g.inputs[i], *t);
      if (!st) return st.message();
    }
    auto st = ex->forward();
    if (!st) return st.message();
    for (size_t o = 0; o < g.outputs.size(); ++o) {
      auto expected = read_tensor_pb((entry.path() / fmt::format("output_{}.pb", o)).string());
      if (!expected) return expected.message();
      auto close = grist::testing::tensors_close(*expected, ex->value(g.outputs[o]), 1e-3, 1e-7);
      if (!close) return fmt::format("{} output {}: {}", entry.path().filename().string(), o, close.message());
    }
  }
  if (sets == 0) return "no test data sets";
  return "";
}

}  // namespace

TEST(OnnxConformance, SupportedOpsMatchReferenceOutputs) {
  ASSERT_TRUE(fs::is_directory(kNodeDir)) << kNodeDir << " missing: install libonnx-testdata";
  const auto expected_failures = load_expected_failures();
  const auto& reg = OpRegistry::global();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kNodeDir))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());

  int supported = 0, passed = 0, expected_failed = 0;
  std::set<std::string> seen_expected;
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    auto g = import_onnx_file((dir / "model.onnx").string());
    if (!g) continue;  // models our importer refuses (e.g. unsupported element types) are not counted
    bool all_ops = true;
    for (const auto& n : g->nodes)
      if (!reg.find(n.op_type, n.domain)) all_ops = false;
    if (!all_ops) continue;
    ++supported;
    std::string why = run_case(dir, *g);
    auto ef = expected_failures.find(name);
    if (ef != expected_failures.end()) {
      seen_expected.insert(name);
      if (why.empty()) {
        ADD_FAILURE() << name << " passes now: remove it from expected_failures.txt";
      } else {
        ++expected_failed;
      }
      continue;
    }
    if (why.empty()) {
      ++passed;
    } else {
      ADD_FAILURE() << name << ": " << why;
    }
  }
  std::printf("ONNX conformance: %d tests use only supported ops; %d pass, %d are expected failures, %d fail\n",
              supported, passed, expected_failed, supported - passed - expected_failed);
}
