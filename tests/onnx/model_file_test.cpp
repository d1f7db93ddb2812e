// import_onnx_file reads large initializers' raw_data straight from the file into their Tensors
// (onnx/model_file.h): every model must import bit for bit as it does when protobuf parses the whole file
// (ImportOptions::in_file_min_bytes = 0), and every file refused then must be refused with the same message.
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "onnx/import.h"
#include "support/model_protos.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kSource(GRIST_SOURCE_DIR);

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class ModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grist_model_file_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

ImportOptions every_tensor_from_the_file() {
  ImportOptions o;
  o.in_file_min_bytes = 1;
  return o;
}

// The graphs' initializers are the same tensors, bit for bit; with `same_shapes`, every value has the same
// declared dtype and shape too.
void expect_same_graph(const Graph& want, const Graph& got, bool same_shapes, const std::string& what) {
  ASSERT_EQ(want.values.size(), got.values.size()) << what;
  ASSERT_EQ(want.nodes.size(), got.nodes.size()) << what;
  ASSERT_EQ(want.initializers, got.initializers) << what;
  for (ValueId id : want.initializers) {
    const Value& a = want.value(id);
    const Value& b = got.value(id);
    ASSERT_EQ(a.name, b.name) << what;
    ASSERT_TRUE(a.initial && b.initial) << what << " " << a.name;
    ASSERT_EQ(a.initial->dtype(), b.initial->dtype()) << what << " " << a.name;
    ASSERT_EQ(a.initial->shape(), b.initial->shape()) << what << " " << a.name;
    ASSERT_EQ(a.initial->nbytes(), b.initial->nbytes()) << what << " " << a.name;
    // An empty tensor has no buffer, and memcmp must not be given a null pointer even for 0 bytes.
    if (a.initial->nbytes() > 0) {
      EXPECT_EQ(std::memcmp(a.initial->raw(), b.initial->raw(), a.initial->nbytes()), 0) << what << " " << a.name;
    }
  }
  if (!same_shapes) return;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const Value& a = want.values[i];
    const Value& b = got.values[i];
    EXPECT_EQ(a.name, b.name) << what;
    EXPECT_EQ(a.dtype, b.dtype) << what << " " << a.name;
    ASSERT_EQ(a.shape.has_value(), b.shape.has_value()) << what << " " << a.name;
    if (!a.shape) continue;
    ASSERT_EQ(a.shape->size(), b.shape->size()) << what << " " << a.name;
    for (size_t d = 0; d < a.shape->size(); ++d) {
      EXPECT_EQ((*a.shape)[d].size, (*b.shape)[d].size) << what << " " << a.name;
      EXPECT_EQ((*a.shape)[d].symbol, (*b.shape)[d].symbol) << what << " " << a.name;
    }
  }
}

// Imports `path` as protobuf parses it and from the file (with raw_data of every size read from the
// file, of 16 bytes or more, and at the default threshold): all refuse it with the same message or give the same
// graph. Returns whether it imported.
bool expect_file_path_matches_protobuf(const fs::path& path, const ImportOptions& options = {}) {
  const std::string what = path.string();
  ImportOptions protobuf = options;
  protobuf.in_file_min_bytes = 0;
  auto want = import_onnx_file(what, protobuf);
  for (uint64_t min_bytes : {uint64_t{1}, uint64_t{16}, options.in_file_min_bytes}) {
    ImportOptions o = options;
    o.in_file_min_bytes = min_bytes;
    const std::string at = fmt::format("{} (raw_data of {}+ bytes from the file)", what, min_bytes);
    auto got = import_onnx_file(what, o);
    if (!want) {
      EXPECT_FALSE(got.is_ok()) << at << ": protobuf's path refuses it: " << want.message();
      if (!got) {
        EXPECT_EQ(got.message(), want.message()) << at;
      }
      continue;
    }
    EXPECT_TRUE(got.is_ok()) << at << ": " << got.message();
    // Shape inference does not read tensors left in the file: with small ones there, fewer shapes are known.
    if (got) expect_same_graph(*want, *got, min_bytes == options.in_file_min_bytes, at);
  }
  return want.is_ok();
}

int64_t raw_data_bytes(const fs::path& path) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_bytes(path))) return 0;
  int64_t n = 0;
  for (const auto& t : m.graph().initializer()) n += static_cast<int64_t>(t.raw_data().size());
  return n;
}

