// Shape ops: the data-movement kernels (Reshape, Transpose, Slice, Concat, Split, Expand, Tile, Pad,
// DepthToSpace, SpaceToDepth, Trilu, ...)
// and the small shape-computing ones (Shape, Size, Constant, ConstantOfShape, Cast, Range).
// A data-movement gradient routes each output element's gradient back to the input element it was read
// from (accumulating where one input element feeds several outputs: Expand, Tile, Pad's reflect/edge).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "ops/shape_helpers.h"

namespace grist {
namespace {

// ---------------------------------------------------------------------------------------------------
// Reshape, Flatten, Squeeze, Unsqueeze: same data, new shape.

void copy_reshaped(const Tensor& x, const Shape& shape, Tensor& y) {
  y.resize(x.dtype(), shape);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
}

// The gradient of every reshaping op is the output gradient in the input's shape.
Status reshape_like_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  copy_reshaped(*c.grad_output(0), c.input(0)->shape(), *gx);
  return Status::ok();
}

Status check_rank(const Node& n, int rank) {
  if (rank > Shape::kMaxRank)
    return node_error(n, fmt::format("the result would have rank {}, above grist's maximum of {}", rank,
                                     Shape::kMaxRank));
  return Status::ok();
}

// ONNX Reshape: 0 copies the input's dim at that position (unless allowzero), one -1 is inferred.
Status reshape_target(const Node& n, const Shape& in, const SmallInts& spec, bool allow_zero, Shape& out) {
  GRIST_TRY(check_rank(n, spec.size()));
  out = Shape{};
  int inferred = -1;
  int64_t known = 1;
  for (int i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (inferred >= 0) return node_error(n, "the shape has more than one -1");
      inferred = i;
      out.push_back(1);
      continue;
    }
    if (d < -1) return node_error(n, fmt::format("invalid dimension {} in the shape", d));
    if (d == 0 && !allow_zero) {
      if (i >= in.rank())
        return node_error(n, fmt::format("shape entry {} is 0 but the input {} has no dimension {}", i, in.str(), i));
      d = in[i];
    }
    known *= d;
    out.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || in.numel() % known != 0)
      return node_error(n, fmt::format("cannot infer the -1 dimension reshaping {} to {}", in.str(), out.str()));
    out[inferred] = in.numel() / known;
  }
  if (out.numel() != in.numel())
    return node_error(n, fmt::format("cannot reshape {} ({} elements) to {}", in.str(), in.numel(), out.str()));
  return Status::ok();
}

// The output shapes of the four, read as the kernels and the shape rules both need them.
template <class Ctx>
Status reshape_shape_of(const Ctx& c, const Shape& in, Shape& out) {
  SmallInts spec;
  bool found = false;
  GRIST_TRY(read_ints_attr_or_input(c, "shape", 1, spec, found));
  if (!found) return node_error(c.node, "the target shape is missing");
  return reshape_target(c.node, in, spec, c.node.attr_int("allowzero", 0) != 0, out);
}

template <class Ctx>
Status flatten_shape_of(const Ctx& c, const Shape& in, Shape& out) {
  const int r = in.rank();
  int64_t axis = c.node.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return node_error(c.node, fmt::format("axis {} is out of range for rank {}", axis, r));
  const int a = static_cast<int>(axis);
  out = Shape{in.numel(0, a), in.numel(a, r)};
  return Status::ok();
}

template <class Ctx>
Status squeeze_shape_of(const Ctx& c, const Shape& in, Shape& out) {
  SmallInts axes;
  bool found = false;
  GRIST_TRY(read_ints_attr_or_input(c, "axes", 1, axes, found));
  std::array<bool, Shape::kMaxRank> drop{};
  for (int d = 0; d < in.rank(); ++d) drop[static_cast<size_t>(d)] = !found && in[d] == 1;
  for (int i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(axes[i], in.rank());
    if (a < 0) return node_error(c.node, fmt::format("axis {} is out of range for rank {}", axes[i], in.rank()));
    if (in[a] != 1) return node_error(c.node, fmt::format("cannot squeeze axis {} of size {}", a, in[a]));
    drop[static_cast<size_t>(a)] = true;
  }
  out = Shape{};
  for (int d = 0; d < in.rank(); ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(in[d]);
  return Status::ok();
}

template <class Ctx>
Status unsqueeze_shape_of(const Ctx& c, const Shape& in, Shape& out) {
  SmallInts axes;
  bool found = false;
  GRIST_TRY(read_ints_attr_or_input(c, "axes", 1, axes, found));
  if (!found) return node_error(c.node, "the axes are missing");
  const int out_rank = in.rank() + axes.size();
  GRIST_TRY(check_rank(c.node, out_rank));
  std::array<bool, Shape::kMaxRank> inserted{};
  for (int i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(axes[i], out_rank);
    if (a < 0) return node_error(c.node, fmt::format("axis {} is out of range for rank {}", axes[i], out_rank));
    if (inserted[static_cast<size_t>(a)]) return node_error(c.node, fmt::format("axis {} is repeated", axes[i]));
    inserted[static_cast<size_t>(a)] = true;
  }
  out = Shape{};
  for (int d = 0, j = 0; d < out_rank; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? 1 : in[j++]);
  return Status::ok();
}

template <Status (*ShapeOf)(const ForwardContext&, const Shape&, Shape&)>
Status reshape_like_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  Shape out;
  GRIST_TRY(ShapeOf(c, c.input(0)->shape(), out));
  copy_reshaped(*c.input(0), out, *c.output(0));
  return Status::ok();
}

// An op's shape rule (OpDef::shape) from the function its kernel computes its one output's shape with.
template <Status (*ShapeOf)(const ShapeContext&, const Shape&, Shape&)>
Status single_output_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  out.assign(1, Shape{});
  return ShapeOf(c, *c.shape(0), out[0]);
}

// ---------------------------------------------------------------------------------------------------
// Transpose, Slice, Expand, Tile: the output is a strided view of the input. The forward gathers
// through the view; the backward scatters back through the same view (adding where it repeats elements).

template <class Ctx>
Status transpose_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  const int r = in.rank();
  std::array<int64_t, Shape::kMaxRank> perm{};
  if (const Attribute* a = c.node.attr("perm")) {
    if (static_cast<int>(a->ints.size()) != r)
      return node_error(c.node, fmt::format("perm has {} entries for an input of rank {}", a->ints.size(), r));
    std::array<bool, Shape::kMaxRank> used{};
    for (int i = 0; i < r; ++i) {
      const int64_t p = a->ints[static_cast<size_t>(i)];
      if (p < 0 || p >= r || used[static_cast<size_t>(p)])
        return node_error(c.node, "perm is not a permutation of the input's axes");
      used[static_cast<size_t>(p)] = true;
      perm[static_cast<size_t>(i)] = p;
    }
  } else {
    for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
  }
  const auto st = strides_of(in);
  out = Shape{};
  for (int i = 0; i < r; ++i) {
    const auto p = static_cast<int>(perm[static_cast<size_t>(i)]);
    out.push_back(in[p]);
    v.push(in[p], st[static_cast<size_t>(p)]);
  }
  v.coalesce();
  return Status::ok();
}

