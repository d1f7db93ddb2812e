// BatchNormalization (inference and both training-mode conventions), InstanceNormalization, GroupNormalization,
// LayerNormalization and Dropout: forward values, statistics outputs, mode selection, error paths, and
// gradients; InstanceNormalization's interval transfer.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "analysis/intervals.h"
#include "support/op_test_util.h"

namespace grist::testing {
namespace {

Tensor constant(const Shape& s, double v) {
  Tensor t(DType::Float64, s);
  for (double& e : t.span<double>()) e = v;
  return t;
}

// BatchNormalization inputs X [2, 3, 2, 2] and per-channel scale, B, mean, var (var positive).
std::vector<Tensor> batch_norm_inputs(uint64_t seed) {
  Rng rng(seed);
  return {random_tensor(rng, {2, 3, 2, 2}, -2, 2), random_tensor(rng, {3}, 0.5, 1.5), random_tensor(rng, {3}),
          random_tensor(rng, {3}), random_tensor(rng, {3}, 0.5, 2)};
}

TEST(BatchNormalization, InferenceUsesTheRunningStatistics) {
  auto in = batch_norm_inputs(1);
  auto out = run_node(node_spec("BatchNormalization", {{"epsilon", attr_float(1e-2)}}), in);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < in[0].numel(); ++i) {
    const int64_t c = (i / 4) % 3;
    double expected = in[1].get_as_double(c) * (in[0].get_as_double(i) - in[3].get_as_double(c)) /
                          std::sqrt(in[4].get_as_double(c) + 1e-2) +
                      in[2].get_as_double(c);
    EXPECT_NEAR(out[0].get_as_double(i), expected, 1e-12);
  }
}

// Float32, every channel width the kernel has a loop for (1, 4, 16 and 64 values: grids of 1×1 to 8×8) and others,
// batches of 1 and 3: each value is (x − mean)·(scale·(1/√(var + ε))) + bias, rounded as written, bit for bit.
TEST(BatchNormalization, EveryChannelWidthGivesTheFormulasBits) {
  Rng rng(23);
  const int64_t channels = 37;
  for (int64_t batch : {1, 3})
    for (const std::vector<int64_t>& grid : std::vector<std::vector<int64_t>>{{1, 1}, {2, 2}, {4, 4}, {8, 8}, {1, 5},
                                                                           {3, 3}, {16, 16}, {7}}) {
      Shape shape{batch, channels};
      int64_t inner = 1;
      for (int64_t d : grid) shape.push_back(d), inner *= d;
      const DType f32 = DType::Float32;
      std::vector<Tensor> in = {random_tensor(rng, shape, -3, 3, f32), random_tensor(rng, {channels}, 0.5, 1.5, f32),
                                random_tensor(rng, {channels}, -1, 1, f32), random_tensor(rng, {channels}, -1, 1, f32),
                                random_tensor(rng, {channels}, 0.01, 2, f32)};
      const float eps = 1e-3f;
      auto out = run_node(node_spec("BatchNormalization", {{"epsilon", attr_float(eps)}}), in);
      ASSERT_EQ(out.size(), 1u);
      const float *x = in[0].data<float>(), *scale = in[1].data<float>(), *bias = in[2].data<float>(),
                  *mean = in[3].data<float>(), *var = in[4].data<float>(), *y = out[0].data<float>();
      for (int64_t i = 0; i < in[0].numel(); ++i) {
        const int64_t c = i / inner % channels;
        const float a = scale[c] * (1.0f / std::sqrt(var[c] + eps));
        ASSERT_EQ(y[i], (x[i] - mean[c]) * a + bias[c]) << fmt::format("shape {} element {}", shape.str(), i);
      }
    }
}

TEST(BatchNormalization, ZeroVarianceWithoutEpsilonGivesInfinityAndNaN) {
  Tensor x = Tensor::from<float>({1, 1, 2}, {1, 2});
  Tensor one = Tensor::from<float>({1}, {1}), zero = Tensor::from<float>({1}, {0}),
         mean = Tensor::from<float>({1}, {1});
  auto out = run_node(node_spec("BatchNormalization", {{"epsilon", attr_float(0)}}), {x, one, zero, mean, zero});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].get_as_double(0)));  // (x − mean) = 0, times inf
  EXPECT_EQ(out[0].get_as_double(1), INFINITY);
}

