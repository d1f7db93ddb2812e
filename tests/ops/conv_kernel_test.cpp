// Conv's kernels (ops/conv_kernels.h: dot_product_rows, tile_product) and the Conv paths that use them, against naive sums in double: odd
// sizes (m, k, p off the register blocks and the SIMD width), NaN and infinities, which must come out exactly where
// a plain dot product puts them (a zero weight times an infinity is NaN: no term may be skipped), and denormals,
// which must not be flushed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/conv_kernels.h"
#include "util/eigen.h"
#include "support/op_test_util.h"

namespace grist::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A kernel output against the reference: the same NaN or infinity, else within `tol` of the sum of |terms|.
void expect_matches(double got, double want, double magnitude, double tol, const std::string& where) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << where << ": " << got << ", want NaN";
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << where;
  } else {
    EXPECT_NEAR(got, want, tol * (magnitude + 1e-30)) << where;
  }
}

enum class Kernel { DotProductRows, TileProduct };

// y (m × p) = start + w (m × k) · tᵀ through either kernel (start: one value per row, or null for 0): tile_product
// gets b = tᵀ (k × p) with rows `pad` wider than p, y too (padding that a kernel running past its n columns would
// change), so that reading rows `n` apart shows too. y comes in holding a sentinel: the kernels write, not add.
template <class T>
void run_kernel(Kernel kernel, const std::vector<T>& w, const std::vector<T>& t, int64_t m, int64_t k, int64_t p,
                const T* start, std::vector<T>& y) {
  const T sentinel = 12345;
  std::fill(y.begin(), y.end(), sentinel);
  if (kernel == Kernel::DotProductRows) return dot_product_rows(w.data(), t.data(), m, k, p, start, y.data());
  const int64_t pad = 3, ld = p + pad;
  std::vector<T> b(static_cast<size_t>(k * ld), T(1)), wide(static_cast<size_t>(m * ld), sentinel);
  for (int64_t c = 0; c < k; ++c)
    for (int64_t j = 0; j < p; ++j) b[static_cast<size_t>(c * ld + j)] = t[static_cast<size_t>(j * k + c)];
  tile_product(w.data(), b.data(), ld, m, k, p, start, wide.data(), ld);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < p; ++j) y[static_cast<size_t>(i * p + j)] = wide[static_cast<size_t>(i * ld + j)];
    for (int64_t j = p; j < ld; ++j) EXPECT_EQ(wide[static_cast<size_t>(i * ld + j)], sentinel) << "wrote past n";
  }
}