// ONNX Slice: negative starts/ends count from the end; starts clamp to [0, dim] ([0, dim-1] stepping
// backwards) and ends to [0, dim] ([-1, dim-1] stepping backwards).
template <class Ctx>
Status slice_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  SmallInts starts, ends, axes, steps;
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  GRIST_TRY(read_ints_attr_or_input(c, "starts", 1, starts, has_starts));
  GRIST_TRY(read_ints_attr_or_input(c, "ends", 2, ends, has_ends));
  GRIST_TRY(read_ints_attr_or_input(c, "axes", 3, axes, has_axes));
  if (const Tensor* t = c.input(4)) {
    GRIST_TRY(read_ints(c.node, "steps", *t, steps));
    has_steps = true;
  }
  if (!has_starts || !has_ends) return node_error(c.node, "starts and ends are required");
  const int n = starts.size();
  if (ends.size() != n || (has_axes && axes.size() != n) || (has_steps && steps.size() != n))
    return node_error(c.node, "starts, ends, axes and steps must have the same length");

  const int r = in.rank();
  std::array<int64_t, Shape::kMaxRank> start{}, step{}, count{};
  for (int d = 0; d < r; ++d) {
    step[static_cast<size_t>(d)] = 1;
    count[static_cast<size_t>(d)] = in[d];
  }
  std::array<bool, Shape::kMaxRank> seen{};
  for (int i = 0; i < n; ++i) {
    const int a = normalize_axis(has_axes ? axes[i] : i, r);
    if (a < 0 || seen[static_cast<size_t>(a)])
      return node_error(c.node, fmt::format("slice axis {} is out of range or repeated", has_axes ? axes[i] : i));
    seen[static_cast<size_t>(a)] = true;
    const int64_t dim = in[a];
    const int64_t k = has_steps ? steps[i] : 1;
    if (k == 0) return node_error(c.node, "a slice step is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t cnt = 0;
    if (k > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      cnt = e > s ? (e - s - 1) / k + 1 : 0;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      cnt = s > e ? (s - e - 1) / -k + 1 : 0;
    }
    start[static_cast<size_t>(a)] = cnt > 0 ? s : 0;
    step[static_cast<size_t>(a)] = k;
    count[static_cast<size_t>(a)] = cnt;
  }
  const auto st = strides_of(in);
  out = Shape{};
  for (int d = 0; d < r; ++d) {
    const auto sd = static_cast<size_t>(d);
    out.push_back(count[sd]);
    v.offset += start[sd] * st[sd];
    v.push(count[sd], step[sd] * st[sd]);
  }
  v.coalesce();
  return Status::ok();
}

template <class Ctx>
Status expand_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  SmallInts dims;
  if (!c.input(1)) return node_error(c.node, "the shape input is missing");
  GRIST_TRY(read_ints(c.node, "shape", *c.input(1), dims));
  GRIST_TRY(check_rank(c.node, dims.size()));
  Shape target;
  for (int i = 0; i < dims.size(); ++i) target.push_back(dims[i]);
  if (!broadcast_shapes(in, target, out))
    return node_error(c.node, fmt::format("cannot expand {} to {}", in.str(), target.str()));
  const auto st = broadcast_strides(in, out);
  for (int d = 0; d < out.rank(); ++d) v.push(out[d], st[static_cast<size_t>(d)]);
  v.coalesce();
  return Status::ok();
}

// Tile's output, viewed with every axis split into (repeat, size), reads the input with stride 0 on
// the repeat part.
template <class Ctx>
Status tile_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  SmallInts repeats;
  if (!c.input(1)) return node_error(c.node, "the repeats input is missing");
  GRIST_TRY(read_ints(c.node, "repeats", *c.input(1), repeats));
  if (repeats.size() != in.rank())
    return node_error(c.node, fmt::format("{} repeats for an input of rank {}", repeats.size(), in.rank()));
  const auto st = strides_of(in);
  out = Shape{};
  for (int d = 0; d < in.rank(); ++d) {
    if (repeats[d] < 0) return node_error(c.node, fmt::format("negative repeat {}", repeats[d]));
    out.push_back(in[d] * repeats[d]);
    if (repeats[d] != 1) v.push(repeats[d], 0);
    v.push(in[d], st[static_cast<size_t>(d)]);
  }
  v.coalesce();
  return Status::ok();
}

template <Status (*View)(const ForwardContext&, const Shape&, StridedView&, Shape&)>
Status view_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  StridedView v;
  Shape out;
  GRIST_TRY(View(c, x.shape(), v, out));
  Tensor& y = *c.output(0);
  y.resize(x.dtype(), out);
  copy_strided(v, x, y, StridedDirection::ViewToContiguous);
  return Status::ok();
}

// Backward for views that read each input element at most once (Transpose, Slice): assign, with zeros
// for the elements the view skips.
template <Status (*View)(const BackwardContext&, const Shape&, StridedView&, Shape&)>
Status view_assign_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  const Tensor* gy = c.grad_output(0);
  StridedView v;
  Shape out;
  GRIST_TRY(View(c, x.shape(), v, out));
  // A view that reads every element (Transpose) writes every one back: no zeros first.
  if (v.numel() == x.numel()) gx->resize(x.dtype(), x.shape());
  else gx->resize_zero(x.dtype(), x.shape());
  copy_strided(v, *gy, *gx, StridedDirection::ContiguousToView);
  return Status::ok();
}

// Backward for views that read input elements repeatedly (Tile): accumulate.
template <Status (*View)(const BackwardContext&, const Shape&, StridedView&, Shape&)>
Status view_accumulate_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  gx->resize_zero(x.dtype(), x.shape());
  const Tensor* gy = c.grad_output(0);
  StridedView v;
  Shape out;
  GRIST_TRY(View(c, x.shape(), v, out));
  scatter_add_strided(v, *gy, *gx);
  return Status::ok();
}

// The shape rule of a view op: the view's shape, without gathering anything.
template <Status (*View)(const ShapeContext&, const Shape&, StridedView&, Shape&)>
Status view_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  StridedView v;
  out.assign(1, Shape{});
  return View(c, *c.shape(0), v, out[0]);
}

// DepthToSpace and SpaceToDepth: ONNX defines them as reshape → transpose → reshape of an [N, C, H, W]
// tensor, so the output is a strided view of the input over six dims; every input element is read once,
// and the backward is view_assign_backward (the inverse permutation).
template <class Ctx>
Status block_size(const Ctx& c, const Shape& in, int64_t& b) {
  if (in.rank() != 4) return node_error(c.node, fmt::format("the input must have rank 4, got {}", in.str()));
  b = c.node.attr_int("blocksize", 0);
  if (b <= 0) return node_error(c.node, fmt::format("blocksize must be positive, got {}", b));
  return Status::ok();
}

// DCR: the channel is (b1, b2, c) with c fastest; CRD: (c, b1, b2). Output dims (n, c, h, b1, w, b2).
template <class Ctx>
Status depth_to_space_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  int64_t b = 0;
  GRIST_TRY(block_size(c, in, b));
  const std::string mode = c.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return node_error(c.node, fmt::format("unknown mode '{}'", mode));
  if (in[1] % (b * b) != 0)
    return node_error(c.node, fmt::format("{} channels are not a multiple of blocksize² = {}", in[1], b * b));
  const int64_t cout = in[1] / (b * b), hw = in[2] * in[3];
  const bool dcr = mode == "DCR";
  v.push(in[0], in[1] * hw);
  v.push(cout, dcr ? hw : b * b * hw);
  v.push(in[2], in[3]);
  v.push(b, dcr ? b * cout * hw : b * hw);
  v.push(in[3], 1);
  v.push(b, dcr ? cout * hw : hw);
  v.coalesce();
  out = Shape{in[0], cout, in[2] * b, in[3] * b};
  return Status::ok();
}

