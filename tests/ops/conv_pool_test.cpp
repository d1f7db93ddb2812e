// Conv, ConvTranspose and the pooling ops: forward against direct (naive) definitions for every attribute
// that changes the window (pads, strides, dilations, groups, auto_pad, ceil_mode, output_shape), the
// MaxPool indices layouts and NaN handling, error paths, and gradients against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/kernel_util.h"
#include "engine/executor.h"
#include "support/graph_builder.h"
#include "support/op_test_util.h"

namespace grist::testing {
namespace {

struct Window {
  std::vector<int64_t> strides, pads, dilations;  // pads: begins then ends
  int64_t group = 1;
};

std::vector<std::pair<std::string, Attribute>> window_attrs(const Window& w) {
  std::vector<std::pair<std::string, Attribute>> a;
  if (!w.strides.empty()) a.push_back({"strides", attr_ints(w.strides)});
  if (!w.pads.empty()) a.push_back({"pads", attr_ints(w.pads)});
  if (!w.dilations.empty()) a.push_back({"dilations", attr_ints(w.dilations)});
  if (w.group != 1) a.push_back({"group", attr_int(w.group)});
  return a;
}

int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; }

// Row-major flat index of a multi-index over the given dims.
int64_t flat(const Shape& s, const std::array<int64_t, Shape::kMaxRank>& idx) {
  int64_t f = 0;
  for (int d = 0; d < s.rank(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Conv by its definition: y[n,m,o] = b[m] + Σ_{c in group, k} x[n,c,o·s − p + k·d] · w[m,c,k].
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Window& win, const Shape& y_shape) {
  Tensor y(DType::Float64, y_shape);
  const int rank = x.rank() - 2;
  const int64_t cg = w.shape()[1], mg = w.shape()[0] / win.group;
  Shape kshape;
  kshape.assign(w.shape().begin() + 2, w.shape().end());
  for (int64_t yi = 0; yi < y.numel(); ++yi) {
    auto yo = unravel(yi, y_shape);
    const int64_t n = yo[0], m = yo[1], g = m / mg;
    double s = b ? b->get_as_double(m) : 0.0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t ki = 0; ki < kshape.numel(); ++ki) {
        auto k = unravel(ki, kshape);
        std::array<int64_t, Shape::kMaxRank> xi{n, g * cg + c};
        bool inside = true;
        for (int d = 0; d < rank; ++d) {
          xi[d + 2] = yo[d + 2] * at(win.strides, d, 1) - at(win.pads, d, 0) + k[d] * at(win.dilations, d, 1);
          inside &= xi[d + 2] >= 0 && xi[d + 2] < x.shape()[d + 2];
        }
        if (!inside) continue;
        std::array<int64_t, Shape::kMaxRank> wi{m, c};
        for (int d = 0; d < rank; ++d) wi[d + 2] = k[d];
        s += x.get_as_double(flat(x.shape(), xi)) * w.get_as_double(flat(w.shape(), wi));
      }
    y.data<double>()[yi] = s;
  }
  return y;
}

// ConvTranspose by its definition: every x[n,c,i] scatters x·w[c,m,k] to y[n, g·Mg+m, i·s − p + k·d].
Tensor naive_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, const Window& win,
                            const Shape& y_shape) {
  Tensor y(DType::Float64, y_shape);
  const int rank = x.rank() - 2;
  const int64_t mg = w.shape()[1], cg = x.shape()[1] / win.group;
  Shape kshape;
  kshape.assign(w.shape().begin() + 2, w.shape().end());
  for (int64_t i = 0; i < y.numel(); ++i) y.data<double>()[i] = b ? b->get_as_double(unravel(i, y_shape)[1]) : 0.0;
  for (int64_t xi = 0; xi < x.numel(); ++xi) {
    auto xo = unravel(xi, x.shape());
    const int64_t n = xo[0], c = xo[1], g = c / cg;
    for (int64_t m = 0; m < mg; ++m)
      for (int64_t ki = 0; ki < kshape.numel(); ++ki) {
        auto k = unravel(ki, kshape);
        std::array<int64_t, Shape::kMaxRank> yi{n, g * mg + m};
        bool inside = true;
        for (int d = 0; d < rank; ++d) {
          yi[d + 2] = xo[d + 2] * at(win.strides, d, 1) - at(win.pads, d, 0) + k[d] * at(win.dilations, d, 1);
          inside &= yi[d + 2] >= 0 && yi[d + 2] < y_shape[d + 2];
        }
        if (!inside) continue;
        std::array<int64_t, Shape::kMaxRank> wi{c, m};
        for (int d = 0; d < rank; ++d) wi[d + 2] = k[d];
        y.data<double>()[flat(y_shape, yi)] += x.get_as_double(xi) * w.get_as_double(flat(w.shape(), wi));
      }
  }
  return y;
}

void expect_conv_matches_definition(const Shape& xs, const Shape& ws, const Window& win, const Shape& expected_y,
                                    bool with_bias) {
  Rng rng(100);
  Tensor x = random_tensor(rng, xs), w = random_tensor(rng, ws), b = random_tensor(rng, {ws[0]});
  std::vector<Tensor> inputs{x, w};
  if (with_bias) inputs.push_back(b);
  auto out = run_node(node_spec("Conv", window_attrs(win)), inputs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), expected_y);
  EXPECT_TRUE(tensors_close(naive_conv(x, w, with_bias ? &b : nullptr, win, expected_y), out[0], 1e-12, 1e-12));
}