template <class T>
void check_kernel(Kernel kernel, int64_t m, int64_t k, int64_t p, Rng& rng, bool specials) {
  std::vector<T> w(static_cast<size_t>(m * k)), t(static_cast<size_t>(p * k)), y(static_cast<size_t>(m * p));
  std::vector<T> start(static_cast<size_t>(m));
  auto uniform = [&] { return static_cast<T>(static_cast<double>(rng.next() % 2001) / 1000.0 - 1.0); };
  for (T& v : w) v = uniform();
  for (T& v : t) v = uniform();
  for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<T>(i % 7) - 3;  // each row's sums start there
  // Every other case without start values (Conv without a bias): the sums start from 0.
  const bool with_start = rng.next() % 2 == 0;
  if (!with_start) std::fill(start.begin(), start.end(), T(0));
  if (specials) {
    // Infinities and NaN in t, at positions in and out of the vectorised part; zero weights in the same columns of
    // some rows (0 · inf = NaN), and opposite infinities in one row (inf − inf = NaN).
    const double values[] = {kInf, -kInf, kNaN};
    for (int s = 0; s < 3; ++s) {
      const int64_t j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(p));
      const int64_t c = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(k));
      t[static_cast<size_t>(j * k + c)] = static_cast<T>(values[s]);
      for (int64_t i = 0; i < m; i += 2) w[static_cast<size_t>(i * k + c)] = 0;
    }
    w[static_cast<size_t>((m - 1) * k)] = static_cast<T>(kInf);
    w[static_cast<size_t>((m - 1) * k + k - 1)] = static_cast<T>(k > 1 ? -kInf : kInf);
  }
  run_kernel(kernel, w, t, m, k, p, with_start ? start.data() : nullptr, y);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < p; ++j) {
      double sum = static_cast<double>(start[static_cast<size_t>(i)]), magnitude = std::fabs(sum);
      for (int64_t c = 0; c < k; ++c) {
        const double term = static_cast<double>(w[static_cast<size_t>(i * k + c)]) *
                            static_cast<double>(t[static_cast<size_t>(j * k + c)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      expect_matches(static_cast<double>(y[static_cast<size_t>(i * p + j)]), sum, magnitude, tol,
                     fmt::format("{} m={} k={} p={} y[{}, {}]", kernel == Kernel::TileProduct ? "tile" : "dot", m, k, p, i, j));
    }
}

TEST(ConvKernel, DotProductRowsMatchesNaiveSums) {
  Rng rng(7);
  for (int64_t m : {1, 2, 3, 4, 5, 7, 9, 13})
    for (int64_t k : {1, 3, 8, 15, 16, 17, 33, 64, 147})
      for (int64_t p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17}) {
        check_kernel<float>(Kernel::DotProductRows, m, k, p, rng, false);
        check_kernel<double>(Kernel::DotProductRows, m, k, p, rng, false);
      }
}

TEST(ConvKernel, DotProductRowsPropagatesNaNAndInfinities) {
  Rng rng(11);
  for (int64_t m : {1, 2, 4, 5, 9})
    for (int64_t k : {1, 7, 16, 17, 40})
      for (int64_t p : {1, 3, 4, 5, 9, 10}) {
        check_kernel<float>(Kernel::DotProductRows, m, k, p, rng, true);
        check_kernel<double>(Kernel::DotProductRows, m, k, p, rng, true);
      }
}

// Tiles of 8 (or, with 16 vector registers, 6) rows × 2 packets (32 floats or 16 doubles with AVX-512), the rows
// left over in blocks of 4, 2 and 1, then single packets, then single columns: m and n around each boundary.
TEST(ConvKernel, TileProductMatchesNaiveSums) {
  Rng rng(13);
  for (int64_t m : {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17})
    for (int64_t k : {1, 2, 9, 31})
      for (int64_t p : {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 65}) {
        check_kernel<float>(Kernel::TileProduct, m, k, p, rng, false);
        check_kernel<double>(Kernel::TileProduct, m, k, p, rng, false);
      }
}

TEST(ConvKernel, TileProductPropagatesNaNAndInfinities) {
  Rng rng(17);
  for (int64_t m : {1, 5, 8, 9})
    for (int64_t k : {1, 6, 17})
      for (int64_t p : {1, 7, 16, 33, 50}) {
        check_kernel<float>(Kernel::TileProduct, m, k, p, rng, true);
        check_kernel<double>(Kernel::TileProduct, m, k, p, rng, true);
      }
}

// Whatever tile an output falls in (8, 6, 4, 2 or 1 rows; 1 to 3 packets, masked or not), its sum is the same
// one, bit for bit: the start value, then each term added in k's order with one multiply-add (a multiply then an
// add where the target has no FMA). The in-place and fused passes, and the first-producer reports, rely on that.
// Long rows (k of 2,100 and more) split the columns into panels of a few tiles: the same sums again.
TEST(ConvKernel, TileProductSumsEveryOutputInTheSameOrder) {
  Rng rng(19);
  auto uniform = [&] { return static_cast<float>(static_cast<double>(rng.next() % 20001) / 7919.0 - 1.3); };
  auto check = [&](int64_t m, int64_t k, int64_t n) {
        std::vector<float> w(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
        std::vector<float> start(static_cast<size_t>(m));
        for (float& v : w) v = uniform();
        for (float& v : b) v = uniform();
        for (float& v : start) v = uniform();
        std::vector<float> y(static_cast<size_t>(m * n));
        tile_product(w.data(), b.data(), n, m, k, n, start.data(), y.data(), n);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t q = 0; q < n; ++q) {
            float sum = start[static_cast<size_t>(r)];
            for (int64_t c = 0; c < k; ++c) {
              const float a = w[static_cast<size_t>(r * k + c)], x = b[static_cast<size_t>(c * n + q)];
#ifdef EIGEN_VECTORIZE_FMA
              sum = std::fma(a, x, sum);
#else
              sum = sum + a * x;
#endif
            }
            ASSERT_EQ(y[static_cast<size_t>(r * n + q)], sum)
                << fmt::format("m={} k={} n={} y[{}, {}]", m, k, n, r, q);
          }
  };
  for (int64_t m : {1, 2, 4, 5, 6, 7, 10, 12, 15, 16, 23})
    for (int64_t k : {1, 5, 19})
      for (int64_t n : {1, 7, 8, 9, 16, 17, 24, 25, 33, 40, 41, 57}) check(m, k, n);
  for (int64_t m : {5, 13})
    for (int64_t k : {2100, 4500})
      for (int64_t n : {17, 40, 57}) check(m, k, n);
}

TEST(ConvKernel, DotProductRowsKeepsDenormals) {
  // Products and sums that stay denormal: flushed to zero they would read as 0.
  const float tiny = std::numeric_limits<float>::denorm_min() * 1024;
  for (int64_t k : {1, 16, 17}) {
    std::vector<float> w(static_cast<size_t>(k), 0.5f), t(static_cast<size_t>(k), tiny);
    float y = 1;
    dot_product_rows<float>(w.data(), t.data(), 1, k, 1, nullptr, &y);
    EXPECT_EQ(y, static_cast<float>(k) * tiny * 0.5f) << "k=" << k;
    std::vector<float> tw(static_cast<size_t>(k), tiny), one(static_cast<size_t>(k), 1.0f);
    y = 1;
    dot_product_rows<float>(tw.data(), one.data(), 1, k, 1, nullptr, &y);
    EXPECT_EQ(y, static_cast<float>(k) * tiny) << "k=" << k;
  }
}

// ---------------------------------------------------------------------------------------------------
// The Conv op, 2-D, against a naive convolution in double.

struct ConvCase {
  const char* name;
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
};

std::vector<double> naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b,
                               std::vector<double>& magnitude, Shape& out_shape) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], wd = c.x[3], m = c.w[0], cg = c.w[1], kh = c.w[2], kw = c.w[3];
  const int64_t oh = (h + c.pads[0] + c.pads[2] - ((kh - 1) * c.dilations[0] + 1)) / c.strides[0] + 1;
  const int64_t ow = (wd + c.pads[1] + c.pads[3] - ((kw - 1) * c.dilations[1] + 1)) / c.strides[1] + 1;
  out_shape = Shape{n, m, oh, ow};
  std::vector<double> y(static_cast<size_t>(n * m * oh * ow));
  magnitude.assign(y.size(), 0);
  const int64_t per_group = m / c.group;
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = b.get_as_double(o), mag = std::fabs(sum);
          const int64_t g = o / per_group;
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t ih = i * c.strides[0] - c.pads[0] + a * c.dilations[0];
                const int64_t iw = j * c.strides[1] - c.pads[1] + e * c.dilations[1];
                const double wv = w.get_as_double(((o * cg + cc) * kh + a) * kw + e);
                // Padding is a zero input: it still multiplies the weight (an infinite weight gives NaN there).
                const double xv =
                    ih < 0 || ih >= h || iw < 0 || iw >= wd ? 0.0
                                                            : x.get_as_double(((b0 * ch + g * cg + cc) * h + ih) * wd + iw);
                sum += wv * xv;
                mag += std::fabs(wv * xv);
              }
          const auto at = static_cast<size_t>(((b0 * m + o) * oh + i) * ow + j);
          y[at] = sum;
          magnitude[at] = mag;
        }
  return y;
}