// The inverse of DCR: output dims (n, b1, b2, c, h, w) read input row h·b + b1, column w·b + b2.
template <class Ctx>
Status space_to_depth_view(const Ctx& c, const Shape& in, StridedView& v, Shape& out) {
  int64_t b = 0;
  GRIST_TRY(block_size(c, in, b));
  if (in[2] % b != 0 || in[3] % b != 0)
    return node_error(c.node, fmt::format("spatial dims of {} are not multiples of blocksize {}", in.str(), b));
  const int64_t w = in[3];
  v.push(in[0], in[1] * in[2] * w);
  v.push(b, w);
  v.push(b, 1);
  v.push(in[1], in[2] * w);
  v.push(in[2] / b, b * w);
  v.push(w / b, b);
  v.coalesce();
  out = Shape{in[0], in[1] * b * b, in[2] / b, w / b};
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Trilu: the upper (j − i ≥ k) or lower (j − i ≤ k) triangle of every matrix of the last two dims, zeros
// elsewhere. A linear mask, so its gradient is the same mask applied to the output gradient.

struct TriluSpec {
  int64_t rows = 0, cols = 0, k = 0;
  bool upper = true;
  // Kept columns [first, last) of row i.
  int64_t first(int64_t i) const { return upper ? std::clamp<int64_t>(i + k, 0, cols) : 0; }
  int64_t last(int64_t i) const { return upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols); }
  bool zeroes_any() const {
    for (int64_t i = 0; i < rows; ++i)
      if (last(i) - first(i) < cols) return true;
    return false;
  }
};

template <class Ctx>
Status trilu_spec(const Ctx& c, const Shape& in, TriluSpec& t) {
  if (in.rank() < 2) return node_error(c.node, fmt::format("the input must have rank 2 or more, got {}", in.str()));
  t.rows = in[in.rank() - 2];
  t.cols = in[in.rank() - 1];
  t.upper = c.node.attr_int("upper", 1) != 0;
  if (const Tensor* k = c.input(1)) {
    if (!is_integer(k->dtype()) || k->numel() != 1) return node_error(c.node, "k must be an integer scalar");
    t.k = k->get_as_int(0);
  }
  return Status::ok();
}

// y = x on the kept triangle, 0 elsewhere, for any element type (zero bytes are 0, 0.0 and false).
void trilu_apply(const TriluSpec& t, const Tensor& x, Tensor& y) {
  y.resize(x.dtype(), x.shape());
  const size_t es = dtype_size(x.dtype());
  const int64_t row_bytes = t.cols * static_cast<int64_t>(es);
  const int64_t matrices = t.rows * t.cols == 0 ? 0 : x.numel() / (t.rows * t.cols);
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < t.rows; ++i) {
      const int64_t off = (m * t.rows + i) * row_bytes;
      const int64_t a = t.first(i) * static_cast<int64_t>(es), b = std::max(t.last(i) * static_cast<int64_t>(es), a);
      std::byte* dst = y.raw() + off;
      const std::byte* src = x.raw() + off;
      std::memset(dst, 0, static_cast<size_t>(a));
      std::memcpy(dst + a, src + a, static_cast<size_t>(b - a));
      std::memset(dst + b, 0, static_cast<size_t>(row_bytes - b));
    }
}

Status trilu_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  TriluSpec t;
  GRIST_TRY(trilu_spec(c, c.input(0)->shape(), t));
  trilu_apply(t, *c.input(0), *c.output(0));
  return Status::ok();
}

Status trilu_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  const Tensor* gy = c.grad_output(0);
  TriluSpec t;
  GRIST_TRY(trilu_spec(c, x.shape(), t));
  trilu_apply(t, *gy, *gx);
  return Status::ok();
}

Status trilu_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  out.assign(1, *c.shape(0));
  return Status::ok();
}

// Expand's gradient is the broadcast reduction every broadcasting op uses.
Status expand_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  sum_to_shape(*c.grad_output(0), c.input(0)->shape(), *gx);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Concat and Split: along `axis`, a tensor is `outer` rows in which each piece owns a contiguous run.

// Copies `rows` runs of `bytes` bytes between buffers whose rows are src_row / dst_row bytes long.
void copy_rows(const std::byte* src, int64_t src_row, std::byte* dst, int64_t dst_row, int64_t rows, int64_t bytes) {
  if (bytes == 0) return;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_row, src + r * src_row, static_cast<size_t>(bytes));
}

void zero_rows(std::byte* dst, int64_t dst_row, int64_t rows, int64_t bytes) {
  if (bytes == 0) return;
  for (int64_t r = 0; r < rows; ++r) std::memset(dst + r * dst_row, 0, static_cast<size_t>(bytes));
}

// Bytes per unit of the axis dimension, and the number of rows, for `s` split along `axis`.
struct AxisLayout {
  int64_t rows = 1;
  int64_t unit_bytes = 0;
};

AxisLayout axis_layout(const Shape& s, int axis, DType dtype) {
  return {s.numel(0, axis), s.numel(axis + 1, s.rank()) * static_cast<int64_t>(dtype_size(dtype))};
}

Status concat_axis(const Node& n, int rank, int& axis) {
  const Attribute* a = n.attr("axis");
  if (!a) return node_error(n, "the axis attribute is required");
  axis = normalize_axis(a->i, rank);
  if (axis < 0) return node_error(n, fmt::format("axis {} is out of range for rank {}", a->i, rank));
  return Status::ok();
}

Status concat_forward(ForwardContext& c) {
  GRIST_TRY(require_output(c, 0));
  if (c.inputs.empty()) return node_error(c.node, "needs at least one input");
  for (size_t i = 0; i < c.inputs.size(); ++i) GRIST_TRY(require_input(c, i));
  const Tensor& first = *c.input(0);
  int axis = 0;
  GRIST_TRY(concat_axis(c.node, first.rank(), axis));
  Shape out = first.shape();
  out[axis] = 0;
  for (const Tensor* x : c.inputs) {
    bool compatible = x->dtype() == first.dtype() && x->rank() == first.rank();
    for (int d = 0; compatible && d < x->rank(); ++d) compatible = d == axis || x->shape()[d] == first.shape()[d];
    if (!compatible)
      return node_error(c.node, fmt::format("cannot concatenate {} {} with {} {} along axis {}",
                                            dtype_name(first.dtype()), first.shape().str(), dtype_name(x->dtype()),
                                            x->shape().str(), axis));
    out[axis] += x->shape()[axis];
  }
  Tensor& y = *c.output(0);
  y.resize(first.dtype(), out);
  const AxisLayout lay = axis_layout(out, axis, first.dtype());
  const int64_t row = out[axis] * lay.unit_bytes;
  int64_t offset = 0;
  for (const Tensor* x : c.inputs) {
    const int64_t bytes = x->shape()[axis] * lay.unit_bytes;
    copy_rows(x->raw(), bytes, y.raw() + offset, row, lay.rows, bytes);
    offset += bytes;
  }
  return Status::ok();
}

Status concat_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (c.shapes.empty() || !c.shape(0)) return node_error(c.node, "needs at least one input");
  const Shape& first = *c.shape(0);
  int axis = 0;
  GRIST_TRY(concat_axis(c.node, first.rank(), axis));
  out.assign(1, first);
  out[0][axis] = 0;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    const Shape* x = c.shape(i);
    bool compatible = x && x->rank() == first.rank();
    for (int d = 0; compatible && d < x->rank(); ++d) compatible = d == axis || (*x)[d] == first[d];
    if (!compatible) return node_error(c.node, fmt::format("cannot concatenate input {} along axis {}", i, axis));
    out[0][axis] += (*x)[axis];
  }
  return Status::ok();
}

