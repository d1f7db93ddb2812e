// load_tensors: dispatch on the file name and the names given to the tensors.
#include "data/load.h"

#include <fstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "data/npy.h"
#include "data/npz.h"
#include "data/test_files.h"
#include "onnx/tensor_proto.h"

namespace grist {
namespace {

using testing::fixture;
using testing::ScratchDir;

std::string make_idx_bytes() { return std::string("\x00\x00\x08\x01\x00\x00\x00\x02\x05\x06", 10); }

std::string write_pb(const std::string& path, const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, p);
  std::ofstream(path, std::ios::binary) << p.SerializeAsString();
  return path;
}

TEST(Load, NpyIsNamedAfterTheStem) {
  ScratchDir dir;
  const std::string path = dir.path("weights.v2.npy");
  ASSERT_TRUE(write_npy(path, Tensor::from<float>(Shape{2}, {1, 2})));
  auto r = load_tensors(path);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].first, "weights.v2");
  EXPECT_EQ((*r)[0].second.shape(), (Shape{2}));
}

TEST(Load, NpzGivesEveryArray) {
  auto r = load_tensors(fixture("savez_compressed.npz"));
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[2].first, "zeros");
}

TEST(Load, PbUsesItsNameOrTheStem) {
  ScratchDir dir;
  const Tensor t = Tensor::from<int64_t>(Shape{3}, {1, 2, 3});
  auto named = load_tensors(write_pb(dir.path("input_0.pb"), t, "x"));
  ASSERT_TRUE(named) << named.message();
  EXPECT_EQ((*named)[0].first, "x");
  EXPECT_EQ((*named)[0].second.to_int_vector(), (std::vector<int64_t>{1, 2, 3}));
  auto unnamed = load_tensors(write_pb(dir.path("input_1.pb"), t, ""));
  ASSERT_TRUE(unnamed) << unnamed.message();
  EXPECT_EQ((*unnamed)[0].first, "input_1");
}

TEST(Load, RecognisesIdxNames) {
  ScratchDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"train-labels-idx1-ubyte", "train-labels-idx1-ubyte"},
      {"t10k-labels.idx1-ubyte", "t10k-labels.idx1-ubyte"},
      {"digits.idx", "digits"},
      {"DIGITS.IDX", "DIGITS"},
  };
  for (const auto& [file, name] : cases) {
    auto r = load_tensors(dir.write(file, make_idx_bytes()));
    ASSERT_TRUE(r) << file << ": " << r.message();
    EXPECT_EQ((*r)[0].first, name);
    EXPECT_EQ((*r)[0].second.to_int_vector(), (std::vector<int64_t>{5, 6}));
  }
}

TEST(Load, UpperCaseExtensionsWork) {
  ScratchDir dir;
  const std::string path = dir.path("A.NPY");
  ASSERT_TRUE(write_npy(path, Tensor::scalar<double>(2.5)));
  auto r = load_tensors(path);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ((*r)[0].first, "A");
}

TEST(Load, UnknownExtensionNamesTheFile) {
  auto r = load_tensors("/tmp/inputs.csv");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.message().rfind("/tmp/inputs.csv: unknown tensor file type", 0), 0u) << r.message();
  auto no_ext = load_tensors("/tmp/ubyte");
  ASSERT_FALSE(no_ext);
  EXPECT_NE(no_ext.message().find("unknown tensor file type"), std::string::npos);
}

TEST(Load, ReadErrorsKeepThePath) {
  auto r = load_tensors("/nonexistent/a.npz");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.message().rfind("/nonexistent/a.npz: ", 0), 0u) << r.message();
}

TEST(Load, FashionMnistTestLabels) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing: install Debian's dataset-fashion-mnist (make deps)";
  auto r = load_tensors(path);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ((*r)[0].first, "t10k-labels-idx1-ubyte");
  EXPECT_EQ((*r)[0].second.shape(), (Shape{10000}));
}

}  // namespace
}  // namespace grist