// Serialized field `number` (length-delimited) holding `bytes`.
std::string field(int number, const std::string& bytes) {
  std::string out;
  auto varint = [&](uint64_t v) {
    do {
      out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
      v >>= 7;
    } while (v);
  };
  varint(static_cast<uint64_t>(number) << 3 | 2);
  varint(bytes.size());
  return out + bytes;
}

const std::vector<float>& add_model_weight() {
  static const std::vector<float> values{1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 7.0f};
  return values;
}

// y = Add(x, w) over a 2x3 float input: the model the hand-made initializers below are added to.
onnx::ModelProto add_model() {
  onnx::ModelProto m = grist::testing::one_node_proto("Add", {"x", "w"}, {2, 3}, 17);
  auto* w = grist::testing::add_float_initializer(m, "w", {2, 3});
  const std::vector<float>& values = add_model_weight();
  w->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return m;
}

// An imported graph's `w` holds add_model's values, bit for bit (its −0 included).
void expect_add_model_weight(const Graph& g) {
  const Tensor& w = *g.value(g.find_value("w")).initial;
  ASSERT_EQ(w.numel(), 6);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(w.data<float>()[i]), std::bit_cast<uint32_t>(add_model_weight()[i])) << i;
}

onnx::TensorProto* add_tensor(onnx::ModelProto& m, const std::string& name, onnx::TensorProto::DataType type,
                              std::vector<int64_t> dims) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}

template <class T>
std::string raw(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

TEST_F(ModelFile, EveryCommittedModelImportsAsProtobufParsesIt) {
  int imported = 0;
  int64_t raw_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(kSource / "tests/models")) {
    if (e.path().extension() != ".onnx") continue;
    imported += expect_file_path_matches_protobuf(e.path());
    raw_bytes += raw_data_bytes(e.path());
  }
  EXPECT_GT(imported, 20);
  EXPECT_GT(raw_bytes, 5000) << "the models must hold raw_data, or the file path is not tested";
}

// The real-model set (`ninja -C build e2e_models`; tests/e2e/real_models_test.cpp fails without it) and the zoo
// exports (zoo/zoo_export.py), where present: PyTorch's exports, each weight in raw_data.
TEST_F(ModelFile, ExportedModelsImportAsProtobufParsesThem) {
  int imported = 0;
  for (const fs::path& dir : {kSource / "build/e2e-models", kSource / "zoo"}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.path().extension() != ".onnx") continue;
      imported += expect_file_path_matches_protobuf(e.path());
    }
  }
  if (imported == 0) GTEST_SKIP() << "no exported models (ninja -C build e2e_models)";
  EXPECT_GT(imported, 5);
}

TEST_F(ModelFile, HandMadeTensorsOfEveryKindImportAsProtobufParsesThem) {
  onnx::ModelProto m = add_model();
  add_tensor(m, "f_typed", onnx::TensorProto::FLOAT, {3})->add_float_data(2.5f);
  m.mutable_graph()->mutable_initializer(1)->add_float_data(-1.0f);
  m.mutable_graph()->mutable_initializer(1)->add_float_data(1e30f);
  add_tensor(m, "f16_raw", onnx::TensorProto::FLOAT16, {2})->set_raw_data(raw<uint16_t>({0x3c00, 0x7c00}));
  auto* h = add_tensor(m, "f16_typed", onnx::TensorProto::FLOAT16, {2});
  h->add_int32_data(0xfc00);
  h->add_int32_data(0x7e00);
  add_tensor(m, "bf16_raw", onnx::TensorProto::BFLOAT16, {1})->set_raw_data(raw<uint16_t>({0x3f80}));
  add_tensor(m, "i64_raw", onnx::TensorProto::INT64, {3})->set_raw_data(raw<int64_t>({-1, INT64_MAX, 7}));
  auto* i = add_tensor(m, "i64_typed", onnx::TensorProto::INT64, {2});
  i->add_int64_data(INT64_MIN);
  i->add_int64_data(5);
  add_tensor(m, "u8_raw", onnx::TensorProto::UINT8, {5})->set_raw_data(std::string("\x01\x02\x00\xff\x10", 5));
  add_tensor(m, "bool_raw", onnx::TensorProto::BOOL, {4})->set_raw_data(std::string("\x00\x23\x01\xff", 4));
  add_tensor(m, "f64_raw", onnx::TensorProto::DOUBLE, {1})->set_raw_data(raw<double>({-0.1}));
  add_tensor(m, "empty_raw", onnx::TensorProto::FLOAT, {0, 3})->set_raw_data("");
  add_tensor(m, "empty", onnx::TensorProto::FLOAT, {2, 0});
  add_tensor(m, "scalar_raw", onnx::TensorProto::INT32, {})->set_raw_data(raw<int32_t>({-42}));
  const fs::path path = dir_ / "kinds.onnx";
  write_bytes(path, m.SerializeAsString());
  ASSERT_TRUE(expect_file_path_matches_protobuf(path));

  // The bytes really come from the file: a tensor's values as written, where its raw_data lay.
  auto g = import_onnx_file(path.string(), every_tensor_from_the_file());
  ASSERT_TRUE(g.is_ok()) << g.message();
  expect_add_model_weight(*g);
  const Tensor& b = *g->value(g->find_value("bool_raw")).initial;
  const auto* bytes = reinterpret_cast<const unsigned char*>(b.raw());
  EXPECT_EQ(std::vector<int>(bytes, bytes + 4), (std::vector<int>{0, 1, 1, 1}));
  const Tensor& i64 = *g->value(g->find_value("i64_raw")).initial;
  EXPECT_EQ(i64.to_int_vector(), (std::vector<int64_t>{-1, INT64_MAX, 7}));
}

