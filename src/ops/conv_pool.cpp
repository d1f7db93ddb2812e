// Convolution and pooling: Conv, ConvTranspose (im2col/col2im + one Eigen GEMM per batch item and group),
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, forward and backward, any spatial rank.
#include "util/eigen.h"
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "ops/conv_kernels.h"
#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "ops/transpose_block.h"
#include "util/thread_pool.h"

namespace grist {
namespace {

constexpr int kMaxSpatial = Shape::kMaxRank - 2;
using SpatialArray = std::array<int64_t, kMaxSpatial>;


// Attributes read in place: attr_ints would copy into a fresh vector on every call.
std::span<const int64_t> ints_attr(const Node& node, std::string_view key) {
  const Attribute* a = node.attr(key);
  return a ? std::span<const int64_t>(a->ints) : std::span<const int64_t>{};
}

std::string_view string_attr(const Node& node, std::string_view key, std::string_view fallback) {
  const Attribute* a = node.attr(key);
  return a ? std::string_view(a->s) : fallback;
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// The j in [0, count) with 0 <= first + j·step < limit form the range [lo, hi) (step > 0). Step 1 (no
// dilation) needs no division: inner loops call this once per output.
void valid_range(int64_t first, int64_t step, int64_t limit, int64_t count, int64_t& lo, int64_t& hi) {
  if (step == 1) {
    lo = std::max<int64_t>(0, -first);
    hi = std::max(lo, std::min(count, limit - first));
    return;
  }
  lo = std::max<int64_t>(0, ceil_div(-first, step));
  hi = std::max(lo, std::min(count, ceil_div(limit - first, step)));
}

// ---------------------------------------------------------------------------------------------------
// Window geometry, shared by every op here: a sliding window over an "image" (conv and pooling input,
// ConvTranspose output) placed at each point of a "grid" (conv and pooling output, ConvTranspose input).
// Grid point p covers image positions p·stride − pad_begin + k·dilation for kernel offsets k.

struct WindowGeometry {
  int rank = 0;  // spatial rank
  SpatialArray image{}, grid{}, kernel{}, stride{}, dilation{}, pad_begin{}, pad_end{};

  int64_t image_size() const { return product(image); }
  int64_t grid_size() const { return product(grid); }
  int64_t kernel_size() const { return product(kernel); }
  // Each grid point reads exactly the image element at its own position: im2col would be a copy.
  bool is_pointwise() const {
    for (int d = 0; d < rank; ++d)
      if (kernel[d] != 1 || stride[d] != 1 || pad_begin[d] != 0 || image[d] != grid[d]) return false;
    return true;
  }

 private:
  int64_t product(const SpatialArray& a) const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= a[d];
    return n;
  }
};

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

Status read_auto_pad(const Node& node, AutoPad& out) {
  std::string_view s = string_attr(node, "auto_pad", "NOTSET");
  if (s == "NOTSET") {
    out = AutoPad::NotSet;
  } else if (s == "VALID") {
    out = AutoPad::Valid;
  } else if (s == "SAME_UPPER") {
    out = AutoPad::SameUpper;
  } else if (s == "SAME_LOWER") {
    out = AutoPad::SameLower;
  } else {
    return node_error(node, fmt::format("unknown auto_pad '{}'", s));
  }
  return Status::ok();
}

// Copies an optional per-dimension attribute (default `fallback`, values >= `min_value`).
Status read_spatial_attr(const Node& node, std::string_view key, int rank, int64_t fallback, int64_t min_value,
                         SpatialArray& out) {
  std::span<const int64_t> v = ints_attr(node, key);
  if (!v.empty() && static_cast<int>(v.size()) != rank)
    return node_error(node, fmt::format("'{}' has {} values for {} spatial dimensions", key, v.size(), rank));
  for (int d = 0; d < rank; ++d) {
    out[d] = v.empty() ? fallback : v[static_cast<size_t>(d)];
    if (out[d] < min_value) return node_error(node, fmt::format("'{}' must be at least {}", key, min_value));
  }
  return Status::ok();
}

// Kernel (given), strides, dilations and explicit pads from the node's attributes.
Status read_window_attrs(const Node& node, int rank, std::span<const int64_t> kernel, WindowGeometry& g) {
  if (rank < 1 || rank > kMaxSpatial) return node_error(node, "needs an input of rank 3 or more");
  if (static_cast<int>(kernel.size()) != rank)
    return node_error(node, fmt::format("kernel has {} dimensions for {} spatial dimensions", kernel.size(), rank));
  g.rank = rank;
  for (int d = 0; d < rank; ++d) {
    g.kernel[d] = kernel[static_cast<size_t>(d)];
    if (g.kernel[d] < 1) return node_error(node, "kernel dimensions must be positive");
  }
  GRIST_TRY(read_spatial_attr(node, "strides", rank, 1, 1, g.stride));
  GRIST_TRY(read_spatial_attr(node, "dilations", rank, 1, 1, g.dilation));
  std::span<const int64_t> pads = ints_attr(node, "pads");
  if (!pads.empty() && static_cast<int>(pads.size()) != 2 * rank)
    return node_error(node, fmt::format("'pads' has {} values for {} spatial dimensions", pads.size(), rank));
  for (int d = 0; d < rank; ++d) {
    g.pad_begin[d] = pads.empty() ? 0 : pads[static_cast<size_t>(d)];
    g.pad_end[d] = pads.empty() ? 0 : pads[static_cast<size_t>(d + rank)];
    if (g.pad_begin[d] < 0 || g.pad_end[d] < 0) return node_error(node, "'pads' must not be negative");
  }
  return Status::ok();
}

int64_t dilated_extent(const WindowGeometry& g, int d) { return (g.kernel[d] - 1) * g.dilation[d] + 1; }

// Conv and pooling: the grid that slides the window over the image (g.image set), adjusting pads for auto_pad.
// ceil_mode keeps a last partial window, as long as it starts inside the image or its leading padding.
Status compute_grid(const Node& node, AutoPad auto_pad, bool ceil_mode, WindowGeometry& g) {
  for (int d = 0; d < g.rank; ++d) {
    const int64_t extent = dilated_extent(g, d), in = g.image[d], s = g.stride[d];
    if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
      g.grid[d] = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (g.grid[d] - 1) * s + extent - in);
      g.pad_begin[d] = auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      g.pad_end[d] = total - g.pad_begin[d];
      continue;
    }
    if (auto_pad == AutoPad::Valid) g.pad_begin[d] = g.pad_end[d] = 0;
    const int64_t span = in + g.pad_begin[d] + g.pad_end[d] - extent;
    if (span < 0)
      return node_error(node, fmt::format("the window ({} wide) is larger than the padded input ({}) in dimension {}",
                                          extent, in + g.pad_begin[d] + g.pad_end[d], d));
    g.grid[d] = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
    if (ceil_mode && (g.grid[d] - 1) * s >= in + g.pad_begin[d]) --g.grid[d];
  }
  return Status::ok();
}

void set_spatial(const Shape& s, SpatialArray& out) {
  for (int d = 2; d < s.rank(); ++d) out[d - 2] = s[d];
}

// [n, channels, spatial...]
Shape batch_channel_shape(int64_t n, int64_t channels, const WindowGeometry& g, const SpatialArray& spatial) {
  Shape s{n, channels};
  for (int d = 0; d < g.rank; ++d) s.push_back(spatial[d]);
  return s;
}

// ---------------------------------------------------------------------------------------------------
// im2col / col2im. The column matrix has one row per (channel, kernel offset) and one column per grid
// point: col[c·K + k, p] = image[c, p·stride − pad + k·dilation], 0 in the padding. Windows are read from
// "window planes": each channel in coordinates where the padded image starts at 0, either the image itself
// (when no window reaches into padding) or a zero-padded copy. No bounds checks remain, and each row of
// the column matrix is a strided block copy.

template <class T>
using ContiguousArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// Per dimension, how many padded positions the windows span.
SpatialArray window_extent(const WindowGeometry& g) {
  SpatialArray e{};
  for (int d = 0; d < g.rank; ++d) e[d] = (g.grid[d] - 1) * g.stride[d] + dilated_extent(g, d);
  return e;
}

bool windows_inside_image(const WindowGeometry& g) {
  const SpatialArray extent = window_extent(g);
  for (int d = 0; d < g.rank; ++d)
    if (g.pad_begin[d] != 0 || extent[d] > g.image[d]) return false;
  return true;
}

SpatialArray row_major_strides(const SpatialArray& dims, int rank) {
  SpatialArray st{};
  int64_t acc = 1;
  for (int d = rank - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= dims[d];
  }
  return st;
}

template <class T>
struct WindowPlanes {
  T* data;  // position 0 of channel 0
  int64_t channel_stride;
  SpatialArray dims, strides;
};

// Calls f(image_offset, plane_offset, length) for every last-dimension run of one channel shared by the
// image and a padded window plane of dims `extent` (plane position q holds image position q − pad_begin).
template <class F>
void for_each_shared_run(const WindowGeometry& g, const SpatialArray& extent, F&& f) {
  const int last = g.rank - 1;
  SpatialArray lo{}, hi{};
  for (int d = 0; d < g.rank; ++d) {
    lo[d] = std::max<int64_t>(0, -g.pad_begin[d]);
    hi[d] = std::min(g.image[d], extent[d] - g.pad_begin[d]);
    if (lo[d] >= hi[d]) return;
  }
  const SpatialArray image_strides = row_major_strides(g.image, g.rank);
  const SpatialArray plane_strides = row_major_strides(extent, g.rank);
  SpatialArray i = lo;
  while (true) {
    int64_t image_offset = 0, plane_offset = 0;
    for (int d = 0; d < g.rank; ++d) {
      image_offset += i[d] * image_strides[d];
      plane_offset += (i[d] + g.pad_begin[d]) * plane_strides[d];
    }
    f(image_offset, plane_offset, hi[last] - lo[last]);
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++i[d] < hi[d]) break;
      i[d] = lo[d];
    }
    if (d < 0) return;
  }
}

// The window planes over `image`: the image itself, or (when windows reach into the padding) a copy
// in `scratch`, zero-padded, or zeroed for col2im to fill (`copy_image` false).
template <class T>
WindowPlanes<T> window_planes(T* image, int64_t channels, const WindowGeometry& g, bool copy_image, Tensor& scratch) {
  if (windows_inside_image(g)) return {image, g.image_size(), g.image, row_major_strides(g.image, g.rank)};
  const SpatialArray extent = window_extent(g);
  int64_t plane_size = 1;
  for (int d = 0; d < g.rank; ++d) plane_size *= extent[d];
  scratch.resize_zero(dtype_of<std::remove_const_t<T>>(), Shape{channels, plane_size});
  auto* padded = scratch.data<std::remove_const_t<T>>();
  if (copy_image) {
    for (int64_t c = 0; c < channels; ++c)
      for_each_shared_run(g, extent, [&](int64_t image_offset, int64_t plane_offset, int64_t n) {
        std::copy_n(image + c * g.image_size() + image_offset, n, padded + c * plane_size + plane_offset);
      });
  }
  return {padded, plane_size, extent, row_major_strides(extent, g.rank)};
}

// A row-major matrix type, const when the element type is.
template <class E>
using MatrixOf =
    std::conditional_t<std::is_const_v<E>, const RowMajorMatrix<std::remove_const_t<E>>, RowMajorMatrix<E>>;

// Moves one row of the column matrix (one channel and kernel offset, all grid points) from (gather) or
// into (scatter, accumulating) its window plane, starting at `plane` with per-dimension steps `step`.
// The last two grid dimensions form one strided 2-D block; earlier ones are looped over.
template <bool Scatter, class P, class R>
void move_row(P* plane, const SpatialArray& step, const WindowGeometry& g, R* row) {
  const int r = g.rank;
  const int64_t rows = r >= 2 ? g.grid[r - 2] : 1, cols = g.grid[r - 1];
  const int64_t row_step = r >= 2 ? step[r - 2] : cols * step[r - 1], col_step = step[r - 1];
  const int64_t block = rows * cols, blocks = g.grid_size() / std::max<int64_t>(1, block);
  auto move = [&](auto plane_block, int64_t b) {
    Eigen::Map<MatrixOf<R>> row_block(row + b * block, rows, cols);
    if constexpr (Scatter) {
      plane_block += row_block;
    } else {
      row_block = plane_block;
    }
  };
  SpatialArray p{};  // grid position in the dimensions before the block
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t offset = 0;
    for (int d = 0; d < r - 2; ++d) offset += p[d] * step[d];
    if (col_step == 1) {  // the common case, vectorised: contiguous rows in the plane
      using RowStride = Eigen::OuterStride<>;
      move(Eigen::Map<MatrixOf<P>, 0, RowStride>(plane + offset, rows, cols, RowStride(row_step)), b);
    } else {
      using Strided = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
      move(Eigen::Map<MatrixOf<P>, 0, Strided>(plane + offset, rows, cols, Strided(row_step, col_step)), b);
    }
    for (int d = r - 3; d >= 0; --d) {
      if (++p[d] < g.grid[d]) break;
      p[d] = 0;
    }
  }
}

// Calls f(plane_start, step, row) for every (channel, kernel offset) row of the column matrix.
template <class T, class F>
void for_each_column_row(const WindowPlanes<T>& planes, int64_t channels, const WindowGeometry& g, F&& f) {
  SpatialArray step{};
  for (int d = 0; d < g.rank; ++d) step[d] = g.stride[d] * planes.strides[d];
  const int64_t kernel_size = g.kernel_size();
  for (int64_t c = 0; c < channels; ++c) {
    SpatialArray k{};
    for (int64_t kf = 0; kf < kernel_size; ++kf) {
      int64_t offset = c * planes.channel_stride;
      for (int d = 0; d < g.rank; ++d) offset += k[d] * g.dilation[d] * planes.strides[d];
      f(planes.data + offset, step, c * kernel_size + kf);
      for (int d = g.rank - 1; d >= 0; --d) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
  }
}

// Grids whose (point, kernel offset) pairs number at most this take the offset-table paths (im2row_2d,
// depthwise_small), the table in the node's scratch.
constexpr int64_t kWindowTablePairs = 256;

// offsets[point · taps + tap]: where 2-D grid point `point` reads kernel offset `tap` in its channel's image, or −1
// in the padding.
void window_offsets(const WindowGeometry& g, int64_t* offsets) {
  for (int64_t oh = 0, at = 0; oh < g.grid[0]; ++oh)
    for (int64_t ow = 0; ow < g.grid[1]; ++ow)
      for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[1]; ++kw, ++at) {
          const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
          const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + kw * g.dilation[1];
          const bool inside = ih >= 0 && ih < g.image[0] && iw >= 0 && iw < g.image[1];
          offsets[at] = inside ? ih * g.image[1] + iw : -1;
        }
}