TEST(Conv, TwoDimensionalWithPadsStridesDilations) {
  expect_conv_matches_definition({2, 3, 7, 6}, {4, 3, 3, 2}, {{2, 1}, {1, 0, 2, 1}, {1, 2}}, {2, 4, 4, 5}, true);
}

TEST(Conv, GroupedAndDepthwise) {
  expect_conv_matches_definition({1, 4, 5, 5}, {6, 2, 3, 3}, {{}, {1, 1, 1, 1}, {}, 2}, {1, 6, 5, 5}, true);
  expect_conv_matches_definition({2, 3, 5, 4}, {3, 1, 2, 2}, {{}, {}, {}, 3}, {2, 3, 4, 3}, false);
}

// Depthwise 2-D convolutions take a direct loop (conv_pool.cpp): strides, pads, dilations, a channel
// multiplier, rows long enough for its vector chunks and short ones.
TEST(Conv, DepthwiseWithStridesPadsDilationsAndMultiplier) {
  expect_conv_matches_definition({2, 3, 7, 6}, {6, 1, 3, 3}, {{2, 1}, {1, 2, 1, 0}, {1, 2}, 3}, {2, 6, 4, 4}, true);
  expect_conv_matches_definition({1, 2, 5, 40}, {2, 1, 3, 3}, {{}, {1, 1, 1, 1}, {}, 2}, {1, 2, 5, 40}, true);
  expect_conv_matches_definition({1, 2, 9, 37}, {4, 1, 5, 5}, {{2, 2}, {2, 2, 2, 2}, {}, 2}, {1, 4, 5, 19}, false);
}

// Grids of up to 9 points take dot products instead of a GEMM; either side of the threshold, with and without
// im2col, and depths that are not a multiple of the 16-element chunk.
TEST(Conv, NarrowAndWideGrids) {
  expect_conv_matches_definition({1, 40, 3, 3}, {3, 40, 1, 1}, {}, {1, 3, 3, 3}, true);
  expect_conv_matches_definition({1, 21, 2, 2}, {4, 21, 3, 3}, {{}, {1, 1, 1, 1}, {}}, {1, 4, 2, 2}, true);
  expect_conv_matches_definition({1, 40, 2, 5}, {3, 40, 1, 1}, {}, {1, 3, 2, 5}, false);
  expect_conv_matches_definition({2, 40, 3, 3}, {5, 40, 3, 3}, {}, {2, 5, 1, 1}, true);
  expect_conv_matches_definition({1, 21, 4, 5}, {5, 21, 3, 3}, {{}, {1, 0, 1, 0}, {}}, {1, 5, 4, 3}, false);
  expect_conv_matches_definition({1, 21, 3, 6}, {5, 21, 3, 3}, {{}, {1, 1, 1, 1}, {}}, {1, 5, 3, 6}, true);
}

TEST(Conv, OneAndThreeDimensional) {
  expect_conv_matches_definition({2, 2, 9}, {3, 2, 3}, {{2}, {1, 2}, {2}}, {2, 3, 4}, true);
  expect_conv_matches_definition({1, 2, 4, 5, 3}, {2, 2, 2, 3, 2}, {{1, 2, 1}, {1, 0, 1, 0, 1, 0}, {}}, {1, 2, 4, 2, 3},
                                 true);
}

TEST(Conv, PointwiseKernel) { expect_conv_matches_definition({2, 5, 3, 4}, {7, 5, 1, 1}, {}, {2, 7, 3, 4}, true); }

TEST(Conv, AutoPadSameUpperLowerAndValid) {
  Rng rng(101);
  Tensor x = random_tensor(rng, {1, 1, 5, 6}), w = random_tensor(rng, {1, 1, 2, 3});
  // SAME: output = ceil(in / stride); the odd total padding goes to the end (UPPER) or the start (LOWER).
  struct Case {
    const char* mode;
    Window win;
    Shape y;
  } cases[] = {{"SAME_UPPER", {{2, 2}, {0, 0, 1, 1}, {}}, {1, 1, 3, 3}},
               {"SAME_LOWER", {{2, 2}, {1, 1, 0, 0}, {}}, {1, 1, 3, 3}},
               {"VALID", {{2, 2}, {}, {}}, {1, 1, 2, 2}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    Window strides_only{c.win.strides, {}, {}};
    auto attrs = window_attrs(strides_only);
    attrs.push_back({"auto_pad", attr_string(c.mode)});
    auto out = run_node(node_spec("Conv", attrs), {x, w});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape(), c.y);
    EXPECT_TRUE(tensors_close(naive_conv(x, w, nullptr, c.win, c.y), out[0], 1e-12, 1e-12));
  }
}

TEST(Conv, Float32MatchesDefinition) {
  Rng rng(102);
  Tensor x = random_tensor(rng, {1, 2, 6, 6}, -1, 1, DType::Float32);
  Tensor w = random_tensor(rng, {3, 2, 3, 3}, -1, 1, DType::Float32);
  auto out = run_node(node_spec("Conv"), {x, w});
  ASSERT_EQ(out.size(), 1u);
  Tensor x64, w64, y64;
  cast_tensor(x, DType::Float64, x64);
  cast_tensor(w, DType::Float64, w64);
  cast_tensor(out[0], DType::Float64, y64);
  EXPECT_TRUE(tensors_close(naive_conv(x64, w64, nullptr, {}, {1, 3, 4, 4}), y64, 1e-5, 1e-6));
}