Status concat_backward(BackwardContext& c) {
  const Tensor* gy = c.grad_output(0);
  int axis = 0;
  GRIST_TRY(concat_axis(c.node, c.input(0)->rank(), axis));
  const Shape& out = c.output(0)->shape();
  const AxisLayout lay = axis_layout(out, axis, c.output(0)->dtype());
  const int64_t row = out[axis] * lay.unit_bytes;
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& x = *c.input(i);
    const int64_t bytes = x.shape()[axis] * lay.unit_bytes;
    if (Tensor* gx = c.grad_input(i)) {
      gx->resize(x.dtype(), x.shape());
      if (gy) copy_rows(gy->raw() + offset, row, gx->raw(), bytes, lay.rows, bytes);
      else gx->fill_zero();
    }
    offset += bytes;
  }
  return Status::ok();
}

// The sizes of Split's pieces: the `split` attribute (opset < 13) or input (13+), or equal parts; opset 18's
// num_outputs makes the last piece smaller where the dimension does not divide.
struct SplitSizes {
  const std::vector<int64_t>* attr = nullptr;
  const Tensor* input = nullptr;
  int64_t equal = 0, last = 0;
  size_t pieces = 0;
  int64_t operator()(size_t k) const {
    if (attr) return (*attr)[k];
    if (input) return input->get_as_int(static_cast<int64_t>(k));
    return k + 1 == pieces ? last : equal;
  }
};

template <class Ctx>
Status split_sizes(const Ctx& c, int64_t dim, size_t pieces, SplitSizes& sizes) {
  if (pieces == 0) return node_error(c.node, "has no outputs");
  size_t given = 0;
  if (const Attribute* a = c.node.attr("split")) {
    sizes.attr = &a->ints;
    given = a->ints.size();
  } else if (const Tensor* t = c.input(1)) {
    if (!is_integer(t->dtype())) return node_error(c.node, "split must be an integer tensor");
    sizes.input = t;
    given = static_cast<size_t>(t->numel());
  } else {
    const auto n = static_cast<int64_t>(pieces);
    sizes.pieces = pieces;
    if (const Attribute* a = c.node.attr("num_outputs")) {
      if (a->i != n)
        return node_error(c.node, fmt::format("num_outputs is {}, but the node has {} outputs", a->i, n));
      sizes.equal = (dim + n - 1) / n;
      sizes.last = dim - sizes.equal * (n - 1);
      if (sizes.last < 0)
        return node_error(c.node, fmt::format("cannot split a dimension of {} into {} pieces of {}", dim, n,
                                              sizes.equal));
      return Status::ok();
    }
    if (dim % n != 0)
      return node_error(c.node, fmt::format("cannot split a dimension of {} into {} equal parts", dim, n));
    sizes.equal = sizes.last = dim / n;
    return Status::ok();
  }
  if (given != pieces)
    return node_error(c.node, fmt::format("split has {} entries for {} outputs", given, pieces));
  int64_t total = 0;
  for (size_t k = 0; k < pieces; ++k) {
    if (sizes(k) < 0) return node_error(c.node, fmt::format("negative split size {}", sizes(k)));
    total += sizes(k);
  }
  if (total != dim) return node_error(c.node, fmt::format("split sizes add up to {}, not {}", total, dim));
  return Status::ok();
}

Status split_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  const Tensor& x = *c.input(0);
  const int axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  if (axis < 0) return node_error(c.node, fmt::format("axis is out of range for rank {}", x.rank()));
  SplitSizes sizes;
  GRIST_TRY(split_sizes(c, x.shape()[axis], c.outputs.size(), sizes));
  const AxisLayout lay = axis_layout(x.shape(), axis, x.dtype());
  const int64_t row = x.shape()[axis] * lay.unit_bytes;
  int64_t offset = 0;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const int64_t bytes = sizes(k) * lay.unit_bytes;
    if (Tensor* y = c.output(k)) {
      Shape s = x.shape();
      s[axis] = sizes(k);
      y->resize(x.dtype(), s);
      copy_rows(x.raw() + offset, row, y->raw(), bytes, lay.rows, bytes);
    }
    offset += bytes;
  }
  return Status::ok();
}

Status split_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  const Shape& x = *c.shape(0);
  const int axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  if (axis < 0) return node_error(c.node, fmt::format("axis is out of range for rank {}", x.rank()));
  SplitSizes sizes;
  GRIST_TRY(split_sizes(c, x[axis], c.node.outputs.size(), sizes));
  out.assign(c.node.outputs.size(), x);
  for (size_t k = 0; k < out.size(); ++k) out[k][axis] = sizes(k);
  return Status::ok();
}

Status split_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  const int axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  SplitSizes sizes;
  GRIST_TRY(split_sizes(c, x.shape()[axis], c.outputs.size(), sizes));
  gx->resize(x.dtype(), x.shape());
  const AxisLayout lay = axis_layout(x.shape(), axis, x.dtype());
  const int64_t row = x.shape()[axis] * lay.unit_bytes;
  int64_t offset = 0;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const int64_t bytes = sizes(k) * lay.unit_bytes;
    if (const Tensor* gy = c.grad_output(k)) {
      copy_rows(gy->raw(), bytes, gx->raw() + offset, row, lay.rows, bytes);
    } else {
      zero_rows(gx->raw() + offset, row, lay.rows, bytes);  // no gradient reached this piece
    }
    offset += bytes;
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Resize (opset 10+) and Upsample: nearest, linear and cubic interpolation, separable along each axis. Each
// output coordinate reads a few input coordinates ("taps") with weights; an output element is the sum over
// the product of its axes' taps, accumulated in double and rounded once to the tensor's type.

struct ResizeTap {
  int64_t index;
  double weight;
};

struct ResizePlan {
  Shape out;
  std::vector<int> taps;                       // per axis: taps per output coordinate (1, 2 or 4)
  std::vector<std::vector<ResizeTap>> table;  // per axis: out[d] × taps[d] entries
  bool nearest = false;
};

// The original coordinate an output coordinate maps to (ONNX's coordinate_transformation_mode). As in ONNX's
// reference, the resized length is the input's times the scale, not rounded (2.4 for 4 × 0.6).
Result<double> original_coordinate(const Node& n, std::string_view mode, int64_t o, double scale, int64_t in_len) {
  const double x = static_cast<double>(o), resized = static_cast<double>(in_len) * scale;
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized == 1 ? 0.0 : x * static_cast<double>(in_len - 1) / (resized - 1);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return node_error(n, fmt::format("coordinate_transformation_mode '{}' is not supported", mode));
}