// window_offsets of g in `table`, worked out again only when `key` does not hold g's numbers: a node's scratch
// outlives its pass (always in a hunt, when small in a forward-only run: Executor::release_scratch), and working the
// tables out again each pass was 2 % of ShuffleNet's forward (its depthwise convs on small grids).
const int64_t* cached_window_offsets(const WindowGeometry& g, Tensor& table, Tensor& key) {
  const std::array<int64_t, 12> numbers{g.image[0],    g.image[1],    g.grid[0],      g.grid[1],
                                        g.kernel[0],   g.kernel[1],   g.stride[0],    g.stride[1],
                                        g.dilation[0], g.dilation[1], g.pad_begin[0], g.pad_begin[1]};
  const auto held = [&] {
    return key.dtype() == DType::Int64 && key.numel() == 12 &&
           std::equal(numbers.begin(), numbers.end(), key.data<int64_t>()) && table.dtype() == DType::Int64 &&
           table.numel() == g.grid_size() * g.kernel_size();
  };
  if (held()) return table.data<int64_t>();
  table.resize(DType::Int64, Shape{g.grid_size() * g.kernel_size()});
  window_offsets(g, table.data<int64_t>());
  key.resize(DType::Int64, Shape{12});
  std::copy(numbers.begin(), numbers.end(), key.data<int64_t>());
  return table.data<int64_t>();
}

// The transposed column matrix (p × k) of a small 2-D grid straight from the image: t[point, c·taps + tap] =
// image[c, offset(point, tap)], 0 in the padding, one table look-up per element (no per-row set-up, no transpose
// after: for layer4 at 64×64, im2col set up 4,608 rows of 4 points each).
template <class T>
void im2row_2d(const T* image, int64_t channels, const WindowGeometry& g, T* t) {
  const int64_t p = g.grid_size(), taps = g.kernel_size(), k = channels * taps, image_size = g.image_size();
  std::array<int64_t, kWindowTablePairs> offsets;
  window_offsets(g, offsets.data());
  for (int64_t point = 0; point < p; ++point) {
    const int64_t* off = offsets.data() + point * taps;
    T* row = t + point * k;
    for (int64_t c = 0; c < channels; ++c, row += taps) {
      const T* xc = image + c * image_size;
      for (int64_t tap = 0; tap < taps; ++tap) row[tap] = off[tap] < 0 ? T(0) : xc[off[tap]];
    }
  }
}

// dst[q] = src[q] for q < n, in fixed-size chunks: the runs here are 2 to 32 elements, where a call to memmove (what
// std::copy becomes) costs more than the copy.
template <class T>
void copy_short(const T* src, int64_t n, T* dst) {
  int64_t q = 0;
  for (; q + 16 <= n; q += 16) Eigen::Map<Eigen::Array<T, 16, 1>>(dst + q) = Eigen::Map<const Eigen::Array<T, 16, 1>>(src + q);
  for (; q + 4 <= n; q += 4) Eigen::Map<Eigen::Array<T, 4, 1>>(dst + q) = Eigen::Map<const Eigen::Array<T, 4, 1>>(src + q);
  for (; q < n; ++q) dst[q] = src[q];
}

#if defined(__AVX2__)
// Of the 16 floats a, b in order: those at even positions (odd ones with kOdd), in order. A shuffle takes them within
// each 128-bit half (a0 a2 b0 b2 | a4 a6 b4 b6), a permute of the 64-bit pairs puts them in order.
template <bool kOdd>
__m256 stride2_lanes(__m256 a, __m256 b) {
  __m256 lanes;
  if constexpr (kOdd) {
    lanes = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  } else {
    lanes = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  }
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(lanes), _MM_SHUFFLE(3, 1, 2, 0)));
}
#endif

// dst[q] = src[2q] for q < n. With AVX-512, 16 outputs from two loads and one permute (vpermt2ps), the last ones
// through masked loads and a masked store, so nothing past src[2(n − 1)] is read; with AVX2, 8 at a time (below);
// elsewhere a scalar loop.
// resnet18's conv1 (7×7, stride 2) gathered 150,000 values one by one, ~50 µs a forward.
template <class T>
void copy_stride2(const T* src, int64_t n, T* dst) {
  int64_t q = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (; q + 16 <= n; q += 16) {
      // The last output reads src[2q + 30]; src[2q + 31] is read only when it lies inside [0, 2n − 1).
      const int64_t in_b = std::min<int64_t>(16, 2 * (n - q) - 1 - 16);
      const __m512 a = _mm512_loadu_ps(src + 2 * q);
      const __m512 b = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << in_b) - 1), src + 2 * q + 16);
      _mm512_storeu_ps(dst + q, _mm512_permutex2var_ps(a, even, b));
    }
    if (q < n) {
      const int64_t left = n - q, reads = 2 * left - 1;  // 1..15 outputs, 1..29 inputs
      const auto mask = [](int64_t bits) { return static_cast<__mmask16>((1u << bits) - 1); };
      const __m512 a = _mm512_maskz_loadu_ps(mask(std::min<int64_t>(16, reads)), src + 2 * q);
      const __m512 b = _mm512_maskz_loadu_ps(mask(std::max<int64_t>(0, reads - 16)), src + 2 * q + 16);
      _mm512_mask_storeu_ps(dst + q, mask(left), _mm512_permutex2var_ps(a, even, b));
      return;
    }
  }
#elif defined(__AVX2__)
  // With AVX2, 8 outputs from two loads (stride2_lanes); nothing past src[2(n − 1)] is read. Scalar, this gather
  // was 60 % of mobilenet_v2's 32×32 stride-2 depthwise layer (which now splits its rows with deinterleave_row).
  if constexpr (std::is_same_v<T, float>) {
    // While 8 more outputs follow, src[2q + 15] lies before src[2(n − 1)]: plain loads (a masked one costs
    // several times a load on AMD's cores).
    for (; q + 8 < n; q += 8)
      _mm256_storeu_ps(dst + q, stride2_lanes<false>(_mm256_loadu_ps(src + 2 * q), _mm256_loadu_ps(src + 2 * q + 8)));
    if (q + 8 == n) {  // the last 8 outputs: src[2q + 15] is past the last one read
      const __m256i seven = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);
      _mm256_storeu_ps(dst + q,
                       stride2_lanes<false>(_mm256_loadu_ps(src + 2 * q), _mm256_maskload_ps(src + 2 * q + 8, seven)));
      return;
    }
  }
#endif
  for (; q < n; ++q) dst[q] = src[2 * q];
}

// Kernels up to this wide take im2col_2d and col2im_2d (their column ranges on the stack).
constexpr int64_t kMaxIm2colKernelWidth = 16;

// Per kernel column kw of a 2-D window: the image column `first` that output column 0 reads (kw·dilation − pad), and
// the output columns [lo, hi) whose image column lies inside the image.
struct KernelColumn {
  int64_t first, lo, hi;
};
using KernelColumns = std::array<KernelColumn, kMaxIm2colKernelWidth>;

KernelColumns kernel_columns(const WindowGeometry& g) {
  KernelColumns columns;
  for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
    KernelColumn& cr = columns[static_cast<size_t>(kw)];
    cr.first = kw * g.dilation[1] - g.pad_begin[1];
    valid_range(cr.first, g.stride[1], g.image[1], g.grid[1], cr.lo, cr.hi);
  }
  return columns;
}

// 2-D im2col straight from the image: per (channel, kernel offset) row only the output rows inside the image are
// looked up, each a copy of the columns inside (their range worked out once per kernel column) between zeros. The
// general path's per-row set-up (window planes, strided block maps) cost more than the copy itself on the small
// grids of a CNN's deep layers (layer4 at 64×64: 4,608 rows of 4 points each), 16 % of resnet18's forward.
template <class T>
void im2col_2d(const T* image, int64_t channels, const WindowGeometry& g, T* col) {
  const int64_t h = g.image[0], w = g.image[1], oh_count = g.grid[0], ow_count = g.grid[1], sw = g.stride[1];
  const KernelColumns columns = kernel_columns(g);
  // Stride 1 along rows of the image's width (a "same" convolution): consecutive output rows read consecutive image
  // rows, so each (channel, kernel offset) row of the column matrix is one copy, whatever the grid's height.
  const bool rows_contiguous = sw == 1 && ow_count == w && g.stride[0] == 1;
  T* out = col;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw, out += oh_count * ow_count) {
        const KernelColumn& cr = columns[static_cast<size_t>(kw)];
        if (rows_contiguous) {
          // Output rows [lo, hi) read image rows ih0 + oh: one run from the first one's column cr.lo to the last one's
          // cr.hi; the columns outside [cr.lo, cr.hi) it also copied (neighbouring rows' ends) are padding, zeroed.
          const int64_t ih0 = kh * g.dilation[0] - g.pad_begin[0];
          int64_t lo = 0, hi = 0;
          valid_range(ih0, g.stride[0], h, oh_count, lo, hi);
          std::fill_n(out, lo * ow_count, T(0));
          std::fill(out + hi * ow_count, out + oh_count * ow_count, T(0));
          if (lo >= hi || cr.lo >= cr.hi) {
            std::fill(out + lo * ow_count, out + hi * ow_count, T(0));
            continue;
          }
          const T* src = image + (c * h + ih0 + lo) * w + cr.first;
          std::copy(src + cr.lo, src + (hi - lo - 1) * w + cr.hi, out + lo * ow_count + cr.lo);
          for (int64_t oh = lo; oh < hi; ++oh) {
            T* dst = out + oh * ow_count;
            for (int64_t q = 0; q < cr.lo; ++q) dst[q] = T(0);
            for (int64_t q = cr.hi; q < ow_count; ++q) dst[q] = T(0);
          }
          continue;
        }
        for (int64_t oh = 0; oh < oh_count; ++oh) {
          T* dst = out + oh * ow_count;
          const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
          if (ih < 0 || ih >= h) {
            std::fill_n(dst, ow_count, T(0));
            continue;
          }
          const T* src = image + (c * h + ih) * w + cr.first;
          for (int64_t q = 0; q < cr.lo; ++q) dst[q] = T(0);
          if (sw == 1) {
            copy_short(src + cr.lo, cr.hi - cr.lo, dst + cr.lo);
          } else if (sw == 2) {
            copy_stride2(src + 2 * cr.lo, cr.hi - cr.lo, dst + cr.lo);
          } else {
            for (int64_t q = cr.lo; q < cr.hi; ++q) dst[q] = src[q * sw];
          }
          for (int64_t q = cr.hi; q < ow_count; ++q) dst[q] = T(0);
        }
      }
}

// im2col for small 2-D grids: one table look-up per value, as in im2row_2d, instead of im2col_2d's per-row set-up (a
// memset or two, and a memmove of the row's few values). Scalar, up to kIm2colTablePairs point × kernel-offset
// pairs: in order, resnet18's layer3 at 64×64 (16 points, 2,304 rows of the column matrix per 3×3 conv) went
// 0.156–0.165 → 0.138–0.145 ms a conv; up to 1,024 pairs its layer2 (8×8, stride 1) went 0.124–0.131 → 0.133–0.139,
// and up to 512 squeezenet1_1's 7×7 expand3x3 0.033 → 0.036: rows of 7-8 values already copy well. Floats with
// AVX-512 gather 16 points at a time (masked: the padding's lanes are not read, and left 0), up to kIm2colGatherPairs
// pairs: layer3's 3×3 convs then took 0.122–0.133 ms, layer2's 0.120–0.125 → 0.103–0.108 (its stride-2 conv1 0.071
// → 0.051–0.057), squeezenet1_1's 7×7 expand3x3 0.035–0.040 → 0.030–0.035; up to 4,096 pairs resnet18's layer1
// (16×16) was level and squeezenet1_1's 15×15 expand3x3 0.034 → 0.036–0.038.
constexpr int64_t kIm2colTablePairs = 256;
constexpr int64_t kIm2colGatherPairs = 1024;
#if defined(__AVX512F__)
template <class T>
constexpr bool kGathers = std::is_same_v<T, float>;
#else
template <class T>
constexpr bool kGathers = false;
#endif

template <class T>
bool table_im2col(const WindowGeometry& g) {
  const int64_t pairs = g.grid_size() * g.kernel_size();
  return g.rank == 2 && g.image_size() <= std::numeric_limits<int32_t>::max() &&
         (pairs <= kIm2colTablePairs || (kGathers<T> && pairs <= kIm2colGatherPairs));
}

template <class T>
void im2col_table(const T* image, int64_t channels, const WindowGeometry& g, T* col) {
  const int64_t p = g.grid_size(), taps = g.kernel_size(), image_size = g.image_size();
  // by_tap[tap·p + point]: the point's input offset for the kernel offset, −1 in the padding.
  std::array<int32_t, kIm2colGatherPairs> by_tap;
  for (int64_t kh = 0, tap = 0; kh < g.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < g.kernel[1]; ++kw, ++tap)
      for (int64_t oh = 0, point = 0; oh < g.grid[0]; ++oh)
        for (int64_t ow = 0; ow < g.grid[1]; ++ow, ++point) {
          const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
          const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + kw * g.dilation[1];
          const bool inside = ih >= 0 && ih < g.image[0] && iw >= 0 && iw < g.image[1];
          by_tap[static_cast<size_t>(tap * p + point)] = inside ? static_cast<int32_t>(ih * g.image[1] + iw) : -1;
        }
  T* row = col;
#if defined(__AVX512F__)
  if constexpr (kGathers<T>) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* xc = image + c * image_size;
      for (int64_t tap = 0; tap < taps; ++tap, row += p)
        for (int64_t point = 0; point < p; point += 16) {
          const auto lanes = static_cast<__mmask16>(p - point >= 16 ? 0xffff : (1u << (p - point)) - 1);
          const __m512i idx = _mm512_maskz_loadu_epi32(lanes, by_tap.data() + tap * p + point);
          const __mmask16 inside = _mm512_mask_cmpge_epi32_mask(lanes, idx, _mm512_setzero_si512());
          _mm512_mask_storeu_ps(row + point, lanes, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside, idx, xc, 4));
        }
    }
    return;
  }
#endif
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = image + c * image_size;
    for (int64_t tap = 0; tap < taps; ++tap, row += p) {
      const int32_t* off = by_tap.data() + tap * p;
      for (int64_t point = 0; point < p; ++point) row[point] = off[point] < 0 ? T(0) : xc[off[point]];
    }
  }
}

template <class T>
void im2col(const T* image, int64_t channels, const WindowGeometry& g, Tensor& scratch, T* col) {
  const int64_t grid_size = g.grid_size();
  if (grid_size == 0) return;
  if (table_im2col<T>(g)) return im2col_table(image, channels, g, col);
  if (g.rank == 2 && g.kernel[1] <= kMaxIm2colKernelWidth) return im2col_2d(image, channels, g, col);
  const auto planes = window_planes<const T>(image, channels, g, true, scratch);
  for_each_column_row(planes, channels, g, [&](const T* plane, const SpatialArray& step, int64_t row) {
    move_row<false>(plane, step, g, col + row * grid_size);
  });
}

