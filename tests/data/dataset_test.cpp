// Batches for the hunt (data/dataset.h): rows served in order or in a seeded shuffle that visits every row
// once an epoch, data and labels kept together, one-hot and scale applied, types converted to the model's,
// fixed and random inputs, redraws, and every source that does not fit its model input refused.
#include "data/dataset.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "config/manifest.h"
#include "data/idx.h"
#include "data/npy.h"
#include "data/npz.h"
#include "data/test_files.h"
#include "support/graph_builder.h"

namespace grist {
namespace {

using testing::GraphBuilder;
using testing::ScratchDir;

// A model with a data input x [batch, 2] and a label input y [batch] (int64): enough for the batches.
Graph xy_model() {
  return GraphBuilder()
      .input("x", DType::Float32, {-1, 2})
      .input("y", DType::Int64, {-1})
      .node("Identity", {"x"}, {"out"})
      .output("out")
      .build();
}

// Five rows: x row i = [10 i, 10 i + 1], y row i = i, so a batch shows which rows it holds and whether
// data and labels still pair up.
Manifest five_rows(bool shuffle) {
  Manifest m;
  m.path = "test.toml";
  m.shuffle = shuffle;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::Values;
  x.values = Tensor::from<double>(Shape{5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41});
  InputSpec y;
  y.name = "y";
  y.role = InputRole::Label;
  y.source = InputSource::Values;
  y.values = Tensor::from<double>(Shape{5}, {0, 1, 2, 3, 4});
  m.inputs["x"] = x;
  m.inputs["y"] = y;
  return m;
}

// The rows a batch holds (from its labels), checking each data row is its label's.
std::vector<int64_t> rows_of(const Batch& b) {
  const Tensor& x = b.at("x");
  const Tensor& y = b.at("y");
  EXPECT_EQ(x.dtype(), DType::Float32);  // the model input's type, not the source's float64
  EXPECT_EQ(y.dtype(), DType::Int64);
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < y.numel(); ++r) {
    const int64_t label = y.get_as_int(r);
    EXPECT_EQ(x.get_as_double(2 * r), 10.0 * static_cast<double>(label)) << "data and label apart at row " << r;
    EXPECT_EQ(x.get_as_double(2 * r + 1), 10.0 * static_cast<double>(label) + 1);
    rows.push_back(label);
  }
  return rows;
}

TEST(Dataset, InOrderBatchesWrapAroundTheEpoch) {
  Graph g = xy_model();
  auto d = Dataset::create(five_rows(false), g, 2, 1);
  ASSERT_TRUE(d) << d.message();
  EXPECT_EQ(d->batch_size(), 2);
  EXPECT_EQ(d->pool_size(), 5);
  EXPECT_EQ(d->input_names(), (std::vector<std::string>{"x", "y"}));
  Batch b;
  const std::vector<std::vector<int64_t>> expected = {{0, 1}, {2, 3}, {4, 0}, {1, 2}, {3, 4}, {0, 1}};
  for (const auto& want : expected) {
    ASSERT_TRUE(d->next_batch(b));
    EXPECT_EQ(b.at("x").shape(), (Shape{2, 2}));
    EXPECT_EQ(b.at("y").shape(), (Shape{2}));
    EXPECT_EQ(rows_of(b), want);
  }
}

TEST(Dataset, ShuffledEpochsVisitEveryRowOnceInASeededOrder) {
  Graph g = xy_model();
  auto order_of = [&](uint64_t seed, int epochs) {
    auto d = Dataset::create(five_rows(true), g, 1, seed);
    EXPECT_TRUE(d) << d.message();
    std::vector<int64_t> order;
    Batch b;
    for (int i = 0; i < 5 * epochs; ++i) {
      EXPECT_TRUE(d->next_batch(b));
      order.push_back(rows_of(b)[0]);
    }
    return order;
  };
  const std::vector<int64_t> a = order_of(7, 4);
  EXPECT_EQ(order_of(7, 4), a);  // the same seed, the same order
  std::set<std::vector<int64_t>> epochs;
  for (int e = 0; e < 4; ++e) {
    std::vector<int64_t> epoch(a.begin() + 5 * e, a.begin() + 5 * (e + 1));
    epochs.insert(epoch);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, (std::vector<int64_t>{0, 1, 2, 3, 4})) << "epoch " << e << " is not a permutation";
  }
  EXPECT_GT(epochs.size(), 1u) << "every epoch in the same order: the pool is not reshuffled";
  EXPECT_NE(order_of(8, 4), a) << "another seed, the same order";
  std::vector<int64_t> identity(5);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(std::vector<int64_t>(a.begin(), a.begin() + 5), identity);
}

