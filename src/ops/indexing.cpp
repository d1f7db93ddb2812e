// Indexing ops: Gather, GatherElements, GatherND, ScatterElements (and the older Scatter), ScatterND,
// OneHot, NonZero, TopK.
// Gathers and scatters share one mechanism: a "runs" object that validates the indices once and then
// visits (dense_offset, data_offset, length) triples, a dense run of the output (gathers) or of the
// updates (scatters) paired with a run of the data tensor. Forward and backward of all five ops are
// the same few actions over those runs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "ops/shape_helpers.h"

namespace grist {
namespace {

template <class F>
bool dispatch_index(DType t, F&& f) {
  switch (t) {
    case DType::Int32: f(int32_t{}); return true;
    case DType::Int64: f(int64_t{}); return true;
    default: return false;
  }
}

Status check_index_type(const Node& n, const Tensor& indices) {
  if (indices.dtype() != DType::Int32 && indices.dtype() != DType::Int64)
    return node_error(n, fmt::format("indices must be int32 or int64, got {}", dtype_name(indices.dtype())));
  return Status::ok();
}

// Negative indices count from the end of the axis.
inline int64_t wrap_index(int64_t i, int64_t dim) { return i < 0 ? i + dim : i; }

// Fails naming the node (and the offending value) unless every index lies in [-dim, dim).
Status check_indices_in_range(const Node& n, const Tensor& indices, int64_t dim) {
  GRIST_TRY(check_index_type(n, indices));
  Status st = Status::ok();
  dispatch_index(indices.dtype(), [&](auto tag) {
    using I = decltype(tag);
    const I* idx = indices.data<I>();
    for (int64_t k = 0; k < indices.numel(); ++k) {
      const auto i = static_cast<int64_t>(idx[k]);
      if (i < -dim || i >= dim) {
        st = node_error(n, fmt::format("index {} is out of range for an axis of size {}", i, dim));
        return;
      }
    }
  });
  return st;
}

Status check_out_rank(const Node& n, int rank) {
  if (rank > Shape::kMaxRank)
    return node_error(n, fmt::format("the result would have rank {}, above grist's maximum of {}", rank,
                                     Shape::kMaxRank));
  return Status::ok();
}

// Gather: output block (o, k) of `inner` elements is data block (o, indices[k]) along `axis`.
struct GatherRuns {
  const Tensor* indices = nullptr;
  int64_t outer = 0, dim = 0, inner = 0;

  Status init(const Node& n, const Shape& data, const Tensor& idx, int64_t axis_attr) {
    const int axis = normalize_axis(axis_attr, data.rank());
    if (axis < 0) return node_error(n, fmt::format("axis {} is out of range for rank {}", axis_attr, data.rank()));
    indices = &idx;
    outer = data.numel(0, axis);
    dim = data[axis];
    inner = data.numel(axis + 1, data.rank());
    return check_indices_in_range(n, idx, dim);
  }
  template <class F>
  void visit(F&& f) const {
    dispatch_index(indices->dtype(), [&](auto tag) {
      using I = decltype(tag);
      const I* idx = indices->data<I>();
      const int64_t count = indices->numel();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < count; ++k)
          f((o * count + k) * inner, (o * dim + wrap_index(idx[k], dim)) * inner, inner);
    });
  }
};

// GatherElements / ScatterElements: element p of `indices` pairs with the data element at p's
// coordinates, with the coordinate along `axis` replaced by indices[p].
struct ElementRuns {
  const Tensor* indices = nullptr;
  std::array<std::array<int64_t, Shape::kMaxRank>, 1> strides{};  // data strides, 0 along the axis
  int64_t axis_stride = 0, dim = 0;