TEST(BatchNormalization, TrainingModeNormalisesWithBatchStatistics) {
  auto in = batch_norm_inputs(2);
  NodeSpec spec =
      node_spec("BatchNormalization", {{"training_mode", attr_int(1)}, {"momentum", attr_float(0.8)}}, 3, 15);
  auto out = run_node(spec, in);
  ASSERT_EQ(out.size(), 3u);
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    std::vector<double> xs;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t j = 0; j < 4; ++j) xs.push_back(in[0].get_as_double((n * 3 + c) * 4 + j));
    for (double v : xs) sum += v;
    const double mean = sum / 8;
    for (double v : xs) sq += (v - mean) * (v - mean);
    const double var = sq / 8;
    EXPECT_NEAR(out[1].get_as_double(c), 0.8 * in[3].get_as_double(c) + 0.2 * mean, 1e-12);
    EXPECT_NEAR(out[2].get_as_double(c), 0.8 * in[4].get_as_double(c) + 0.2 * var, 1e-12);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t i = (n * 3 + c) * 4 + j;
        double expected =
            in[1].get_as_double(c) * (in[0].get_as_double(i) - mean) / std::sqrt(var + 1e-5) + in[2].get_as_double(c);
        EXPECT_NEAR(out[0].get_as_double(i), expected, 1e-12);
      }
  }
}

TEST(BatchNormalization, OpsetNineTrainsWhenStatisticsOutputsAreWanted) {
  auto in = batch_norm_inputs(3);
  auto inference = run_node(node_spec("BatchNormalization", {}, 1, 9), in);
  auto training = run_node(node_spec("BatchNormalization", {}, 5, 9), in);
  ASSERT_EQ(training.size(), 5u);
  ASSERT_EQ(inference.size(), 1u);
  EXPECT_FALSE(tensors_close(inference[0], training[0]));
  // saved_mean is the batch mean: normalising with it centres every channel.
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t j = 0; j < 4; ++j) s += training[0].get_as_double((n * 3 + c) * 4 + j);
    EXPECT_NEAR(s / 8, in[2].get_as_double(c), 1e-12);
  }
}

TEST(BatchNormalization, RejectsMismatchedParameters) {
  auto in = batch_norm_inputs(4);
  in[1] = constant({2}, 1);
  EXPECT_FALSE(try_run_node(node_spec("BatchNormalization"), in).is_ok());
  in = batch_norm_inputs(4);
  in.pop_back();
  EXPECT_FALSE(try_run_node(node_spec("BatchNormalization"), in).is_ok());
}

TEST(BatchNormalizationGradient, InferenceMode) {
  expect_gradient_matches(node_spec("BatchNormalization"), batch_norm_inputs(10), {.wrt = {0, 1, 2}});
}

TEST(BatchNormalizationGradient, TrainingModeThroughAllOutputs) {
  NodeSpec spec = node_spec("BatchNormalization", {{"training_mode", attr_int(1)}}, 3, 15);
  expect_gradient_matches(spec, batch_norm_inputs(11), {.wrt = {0, 1, 2}});
}

TEST(BatchNormalizationGradient, OpsetNineTrainingWithSavedStatistics) {
  expect_gradient_matches(node_spec("BatchNormalization", {}, 5, 9), batch_norm_inputs(12), {.wrt = {0, 1, 2}});
}

TEST(BatchNormalizationGradient, RankTwoInput) {
  Rng rng(13);
  NodeSpec spec = node_spec("BatchNormalization", {{"training_mode", attr_int(1)}}, 1, 15);
  expect_gradient_matches(spec,
                          {random_tensor(rng, {5, 2}), random_tensor(rng, {2}), random_tensor(rng, {2}),
                           random_tensor(rng, {2}), random_tensor(rng, {2}, 0.5, 1)},
                          {.wrt = {0, 1, 2}});
}

// ---------------------------------------------------------------------------------------------------