TEST(Dataset, OneHotThenScaleThenTheModelsType) {
  Graph g = GraphBuilder().input("y", DType::Float32, {-1, 3}).node("Identity", {"y"}, {"o"}).output("o").build();
  Manifest m;
  m.shuffle = false;
  InputSpec y;
  y.name = "y";
  y.role = InputRole::Label;
  y.source = InputSource::Values;
  y.values = Tensor::from<double>(Shape{2}, {0, 2});
  y.one_hot = 3;
  y.scale = 0.5;
  m.inputs["y"] = y;
  auto d = Dataset::create(m, g, 2, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  const Tensor& t = b.at("y");
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  const std::vector<double> want = {0.5, 0, 0, 0, 0, 0.5};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.get_as_double(i), want[static_cast<size_t>(i)]) << i;

  m.inputs["y"].values = Tensor::from<double>(Shape{2}, {0, 3});
  auto bad = Dataset::create(m, g, 2, 0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message(), "input 'y': label 3 at row 1 is outside [0, 3)");
}

TEST(Dataset, AManifestDtypeOverridesTheModelInputs) {
  Graph g = xy_model();
  Manifest m = five_rows(false);
  m.inputs["x"].dtype = DType::Float64;
  auto d = Dataset::create(m, g, 2, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(b.at("x").dtype(), DType::Float64);
}

// A fixed input with rows always takes the first batch of them; one without a batch dimension its values.
TEST(Dataset, FixedInputsNeverChange) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 2})
                .input("y", DType::Int64, {-1})
                .input("bias", DType::Float32, {2})
                .input("noise", DType::Float32, {-1, 2})
                .node("Identity", {"x"}, {"o"})
                .output("o")
                .build();
  Manifest m = five_rows(true);
  m.inputs["y"].role = InputRole::Fixed;
  InputSpec bias;
  bias.name = "bias";
  bias.source = InputSource::Values;
  bias.values = Tensor::from<double>(Shape{2}, {7, 8});
  m.inputs["bias"] = bias;
  auto d = Dataset::create(m, g, 2, 3);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  const Tensor noise = b.at("noise");  // not in the manifest: fixed uniform [0, 1), drawn once
  for (int64_t i = 0; i < noise.numel(); ++i) {
    EXPECT_GE(noise.get_as_double(i), 0.0);
    EXPECT_LT(noise.get_as_double(i), 1.0);
  }
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(d->next_batch(b));
    EXPECT_EQ(b.at("y").to_int_vector(), (std::vector<int64_t>{0, 1}));  // the first rows, every batch
    EXPECT_EQ(b.at("bias").shape(), (Shape{2}));
    EXPECT_EQ(b.at("bias").get_as_double(1), 8.0);
    for (int64_t i = 0; i < noise.numel(); ++i) EXPECT_EQ(b.at("noise").get_as_double(i), noise.get_as_double(i));
  }
  m.inputs["bias"].values = Tensor::from<double>(Shape{3}, {1, 2, 3});
  auto bad = Dataset::create(m, g, 2, 3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message(), "input 'bias': its values have 3 elements, the model wants shape [2]");
  m = five_rows(false);
  m.inputs["y"].role = InputRole::Fixed;
  auto few = Dataset::create(m, g, 8, 3);
  ASSERT_FALSE(few);
  EXPECT_NE(few.message().find("input 'y': its source has 5 rows, fewer than the batch size 8"), std::string::npos)
      << few.message();
}