// Protobuf merges a field given twice (a message field into one, the last raw_data wins): so does the walk.
TEST_F(ModelFile, RepeatedFieldsMergeAsProtobufMergesThem) {
  onnx::ModelProto m = add_model();
  onnx::TensorProto w = m.graph().initializer(0);
  m.mutable_graph()->clear_initializer();
  onnx::ModelProto head = m;
  head.clear_graph();
  onnx::GraphProto nodes = m.graph();
  const std::string second = raw<float>({9, 8, 7, 6, 5, 4});
  onnx::TensorProto shorter;
  shorter.set_raw_data(std::string(4, '\x11'));
  onnx::TensorProto later;
  later.set_raw_data(second);
  auto model = [&](const std::string& tensor) {
    // The graph in two field-7 parts: nodes and inputs first, the initializer in a second one.
    return head.SerializeAsString() + field(7, nodes.SerializeAsString()) + field(7, field(5, tensor));
  };
  int n = 0;
  for (const std::string& tensor : {w.SerializeAsString() + later.SerializeAsString(),     // long, then long
                                    shorter.SerializeAsString() + w.SerializeAsString(),   // short, then long
                                    w.SerializeAsString() + shorter.SerializeAsString()})  // long, then short
  {
    const fs::path path = dir_ / ("merged" + std::to_string(n++) + ".onnx");
    write_bytes(path, model(tensor));
    expect_file_path_matches_protobuf(path);
  }
  auto g = import_onnx_file((dir_ / "merged0.onnx").string(), every_tensor_from_the_file());
  ASSERT_TRUE(g.is_ok()) << g.message();
  const Tensor& t = *g->value(g->find_value("w")).initial;
  EXPECT_EQ(std::vector<float>(t.data<float>(), t.data<float>() + 6), (std::vector<float>{9, 8, 7, 6, 5, 4}));
}

// Protobuf's parser refuses a tag encoded in more than 5 bytes (CodedInputStream::ReadTag truncates it to 32 bits
// and reads on): the walk refuses it too, at every level it walks. Found by tests/fuzz/model_file_fuzzer.cpp.
TEST_F(ModelFile, OverlongTagsAreRefusedAsProtobufRefusesThem) {
  onnx::ModelProto m = add_model();
  onnx::TensorProto w = m.graph().initializer(0);
  m.mutable_graph()->clear_initializer();
  onnx::ModelProto head = m;
  head.clear_graph();
  const std::string nodes = m.graph().SerializeAsString();
  // Field 1000, fixed32, its tag (8005) in 6 bytes, then 4 bytes of value; and the same tag in 2 bytes.
  const std::string overlong = std::string("\xc5\xbe\x80\x80\x80\x00", 6) + std::string(4, '\0');
  const std::string canonical = std::string("\xc5\x3e", 2) + std::string(4, '\0');
  int n = 0;
  for (const std::string& tag : {overlong, canonical}) {
    for (const std::string& bytes :
         {head.SerializeAsString() + tag + field(7, nodes + field(5, w.SerializeAsString())),
          head.SerializeAsString() + field(7, nodes + tag + field(5, w.SerializeAsString())),
          head.SerializeAsString() + field(7, nodes + field(5, w.SerializeAsString() + tag))}) {
      const fs::path path = dir_ / ("tag" + std::to_string(n++) + ".onnx");
      write_bytes(path, bytes);
      EXPECT_EQ(expect_file_path_matches_protobuf(path), tag == canonical) << path;
    }
  }
}