  Status init(const Node& n, const Shape& data, const Tensor& idx, int64_t axis_attr) {
    const int axis = normalize_axis(axis_attr, data.rank());
    if (axis < 0) return node_error(n, fmt::format("axis {} is out of range for rank {}", axis_attr, data.rank()));
    if (idx.rank() != data.rank()) return node_error(n, "indices must have the rank of the data");
    for (int d = 0; d < data.rank(); ++d)
      if (d != axis && idx.shape()[d] > data[d])
        return node_error(n, fmt::format("indices {} exceed the data {} on axis {}", idx.shape().str(), data.str(), d));
    indices = &idx;
    strides[0] = strides_of(data);
    axis_stride = strides[0][static_cast<size_t>(axis)];
    strides[0][static_cast<size_t>(axis)] = 0;
    dim = data[axis];
    return check_indices_in_range(n, idx, dim);
  }
  template <class F>
  void visit(F&& f) const {
    dispatch_index(indices->dtype(), [&](auto tag) {
      using I = decltype(tag);
      const I* idx = indices->data<I>();
      broadcast_loop<1>(indices->shape(), strides, [&](int64_t p, const std::array<int64_t, 1>& j) {
        f(p, j[0] + wrap_index(idx[p], dim) * axis_stride, int64_t{1});
      });
    });
  }
};

// GatherND / ScatterND: each index tuple (the last axis of `indices`) picks a block of the data
// below the batch dims.
struct NdRuns {
  const Tensor* indices = nullptr;
  const Shape* data = nullptr;
  int batch_dims = 0;
  int64_t batches = 0, tuples = 0, tuple_len = 0, block = 0, batch_stride = 0;
  std::array<int64_t, Shape::kMaxRank> strides{};

  Status init(const Node& n, const Shape& data_shape, const Tensor& idx, int64_t batch_dims_attr) {
    GRIST_TRY(check_index_type(n, idx));
    const int r = data_shape.rank(), q = idx.rank();
    if (r < 1 || q < 1) return node_error(n, "data and indices must have rank at least 1");
    if (batch_dims_attr < 0 || batch_dims_attr >= std::min(r, q))
      return node_error(n, fmt::format("batch_dims {} is out of range", batch_dims_attr));
    const int b = static_cast<int>(batch_dims_attr);
    for (int d = 0; d < b; ++d)
      if (idx.shape()[d] != data_shape[d])
        return node_error(n, fmt::format("batch dims of indices {} and data {} differ", idx.shape().str(),
                                         data_shape.str()));
    tuple_len = idx.shape()[q - 1];
    if (tuple_len < 1 || tuple_len > r - b)
      return node_error(n, fmt::format("index tuples of length {} do not fit data {} below {} batch dims", tuple_len,
                                       data_shape.str(), b));
    indices = &idx;
    data = &data_shape;
    batch_dims = b;
    batches = data_shape.numel(0, b);
    tuples = idx.shape().numel(b, q - 1);
    block = data_shape.numel(b + static_cast<int>(tuple_len), r);
    batch_stride = data_shape.numel(b, r);
    strides = strides_of(data_shape);
    Status st = Status::ok();
    dispatch_index(idx.dtype(), [&](auto tag) {
      using I = decltype(tag);
      const I* v = idx.data<I>();
      for (int64_t k = 0; k < idx.numel() && st.is_ok(); ++k) {
        const int64_t dim = data_shape[b + static_cast<int>(k % tuple_len)];
        const auto i = static_cast<int64_t>(v[k]);
        if (i < -dim || i >= dim)
          st = node_error(n, fmt::format("index {} is out of range for an axis of size {}", i, dim));
      }
    });
    return st;
  }
  // The output (gather) or updates (scatter) shape: indices.shape[:-1] + data.shape[batch_dims + tuple_len:].
  Shape dense_shape() const {
    Shape s;
    for (int d = 0; d + 1 < indices->rank(); ++d) s.push_back(indices->shape()[d]);
    for (int d = batch_dims + static_cast<int>(tuple_len); d < data->rank(); ++d) s.push_back((*data)[d]);
    return s;
  }
  template <class F>
  void visit(F&& f) const {
    dispatch_index(indices->dtype(), [&](auto tag) {
      using I = decltype(tag);
      const I* v = indices->data<I>();
      for (int64_t bi = 0; bi < batches; ++bi)
        for (int64_t t = 0; t < tuples; ++t) {
          const int64_t tuple_index = bi * tuples + t;
          const I* tuple = v + tuple_index * tuple_len;
          int64_t offset = bi * batch_stride;
          for (int64_t j = 0; j < tuple_len; ++j) {
            const int axis = batch_dims + static_cast<int>(j);
            offset += wrap_index(tuple[j], (*data)[axis]) * strides[static_cast<size_t>(axis)];
          }
          f(tuple_index * block, offset, block);
        }
    });
  }
};

// dense[run] = src[data run]: the forward of a gather, the updates' gradient of a scatter.
template <class Runs>
void gather_runs(const Runs& runs, const Tensor& src, Tensor& dense) {
  const auto es = static_cast<int64_t>(dtype_size(src.dtype()));
  const std::byte* s = src.raw();
  std::byte* d = dense.raw();
  runs.visit([&](int64_t dense_off, int64_t data_off, int64_t len) {
    if (len == 0) return;
    std::memcpy(d + dense_off * es, s + data_off * es, static_cast<size_t>(len * es));
  });
}

// dst[data run] += dense[run]: the data gradient of a gather (indices may repeat, hence the sum).
template <class Runs>
void scatter_add_runs(const Runs& runs, const Tensor& dense, Tensor& dst) {
  dispatch_float(dense.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = dense.data<T>();
    T* d = dst.data<T>();
    runs.visit([&](int64_t dense_off, int64_t data_off, int64_t len) {
      for (int64_t i = 0; i < len; ++i) d[data_off + i] += s[dense_off + i];
    });
  });
}