TEST(Dataset, RandomSourcesDrawInTheirRangeFromTheSeed) {
  Graph g = GraphBuilder().input("u", DType::Float32, {-1, 50}).input("n", DType::Float64, {-1, 2000})
                .node("Identity", {"u"}, {"o"}).output("o").build();
  Manifest m;
  InputSpec u;
  u.name = "u";
  u.role = InputRole::Data;
  u.source = InputSource::Uniform;
  u.uniform_lo = -3;
  u.uniform_hi = -1;
  InputSpec n;
  n.name = "n";
  n.role = InputRole::Data;
  n.source = InputSource::Normal;
  n.normal_mean = 5;
  n.normal_std = 2;
  m.inputs["u"] = u;
  m.inputs["n"] = n;
  auto draw = [&](uint64_t seed) {
    auto d = Dataset::create(m, g, 2, seed);
    EXPECT_TRUE(d) << d.message();
    Batch b;
    EXPECT_TRUE(d->next_batch(b));
    EXPECT_EQ(d->pool_size(), 0);  // nothing pooled: every batch is drawn
    return b;
  };
  const Batch a = draw(11), again = draw(11), other = draw(12);
  const Tensor& x = a.at("u");
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_GE(x.get_as_double(i), -3.0);
    EXPECT_LT(x.get_as_double(i), -1.0);
    EXPECT_EQ(x.get_as_double(i), again.at("u").get_as_double(i));
  }
  EXPECT_NE(x.get_as_double(0), other.at("u").get_as_double(0));
  const Tensor& z = a.at("n");
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < z.numel(); ++i) sum += z.get_as_double(i), sq += z.get_as_double(i) * z.get_as_double(i);
  const double mean = sum / static_cast<double>(z.numel());
  const double sd = std::sqrt(sq / static_cast<double>(z.numel()) - mean * mean);
  EXPECT_NEAR(mean, 5.0, 0.15);  // 4,000 draws: the standard error is 0.03
  EXPECT_NEAR(sd, 2.0, 0.15);
}

// `redraw` inputs get a fresh batch of their rows each iteration; the others keep theirs.
TEST(Dataset, RedrawReplacesOnlyTheInputsMarkedSo) {
  Graph g = xy_model();
  Manifest m = five_rows(false);
  m.inputs["y"].redraw = true;
  m.inputs["x"].redraw = false;
  auto d = Dataset::create(m, g, 2, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  const Tensor x_before = b.at("x");
  ASSERT_TRUE(d->redraw(b));
  EXPECT_EQ(b.at("y").to_int_vector(), (std::vector<int64_t>{2, 3}));  // the next rows' labels
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(b.at("x").get_as_double(i), x_before.get_as_double(i));
}

TEST(Dataset, NpzAndNpySources) {
  ScratchDir dir;
  Graph g = xy_model();
  ASSERT_TRUE(write_npz(dir.path("d.npz"), {{"images", Tensor::from<float>(Shape{3, 2}, {0, 1, 10, 11, 20, 21})},
                                             {"other", Tensor::from<float>(Shape{1}, {9})}}));
  ASSERT_TRUE(write_npy(dir.path("labels.npy"), Tensor::from<int64_t>(Shape{3}, {0, 1, 2})));
  Manifest m;
  m.shuffle = false;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::Npz;
  x.file = dir.path("d.npz");
  x.key = "images";
  InputSpec y;
  y.name = "y";
  y.role = InputRole::Label;
  y.source = InputSource::Npy;
  y.file = dir.path("labels.npy");
  m.inputs["x"] = x;
  m.inputs["y"] = y;
  auto d = Dataset::create(m, g, 3, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(rows_of(b), (std::vector<int64_t>{0, 1, 2}));
  m.inputs["x"].key = "missing";
  auto no_key = Dataset::create(m, g, 3, 0);
  ASSERT_FALSE(no_key);
  EXPECT_EQ(no_key.message(), "input 'x': " + dir.path("d.npz") + " has no array named 'missing'");
  m.inputs["x"].file = dir.path("gone.npz");
  auto gone = Dataset::create(m, g, 3, 0);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.message().rfind("input 'x': " + dir.path("gone.npz") + ": ", 0), 0u) << gone.message();
}

TEST(Dataset, FashionMnistRowsAreScaledImagesWithOneHotLabels) {
  Graph g = GraphBuilder().input("x", DType::Float32, {-1, 784}).input("y", DType::Float32, {-1, 10})
                .node("Identity", {"x"}, {"o"}).output("o").build();
  Manifest m;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::FashionMnist;
  x.file = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  x.scale = 1.0 / 255;
  InputSpec y;
  y.name = "y";
  y.role = InputRole::Label;
  y.source = InputSource::FashionMnist;
  y.file = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  y.one_hot = 10;
  m.inputs["x"] = x;
  m.inputs["y"] = y;
  auto d = Dataset::create(m, g, 16, 5);
  ASSERT_TRUE(d) << d.message() << " (install Debian's dataset-fashion-mnist)";
  EXPECT_EQ(d->pool_size(), 10000);
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(b.at("x").shape(), (Shape{16, 784}));
  double hi = 0;
  for (int64_t i = 0; i < b.at("x").numel(); ++i) {
    const double v = b.at("x").get_as_double(i);
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi, 0.9);  // some pixel near white: the scale is 1/255, not 1/255²
  for (int64_t r = 0; r < 16; ++r) {
    double ones = 0;
    for (int64_t c = 0; c < 10; ++c) ones += b.at("y").get_as_double(r * 10 + c);
    EXPECT_EQ(ones, 1.0) << "row " << r << " is not one-hot";
  }
}

// Sources that do not fit the model: one line each, naming the input.
TEST(Dataset, SourcesThatDoNotFitTheModelAreRefused) {
  Graph g = xy_model();
  struct Case {
    std::function<void(Manifest&)> change;
    int64_t batch;
    std::string expected;
  };
  const Case cases[] = {
      {[](Manifest& m) { m.inputs["z"] = m.inputs["x"]; }, 2,
       "test.toml: [inputs.z] names no input of the model (its inputs: x, y)"},
      {[](Manifest& m) { m.inputs["y"].values = Tensor::from<double>(Shape{4}, {0, 1, 2, 3}); }, 2,
       "input 'y': its source has 4 rows but another data/label input has 5; rows are samples and must pair up"},
      {[](Manifest& m) { m.inputs["x"].values = Tensor(DType::Float64, Shape{5, 3}); }, 2,
       "input 'x': a row of its source has 3 values, but one sample of the model input [2] needs 2"},
      {[](Manifest& m) { m.inputs["x"].values = Tensor(DType::Float64, Shape{0, 2}); }, 2,
       "input 'x': its source holds no rows"},
      {[](Manifest& m) { m.inputs["y"].one_hot = 4; m.inputs["y"].values = Tensor(DType::Float64, Shape{5, 1}); }, 2,
       "input 'y': one_hot needs a 1-D array of integer labels"},
  };
  for (const Case& c : cases) {
    Manifest m = five_rows(false);
    c.change(m);
    auto d = Dataset::create(m, g, c.batch, 0);
    ASSERT_FALSE(d) << c.expected;
    EXPECT_EQ(d.message(), c.expected);
  }
  // A fixed batch dimension must be the batch size; a symbolic dimension besides the batch needs data.
  Graph fixed = GraphBuilder().input("x", DType::Float32, {4, 2}).node("Identity", {"x"}, {"o"}).output("o").build();
  Manifest m;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  m.inputs["x"] = x;
  auto d = Dataset::create(m, fixed, 2, 0);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.message(), "input 'x' has a fixed batch dimension of 4, but the batch size is 2");
  Graph open = GraphBuilder().input("x", DType::Float32, {-1, -1}).node("Identity", {"x"}, {"o"}).output("o").build();
  auto open_d = Dataset::create(m, open, 2, 0);
  ASSERT_FALSE(open_d);
  EXPECT_EQ(open_d.message(), "input 'x': its shape [batch, batch] has symbolic dimensions besides the batch; "
                              "give its data in the manifest");
}