// col2im in 2-D straight into the image, as im2col_2d reads it: per (channel, kernel offset) row, each output row
// inside the image adds the columns inside (their range worked out once per kernel column) to its image row. The
// general path zeroed a padded copy of the image, added every row into it through strided block maps, then added
// the copy to the image: the MNIST CNN's 5×5 data gradient spent 5 % of a training step there. Each image value
// still receives its terms in kernel-offset order.
template <class T>
void col2im_2d(const T* col, int64_t channels, const WindowGeometry& g, T* image) {
  const int64_t h = g.image[0], w = g.image[1], oh_count = g.grid[0], ow_count = g.grid[1], sw = g.stride[1];
  const KernelColumns columns = kernel_columns(g);
  const T* row = col;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw, row += oh_count * ow_count) {
        const KernelColumn& cr = columns[static_cast<size_t>(kw)];
        if (cr.lo >= cr.hi) continue;  // no column inside (an image 0 wide has no data to point into)
        const int64_t ih0 = kh * g.dilation[0] - g.pad_begin[0];
        int64_t lo = 0, hi = 0;
        valid_range(ih0, g.stride[0], h, oh_count, lo, hi);
        for (int64_t oh = lo; oh < hi; ++oh) {
          T* dst = image + (c * h + ih0 + oh * g.stride[0]) * w + cr.first;
          const T* src = row + oh * ow_count;
          if (sw == 1) {
            for (int64_t q = cr.lo; q < cr.hi; ++q) dst[q] += src[q];
          } else {
            for (int64_t q = cr.lo; q < cr.hi; ++q) dst[q * sw] += src[q];
          }
        }
      }
}

// The adjoint of im2col: image[c, p·stride − pad + k·dilation] += col[c·K + k, p]. Adds to `image`.
template <class T>
void col2im(const T* col, int64_t channels, const WindowGeometry& g, Tensor& scratch, T* image) {
  const int64_t grid_size = g.grid_size();
  if (grid_size == 0) return;
  if (g.rank == 2 && g.kernel[1] <= kMaxIm2colKernelWidth) return col2im_2d(col, channels, g, image);
  const auto planes = window_planes<T>(image, channels, g, false, scratch);
  for_each_column_row(planes, channels, g, [&](T* plane, const SpatialArray& step, int64_t row) {
    move_row<true>(plane, step, g, col + row * grid_size);
  });
  if (planes.data == image) return;
  for (int64_t c = 0; c < channels; ++c)
    for_each_shared_run(g, planes.dims, [&](int64_t image_offset, int64_t plane_offset, int64_t n) {
      ContiguousArrayMap<T>(image + c * g.image_size() + image_offset, n) +=
          ContiguousArrayMap<T>(planes.data + c * planes.channel_stride + plane_offset, n);
    });
}

// Sets every row c of a [channels, spatial] block to bias[c], or to 0 without a bias: the start value the
// GEMM then accumulates into, so the bias costs no extra pass over the output.
template <class T>
void fill_channels(const T* bias, int64_t channels, int64_t spatial, T* block) {
  for (int64_t c = 0; c < channels; ++c)
    ContiguousArrayMap<T>(block + c * spatial, spatial).setConstant(bias ? bias[c] : T(0));
}

// dbias[m] = Σ_n Σ_i dy[n, m, i]
template <class T>
void sum_channel_gradient(const T* dy, int64_t batch, int64_t channels, int64_t spatial, T* dbias) {
  std::fill_n(dbias, channels, T(0));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < channels; ++m) {
      Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> row(dy + (n * channels + m) * spatial, spatial);
      dbias[m] += row.sum();
    }
}

// ---------------------------------------------------------------------------------------------------
// Conv and ConvTranspose: one GEMM per (batch item, group) between the weights, viewed per group as a
// [grid channels, K] matrix (K = image channels per group × kernel size) in both ops' layouts, and a
// [K, P] column matrix (P = grid size):
//   Conv:          Y[n,g] = W[g] · im2col(X[n,g])      dX[n,g] = col2im(W[g]ᵀ · dY[n,g])
//   ConvTranspose: Y[n,g] = col2im(W[g]ᵀ · X[n,g])     dX[n,g] = W[g] · im2col(dY[n,g])
//   both:          dW[g] = Σ_n grid[n,g] · im2col(image[n,g])ᵀ

struct ConvShape {
  WindowGeometry geom;
  int64_t batch = 0, groups = 1;
  int64_t image_channels = 0;  // per group: Conv input channels, ConvTranspose output channels
  int64_t grid_channels = 0;   // per group: Conv output channels, ConvTranspose input channels
  int64_t col_rows() const { return image_channels * geom.kernel_size(); }
};