template <class Runs>
void zero_runs(const Runs& runs, Tensor& dst) {
  const auto es = static_cast<int64_t>(dtype_size(dst.dtype()));
  std::byte* d = dst.raw();
  runs.visit([&](int64_t, int64_t data_off, int64_t len) {
    if (len == 0) return;
    std::memset(d + data_off * es, 0, static_cast<size_t>(len * es));
  });
}

// ---------------------------------------------------------------------------------------------------
// Gathers: the output is dense; the data gradient scatters the output gradient back, summing repeats.

// The output shape of each gather.
Status gather_shape_of(const GatherRuns&, const Node& n, const Shape& data, const Shape& indices, Shape& out) {
  const int axis = normalize_axis(n.attr_int("axis", 0), data.rank());
  if (axis < 0) return node_error(n, fmt::format("axis is out of range for rank {}", data.rank()));
  GRIST_TRY(check_out_rank(n, data.rank() - 1 + indices.rank()));
  out = Shape{};
  for (int d = 0; d < axis; ++d) out.push_back(data[d]);
  for (int d = 0; d < indices.rank(); ++d) out.push_back(indices[d]);
  for (int d = axis + 1; d < data.rank(); ++d) out.push_back(data[d]);
  return Status::ok();
}

Status gather_shape_of(const ElementRuns&, const Node& n, const Shape& data, const Shape& indices, Shape& out) {
  if (indices.rank() != data.rank())
    return node_error(n, fmt::format("indices of rank {} for data of rank {}", indices.rank(), data.rank()));
  out = indices;
  return Status::ok();
}

Status gather_shape(const GatherRuns& runs, const Node& n, const Shape& data, const Tensor& indices, Shape& out) {
  return gather_shape_of(runs, n, data, indices.shape(), out);
}

Status gather_shape(const ElementRuns& runs, const Node& n, const Shape& data, const Tensor& indices, Shape& out) {
  return gather_shape_of(runs, n, data, indices.shape(), out);
}