// The whole batch as float64 values, for comparing batches.
std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_as_double(i));
  return v;
}

InputSpec values_input(const std::string& name, InputRole role, Tensor values) {
  InputSpec in;
  in.name = name;
  in.role = role;
  in.source = InputSource::Values;
  in.values = std::move(values);
  return in;
}

// pixel / 127.5 − 1 (scale then offset): the [−1, 1] data of GAN programs; the scan's range is its image.
TEST(Preprocessing, ScaleThenOffsetMapsPixelsOntoMinusOneToOne) {
  Graph g = GraphBuilder().input("x", DType::Float32, {-1, 3}).node("Identity", {"x"}, {"o"}).output("o").build();
  Manifest m;
  m.shuffle = false;
  InputSpec x = values_input("x", InputRole::Data, Tensor::from<double>(Shape{1, 3}, {0, 127.5, 255}));
  x.scale = 1 / 127.5;
  x.offset = -1;
  m.inputs["x"] = x;
  auto d = Dataset::create(m, g, 1, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("x")), (std::vector<double>{-1, 0, 1}));
  x.source = InputSource::FashionMnist;
  x.file = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  auto range = source_range(x);
  ASSERT_TRUE(range) << range.message();
  ASSERT_TRUE(range->has_value());
  EXPECT_EQ((*range)->lo, -1.0);
  EXPECT_EQ((*range)->hi, 1.0);
  EXPECT_EQ((*range)->why, "Fashion-MNIST pixels after its preprocessing");
}