// InstanceNormalization inputs: X [2, 3, 2, 2] and per-channel scale and B.
std::vector<Tensor> instance_norm_inputs(uint64_t seed, const Shape& x = {2, 3, 2, 2}) {
  Rng rng(seed);
  return {random_tensor(rng, x, -2, 2), random_tensor(rng, {x[1]}, 0.5, 1.5), random_tensor(rng, {x[1]})};
}

TEST(InstanceNormalization, NormalisesEverySampleAndChannelOverItsSpatialValues) {
  auto in = instance_norm_inputs(60);
  auto out = run_node(node_spec("InstanceNormalization", {{"epsilon", attr_float(1e-2)}}), in);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t g = 0; g < 6; ++g) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < 4; ++j) sum += in[0].get_as_double(g * 4 + j);
    const double mean = sum / 4;
    for (int64_t j = 0; j < 4; ++j) sq += std::pow(in[0].get_as_double(g * 4 + j) - mean, 2);
    const int64_t c = g % 3;
    for (int64_t j = 0; j < 4; ++j) {
      const double expected = in[1].get_as_double(c) * (in[0].get_as_double(g * 4 + j) - mean) / std::sqrt(sq / 4 + 1e-2) +
                              in[2].get_as_double(c);
      EXPECT_NEAR(out[0].get_as_double(g * 4 + j), expected, 1e-12);
    }
  }
}

TEST(InstanceNormalization, Float32AndConstantChannelsGiveTheBias) {
  Tensor x = Tensor::from<float>({1, 2, 3}, {1, 2, 3, 5, 5, 5});
  auto out = run_node(node_spec("InstanceNormalization"),
                      {x, Tensor::from<float>({2}, {2, 3}), Tensor::from<float>({2}, {0.5f, -1})});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DType::Float32);
  const float s = 2.0f / std::sqrt(2.0f / 3 + 1e-5f);
  EXPECT_NEAR(out[0].get_as_double(0), 0.5 - s, 1e-5);
  EXPECT_NEAR(out[0].get_as_double(1), 0.5, 1e-6);
  for (int64_t i = 3; i < 6; ++i) EXPECT_EQ(out[0].get_as_double(i), -1);  // (x − μ) = 0 exactly
}

TEST(InstanceNormalization, RejectsMismatchedParameters) {
  auto in = instance_norm_inputs(61);
  in[1] = constant({2}, 1);
  EXPECT_FALSE(try_run_node(node_spec("InstanceNormalization"), in).is_ok());
  in = instance_norm_inputs(61);
  in.pop_back();
  EXPECT_FALSE(try_run_node(node_spec("InstanceNormalization"), in).is_ok());
}

TEST(InstanceNormalizationGradient, InputScaleAndBias) {
  expect_gradient_matches(node_spec("InstanceNormalization"), instance_norm_inputs(62), {.wrt = {0, 1, 2}});
  expect_gradient_matches(node_spec("InstanceNormalization", {{"epsilon", attr_float(0.1)}}),
                          instance_norm_inputs(63, {3, 2, 5}), {.wrt = {0, 1, 2}});
}

// The bounds of InstanceNormalization's output for x, scale and B in their boxes, checked to hold the kernel's
// float32 outputs (testing::expect_bounds_sound).
IntervalTensor expect_instance_norm_bounds_sound(const NodeSpec& spec, const Shape& x, Interval xb, Interval sb,
                                                 Interval bb) {
  const Shape p{x[1]};
  auto bounds = testing::expect_bounds_sound(
      spec, {Tensor(DType::Float32, x), Tensor(DType::Float32, p), Tensor(DType::Float32, p)}, {xb, sb, bb}, 64);
  return bounds.empty() ? IntervalTensor{} : bounds[0];
}

