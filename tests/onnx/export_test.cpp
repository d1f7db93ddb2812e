// The exporter writes grist's Graph back as ONNX that the checker accepts: every model in tests/models and every
// exported zoo model survives import → export → import unchanged (nodes, attributes, weights, declared types)
// and computes bit for bit the same outputs; files are never replaced; what ONNX cannot say is refused.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "data/npz.h"
#include "engine/executor.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "support/graph_builder.h"
#include "util/rng.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(GRIST_SOURCE_DIR);

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what << ": different bytes";
}

void expect_same_value_decl(const Value& a, const Value& b, const std::string& where) {
  EXPECT_EQ(a.name, b.name) << where;
  EXPECT_EQ(a.dtype, b.dtype) << where << " " << a.name;
  ASSERT_EQ(a.shape.has_value(), b.shape.has_value()) << where << " " << a.name;
  if (!a.shape) return;
  ASSERT_EQ(a.shape->size(), b.shape->size()) << where << " " << a.name;
  for (size_t i = 0; i < a.shape->size(); ++i) {
    EXPECT_EQ((*a.shape)[i].size, (*b.shape)[i].size) << where << " " << a.name << " dim " << i;
    EXPECT_EQ((*a.shape)[i].symbol, (*b.shape)[i].symbol) << where << " " << a.name << " dim " << i;
  }
}

void expect_same_attribute(const Attribute& a, const Attribute& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  EXPECT_EQ(a.i, b.i) << where;
  EXPECT_EQ(a.f, b.f) << where;
  EXPECT_EQ(a.s, b.s) << where;
  EXPECT_EQ(a.ints, b.ints) << where;
  EXPECT_EQ(a.floats, b.floats) << where;
  EXPECT_EQ(a.strings, b.strings) << where;
  ASSERT_EQ(a.t != nullptr, b.t != nullptr) << where;
  if (a.t) expect_same_tensor(*a.t, *b.t, where);
}

// Structural equality: what the importer read from the original is what it reads from the export.
void expect_same_graph(const Graph& a, const Graph& b, const std::string& model) {
  EXPECT_EQ(a.opsets, b.opsets) << model;
  ASSERT_EQ(a.inputs.size(), b.inputs.size()) << model;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    expect_same_value_decl(a.value(a.inputs[i]), b.value(b.inputs[i]), model);
  ASSERT_EQ(a.outputs.size(), b.outputs.size()) << model;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    expect_same_value_decl(a.value(a.outputs[i]), b.value(b.outputs[i]), model);
  ASSERT_EQ(a.initializers.size(), b.initializers.size()) << model;
  for (size_t i = 0; i < a.initializers.size(); ++i) {
    const Value& va = a.value(a.initializers[i]);
    const Value& vb = b.value(b.initializers[i]);
    EXPECT_EQ(va.name, vb.name) << model;
    expect_same_tensor(*va.initial, *vb.initial, model + " initializer " + va.name);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size()) << model;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& na = a.nodes[i];
    const Node& nb = b.nodes[i];
    const std::string where = model + " node " + na.name;
    EXPECT_EQ(na.name, nb.name) << where;
    EXPECT_EQ(na.op_type, nb.op_type) << where;
    EXPECT_EQ(na.domain, nb.domain) << where;
    EXPECT_EQ(na.opset, nb.opset) << where;
    ASSERT_EQ(na.inputs.size(), nb.inputs.size()) << where;
    for (size_t k = 0; k < na.inputs.size(); ++k) {
      ASSERT_EQ(na.inputs[k] == kNoValue, nb.inputs[k] == kNoValue) << where;
      if (na.inputs[k] != kNoValue) {
        EXPECT_EQ(a.value(na.inputs[k]).name, b.value(nb.inputs[k]).name) << where;
      }
    }
    ASSERT_EQ(na.outputs.size(), nb.outputs.size()) << where;
    for (size_t k = 0; k < na.outputs.size(); ++k) {
      ASSERT_EQ(na.outputs[k] == kNoValue, nb.outputs[k] == kNoValue) << where;
      if (na.outputs[k] != kNoValue) {
        EXPECT_EQ(a.value(na.outputs[k]).name, b.value(nb.outputs[k]).name) << where;
      }
    }
    ASSERT_EQ(na.attributes.size(), nb.attributes.size()) << where;
    for (size_t k = 0; k < na.attributes.size(); ++k) {
      EXPECT_EQ(na.attributes[k].first, nb.attributes[k].first) << where;
      expect_same_attribute(na.attributes[k].second, nb.attributes[k].second, where + " " + na.attributes[k].first);
    }
  }
}