template <class Ctx>
Status resize_plan(const Ctx& c, const Shape& in, ResizePlan& p) {
  const Node& n = c.node;
  const bool upsample = n.op_type == "Upsample";
  const bool legacy = upsample || n.opset < 11;  // X, scales; asymmetric coordinates, floor for nearest
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return node_error(n, fmt::format("mode '{}' is not supported", mode));
  if (n.attr_int("antialias", 0) || n.has_attr("axes") ||
      n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return node_error(n, "antialias, axes and keep_aspect_ratio_policy (opset 18) are not supported");
  const std::string coords =
      legacy ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest_mode = legacy ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
  const int rank = in.rank();
  std::vector<double> scales(static_cast<size_t>(rank), 1.0);
  const Tensor* scale_t = c.input(legacy ? 1 : 2);
  const Tensor* size_t_ = legacy ? nullptr : c.input(3);
  if (size_t_ && size_t_->numel() > 0) {
    if (size_t_->numel() != rank) return node_error(n, fmt::format("sizes has {} entries for rank {}", size_t_->numel(), rank));
    p.out = Shape{};
    for (int d = 0; d < rank; ++d) {
      const int64_t v = size_t_->get_as_int(d);
      if (v < 0) return node_error(n, fmt::format("negative size {}", v));
      p.out.push_back(v);
      scales[static_cast<size_t>(d)] = in[d] > 0 ? static_cast<double>(v) / static_cast<double>(in[d]) : 1.0;
    }
  } else {
    std::vector<double> given = upsample && n.has_attr("scales") ? n.attr_floats("scales") : std::vector<double>{};
    if (given.empty() && scale_t)
      for (int64_t i = 0; i < scale_t->numel(); ++i) given.push_back(scale_t->get_as_double(i));
    if (static_cast<int>(given.size()) != rank)
      return node_error(n, fmt::format("needs {} scales or sizes, got {}", rank, given.size()));
    p.out = Shape{};
    for (int d = 0; d < rank; ++d) {
      const double sc = given[static_cast<size_t>(d)];
      if (!(sc > 0)) return node_error(n, fmt::format("scale {} must be positive", sc));
      scales[static_cast<size_t>(d)] = sc;
      p.out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * sc)));
    }
  }
  p.nearest = mode == "nearest";
  const double a = n.attr_float("cubic_coeff_a", -0.75);
  const bool exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  p.taps.assign(static_cast<size_t>(rank), 1);
  p.table.assign(static_cast<size_t>(rank), {});
  for (int d = 0; d < rank; ++d) {
    const int64_t len = in[d], out_len = p.out[d];
    if (len == 0 && out_len > 0) return node_error(n, fmt::format("cannot resize the empty axis {}", d));
    std::vector<std::vector<ResizeTap>> per(static_cast<size_t>(out_len));
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, len - 1); };
    for (int64_t o = 0; o < out_len; ++o) {
      auto x = original_coordinate(n, coords, o, scales[static_cast<size_t>(d)], len);
      if (!x) return x.error();
      auto& taps = per[static_cast<size_t>(o)];
      const double fl = std::floor(*x), t = *x - fl;
      if (mode == "nearest") {
        double r;
        if (nearest_mode == "floor") r = fl;
        else if (nearest_mode == "ceil") r = std::ceil(*x);
        else if (nearest_mode == "round_prefer_ceil") r = t == 0.5 ? fl + 1 : std::round(*x);
        else if (nearest_mode == "round_prefer_floor") r = t == 0.5 ? fl : std::round(*x);
        else return node_error(n, fmt::format("nearest_mode '{}' is not supported", nearest_mode));
        taps.push_back({clamp(static_cast<int64_t>(r)), 1.0});
      } else if (t == 0) {
        taps.push_back({clamp(static_cast<int64_t>(fl)), 1.0});
      } else if (mode == "linear") {
        taps.push_back({clamp(static_cast<int64_t>(fl)), 1 - t});
        taps.push_back({clamp(static_cast<int64_t>(fl) + 1), t});
      } else {  // cubic, Keys' kernel with coefficient a (ONNX's reference)
        const double w[4] = {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                             ((a + 2) * t - (a + 3)) * t * t + 1,
                             ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                             ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
        double kept = 0;
        for (int k = 0; k < 4; ++k) {
          const int64_t i = static_cast<int64_t>(fl) - 1 + k;
          const bool outside = i < 0 || i >= len;
          if (exclude_outside && outside) continue;
          taps.push_back({clamp(i), w[k]});
          kept += w[k];
        }
        if (exclude_outside && kept != 0)
          for (ResizeTap& tap : taps) tap.weight /= kept;
      }
    }
    int most = 1;
    for (const auto& taps : per) most = std::max(most, static_cast<int>(taps.size()));
    p.taps[static_cast<size_t>(d)] = most;
    for (auto& taps : per) {
      while (static_cast<int>(taps.size()) < most) taps.push_back({taps.empty() ? 0 : taps[0].index, 0.0});
      p.table[static_cast<size_t>(d)].insert(p.table[static_cast<size_t>(d)].end(), taps.begin(), taps.end());
    }
  }
  return Status::ok();
}

// Calls f(output index, input index, weight) for every term of every output element.
template <class F>
void for_each_resize_term(const ResizePlan& p, const Shape& in, F&& f) {
  const int rank = in.rank();
  const auto in_strides = strides_of(in);
  std::array<int64_t, Shape::kMaxRank> coord{}, tap{};
  const int64_t total = p.out.numel();
  for (int64_t o = 0; o < total; ++o) {
    tap.fill(0);
    for (;;) {
      int64_t index = 0;
      double weight = 1;
      for (int d = 0; d < rank; ++d) {
        const ResizeTap& t = p.table[static_cast<size_t>(d)][static_cast<size_t>(coord[static_cast<size_t>(d)] * p.taps[static_cast<size_t>(d)] + tap[static_cast<size_t>(d)])];
        index += t.index * in_strides[static_cast<size_t>(d)];
        weight *= t.weight;
      }
      if (weight != 0) f(o, index, weight);
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++tap[static_cast<size_t>(d)] < p.taps[static_cast<size_t>(d)]) break;
        tap[static_cast<size_t>(d)] = 0;
      }
      if (d < 0) break;
    }
    for (int d = rank - 1; d >= 0 && ++coord[static_cast<size_t>(d)] == p.out[d]; --d) coord[static_cast<size_t>(d)] = 0;
  }
}

Status resize_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  ResizePlan p;
  GRIST_TRY(resize_plan(c, x.shape(), p));
  Tensor& y = *c.output(0);
  y.resize(x.dtype(), p.out);
  Tensor& sums = c.state.slot(0);  // the double sums, reused every iteration
  sums.resize_zero(DType::Float64, p.out);
  double* acc = sums.data<double>();
  const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for_each_resize_term(p, x.shape(), [&](int64_t o, int64_t i, double w) { acc[o] += w * static_cast<double>(px[i]); });
    T* py = y.data<T>();
    for (int64_t o = 0; o < y.numel(); ++o) py[o] = static_cast<T>(acc[o]);
  });
  if (!ok) return node_error(c.node, fmt::format("unsupported element type {}", dtype_name(x.dtype())));
  return Status::ok();
}

Status resize_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  ResizePlan p;
  GRIST_TRY(resize_plan(c, x.shape(), p));
  gx->resize_zero(x.dtype(), x.shape());
  const Tensor& gy = *c.grad_output(0);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = gy.data<T>();
    T* d = gx->data<T>();
    for_each_resize_term(p, x.shape(), [&](int64_t o, int64_t i, double w) { d[i] += static_cast<T>(w * static_cast<double>(g[o])); });
  });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Pad: constant, reflect and edge modes; negative pads crop. Each axis maps an output coordinate to an
// input coordinate independently, so a per-axis table (input offset, or -1 for the constant) drives
// both the forward copy and the backward accumulation.

enum class PadMode { Constant, Reflect, Edge };

struct PadSpec {
  PadMode mode = PadMode::Constant;
  std::array<int64_t, Shape::kMaxRank> begin{};
  Shape out;
};