// Tensors the checker or the importer refuses keep their raw_data, so their messages stay protobuf's path's.
TEST_F(ModelFile, RefusedTensorsGiveTheMessagesTheyAlwaysGave) {
  struct Case {
    std::string name;
    std::function<void(onnx::TensorProto&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"short", [](onnx::TensorProto& t) { t.mutable_raw_data()->resize(20); }, "raw data has 20 bytes"},
      {"long", [](onnx::TensorProto& t) { t.mutable_raw_data()->append(8, '\0'); }, "raw data has 32 bytes"},
      // 24 bytes that claim 6 GiB are refused before anything is allocated (libFuzzer's malloc limit found it;
      // its input is tests/fuzz/seeds/onnx/claims_8_gib.onnx).
      {"claims_gigabytes", [](onnx::TensorProto& t) { t.set_dims(0, int64_t{1} << 29); }, "raw data has 24 bytes"},
      {"claims_gigabytes_typed",
       [](onnx::TensorProto& t) {
         t.clear_raw_data();
         t.add_float_data(1);
         t.set_dims(0, int64_t{1} << 29);
       },
       "holds 1 values"},
      {"typed_too", [](onnx::TensorProto& t) { t.add_float_data(1); }, "one and only one value field"},
      {"string", [](onnx::TensorProto& t) { t.set_data_type(onnx::TensorProto::STRING); }, "STRING data"},
      {"unsupported", [](onnx::TensorProto& t) { t.set_data_type(onnx::TensorProto::COMPLEX64); }, ""},
      {"external_too",
       [](onnx::TensorProto& t) {
         t.set_data_location(onnx::TensorProto::EXTERNAL);
         auto* e = t.add_external_data();
         e->set_key("location");
         e->set_value("w.bin");
       },
       "holds data of its own as well"},
  };
  for (const Case& c : cases) {
    onnx::ModelProto m = add_model();
    c.spoil(*m.mutable_graph()->mutable_initializer(0));
    const fs::path path = dir_ / (c.name + ".onnx");
    write_bytes(path, m.SerializeAsString());
    for (bool checker : {true, false}) {
      ImportOptions o;
      o.run_checker = checker;
      expect_file_path_matches_protobuf(path, o);
    }
    auto g = import_onnx_file(path.string(), every_tensor_from_the_file());
    ASSERT_FALSE(g.is_ok()) << c.name;
    EXPECT_NE(g.message().find(c.message), std::string::npos) << c.name << ": " << g.message();
  }
}

// External data (onnx/external_data.h) of the main graph's initializers is left in its file and read into the
// Tensors too; a Constant's external tensor is still read into the proto. Refusals keep their messages.
TEST_F(ModelFile, ExternalDataIsReadFromItsFileAsTheLoaderReadsIt) {
  auto external = [](onnx::TensorProto* t, const std::string& location, uint64_t offset, uint64_t length) {
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", location},
                               {"offset", std::to_string(offset)}, {"length", std::to_string(length)}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  };
  const std::string data = std::string(4, '\x7f') + raw<float>(add_model_weight()) +
                           raw<int64_t>({3, -9}) + raw<float>({0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f});
  write_bytes(dir_ / "weights.bin", data);
  onnx::ModelProto m = add_model();
  external(m.mutable_graph()->mutable_initializer(0), "weights.bin", 4, 24);
  external(add_tensor(m, "ints", onnx::TensorProto::INT64, {2}), "weights.bin", 28, 16);
  // y2 = Add(x, c): c a Constant whose value lies in the same file.
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Constant");
  n->add_output("c");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_dims(3);
  external(a->mutable_t(), "weights.bin", 44, 24);
  auto* add = m.mutable_graph()->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("c");
  add->add_output("y2");
  *m.mutable_graph()->add_output() = m.graph().output(0);
  m.mutable_graph()->mutable_output(1)->set_name("y2");
  const fs::path path = dir_ / "external.onnx";
  write_bytes(path, m.SerializeAsString());
  ASSERT_TRUE(expect_file_path_matches_protobuf(path));
  auto g = import_onnx_file(path.string(), every_tensor_from_the_file());
  ASSERT_TRUE(g.is_ok()) << g.message();
  expect_add_model_weight(*g);
  EXPECT_EQ(g->value(g->find_value("ints")).initial->to_int_vector(), (std::vector<int64_t>{3, -9}));

  // Refused as the loader refuses it, whichever path reads it.
  for (const auto& [name, offset, length] : {std::tuple<std::string, uint64_t, uint64_t>{"past_end", 60, 24},
                                             {"wrong_length", 4, 20}}) {
    onnx::ModelProto bad = add_model();
    external(bad.mutable_graph()->mutable_initializer(0), "weights.bin", offset, length);
    const fs::path p = dir_ / (name + ".onnx");
    write_bytes(p, bad.SerializeAsString());
    EXPECT_FALSE(expect_file_path_matches_protobuf(p)) << name;
  }
}