TEST(InstanceNormalizationBounds, TheNormalisedValueIsWithinTheSquareRootOfTheCount) {
  // 4 spatial values: |x − μ|/σ ≤ √3 < 2, times scale ≤ 2, plus B ≤ 1.
  const IntervalTensor b = expect_instance_norm_bounds_sound(node_spec("InstanceNormalization"), {2, 3, 2, 2},
                                                             {-5, 5}, {0.5, 2}, {-1, 1});
  EXPECT_FALSE(b.may_be_nan);
  EXPECT_LE(b.hull().hi, 5.001);
  EXPECT_GE(b.hull().lo, -5.001);
  // A narrow spread over a large epsilon bounds it more tightly than the count does.
  const IntervalTensor narrow = expect_instance_norm_bounds_sound(
      node_spec("InstanceNormalization", {{"epsilon", attr_float(1)}}), {1, 2, 64}, {0, 0.01}, {1, 1}, {0, 0});
  EXPECT_LE(narrow.hull().hi, 0.011);
  // Unbounded inputs: inf − inf in the statistics may give NaN.
  const IntervalTensor wide = expect_instance_norm_bounds_sound(node_spec("InstanceNormalization"), {1, 2, 3},
                                                                {-kInf, kInf}, {1, 1}, {0, 0});
  EXPECT_TRUE(wide.may_be_nan);
}

// ---------------------------------------------------------------------------------------------------

// GroupNormalization inputs: X of `x`, scale and bias of `params` elements.
std::vector<Tensor> group_norm_inputs(uint64_t seed, const Shape& x, int64_t params) {
  Rng rng(seed);
  return {random_tensor(rng, x, -2, 2), random_tensor(rng, {params}, 0.5, 1.5), random_tensor(rng, {params})};
}

NodeSpec group_norm(int64_t groups, int opset, double eps = 1e-5) {
  return node_spec("GroupNormalization", {{"num_groups", attr_int(groups)}, {"epsilon", attr_float(eps)}}, 1, opset);
}

// Every (sample, group) of C/G channels normalised over its values; scale and bias per channel at opset 21, per
// group at 18.
TEST(GroupNormalization, NormalisesEachGroupThenScalesPerChannelOrPerGroup) {
  for (int opset : {18, 21}) {
    const int64_t n = 2, c = 4, s = 3, groups = 2, per = c / groups;
    auto in = group_norm_inputs(70, {n, c, s}, opset >= 21 ? c : groups);
    auto out = run_node(group_norm(groups, opset, 1e-2), in);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t first = (b * c + g * per) * s, m = per * s;
        double sum = 0, sq = 0;
        for (int64_t j = 0; j < m; ++j) sum += in[0].get_as_double(first + j);
        const double mean = sum / static_cast<double>(m);
        for (int64_t j = 0; j < m; ++j) sq += std::pow(in[0].get_as_double(first + j) - mean, 2);
        for (int64_t j = 0; j < m; ++j) {
          const int64_t k = opset >= 21 ? g * per + j / s : g;
          const double expected = in[1].get_as_double(k) * (in[0].get_as_double(first + j) - mean) /
                                      std::sqrt(sq / static_cast<double>(m) + 1e-2) +
                                  in[2].get_as_double(k);
          EXPECT_NEAR(out[0].get_as_double(first + j), expected, 1e-12) << "opset " << opset << " at " << first + j;
        }
      }
  }
}

TEST(GroupNormalization, OneGroupPerChannelIsInstanceNormalization) {
  auto in = group_norm_inputs(71, {2, 3, 2, 2}, 3);
  auto group = run_node(group_norm(3, 21), in);
  auto instance = run_node(node_spec("InstanceNormalization"), in);
  EXPECT_TRUE(tensors_close(instance[0], group[0], 1e-12, 1e-12));
}

TEST(GroupNormalization, RefusesGroupsThatDoNotDivideAndParametersOfTheOtherOpset) {
  auto r = try_run_node(group_norm(3, 21), group_norm_inputs(72, {1, 4, 2}, 4));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("num_groups 3 does not divide the 4 channels"), std::string::npos) << r.message();
  r = try_run_node(group_norm(2, 18), group_norm_inputs(72, {1, 4, 2}, 4));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("scale must have the input's dtype and 2 elements (one per group at opset 18)"),
            std::string::npos)
      << r.message();
  EXPECT_FALSE(try_run_node(group_norm(2, 21), group_norm_inputs(72, {1, 4, 2}, 2)).is_ok());
  EXPECT_FALSE(try_run_node(group_norm(0, 21), group_norm_inputs(72, {1, 4, 2}, 4)).is_ok());
}