template <class Ctx>
Status pad_spec(const Ctx& c, const Shape& in, PadSpec& p) {
  const Attribute* mode = c.node.attr("mode");
  if (!mode || mode->s == "constant") {
    p.mode = PadMode::Constant;
  } else if (mode->s == "reflect") {
    p.mode = PadMode::Reflect;
  } else if (mode->s == "edge") {
    p.mode = PadMode::Edge;
  } else {
    return node_error(c.node, fmt::format("unsupported mode '{}'", mode->s));
  }
  SmallInts pads;
  bool found = false;
  GRIST_TRY(read_ints_attr_or_input(c, "pads", 1, pads, found));
  if (!found) return node_error(c.node, "pads are missing");
  const int r = in.rank();
  // Opset 18's optional axes input names which axes the pads apply to.
  SmallInts axes;
  if (const Tensor* t = c.input(3)) {
    GRIST_TRY(read_ints(c.node, "axes", *t, axes));
  } else {
    axes.n = r;
    for (int d = 0; d < r; ++d) axes.v[static_cast<size_t>(d)] = d;
  }
  if (pads.size() != 2 * axes.size())
    return node_error(c.node, fmt::format("{} pads for {} axes", pads.size(), axes.size()));
  std::array<int64_t, Shape::kMaxRank> end{};
  p.begin = {};
  for (int i = 0; i < axes.size(); ++i) {
    const int a = normalize_axis(axes[i], r);
    if (a < 0) return node_error(c.node, fmt::format("axis {} is out of range for rank {}", axes[i], r));
    p.begin[static_cast<size_t>(a)] = pads[i];
    end[static_cast<size_t>(a)] = pads[i + axes.size()];
  }
  p.out = in;
  for (int d = 0; d < r; ++d) {
    const auto sd = static_cast<size_t>(d);
    p.out[d] = in[d] + p.begin[sd] + end[sd];
    if (p.out[d] < 0) return node_error(c.node, fmt::format("pads crop axis {} below zero", d));
    if (p.mode != PadMode::Constant && in[d] == 0 && p.out[d] > 0)
      return node_error(c.node, fmt::format("cannot reflect or extend the empty axis {}", d));
  }
  return Status::ok();
}

// Input coordinate for output coordinate o on an axis of size n, or -1 where the constant goes.
int64_t pad_source(PadMode mode, int64_t o, int64_t begin, int64_t n) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : n - 1;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);  // reflection without repeating the edge element
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
  }
  return -1;
}

// Fills `maps` (int64) with, per axis in turn, each output coordinate's input offset (coordinate ×
// input stride) or -1.
void build_pad_maps(const Shape& in, const PadSpec& p, Tensor& maps) {
  int64_t total = 0;
  for (int d = 0; d < p.out.rank(); ++d) total += p.out[d];
  maps.resize(DType::Int64, Shape{total});
  int64_t* m = maps.data<int64_t>();
  const auto st = strides_of(in);
  for (int d = 0; d < p.out.rank(); ++d) {
    const auto sd = static_cast<size_t>(d);
    for (int64_t o = 0; o < p.out[d]; ++o) {
      const int64_t i = pad_source(p.mode, o, p.begin[sd], in[d]);
      *m++ = i < 0 ? -1 : i * st[sd];
    }
  }
}

// Calls f(output_index, input_offset or -1) for every output element.
template <class F>
void for_each_pad_source(const Shape& out, const int64_t* maps, F&& f) {
  const int r = out.rank();
  const int64_t total = out.numel();
  if (total == 0) return;
  if (r == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::array<const int64_t*, Shape::kMaxRank> axis_map{};
  for (int d = 0; d < r; ++d) {
    axis_map[static_cast<size_t>(d)] = maps;
    maps += out[d];
  }
  const int last = r - 1;
  const int64_t inner = out[last];
  const int64_t* inner_map = axis_map[static_cast<size_t>(last)];
  std::array<int64_t, Shape::kMaxRank> counter{};
  for (int64_t o = 0; o < total; o += inner) {
    int64_t base = 0;
    bool inside = true;
    for (int d = 0; d < last; ++d) {
      const int64_t m = axis_map[static_cast<size_t>(d)][counter[static_cast<size_t>(d)]];
      inside = inside && m >= 0;
      base += m;
    }
    for (int64_t j = 0; j < inner; ++j) f(o + j, inside && inner_map[j] >= 0 ? base + inner_map[j] : int64_t{-1});
    for (int d = last - 1; d >= 0; --d) {
      const auto sd = static_cast<size_t>(d);
      if (++counter[sd] < out[d]) break;
      counter[sd] = 0;
    }
  }
}

Status pad_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  PadSpec p;
  GRIST_TRY(pad_spec(c, x.shape(), p));
  const Tensor* value = c.input(2);
  if (value && value->dtype() != x.dtype())
    return node_error(c.node, "constant_value must have the input's element type");
  Tensor& maps = c.state.slot(0);
  build_pad_maps(x.shape(), p, maps);
  Tensor& y = *c.output(0);
  y.resize(x.dtype(), p.out);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T fill = static_cast<T>(c.node.attr_float("value", 0.0));  // opset < 11 gives it as an attribute
    if (value && value->numel() > 0) fill = value->data<T>()[0];
    const T* xs = x.data<T>();
    T* ys = y.data<T>();
    for_each_pad_source(p.out, maps.data<int64_t>(), [&](int64_t o, int64_t i) { ys[o] = i < 0 ? fill : xs[i]; });
  });
  return Status::ok();
}

Status pad_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  PadSpec p;
  GRIST_TRY(pad_spec(c, *c.shape(0), p));
  out.assign(1, p.out);
  return Status::ok();
}

Status pad_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  gx->resize_zero(x.dtype(), x.shape());
  const Tensor* gy = c.grad_output(0);
  PadSpec p;
  GRIST_TRY(pad_spec(c, x.shape(), p));
  Tensor& maps = c.state.slot(0);
  build_pad_maps(x.shape(), p, maps);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = gy->data<T>();
    T* gi = gx->data<T>();
    for_each_pad_source(p.out, maps.data<int64_t>(), [&](int64_t o, int64_t i) {
      if (i >= 0) gi[i] += g[o];
    });
  });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Shape, Size, Constant, ConstantOfShape, Range: outputs computed from shapes and attributes.

Status shape_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Shape& s = c.input(0)->shape();
  const int64_t r = s.rank();
  // Opset 15's start/end select a range of dims, clamped into [0, rank].
  int64_t start = c.node.attr_int("start", 0), end = c.node.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  Tensor& y = *c.output(0);
  y.resize(DType::Int64, Shape{n});
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = s[static_cast<int>(start + i)];
  return Status::ok();
}

Status size_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  Tensor& y = *c.output(0);
  y.resize(DType::Int64, Shape{});
  y.data<int64_t>()[0] = c.input(0)->numel();
  return Status::ok();
}

Status constant_forward(ForwardContext& c) {
  GRIST_TRY(require_output(c, 0));
  Tensor& y = *c.output(0);
  const Node& n = c.node;
  if (const Attribute* a = n.attr("value")) {
    if (!a->t) return node_error(n, "the value attribute holds no tensor");
    y.copy_from(*a->t);
  } else if (const Attribute* a = n.attr("value_float")) {
    y.resize(DType::Float32, Shape{});
    y.data<float>()[0] = static_cast<float>(a->f);
  } else if (const Attribute* a = n.attr("value_floats")) {
    y.resize(DType::Float32, Shape{static_cast<int64_t>(a->floats.size())});
    for (size_t i = 0; i < a->floats.size(); ++i) y.data<float>()[i] = static_cast<float>(a->floats[i]);
  } else if (const Attribute* a = n.attr("value_int")) {
    y.resize(DType::Int64, Shape{});
    y.data<int64_t>()[0] = a->i;
  } else if (const Attribute* a = n.attr("value_ints")) {
    y.resize(DType::Int64, Shape{static_cast<int64_t>(a->ints.size())});
    std::copy(a->ints.begin(), a->ints.end(), y.data<int64_t>());
  } else if (n.has_attr("sparse_value")) {
    return node_error(n, "sparse constants are not supported");
  } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
    return node_error(n, "string constants are not supported");
  } else {
    return node_error(n, "has no value attribute");
  }
  return Status::ok();
}