// torchvision's Normalize(mean, std) per channel of [N, C, H, W] (axis 1), TensorFlow's NHWC (axis −1), and one
// scalar for every element; the range is the union of each channel's image of the stored range.
TEST(Preprocessing, MeanAndStdNormaliseEachChannel) {
  Graph nchw = GraphBuilder().input("x", DType::Float64, {-1, 2, 2}).node("Identity", {"x"}, {"o"}).output("o")
                   .build();
  Manifest m;
  m.shuffle = false;
  InputSpec x = values_input("x", InputRole::Data, Tensor::from<double>(Shape{1, 4}, {1, 2, 3, 4}));
  x.mean = {1, 3};
  x.std = {0.5, 2};
  m.inputs["x"] = x;
  auto d = Dataset::create(m, nchw, 1, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("x")), (std::vector<double>{0, 2, 0, 0.5}));  // channel 0: 1 2; channel 1: 3 4
  m.inputs["x"].channel_axis = -1;  // channels last: 1 3 | 2 4
  d = Dataset::create(m, nchw, 1, 0);
  ASSERT_TRUE(d) << d.message();
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("x")), (std::vector<double>{0, -0.5, 4, 0.5}));
  m.inputs["x"].mean = {2};  // a scalar mean with per-channel std
  d = Dataset::create(m, nchw, 1, 0);
  ASSERT_TRUE(d) << d.message();
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("x")), (std::vector<double>{-2, 0, 2, 1}));

  auto range = source_range(x);  // stored [1, 4]: channel 0 → [0, 6], channel 1 → [−1, 0.5]
  ASSERT_TRUE(range) << range.message();
  EXPECT_EQ((*range)->lo, -1.0);
  EXPECT_EQ((*range)->hi, 6.0);
  EXPECT_EQ((*range)->why, "manifest values after its preprocessing");

  // Contradictions with the model's shape, one line naming the key.
  const std::pair<std::function<void(InputSpec&)>, std::string> bad[] = {
      {[](InputSpec& in) { in.mean = {1, 2, 3}; },
       "input 'x': mean has 3 values (one a channel), but axis 1 of the model input has 2"},
      {[](InputSpec& in) { in.std = {1, 2, 3}; },
       "input 'x': std has 3 values (one a channel), but axis 1 of the model input has 2"},
      {[](InputSpec& in) { in.channel_axis = 0; }, "input 'x': channel_axis = 0 is the batch axis"},
      {[](InputSpec& in) { in.channel_axis = 3; },
       "input 'x': channel_axis = 3 is not an axis of the model input (rank 3)"},
  };
  for (const auto& [change, expected] : bad) {
    Manifest broken = m;
    broken.inputs["x"] = x;
    change(broken.inputs["x"]);
    auto fails = Dataset::create(broken, nchw, 1, 0);
    ASSERT_FALSE(fails) << expected;
    EXPECT_EQ(fails.message(), expected);
  }
}

// `rows = [BEGIN, END]`: only those rows are samples (TensorFlow's MNIST split: rows 5000–59999 train), data and
// labels alike; the scan's hull is the subset's.
TEST(Preprocessing, ARowSubsetIsThePoolAndItsHull) {
  Graph g = xy_model();
  Manifest m = five_rows(false);
  for (auto& [name, in] : m.inputs) in.row_begin = 1, in.row_end = 4;
  auto d = Dataset::create(m, g, 2, 0);
  ASSERT_TRUE(d) << d.message();
  EXPECT_EQ(d->pool_size(), 3);
  Batch b;
  std::vector<int64_t> seen;
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(d->next_batch(b));
    for (int64_t r : rows_of(b)) seen.push_back(r);
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3, 1, 2, 3}));
  auto range = source_range(m.inputs["x"]);
  ASSERT_TRUE(range) << range.message();
  EXPECT_EQ((*range)->lo, 10.0);
  EXPECT_EQ((*range)->hi, 31.0);

  m.inputs["x"].row_end = 6;
  auto past = Dataset::create(m, g, 2, 0);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.message(), "input 'x': rows = [1, 6] reaches past the 5 rows of its source");
  auto past_range = source_range(m.inputs["x"]);
  ASSERT_FALSE(past_range);
  EXPECT_EQ(past_range.message(), past.message());
  m.inputs["x"].row_end = 3;  // 2 rows of data for 3 of labels
  auto unpaired = Dataset::create(m, g, 2, 0);
  ASSERT_FALSE(unpaired);
  EXPECT_NE(unpaired.message().find("its source has 3 rows but another data/label input has 2"), std::string::npos)
      << unpaired.message();
}