Status check_conv_operands(const Node& node, const Tensor& x, const Tensor& w, const Tensor* bias) {
  if (!is_float(x.dtype()) || w.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    return node_error(node, "expects float32 or float64 X, W and B of one type");
  if (x.rank() < 3 || w.rank() != x.rank())
    return node_error(
        node, fmt::format("X {} and W {} must have the same rank, at least 3", x.shape().str(), w.shape().str()));
  std::span<const int64_t> ks = ints_attr(node, "kernel_shape");
  if (!ks.empty() && !std::equal(ks.begin(), ks.end(), w.shape().begin() + 2, w.shape().end()))
    return node_error(node, "kernel_shape does not match W");
  return Status::ok();
}

Status read_groups(const Node& node, int64_t& groups) {
  groups = node.attr_int("group", 1);
  if (groups < 1) return node_error(node, "group must be positive");
  return Status::ok();
}

std::span<const int64_t> kernel_of(const Tensor& w) { return {w.shape().begin() + 2, w.shape().end()}; }

// Conv: X [N, C, image...], W [M, C/group, kernel...], B [M] → Y [N, M, grid...].
Status conv_shape(const Node& node, const Tensor& x, const Tensor& w, const Tensor* bias, ConvShape& cs) {
  GRIST_TRY(check_conv_operands(node, x, w, bias));
  GRIST_TRY(read_groups(node, cs.groups));
  const int64_t c = x.shape()[1], m = w.shape()[0];
  if (w.shape()[1] * cs.groups != c || m % cs.groups != 0)
    return node_error(node,
                      fmt::format("X {} and W {} do not fit group {}", x.shape().str(), w.shape().str(), cs.groups));
  if (bias && bias->numel() != m) return node_error(node, fmt::format("B must have {} elements", m));
  cs.batch = x.shape()[0];
  cs.image_channels = c / cs.groups;
  cs.grid_channels = m / cs.groups;
  AutoPad auto_pad;
  GRIST_TRY(read_auto_pad(node, auto_pad));
  GRIST_TRY(read_window_attrs(node, x.rank() - 2, kernel_of(w), cs.geom));
  set_spatial(x.shape(), cs.geom.image);
  return compute_grid(node, auto_pad, false, cs.geom);
}

// ConvTranspose: X [N, C, grid...], W [C, M/group, kernel...], B [M] → Y [N, M, image...]. The image is
// stride·(in − 1) + output_padding + dilated kernel − pads, or output_shape with pads derived from it.
Status conv_transpose_shape(const Node& node, const Tensor& x, const Tensor& w, const Tensor* bias, ConvShape& cs) {
  GRIST_TRY(check_conv_operands(node, x, w, bias));
  GRIST_TRY(read_groups(node, cs.groups));
  const int64_t c = x.shape()[1];
  if (w.shape()[0] != c || c % cs.groups != 0)
    return node_error(node,
                      fmt::format("X {} and W {} do not fit group {}", x.shape().str(), w.shape().str(), cs.groups));
  if (bias && bias->numel() != w.shape()[1] * cs.groups)
    return node_error(node, fmt::format("B must have {} elements", w.shape()[1] * cs.groups));
  cs.batch = x.shape()[0];
  cs.grid_channels = c / cs.groups;
  cs.image_channels = w.shape()[1];
  AutoPad auto_pad;
  GRIST_TRY(read_auto_pad(node, auto_pad));
  const int rank = x.rank() - 2;
  WindowGeometry& g = cs.geom;
  GRIST_TRY(read_window_attrs(node, rank, kernel_of(w), g));
  set_spatial(x.shape(), g.grid);
  SpatialArray output_padding{};
  GRIST_TRY(read_spatial_attr(node, "output_padding", rank, 0, 0, output_padding));
  std::span<const int64_t> output_shape = ints_attr(node, "output_shape");
  if (static_cast<int>(output_shape.size()) == rank + 2) output_shape = output_shape.subspan(2);
  if (!output_shape.empty() && static_cast<int>(output_shape.size()) != rank)
    return node_error(node, "output_shape does not match the spatial rank");
  for (int d = 0; d < rank; ++d) {
    const int64_t full = g.stride[d] * (g.grid[d] - 1) + output_padding[d] + dilated_extent(g, d);
    if (auto_pad == AutoPad::Valid) g.pad_begin[d] = g.pad_end[d] = 0;
    const bool same = auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower;
    if (!output_shape.empty() || same) {
      g.image[d] = output_shape.empty() ? g.grid[d] * g.stride[d] : output_shape[static_cast<size_t>(d)];
      // Floor division, as in the ONNX reference: when the output is larger than the full one (negative
      // total), an odd extra position goes at the end, like output_padding.
      const int64_t total = full - g.image[d], half = floor_div(total, 2);
      g.pad_begin[d] = auto_pad == AutoPad::SameUpper ? half : total - half;
      g.pad_end[d] = total - g.pad_begin[d];
    } else {
      g.image[d] = full - g.pad_begin[d] - g.pad_end[d];
    }
    if (g.image[d] < 0) return node_error(node, "the pads leave a negative output size");
  }
  return Status::ok();
}

// A scratch matrix from the node state (its capacity is kept across calls).
template <class T>
T* scratch(NodeState& state, size_t slot, int64_t rows, int64_t cols) {
  Tensor& t = state.slot(slot);
  t.resize(dtype_of<T>(), Shape{rows, cols});
  return t.data<T>();
}

// Where one (batch item, group) block starts in the image tensor, the grid tensor and the weights.
struct ConvBlock {
  int64_t item, group, image_offset, grid_offset, weight_offset;
};

template <class F>
void for_each_block(const ConvShape& cs, F&& f) {
  const int64_t image_block = cs.image_channels * cs.geom.image_size();
  const int64_t grid_block = cs.grid_channels * cs.geom.grid_size();
  const int64_t weight_block = cs.grid_channels * cs.col_rows();
  for (int64_t n = 0; n < cs.batch; ++n)
    for (int64_t g = 0; g < cs.groups; ++g)
      f(ConvBlock{n, g, (n * cs.groups + g) * image_block, (n * cs.groups + g) * grid_block, g * weight_block});
}

// Grids of at most this many points (the deep layers of a CNN at small inputs: 2×2, 3×3) take the dot-product
// path of narrow_product: a GEMM would pack the whole weight matrix for a handful of columns.
constexpr int64_t kNarrowGrid = 9;

// Scratch slot `base` for chunk 0 (the serial path's own), and from 16 on for the other chunks: taken before the
// chunks start, since taking a slot may grow the state's deque.
constexpr size_t kChunkSlots = 16;
size_t chunk_slot(size_t base, int64_t chunk) {
  return chunk == 0 ? base : kChunkSlots * (base + 1) + static_cast<size_t>(chunk);
}
void reserve_chunk_slots(NodeState& state, size_t base, int64_t chunks) {
  for (int64_t c = 1; c < chunks; ++c) state.slot(chunk_slot(base, c));
}

// The start values (Conv's bias) from row r0 on; none without a bias.
template <class T>
const T* start_rows(const T* bias, int64_t r0) {
  return bias ? bias + r0 : nullptr;
}

// y (m × p) = bias + w (m × k) · tᵀ for p <= kNarrowGrid, t = colsᵀ (p × k): dot_product_rows over chunks of weight
// rows. Each weight is read once, from contiguous memory.
template <class T>
void narrow_product(const T* w, const T* t, int64_t m, int64_t k, int64_t p, const T* bias, T* y) {
  parallel_for(m, grain_for(k * p), [&](int64_t, int64_t r0, int64_t r1) {
    dot_product_rows(w + r0 * k, t, r1 - r0, k, p, start_rows(bias, r0), y + r0 * p);
  });
}

// Column matrices up to this size take tile_product, which reads the weights as stored: Eigen's GEMM packs the whole
// weight matrix on every call (12 % of resnet18's forward at 64×64). Larger ones, which tile_product would stream
// from beyond the L2 cache for every block of weight rows, take Eigen's cache-blocked GEMM.
constexpr int64_t kTileProductBytes = int64_t{1} << 20;

// y (m × p) = bias + w (m × k) · cols (k × p), split over chunks of columns when p > m (with Eigen, each chunk packs
// all of w, the smaller operand), else of rows (each packs all of cols). Each output is one chunk's, its sum the
// same product's. tile_product starts each row's sums from its bias; Eigen's GEMM adds onto the bias filled in.
template <class T>
void split_product(const T* w, const T* cols, int64_t m, int64_t k, int64_t p, const T* bias, T* y) {
  if (k * p * static_cast<int64_t>(sizeof(T)) <= kTileProductBytes) {
    if (p > m) {
      parallel_for(p, grain_for(m * k), [&](int64_t, int64_t c0, int64_t c1) {
        tile_product(w, cols + c0, p, m, k, c1 - c0, bias, y + c0, p);
      });
    } else {
      parallel_for(m, grain_for(k * p), [&](int64_t, int64_t r0, int64_t r1) {
        tile_product(w + r0 * k, cols, p, r1 - r0, k, p, start_rows(bias, r0), y + r0 * p, p);
      });
    }
    return;
  }
  fill_channels(bias, m, p, y);
  using Strided = Eigen::OuterStride<>;
  if (p > m) {
    parallel_for(p, grain_for(m * k), [&](int64_t, int64_t c0, int64_t c1) {
      Eigen::Map<const RowMajorMatrix<T>, 0, Strided> block(cols + c0, k, c1 - c0, Strided(p));
      Eigen::Map<RowMajorMatrix<T>, 0, Strided>(y + c0, m, c1 - c0, Strided(p)).noalias() +=
          ConstMatrixMap<T>(w, m, k) * block;
    });
  } else {
    parallel_for(m, grain_for(k * p), [&](int64_t, int64_t r0, int64_t r1) {
      MatrixMap<T>(y + r0 * p, r1 - r0, p).noalias() += ConstMatrixMap<T>(w + r0 * k, r1 - r0, k) *
                                                       ConstMatrixMap<T>(cols, k, p);
    });
  }
}

// im2col over chunks of channels: a channel's rows of the column matrix are contiguous, each chunk pads its own
// channels in its own scratch slot.
template <class T>
void split_im2col(const ConvShape& cs, const T* image, NodeState& state, T* col) {
  const int64_t taps = cs.geom.kernel_size(), p = cs.geom.grid_size(), image_size = cs.geom.image_size();
  const int64_t grain = grain_for(taps * p * 4);  // a copy, cheaper than a multiply-add: a quarter of the grain
  reserve_chunk_slots(state, 2, chunk_count(cs.image_channels, grain));
  parallel_for(cs.image_channels, grain, [&](int64_t chunk, int64_t c0, int64_t c1) {
    im2col(image + c0 * image_size, c1 - c0, cs.geom, state.slot(chunk_slot(2, chunk)), col + c0 * taps * p);
  });
}

// image → grid: out (grid_channels × P) = bias + W (grid_channels × K) · im2col(image). The Conv forward
// and (without bias) the ConvTranspose data gradient. `bias` has one value per grid channel.
template <class T>
void image_to_grid(const ConvShape& cs, const T* image, const T* w, const T* bias, NodeState& state, T* out) {
  const int64_t k = cs.col_rows(), p = cs.geom.grid_size();
  const bool pointwise = cs.geom.is_pointwise(), narrow = p >= 1 && p <= kNarrowGrid;
  // Narrow 2-D grids read the image straight into colsᵀ.
  const bool rows_direct =
      narrow && !pointwise && cs.geom.rank == 2 && p * cs.geom.kernel_size() <= kWindowTablePairs;
  T* col = pointwise || rows_direct ? nullptr : scratch<T>(state, 0, k, p);
  T* transposed = narrow ? scratch<T>(state, 3, p, k) : nullptr;
  for_each_block(cs, [&](const ConvBlock& b) {
    const T* cols = image + b.image_offset;
    if (rows_direct) {
      im2row_2d(cols, cs.image_channels, cs.geom, transposed);
    } else if (!pointwise) {
      split_im2col(cs, cols, state, col);
      cols = col;
    }
    T* y = out + b.grid_offset;
    const T* group_bias = bias ? bias + b.group * cs.grid_channels : nullptr;
    if (narrow) {
      if (!rows_direct) MatrixMap<T>(transposed, p, k) = ConstMatrixMap<T>(cols, k, p).transpose();
      narrow_product(w + b.weight_offset, transposed, cs.grid_channels, k, p, group_bias, y);
    } else {
      split_product(w + b.weight_offset, cols, cs.grid_channels, k, p, group_bias, y);
    }
  });
}

// The backward products below run on tile_product, as the forward's do, where the grid block it reads (grid_channels
// × P) fits tile_product's budget: Eigen's GEMM packed Wᵀ afresh for every batch item and ran the MNIST CNN's
// backward at a third of the forward's speed (docs/PERFORMANCE.md, session 20). Larger blocks keep Eigen's GEMM.
template <class T>
bool tiled_backward(const ConvShape& cs) {
  return cs.grid_channels * cs.geom.grid_size() * static_cast<int64_t>(sizeof(T)) <= kTileProductBytes;
}

// Each group's weights (grid_channels × K) transposed to K × grid_channels, in scratch slot `slot`.
template <class T>
const T* transposed_weights(const ConvShape& cs, const T* w, NodeState& state, size_t slot) {
  const int64_t k = cs.col_rows(), m = cs.grid_channels;
  T* wt = scratch<T>(state, slot, cs.groups * k, m);
  for (int64_t g = 0; g < cs.groups; ++g)
    MatrixMap<T>(wt + g * k * m, k, m) = ConstMatrixMap<T>(w + g * m * k, m, k).transpose();
  return wt;
}

// grid → image: image = bias + col2im(Wᵀ (K × grid_channels) · grid). The ConvTranspose forward and
// (without bias) the Conv data gradient. `bias` has one value per image channel.
template <class T>
void grid_to_image(const ConvShape& cs, const T* grid, const T* w, const T* bias, NodeState& state, T* image) {
  const int64_t k = cs.col_rows(), p = cs.geom.grid_size(), m = cs.grid_channels;
  const bool pointwise = cs.geom.is_pointwise();
  T* col = pointwise ? nullptr : scratch<T>(state, 1, k, p);
  const T* wt = tiled_backward<T>(cs) ? transposed_weights(cs, w, state, 4) : nullptr;
  for_each_block(cs, [&](const ConvBlock& b) {
    T* y = image + b.image_offset;
    const T* group_bias = bias ? bias + b.group * cs.image_channels : nullptr;
    if (wt) {
      // Pointwise, the product is the image (K = image channels), started from the bias; else the column matrix.
      T* out = pointwise ? y : col;
      const T* start = pointwise ? group_bias : nullptr;
      parallel_for(k, grain_for(m * p), [&](int64_t, int64_t r0, int64_t r1) {
        tile_product(wt + b.weight_offset + r0 * m, grid + b.grid_offset, p, r1 - r0, m, p, start_rows(start, r0),
                     out + r0 * p, p);
      });
      if (pointwise) return;
      fill_channels(group_bias, cs.image_channels, cs.geom.image_size(), y);
      col2im(col, cs.image_channels, cs.geom, state.slot(2), y);
      return;
    }
    fill_channels(group_bias, cs.image_channels, cs.geom.image_size(), y);
    auto product = ConstMatrixMap<T>(w + b.weight_offset, m, k).transpose() *
                   ConstMatrixMap<T>(grid + b.grid_offset, m, p);
    if (pointwise) {
      MatrixMap<T>(y, k, p).noalias() += product;
    } else {
      MatrixMap<T>(col, k, p).noalias() = product;
      col2im(col, cs.image_channels, cs.geom, state.slot(2), y);
    }
  });
}

// dW (grid_channels × K) = Σ_n grid[n] · im2col(image[n])ᵀ: the weight gradient of both ops. Tiled, each group's dWᵀ
// (K × grid_channels) = Σ_n im2col(image[n]) · grid[n]ᵀ: the column matrix is read as im2col writes it, grid[n]
// transposed (grid_channels × P values, a small copy beside the product's K times as many multiply-adds), each
// item's product summed apart and added to the items' before it, and dW transposed back once at the end.
template <class T>
void weight_gradient(const ConvShape& cs, const T* image, const T* grid, NodeState& state, T* dw, int64_t w_numel) {
  const int64_t k = cs.col_rows(), p = cs.geom.grid_size(), m = cs.grid_channels;
  const bool pointwise = cs.geom.is_pointwise();
  T* col = pointwise ? nullptr : scratch<T>(state, 0, k, p);
  const bool tiled = tiled_backward<T>(cs) && cs.batch > 0;
  T* dwt = tiled ? scratch<T>(state, 5, cs.groups * k, m) : nullptr;
  T* grid_t = tiled ? scratch<T>(state, 6, p, m) : nullptr;
  T* item_dwt = tiled && cs.batch > 1 ? scratch<T>(state, 7, k, m) : nullptr;
  if (!tiled) std::fill_n(dw, w_numel, T(0));
  for_each_block(cs, [&](const ConvBlock& b) {
    const T* cols = image + b.image_offset;
    if (!pointwise) {
      im2col(cols, cs.image_channels, cs.geom, state.slot(2), col);
      cols = col;
    }
    if (tiled) {
      MatrixMap<T>(grid_t, p, m) = ConstMatrixMap<T>(grid + b.grid_offset, m, p).transpose();
      T* group_dwt = dwt + b.weight_offset;
      T* out = b.item == 0 ? group_dwt : item_dwt;
      parallel_for(k, grain_for(m * p), [&](int64_t, int64_t r0, int64_t r1) {
        tile_product(cols + r0 * p, grid_t, m, r1 - r0, p, m, static_cast<const T*>(nullptr), out + r0 * m, m);
      });
      if (b.item > 0) MatrixMap<T>(group_dwt, k, m) += ConstMatrixMap<T>(item_dwt, k, m);
      return;
    }
    MatrixMap<T>(dw + b.weight_offset, m, k).noalias() +=
        ConstMatrixMap<T>(grid + b.grid_offset, m, p) * ConstMatrixMap<T>(cols, k, p).transpose();
  });
  if (!tiled) return;
  for (int64_t g = 0; g < cs.groups; ++g)
    MatrixMap<T>(dw + g * m * k, m, k) = ConstMatrixMap<T>(dwt + g * k * m, k, m).transpose();
}

// ---------------------------------------------------------------------------------------------------
// Depthwise Conv (every group reads one input channel, as MobileNet's and ShuffleNet's do), 2-D: a direct loop
// over the window. The im2col path would copy each channel's windows and run one GEMM per channel of a few
// multiply-adds each. Here an output row accumulates one input row per kernel offset, vectorised along the
// row, the terms in kernel order, the padding entering as zero times the weight (as in the im2col path).

// Kernels up to this wide keep their per-column ranges on the stack; wider ones take the im2col path.
constexpr int64_t kMaxDirectKernelWidth = 16;

// Column strides up to this keep their phase offsets on the stack (phase planes, below).
constexpr int64_t kMaxPhaseStride = 16;

bool is_depthwise_2d(const ConvShape& cs) {
  return cs.image_channels == 1 && cs.groups > 1 && cs.geom.rank == 2 && cs.geom.kernel[1] <= kMaxDirectKernelWidth &&
         cs.geom.stride[1] <= kMaxPhaseStride;
}

// Calls f(oh, ih, tap, kw, first, lo, hi) for each output row oh and kernel offset tap = (kh, kw) whose input
// row ih lies in the image: output columns [lo, hi) read input columns q·stride + first, all inside the image.
// The column ranges depend on kw alone and are computed once.
template <class F>
void for_each_window_tap(const WindowGeometry& g, F&& f) {
  struct Columns {
    int64_t first, lo, hi;
  };
  std::array<Columns, kMaxDirectKernelWidth> columns;
  const int64_t kw_count = g.kernel[1];
  for (int64_t kw = 0; kw < kw_count; ++kw) {
    Columns& c = columns[static_cast<size_t>(kw)];
    c.first = kw * g.dilation[1] - g.pad_begin[1];
    valid_range(c.first, g.stride[1], g.image[1], g.grid[1], c.lo, c.hi);
  }
  for (int64_t oh = 0; oh < g.grid[0]; ++oh)
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
      const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
      if (ih < 0 || ih >= g.image[0]) continue;
      for (int64_t kw = 0; kw < kw_count; ++kw) {
        const Columns& c = columns[static_cast<size_t>(kw)];
        if (c.lo < c.hi) f(oh, ih, kh * kw_count + kw, kw, c.first, c.lo, c.hi);
      }
    }
}

// dst[q] += a · src[q·stride] for q < n. Rows are short (4 to 32 points in the CNNs at hand), so contiguous rows
// go in fixed-size chunks, each a few vector instructions without a dynamic loop's set-up; strided ones stay scalar.
template <class T>
void add_scaled_row(T* dst, const T* src, int64_t stride, T a, int64_t n) {
  int64_t q = 0;
  if (stride == 1) {
    for (; q + 16 <= n; q += 16)
      Eigen::Map<Eigen::Array<T, 16, 1>>(dst + q) += a * Eigen::Map<const Eigen::Array<T, 16, 1>>(src + q);
    for (; q + 4 <= n; q += 4)
      Eigen::Map<Eigen::Array<T, 4, 1>>(dst + q) += a * Eigen::Map<const Eigen::Array<T, 4, 1>>(src + q);
  }
  for (; q < n; ++q) dst[q] += a * src[q * stride];
}

// Σ_q a[q] · b[q·stride] for q < n, in the same chunks.
template <class T>
T dot_row(const T* a, const T* b, int64_t stride, int64_t n) {
  T sum = 0;
  int64_t q = 0;
  if (stride == 1) {
    for (; q + 16 <= n; q += 16)
      sum += (Eigen::Map<const Eigen::Array<T, 16, 1>>(a + q) * Eigen::Map<const Eigen::Array<T, 16, 1>>(b + q)).sum();
    for (; q + 4 <= n; q += 4)
      sum += (Eigen::Map<const Eigen::Array<T, 4, 1>>(a + q) * Eigen::Map<const Eigen::Array<T, 4, 1>>(b + q)).sum();
  }
  for (; q < n; ++q) sum += a[q] * b[q * stride];
  return sum;
}

// Strided image rows into dx: dst[q·stride] += a · src[q].
template <class T>
void add_scaled_to_strided(T* dst, int64_t stride, const T* src, T a, int64_t n) {
  if (stride == 1) return add_scaled_row(dst, src, 1, a, n);
  for (int64_t q = 0; q < n; ++q) dst[q * stride] += a * src[q];
}

// Calls f(channel, grid_channel) for every (batch item, group) plane pair: input plane `channel` of the
// batch, output plane `grid_channel`, its weights at grid_channel·taps (multiplier: grid channels per group).
template <class F>
void for_each_depthwise_plane(const ConvShape& cs, F&& f) {
  for (int64_t n = 0; n < cs.batch; ++n)
    for (int64_t c = 0; c < cs.groups; ++c)
      for (int64_t j = 0; j < cs.grid_channels; ++j) f(n * cs.groups + c, c * cs.grid_channels + j, n);
}

// The forward works on "phase planes": the zero-padded input plane split by stride, phase (rr, rc) holding the
// padded positions (i·sh + rr, j·sw + rc) at i·width + j. Kernel offset (kh, kw) then reads, for every output
// (oh, ow), element (oh + kh·dh / sh)·width + ow + kw·dw / sw of phase (kh·dh mod sh, kw·dw mod sw): with the
// output rows `width` apart too, one contiguous run covers the whole plane (the columns past the output's
// width are computed and dropped). So a 3×3 depthwise layer costs nine long vector multiply-adds per channel,
// not nine per output row. Padding enters as zeros times the weights, as in the im2col path.
struct PhaseLayout {
  int64_t sh = 1, sw = 1;  // strides
  int64_t width = 0, rows = 0, phase_size = 0;  // of each phase; phase_size includes the last run's overreach
  int64_t rows_out = 0;                          // output rows
  // Per phase column rc: the image columns it holds (every sw-th from first_col[rc], count[rc] of them) and where
  // the first goes in an image row's phase row. Worked out once a layer: a plane's copy zeroing and recomputing them
  // cost as much as its stride-2 copies.
  std::array<int64_t, kMaxPhaseStride> first_col{}, first_dst{}, count{};
  int64_t run() const { return rows_out * width; }
  // Where the run of a kernel offset dh rows, dw columns from the window's corner starts in the phases.
  int64_t offset(int64_t dh, int64_t dw) const {
    return ((dh % sh) * sw + dw % sw) * phase_size + (dh / sh) * width + dw / sw;
  }
};