// A file cut anywhere, inside a weight's raw_data too (which the walk seeks past rather than reads), is refused
// as protobuf's parse of the cut bytes refuses it, or imports as that parse does.
TEST_F(ModelFile, EveryTruncationIsRefusedAsProtobufRefusesIt) {
  onnx::ModelProto m = add_model();
  std::vector<float> big(300);
  for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<float>(k) - 0.5f;
  add_tensor(m, "big", onnx::TensorProto::FLOAT, {300})->set_raw_data(raw(big));
  const std::string bytes = m.SerializeAsString();
  const fs::path path = dir_ / "cut.onnx";
  int refused = 0;
  for (size_t cut = 1; cut < bytes.size(); cut += 5) {
    write_bytes(path, bytes.substr(0, cut));
    refused += !expect_file_path_matches_protobuf(path);
    if (::testing::Test::HasFailure()) FAIL() << "cut at " << cut << " of " << bytes.size();
  }
  EXPECT_GT(refused, 200);
  auto g = import_onnx_file(path.string(), every_tensor_from_the_file());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.message(), path.string() + ": not an ONNX model (the protobuf data is malformed or truncated)");
}

// Bytes changed at random (fixed seeds) anywhere in a file, raw_data included: refused or imported as protobuf's
// parse does, whatever a changed tag, wire type or length makes of the walk.
TEST_F(ModelFile, RandomlyChangedBytesAreReadAsProtobufReadsThem) {
  onnx::ModelProto m = add_model();
  add_tensor(m, "i64", onnx::TensorProto::INT64, {4})->set_raw_data(raw<int64_t>({1, -2, 3, -4}));
  add_tensor(m, "h", onnx::TensorProto::FLOAT16, {3})->set_raw_data(raw<uint16_t>({0x3c00, 0x7c00, 0x0001}));
  const std::string bytes = m.SerializeAsString();
  const fs::path path = dir_ / "changed.onnx";
  std::mt19937 rng(11);
  constexpr int kRounds = 1000;
  int imported = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::string changed = bytes;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) changed[rng() % changed.size()] = static_cast<char>(rng() & 0xff);
    write_bytes(path, changed);
    imported += expect_file_path_matches_protobuf(path);
    if (::testing::Test::HasFailure()) FAIL() << "round " << round;
  }
  EXPECT_GT(imported, 20);
  EXPECT_LT(imported, kRounds);
}

#ifdef GRIST_BINARY
TEST_F(ModelFile, GristRunRefusesATruncatedModelWithExitStatus2) {
  onnx::ModelProto m = add_model();
  add_tensor(m, "big", onnx::TensorProto::FLOAT, {100000})->set_raw_data(std::string(400000, '\x01'));
  const std::string bytes = m.SerializeAsString();
  const fs::path path = dir_ / "truncated.onnx";
  write_bytes(path, bytes.substr(0, bytes.size() - 1000));  // inside the big weight's raw_data
  const fs::path err = dir_ / "stderr.txt";
  const int status = std::system(
      (std::string(GRIST_BINARY) + " run " + path.string() + " > /dev/null 2> " + err.string()).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(read_bytes(err),
            "grist: error: " + path.string() + ": not an ONNX model (the protobuf data is malformed or truncated)\n");
}
#endif