// The shape rule (OpDef::shape) of Gather and GatherElements: the indices' shape is enough, not their values.
template <class Runs>
Status gather_rule(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0) || !c.shape(1)) return node_error(c.node, "needs data and indices");
  out.assign(1, Shape{});
  return gather_shape_of(Runs{}, c.node, *c.shape(0), *c.shape(1), out[0]);
}

Status gather_shape(const NdRuns& runs, const Node& n, const Shape& data, const Tensor& indices, Shape& out) {
  GRIST_TRY(check_out_rank(n, indices.rank() - 1 + data.rank() - runs.batch_dims - static_cast<int>(runs.tuple_len)));
  out = runs.dense_shape();
  return Status::ok();
}

// The attribute each runs type takes: Gather's and GatherElements' axis, GatherND's batch_dims.
template <class Runs>
int64_t runs_attr(const Node& n) {
  if constexpr (std::is_same_v<Runs, NdRuns>) return n.attr_int("batch_dims", 0);
  else return n.attr_int("axis", 0);
}

template <class Runs>
Status gather_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_input(c, 1));
  GRIST_TRY(require_output(c, 0));
  const Tensor& data = *c.input(0);
  const Tensor& indices = *c.input(1);
  Runs runs;
  GRIST_TRY(runs.init(c.node, data.shape(), indices, runs_attr<Runs>(c.node)));
  Shape out;
  GRIST_TRY(gather_shape(runs, c.node, data.shape(), indices, out));
  Tensor& y = *c.output(0);
  y.resize(data.dtype(), out);
  gather_runs(runs, data, y);
  return Status::ok();
}

template <class Runs>
Status gather_backward(BackwardContext& c) {
  Tensor* gd = c.grad_input(0);
  if (!gd) return Status::ok();
  const Tensor& data = *c.input(0);
  gd->resize_zero(data.dtype(), data.shape());
  const Tensor* gy = c.grad_output(0);
  Runs runs;
  GRIST_TRY(runs.init(c.node, data.shape(), *c.input(1), runs_attr<Runs>(c.node)));
  scatter_add_runs(runs, *gy, *gd);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Scatters: the output is the data with the updates written (or combined, per `reduction`) at the
// indexed positions.

enum class Reduction { None, Add, Mul, Max, Min };

Status read_reduction(const Node& n, Reduction& r) {
  const Attribute* a = n.attr("reduction");
  if (!a || a->s == "none") r = Reduction::None;
  else if (a->s == "add") r = Reduction::Add;
  else if (a->s == "mul") r = Reduction::Mul;
  else if (a->s == "max") r = Reduction::Max;
  else if (a->s == "min") r = Reduction::Min;
  else return node_error(n, fmt::format("unknown reduction '{}'", a->s));
  return Status::ok();
}

template <class T>
T combine(Reduction r, T old_value, T update) {
  switch (r) {
    case Reduction::None: return update;
    case Reduction::Add: return static_cast<T>(old_value + update);
    case Reduction::Mul: return static_cast<T>(old_value * update);
    case Reduction::Max: return std::max(old_value, update);
    case Reduction::Min: return std::min(old_value, update);
  }
  return update;
}

template <class Runs, class Ctx>
Status scatter_runs(const Ctx& c, Runs& runs) {
  const Tensor& data = *c.input(0);
  const Tensor& indices = *c.input(1);
  const Tensor& updates = *c.input(2);
  GRIST_TRY(runs.init(c.node, data.shape(), indices, runs_attr<Runs>(c.node)));
  Shape expected;
  if constexpr (std::is_same_v<Runs, NdRuns>) expected = runs.dense_shape();
  else expected = indices.shape();
  if (updates.shape() != expected || updates.dtype() != data.dtype())
    return node_error(c.node, fmt::format("updates are {} {}, expected {} {}", dtype_name(updates.dtype()),
                                          updates.shape().str(), dtype_name(data.dtype()), expected.str()));
  return Status::ok();
}

template <class Runs>
Status scatter_forward(ForwardContext& c) {
  for (size_t i = 0; i < 3; ++i) GRIST_TRY(require_input(c, i));
  GRIST_TRY(require_output(c, 0));
  Reduction red = Reduction::None;
  GRIST_TRY(read_reduction(c.node, red));
  Runs runs;
  GRIST_TRY(scatter_runs(c, runs));
  const Tensor& updates = *c.input(2);
  Tensor& y = *c.output(0);
  y.copy_from(*c.input(0));
  dispatch_all(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* u = updates.data<T>();
    T* d = y.data<T>();
    runs.visit([&](int64_t dense_off, int64_t data_off, int64_t len) {
      for (int64_t i = 0; i < len; ++i) d[data_off + i] = combine(red, d[data_off + i], u[dense_off + i]);
    });
  });
  return Status::ok();
}