Status constant_of_shape_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  SmallInts dims;
  GRIST_TRY(read_ints(c.node, "shape", *c.input(0), dims));
  GRIST_TRY(check_rank(c.node, dims.size()));
  Shape out;
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) return node_error(c.node, fmt::format("negative dimension {}", dims[i]));
    out.push_back(dims[i]);
  }
  const Attribute* a = c.node.attr("value");
  const Tensor* value = a ? a->t.get() : nullptr;
  if (a && (!value || value->numel() != 1)) return node_error(c.node, "value must be a one-element tensor");
  Tensor& y = *c.output(0);
  y.resize(value ? value->dtype() : DType::Float32, out);
  if (!value) {
    y.fill_zero();
    return Status::ok();
  }
  const size_t es = dtype_size(value->dtype());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(y.raw() + i * static_cast<int64_t>(es), value->raw(), es);
  return Status::ok();
}

// Cast and CastLike: the gradient of a float→float cast is the output gradient cast back.
Status cast_to(ForwardContext& c, int64_t to) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const auto target = static_cast<DType>(to);
  if (!is_supported(target))
    return node_error(c.node, fmt::format("cannot cast to element type {} ({})", to, dtype_name(target)));
  cast_tensor(*c.input(0), target, *c.output(0));
  return Status::ok();
}

Status cast_forward(ForwardContext& c) {
  const Attribute* to = c.node.attr("to");
  if (!to) return node_error(c.node, "the 'to' attribute is required");
  return cast_to(c, to->i);
}

Status cast_like_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 1));
  return cast_to(c, static_cast<int64_t>(c.input(1)->dtype()));
}

Status cast_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  const Tensor* gy = c.grad_output(0);
  if (gy && is_float(gy->dtype())) {
    cast_tensor(*gy, x.dtype(), *gx);
  } else {
    gx->resize_zero(x.dtype(), x.shape());
  }
  return Status::ok();
}

// Range's element count, max(ceil((limit - start) / delta), 0), computed in T as the ONNX reference does.
template <class T>
Status range_count(const Node& n, T start, T limit, T delta, int64_t& count) {
  if (delta == T(0)) return node_error(n, "delta is 0");
  constexpr int64_t kMaxElements = int64_t{1} << 34;  // a corrupt operand must not exhaust memory
  if constexpr (std::is_floating_point_v<T>) {
    const T steps = std::ceil((limit - start) / delta);
    if (!std::isfinite(steps)) return node_error(n, "start, limit and delta give no finite element count");
    if (steps > static_cast<T>(kMaxElements)) return node_error(n, "the range has too many elements");
    count = steps > T(0) ? static_cast<int64_t>(steps) : 0;
  } else {
    const auto span = static_cast<int64_t>(limit) - static_cast<int64_t>(start);
    const auto d = static_cast<int64_t>(delta);
    // Ceiling division, only where span and delta share a sign (otherwise the range is empty).
    count = (span > 0) == (d > 0) && span != 0 ? (span + d - (d > 0 ? 1 : -1)) / d : 0;
    if (count > kMaxElements) return node_error(n, "the range has too many elements");
  }
  return Status::ok();
}

Status range_forward(ForwardContext& c) {
  for (size_t i = 0; i < 3; ++i) GRIST_TRY(require_input(c, i));
  GRIST_TRY(require_output(c, 0));
  const Tensor& s = *c.input(0);
  const Tensor& l = *c.input(1);
  const Tensor& d = *c.input(2);
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1 || s.dtype() != l.dtype() || s.dtype() != d.dtype())
    return node_error(c.node, "start, limit and delta must be scalars of one type");
  Status st = node_error(c.node, fmt::format("unsupported element type {}", dtype_name(s.dtype())));
  dispatch_signed_numeric(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T start = s.data<T>()[0], delta = d.data<T>()[0];
    int64_t count = 0;
    st = range_count<T>(c.node, start, l.data<T>()[0], delta, count);
    if (!st) return;
    Tensor& y = *c.output(0);
    y.resize(s.dtype(), Shape{count});
    T* out = y.data<T>();
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  });
  return st;
}

}  // namespace

namespace {
// Range with a zero step never ends in the frameworks (grist's kernel refuses it with an error).
constexpr HazardSpec kRangeHazards[] = {
    {2, Failure::RangeZeroDelta, Objective::MinAbs, "delta = 0", "check the step is non-zero before Range / arange"}};
}  // namespace

namespace {
// Interval transfers (grist scan): moving elements is monotone and exact; Shape is exact whenever the
// input's shape is known, whatever its values.
Status shape_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known) return bounds_unbounded(c);
  const Tensor placeholder(DType::UInt8, x->shape);  // the kernel reads the shape only
  const Tensor* in[] = {&placeholder};
  std::vector<Tensor> out;
  if (!run_kernel(c.node, c.def, in, out)) return bounds_unbounded(c);
  c.outputs[0] = IntervalTensor::of_exact(std::move(out[0]));
  return Status::ok();
}
// A selection, plus the constant a constant-mode Pad inserts (the kernel at the bounds inserts it; a
// single-interval shortcut takes only the data's hull, so the constant joins it here).
Status pad_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_select(c));
  if (c.node.attr_string("mode", "constant") != "constant" || c.outputs.empty()) return Status::ok();
  IntervalTensor& y = c.outputs[0];
  if (y.lo.size() != 1 || y.exact) return Status::ok();
  const IntervalTensor* v = c.input(2);
  const double attr = c.node.attr_float("value", 0.0);  // before opset 11 the constant is an attribute
  const Interval pad = v ? v->hull() : Interval{attr, attr};
  y.lo[0] = std::min(y.lo[0], pad.lo);
  y.hi[0] = std::max(y.hi[0], pad.hi);
  return Status::ok();
}

// Trilu: a selection plus the zeros it writes. The kernel at the bounds writes them; the single-interval
// shortcut only takes the data's hull, so 0 joins it where some element is zeroed.
Status trilu_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_select(c));
  const IntervalTensor* x = c.partitioned(0);
  if (c.outputs.empty() || !x || !x->shape_known || x->shape.rank() < 2) return Status::ok();
  IntervalTensor& y = c.outputs[0];
  if (y.lo.size() != 1 || y.exact || y.numel() <= 1) return Status::ok();
  TriluSpec t;
  const IntervalTensor* k = c.partitioned(1);
  if (k && !k->exact) return Status::ok();  // bounds_select left the output unbounded
  const Tensor* k_value = k ? k->exact.get() : nullptr;
  const Tensor* values[] = {nullptr, k_value};
  const Shape* shapes[] = {&x->shape, nullptr};
  const ShapeContext sc{c.node, shapes, values};
  if (!trilu_spec(sc, x->shape, t) || !t.zeroes_any()) return Status::ok();
  y.lo[0] = std::min(y.lo[0], 0.0);
  y.hi[0] = std::max(y.hi[0], 0.0);
  return Status::ok();
}