// Inputs for one forward pass: the example data next to the model when there is some, else seeded draws
// (floats in [0, 1), integers 0: a valid index or label for every model here).
std::map<std::string, Tensor> example_inputs(const Graph& g, const fs::path& model) {
  std::map<std::string, Tensor> in;
  for (const fs::path& ref : {model.parent_path() / "reference.npz",
                              fs::path(model).replace_extension(".expected.npz")}) {
    if (!fs::exists(ref)) continue;
    auto arrays = read_npz(ref.string());
    if (!arrays) continue;
    for (auto& [key, t] : *arrays)
      if (key.rfind("input:", 0) == 0) in[key.substr(6)] = t;
  }
  Rng rng(7);
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (in.count(v.name) || !v.shape) continue;
    std::vector<int64_t> dims;
    for (const Dim& d : *v.shape) dims.push_back(d.known() ? d.size : 2);
    Tensor t(v.dtype, Shape(dims));
    t.fill_zero();
    dispatch_float(v.dtype, [&](auto tag) {
      for (auto& x : t.span<decltype(tag)>()) x = static_cast<decltype(tag)>(rng.uniform(0, 1));
    });
    in[v.name] = std::move(t);
  }
  return in;
}

// Runs both graphs on the same data; false when the original cannot run here (unsupported ops).
bool expect_same_outputs(const Graph& a, const Graph& b, const fs::path& model) {
  ExecutorOptions o;
  o.dropout_training = false;
  o.seed = 3;
  auto ea = Executor::create(a, o);
  if (!ea) return false;
  auto eb = Executor::create(b, o);
  EXPECT_TRUE(eb.is_ok()) << model << ": " << eb.message();
  if (!eb) return false;
  for (const auto& [name, t] : example_inputs(a, model)) {
    if (!ea->set_input(name, t)) return false;
    EXPECT_TRUE(eb->set_input(name, t).is_ok()) << model << " " << name;
  }
  if (!ea->forward()) return false;
  auto st = eb->forward();
  EXPECT_TRUE(st.is_ok()) << model << ": " << st.message();
  for (size_t i = 0; i < a.outputs.size(); ++i)
    expect_same_tensor(ea->value(a.outputs[i]), eb->value(b.outputs[i]), model.string() + " output");
  return true;
}

// Imports, exports, re-imports; checks the two imports agree and that a second export gives the same bytes.
void round_trip(const fs::path& model, int& checked, int& ran) {
  auto g = import_onnx_file(model.string());
  if (!g) return;  // files the importer refuses on purpose (tests/models/huge_initializer.onnx)
  auto bytes = export_onnx_bytes(*g);
  ASSERT_TRUE(bytes.is_ok()) << model << ": " << bytes.message();
  auto back = import_onnx_bytes(*bytes, model.string() + " (exported)");
  ASSERT_TRUE(back.is_ok()) << model << ": " << back.message();
  expect_same_graph(*g, *back, model.string());
  auto again = export_onnx_bytes(*back);
  ASSERT_TRUE(again.is_ok()) << model << ": " << again.message();
  EXPECT_EQ(*bytes, *again) << model << ": a second export differs";
  ++checked;
  if (expect_same_outputs(*g, *back, model)) ++ran;
}

}  // namespace