TEST(Conv, InfinityInTheWindowGivesInfinityOrNaN) {
  Tensor x = Tensor::from<float>({1, 1, 1, 3}, {INFINITY, 1, 2});
  auto out = run_node(node_spec("Conv"), {x, Tensor::from<float>({1, 1, 1, 2}, {1, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].get_as_double(0), INFINITY);
  EXPECT_EQ(out[0].get_as_double(1), 3.0);
  out = run_node(node_spec("Conv"), {x, Tensor::from<float>({1, 1, 1, 2}, {0, 1})});
  EXPECT_TRUE(std::isnan(out[0].get_as_double(0)));  // inf · 0
}

TEST(Conv, RejectsMalformedNodes) {
  Rng rng(103);
  Tensor x = random_tensor(rng, {1, 4, 5, 5});
  EXPECT_FALSE(try_run_node(node_spec("Conv"), {x, random_tensor(rng, {2, 3, 3, 3})}).is_ok());  // channel mismatch
  EXPECT_FALSE(
      try_run_node(node_spec("Conv", {{"group", attr_int(3)}}), {x, random_tensor(rng, {3, 1, 3, 3})}).is_ok());
  EXPECT_FALSE(
      try_run_node(node_spec("Conv"), {x, random_tensor(rng, {2, 4, 6, 6})}).is_ok());  // kernel larger than input
  EXPECT_FALSE(
      try_run_node(node_spec("Conv", {{"auto_pad", attr_string("SAME")}}), {x, random_tensor(rng, {2, 4, 3, 3})})
          .is_ok());
  EXPECT_FALSE(
      try_run_node(node_spec("Conv", {{"strides", attr_ints({1})}}), {x, random_tensor(rng, {2, 4, 3, 3})}).is_ok());
  EXPECT_FALSE(
      try_run_node(node_spec("Conv", {{"strides", attr_ints({0, 1})}}), {x, random_tensor(rng, {2, 4, 3, 3})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("Conv"), {x, random_tensor(rng, {2, 4, 3, 3}), random_tensor(rng, {3})})
                   .is_ok());  // bias size
  EXPECT_FALSE(try_run_node(node_spec("Conv"), {random_tensor(rng, {4, 5}), random_tensor(rng, {2, 5})}).is_ok());
}

TEST(ConvGradient, TwoDimensionalWithBiasPadsStridesDilations) {
  Rng rng(110);
  expect_gradient_matches(
      node_spec("Conv", window_attrs({{2, 1}, {1, 0, 1, 2}, {1, 2}})),
      {random_tensor(rng, {2, 2, 6, 5}), random_tensor(rng, {3, 2, 3, 2}), random_tensor(rng, {3})});
}

TEST(ConvGradient, Grouped) {
  Rng rng(111);
  expect_gradient_matches(
      node_spec("Conv", window_attrs({{}, {1, 1, 1, 1}, {}, 2})),
      {random_tensor(rng, {1, 4, 4, 4}), random_tensor(rng, {4, 2, 3, 3}), random_tensor(rng, {4})});
}

TEST(ConvGradient, DepthwiseWithStridesPadsDilationsAndMultiplier) {
  Rng rng(114);
  expect_gradient_matches(
      node_spec("Conv", window_attrs({{2, 1}, {1, 2, 1, 0}, {1, 2}, 3})),
      {random_tensor(rng, {2, 3, 7, 6}), random_tensor(rng, {6, 1, 3, 3}), random_tensor(rng, {6})});
  expect_gradient_matches(node_spec("Conv", window_attrs({{}, {1, 1, 1, 1}, {}, 2})),
                          {random_tensor(rng, {1, 2, 3, 20}), random_tensor(rng, {2, 1, 3, 3})});
}

TEST(ConvGradient, NarrowGrid) {
  Rng rng(115);
  expect_gradient_matches(node_spec("Conv"), {random_tensor(rng, {2, 18, 3, 3}), random_tensor(rng, {3, 18, 2, 2}),
                                              random_tensor(rng, {3})});
}

TEST(ConvGradient, OneDimensionalPointwiseAndThreeDimensional) {
  Rng rng(112);
  expect_gradient_matches(node_spec("Conv", window_attrs({{2}, {2, 1}, {}})),
                          {random_tensor(rng, {2, 2, 7}), random_tensor(rng, {2, 2, 3})});
  expect_gradient_matches(
      node_spec("Conv"), {random_tensor(rng, {2, 3, 2, 3}), random_tensor(rng, {2, 3, 1, 1}), random_tensor(rng, {2})});
  expect_gradient_matches(node_spec("Conv", window_attrs({{1, 2, 1}, {0, 1, 0, 1, 0, 1}, {}})),
                          {random_tensor(rng, {1, 2, 3, 4, 3}), random_tensor(rng, {2, 2, 2, 2, 2})});
}

// The float32 backward (tiled products with masked column tails, the 2-D col2im) against the float64 one of the same
// values, which the tests above check against finite differences: a 5×5 "same" conv at 14×14 (the MNIST CNN's), a
// grouped one at stride 2, and ConvTranspose at stride 2 and pointwise (its forward is the Conv data gradient's code,
// started from the bias).
TEST(ConvGradient, Float32AgreesWithFloat64) {
  struct Case {
    const char* op;
    Shape x, w;
    Window win;
  };
  const Case cases[] = {
      {"Conv", {2, 3, 14, 14}, {10, 3, 5, 5}, {{}, {2, 2, 2, 2}, {}}},
      {"Conv", {2, 4, 9, 11}, {6, 2, 3, 3}, {{2, 2}, {1, 0, 1, 1}, {}, 2}},
      {"ConvTranspose", {2, 4, 5, 6}, {4, 3, 3, 3}, {{2, 2}, {1, 1, 0, 1}, {1, 2}}},
      {"ConvTranspose", {2, 5, 3, 7}, {5, 9, 1, 1}, {}},
  };
  for (const Case& c : cases) {
    Rng rng(116);
    const int64_t bias_size = std::string_view(c.op) == "Conv" ? c.w[0] : c.w[1] * c.win.group;
    std::vector<Tensor> f32{random_tensor(rng, c.x, -1, 1, DType::Float32),
                            random_tensor(rng, c.w, -1, 1, DType::Float32),
                            random_tensor(rng, {bias_size}, -1, 1, DType::Float32)};
    std::vector<Tensor> f64(3);
    for (size_t i = 0; i < 3; ++i) cast_tensor(f32[i], DType::Float64, f64[i]);
    const NodeSpec spec = node_spec(c.op, window_attrs(c.win));
    auto out32 = run_node(spec, f32);
    auto out64 = run_node(spec, f64);
    auto g32 = gradients_of(spec, f32);
    auto g64 = gradients_of(spec, f64);
    ASSERT_EQ(out32.size(), 1u);
    ASSERT_EQ(g32.size(), 3u);
    ASSERT_EQ(g64.size(), 3u);
    Tensor widened;
    cast_tensor(out32[0], DType::Float64, widened);
    EXPECT_TRUE(tensors_close(out64[0], widened, 1e-5, 1e-5)) << c.op << " forward";
    for (size_t i = 0; i < 3; ++i) {
      cast_tensor(g32[i], DType::Float64, widened);
      EXPECT_TRUE(tensors_close(g64[i], widened, 1e-5, 1e-4)) << c.op << " gradient of input " << i;
    }
  }
}

TEST(ConvGradient, AutoPadSameLower) {
  Rng rng(113);
  expect_gradient_matches(node_spec("Conv", {{"auto_pad", attr_string("SAME_LOWER")}, {"strides", attr_ints({2, 2})}}),
                          {random_tensor(rng, {1, 1, 5, 5}), random_tensor(rng, {2, 1, 3, 3})});
}

// ---------------------------------------------------------------------------------------------------

void expect_conv_transpose_matches_definition(const Shape& xs, const Shape& ws, const Window& win,
                                              std::vector<std::pair<std::string, Attribute>> extra,
                                              const Shape& expected_y, const Window& effective) {
  Rng rng(120);
  Tensor x = random_tensor(rng, xs), w = random_tensor(rng, ws), b = random_tensor(rng, {ws[1] * win.group});
  auto attrs = window_attrs(win);
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  auto out = run_node(node_spec("ConvTranspose", attrs), {x, w, b});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), expected_y);
  EXPECT_TRUE(tensors_close(naive_conv_transpose(x, w, &b, effective, expected_y), out[0], 1e-12, 1e-12));
}

TEST(ConvTranspose, StridesPadsDilationsGroups) {
  Window win{{2, 3}, {1, 0, 0, 2}, {2, 1}, 2};
  // out = s·(in − 1) + (k − 1)·d + 1 − pads: 2·2 + 5 − 1 = 8, 3·3 + 2 + 1 − 2 = 10.
  expect_conv_transpose_matches_definition({2, 4, 3, 4}, {4, 3, 3, 3}, win, {}, {2, 6, 8, 10}, win);
}

TEST(ConvTranspose, OutputPaddingExtendsTheEnd) {
  Window win{{3, 2}, {}, {}};
  expect_conv_transpose_matches_definition({1, 1, 3, 3}, {1, 2, 3, 3}, win, {{"output_padding", attr_ints({1, 1})}},
                                           {1, 2, 10, 8}, win);
}

TEST(ConvTranspose, OutputShapeDerivesPads) {
  // Full output 3·2 + 3 = 9 and 2·2 + 3 = 7; asked 8 and 6: total padding 1 each, split begin = 1 (not UPPER).
  Window win{{3, 2}, {}, {}};
  Window effective{{3, 2}, {1, 1, 0, 0}, {}};
  expect_conv_transpose_matches_definition({1, 1, 3, 3}, {1, 2, 3, 3}, win, {{"output_shape", attr_ints({8, 6})}},
                                           {1, 2, 8, 6}, effective);
}

TEST(ConvTranspose, OutputShapeBeyondTheFullOutputGrowsAtTheEnd) {
  // Full output 9 × 7; asked 10 × 8: as with output_padding, the extra row and column come last (bias only).
  Window win{{3, 2}, {}, {}};
  expect_conv_transpose_matches_definition({1, 1, 3, 3}, {1, 2, 3, 3}, win, {{"output_shape", attr_ints({10, 8})}},
                                           {1, 2, 10, 8}, win);
}

TEST(ConvTranspose, AutoPadSameUpperGivesInputTimesStride) {
  Window win{{2, 2}, {}, {}};
  Window effective{{2, 2}, {0, 0, 1, 1}, {}};
  expect_conv_transpose_matches_definition({1, 1, 3, 3}, {1, 2, 3, 3}, win, {{"auto_pad", attr_string("SAME_UPPER")}},
                                           {1, 2, 6, 6}, effective);
}

TEST(ConvTranspose, OneDimensionalAndPointwise) {
  Window win{{2}, {1, 0}, {}};
  expect_conv_transpose_matches_definition({2, 2, 4}, {2, 3, 3}, win, {}, {2, 3, 8}, win);
  expect_conv_transpose_matches_definition({2, 3, 2, 2}, {3, 2, 1, 1}, {}, {}, {2, 2, 2, 2}, {});
}

TEST(ConvTranspose, RejectsMalformedNodes) {
  Rng rng(121);
  Tensor x = random_tensor(rng, {1, 2, 3, 3});
  EXPECT_FALSE(try_run_node(node_spec("ConvTranspose"), {x, random_tensor(rng, {3, 2, 3, 3})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("ConvTranspose", {{"output_shape", attr_ints({4})}}),
                            {x, random_tensor(rng, {2, 1, 3, 3})})
                   .is_ok());
  EXPECT_FALSE(try_run_node(node_spec("ConvTranspose", {{"pads", attr_ints({4, 4, 4, 4})}}),
                            {x, random_tensor(rng, {2, 1, 3, 3})})
                   .is_ok());
}

TEST(ConvTransposeGradient, StridesPadsOutputPaddingGroups) {
  Rng rng(130);
  auto attrs = window_attrs({{2, 1}, {1, 0, 0, 1}, {1, 2}, 2});
  attrs.push_back({"output_padding", attr_ints({1, 0})});
  expect_gradient_matches(
      node_spec("ConvTranspose", attrs),
      {random_tensor(rng, {2, 4, 3, 3}), random_tensor(rng, {4, 1, 2, 2}), random_tensor(rng, {2})});
}

TEST(ConvTransposeGradient, OutputShapeCroppingExtendingAndAutoPad) {
  Rng rng(132);
  auto strided = [](std::pair<std::string, Attribute> extra) {
    return node_spec("ConvTranspose", {{"strides", attr_ints({2, 2})}, std::move(extra)});
  };
  for (const NodeSpec& spec :
       {strided({"output_shape", attr_ints({5, 6})}), strided({"output_shape", attr_ints({8, 8})}),
        strided({"auto_pad", attr_string("SAME_UPPER")})}) {
    expect_gradient_matches(
        spec, {random_tensor(rng, {1, 2, 3, 3}), random_tensor(rng, {2, 2, 2, 3}), random_tensor(rng, {2})});
  }
}

TEST(ConvTransposeGradient, OneDimensionalAndPointwise) {
  Rng rng(131);
  expect_gradient_matches(node_spec("ConvTranspose", window_attrs({{3}, {}, {}})),
                          {random_tensor(rng, {1, 2, 4}), random_tensor(rng, {2, 2, 2}), random_tensor(rng, {2})});
  expect_gradient_matches(node_spec("ConvTranspose"),
                          {random_tensor(rng, {2, 2, 2, 3}), random_tensor(rng, {2, 3, 1, 1})});
}

// ---------------------------------------------------------------------------------------------------

Tensor iota(const Shape& s, double start = 1) {
  Tensor t(DType::Float64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = start + static_cast<double>(i);
  return t;
}

// A permutation of 1..n scaled, so no window has ties (finite differences stay valid for max pooling).
Tensor distinct_values(const Shape& s, uint64_t seed) {
  Tensor t = iota(s);
  Rng rng(seed);
  double* p = t.data<double>();
  for (int64_t i = t.numel() - 1; i > 0; --i) std::swap(p[i], p[static_cast<int64_t>(rng.below(i + 1))]);
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] * 0.1 - 1.0;
  return t;
}

NodeSpec pool_spec(const char* op, std::vector<int64_t> kernel, const Window& win = {},
                   std::vector<std::pair<std::string, Attribute>> extra = {}) {
  auto attrs = window_attrs(win);
  attrs.push_back({"kernel_shape", attr_ints(std::move(kernel))});
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return node_spec(op, attrs);
}

TEST(MaxPool, TakesWindowMaximaAndRowMajorIndices) {
  Tensor x = iota({1, 1, 5, 5});
  NodeSpec spec = pool_spec("MaxPool", {2, 2}, {{2, 2}, {}, {}});
  spec.num_outputs = 2;
  auto out = run_node(spec, {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 2, 2}, {7, 9, 17, 19}), out[0]));
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({1, 1, 2, 2}, {6, 8, 16, 18}), out[1]));
}