// stash_type 1 (float32 statistics, ONNX's default) is what the kernel computes; another type is refused by name.
TEST(GroupNormalization, ReadsStashTypeAndRefusesStatisticsInAnotherType) {
  NodeSpec spec = group_norm(2, 21);
  spec.attributes.emplace_back("stash_type", attr_int(1));
  EXPECT_TRUE(try_run_node(spec, group_norm_inputs(78, {1, 4, 2}, 4)).is_ok());
  spec.attributes.back().second = attr_int(10);
  auto r = try_run_node(spec, group_norm_inputs(78, {1, 4, 2}, 4));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("stash_type 10 is not supported"), std::string::npos) << r.message();
}

TEST(GroupNormalizationGradient, InputScaleAndBias) {
  expect_gradient_matches(group_norm(2, 21), group_norm_inputs(73, {2, 4, 3}, 4), {.wrt = {0, 1, 2}});
  expect_gradient_matches(group_norm(2, 18, 0.1), group_norm_inputs(74, {3, 4, 2, 2}, 2), {.wrt = {0, 1, 2}});
  expect_gradient_matches(group_norm(1, 21), group_norm_inputs(75, {2, 3, 5}, 3), {.wrt = {0, 1, 2}});
}

TEST(GroupNormalizationBounds, EnclosesTheKernelAtBothOpsets) {
  for (int opset : {18, 21}) {
    const Shape p{opset >= 21 ? 4 : 2};
    auto bounds = testing::expect_bounds_sound(
        group_norm(2, opset), {Tensor(DType::Float32, {2, 4, 3}), Tensor(DType::Float32, p), Tensor(DType::Float32, p)},
        {{-5, 5}, {0.5, 2}, {-1, 1}}, 76);
    ASSERT_EQ(bounds.size(), 1u);
    // 6 values a group: |x − μ|/σ ≤ √6 (normalized_bound; √5 is tight), times scale ≤ 2, plus |B| ≤ 1.
    EXPECT_FALSE(bounds[0].may_be_nan);
    EXPECT_LE(bounds[0].hull().hi, 2 * std::sqrt(6.0) + 1 + 1e-3);
    auto wide = testing::expect_bounds_sound(
        group_norm(2, opset), {Tensor(DType::Float32, {1, 4, 2}), Tensor(DType::Float32, p), Tensor(DType::Float32, p)},
        {{-kInf, kInf}, {1, 1}, {0, 0}}, 77);
    ASSERT_EQ(wide.size(), 1u);
    EXPECT_TRUE(wide[0].may_be_nan);
  }
}

// ---------------------------------------------------------------------------------------------------

TEST(LayerNormalization, NormalisesTrailingDimensionsAndReportsStatistics) {
  Tensor x = Tensor::from<double>({2, 3}, {1, 2, 3, 4, 4, 4});
  NodeSpec spec = node_spec("LayerNormalization", {{"epsilon", attr_float(0)}}, 3);
  auto out = run_node(spec, {x, constant({3}, 2), constant({3}, 1)});
  ASSERT_EQ(out.size(), 3u);
  const double s = std::sqrt(1.5);  // 1/std of {1, 2, 3}
  EXPECT_TRUE(tensors_close(Tensor::from<double>({2, 3}, {1 - 2 * s, 1, 1 + 2 * s, NAN, NAN, NAN}), out[0]));
  EXPECT_TRUE(tensors_close(Tensor::from<double>({2, 1}, {2, 4}), out[1]));
  EXPECT_TRUE(tensors_close(Tensor::from<double>({2, 1}, {s, INFINITY}), out[2]));
}

TEST(LayerNormalization, RejectsBadAxisAndScale) {
  Rng rng(20);
  Tensor x = random_tensor(rng, {2, 3});
  EXPECT_FALSE(try_run_node(node_spec("LayerNormalization", {{"axis", attr_int(2)}}), {x, constant({3}, 1)}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("LayerNormalization"), {x, constant({2}, 1)}).is_ok());
  EXPECT_TRUE(try_run_node(node_spec("LayerNormalization", {{"stash_type", attr_int(1)}}), {x, constant({3}, 1)}).is_ok());
  auto r = try_run_node(node_spec("LayerNormalization", {{"stash_type", attr_int(11)}}), {x, constant({3}, 1)});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("stash_type 11 is not supported"), std::string::npos) << r.message();
}