// Casting rounds or truncates monotonically, except to bool (x ≠ 0).
Status cast_bounds(BoundsContext& c) {
  if (c.node.attr_int("to", 0) != static_cast<int64_t>(DType::Bool)) return bounds_select(c);
  GRIST_TRY(bounds_unbounded(c));
  for (IntervalTensor& out : c.outputs) {
    out.lo = {0};
    out.hi = {1};
    out.may_be_nan = false;
  }
  return Status::ok();
}
// CastLike is a Cast to input 1's type (its values do not matter): bounded as that Cast, whose kernel
// rounds to the target type.
Status cast_like_bounds(BoundsContext& c) {
  const IntervalTensor* target = c.partitioned(1);
  const OpDef* cast = OpRegistry::global().find("Cast");
  if (!target || target->dtype == DType::Undefined || !cast || c.inputs.empty()) return bounds_unbounded(c);
  Node as_cast = c.node;
  as_cast.op_type = "Cast";
  as_cast.inputs.resize(1);
  Attribute to;
  to.type = Attribute::Type::Int;
  to.i = static_cast<int64_t>(target->dtype);
  as_cast.attributes = {{"to", to}};
  BoundsContext cast_context{as_cast, *cast, c.inputs.first(1), c.outputs};
  return cast_bounds(cast_context);
}

// Resize's output is Σ w·x over its taps, computed in double and rounded once: per output, the lower bound
// takes each x at the end its weight's sign selects, widened by the double sum's error and then to float32.
// Large outputs, and inputs given as one interval: nearest and linear weights are non-negative and add to 1,
// so the input's hull holds (cubic's: unbounded). The scales and sizes must be exact.
Status resize_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  std::vector<const Tensor*> values(c.inputs.size(), nullptr);
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const IntervalTensor* t = c.partitioned(i);
    if (t && !t->exact && t->numel() > 0) return bounds_unbounded(c);
    values[i] = t ? t->exact.get() : nullptr;
  }
  ResizePlan p;
  if (!resize_plan(ShapeContext{c.node, {}, values}, x->shape, p)) return bounds_unbounded(c);
  IntervalTensor& y = c.outputs[0];
  const bool cubic = c.node.attr_string("mode", "nearest") == "cubic";
  if (p.out.numel() > kExpandLimit || x->lo.size() == 1) {
    if (cubic) return bounds_unbounded(c);
    y = IntervalTensor::filled(x->dtype, p.out, x->hull());
    y.may_be_nan = x->may_be_nan;
    return Status::ok();
  }
  const size_t n = static_cast<size_t>(p.out.numel());
  std::vector<double> lo(n, 0.0), hi(n, 0.0), mag(n, 0.0), terms(n, 0.0);
  bool nan = x->may_be_nan;
  for_each_resize_term(p, x->shape, [&](int64_t o, int64_t i, double w) {
    const Interval b = x->at(i);
    const size_t k = static_cast<size_t>(o);
    lo[k] += w * (w >= 0 ? b.lo : b.hi);
    hi[k] += w * (w >= 0 ? b.hi : b.lo);
    mag[k] += std::fabs(w) * std::max(std::fabs(b.lo), std::fabs(b.hi));
    terms[k] += 1;
  });
  y = IntervalTensor::filled(x->dtype, p.out, {});
  y.lo.resize(n);
  y.hi.resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (std::isnan(lo[k]) || std::isnan(hi[k])) nan = true;
    if (p.nearest) {  // a selection: exact
      y.lo[k] = std::isnan(lo[k]) ? -kInf : lo[k];
      y.hi[k] = std::isnan(hi[k]) ? kInf : hi[k];
      continue;
    }
    const double err = 2 * (terms[k] + 1) * 0x1p-53 * mag[k];
    y.lo[k] = std::isnan(lo[k]) ? -kInf : round_down_f32(lo[k] - err);
    y.hi[k] = std::isnan(hi[k]) ? kInf : round_up_f32(hi[k] + err);
  }
  y.may_be_nan = nan;
  return Status::ok();
}

// Size: the element count, known with the shape.
Status size_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.partitioned(0);
  if (!x || !x->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  c.outputs[0] = IntervalTensor::of_exact(Tensor::scalar<int64_t>(x->numel()));
  return Status::ok();
}
}  // namespace

void register_shape_ops(OpRegistry& r) {
  const uint32_t data_only = inputs_mask({0});
  // Same data, new shape: the blocks of a partitioned interval keep their order.
  r.add(OpDef{"Reshape", "", reshape_like_forward<reshape_shape_of>, reshape_like_backward, data_only, {}, bounds_select,
              kKeepsOrder, single_output_shape<reshape_shape_of>});
  r.add(OpDef{"Flatten", "", reshape_like_forward<flatten_shape_of>, reshape_like_backward, data_only, {}, bounds_select,
              kKeepsOrder, single_output_shape<flatten_shape_of>});
  r.add(OpDef{"Squeeze", "", reshape_like_forward<squeeze_shape_of>, reshape_like_backward, data_only, {}, bounds_select,
              kKeepsOrder, single_output_shape<squeeze_shape_of>});
  r.add(OpDef{"Unsqueeze", "", reshape_like_forward<unsqueeze_shape_of>, reshape_like_backward, data_only, {},
              bounds_select, kKeepsOrder, single_output_shape<unsqueeze_shape_of>});
  r.add(OpDef{"Transpose", "", view_forward<transpose_view>, view_assign_backward<transpose_view>, data_only, {},
              bounds_select, kPermutesDims, view_shape<transpose_view>});
  r.add(OpDef{"Slice", "", view_forward<slice_view>, view_assign_backward<slice_view>, data_only, {}, bounds_select, 0,
              view_shape<slice_view>});
  r.add(OpDef{"Expand", "", view_forward<expand_view>, expand_backward, data_only, {}, bounds_select, 0,
              view_shape<expand_view>});
  r.add(OpDef{"Tile", "", view_forward<tile_view>, view_accumulate_backward<tile_view>, data_only, {}, bounds_select, 0,
              view_shape<tile_view>});
  // These reorder elements across blocks of the grid: no trait fits, so a blocked input is expanded.
  r.add(OpDef{"DepthToSpace", "", view_forward<depth_to_space_view>, view_assign_backward<depth_to_space_view>,
              data_only, {}, bounds_select, 0, view_shape<depth_to_space_view>});
  r.add(OpDef{"SpaceToDepth", "", view_forward<space_to_depth_view>, view_assign_backward<space_to_depth_view>,
              data_only, {}, bounds_select, 0, view_shape<space_to_depth_view>});
  r.add(OpDef{"Trilu", "", trilu_forward, trilu_backward, data_only, {}, trilu_bounds, 0, trilu_shape});
  r.add(OpDef{"Concat", "", concat_forward, concat_backward, kAllInputs, {}, bounds_select, 0, concat_shape});
  r.add(OpDef{"Split", "", split_forward, split_backward, data_only, {}, bounds_select, 0, split_shape});
  r.add(OpDef{"Pad", "", pad_forward, pad_backward, data_only, {}, pad_bounds, 0, pad_shape});
  r.add(OpDef{"Shape", "", shape_forward, nullptr, 0, {}, shape_bounds});
  r.add(OpDef{"Size", "", size_forward, nullptr, 0, {}, size_bounds});
  r.add(OpDef{"Constant", "", constant_forward, nullptr, 0, {}, nullptr, kHandlesHalf});
  r.add(OpDef{"ConstantOfShape", "", constant_of_shape_forward, nullptr, 0, {}, nullptr, kHandlesHalf});
  r.add(OpDef{"Cast", "", cast_forward, cast_backward, data_only, {}, cast_bounds, kElementwise | kHandlesHalf});
  r.add(OpDef{"CastLike", "", cast_like_forward, cast_backward, data_only, {}, cast_like_bounds,
              kElementwise | kHandlesHalf});
  r.add(OpDef{"Range", "", range_forward, nullptr, 0, kRangeHazards});
  r.add(OpDef{"Resize", "", resize_forward, resize_backward, data_only, {}, resize_bounds});
  r.add(OpDef{"Upsample", "", resize_forward, resize_backward, data_only, {}, resize_bounds});
}

}  // namespace grist