TEST(OnnxExport, EveryTestModelSurvivesImportExportImport) {
  int checked = 0, ran = 0;
  for (const auto& e : fs::recursive_directory_iterator(kSource / "tests/models"))
    if (e.path().extension() == ".onnx") round_trip(e.path(), checked, ran);
  for (const auto& e : fs::directory_iterator(kSource / "examples"))
    if (e.path().extension() == ".onnx") round_trip(e.path(), checked, ran);
  std::printf("export round trip: %d test models, %d of them run\n", checked, ran);
  EXPECT_GE(checked, 8);
  EXPECT_GE(ran, 7);
}

TEST(OnnxExport, EveryExportedZooModelSurvivesImportExportImport) {
  int checked = 0, ran = 0, missing = 0;
  for (const auto& e : fs::directory_iterator(kSource / "zoo")) {
    if (!fs::exists(e.path() / "manifest.toml")) continue;
    if (!fs::exists(e.path() / "model.onnx")) {
      ++missing;
      continue;
    }
    round_trip(e.path() / "model.onnx", checked, ran);
  }
  std::printf("export round trip: %d zoo models (%d run), %d not exported\n", checked, ran, missing);
  if (checked == 0) GTEST_SKIP() << "no zoo model exported: /usr/bin/python3 zoo/zoo_export.py";
  EXPECT_EQ(ran, checked);
}

TEST(OnnxExport, NeverReplacesAnExistingFile) {
  auto g = import_onnx_file((kSource / "tests/models/logreg_toy.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.message();
  const fs::path dir = fs::temp_directory_path() / ("grist-export-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "out.onnx";
  ASSERT_TRUE(export_onnx_file(*g, path.string()).is_ok());
  const auto size = fs::file_size(path);
  { std::ofstream(path, std::ios::app) << "x"; }
  auto st = export_onnx_file(*g, path.string());
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("exists"), std::string::npos) << st.message();
  EXPECT_EQ(fs::file_size(path), size + 1);  // untouched
  fs::remove_all(dir);
}

TEST(OnnxExport, RefusesWhatOnnxCannotSayWithTheNodeNamed) {
  grist::testing::GraphBuilder b;
  b.input("x", DType::Float32, {2});
  b.node("Log", {"x"}, {"y"});
  b.output("y");
  Graph g = b.build();
  g.value(g.find_value("y")).dtype = DType::Float32;
  Attribute body;
  body.type = Attribute::Type::Graph;
  g.nodes[0].attributes.emplace_back("body", body);
  auto r = export_onnx_bytes(g);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("Log_0"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("subgraph"), std::string::npos) << r.message();

  g.nodes[0].attributes.clear();
  g.value(g.inputs[0]).dtype = DType::Undefined;
  auto untyped = export_onnx_bytes(g);
  ASSERT_FALSE(untyped.is_ok());
  EXPECT_NE(untyped.message().find("'x'"), std::string::npos) << untyped.message();
}

TEST(OnnxExport, InfersTheTypeOfAnOutputARewriteLeftUntyped) {
  grist::testing::GraphBuilder b;
  b.input("x", DType::Float32, {-1, 3});
  Attribute axis;
  axis.type = Attribute::Type::Int;
  axis.i = 1;
  b.node("LogSoftmax", {"x"}, {"y"}, {{"axis", axis}});
  b.output("y");
  Graph g = b.build();
  ASSERT_EQ(g.value(g.find_value("y")).dtype, DType::Undefined);
  auto bytes = export_onnx_bytes(g);
  ASSERT_TRUE(bytes.is_ok()) << bytes.message();
  auto back = import_onnx_bytes(*bytes, "inferred");
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back->value(back->outputs[0]).dtype, DType::Float32);
}

TEST(OnnxExport, TheCheckerRejectsABrokenGraph) {
  grist::testing::GraphBuilder b;
  b.input("x", DType::Float32, {2});
  b.node("NoSuchOp", {"x"}, {"y"});
  b.output("y");
  Graph g = b.build();
  g.value(g.find_value("y")).dtype = DType::Float32;
  g.value(g.find_value("y")).shape = std::vector<Dim>{Dim{2, {}}};
  auto r = export_onnx_bytes(g);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("checker"), std::string::npos) << r.message();
}