// A tie goes to the window's first maximum (PyTorch's rule, in conv_pool.cpp's takes_over), in the indices and in
// the gradient of both backward paths: the differential tests below share that rule and cannot see it change.
TEST(MaxPool, ATieGoesToTheFirstMaximum) {
  const Tensor x = Tensor::from<float>({1, 1, 2, 4}, {5, 5, 1, 7, 5, 5, 7, 7});
  NodeSpec with_indices = pool_spec("MaxPool", {2, 2}, {{2, 2}, {}, {}});
  with_indices.num_outputs = 2;
  auto out = run_node(with_indices, {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({1, 1, 1, 2}, {0, 3}), out[1]));
  const Tensor first = Tensor::from<float>({1, 1, 2, 4}, {1, 0, 0, 1, 0, 0, 0, 0});
  for (const NodeSpec& spec : {pool_spec("MaxPool", {2, 2}, {{2, 2}, {}, {}}), with_indices}) {
    auto grads = gradients_of(spec, {x});
    ASSERT_EQ(grads.size(), 1u);
    EXPECT_TRUE(tensors_close(first, grads[0], 0, 0)) << spec.num_outputs << " outputs";
  }
}

TEST(MaxPool, ColumnMajorIndicesWithStorageOrder) {
  NodeSpec spec = pool_spec("MaxPool", {2, 2}, {{2, 2}, {}, {}}, {{"storage_order", attr_int(1)}});
  spec.num_outputs = 2;
  auto out = run_node(spec, {iota({2, 1, 5, 5})});
  ASSERT_EQ(out.size(), 2u);
  // Second batch item: flat offsets include the 25 elements of the first.
  EXPECT_TRUE(tensors_close(Tensor::from<int64_t>({2, 1, 2, 2}, {6, 16, 8, 18, 31, 41, 33, 43}), out[1]));
}