// One-hot labels, then their preprocessing (label smoothing's 0.9 + 0.1/C is scale and offset): the range follows.
TEST(Preprocessing, OneHotLabelsArePreprocessedAndSoIsTheirRange) {
  Graph g = GraphBuilder().input("y", DType::Float32, {-1, 4}).node("Identity", {"y"}, {"o"}).output("o").build();
  Manifest m;
  m.shuffle = false;
  InputSpec y = values_input("y", InputRole::Label, Tensor::from<double>(Shape{1}, {2}));
  y.one_hot = 4;
  y.scale = 0.5;
  y.offset = 0.125;
  m.inputs["y"] = y;
  auto d = Dataset::create(m, g, 1, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("y")), (std::vector<double>{0.125, 0.125, 0.625, 0.125}));
  auto range = source_range(y);
  ASSERT_TRUE(range) << range.message();
  EXPECT_EQ((*range)->lo, 0.125);
  EXPECT_EQ((*range)->hi, 0.625);
}

// Rows are kept as stored (uint8 pixels, 1 byte each) and converted per batch: the batches are the very bytes
// the same rows give as float64 values, preprocessing and shuffling included.
TEST(StoredRows, Uint8RowsGiveTheBatchesOfTheirFloatValues) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 1, 28, 28})
                .input("y", DType::Float32, {-1, 10})
                .node("Identity", {"x"}, {"o"})
                .output("o")
                .build();
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::FashionMnist;
  x.file = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  x.row_begin = 1000, x.row_end = 3000;
  x.scale = 1.0 / 255;
  x.offset = -0.1;
  x.mean = {0.2860};
  x.std = {0.3530};
  InputSpec y;
  y.name = "y";
  y.role = InputRole::Label;
  y.source = InputSource::FashionMnist;
  y.file = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  y.row_begin = 1000, y.row_end = 3000;
  y.one_hot = 10;
  y.scale = 0.9;
  Manifest stored;
  stored.inputs = {{"x", x}, {"y", y}};
  // The float path: the same rows, read and converted to float64 up front, as inline values.
  Manifest as_float = stored;
  for (auto& [name, in] : as_float.inputs) {
    auto t = read_idx(in.file);
    ASSERT_TRUE(t) << t.message() << " (install Debian's dataset-fashion-mnist)";
    ASSERT_EQ(t->dtype(), DType::UInt8);
    in.source = InputSource::Values;
    cast_tensor(*t, DType::Float64, in.values);
  }
  auto a = Dataset::create(stored, g, 64, 9);
  auto b = Dataset::create(as_float, g, 64, 9);
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(a->pool_size(), 2000);
  EXPECT_EQ(a->stored_bytes(), 10000u * 784 + 10000);  // the files' bytes: uint8 pixels and labels, not float64
  EXPECT_EQ(b->stored_bytes(), (10000u * 784 + 10000) * 8);
  Batch ba, bb;
  for (int k = 0; k < 40; ++k) {  // 2,560 rows: past the first epoch's reshuffle
    ASSERT_TRUE(a->next_batch(ba));
    ASSERT_TRUE(b->next_batch(bb));
    for (const char* name : {"x", "y"}) {
      ASSERT_EQ(ba.at(name).shape(), bb.at(name).shape());
      ASSERT_EQ(ba.at(name).dtype(), DType::Float32);
      EXPECT_EQ(std::memcmp(ba.at(name).raw(), bb.at(name).raw(), ba.at(name).nbytes()), 0)
          << name << " differs at batch " << k;
    }
  }
  EXPECT_NE(values_of(ba.at("x")), std::vector<double>(64 * 784, ba.at("x").get_as_double(0)));  // not constant
}