PhaseLayout phase_layout(const WindowGeometry& g) {
  PhaseLayout l;
  l.sh = g.stride[0];
  l.sw = g.stride[1];
  const int64_t padded_h = g.image[0] + g.pad_begin[0] + g.pad_end[0];
  const int64_t padded_w = g.image[1] + g.pad_begin[1] + g.pad_end[1];
  const int64_t reach_h = (g.kernel[0] - 1) * g.dilation[0] / l.sh, reach_w = (g.kernel[1] - 1) * g.dilation[1] / l.sw;
  // A window of a ceil_mode pool may end past the padding: its last column must not wrap into the next row.
  l.width = std::max(ceil_div(padded_w, l.sw), g.grid[1] + reach_w);
  l.rows = std::max(ceil_div(padded_h, l.sh), g.grid[0] + reach_h);
  l.rows_out = g.grid[0];
  l.phase_size = l.rows * l.width + reach_w;  // the last run reads reach_w past the last row
  for (int64_t rc = 0; rc < l.sw; ++rc) {
    const auto r = static_cast<size_t>(rc);
    l.first_col[r] = ((rc - g.pad_begin[1]) % l.sw + l.sw) % l.sw;
    l.first_dst[r] = rc * l.phase_size + (l.first_col[r] + g.pad_begin[1]) / l.sw;
    l.count[r] = std::max<int64_t>(0, (g.image[1] - l.first_col[r] + l.sw - 1) / l.sw);
  }
  return l;
}

// even[t] = src[2t] for t < ⌈w/2⌉ and odd[t] = src[2t + 1] for t < ⌊w/2⌋: a row's two stride-2 phases in one pass.
// With AVX2, 16 inputs make 8 of each: two loads, stride2_lanes twice (loading the halves crosswise instead, to save
// its permutes, measured no faster). Two copy_stride2 calls a row, each ending on a masked load, were 30 % of
// mobilenet_v2's 32×32 stride-2 depthwise layer.
template <class T>
void deinterleave_row(const T* src, int64_t w, T* even, T* odd) {
  int64_t j = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; j + 16 <= w; j += 16) {
      const __m256 a = _mm256_loadu_ps(src + j), b = _mm256_loadu_ps(src + j + 8);
      _mm256_storeu_ps(even + j / 2, stride2_lanes<false>(a, b));
      _mm256_storeu_ps(odd + j / 2, stride2_lanes<true>(a, b));
    }
  }
#endif
  for (; j + 1 < w; j += 2) even[j / 2] = src[j], odd[j / 2] = src[j + 1];
  if (j < w) even[j / 2] = src[j];
}

// Every position of the phases outside the image gets `padding` (0 for a convolution). They are the same positions
// for every plane of a layer, and copy_into_phases writes only the others: filled once per scratch and layer, not per
// plane (filling per plane was a third of the stride-2 split).
template <class T>
void fill_phases(const PhaseLayout& l, T* phases, T padding) {
  std::fill_n(phases, l.sh * l.sw * l.phase_size, padding);
}

// The image positions of one input plane's phases (their padding from fill_phases).
template <class T>
void copy_into_phases(const WindowGeometry& g, const PhaseLayout& l, const T* plane, T* phases) {
  const int64_t w = g.image[1];
  // Stride 2: where image column 0 (and every even one) goes, and where column 1.
  const int64_t even_dst = l.first_dst[static_cast<size_t>(g.pad_begin[1] % 2)];
  const int64_t odd_dst = l.first_dst[static_cast<size_t>(1 - g.pad_begin[1] % 2)];
  int64_t row_phase = g.pad_begin[0] % l.sh, row_index = g.pad_begin[0] / l.sh;  // of image row 0
  for (int64_t ih = 0; ih < g.image[0]; ++ih) {
    T* base = phases + row_phase * l.sw * l.phase_size + row_index * l.width;
    const T* src = plane + ih * w;
    if (l.sw == 1) {
      copy_short(src, w, base + g.pad_begin[1]);
    } else if (l.sw == 2) {  // the common stride
      deinterleave_row(src, w, base + even_dst, base + odd_dst);
    } else {
      for (int64_t rc = 0; rc < l.sw; ++rc) {
        const auto r = static_cast<size_t>(rc);
        T* dst = base + l.first_dst[r];
        const T* from = src + l.first_col[r];
        for (int64_t t = 0; t < l.count[r]; ++t) dst[t] = from[t * l.sw];
      }
    }
    if (++row_phase == l.sh) row_phase = 0, ++row_index;
  }
}

// Without a channel multiplier, grids of up to this many point × kernel offset pairs take depthwise_small's blocks
// of planes: measured on the MobileNets at 64×64, it pays up to 8×8 grids of 3×3 (mobilenet_v2's 8×8 layer 0.048 ->
// 0.026 ms, mobilenet_v3_small's 4×4 grids of 5×5 0.043 -> 0.011) and loses from 16×16 (0.067 -> 0.173: the
// transposes then cost more than the phase planes).
constexpr int64_t kBlockedDepthwisePairs = 1024;
// The blocks copy each chunk of 16 whole input planes (transposed), so a tiny grid over a large image (a stride of
// hundreds) would hold the input again per chunk: planes of at most this many elements (64×64) take them.
constexpr int64_t kBlockedImageElements = 4096;

// Depthwise on small grids (a MobileNet's deep layers at small inputs: 2×2, 4×4 points; at most kWindowTablePairs
// point × kernel offset pairs, or kBlockedDepthwisePairs without a channel multiplier): each output point's input offset per kernel offset, or padding, is worked out once
// for all planes; without a channel multiplier 16 planes go at once (below), else each output is a scalar sum. The
// phase planes' per-plane set-up cost several times the arithmetic there. The same terms in the same order as the
// phase path (padding as zero times the weight, the bias added last).
template <class T>
void depthwise_small(const ConvShape& cs, const T* x, const T* w, const T* bias, NodeState& state, T* y) {
  const WindowGeometry& g = cs.geom;
  const int64_t image = g.image_size(), grid = g.grid_size(), taps = g.kernel_size();
  const int64_t out_channels = cs.groups * cs.grid_channels;
  const int64_t* offsets = cached_window_offsets(g, state.slot(7), state.slot(8));
  const int64_t planes = cs.batch * cs.groups, grain = grain_for(taps * grid * cs.grid_channels);
  // One output plane per input plane (no channel multiplier, as in the MobileNets): blocks of kLanes planes at once,
  // the planes transposed to position-major (each position's kLanes values together), so that each (point, kernel
  // offset) is one vector multiply-add across the block's channels.
  constexpr int64_t kLanes = 16;
  using Lanes = Eigen::Array<T, kLanes, 1>;
  const bool blocked = cs.grid_channels == 1;
  const int64_t chunks = chunk_count(planes, grain);
  if (blocked)
    for (int64_t c = 0; c < chunks; ++c) scratch<T>(state, chunk_slot(6, c), image + taps + 1 + grid, kLanes);
  parallel_for(planes, grain, [&](int64_t chunk, int64_t first, int64_t last) {
    if (blocked) {
      // [position · kLanes + lane] for the block's planes, then the weights [tap · kLanes + lane], the biases, and
      // the sums [point · kLanes + lane].
      T* xt = state.slot(chunk_slot(6, chunk)).data<T>();
      T* wt = xt + image * kLanes;
      T* bt = wt + taps * kLanes;
      T* yt = bt + kLanes;
      for (; first + kLanes <= last; first += kLanes) {
        transpose_into(x + first * image, kLanes, image, image, xt, kLanes);
        for (int64_t lane = 0; lane < kLanes; ++lane) {
          const int64_t m = (first + lane) % cs.groups;
          for (int64_t tap = 0; tap < taps; ++tap) wt[tap * kLanes + lane] = w[m * taps + tap];
          bt[lane] = bias ? bias[m] : T(0);
        }
        const Lanes zero = Lanes::Zero();
        for (int64_t pt = 0; pt < grid; ++pt) {
          const int64_t* off = offsets + pt * taps;
          Lanes sum = Lanes::Zero();
          for (int64_t tap = 0; tap < taps; ++tap) {
            const Eigen::Map<const Lanes> weights(wt + tap * kLanes);
            if (off[tap] < 0) {
              sum += weights * zero;
            } else {
              sum += weights * Eigen::Map<const Lanes>(xt + off[tap] * kLanes);
            }
          }
          Eigen::Map<Lanes>(yt + pt * kLanes) = sum + Eigen::Map<const Lanes>(bt);
        }
        transpose_into(yt, grid, kLanes, kLanes, y + first * grid, grid);
      }
    }
    for (int64_t plane = first; plane < last; ++plane) {
      const T* xp = x + plane * image;
      const int64_t n = plane / cs.groups, group = plane % cs.groups;
      for (int64_t m = group * cs.grid_channels; m < (group + 1) * cs.grid_channels; ++m) {
        const T* wm = w + m * taps;
        T* out = y + (n * out_channels + m) * grid;
        const T b = bias ? bias[m] : T(0);
        for (int64_t pt = 0; pt < grid; ++pt) {
          const int64_t* off = offsets + pt * taps;
          T sum = 0;
          for (int64_t tap = 0; tap < taps; ++tap) sum += wm[tap] * (off[tap] < 0 ? T(0) : xp[off[tap]]);
          out[pt] = sum + b;
        }
      }
    }
  });
}

// y = bias + Σ_taps w · x over each window, over chunks of input planes (each with its own phase scratch).
#if defined(__AVX512F__)
// Depthwise on AVX-512 floats with column stride 2: each output row in chunks of 16 columns, per kernel offset two
// masked loads of the input row and a permute of the even lanes (the lanes outside the image loaded as 0). The same
// terms in the same order as the phase planes' runs (a sum from 0 in kernel order, each term w·x a multiply then an
// add, a padding row's 0·w too, the bias added last), without splitting each plane into stride-2 phases:
// mobilenet_v2's 32×32 → 16×16 layer went 0.047–0.054 → 0.031–0.035 ms in order. Column stride 1 (one masked load)
// was level at 16×16 and slower at 32×32 (0.028 → 0.036) than the phase planes, which are then plain copies.
void depthwise_rows(const ConvShape& cs, const float* x, const float* w, const float* bias, float* y) {
  const WindowGeometry& g = cs.geom;
  const int64_t image = g.image_size(), grid = g.grid_size(), taps = g.kernel_size();
  const int64_t ih_count = g.image[0], iw_count = g.image[1], oh_count = g.grid[0], ow_count = g.grid[1];
  const int64_t kh_count = g.kernel[0], kw_count = g.kernel[1], sh = g.stride[0], sw = g.stride[1];
  const int64_t dh = g.dilation[0], dw = g.dilation[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
  const int64_t multiplier = cs.grid_channels, groups = cs.groups, out_channels = groups * multiplier;
  // The lanes j of a 16-wide (or, stride 2, 32-wide) window starting at input column `first` inside [0, iw_count).
  const auto inside = [iw_count](int64_t first, int64_t width) {
    const int64_t lo = std::clamp<int64_t>(-first, 0, width), hi = std::clamp<int64_t>(iw_count - first, 0, width);
    return hi <= lo ? uint32_t{0} : static_cast<uint32_t>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
  };
  parallel_for(cs.batch * groups, grain_for(taps * grid * multiplier), [&](int64_t, int64_t first_plane, int64_t last) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    std::array<uint32_t, kMaxDirectKernelWidth> load{};  // per kw: the window lanes to load
    for (int64_t plane = first_plane; plane < last; ++plane) {
      const float* xp = x + plane * image;
      const int64_t n = plane / groups, group = plane % groups;
      for (int64_t m = group * multiplier; m < (group + 1) * multiplier; ++m) {
        float* out = y + (n * out_channels + m) * grid;
        const float* wm = w + m * taps;
        const __m512 b = _mm512_set1_ps(bias ? bias[m] : 0.f);
        for (int64_t ow = 0; ow < ow_count; ow += 16) {
          const auto lanes = static_cast<__mmask16>(ow_count - ow >= 16 ? 0xffff : (1u << (ow_count - ow)) - 1);
          uint32_t need = lanes;  // stride 2: output lane j reads window element 2j
          if (sw == 2) {
            need = 0;
            for (int j = 0; j < 16; ++j) need |= ((uint32_t{lanes} >> j) & 1u) << (2 * j);
          }
          for (int64_t kw = 0; kw < kw_count; ++kw)
            load[static_cast<size_t>(kw)] = inside(ow * sw - pw + kw * dw, sw == 1 ? 16 : 32) & need;
          for (int64_t oh = 0; oh < oh_count; ++oh) {
            __m512 acc = _mm512_setzero_ps();
            for (int64_t kh = 0; kh < kh_count; ++kh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              const float* wk = wm + kh * kw_count;
              if (ih < 0 || ih >= ih_count) {  // a padding row: 0 · w per kernel offset
                for (int64_t kw = 0; kw < kw_count; ++kw)
                  acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(wk[kw]), _mm512_setzero_ps()));
                continue;
              }
              const float* src = xp + ih * iw_count + ow * sw - pw;
              for (int64_t kw = 0; kw < kw_count; ++kw) {
                const uint32_t l = load[static_cast<size_t>(kw)];
                const float* at = src + kw * dw;
                const __m512 v = sw == 1 ? _mm512_maskz_loadu_ps(static_cast<__mmask16>(l), at)
                                         : _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(static_cast<__mmask16>(l), at),
                                                                  even,
                                                                  _mm512_maskz_loadu_ps(static_cast<__mmask16>(l >> 16),
                                                                                        at + 16));
                acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(wk[kw]), v));
              }
            }
            _mm512_mask_storeu_ps(out + oh * ow_count + ow, lanes, _mm512_add_ps(acc, b));
          }
        }
      }
    }
  });
}
#endif

// Kernels of up to this many offsets (a 7×7 window) take sum_taps_in_registers.
constexpr int64_t kMaxRegisterTaps = 49;

// sums[i] = Σ_tap w[tap] · phases[start[tap] + i] over the run's whole blocks of 4 packets, each block's sums kept
// in registers across every kernel offset: the run in memory took a load and a store of the sums per offset besides
// the input's load (mobilenet_v2's stride-1 depthwise layers on AVX2: 6 GFLOP/s). The same terms in the same order
// as the loop over the run that finishes the rest: from 0, each w · x a multiply, then an add. Returns how many
// values it summed (a multiple of the block).
template <class T>
int64_t sum_taps_in_registers(const T* phases, const int64_t* start, const T* w, int64_t taps, int64_t run, T* sums) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr int64_t lanes = ei::packet_traits<T>::size, block = 4 * lanes;
  int64_t i = 0;
  for (; i + block <= run; i += block) {
    // Four named accumulators: as an array, -O2 zeroed it in memory (rep stos) for every block.
    P a0 = ei::pset1<P>(T(0)), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t tap = 0; tap < taps; ++tap) {
      const P wv = ei::pset1<P>(w[tap]);
      const T* src = phases + start[tap] + i;
      a0 = ei::padd(a0, ei::pmul(wv, ei::ploadu<P>(src)));
      a1 = ei::padd(a1, ei::pmul(wv, ei::ploadu<P>(src + lanes)));
      a2 = ei::padd(a2, ei::pmul(wv, ei::ploadu<P>(src + 2 * lanes)));
      a3 = ei::padd(a3, ei::pmul(wv, ei::ploadu<P>(src + 3 * lanes)));
    }
    ei::pstoreu(sums + i, a0);
    ei::pstoreu(sums + i + lanes, a1);
    ei::pstoreu(sums + i + 2 * lanes, a2);
    ei::pstoreu(sums + i + 3 * lanes, a3);
  }
  return i;
}