TEST(MaxPool, PadsCeilModeAndDilations) {
  Tensor x = iota({1, 1, 4, 4});
  auto out = run_node(pool_spec("MaxPool", {3, 3}, {{2, 2}, {}, {}}, {{"ceil_mode", attr_int(1)}}), {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 2, 2}, {11, 12, 15, 16}), out[0]));
  out = run_node(pool_spec("MaxPool", {2, 2}, {{1, 1}, {}, {2, 2}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 2, 2}, {11, 12, 15, 16}), out[0]));
  out = run_node(pool_spec("MaxPool", {3, 3}, {{}, {1, 1, 1, 1}, {}}), {x});
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(out[0].get_as_double(0), 6.0);
  EXPECT_EQ(out[0].get_as_double(15), 16.0);
}

TEST(MaxPool, CeilModeDropsAWindowStartingInTheEndPadding) {
  // in 5, pad 1+1, k 2, s 2: ceil((5 + 2 − 2) / 2) + 1 = 4, but the 4th window would start at 6 ≥ 5 + 1.
  auto out = run_node(pool_spec("MaxPool", {2}, {{2}, {1, 1}, {}}, {{"ceil_mode", attr_int(1)}}), {iota({1, 1, 5})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 3}, {1, 3, 5}), out[0]));
}