// For reduction none the written positions take the update's gradient and the data's gradient there
// is 0; for add both get it. (As in PyTorch, every duplicate update of one position receives it.)
template <class Runs>
Status scatter_backward(BackwardContext& c) {
  Reduction red = Reduction::None;
  GRIST_TRY(read_reduction(c.node, red));
  if (red != Reduction::None && red != Reduction::Add)
    return node_error(c.node, "the gradient is only implemented for reduction none and add");
  Runs runs;
  GRIST_TRY(scatter_runs(c, runs));
  const Tensor& data = *c.input(0);
  const Tensor& updates = *c.input(2);
  const Tensor* gy = c.grad_output(0);
  if (Tensor* gd = c.grad_input(0)) {
    if (gy) {
      gd->copy_from(*gy);
      if (red == Reduction::None) zero_runs(runs, *gd);
    } else {
      gd->resize_zero(data.dtype(), data.shape());
    }
  }
  if (Tensor* gu = c.grad_input(2)) {
    gu->resize(updates.dtype(), updates.shape());
    if (gy) gather_runs(runs, *gy, *gu);
    else gu->fill_zero();
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// OneHot, NonZero, TopK.

Status one_hot_forward(ForwardContext& c) {
  for (size_t i = 0; i < 3; ++i) GRIST_TRY(require_input(c, i));
  GRIST_TRY(require_output(c, 0));
  const Tensor& indices = *c.input(0);
  const Tensor& depth_t = *c.input(1);
  const Tensor& values = *c.input(2);
  if (depth_t.numel() != 1) return node_error(c.node, "depth must hold exactly one value");
  if (values.numel() != 2) return node_error(c.node, "values must be [off_value, on_value]");
  const double depth_value = depth_t.get_as_double(0);
  if (!(depth_value >= 0)) return node_error(c.node, fmt::format("invalid depth {}", depth_value));
  const auto depth = static_cast<int64_t>(depth_value);  // non-integer depths are cast to int64 per spec
  const int r = indices.rank();
  GRIST_TRY(check_out_rank(c.node, r + 1));
  const int axis = normalize_axis(c.node.attr_int("axis", -1), r + 1);
  if (axis < 0) return node_error(c.node, fmt::format("axis is out of range for rank {}", r + 1));
  Shape out;
  for (int d = 0; d < axis; ++d) out.push_back(indices.shape()[d]);
  out.push_back(depth);
  for (int d = axis; d < r; ++d) out.push_back(indices.shape()[d]);

  Tensor& idx = c.state.slot(0);
  cast_tensor(indices, DType::Int64, idx);  // float indices truncate, as the spec's cast does
  const int64_t* iv = idx.data<int64_t>();
  const int64_t outer = indices.shape().numel(0, axis), inner = indices.shape().numel(axis, r);
  Tensor& y = *c.output(0);
  y.resize(values.dtype(), out);
  dispatch_all(values.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T off = values.data<T>()[0], on = values.data<T>()[1];
    T* ys = y.data<T>();
    std::fill_n(ys, y.numel(), off);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = wrap_index(iv[o * inner + i], depth);  // indices outside [-depth, depth) stay off
        if (k >= 0 && k < depth) ys[(o * depth + k) * inner + i] = on;
      }
  });
  return Status::ok();
}

