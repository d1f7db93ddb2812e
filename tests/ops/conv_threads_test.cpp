// Conv with several kernel threads (util/thread_pool.h) against the same Conv on one: the column-split, row-split
// and dot-product GEMMs, the split im2col and the depthwise planes, on odd shapes large enough to be split, with
// NaN and infinities in the input propagating to the same outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/op_test_util.h"
#include "util/thread_pool.h"

namespace grist::testing {
namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<std::pair<std::string, Attribute>> attrs;
};

std::vector<Tensor> conv_with_threads(const ConvCase& c, const std::vector<Tensor>& inputs, int threads) {
  set_kernel_threads(threads);
  auto out = run_node(node_spec("Conv", c.attrs), inputs);
  set_kernel_threads(1);
  return out;
}

void expect_threads_agree(const ConvCase& c, DType dtype, bool nonfinite) {
  Rng rng(31);
  Tensor x = random_tensor(rng, c.x, -1, 1, dtype), w = random_tensor(rng, c.w, -1, 1, dtype);
  Tensor b = random_tensor(rng, {c.w[0]}, -1, 1, dtype);
  if (nonfinite) {
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()};
    for (int i = 0; i < 12; ++i) {
      const auto at = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(x.numel()));
      if (dtype == DType::Float32) {
        x.data<float>()[at] = static_cast<float>(specials[i % 3]);
      } else {
        x.data<double>()[at] = specials[i % 3];
      }
    }
  }
  const std::vector<Tensor> inputs{x, w, b};
  auto one = conv_with_threads(c, inputs, 1);
  auto three = conv_with_threads(c, inputs, 3);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(three.size(), 1u);
  ASSERT_EQ(one[0].shape(), three[0].shape()) << c.name;
  int64_t nonfinite_outputs = 0;
  for (int64_t i = 0; i < one[0].numel(); ++i) {
    const double a = one[0].get_as_double(i), t = three[0].get_as_double(i);
    if (!std::isfinite(a) || !std::isfinite(t)) {
      ++nonfinite_outputs;
      // The same NaN or the same infinity (a sum of +inf and -inf terms is NaN on both).
      EXPECT_TRUE((std::isnan(a) && std::isnan(t)) || a == t) << c.name << " output " << i << ": " << a << " vs " << t;
    }
  }
  EXPECT_EQ(nonfinite_outputs > 0, nonfinite) << c.name;
  const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
  EXPECT_TRUE(tensors_close(one[0], three[0], tol, tol)) << c.name;
}

std::vector<ConvCase> cases() {
  return {
      // 1295 grid points, 24 output channels: split by columns, and 40 input channels to im2col in chunks.
      {"columns", {1, 40, 37, 35}, {24, 40, 3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}},
      // 30 grid points, 150 output channels: split by rows; two batch items.
      {"rows", {2, 32, 9, 11}, {150, 32, 3, 3}, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 0, 1, 1})}}},
      // 9 grid points: the dot-product path, rows in chunks.
      {"narrow", {1, 64, 3, 3}, {305, 64, 3, 3}, {{"pads", attr_ints({1, 1, 1, 1})}}},
      // 1×1 stride 1: a GEMM on the input itself.
      {"pointwise", {1, 96, 29, 31}, {70, 96, 1, 1}, {}},
      // Depthwise with a channel multiplier of 2, 80 planes over two batch items.
      {"depthwise", {2, 40, 64, 63}, {80, 1, 3, 3}, {{"group", attr_int(40)}, {"pads", attr_ints({1, 1, 1, 1})}}},
      {"depthwise_strided",
       {1, 96, 65, 67},
       {96, 1, 5, 5},
       {{"group", attr_int(96)}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({2, 1, 2, 2})}}},
  };
}

TEST(ConvThreads, SplitWorkMatchesOneThread) {
  for (const ConvCase& c : cases()) {
    expect_threads_agree(c, DType::Float64, false);
    expect_threads_agree(c, DType::Float32, false);
  }
}

TEST(ConvThreads, NaNAndInfinityPropagateAsOnOneThread) {
  for (const ConvCase& c : cases()) expect_threads_agree(c, DType::Float32, true);
}

// The backward's tiled products (the data gradient's Wᵀ · dY, the weight gradient's im2col · dYᵀ) split the rows of
// their column matrix over the threads: the gradients agree with one thread's.
TEST(ConvThreads, GradientsAgreeWithOneThread) {
  for (const ConvCase& c : cases()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      Rng rng(37);
      const std::vector<Tensor> inputs{random_tensor(rng, c.x, -1, 1, dtype), random_tensor(rng, c.w, -1, 1, dtype),
                                       random_tensor(rng, {c.w[0]}, -1, 1, dtype)};
      set_kernel_threads(1);
      auto one = gradients_of(node_spec("Conv", c.attrs), inputs);
      set_kernel_threads(3);
      auto three = gradients_of(node_spec("Conv", c.attrs), inputs);
      set_kernel_threads(1);
      ASSERT_EQ(one.size(), three.size());
      const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_TRUE(tensors_close(one[i], three[i], tol, tol)) << c.name << " input " << i;
    }
  }
}

}  // namespace
}  // namespace grist::testing