template <class T>
void depthwise_forward(const ConvShape& cs, const T* x, const T* w, const T* bias, NodeState& state, T* y) {
  const WindowGeometry& g = cs.geom;
  const int64_t image = g.image_size(), grid = g.grid_size(), taps = g.kernel_size();
  const int64_t out_channels = cs.groups * cs.grid_channels;
  if (cs.grid_channels == 1 ? grid * taps <= kBlockedDepthwisePairs && image <= kBlockedImageElements
                            : grid * taps <= kWindowTablePairs)
    return depthwise_small(cs, x, w, bias, state, y);
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>)
    if (g.stride[1] == 2) return depthwise_rows(cs, x, w, bias, y);
#endif
  const PhaseLayout l = phase_layout(g);
  const int64_t planes = cs.batch * cs.groups, grain = grain_for(taps * l.run() * cs.grid_channels);
  const int64_t chunks = chunk_count(planes, grain);
  for (int64_t c = 0; c < chunks; ++c) {
    scratch<T>(state, chunk_slot(4, c), l.sh * l.sw, l.phase_size);
    scratch<T>(state, chunk_slot(5, c), 1, l.run());
  }
  // Where each kernel offset's run starts in the phases, in kernel order.
  std::array<int64_t, kMaxRegisterTaps> tap_start{};
  if (taps <= kMaxRegisterTaps)
    for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
      for (int64_t kw = 0; kw < g.kernel[1]; ++kw)
        tap_start[static_cast<size_t>(kh * g.kernel[1] + kw)] = l.offset(kh * g.dilation[0], kw * g.dilation[1]);
  using Run = Eigen::Array<T, Eigen::Dynamic, 1>;
  parallel_for(planes, grain, [&](int64_t chunk, int64_t first, int64_t last) {
    T* phases = state.slot(chunk_slot(4, chunk)).data<T>();
    T* sums = state.slot(chunk_slot(5, chunk)).data<T>();
    fill_phases(l, phases, T(0));
    for (int64_t plane = first; plane < last; ++plane) {
      copy_into_phases(g, l, x + plane * image, phases);
      const int64_t n = plane / cs.groups, group = plane % cs.groups;
      for (int64_t m = group * cs.grid_channels; m < (group + 1) * cs.grid_channels; ++m) {
        int64_t done = 0;
        if (taps <= kMaxRegisterTaps)
          done = sum_taps_in_registers(phases, tap_start.data(), w + m * taps, taps, l.run(), sums);
        Eigen::Map<Run> acc(sums + done, l.run() - done);
        acc.setZero();
        for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            const T* src = phases + l.offset(kh * g.dilation[0], kw * g.dilation[1]);
            acc += w[m * taps + kh * g.kernel[1] + kw] * Eigen::Map<const Run>(src + done, l.run() - done);
          }
        T* out = y + (n * out_channels + m) * grid;
        const T b = bias ? bias[m] : T(0);
        for (int64_t oh = 0; oh < g.grid[0]; ++oh)
          Eigen::Map<Run>(out + oh * g.grid[1], g.grid[1]) =
              Eigen::Map<const Run>(sums + oh * l.width, g.grid[1]) + b;
      }
    }
  });
}

// The padding's terms of dw[tap] = Σ dy · x, which the loop over the image's positions leaves out: each is
// 0 · dy, nothing unless dy is infinite or NaN, when it is NaN, as in the im2col path and the frameworks.
template <class T>
void add_padding_terms(const WindowGeometry& g, const T* dy, T* dw) {
  const int64_t grid = g.grid_size();
  if (std::all_of(dy, dy + grid, [](T v) { return std::isfinite(v); })) return;
  for (int64_t oh = 0; oh < g.grid[0]; ++oh)
    for (int64_t ow = 0; ow < g.grid[1]; ++ow) {
      const T d = dy[oh * g.grid[1] + ow];
      if (std::isfinite(d)) continue;
      for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
          const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + kh * g.dilation[0];
          const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + kw * g.dilation[1];
          if (ih < 0 || ih >= g.image[0] || iw < 0 || iw >= g.image[1]) dw[kh * g.kernel[1] + kw] += T(0) * d;
        }
    }
}

// dx = Σ over windows of w · dy (dx zeroed first) and dw[m, tap] = Σ dy · x over the tap's positions.
template <class T>
void depthwise_backward(const ConvShape& cs, const T* x, const T* w, const T* dy, T* dx, T* dw) {
  const WindowGeometry& g = cs.geom;
  const int64_t image = g.image_size(), grid = g.grid_size(), taps = g.kernel_size(), s = g.stride[1];
  const int64_t out_channels = cs.groups * cs.grid_channels;
  if (dx) std::fill_n(dx, cs.batch * cs.groups * image, T(0));
  if (dw) std::fill_n(dw, out_channels * taps, T(0));
  for_each_depthwise_plane(cs, [&](int64_t plane, int64_t m, int64_t n) {
    const T* g_out = dy + (n * out_channels + m) * grid;
    for_each_window_tap(g, [&](int64_t oh, int64_t ih, int64_t tap, int64_t, int64_t first, int64_t lo,
                               int64_t hi) {
      const int64_t offset = plane * image + ih * g.image[1] + first + lo * s, len = hi - lo;
      const T* grad = g_out + oh * g.grid[1] + lo;
      if (dx) add_scaled_to_strided(dx + offset, s, grad, w[m * taps + tap], len);
      if (dw) dw[m * taps + tap] += dot_row(grad, x + offset, s, len);
    });
    if (dw) add_padding_terms(g, g_out, dw + m * taps);
  });
}

using ShapeFn = Status (*)(const Node&, const Tensor&, const Tensor&, const Tensor*, ConvShape&);

template <bool Transposed>
Status conv_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* bias = ctx.input(2);
  ConvShape cs;
  constexpr ShapeFn shape_fn = Transposed ? conv_transpose_shape : conv_shape;
  GRIST_TRY(shape_fn(ctx.node, x, w, bias, cs));
  const int64_t out_channels = cs.groups * (Transposed ? cs.image_channels : cs.grid_channels);
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), batch_channel_shape(cs.batch, out_channels, cs.geom, Transposed ? cs.geom.image : cs.geom.grid));
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* b = bias ? bias->data<T>() : nullptr;
    if constexpr (Transposed) {
      grid_to_image<T>(cs, x.data<T>(), w.data<T>(), b, ctx.state, y.data<T>());
    } else if (is_depthwise_2d(cs)) {
      depthwise_forward<T>(cs, x.data<T>(), w.data<T>(), b, ctx.state, y.data<T>());
    } else {
      image_to_grid<T>(cs, x.data<T>(), w.data<T>(), b, ctx.state, y.data<T>());
    }
  });
  return Status::ok();
}

template <bool Transposed>
Status conv_backward(BackwardContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor* bias = ctx.input(2);
  Tensor* dx = ctx.grad_input(0);
  Tensor* dw = ctx.grad_input(1);
  Tensor* db = bias ? ctx.grad_input(2) : nullptr;
  if (dx) dx->resize(x.dtype(), x.shape());
  if (dw) dw->resize(w.dtype(), w.shape());
  if (db) db->resize(bias->dtype(), bias->shape());
  const Tensor* dy = ctx.grad_output(0);
  ConvShape cs;
  constexpr ShapeFn shape_fn = Transposed ? conv_transpose_shape : conv_shape;
  GRIST_TRY(shape_fn(ctx.node, x, w, bias, cs));
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // Conv: image = X, grid = dY. ConvTranspose: image = dY, grid = X.
    const T* pdy = dy->data<T>();
    const T* px = x.data<T>();
    const T* image = Transposed ? pdy : px;
    const T* grid = Transposed ? px : pdy;
    if (!Transposed && is_depthwise_2d(cs)) {
      depthwise_backward<T>(cs, px, w.data<T>(), pdy, dx ? dx->data<T>() : nullptr, dw ? dw->data<T>() : nullptr);
    } else {
      if (dx) {
        if constexpr (Transposed) {
          image_to_grid<T>(cs, pdy, w.data<T>(), nullptr, ctx.state, dx->data<T>());
        } else {
          grid_to_image<T>(cs, pdy, w.data<T>(), nullptr, ctx.state, dx->data<T>());
        }
      }
      if (dw) weight_gradient<T>(cs, image, grid, ctx.state, dw->data<T>(), dw->numel());
    }
    if (db) {
      const int64_t spatial = Transposed ? cs.geom.image_size() : cs.geom.grid_size();
      sum_channel_gradient<T>(pdy, cs.batch, db->numel(), spatial, db->data<T>());
    }
  });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Pooling. MaxPool and AveragePool visit windows a kernel offset at a time, along lines of the grid's
// last dimension ("segments"): window bounds are worked out once per segment instead of once per output,
// and consecutive outputs are independent work the processor can overlap. The global pools reduce whole
// planes. MaxPool keeps the argmax (flat index into X) in the node state for the backward.

enum class PoolKind { Max, Average, GlobalMax, GlobalAverage };

constexpr bool is_max(PoolKind k) { return k == PoolKind::Max || k == PoolKind::GlobalMax; }
constexpr bool is_global(PoolKind k) { return k == PoolKind::GlobalMax || k == PoolKind::GlobalAverage; }

Status pool_geometry(const Node& node, PoolKind kind, const Shape& x, WindowGeometry& g) {
  if (x.rank() < 3) return node_error(node, fmt::format("needs an input of rank 3 or more, got {}", x.str()));
  const int rank = x.rank() - 2;
  if (is_global(kind)) {
    g.rank = rank;
    set_spatial(x, g.image);
    for (int d = 0; d < rank; ++d) {
      g.kernel[d] = g.image[d];
      g.stride[d] = g.dilation[d] = g.grid[d] = 1;
    }
    return Status::ok();
  }
  std::span<const int64_t> kernel = ints_attr(node, "kernel_shape");
  if (kernel.empty()) return node_error(node, "the kernel_shape attribute is required");
  GRIST_TRY(read_window_attrs(node, rank, kernel, g));
  set_spatial(x, g.image);
  AutoPad auto_pad;
  GRIST_TRY(read_auto_pad(node, auto_pad));
  return compute_grid(node, auto_pad, node.attr_int("ceil_mode", 0) != 0, g);
}

// Whether every window reads at least one input element: a window over padding alone gives −inf (max) or
// 0/0 (an average without the padding), a value that is none of the input's.
bool every_window_reads_input(const WindowGeometry& g) {
  for (int d = 0; d < g.rank; ++d) {
    for (int64_t p = 0; p < g.grid[d]; ++p) {
      int64_t lo = 0, hi = 0;
      valid_range(p * g.stride[d] - g.pad_begin[d], g.dilation[d], g.image[d], g.kernel[d], lo, hi);
      if (lo >= hi) return false;
    }
  }
  return true;
}

// The pooled output's shape (OpDef::shape). It refuses windows over padding alone, whose outputs are not
// input values, and MaxPool's argmax output, which holds indices, not values.
template <PoolKind Kind>
Status pool_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  if (c.node.outputs.size() > 1 && c.node.outputs[1] != kNoValue)
    return node_error(c.node, "the argmax output has no rule here");
  const Shape& x = *c.shape(0);
  WindowGeometry g;
  GRIST_TRY(pool_geometry(c.node, Kind, x, g));
  if (!every_window_reads_input(g)) return node_error(c.node, "a window reads only padding");
  out.assign(c.node.outputs.size(), batch_channel_shape(x[0], x[1], g, g.grid));
  return Status::ok();
}

// One kernel offset over one line of the grid's last dimension: grid points [lo, hi) of the line read
// image elements first + j·stride of one image line; the others read padding.
struct Segment {
  int64_t channel;
  int64_t grid;   // offset of the line's first grid point within its channel's grid
  int64_t image;  // offset of the image line read, channel included (only when `inside`)
  bool inside;    // the image line exists (is not padding) in every dimension but the last
  int64_t first;  // position in the image line read by the line's first grid point
  int64_t lo, hi;
};