Status non_zero_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  // A scalar is treated as a one-element vector, as numpy's nonzero does.
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  Tensor& y = *c.output(0);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    int64_t count = 0;
    for (int64_t i = 0; i < x.numel(); ++i) count += xs[i] != T{};
    y.resize(DType::Int64, Shape{shape.rank(), count});
    int64_t* out = y.data<int64_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (xs[i] == T{}) continue;
      const auto coords = unravel(i, shape);
      for (int d = 0; d < shape.rank(); ++d) out[d * count + k] = coords[static_cast<size_t>(d)];
      ++k;
    }
  });
  return Status::ok();
}

// TopK orders NaN above every number (as PyTorch does), and equal values by index.
template <class T>
bool ranks_below(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
  }
  return a < b;
}

struct TopKLayout {
  int64_t outer = 0, dim = 0, inner = 0, k = 0;
  Shape out;
};

template <class Ctx>
Status topk_layout(const Ctx& c, const Shape& x, TopKLayout& l) {
  int64_t k = 0;
  if (const Attribute* a = c.node.attr("k")) {  // opset < 10
    k = a->i;
  } else {
    const Tensor* kt = c.input(1);
    if (!kt || kt->numel() != 1 || !is_integer(kt->dtype())) return node_error(c.node, "K must be one integer");
    k = kt->get_as_int(0);
  }
  const int axis = normalize_axis(c.node.attr_int("axis", -1), x.rank());
  if (axis < 0) return node_error(c.node, fmt::format("axis is out of range for rank {}", x.rank()));
  if (k < 0 || k > x[axis]) return node_error(c.node, fmt::format("K = {} for an axis of size {}", k, x[axis]));
  l.outer = x.numel(0, axis);
  l.dim = x[axis];
  l.inner = x.numel(axis + 1, x.rank());
  l.k = k;
  l.out = x;
  l.out[axis] = k;
  return Status::ok();
}

Status topk_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  TopKLayout l;
  GRIST_TRY(topk_layout(c, x.shape(), l));
  const bool largest = c.node.attr_int("largest", 1) != 0;
  Tensor& values = *c.output(0);
  Tensor& indices = c.output(1) ? *c.output(1) : c.state.slot(1);
  values.resize(x.dtype(), l.out);
  indices.resize(DType::Int64, l.out);
  Tensor& order_t = c.state.slot(0);
  order_t.resize(DType::Int64, Shape{l.dim});
  int64_t* order = order_t.data<int64_t>();
  const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xs = x.data<T>();
    T* vs = values.data<T>();
    int64_t* is = indices.data<int64_t>();
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t in = 0; in < l.inner; ++in) {
        const T* row = xs + o * l.dim * l.inner + in;
        auto at = [&](int64_t j) { return row[j * l.inner]; };
        for (int64_t j = 0; j < l.dim; ++j) order[j] = j;
        std::partial_sort(order, order + l.k, order + l.dim, [&](int64_t a, int64_t b) {
          const T va = at(a), vb = at(b);
          if (largest ? ranks_below(vb, va) : ranks_below(va, vb)) return true;
          if (largest ? ranks_below(va, vb) : ranks_below(vb, va)) return false;
          return a < b;
        });
        for (int64_t j = 0; j < l.k; ++j) {
          const int64_t dst = (o * l.k + j) * l.inner + in;
          vs[dst] = at(order[j]);
          is[dst] = order[j];
        }
      }
  });
  if (!ok) return node_error(c.node, fmt::format("unsupported element type {}", dtype_name(x.dtype())));
  return Status::ok();
}