TEST(MaxPool, AutoPadSame) {
  auto out = run_node(pool_spec("MaxPool", {3, 3}, {{2, 2}, {}, {}}, {{"auto_pad", attr_string("SAME_UPPER")}}),
                      {iota({1, 1, 5, 5})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25}), out[0]));
}

TEST(MaxPool, NaNInTheWindowWins) {
  auto out = run_node(pool_spec("MaxPool", {2}, {}, {}), {Tensor::from<float>({1, 1, 4}, {1, NAN, 3, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].get_as_double(0)));
  EXPECT_TRUE(std::isnan(out[0].get_as_double(1)));
  EXPECT_EQ(out[0].get_as_double(2), 3.0);
}

// MaxPool `values` (one output) against the same node with its indices output: the same values, NaN where it has
// NaN. Returns how many outputs there are.
int64_t expect_values_match_the_argmax_path(const NodeSpec& values, const Tensor& x) {
  NodeSpec with_indices = values;
  with_indices.num_outputs = 2;
  auto a = run_node(values, {x});
  auto b = run_node(with_indices, {x});
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  if (a.size() != 1 || b.size() != 2 || a[0].shape() != b[0].shape()) {
    ADD_FAILURE() << "outputs differ in number or shape";
    return 0;
  }
  for (int64_t i = 0; i < a[0].numel(); ++i) {
    const float u = a[0].data<float>()[i], v = b[0].data<float>()[i];
    EXPECT_TRUE(u == v || (std::isnan(u) && std::isnan(v))) << "output " << i << ": " << u << " vs " << v;
  }
  return a[0].numel();
}

// Without the indices output, MaxPool keeps the values only (a direct 2-D loop); they must be those the argmax
// path gives, NaN and padding and ceil_mode included.
TEST(MaxPool, ValuesAloneMatchTheArgmaxPath) {
  Rng rng(141);
  Tensor x = random_tensor(rng, {2, 3, 9, 11}, -1, 1, DType::Float32);
  x.data<float>()[17] = NAN;
  x.data<float>()[200] = NAN;
  const Window windows[] = {{{2, 2}, {1, 1, 1, 1}, {}}, {{2, 1}, {0, 2, 1, 0}, {1, 2}}, {{1, 3}, {}, {2, 1}}};
  for (const Window& win : windows) {
    for (int ceil : {0, 1})
      expect_values_match_the_argmax_path(pool_spec("MaxPool", {3, 3}, win, {{"ceil_mode", attr_int(ceil)}}), x);
  }
}

// Without the indices output, MaxPool keeps its values alone, and its backward on 2×2 windows at stride 2 searches
// each window again instead of reading an argmax: the values must be the argmax path's and the gradient must go where
// it sends it, ties (the first maximum in the window) and NaN (the last) included, an odd image's last row and column
// zero. The other windows (padding, ceil_mode, dilation, overlap) take the argmax path in the backward.
TEST(MaxPoolGradient, ValuesAloneGoWhereTheArgmaxSends) {
  Rng rng(142);
  Tensor x = random_tensor(rng, {2, 3, 9, 11}, 0, 3, DType::Float32);
  for (float& v : x.span<float>()) v = std::floor(v);  // few distinct values: windows with tied maxima
  x.data<float>()[17] = NAN;
  x.data<float>()[200] = NAN;
  x.data<float>()[201] = NAN;
  const Window windows[] = {{{2, 2}, {}, {}}, {{2, 2}, {1, 1, 1, 1}, {}}, {{2, 1}, {0, 2, 1, 0}, {1, 2}},
                            {{1, 1}, {}, {}}};
  for (const Window& win : windows) {
    for (int ceil : {0, 1}) {
      NodeSpec values = pool_spec("MaxPool", {2, 2}, win, {{"ceil_mode", attr_int(ceil)}});
      NodeSpec with_indices = values;
      with_indices.num_outputs = 2;
      const int64_t outputs = expect_values_match_the_argmax_path(values, x);
      auto a = gradients_of(values, {x});
      auto b = gradients_of(with_indices, {x});
      ASSERT_EQ(a.size(), 1u);
      ASSERT_EQ(b.size(), 1u);
      ASSERT_EQ(a[0].shape(), b[0].shape());
      double total = 0;  // each output's gradient of 1 went somewhere
      for (float v : a[0].span<float>()) total += v;
      EXPECT_EQ(total, static_cast<double>(outputs));
      for (int64_t i = 0; i < a[0].numel(); ++i)
        EXPECT_EQ(a[0].data<float>()[i], b[0].data<float>()[i]) << "element " << i << ", ceil_mode " << ceil;
    }
  }
}

TEST(MaxPool, IntegerInput) {
  Tensor x = Tensor::from<uint8_t>({1, 1, 2, 2}, {3, 200, 7, 1});
  auto out = run_node(pool_spec("MaxPool", {2, 2}), {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<uint8_t>({1, 1, 1, 1}, {200}), out[0]));
}

TEST(MaxPool, RejectsMissingKernelAndBadPads) {
  Rng rng(140);
  Tensor x = random_tensor(rng, {1, 1, 4, 4});
  EXPECT_FALSE(try_run_node(node_spec("MaxPool"), {x}).is_ok());
  EXPECT_FALSE(try_run_node(pool_spec("MaxPool", {2, 2}, {{}, {1, 1}, {}}), {x}).is_ok());
  EXPECT_FALSE(try_run_node(pool_spec("MaxPool", {2, 2}, {{}, {-1, 0, 0, 0}, {}}), {x}).is_ok());
  EXPECT_FALSE(try_run_node(pool_spec("MaxPool", {5, 5}), {x}).is_ok());
}

TEST(MaxPoolGradient, GoesToTheArgmax) {
  expect_gradient_matches(pool_spec("MaxPool", {3, 2}, {{2, 1}, {1, 0, 1, 1}, {}}), {distinct_values({2, 2, 5, 4}, 1)});
  expect_gradient_matches(pool_spec("MaxPool", {2, 2}, {{1, 1}, {}, {2, 1}}, {{"ceil_mode", attr_int(1)}}),
                          {distinct_values({1, 2, 5, 5}, 2)});
  expect_gradient_matches(pool_spec("MaxPool", {2, 2, 2}), {distinct_values({1, 1, 3, 3, 3}, 3)});
}

TEST(MaxPoolGradient, OverlappingWindowsAccumulate) {
  // x[1] is the maximum of both windows: its gradient is the sum of theirs.
  expect_gradient_matches(pool_spec("MaxPool", {2}), {Tensor::from<double>({1, 1, 3}, {0.1, 0.9, 0.2})});
}

TEST(AveragePool, ExcludesPaddingUnlessAsked) {
  Tensor x = iota({1, 1, 3, 3});
  auto out = run_node(pool_spec("AveragePool", {2, 2}, {{}, {1, 1, 0, 0}, {}}), {x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 3, 3}, {1, 1.5, 2.5, 2.5, 3, 4, 5.5, 6, 7}), out[0]));
  out = run_node(pool_spec("AveragePool", {2, 2}, {{}, {1, 1, 0, 0}, {}}, {{"count_include_pad", attr_int(1)}}), {x});
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 3, 3}, {0.25, 0.75, 1.25, 1.25, 3, 4, 2.75, 6, 7}), out[0]));
}