template <class F>
void for_each_segment(const WindowGeometry& g, int64_t channels, F&& f) {
  const int last = g.rank - 1;
  const int64_t grid_size = g.grid_size(), kernel_size = g.kernel_size(), image_size = g.image_size();
  const int64_t line = g.grid[last];
  if (grid_size == 0) return;
  const int64_t outer_points = grid_size / line;
  for (int64_t c = 0; c < channels; ++c) {
    SpatialArray k{};
    for (int64_t kf = 0; kf < kernel_size; ++kf) {
      Segment seg{};
      seg.channel = c;
      seg.first = k[last] * g.dilation[last] - g.pad_begin[last];
      valid_range(seg.first, g.stride[last], g.image[last], line, seg.lo, seg.hi);
      SpatialArray p{};
      for (int64_t outer = 0; outer < outer_points; ++outer) {
        seg.inside = true;
        int64_t offset = 0;
        for (int d = 0; d < last; ++d) {
          const int64_t i = p[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
          seg.inside &= i >= 0 && i < g.image[d];
          offset = offset * g.image[d] + i;
        }
        seg.grid = outer * line;
        seg.image = c * image_size + offset * g.image[last];
        f(seg);
        for (int d = last - 1; d >= 0; --d) {
          if (++p[d] < g.grid[d]) break;
          p[d] = 0;
        }
      }
      for (int d = last; d >= 0; --d) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
  }
}

template <class T>
bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// a where `take`, else b, by masking bits: the comparisons deciding max pooling are a coin toss on real
// data, and a branch on them (which compilers emit for a plain ?:) keeps being mispredicted.
template <class T>
T select(bool take, T a, T b) {
  using Bits = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  const auto mask = static_cast<Bits>(-static_cast<Bits>(take));
  return std::bit_cast<T>(static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
}

// Max pooling's rule, as PyTorch's: a larger value or any NaN takes over (so a NaN in the window wins).
template <class T>
bool takes_over(T v, T best) {
  return (v > best) | is_nan_value(v);
}

// Max-pooling update by takes_over; the first value of a window always takes.
template <class T>
void take_if_larger(T v, int64_t index, T& best, int64_t& best_index) {
  const bool take = (best_index < 0) | takes_over(v, best);
  best = select(take, v, best);
  best_index = select(take, index, best_index);
}

// Max over each window without the argmax, which only the backward needs (and works out again): the values
// of max_pool_forward_typed, a larger value or any NaN taking over, visiting each window's offsets in the same
// order. 2-D windows (the CNNs' pools) are reduced one output at a time in registers, with each output row's and
// column's range inside the image worked out once; other ranks go a kernel offset at a time along lines.
// max(a, b), a NaN in a, else in b, taking over (Eigen 3.4's vectorised functor; its Array::max cannot ask for it).
template <class T>
using NanPropagatingMax = Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>;

template <class T>
void max_pool_values(const WindowGeometry& g, int64_t planes, const T* x, NodeState& state, T* y) {
  const int64_t grid_size = g.grid_size(), image_size = g.image_size(), s = g.stride[g.rank - 1];
  const T empty =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  auto take = [](T v, T best) { return select(takes_over(v, best), v, best); };
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const int64_t taps = g.kernel_size();
    constexpr int64_t kLanes = 16;
    if (g.rank == 2 && planes >= kLanes && grid_size * taps <= kBlockedDepthwisePairs &&
        image_size <= kBlockedImageElements) {
      // Small grids (SqueezeNet's 3×3 to 15×15 at 64×64), as depthwise_small: 16 planes at once, transposed to
      // position-major, one vector max per (point, kernel offset) through the offset table, padding reading a row
      // of −inf; the kernel offsets in the same order as on the phase planes, the new value first. The phase
      // planes' per-plane set-up cost several times the comparisons there.
      using Lanes = Eigen::Array<T, kLanes, 1>;
      const int64_t* offsets = cached_window_offsets(g, state.slot(4), state.slot(8));
      T* xt = scratch<T>(state, 5, image_size + 1, kLanes);  // [position · kLanes + lane], then the padding row
      std::fill_n(xt + image_size * kLanes, kLanes, empty);
      int64_t plane = 0;
      T* yt = scratch<T>(state, 6, grid_size, kLanes);  // the maxima [point · kLanes + lane]
      for (; plane + kLanes <= planes; plane += kLanes) {
        transpose_into(x + plane * image_size, kLanes, image_size, image_size, xt, kLanes);
        for (int64_t pt = 0; pt < grid_size; ++pt) {
          const int64_t* off = offsets + pt * taps;
          Lanes acc = Lanes::Constant(empty);
          for (int64_t tap = 0; tap < taps; ++tap) {
            const T* src = xt + (off[tap] < 0 ? image_size : off[tap]) * kLanes;
            acc = Eigen::Map<const Lanes>(src).binaryExpr(acc, NanPropagatingMax<T>());
          }
          Eigen::Map<Lanes>(yt + pt * kLanes) = acc;
        }
        transpose_into(yt, grid_size, kLanes, kLanes, y + plane * grid_size, grid_size);
      }
      if (plane < planes) max_pool_values(g, planes - plane, x + plane * image_size, state, y + plane * grid_size);
      return;
    }
    if (g.rank == 2 && g.stride[1] <= kMaxPhaseStride) {
      // On phase planes padded with −inf, as the depthwise convolution: one vector max per kernel offset over
      // the whole plane. The new value goes first, so that a NaN in it takes over and one already taken stays.
      const PhaseLayout l = phase_layout(g);
      T* phases = scratch<T>(state, 2, l.sh * l.sw, l.phase_size);
      T* best = scratch<T>(state, 3, 1, l.run());
      using Run = Eigen::Array<T, Eigen::Dynamic, 1>;
      fill_phases(l, phases, empty);
      for (int64_t plane = 0; plane < planes; ++plane) {
        copy_into_phases(g, l, x + plane * image_size, phases);
        Eigen::Map<Run> acc(best, l.run());
        acc.setConstant(empty);
        for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            const T* src = phases + l.offset(kh * g.dilation[0], kw * g.dilation[1]);
            acc = Eigen::Map<const Run>(src, l.run()).binaryExpr(acc, NanPropagatingMax<T>());
          }
        T* out = y + plane * grid_size;
        for (int64_t oh = 0; oh < g.grid[0]; ++oh)
          std::copy_n(best + oh * l.width, g.grid[1], out + oh * g.grid[1]);
      }
      return;
    }
  }
  if (g.rank == 2) {
    const int64_t oh_count = g.grid[0], ow_count = g.grid[1], width = g.image[1], dil = g.dilation[1];
    // Output columns [inner_lo, inner_hi) have every kernel column inside the image.
    int64_t inner_lo = 0, inner_hi = 0;
    {
      const int64_t reach = (g.kernel[1] - 1) * dil;  // last kernel column's offset from the first
      inner_lo = std::min(ow_count, ceil_div(g.pad_begin[1], s));
      inner_hi = std::max(inner_lo, std::min(ow_count, floor_div(width - 1 - reach + g.pad_begin[1], s) + 1));
    }
    for (int64_t plane = 0; plane < planes; ++plane) {
      const T* in = x + plane * image_size;
      T* out = y + plane * grid_size;
      for (int64_t oh = 0; oh < oh_count; ++oh) {
        int64_t kh_lo, kh_hi;
        const int64_t row0 = oh * g.stride[0] - g.pad_begin[0];
        valid_range(row0, g.dilation[0], g.image[0], g.kernel[0], kh_lo, kh_hi);
        T* dst = out + oh * ow_count;
        auto one = [&](int64_t ow) {  // an output whose window may reach into the padding
          int64_t kw_lo, kw_hi;
          const int64_t col0 = ow * s - g.pad_begin[1];
          valid_range(col0, dil, width, g.kernel[1], kw_lo, kw_hi);
          T best = empty;
          for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
            const T* row = in + (row0 + kh * g.dilation[0]) * width + col0;
            for (int64_t kw = kw_lo; kw < kw_hi; ++kw) best = take(row[kw * dil], best);
          }
          dst[ow] = best;
        };
        for (int64_t ow = 0; ow < inner_lo; ++ow) one(ow);
        // Inside: a kernel offset at a time over the row's outputs, independent chains the processor overlaps.
        std::fill(dst + inner_lo, dst + inner_hi, empty);
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
          const T* row = in + (row0 + kh * g.dilation[0]) * width - g.pad_begin[1];
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            const T* src = row + kw * dil;
            for (int64_t ow = inner_lo; ow < inner_hi; ++ow) dst[ow] = take(src[ow * s], dst[ow]);
          }
        }
        for (int64_t ow = inner_hi; ow < ow_count; ++ow) one(ow);
      }
    }
    return;
  }
  std::fill_n(y, planes * grid_size, empty);
  for_each_segment(g, planes, [&](const Segment& seg) {
    if (!seg.inside) return;
    T* dst = y + seg.channel * grid_size + seg.grid;
    const T* src = x + seg.image + seg.first;
    for (int64_t j = seg.lo; j < seg.hi; ++j) dst[j] = take(src[j * s], dst[j]);
  });
}

// Max over each window; argmax gets the flat index into x, -1 for a window entirely in the padding
// (whose output is -inf, or the lowest value of an integer type).
template <class T>
void max_pool_forward_typed(const WindowGeometry& g, bool global, int64_t planes, const T* x, T* y, int64_t* argmax) {
  const int64_t grid_size = g.grid_size(), image_size = g.image_size();
  const T empty =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  std::fill_n(y, planes * grid_size, empty);
  std::fill_n(argmax, planes * grid_size, int64_t{-1});
  if (global) {
    for (int64_t plane = 0; plane < planes; ++plane)
      for (int64_t i = plane * image_size; i < (plane + 1) * image_size; ++i)
        take_if_larger(x[i], i, y[plane], argmax[plane]);
    return;
  }
  const int64_t s = g.stride[g.rank - 1];
  for_each_segment(g, planes, [&](const Segment& seg) {
    if (!seg.inside) return;
    const int64_t out = seg.channel * grid_size + seg.grid, base = seg.image + seg.first;
    for (int64_t j = seg.lo; j < seg.hi; ++j)
      take_if_larger(x[base + j * s], base + j * s, y[out + j], argmax[out + j]);
  });
}

// ONNX Indices: row-major flat indices (storage_order 0), or with the spatial part column-major (1).
void write_indices(const Tensor& argmax, const WindowGeometry& g, bool column_major, Tensor& indices) {
  indices.copy_from(argmax);
  if (!column_major) return;
  const int64_t image_size = g.image_size();
  for (int64_t& v : indices.span<int64_t>()) {
    if (v < 0) continue;
    const int64_t plane = v / image_size;
    int64_t rest = v % image_size, col_major = 0, stride = 1;
    SpatialArray idx{};
    for (int d = g.rank - 1; d >= 0; --d) {
      idx[d] = rest % g.image[d];
      rest /= g.image[d];
    }
    for (int d = 0; d < g.rank; ++d) {
      col_major += idx[d] * stride;
      stride *= g.image[d];
    }
    v = plane * image_size + col_major;
  }
}

// The divisor of every window of one plane: the elements it covers in the image, or with
// count_include_pad the positions it covers in the padded image.
template <class T>
void window_counts(const WindowGeometry& g, bool count_include_pad, T* counts) {
  WindowGeometry counted = g;
  if (count_include_pad) {
    for (int d = 0; d < g.rank; ++d) {
      counted.image[d] += g.pad_begin[d] + g.pad_end[d];
      counted.pad_begin[d] = 0;
    }
  }
  std::fill_n(counts, g.grid_size(), T(0));
  for_each_segment(counted, 1, [&](const Segment& seg) {
    if (!seg.inside) return;
    for (int64_t j = seg.lo; j < seg.hi; ++j) counts[seg.grid + j] += T(1);
  });
}

template <class T>
void average_pool_forward_typed(const WindowGeometry& g, bool global, bool count_include_pad, int64_t planes,
                                const T* x, T* y, NodeState& state) {
  const int64_t grid_size = g.grid_size(), image_size = g.image_size();
  if (global) {
    for (int64_t plane = 0; plane < planes; ++plane) {
      T sum = 0;
      for (int64_t i = plane * image_size; i < (plane + 1) * image_size; ++i) sum += x[i];
      y[plane] = sum / static_cast<T>(image_size);
    }
    return;
  }
  std::fill_n(y, planes * grid_size, T(0));
  const int64_t s = g.stride[g.rank - 1];
  for_each_segment(g, planes, [&](const Segment& seg) {
    if (!seg.inside) return;
    T* sums = y + seg.channel * grid_size + seg.grid;
    const T* src = x + seg.image + seg.first;
    for (int64_t j = seg.lo; j < seg.hi; ++j) sums[j] += src[j * s];
  });
  T* counts = scratch<T>(state, 1, 1, grid_size);
  window_counts(g, count_include_pad, counts);
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o = 0; o < grid_size; ++o) y[plane * grid_size + o] /= counts[o];
}

template <PoolKind Kind>
Status pool_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  WindowGeometry g;
  GRIST_TRY(pool_geometry(ctx.node, Kind, x.shape(), g));
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), batch_channel_shape(x.shape()[0], x.shape()[1], g, g.grid));
  const int64_t planes = x.shape()[0] * x.shape()[1];
  bool supported;
  if constexpr (is_max(Kind)) {
    Tensor& argmax = ctx.state.slot(0);
    Tensor* indices = ctx.output(1);
    if (Kind == PoolKind::Max && !indices) {
      argmax.resize(DType::Int64, Shape{0});  // stale (its capacity kept): the backward works it out again
      supported = dispatch_numeric(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        max_pool_values<T>(g, planes, x.data<T>(), ctx.state, y.data<T>());
      });
      if (!supported) return node_error(ctx.node, fmt::format("unsupported dtype {}", dtype_name(x.dtype())));
      return Status::ok();
    }
    argmax.resize(DType::Int64, y.shape());
    supported = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      max_pool_forward_typed<T>(g, is_global(Kind), planes, x.data<T>(), y.data<T>(), argmax.data<int64_t>());
    });
    if (supported && indices) write_indices(argmax, g, ctx.node.attr_int("storage_order", 0) != 0, *indices);
  } else {
    const bool count_include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
    supported = dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      average_pool_forward_typed<T>(g, is_global(Kind), count_include_pad, planes, x.data<T>(), y.data<T>(), ctx.state);
    });
  }
  if (!supported) return node_error(ctx.node, fmt::format("unsupported dtype {}", dtype_name(x.dtype())));
  return Status::ok();
}

// MaxPool: each output's gradient goes to the element it selected.
template <class T>
void max_pool_backward_typed(const int64_t* argmax, const Tensor& dy, Tensor& dx) {
  const T* g_out = dy.data<T>();
  T* g_in = dx.data<T>();
  for (int64_t o = 0; o < dy.numel(); ++o)
    if (argmax[o] >= 0) g_in[argmax[o]] += g_out[o];
}

// AveragePool: each output's gradient is shared equally by the elements its average counted.
template <class T>
void average_pool_backward_typed(const WindowGeometry& g, bool global, bool count_include_pad, int64_t planes,
                                 const T* dy, T* dx, NodeState& state) {
  const int64_t grid_size = g.grid_size(), image_size = g.image_size();
  if (global) {
    for (int64_t plane = 0; plane < planes; ++plane)
      std::fill_n(dx + plane * image_size, image_size, dy[plane] / static_cast<T>(image_size));
    return;
  }
  T* counts = scratch<T>(state, 1, 1, grid_size);
  window_counts(g, count_include_pad, counts);
  const int64_t s = g.stride[g.rank - 1];
  for_each_segment(g, planes, [&](const Segment& seg) {
    if (!seg.inside) return;
    const T* g_out = dy + seg.channel * grid_size + seg.grid;
    T* dst = dx + seg.image + seg.first;
    for (int64_t j = seg.lo; j < seg.hi; ++j) dst[j * s] += g_out[j] / counts[seg.grid + j];
  });
}

// MaxPool's backward where the forward kept the values alone, for 2×2 windows at stride 2 that lie inside the image
// (no padding, no dilation: the pools of every MNIST CNN in the zoo). Each window is searched again as
// max_pool_forward_typed searches it, without an argmax array written and read back: working that out through the
// general segments, zeroing dx and adding into it at scattered positions was 18 % of zoo 44's hunt. The take-over
// rule is associative (the result is the window's last NaN, else its first maximum), so the four taps go as a
// tournament of the two rows' pairs. The windows do not overlap: every element of dx is written once, in row order
// (0 + dy, as the add to a zeroed dx gives, or 0). Branch-free, since the comparisons go either way at random.
template <class T>
void max_pool_backward_2x2(const WindowGeometry& g, int64_t planes, const T* x, const T* dy, T* dx) {
  const int64_t oh_count = g.grid[0], ow_count = g.grid[1], width = g.image[1];
  const int64_t image_size = g.image_size(), grid_size = g.grid_size();
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t oh = 0; oh < oh_count; ++oh) {
      const T* top = x + plane * image_size + 2 * oh * width;
      const T* bottom = top + width;
      T* grad_top = dx + plane * image_size + 2 * oh * width;
      T* grad_bottom = grad_top + width;
      const T* grad_out = dy + plane * grid_size + oh * ow_count;
      for (int64_t ow = 0; ow < ow_count; ++ow) {
        const T a = top[2 * ow], b = top[2 * ow + 1], c = bottom[2 * ow], d = bottom[2 * ow + 1];
        const bool right_top = takes_over(b, a), right_bottom = takes_over(d, c);
        const bool below = takes_over(select(right_bottom, d, c), select(right_top, b, a));
        const bool right = (below & right_bottom) | (!below & right_top);
        const T grad = T(0) + grad_out[ow];
        grad_top[2 * ow] = select(!below & !right, grad, T(0));
        grad_top[2 * ow + 1] = select(!below & right, grad, T(0));
        grad_bottom[2 * ow] = select(below & !right, grad, T(0));
        grad_bottom[2 * ow + 1] = select(below & right, grad, T(0));
      }
      std::fill(grad_top + 2 * ow_count, grad_top + width, T(0));  // an odd width's last column
      std::fill(grad_bottom + 2 * ow_count, grad_bottom + width, T(0));
    }
    std::fill(dx + plane * image_size + 2 * oh_count * width, dx + (plane + 1) * image_size, T(0));  // last row
  }
}