// The gradient goes to the selected elements.
Status topk_backward(BackwardContext& c) {
  Tensor* gx = c.grad_input(0);
  if (!gx) return Status::ok();
  const Tensor& x = *c.input(0);
  gx->resize_zero(x.dtype(), x.shape());
  const Tensor* gv = c.grad_output(0);
  if (!gv) return Status::ok();
  TopKLayout l;
  GRIST_TRY(topk_layout(c, x.shape(), l));
  const Tensor& indices = c.output(1) ? *c.output(1) : c.state.slot(1);
  const int64_t* is = indices.data<int64_t>();
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = gv->data<T>();
    T* gi = gx->data<T>();
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t j = 0; j < l.k; ++j)
        for (int64_t in = 0; in < l.inner; ++in) {
          const int64_t src = (o * l.k + j) * l.inner + in;
          gi[(o * l.dim + is[src]) * l.inner + in] += g[src];
        }
  });
  return Status::ok();
}

}  // namespace


namespace {
// TopK: the values are some of x's (its hull), the indices positions along the axis.
Status topk_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_unbounded(c));  // the output shapes
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known || x->shape.rank() == 0) return Status::ok();
  const int axis = normalize_axis(c.node.attr_int("axis", -1), x->shape.rank());
  if (axis < 0) return Status::ok();
  if (c.outputs[0].shape_known) {
    const Shape shape = c.outputs[0].shape;
    c.outputs[0] = IntervalTensor::filled(x->dtype, shape, x->hull());
    c.outputs[0].may_be_nan = x->may_be_nan;
  }
  if (c.outputs.size() > 1 && c.outputs[1].shape_known)
    c.outputs[1] = IntervalTensor::filled(DType::Int64, c.outputs[1].shape, {0, double(x->shape[axis] - 1)});
  return Status::ok();
}

// Scatter without a reduction (or with max/min) selects, per element, the data or one of the updates;
// add and mul combine several updates in one element, rounding each time: left unbounded.
Status scatter_bounds(BoundsContext& c) {
  const std::string reduction = c.node.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "max" && reduction != "min") return bounds_unbounded(c);
  return bounds_select_by_index(c);
}

// OneHot: every element is off_value or on_value (the shape needs depth exact).
Status one_hot_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_unbounded(c));
  const IntervalTensor* values = c.input(2);
  IntervalTensor& y = c.outputs[0];
  if (!values || !y.shape_known) return Status::ok();
  const Shape shape = y.shape;
  y = IntervalTensor::filled(values->dtype, shape, values->hull());
  y.may_be_nan = values->may_be_nan;
  return Status::ok();
}
}  // namespace

void register_indexing_ops(OpRegistry& r) {
  const uint32_t data_only = inputs_mask({0});
  const uint32_t data_and_updates = inputs_mask({0, 2});
  r.add(OpDef{"Gather", "", gather_forward<GatherRuns>, gather_backward<GatherRuns>, data_only, {}, bounds_select_by_index,
              0, gather_rule<GatherRuns>});
  r.add(OpDef{"GatherElements", "", gather_forward<ElementRuns>, gather_backward<ElementRuns>, data_only, {},
              bounds_select_by_index, 0, gather_rule<ElementRuns>});
  r.add(OpDef{"GatherND", "", gather_forward<NdRuns>, gather_backward<NdRuns>, data_only, {}, bounds_select_by_index});
  r.add(OpDef{"ScatterElements", "", scatter_forward<ElementRuns>, scatter_backward<ElementRuns>, data_and_updates,
              {}, scatter_bounds});
  r.add(OpDef{"Scatter", "", scatter_forward<ElementRuns>, scatter_backward<ElementRuns>, data_and_updates, {},
              scatter_bounds});
  r.add(OpDef{"ScatterND", "", scatter_forward<NdRuns>, scatter_backward<NdRuns>, data_and_updates, {},
              scatter_bounds});
  r.add(OpDef{"OneHot", "", one_hot_forward, nullptr, 0, {}, one_hot_bounds});
  r.add(OpDef{"NonZero", "", non_zero_forward, nullptr, 0});
  r.add(OpDef{"TopK", "", topk_forward, topk_backward, data_only, {}, topk_bounds});
}

}  // namespace grist