TEST(AveragePool, CeilModeCountsOnlyTheInputPart) {
  auto out =
      run_node(pool_spec("AveragePool", {3, 3}, {{2, 2}, {}, {}}, {{"ceil_mode", attr_int(1)}}), {iota({1, 1, 4, 4})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(tensors_close(Tensor::from<double>({1, 1, 2, 2}, {6, 7.5, 12, 13.5}), out[0]));
}

TEST(AveragePoolGradient, SharesEquallyOverTheWindow) {
  Rng rng(150);
  expect_gradient_matches(pool_spec("AveragePool", {3, 2}, {{2, 1}, {1, 1, 1, 0}, {}}),
                          {random_tensor(rng, {2, 2, 5, 4})});
  expect_gradient_matches(
      pool_spec("AveragePool", {3, 2}, {{2, 1}, {1, 1, 1, 0}, {}}, {{"count_include_pad", attr_int(1)}}),
      {random_tensor(rng, {1, 2, 5, 4})});
  expect_gradient_matches(pool_spec("AveragePool", {3}, {{2}, {}, {}}, {{"ceil_mode", attr_int(1)}}),
                          {random_tensor(rng, {2, 1, 6})});
}

TEST(GlobalPool, ReducesEverySpatialDimension) {
  Tensor x = iota({2, 3, 2, 2});
  auto avg = run_node(node_spec("GlobalAveragePool"), {x});
  auto max = run_node(node_spec("GlobalMaxPool"), {x});
  ASSERT_EQ(avg.size(), 1u);
  ASSERT_EQ(max.size(), 1u);
  ASSERT_EQ(avg[0].shape(), (Shape{2, 3, 1, 1}));
  for (int64_t p = 0; p < 6; ++p) {
    EXPECT_DOUBLE_EQ(avg[0].get_as_double(p), 4.0 * static_cast<double>(p) + 2.5);
    EXPECT_DOUBLE_EQ(max[0].get_as_double(p), 4.0 * static_cast<double>(p) + 4.0);
  }
  auto one_d = run_node(node_spec("GlobalMaxPool"), {iota({1, 2, 3})});
  ASSERT_EQ(one_d[0].shape(), (Shape{1, 2, 1}));
}

TEST(GlobalPoolGradient, AverageAndMax) {
  Rng rng(160);
  expect_gradient_matches(node_spec("GlobalAveragePool"), {random_tensor(rng, {2, 3, 3, 2})});
  expect_gradient_matches(node_spec("GlobalMaxPool"), {distinct_values({2, 3, 3, 2}, 4)});
}

TEST(ConvPoolSteadyState, RepeatedPassesAllocateNothing) {
  Rng rng(170);
  Tensor x = random_tensor(rng, {2, 4, 7, 7}, -1, 1, DType::Float32);
  // Backward from every float output, each seeded with its own value; two passes after the first.
  constexpr BackwardFrom kEveryFloatOutput = BackwardFrom::FloatOutputsSeededWithValues;
  EXPECT_EQ(allocations_after_first_pass(node_spec("Conv", window_attrs({{2, 1}, {1, 1, 1, 1}, {}, 2})),
                                         {x, random_tensor(rng, {6, 2, 3, 3}, -1, 1, DType::Float32),
                                          random_tensor(rng, {6}, -1, 1, DType::Float32)},
                                         kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(allocations_after_first_pass(node_spec("ConvTranspose", window_attrs({{2, 2}, {1, 0, 0, 1}, {}})),
                                         {x, random_tensor(rng, {4, 3, 3, 3}, -1, 1, DType::Float32)},
                                         kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(allocations_after_first_pass(pool_spec("MaxPool", {3, 3}, {{2, 2}, {1, 1, 1, 1}, {}}), {x},
                                         kEveryFloatOutput, 2),
            0u);
  EXPECT_EQ(allocations_after_first_pass(pool_spec("AveragePool", {3, 3}, {{2, 2}, {1, 1, 1, 1}, {}}), {x},
                                         kEveryFloatOutput, 2),
            0u);
}

// A depthwise weight gradient's padding terms are 0 · dy: NaN where dy is infinite, as in the im2col path and the
// frameworks. Channel 0's dy is +inf at output (0, 0), whose 3×3 window (pad 1) reads padding at the taps of its
// first row and column: those weight gradients are NaN, the four others +inf (x > 0), and channel 1's finite.
TEST(DepthwiseBackward, PaddingTermsMeetingAnInfiniteGradientAreNaN) {
  Tensor scale(DType::Float32, Shape{1, 2, 4, 4});
  for (float& v : scale.span<float>()) v = 1.0f;
  scale.data<float>()[0] = std::numeric_limits<float>::infinity();
  Tensor x(DType::Float32, Shape{1, 2, 4, 4}), w(DType::Float32, Shape{2, 1, 3, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.5f + 0.01f * static_cast<float>(i);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i % 5 + 1);
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 2, 4, 4})
                .constant("w", w)
                .constant("scale", scale)
                .node("Conv", {"x", "w"}, {"y"},
                      {{"group", attr_int(2)}, {"pads", attr_ints({1, 1, 1, 1})}, {"kernel_shape", attr_ints({3, 3})}})
                .node("Mul", {"y", "scale"}, {"z"})
                .node("ReduceSum", {"z"}, {"loss"}, {{"keepdims", attr_int(0)}})
                .output("loss")
                .build();
  auto ex = Executor::create(g, {});
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  ASSERT_TRUE(ex->set_input("x", x).is_ok());
  ASSERT_TRUE(ex->forward().is_ok());
  ASSERT_TRUE(ex->backward(g.find_value("loss")).is_ok());
  const Tensor* dw = ex->grad(g.find_value("w"));
  ASSERT_NE(dw, nullptr);
  for (int64_t tap = 0; tap < 9; ++tap) {
    const float v = dw->data<float>()[tap];
    if (tap / 3 == 0 || tap % 3 == 0) {
      EXPECT_TRUE(std::isnan(v)) << "tap " << tap << ": " << v;
    } else {
      EXPECT_EQ(v, std::numeric_limits<float>::infinity()) << "tap " << tap;
    }
    EXPECT_TRUE(std::isfinite(dw->data<float>()[9 + tap])) << "channel 1, tap " << tap;
  }
}

// A depthwise conv and a max pool on small grids keep their offset tables in the node's scratch across passes: a
// pass on another image size must work its own out. The same executor over 5×5, 7×7 and 5×5 images gives what a
// fresh executor gives each time, bit for bit.
TEST(OffsetTables, AnotherImageSizeInTheSameExecutorGetsItsOwn) {
  Tensor w(DType::Float32, Shape{16, 1, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  Graph g = GraphBuilder()
                .input("x", DType::Float32, {1, 16, -1, -1})
                .constant("w", w)
                .node("Conv", {"x", "w"}, {"y"},
                      {{"group", attr_int(16)}, {"pads", attr_ints({1, 1, 1, 1})}, {"kernel_shape", attr_ints({3, 3})}})
                .node("MaxPool", {"y"}, {"z"},
                      {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 1})}})
                .output("z")
                .build();
  auto image = [](int64_t side) {
    Tensor x(DType::Float32, Shape{1, 16, side, side});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 23) / 5.0f - 2.0f;
    return x;
  };
  auto reused = Executor::create(g, {});
  ASSERT_TRUE(reused.is_ok()) << reused.message();
  for (int64_t side : {5, 7, 5}) {
    SCOPED_TRACE(side);
    auto fresh = Executor::create(g, {});
    ASSERT_TRUE(fresh.is_ok());
    for (Executor* ex : {&*reused, &*fresh}) {
      ASSERT_TRUE(ex->set_input("x", image(side)).is_ok());
      ASSERT_TRUE(ex->forward().is_ok());
    }
    const Tensor &a = reused->value(g.find_value("z")), &b = fresh->value(g.find_value("z"));
    ASSERT_EQ(a.shape(), b.shape());
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  }
}

}  // namespace
}  // namespace grist::testing