bool tiles_2x2(const WindowGeometry& g) {
  return g.rank == 2 && g.kernel[0] == 2 && g.kernel[1] == 2 && g.stride[0] == 2 && g.stride[1] == 2 &&
         g.dilation[0] == 1 && g.dilation[1] == 1 && g.pad_begin[0] == 0 && g.pad_begin[1] == 0 &&
         2 * g.grid[0] <= g.image[0] && 2 * g.grid[1] <= g.image[1];
}

template <PoolKind Kind>
Status pool_backward(BackwardContext& ctx) {
  const Tensor& x = *ctx.input(0);
  Tensor* dx = ctx.grad_input(0);
  if (!dx) return Status::ok();
  const Tensor* dy = ctx.grad_output(0);
  if constexpr (is_max(Kind)) {
    Tensor& argmax = ctx.state.slot(0);
    if (argmax.dtype() != DType::Int64 || argmax.numel() != dy->numel()) {  // the forward kept the values only
      WindowGeometry g;
      GRIST_TRY(pool_geometry(ctx.node, Kind, x.shape(), g));
      if (!is_global(Kind) && tiles_2x2(g)) {
        dx->resize(x.dtype(), x.shape());  // every element written
        dispatch_float(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          max_pool_backward_2x2<T>(g, x.shape()[0] * x.shape()[1], x.data<T>(), dy->data<T>(), dx->data<T>());
        });
        return Status::ok();
      }
      argmax.resize(DType::Int64, dy->shape());
      Tensor& values = ctx.state.slot(1);
      values.resize(x.dtype(), dy->shape());
      dispatch_float(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        max_pool_forward_typed<T>(g, is_global(Kind), x.shape()[0] * x.shape()[1], x.data<T>(), values.data<T>(),
                                  argmax.data<int64_t>());
      });
    }
    dx->resize_zero(x.dtype(), x.shape());
    dispatch_float(x.dtype(),
                   [&](auto tag) { max_pool_backward_typed<decltype(tag)>(argmax.data<int64_t>(), *dy, *dx); });
  } else {
    dx->resize_zero(x.dtype(), x.shape());
    WindowGeometry g;
    GRIST_TRY(pool_geometry(ctx.node, Kind, x.shape(), g));
    const bool count_include_pad = ctx.node.attr_int("count_include_pad", 0) != 0;
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      average_pool_backward_typed<T>(g, is_global(Kind), count_include_pad, x.shape()[0] * x.shape()[1], dy->data<T>(),
                                     dx->data<T>(), ctx.state);
    });
  }
  return Status::ok();
}

}  // namespace

namespace {
// Interval transfers (grist scan): convolutions are bilinear (ops/bounds.h); max pooling selects.
// A large input holds one interval per channel (blocks [1, C, 1, ...] or [N, C, 1, ...]) or one for all
// its elements: each output of channel o sums a subset of x_c·w over its filter slice (padding and
// transposed strides drop terms), so with x'_c = hull(x_c, 0) the full slice sum bounds every subset.
// The output keeps one interval per channel. O(|W|) instead of convolutions of the whole tensor.
bool spatially_shared(const IntervalTensor& x) {
  if (!x.smashed() && !x.blocked()) return false;
  const Shape g = x.grid();
  for (int d = 2; d < g.rank(); ++d)
    if (g[d] != 1) return false;
  return g.rank() >= 3;
}

Status conv_channel_bounds(BoundsContext& c, bool transpose) {
  const IntervalTensor* x = c.partitioned(0);
  const IntervalTensor* w = c.input(1);
  const IntervalTensor* b = c.input(2);
  // The output shape from the ONNX formulas, without running the convolution.
  const int spatial = x->shape.rank() - 2;
  if (spatial < 1 || w->shape.rank() != x->shape.rank()) return bounds_unbounded(c);
  const auto strides = c.node.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  const auto dilations = c.node.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  const auto pads = c.node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  const auto out_pad = c.node.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  const std::string auto_pad = c.node.attr_string("auto_pad", "NOTSET");
  const int64_t group = c.node.attr_int("group", 1);
  // A malformed node (the kernel rejects it) must not be indexed here.
  const auto sp = static_cast<size_t>(spatial);
  bool well_formed = strides.size() == sp && dilations.size() == sp && pads.size() == 2 * sp &&
                     out_pad.size() == sp && group >= 1 && x->shape[1] % group == 0 &&
                     (transpose ? w->shape[0] == x->shape[1] : w->shape[1] * group == x->shape[1]);
  for (size_t d = 0; d < sp && well_formed; ++d) well_formed = strides[d] > 0 && dilations[d] > 0;
  if (!well_formed) return bounds_unbounded(c);
  if (c.node.has_attr("output_shape") || (auto_pad != "NOTSET" && auto_pad != "VALID")) return bounds_unbounded(c);
  const int64_t out_channels = transpose ? w->shape[1] * group : w->shape[0];
  Shape shape{x->shape[0], out_channels};
  for (int d = 0; d < spatial; ++d) {
    const int64_t k = (w->shape[2 + d] - 1) * dilations[d] + 1;
    const int64_t pad = auto_pad == "VALID" ? 0 : pads[d] + pads[spatial + d];
    shape.push_back(transpose ? strides[d] * (x->shape[2 + d] - 1) + out_pad[d] + k - pad
                              : (x->shape[2 + d] + pad - k) / strides[d] + 1);
  }
  c.outputs[0] = IntervalTensor::unbounded(x->dtype, shape);
  if (!x->bounded() || !w->bounded() || (b && !b->bounded()) || w->shape.rank() < 2) return Status::ok();
  const int64_t in_channels = x->shape[1];
  if (group < 1 || in_channels % group || out_channels % group || out_channels == 0) return Status::ok();
  std::vector<Interval> xz = hulls_along(*x, 1);  // per input channel, joined with 0 (the padding)
  for (Interval& i : xz) i = {std::min(i.lo, 0.0), std::max(i.hi, 0.0)};
  const int64_t inner = w->shape.numel(2, w->shape.rank());
  const int64_t in_per_group = in_channels / group, out_per_group = out_channels / group;
  std::vector<double> lo(static_cast<size_t>(out_channels)), hi(lo.size());
  for (int64_t o = 0; o < out_channels; ++o) {
    const int64_t gi = o / out_per_group;
    double l = 0, h = 0, mag = 0;
    int64_t terms = 0;
    for (int64_t c0 = 0; c0 < in_per_group; ++c0) {
      const int64_t ch = gi * in_per_group + c0;
      const Interval xc = xz[static_cast<size_t>(ch)];
      for (int64_t k = 0; k < inner; ++k) {
        // Conv weights are [O, C/group, k...]; ConvTranspose weights [C, O/group, k...].
        const int64_t i = transpose ? (ch * w->shape[1] + o % out_per_group) * inner + k : (o * w->shape[1] + c0) * inner + k;
        const Interval wi = w->at(i);
        const double p[4] = {xc.lo * wi.lo, xc.lo * wi.hi, xc.hi * wi.lo, xc.hi * wi.hi};
        l += std::min({p[0], p[1], p[2], p[3]});
        h += std::max({p[0], p[1], p[2], p[3]});
        mag += std::max(std::fabs(xc.lo), std::fabs(xc.hi)) * std::max(std::fabs(wi.lo), std::fabs(wi.hi));
        ++terms;
      }
    }
    if (b) {
      const Interval bi = b->at(b->numel() == out_channels ? o : 0);
      l += bi.lo, h += bi.hi, mag += std::max(std::fabs(bi.lo), std::fabs(bi.hi));
    }
    if (!(mag <= FLT_MAX)) return Status::ok();  // partial sums may overflow: ±inf or NaN (unbounded)
    const double err = sum_error_f32(terms + 2, mag);
    lo[static_cast<size_t>(o)] = round_down_f32(l - err);
    hi[static_cast<size_t>(o)] = round_up_f32(h + err);
  }
  IntervalTensor& y = c.outputs[0];
  if (shape.numel() == 0) return Status::ok();
  y.lo = std::move(lo);
  y.hi = std::move(hi);
  Shape grid{1, out_channels};
  for (int d = 0; d < spatial; ++d) grid.push_back(1);
  y.set_grid(grid);
  y.may_be_nan = false;
  return Status::ok();
}
Status conv_bounds(BoundsContext& c) {
  const IntervalTensor* w = c.input(1);
  if (!w || w->shape.rank() == 0 || w->shape[0] == 0 || !c.input(0)) return bounds_unbounded(c);
  if (spatially_shared(*c.partitioned(0))) return conv_channel_bounds(c, false);
  return bounds_bilinear(c, w->numel() / w->shape[0]);
}
Status conv_transpose_bounds(BoundsContext& c) {
  const IntervalTensor* w = c.input(1);
  if (!w || !c.input(0)) return bounds_unbounded(c);
  if (spatially_shared(*c.partitioned(0))) return conv_channel_bounds(c, true);
  return bounds_bilinear(c, w->numel());  // every weight is an upper bound on the terms of one output
}
// Pooling a tensor with one interval per channel (blocks [1 or N, C, 1, ...]): every window lies in one
// channel, so a maximum keeps the channel's interval and an average too, joined with 0 where counted
// padding enters, widened by the float32 sum's γ_n. True when it filled the output.
template <PoolKind Kind>
bool pool_on_channels(BoundsContext& c, int64_t terms) {
  constexpr bool average = !is_max(Kind);
  const IntervalTensor* x = c.partitioned(0);
  if (!x || !x->blocked() || !spatially_shared(*x) || c.outputs.empty()) return false;
  WindowGeometry g;
  if (!pool_geometry(c.node, Kind, x->shape, g) || !every_window_reads_input(g)) return false;
  const Shape shape = batch_channel_shape(x->shape[0], x->shape[1], g, g.grid);
  IntervalTensor& y = c.outputs[0];
  y = IntervalTensor::filled(x->dtype, shape, {});
  y.lo = x->lo;
  y.hi = x->hi;
  y.may_be_nan = x->may_be_nan;
  y.set_grid(x->grid());
  if (average) {
    bool padded = false;  // explicit pads or auto_pad's
    for (int d = 0; d < g.rank; ++d) padded |= g.pad_begin[d] > 0 || g.pad_end[d] > 0;
    const bool zeros_counted = padded && c.node.attr_int("count_include_pad", 0) != 0;
    for (size_t i = 0; i < y.lo.size(); ++i) {
      const double mag = std::max(std::fabs(y.lo[i]), std::fabs(y.hi[i]));
      if (!(mag * static_cast<double>(terms) <= FLT_MAX)) {  // a partial sum may overflow
        y.lo[i] = -kInf, y.hi[i] = kInf;
        y.may_be_nan = true;
        continue;
      }
      if (zeros_counted) y.lo[i] = std::min(y.lo[i], 0.0), y.hi[i] = std::max(y.hi[i], 0.0);
      y.lo[i] = round_down_f32(y.lo[i] - sum_error_f32(terms, mag));
      y.hi[i] = round_up_f32(y.hi[i] + sum_error_f32(terms, mag));
    }
  }
  if (c.outputs.size() > 1)  // MaxPool's argmax: any flat index of the input
    c.outputs[1] = IntervalTensor::filled(DType::Int64, shape, {0, double(x->numel() - 1)});
  return true;
}

// Averages are monotone sums over at most prod(kernel_shape) terms (padding adds zeros or is not counted).
Status average_pool_bounds(BoundsContext& c) {
  int64_t terms = 1;
  for (int64_t k : c.node.attr_ints("kernel_shape", {})) terms *= k;
  if (pool_on_channels<PoolKind::Average>(c, terms)) return Status::ok();
  return bounds_sum_of_terms(c, terms, true);
}
Status global_average_pool_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.partitioned(0);
  if (x && x->shape.rank() >= 3 && pool_on_channels<PoolKind::GlobalAverage>(c, x->shape.numel(2, x->shape.rank())))
    return Status::ok();
  return bounds_sum_of_terms(c, 0, true);
}
Status global_max_pool_bounds(BoundsContext& c) {
  if (pool_on_channels<PoolKind::GlobalMax>(c, 1)) return Status::ok();
  return bounds_select(c);
}
Status max_pool_bounds(BoundsContext& c) {
  if (pool_on_channels<PoolKind::Max>(c, 1)) return Status::ok();
  GRIST_TRY(bounds_select(c));
  // The argmax output is not monotone in x: any flat index of the input.
  if (c.outputs.size() > 1 && c.input(0))
    c.outputs[1] = IntervalTensor::filled(DType::Int64, c.outputs[1].shape, {0, double(c.input(0)->numel() - 1)});
  return Status::ok();
}
}  // namespace

void register_conv_pool_ops(OpRegistry& r) {
  r.add(OpDef{"Conv", "", conv_forward<false>, conv_backward<false>, inputs_mask({0, 1, 2}), {}, conv_bounds});
  r.add(OpDef{"ConvTranspose", "", conv_forward<true>, conv_backward<true>, inputs_mask({0, 1, 2}), {}, conv_transpose_bounds});
  r.add(OpDef{"MaxPool", "", pool_forward<PoolKind::Max>, pool_backward<PoolKind::Max>, inputs_mask({0}), {}, max_pool_bounds,
              0, pool_shape<PoolKind::Max>});
  r.add(OpDef{"AveragePool", "", pool_forward<PoolKind::Average>, pool_backward<PoolKind::Average>, inputs_mask({0}), {}, average_pool_bounds});
  r.add(OpDef{"GlobalMaxPool", "", pool_forward<PoolKind::GlobalMax>, pool_backward<PoolKind::GlobalMax>, inputs_mask({0}),
              {}, global_max_pool_bounds, 0, pool_shape<PoolKind::GlobalMax>});
  r.add(OpDef{"GlobalAveragePool", "", pool_forward<PoolKind::GlobalAverage>, pool_backward<PoolKind::GlobalAverage>,
              inputs_mask({0}), {}, global_average_pool_bounds});
}

}  // namespace grist
