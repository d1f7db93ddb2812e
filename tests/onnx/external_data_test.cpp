// ONNX external data: weights read from a file beside the model, and every location that would read from
// elsewhere (absolute, "..", a symlink out of the folder), past the file's end or from no folder refused.
#include "onnx/external_data.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>

#include "data/test_files.h"
#include "onnx/import.h"
#include "support/model_protos.h"

namespace grist {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

// y = x + W with W (3 floats) stored in `location` at `offset`; `length` < 0 leaves the key out.
onnx::ModelProto add_model(const std::string& location, int64_t offset = 0, int64_t length = 12) {
  onnx::ModelProto m = testing::one_node_proto("Add", {"x", "W"}, {3}, 13);
  auto* w = testing::add_float_initializer(m, "W", {3});
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const std::string& k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", location);
  entry("offset", std::to_string(offset));
  if (length >= 0) entry("length", std::to_string(length));
  return m;
}

// 4 bytes of padding, then 1.5, -2, 4 as little-endian float32 (the byte order of ONNX raw data).
std::string weights() {
  const float v[3] = {1.5f, -2.0f, 4.0f};
  return std::string(4, '\0') + std::string(reinterpret_cast<const char*>(v), sizeof v);
}

std::string save(const ScratchDir& dir, const std::string& name, const onnx::ModelProto& m) {
  return dir.write(name, m.SerializeAsString());
}

std::vector<double> initial_w(const Graph& g) {
  const Value& w = g.value(g.find_value("W"));
  EXPECT_TRUE(w.initial);
  std::vector<double> v;
  for (int64_t i = 0; w.initial && i < w.initial->numel(); ++i) v.push_back(w.initial->get_as_double(i));
  return v;
}

TEST(ExternalData, ReadsTheWeightsBesideTheModelAtTheirOffset) {
  ScratchDir dir;
  dir.write("w.bin", weights());
  const std::string model = save(dir, "m.onnx", add_model("w.bin", 4));
  auto g = import_onnx_file(model);
  ASSERT_TRUE(g) << g.message();
  EXPECT_EQ(initial_w(*g), (std::vector<double>{1.5, -2.0, 4.0}));
}

TEST(ExternalData, WithoutALengthReadsTheTensorsSizeAndFollowsSymlinksInside) {
  ScratchDir dir;
  fs::create_directories(dir.path("sub"));
  dir.write("sub/w.bin", weights());
  fs::create_symlink("sub/w.bin", dir.path("link.bin"));
  auto g = import_onnx_file(save(dir, "m.onnx", add_model("link.bin", 4, -1)));
  ASSERT_TRUE(g) << g.message();
  EXPECT_EQ(initial_w(*g), (std::vector<double>{1.5, -2.0, 4.0}));
  g = import_onnx_file(save(dir, "m2.onnx", add_model("./sub/w.bin", 4)));
  ASSERT_TRUE(g) << g.message();
}

void expect_refused(const std::string& model, const std::string& message) {
  auto g = import_onnx_file(model);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.message().rfind(model + ": tensor 'W' external data '", 0), 0u) << g.message();
  EXPECT_NE(g.message().find(message), std::string::npos) << g.message();
}

TEST(ExternalData, RefusesLocationsOutsideTheModelsFolder) {
  ScratchDir dir;
  fs::create_directories(dir.path("models"));
  const std::string outside = dir.write("w.bin", weights());
  expect_refused(save(dir, "models/abs.onnx", add_model(outside, 4)), "an absolute path");
  expect_refused(save(dir, "models/up.onnx", add_model("../w.bin", 4)), "'..' leads out of the model's folder");
  expect_refused(save(dir, "models/up2.onnx", add_model("x/../../w.bin", 4)), "'..' leads out");
  fs::create_symlink(outside, dir.path("models/link.bin"));
  expect_refused(save(dir, "models/link.onnx", add_model("link.bin", 4)),
                 "outside the model's folder (through a symbolic link)");
  fs::create_symlink("..", dir.path("models/parent"));
  expect_refused(save(dir, "models/dirlink.onnx", add_model("parent/w.bin", 4)), "outside the model's folder");
}

TEST(ExternalData, RefusesMissingShortAndMismatchedData) {
  ScratchDir dir;
  dir.write("w.bin", weights());
  expect_refused(save(dir, "missing.onnx", add_model("gone.bin")),
                 "gone.bin): cannot open file: No such file or directory");
  expect_refused(save(dir, "past.onnx", add_model("w.bin", 8)),
                 "bytes 8 to 20 lie beyond the end of the file (16 bytes)");
  expect_refused(save(dir, "far.onnx", add_model("w.bin", int64_t{1} << 62)), "lie beyond the end of the file");
  expect_refused(save(dir, "len.onnx", add_model("w.bin", 0, 8)),
                 "length 8 bytes, but its shape [3] of float32 needs 12");
  expect_refused(save(dir, "dir.onnx", add_model(".")), "is a folder");
  auto m = add_model("w.bin");
  m.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("4x");
  expect_refused(save(dir, "offset.onnx", m), "offset '4x' is not a byte count");
  m = add_model("w.bin");
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(12, '\0'));
  expect_refused(save(dir, "both.onnx", m), "holds data of its own as well");
}

TEST(ExternalData, AModelFromMemoryHasNoFolderToReadFrom) {
  auto g = import_onnx_bytes(add_model("w.bin").SerializeAsString(), "mem.onnx");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.message(),
            "mem.onnx: tensor 'W' external data 'w.bin': a model read from memory has no folder to read "
            "external data from");
}

TEST(ExternalData, ConstantAttributesAndSubgraphTensorsAreReadToo) {
  ScratchDir dir;
  dir.write("w.bin", weights());
  onnx::ModelProto m = add_model("w.bin", 4);
  // Replace the initializer by a Constant node holding the same external tensor.
  onnx::TensorProto w = m.graph().initializer(0);
  m.mutable_graph()->clear_initializer();
  auto* c = m.mutable_graph()->add_node();
  c->set_op_type("Constant");
  c->add_output("W");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = w;
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);  // Constant first
  // And a subgraph (an If branch, as a loader sees it) holding it as an initializer.
  auto* branch = m.mutable_graph()->add_node()->add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  *branch->mutable_g()->add_initializer() = w;
  ASSERT_TRUE(load_external_data(m, fs::path(dir.path("")), "m.onnx"));
  for (const onnx::TensorProto* t :
       {&m.graph().node(0).attribute(0).t(), &m.graph().node(2).attribute(0).g().initializer(0)}) {
    EXPECT_EQ(t->data_location(), onnx::TensorProto::DEFAULT);
    EXPECT_EQ(t->raw_data(), weights().substr(4));
    EXPECT_EQ(t->external_data_size(), 0);
  }
}

}  // namespace
}  // namespace grist
