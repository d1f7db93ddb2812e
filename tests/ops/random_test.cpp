// Random ops: every draw comes from the run's seeded generator (a seed replays a run; the node's own
// seed is ignored), moments within generous bounds over many samples, and shapes and dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace grist::testing {
namespace {

ExecutorOptions seeded(uint64_t seed) {
  ExecutorOptions o;
  o.seed = seed;
  return o;
}

Tensor draw(const NodeSpec& spec, const std::vector<Tensor>& inputs, uint64_t seed) {
  auto out = run_node(spec, inputs, seeded(seed));
  return out.empty() ? Tensor() : out[0];
}

Tensor zeros(const Shape& s) {
  Tensor t(DType::Float64, s);
  t.fill_zero();
  return t;
}

struct Moments {
  double mean = 0, stddev = 0, min = INFINITY, max = -INFINITY;
};

Moments moments_of(const Tensor& t) {
  Moments m;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    sum += v;
    sq += v * v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  const auto n = static_cast<double>(t.numel());
  m.mean = sum / n;
  m.stddev = std::sqrt(sq / n - m.mean * m.mean);
  return m;
}

TEST(RandomOps, TheExecutorSeedReplaysTheDraws) {
  Spec spec = Spec("RandomNormal").attr("shape", attr_ints({4, 5}));
  Tensor a = draw(spec, {}, 42), b = draw(spec, {}, 42), c = draw(spec, {}, 43);
  EXPECT_TRUE(tensors_close(a, b, 0, 0));
  EXPECT_FALSE(tensors_close(a, c));
}

TEST(RandomOps, TheNodeSeedAttributeIsIgnoredInFavourOfTheRunSeed) {
  Tensor a = draw(Spec("RandomUniform").attr("shape", attr_ints({8})).attr("seed", attr_float(1)), {}, 7);
  Tensor b = draw(Spec("RandomUniform").attr("shape", attr_ints({8})).attr("seed", attr_float(2)), {}, 7);
  EXPECT_TRUE(tensors_close(a, b, 0, 0));
}

TEST(RandomOps, EachForwardDrawsFreshValues) {
  Spec spec = Spec("RandomUniform").attr("shape", attr_ints({6}));
  Graph g = make_single_node_graph(spec, {});
  auto ex = Executor::create(g, seeded(3));
  ASSERT_TRUE(ex.is_ok());
  ASSERT_TRUE(ex->forward().is_ok());
  Tensor first = ex->value(g.outputs[0]);
  ASSERT_TRUE(ex->forward().is_ok());
  EXPECT_FALSE(tensors_close(first, ex->value(g.outputs[0])));
}

TEST(RandomNormal, MeanAndScaleShapeAndDefaultFloat32) {
  Tensor y = draw(Spec("RandomNormal")
                      .attr("shape", attr_ints({200, 100}))
                      .attr("mean", attr_float(2))
                      .attr("scale", attr_float(3)),
                  {}, 11);
  ASSERT_EQ(y.dtype(), DType::Float32);
  ASSERT_EQ(y.shape(), (Shape{200, 100}));
  Moments m = moments_of(y);
  EXPECT_NEAR(m.mean, 2.0, 0.1);
  EXPECT_NEAR(m.stddev, 3.0, 0.1);
}

TEST(RandomUniform, StaysInLowHighWithTheRightMean) {
  Tensor y = draw(Spec("RandomUniform")
                      .attr("shape", attr_ints({20000}))
                      .attr("low", attr_float(-1))
                      .attr("high", attr_float(3))
                      .attr("dtype", attr_int(static_cast<int64_t>(DType::Float64))),
                  {}, 12);
  ASSERT_EQ(y.dtype(), DType::Float64);
  Moments m = moments_of(y);
  EXPECT_GE(m.min, -1.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 1.0, 0.05);
  EXPECT_NEAR(m.stddev, 4.0 / std::sqrt(12.0), 0.05);
}

TEST(RandomUniform, Float32RoundingNeverReachesHigh) {
  // Half of the doubles in [1, 1 + 2^-23) round to 1 + 2^-23 in float32; none may be returned.
  const double high = 1.0 + std::ldexp(1.0, -23);
  Tensor y = draw(
      Spec("RandomUniform").attr("shape", attr_ints({1000})).attr("low", attr_float(1)).attr("high", attr_float(high)),
      {}, 13);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_LT(y.data<float>()[i], static_cast<float>(high));
}

TEST(RandomLike, TakesShapeAndDtypeFromTheInputUnlessDtypeIsGiven) {
  Tensor x = zeros({3, 4});
  Tensor y = draw(Spec("RandomUniformLike"), {x}, 1);
  EXPECT_EQ(y.dtype(), DType::Float64);
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  y = draw(Spec("RandomNormalLike").attr("dtype", attr_int(static_cast<int64_t>(DType::Float32))), {x}, 1);
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  Moments m = moments_of(draw(Spec("RandomNormalLike").attr("scale", attr_float(0.5)), {zeros({5000})}, 2));
  EXPECT_NEAR(m.mean, 0.0, 0.05);
  EXPECT_NEAR(m.stddev, 0.5, 0.05);
}

TEST(RandomOps, NonFloatTypesAndMissingShapeAreErrors) {
  Tensor ints = Tensor::from<int64_t>({2}, {1, 2});
  EXPECT_FALSE(try_run_node(Spec("RandomNormalLike"), {ints}).is_ok());
  EXPECT_FALSE(
      try_run_node(Spec("RandomUniform").attr("shape", attr_ints({2})).attr("dtype", attr_int(6)), {}).is_ok());
  EXPECT_FALSE(try_run_node(Spec("RandomNormal"), {}).is_ok());
  EXPECT_FALSE(try_run_node(Spec("RandomNormal").attr("shape", attr_ints({-1})), {}).is_ok());
}

}  // namespace
}  // namespace grist::testing