void set_element(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::Float32) {
    t.data<float>()[i] = static_cast<float>(v);
  } else {
    t.data<double>()[i] = v;
  }
}

// With `bias` false the node has no B input (the kernels' sums then start from 0, the reference's from b = 0).
void check_conv(const ConvCase& c, DType dtype, bool specials, bool bias = true) {
  Rng rng(23);
  Tensor x = random_tensor(rng, c.x, -1, 1, dtype), w = random_tensor(rng, c.w, -1, 1, dtype);
  Tensor b = random_tensor(rng, {c.w[0]}, -1, 1, dtype);
  if (!bias) {
    for (int64_t i = 0; i < b.numel(); ++i) set_element(b, i, 0.0);
  } else if (specials) {
    set_element(b, b.numel() - 1, -kInf);  // the last channel's sums start from −inf
  }
  if (specials) {
    const double values[] = {kNaN, kInf, -kInf};
    for (int i = 0; i < 6; ++i) {
      const auto at = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(x.numel()));
      set_element(x, at, values[i % 3]);
    }
    // Zero weights: each meets the infinities above in some window, where its product must be NaN.
    for (int64_t i = 0; i < w.numel(); i += 3) set_element(w, i, 0.0);
    // An infinite weight: where its window reads padding, the zero there times it is NaN (padding is multiplied in).
    set_element(w, 1 % w.numel(), kInf);
  }
  std::vector<double> magnitude;
  Shape shape;
  const std::vector<double> want = naive_conv(c, x, w, b, magnitude, shape);
  auto out = run_node(node_spec("Conv", {{"group", attr_int(c.group)},
                                         {"strides", attr_ints(c.strides)},
                                         {"pads", attr_ints(c.pads)},
                                         {"dilations", attr_ints(c.dilations)}}),
                      bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), shape) << c.name;
  const double tol = dtype == DType::Float32 ? 1e-5 : 1e-13;
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    nonfinite += !std::isfinite(want[static_cast<size_t>(i)]);
    expect_matches(out[0].get_as_double(i), want[static_cast<size_t>(i)], magnitude[static_cast<size_t>(i)], tol,
                   fmt::format("{} {} output {}", c.name, dtype_name(dtype), i));
  }
  EXPECT_EQ(nonfinite > 0, specials) << c.name;
}