TEST(LayerNormalizationGradient, LastAxisWithAllOutputs) {
  Rng rng(21);
  NodeSpec spec = node_spec("LayerNormalization", {}, 3);
  expect_gradient_matches(spec, {random_tensor(rng, {3, 4}), random_tensor(rng, {4}), random_tensor(rng, {4})});
}

TEST(LayerNormalizationGradient, EarlierAxisWithBroadcastScaleAndNoBias) {
  Rng rng(22);
  NodeSpec spec = node_spec("LayerNormalization", {{"axis", attr_int(1)}, {"epsilon", attr_float(0.1)}});
  expect_gradient_matches(spec, {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {1, 4})});
  expect_gradient_matches(spec,
                          {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {3, 4}), random_tensor(rng, {3, 1})});
}

// ---------------------------------------------------------------------------------------------------

Tensor ones_float(const Shape& s) {
  Tensor t(DType::Float32, s);
  for (float& v : t.span<float>()) v = 1.0f;
  return t;
}

TEST(Dropout, InferenceIsIdentityWithAllTrueMask) {
  Rng rng(30);
  Tensor x = random_tensor(rng, {3, 4});
  for (int opset : {9, 11, 13}) {
    SCOPED_TRACE(::testing::Message() << "opset " << opset);
    auto out = run_node(node_spec("Dropout", {{"ratio", attr_float(0.3)}}, 2, opset), {x});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(tensors_close(x, out[0], 0, 0));
    // Before opset 10 the mask had the data's type.
    ASSERT_EQ(out[1].dtype(), opset < 10 ? DType::Float64 : DType::Bool);
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(out[1].get_as_double(i), 1.0);
  }
}

TEST(Dropout, TrainingModeInputKeepsAndScales) {
  Tensor x = ones_float({1000});
  NodeSpec spec = node_spec("Dropout", {}, 2, 13);
  auto out = run_node(spec, {x, Tensor::scalar<float>(0.25f), Tensor::scalar<bool>(true)});
  ASSERT_EQ(out.size(), 2u);
  int kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = out[1].data<bool>()[i];
    kept += keep;
    EXPECT_EQ(out[0].data<float>()[i], keep ? 1.0f / 0.75f : 0.0f);
  }
  EXPECT_GT(kept, 650);
  EXPECT_LT(kept, 850);
}

TEST(Dropout, ZeroRatioKeepsEverything) {
  Rng rng(31);
  Tensor x = random_tensor(rng, {50});
  auto out = run_node(node_spec("Dropout", {}, 1, 13), {x, Tensor::scalar<double>(0.0), Tensor::scalar<bool>(true)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(x, out[0], 0, 0));
}

TEST(Dropout, ExecutorOptionOverridesTheNodeMode) {
  Tensor x = ones_float({200});
  ExecutorOptions training;
  training.dropout_training = true;
  auto out = run_node(node_spec("Dropout", {{"ratio", attr_float(0.5)}}, 1, 11), {x}, training);
  ASSERT_EQ(out.size(), 1u);
  int zeros = 0;
  for (float v : out[0].span<float>()) zeros += v == 0.0f;
  EXPECT_GT(zeros, 0);
  ExecutorOptions inference;
  inference.dropout_training = false;
  out = run_node(node_spec("Dropout", {}, 1, 13), {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)},
                 inference);
  EXPECT_TRUE(tensors_close(x, out[0], 0, 0));
}

TEST(Dropout, DroppedInfinityBecomesNaN) {
  // y = x · mask·scale, as PyTorch computes it: inf · 0 = NaN.
  Tensor x = ones_float({64});
  for (float& v : x.span<float>()) v = INFINITY;
  auto out = run_node(node_spec("Dropout", {}, 2, 13), {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)});
  ASSERT_EQ(out.size(), 2u);
  for (int64_t i = 0; i < 64; ++i) {
    if (out[1].data<bool>()[i]) {
      EXPECT_EQ(out[0].data<float>()[i], INFINITY);
    } else {
      EXPECT_TRUE(std::isnan(out[0].data<float>()[i]));
    }
  }
}

