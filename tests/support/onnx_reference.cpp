#include "support/onnx_reference.h"

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "engine/executor.h"
#include "onnx/import.h"
#include "onnx/tensor_proto.h"
#include "ops/registry.h"
#include "support/op_test_util.h"

namespace fs = std::filesystem;

namespace grist::testing {

fs::path onnx_node_test_dir() { return fs::path(GRIST_ONNX_TESTDATA) / "node"; }

ReferenceCase run_reference_case(const fs::path& dir) {
  ReferenceCase c;
  auto g = import_onnx_file((dir / "model.onnx").string());
  if (!g) {
    c.message = g.message();
    return c;
  }
  std::set<std::string> missing;
  for (const auto& n : g->nodes)
    if (!OpRegistry::global().find(n.op_type, n.domain)) missing.insert(n.op_type);
  if (!missing.empty()) {
    c.outcome = ReferenceCase::Outcome::Unsupported;
    c.message = fmt::format("{}", fmt::join(missing, ", "));
    return c;
  }
  c.outcome = ReferenceCase::Outcome::Failed;
  auto ex = Executor::create(*g);
  if (!ex) {
    c.message = ex.message();
    return c;
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    c.message = "no test data sets";
    return c;
  }
  for (const fs::path& set : sets) {
    for (size_t i = 0; i < g->inputs.size(); ++i) {
      auto t = read_tensor_pb((set / fmt::format("input_{}.pb", i)).string());
      if (!t) {
        c.message = t.message();
        return c;
      }
      if (auto st = ex->set_input(g->inputs[i], *t); !st) {
        c.message = st.message();
        return c;
      }
    }
    if (auto st = ex->forward(); !st) {
      c.message = st.message();
      return c;
    }
    ++c.data_sets;
    for (size_t o = 0; o < g->outputs.size(); ++o) {
      auto expected = read_tensor_pb((set / fmt::format("output_{}.pb", o)).string());
      if (!expected) {
        c.message = expected.message();
        return c;
      }
      auto close = tensors_close(*expected, ex->value(g->outputs[o]), 1e-3, 1e-7);
      if (!close) {
        c.message = fmt::format("{} output {}: {}", set.filename().string(), o, close.message());
        return c;
      }
      ++c.outputs;
    }
  }
  c.outcome = ReferenceCase::Outcome::Passed;
  return c;
}

}  // namespace grist::testing