std::vector<ConvCase> conv_cases() {
  return {
      // Grids of 1 to 9 points and beyond (the dot-product kernel's and the GEMM's), k off the SIMD width.
      {"grid1", {1, 7, 1, 1}, {5, 7, 1, 1}},
      {"grid2_3x3_pad", {1, 13, 1, 2}, {9, 13, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},
      {"grid4_strided", {2, 19, 4, 4}, {6, 19, 3, 3}, 1, {2, 2}, {1, 1, 1, 1}},
      {"grid6_asym_pad", {1, 10, 2, 3}, {11, 10, 2, 2}, 1, {1, 1}, {1, 0, 0, 1}},
      {"grid9", {1, 33, 3, 3}, {17, 33, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},
      // Every grid of 5 to 9 points (one block of all the points), odd m for the single-row remainder.
      {"grid5", {1, 20, 1, 5}, {5, 20, 1, 1}},
      {"grid7", {1, 35, 1, 7}, {3, 35, 1, 1}},
      {"grid8", {1, 17, 2, 4}, {7, 17, 1, 1}},
      {"grid12", {1, 5, 3, 4}, {7, 5, 1, 1}},
      {"grid25_dilated", {1, 6, 9, 9}, {10, 6, 3, 3}, 1, {1, 1}, {0, 0, 0, 0}, {2, 2}},
      // im2col through the offset table (<= 256 point × kernel-offset pairs): 16 and 32 points (one and two gathers
      // of 16 with AVX-512) with padding on every side or on two, and 20 points (the scalar loop).
      {"table_grid16_3x3_pad", {1, 9, 4, 4}, {10, 9, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},
      {"table_grid32_strided_pad", {1, 5, 8, 16}, {6, 5, 2, 2}, 1, {2, 2}, {1, 0, 0, 1}},
      {"table_grid20_pad", {2, 3, 4, 5}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},
      // Stride 1 "same" convolutions (im2col copies whole kernel-offset rows at once): dilated, asymmetric pads,
      // a kernel column entirely in the padding, a grid of one row.
      {"same_dilated", {1, 3, 7, 5}, {4, 3, 3, 3}, 1, {1, 1}, {2, 2, 2, 2}, {2, 2}},
      {"same_asym", {1, 4, 5, 6}, {3, 4, 2, 2}, 1, {1, 1}, {0, 1, 1, 0}},
      {"same_wide_pad", {1, 2, 3, 2}, {5, 2, 3, 5}, 1, {1, 1}, {1, 2, 1, 2}},
      {"same_one_row", {1, 6, 1, 9}, {4, 6, 1, 3}, 1, {1, 1}, {0, 1, 0, 1}},
      {"grid64_pointwise_strided", {1, 16, 15, 15}, {8, 16, 1, 1}, 1, {2, 2}},
      // Stride 2 along rows (im2col's 16-wide gathers, masked at the ends of each row's range): conv1's 7×7 with
      // pads of 3, and rows of 1 to 40 outputs, the last one read at the image's last column.
      {"stride2_7x7", {1, 3, 40, 67}, {4, 3, 7, 7}, 1, {2, 2}, {3, 3, 3, 3}},
      {"stride2_rows", {1, 2, 3, 81}, {3, 2, 1, 3}, 1, {1, 2}, {0, 0, 0, 0}},
      {"stride2_narrow", {1, 2, 6, 3}, {3, 2, 2, 3}, 1, {1, 2}, {0, 1, 0, 1}},
      {"grouped_grid4", {1, 12, 2, 2}, {9, 4, 3, 3}, 3, {1, 1}, {1, 1, 1, 1}},
      {"grouped_large", {1, 8, 7, 6}, {6, 4, 3, 3}, 2, {1, 1}, {1, 1, 1, 1}},
      // Depthwise: small grids (offsets per point worked out once), a channel multiplier, and a larger grid (phase
      // planes).
      {"depthwise", {1, 5, 6, 7}, {5, 1, 3, 3}, 5, {2, 1}, {1, 1, 1, 1}},
      {"depthwise_2x2_multiplier", {2, 4, 2, 2}, {8, 1, 3, 3}, 4, {1, 1}, {1, 1, 1, 1}},
      // Blocks of 16 planes (one across the batch items' boundary) and a remainder.
      {"depthwise_blocks_batch", {2, 19, 3, 3}, {19, 1, 3, 3}, 19, {1, 1}, {1, 1, 1, 1}},
      {"depthwise_blocks_strided", {1, 37, 5, 6}, {37, 1, 3, 3}, 37, {2, 2}, {1, 0, 1, 1}},
      {"depthwise_blocks_5x5_6x6", {1, 17, 6, 6}, {17, 1, 5, 5}, 17, {1, 1}, {2, 2, 2, 2}},
      {"depthwise_5x5_dilated", {1, 3, 4, 5}, {3, 1, 5, 5}, 3, {1, 1}, {4, 3, 4, 3}, {2, 1}},
      {"depthwise_phase_planes", {1, 3, 12, 13}, {3, 1, 3, 3}, 3, {1, 2}, {1, 1, 1, 1}},
      // Stride 2 on phase planes of 35 and 36 columns (deinterleave_row's 16-wide steps and its scalar end), the
      // padding filled once for the three planes.
      {"depthwise_phase_planes_stride2", {1, 3, 20, 71}, {3, 1, 3, 3}, 3, {2, 2}, {1, 1, 1, 1}},
      // Rows of 32 (mobilenet_v2's 32×32 layer): two 16-wide steps, no scalar end.
      {"depthwise_phase_planes_stride2_32", {1, 3, 40, 32}, {3, 1, 3, 3}, 3, {2, 2}, {1, 1, 1, 1}},
      // No padding on the left: the even image columns go to the first phase, not the second; 50 columns leave 2
      // after three 16-wide steps.
      {"depthwise_phase_planes_stride2_unpadded", {2, 3, 40, 50}, {3, 1, 3, 3}, 3, {2, 2}, {0, 0, 1, 1}},
  };
}

TEST(ConvKernel, ConvMatchesNaiveConvolution) {
  for (const ConvCase& c : conv_cases()) {
    check_conv(c, DType::Float32, false);
    check_conv(c, DType::Float64, false);
  }
}

TEST(ConvKernel, ConvPropagatesNaNAndInfinitiesLikeNaiveConvolution) {
  for (const ConvCase& c : conv_cases()) {
    check_conv(c, DType::Float32, true);
    check_conv(c, DType::Float64, true);
  }
}

TEST(ConvKernel, ConvWithoutBiasMatchesNaiveConvolution) {
  for (const ConvCase& c : conv_cases()) {
    check_conv(c, DType::Float32, false, false);
    check_conv(c, DType::Float32, true, false);
    check_conv(c, DType::Float64, true, false);
  }
}

// ---------------------------------------------------------------------------------------------------
// MaxPool (values only) on small grids, whose planes go 16 at once, against a naive max: a NaN anywhere in the
// window gives NaN, padding never wins.

struct PoolCase {
  const char* name;
  Shape x;
  std::vector<int64_t> kernel, strides, pads;
  int64_t ceil_mode = 0;
};

void check_max_pool(const PoolCase& c, DType dtype) {
  Rng rng(29);
  Tensor x = random_tensor(rng, c.x, -1, 1, dtype);
  const double values[] = {kNaN, kInf, -kInf};
  for (int i = 0; i < 9; ++i) set_element(x, static_cast<int64_t>(rng.next() % static_cast<uint64_t>(x.numel())),
                                          values[i % 3]);
  auto out = run_node(node_spec("MaxPool", {{"kernel_shape", attr_ints(c.kernel)},
                                            {"strides", attr_ints(c.strides)},
                                            {"pads", attr_ints(c.pads)},
                                            {"ceil_mode", attr_int(c.ceil_mode)}}),
                      {x});
  ASSERT_EQ(out.size(), 1u);
  const Shape& y = out[0].shape();
  const int64_t planes = c.x[0] * c.x[1], h = c.x[2], w = c.x[3], oh = y[2], ow = y[3];
  int64_t nan_outputs = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -kInf;
        bool nan = false;
        for (int64_t a = 0; a < c.kernel[0]; ++a)
          for (int64_t b = 0; b < c.kernel[1]; ++b) {
            const int64_t ih = i * c.strides[0] - c.pads[0] + a, iw = j * c.strides[1] - c.pads[1] + b;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const double v = x.get_as_double((p * h + ih) * w + iw);
            nan |= std::isnan(v);
            best = std::max(best, v);
          }
        const double got = out[0].get_as_double((p * oh + i) * ow + j);
        nan_outputs += nan;
        if (nan) {
          EXPECT_TRUE(std::isnan(got)) << c.name << " plane " << p << " (" << i << ", " << j << ")";
        } else {
          EXPECT_EQ(got, best) << c.name << " plane " << p << " (" << i << ", " << j << ")";
        }
      }
  EXPECT_GT(nan_outputs, 0) << c.name;
}

TEST(ConvKernel, MaxPoolOnSmallGridsMatchesNaiveMax) {
  const std::vector<PoolCase> cases = {
      // SqueezeNet's: 3×3 stride 2, ceil mode, 7×7 → 3×3; 38 planes (two blocks of 16 across the batch items, and a
      // remainder on the phase planes).
      {"ceil", {2, 19, 7, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1},
      {"padded", {1, 33, 5, 6}, {3, 3}, {1, 2}, {1, 1, 1, 0}},
      {"ceil_padded", {1, 16, 4, 4}, {2, 3}, {2, 2}, {1, 0, 0, 1}, 1},
      // Phase planes (3 planes, 10 × 36 points): stride 2 over 71 columns, ceil mode, padded with −inf.
      {"phase_planes_stride2", {1, 3, 20, 71}, {3, 3}, {2, 2}, {1, 1, 0, 0}, 1},
      {"phase_planes_stride2_unpadded", {2, 3, 20, 48}, {3, 3}, {2, 2}, {0, 0, 1, 1}},
  };
  for (const PoolCase& c : cases) {
    check_max_pool(c, DType::Float32);
    check_max_pool(c, DType::Float64);
  }
}

}  // namespace
}  // namespace grist::testing