// A fixed input redrawn from rows advances one batch per redraw, in step with the other redrawn fixed inputs,
// on a sequence of its own: the data and label rows (and their switching) go on as if it were not there.
TEST(FixedRedraw, RowsAdvanceABatchPerRedrawApartFromTheData) {
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {-1, 2})
                .input("y", DType::Int64, {-1})
                .input("s1", DType::Float32, {-1})
                .input("s2", DType::Float32, {-1})
                .node("Identity", {"x"}, {"o"})
                .output("o")
                .build();
  Manifest plain = five_rows(false);
  Manifest m = plain;
  m.inputs["s1"] = values_input("s1", InputRole::Fixed, Tensor::from<double>(Shape{6}, {0, 1, 2, 3, 4, 5}));
  m.inputs["s2"] = values_input("s2", InputRole::Fixed, Tensor::from<double>(Shape{6}, {0, 10, 20, 30, 40, 50}));
  m.inputs["s1"].redraw = m.inputs["s2"].redraw = true;
  auto d = Dataset::create(m, g, 2, 0);
  ASSERT_TRUE(d) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b));
  EXPECT_EQ(values_of(b.at("s1")), (std::vector<double>{0, 1}));  // the first batch of its rows
  const std::vector<std::vector<double>> expected = {{2, 3}, {4, 5}, {0, 1}, {2, 3}};
  for (const auto& want : expected) {
    ASSERT_TRUE(d->redraw(b));
    EXPECT_EQ(values_of(b.at("s1")), want);
    std::vector<double> tens;
    for (double v : want) tens.push_back(10 * v);
    EXPECT_EQ(values_of(b.at("s2")), tens);  // in step
    EXPECT_EQ(rows_of(b), (std::vector<int64_t>{0, 1})) << "the redraw moved the data";
  }
  Batch next;
  ASSERT_TRUE(d->next_batch(next));  // a fresh batch (switching) keeps the fixed input's current rows
  EXPECT_EQ(values_of(next.at("s1")), (std::vector<double>{2, 3}));
  EXPECT_EQ(rows_of(next), (std::vector<int64_t>{2, 3}));  // the data's next rows, as without s1 and s2

  m.inputs["s2"].values = Tensor::from<double>(Shape{4}, {0, 10, 20, 30});
  auto unpaired = Dataset::create(m, g, 2, 0);
  ASSERT_FALSE(unpaired);
  EXPECT_EQ(unpaired.message(), "input 's2': its source has 4 rows but another redrawn fixed input has 6; they are "
                                "drawn together and must pair up");
  // Without a batch dimension there are no rows to draw: refused rather than ignored.
  Graph flat = GraphBuilder().input("bias", DType::Float32, {2}).node("Identity", {"bias"}, {"o"}).output("o").build();
  Manifest fixed_values;
  fixed_values.inputs["bias"] = values_input("bias", InputRole::Fixed, Tensor::from<double>(Shape{2}, {1, 2}));
  fixed_values.inputs["bias"].redraw = true;
  auto refused = Dataset::create(fixed_values, flat, 2, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.message(), "input 'bias': redraw = true, but the model input has no batch dimension to draw rows "
                               "for (its values are one fixed tensor)");
}

// Without a manifest an integer input is a label in [0, 10) — unless it is a loss's target: then it takes the
// classes the model scores, so a 5-class head exported by PyTorch runs as exported (label 9 was an error).
TEST(DefaultInputs, ALossTargetTakesTheClassesTheModelScores) {
  Graph g = GraphBuilder(13)
                .input("z", DType::Float32, {-1, 5})
                .input("y", DType::Int64, {-1})
                .input("other", DType::Int64, {-1})
                .node("SoftmaxCrossEntropyLoss", {"z", "y"}, {"loss"})
                .node("Identity", {"other"}, {"o"})
                .output("loss")
                .output("o")
                .build();
  Manifest m;
  default_inputs(g, m);
  EXPECT_EQ(m.inputs.at("z").role, InputRole::Data);
  EXPECT_EQ(m.inputs.at("y").role, InputRole::Label);
  EXPECT_EQ(m.inputs.at("y").uniform_hi, 5);
  EXPECT_EQ(m.inputs.at("other").uniform_hi, 10);
  auto d = Dataset::create(m, g, 64, 1);
  ASSERT_TRUE(d.is_ok()) << d.message();
  Batch b;
  ASSERT_TRUE(d->next_batch(b).is_ok());
  const Tensor& y = b.at("y");
  int64_t largest = 0;
  for (int64_t i = 0; i < y.numel(); ++i) largest = std::max<int64_t>(largest, static_cast<int64_t>(y.get_as_double(i)));
  EXPECT_EQ(largest, 4);  // 64 draws from [0, 5) reach 4
}

}  // namespace
}  // namespace grist