// Ratio 1 keeps nothing: every finite output and gradient is 0 (the kept elements' scale, 1 / 0, is inf, and must
// not meet the dropped ones' 0).
TEST(Dropout, RatioOneDropsEverythingToZero) {
  Rng rng(32);
  Tensor x = random_tensor(rng, {64}, -1, 1, DType::Float32);
  ExecutorOptions training;
  training.dropout_training = true;
  auto out = run_node(node_spec("Dropout", {}, 1, 13), {x, Tensor::scalar<float>(1.0f), Tensor::scalar<bool>(true)},
                      training);
  ASSERT_EQ(out.size(), 1u);
  for (float v : out[0].span<float>()) EXPECT_EQ(v, 0.0f);
  auto grads = gradients_of(node_spec("Dropout", {}, 1, 13),
                            {x, Tensor::scalar<float>(1.0f), Tensor::scalar<bool>(true)});
  ASSERT_FALSE(grads.empty());
  ASSERT_TRUE(grads[0].defined());
  for (float v : grads[0].span<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Dropout, RejectsRatioOutsideTheUnitInterval) {
  EXPECT_FALSE(try_run_node(node_spec("Dropout", {}, 1, 13), {ones_float({2}), Tensor::scalar<float>(1.5f)}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Dropout", {{"ratio", attr_float(-0.1)}}, 1, 10), {ones_float({2})}).is_ok());
}

TEST(DropoutGradient, InferenceIsIdentity) {
  Rng rng(40);
  expect_gradient_matches(node_spec("Dropout", {{"ratio", attr_float(0.5)}}, 1, 11), {random_tensor(rng, {3, 4})});
}

// Training draws a new mask every forward, so finite differences do not apply: the gradient must be
// dY scaled by the mask of the forward it follows, whether the mask is an output or kept internally.
TEST(DropoutGradient, TrainingFollowsTheForwardMask) {
  for (int outputs : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << outputs << " outputs");
    NodeSpec spec = node_spec("Dropout", {}, outputs, 13);
    std::vector<Tensor> inputs{constant({40}, 3.0), Tensor::scalar<double>(0.4), Tensor::scalar<bool>(true)};
    Graph g = make_single_node_graph(spec, inputs);
    auto ex = Executor::create(g);
    ASSERT_TRUE(ex.is_ok()) << ex.message();
    for (size_t i = 0; i < inputs.size(); ++i) ASSERT_TRUE(ex->set_input(g.inputs[i], inputs[i]).is_ok());
    ASSERT_TRUE(ex->forward().is_ok());
    Tensor seed = constant({40}, 2.0);
    const Tensor* seeds[] = {&seed};
    ValueId y = g.outputs[0];
    ASSERT_TRUE(ex->backward(std::span<const ValueId>(&y, 1), seeds).is_ok());
    const Tensor* dx = ex->grad(g.inputs[0]);
    ASSERT_NE(dx, nullptr);
    const Tensor& out = ex->value(y);
    for (int64_t i = 0; i < 40; ++i) {
      const bool kept = out.data<double>()[i] != 0;
      EXPECT_DOUBLE_EQ(dx->data<double>()[i], kept ? 2.0 / 0.6 : 0.0);
    }
  }
}

TEST(NormalizationSteadyState, RepeatedPassesAllocateNothing) {
  Rng rng(50);
  // Backward from every float output, each seeded with its own value; two passes after the first.
  constexpr BackwardFrom kEveryFloatOutput = BackwardFrom::FloatOutputsSeededWithValues;
  EXPECT_EQ(allocations_after_first_pass(node_spec("BatchNormalization", {{"training_mode", attr_int(1)}}, 3, 15),
                                         batch_norm_inputs(51), kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(allocations_after_first_pass(
                node_spec("LayerNormalization", {{"axis", attr_int(1)}}, 3),
                {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {1, 4}), random_tensor(rng, {3, 4})},
                kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(allocations_after_first_pass(node_spec("InstanceNormalization"), instance_norm_inputs(52), kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(
      allocations_after_first_pass(node_spec("Dropout", {}, 1, 13),
                                   {random_tensor(rng, {8}), Tensor::scalar<double>(0.5), Tensor::scalar<bool>(true)},
                                   kEveryFloatOutput, 2),
      0u);
}

}  // namespace
}  // namespace grist::testing
