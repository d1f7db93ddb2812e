// Reductions (ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp), ArgMax/ArgMin and CumSum.
//
// Every Reduce* op shares one geometry: the input is viewed with adjacent dimensions of the same kind
// (reduced or kept) merged, and each input element maps to one output element through strides that are 0
// on reduced dimensions. Accumulation stays in the tensor's own type (float32 sums in float32), so
// overflow to inf happens exactly where a float32 framework would see it.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {
namespace {

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Geometry shared by every Reduce* op.

struct ReduceGeometry {
  Shape out_shape;   // the node's output shape (keepdims applied)
  Shape loop_shape;  // input shape with size-1 dims dropped and same-kind neighbours merged
  std::array<int64_t, Shape::kMaxRank> out_strides{};  // per loop dim: output stride, 0 where reduced
  int64_t group_size = 1;                              // input elements folded into each output element
};

// Axes come from the `axes` attribute (every op before opset 18, ReduceSum before 13) or else from
// input 1. No axes means all axes, unless noop_with_empty_axes asks for no reduction at all.
Status mark_reduced_axes(const Node& node, const Shape& x, const Tensor* axes_input,
                         std::array<bool, Shape::kMaxRank>& reduced) {
  const int rank = x.rank();
  const Attribute* attr = node.attr("axes");
  const int64_t count = attr ? static_cast<int64_t>(attr->ints.size()) : (axes_input ? axes_input->numel() : 0);
  reduced.fill(false);
  if (count == 0) {
    const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < rank; ++d) reduced[d] = !noop;
    return Status::ok();
  }
  if (count > rank) return node_error(node, fmt::format("{} axes given for an input of rank {}", count, rank));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t requested = attr ? attr->ints[static_cast<size_t>(k)] : axes_input->get_as_int(k);
    const int a = normalize_axis(requested, rank);
    if (a < 0) return node_error(node, fmt::format("axis {} is out of range for rank {}", requested, rank));
    if (reduced[a]) return node_error(node, fmt::format("axis {} is given twice", requested));
    reduced[a] = true;
  }
  return Status::ok();
}

Result<ReduceGeometry> plan_reduction(const Node& node, const Shape& in, const Tensor* axes_input) {
  std::array<bool, Shape::kMaxRank> reduced{};
  GRIST_TRY(mark_reduced_axes(node, in, axes_input, reduced));
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  ReduceGeometry g;
  std::array<bool, Shape::kMaxRank> loop_reduced{};
  for (int d = 0; d < in.rank(); ++d) {
    if (reduced[d]) g.group_size *= in[d];
    if (!reduced[d] || keepdims) g.out_shape.push_back(reduced[d] ? 1 : in[d]);
    if (in[d] == 1) continue;  // a size-1 dim changes no offsets, reduced or not
    const int last = g.loop_shape.rank() - 1;
    if (last >= 0 && loop_reduced[last] == reduced[d]) {
      g.loop_shape[last] *= in[d];
    } else {
      loop_reduced[last + 1] = reduced[d];
      g.loop_shape.push_back(in[d]);
    }
  }
  int64_t stride = 1;
  for (int d = g.loop_shape.rank() - 1; d >= 0; --d) {
    g.out_strides[d] = loop_reduced[d] ? 0 : stride;
    if (!loop_reduced[d]) stride *= g.loop_shape[d];
  }
  return g;
}

// The reduced shape (OpDef::shape): what the kernel computes, without the data.
Status reduce_shape(const ShapeContext& c, std::vector<Shape>& out) {
  if (!c.shape(0)) return node_error(c.node, "input 0 is missing");
  auto geo = plan_reduction(c.node, *c.shape(0), c.input(1));
  if (!geo) return geo.error();
  out.assign(1, geo->out_shape);
  return Status::ok();
}

// Calls f(i, j) for every input element i, with j the output element it folds into.
template <class F>
void for_each_element(const ReduceGeometry& g, F&& f) {
  broadcast_loop<1>(g.loop_shape, {g.out_strides},
                    [&](int64_t i, const std::array<int64_t, 1>& j) { f(i, j[0]); });
}

// out[j] = step(...step(step(init, x_first, j), x_second, j)..., x_last, j) over group j, in input order.
template <class T, class Step>
void fold_groups(const ReduceGeometry& g, const T* x, T init, T* out, Step&& step) {
  std::fill_n(out, g.out_shape.numel(), init);
  const int last = g.loop_shape.rank() - 1;
  if (last >= 0 && g.out_strides[last] == 0) {
    // The innermost loop dim is reduced: fold each contiguous row in a register.
    Shape rows = g.loop_shape;
    rows.resize(last);
    const int64_t len = g.loop_shape[last];
    broadcast_loop<1>(rows, {g.out_strides}, [&](int64_t r, const std::array<int64_t, 1>& j) {
      const T* row = x + r * len;
      T acc = out[j[0]];
      for (int64_t k = 0; k < len; ++k) acc = step(acc, row[k], j[0]);
      out[j[0]] = acc;
    });
    return;
  }
  for_each_element(g, [&](int64_t i, int64_t j) { out[j] = step(out[j], x[i], j); });
}

// ---------------------------------------------------------------------------------------------
// Forward: one policy per op, giving the fold's start value, step and finishing map.

struct SumReduce {
  static constexpr bool kFloatOnly = false;
  template <class T> static T init() { return T(0); }
  template <class T> static T step(T acc, T x) { return acc + x; }
  template <class T> static T finish(T acc, int64_t) { return acc; }
};

struct MeanReduce : SumReduce {
  template <class T>
  static T finish(T acc, int64_t n) {
    if constexpr (std::is_integral_v<T>) {
      if (n == 0) return T(0);  // avoid integer division by zero; float gives 0/0 = NaN below
    }
    return acc / static_cast<T>(n);
  }
};

struct SumSquareReduce : SumReduce {
  template <class T> static T step(T acc, T x) { return acc + x * x; }
};

struct L1Reduce : SumReduce {
  template <class T>
  static T step(T acc, T x) {
    if constexpr (std::is_unsigned_v<T>) {
      return acc + x;
    } else {
      return acc + (x < T(0) ? T(-x) : x);
    }
  }
};

struct L2Reduce : SumSquareReduce {
  static constexpr bool kFloatOnly = true;
  template <class T> static T finish(T acc, int64_t) { return std::sqrt(acc); }
};

struct LogSumReduce : SumReduce {
  static constexpr bool kFloatOnly = true;
  template <class T> static T finish(T acc, int64_t) { return std::log(acc); }
};

struct ProdReduce {
  static constexpr bool kFloatOnly = false;
  template <class T> static T init() { return T(1); }
  template <class T> static T step(T acc, T x) { return acc * x; }
  template <class T> static T finish(T acc, int64_t) { return acc; }
};

// Max and Min propagate NaN, like numpy and PyTorch; an empty group gives -inf / +inf.
struct MaxReduce {
  static constexpr bool kFloatOnly = false;
  template <class T>
  static T init() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  template <class T> static T step(T acc, T x) { return (x > acc || is_nan(x)) ? x : acc; }
  template <class T> static T finish(T acc, int64_t) { return acc; }
};

struct MinReduce {
  static constexpr bool kFloatOnly = false;
  template <class T>
  static T init() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  template <class T> static T step(T acc, T x) { return (x < acc || is_nan(x)) ? x : acc; }
  template <class T> static T finish(T acc, int64_t) { return acc; }
};

template <bool kFloatOnly, class F>
bool dispatch_reduce_type(DType t, F&& f) {
  if constexpr (kFloatOnly) {
    return dispatch_float(t, f);
  } else {
    return dispatch_numeric(t, f);
  }
}

Status unsupported_type(const Node& node, DType t) {
  return node_error(node, fmt::format("unsupported element type {}", dtype_name(t)));
}

template <class P>
Status reduce_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  auto geo = plan_reduction(ctx.node, x.shape(), ctx.input(1));
  if (!geo) return geo.error();
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), geo->out_shape);
  const bool ok = dispatch_reduce_type<P::kFloatOnly>(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    fold_groups(*geo, x.data<T>(), P::template init<T>(), out,
                [](T acc, T v, int64_t) { return P::template step<T>(acc, v); });
    for (int64_t j = 0; j < y.numel(); ++j) out[j] = P::template finish<T>(out[j], geo->group_size);
  });
  return ok ? Status::ok() : unsupported_type(ctx.node, x.dtype());
}

// log Σ exp(x), shifted by the group max so large inputs do not overflow. As in PyTorch, an infinite
// max is not subtracted (shift 0), so all -inf gives -inf and any +inf gives +inf rather than NaN.
Status logsumexp_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  auto geo = plan_reduction(ctx.node, x.shape(), ctx.input(1));
  if (!geo) return geo.error();
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), geo->out_shape);
  Tensor& shift_t = ctx.state.slot(0);
  shift_t.resize(x.dtype(), geo->out_shape);
  const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* shift = shift_t.data<T>();
    T* out = y.data<T>();
    fold_groups(*geo, in, MaxReduce::init<T>(), shift, [](T acc, T v, int64_t) { return MaxReduce::step(acc, v); });
    for (int64_t j = 0; j < y.numel(); ++j)
      if (std::isinf(shift[j])) shift[j] = T(0);
    fold_groups(*geo, in, T(0), out, [&](T acc, T v, int64_t j) { return acc + std::exp(v - shift[j]); });
    for (int64_t j = 0; j < y.numel(); ++j) out[j] = std::log(out[j]) + shift[j];
  });
  return ok ? Status::ok() : unsupported_type(ctx.node, x.dtype());
}

// ---------------------------------------------------------------------------------------------
// Backward.

// What every Reduce* backward kernel reads and writes.
struct ReduceGradArgs {
  const Tensor& x;
  const Tensor& y;
  const Tensor& dy;
  Tensor& dx;
  const ReduceGeometry& geo;
};

// Runs kernel(T{}, args) with T the input's float type; handles the cases where no gradient is wanted
// or none arrives (dx = 0).
template <class Kernel>
Status reduce_backward(BackwardContext& ctx, Kernel&& kernel) {
  Tensor* dx = ctx.grad_input(0);
  if (!dx) return Status::ok();
  const Tensor& x = *ctx.input(0);
  dx->resize(x.dtype(), x.shape());
  const Tensor* dy = ctx.grad_output(0);
  auto geo = plan_reduction(ctx.node, x.shape(), ctx.input(1));
  if (!geo) return geo.error();
  const ReduceGradArgs args{x, *ctx.output(0), *dy, *dx, *geo};
  const bool ok = dispatch_float(x.dtype(), [&](auto tag) { kernel(tag, args); });
  return ok ? Status::ok() : unsupported_type(ctx.node, x.dtype());
}

// Ops whose gradient is a function of (x_i, y_j, dy_j, group size) alone.
struct SumGrad {
  template <class T> static T grad(T, T, T dy, int64_t) { return dy; }
};
struct MeanGrad {
  template <class T> static T grad(T, T, T dy, int64_t n) { return dy / static_cast<T>(n); }
};
struct SumSquareGrad {
  template <class T> static T grad(T x, T, T dy, int64_t) { return dy * (T(2) * x); }
};
struct L1Grad {  // sign(x)·dy, with sign 0 at 0 and at NaN (PyTorch's sgn)
  template <class T> static T grad(T x, T, T dy, int64_t) { return static_cast<T>((x > T(0)) - (x < T(0))) * dy; }
};
struct L2Grad {  // x·dy/‖x‖; PyTorch defines the gradient at a zero norm as 0 rather than 0/0
  template <class T> static T grad(T x, T y, T dy, int64_t) { return x * (y == T(0) ? T(0) : dy / y); }
};
struct LogSumExpGrad {  // dy·softmax(x) = dy·exp(x − y)
  template <class T> static T grad(T x, T y, T dy, int64_t) { return dy * std::exp(x - y); }
};

template <class G>
Status local_reduce_backward(BackwardContext& ctx) {
  return reduce_backward(ctx, [](auto tag, const ReduceGradArgs& a) {
    using T = decltype(tag);
    const T* x = a.x.data<T>();
    const T* y = a.y.data<T>();
    const T* dy = a.dy.data<T>();
    T* dx = a.dx.data<T>();
    const int64_t n = a.geo.group_size;
    for_each_element(a.geo, [&](int64_t i, int64_t j) { dx[i] = G::grad(x[i], y[j], dy[j], n); });
  });
}

// d log(Σx) / dx_i = 1 / Σx: the sum is recomputed rather than recovered as exp(y), which would round.
Status logsum_backward(BackwardContext& ctx) {
  return reduce_backward(ctx, [&](auto tag, const ReduceGradArgs& a) {
    using T = decltype(tag);
    Tensor& sum_t = ctx.state.slot(0);
    sum_t.resize(a.x.dtype(), a.geo.out_shape);
    const T* dy = a.dy.data<T>();
    T* sum = sum_t.data<T>();
    T* dx = a.dx.data<T>();
    fold_groups(a.geo, a.x.data<T>(), T(0), sum, [](T acc, T v, int64_t) { return acc + v; });
    for_each_element(a.geo, [&](int64_t i, int64_t j) { dx[i] = dy[j] / sum[j]; });
  });
}

// Max/Min: the gradient is split evenly among the elements equal to the extremum, as PyTorch's amax/amin
// do: dx_i = (dy / count) · [x_i == y]. A NaN extremum matches nothing, so its group gets (dy/0)·0 = NaN,
// which is again what PyTorch computes.
Status extremum_backward(BackwardContext& ctx) {
  return reduce_backward(ctx, [&](auto tag, const ReduceGradArgs& a) {
    using T = decltype(tag);
    Tensor& count_t = ctx.state.slot(0);
    count_t.resize_zero(a.x.dtype(), a.geo.out_shape);
    const T* x = a.x.data<T>();
    const T* y = a.y.data<T>();
    const T* dy = a.dy.data<T>();
    T* count = count_t.data<T>();
    T* dx = a.dx.data<T>();
    for_each_element(a.geo, [&](int64_t i, int64_t j) { count[j] += static_cast<T>(x[i] == y[j]); });
    // Each group's share dy / count once, not once per element (the same quotient: a division per element was most
    // of zoo 15's ReduceMax gradients).
    for (int64_t j = 0; j < count_t.numel(); ++j) count[j] = dy[j] / count[j];
    const T* share = count;
    for_each_element(a.geo, [&](int64_t i, int64_t j) { dx[i] = share[j] * static_cast<T>(x[i] == y[j]); });
  });
}

// Prod: dx_i = dy · Π_{k≠i} x_k, computed as (product of the elements before i) × (product of those after
// i). Unlike y / x_i this is exact with zeros in the group and does not overflow where y does.
Status prod_backward(BackwardContext& ctx) {
  return reduce_backward(ctx, [&](auto tag, const ReduceGradArgs& a) {
    using T = decltype(tag);
    Tensor& group_of_t = ctx.state.slot(1);  // output index of each input element, for the reverse pass
    Tensor& running_t = ctx.state.slot(0);
    group_of_t.resize(DType::Int64, a.x.shape());
    running_t.resize(a.x.dtype(), a.geo.out_shape);
    const T* x = a.x.data<T>();
    const T* dy = a.dy.data<T>();
    int64_t* group_of = group_of_t.data<int64_t>();
    T* running = running_t.data<T>();
    T* dx = a.dx.data<T>();
    std::fill_n(running, running_t.numel(), T(1));
    for_each_element(a.geo, [&](int64_t i, int64_t j) {
      group_of[i] = j;
      dx[i] = running[j];  // product of the group's earlier elements
      running[j] *= x[i];
    });
    std::fill_n(running, running_t.numel(), T(1));
    for (int64_t i = a.x.numel() - 1; i >= 0; --i) {
      const int64_t j = group_of[i];
      dx[i] = dy[j] * (dx[i] * running[j]);  // × product of the group's later elements
      running[j] *= x[i];
    }
  });
}

// ---------------------------------------------------------------------------------------------
// ArgMax / ArgMin: index of the extremum along `axis` (int64). NaN counts as the extremum (numpy's and
// PyTorch's rule); ties go to the first index, or the last with select_last_index.

template <bool kMax, class T>
bool strictly_better(T candidate, T best) {
  if (is_nan(best)) return false;
  if (is_nan(candidate)) return true;
  return kMax ? candidate > best : candidate < best;
}

template <class T>
bool same_value(T a, T b) {
  return a == b || (is_nan(a) && is_nan(b));
}

template <bool kMax>
Status arg_extremum_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  const Shape& s = x.shape();
  const int64_t requested = ctx.node.attr_int("axis", 0);
  const int axis = normalize_axis(requested, s.rank());
  if (axis < 0) return node_error(ctx.node, fmt::format("axis {} is out of range for rank {}", requested, s.rank()));
  const int64_t n = s[axis];
  if (n == 0) return node_error(ctx.node, "cannot take the index of an extremum along an empty axis");
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  const bool select_last = ctx.node.attr_int("select_last_index", 0) != 0;
  Shape out_shape;
  for (int d = 0; d < s.rank(); ++d)
    if (d != axis || keepdims) out_shape.push_back(d == axis ? 1 : s[d]);
  Tensor& y = *ctx.output(0);
  y.resize(DType::Int64, out_shape);
  const int64_t outer = s.numel(0, axis);
  const int64_t inner = s.numel(axis + 1, s.rank());
  const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    int64_t* out = y.data<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = in + o * n * inner + i;
        T best = p[0];
        int64_t best_k = 0;
        for (int64_t k = 1; k < n; ++k) {
          const T v = p[k * inner];
          if (strictly_better<kMax>(v, best) || (select_last && same_value(v, best))) {
            best = v;
            best_k = k;
          }
        }
        out[o * inner + i] = best_k;
      }
    }
  });
  return ok ? Status::ok() : unsupported_type(ctx.node, x.dtype());
}

// ---------------------------------------------------------------------------------------------
// CumSum: running sums along the axis given as input 1, in the tensor's own type and in order (as numpy
// and the frameworks add), from the end with reverse, excluding each element itself with exclusive.

struct CumSumLayout {
  int64_t outer = 1, n = 1, inner = 1;  // x viewed as [outer, n, inner], n along the axis
};

Status cumsum_layout(const Node& node, const Tensor* axis_t, const Shape& s, CumSumLayout& l) {
  if (!axis_t || !is_integer(axis_t->dtype()) || axis_t->numel() != 1)
    return node_error(node, "axis must be an integer scalar");
  const int64_t requested = axis_t->get_as_int(0);
  const int axis = normalize_axis(requested, s.rank());
  if (axis < 0) return node_error(node, fmt::format("axis {} is out of range for rank {}", requested, s.rank()));
  l = {s.numel(0, axis), s[axis], s.numel(axis + 1, s.rank())};
  return Status::ok();
}

// y = cumsum(x) along the layout's axis; each row of `inner` elements adds to the previous one.
template <class T>
void cumsum_typed(const CumSumLayout& l, const T* x, T* y, bool exclusive, bool reverse) {
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = o * l.n * l.inner;
    for (int64_t t = 0; t < l.n; ++t) {
      const int64_t k = reverse ? l.n - 1 - t : t;
      T* row = y + base + k * l.inner;
      if (t == 0) {
        for (int64_t i = 0; i < l.inner; ++i) row[i] = exclusive ? T(0) : x[base + k * l.inner + i];
        continue;
      }
      const int64_t p = reverse ? k + 1 : k - 1;  // the position summed just before
      const T* prev = y + base + p * l.inner;
      const T* add = x + base + (exclusive ? p : k) * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) row[i] = prev[i] + add[i];
    }
  }
}

Status cumsum_run(const Node& node, const CumSumLayout& l, const Tensor& x, Tensor& y, bool reverse) {
  y.resize(x.dtype(), x.shape());
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cumsum_typed(l, x.data<T>(), y.data<T>(), exclusive, reverse);
  });
  return ok ? Status::ok() : unsupported_type(node, x.dtype());
}

Status cumsum_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  CumSumLayout l;
  GRIST_TRY(cumsum_layout(ctx.node, ctx.input(1), x.shape(), l));
  return cumsum_run(ctx.node, l, x, *ctx.output(0), ctx.node.attr_int("reverse", 0) != 0);
}

// y_j = Σ_{i ≤ j} x_i (or i < j) gives dx_i = Σ_{j ≥ i} dy_j (or j > i): the same cumsum of dy, the other way.
Status cumsum_backward(BackwardContext& ctx) {
  Tensor* dx = ctx.grad_input(0);
  if (!dx) return Status::ok();
  const Tensor& x = *ctx.input(0);
  const Tensor* dy = ctx.grad_output(0);
  CumSumLayout l;
  GRIST_TRY(cumsum_layout(ctx.node, ctx.input(1), x.shape(), l));
  return cumsum_run(ctx.node, l, *dy, *dx, ctx.node.attr_int("reverse", 0) == 0);
}

// ---------------------------------------------------------------------------------------------
// Interval transfers (grist scan).

// How many input elements a Reduce* output combines.
int64_t terms_per_output(const IntervalTensor& x, const IntervalTensor& y) {
  return std::max<int64_t>(1, x.numel() / std::max<int64_t>(1, y.numel()));
}

// ArgMax/ArgMin: an index along the axis, whatever the values.
Status arg_extremum_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_unbounded(c));  // the output shape
  const IntervalTensor* x = c.partitioned(0);
  IntervalTensor& y = c.outputs[0];
  if (!x || !x->shape_known || !y.shape_known || x->shape.rank() == 0) return Status::ok();
  const int axis = normalize_axis(c.node.attr_int("axis", 0), x->shape.rank());
  if (axis < 0) return Status::ok();
  y = IntervalTensor::filled(DType::Int64, y.shape, {0, double(x->shape[axis] - 1)});
  return Status::ok();
}

// Σ|x|, Σx², √Σx²: non-decreasing in every |x|, so the kernel at the bounds of |x| bounds them. A float32
// sum of n non-negative terms (each rounded once, and the root) is off by at most γ_{n+2} of itself.
Status norm_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  IntervalTensor magnitude = *x;
  magnitude.exact.reset();
  for (size_t i = 0; i < magnitude.lo.size(); ++i) {
    const double lo = x->lo[i], hi = x->hi[i];
    magnitude.lo[i] = lo >= 0 ? lo : hi <= 0 ? -hi : 0.0;
    magnitude.hi[i] = std::max(std::fabs(lo), std::fabs(hi));
  }
  std::vector<const IntervalTensor*> in(c.inputs.begin(), c.inputs.end());
  in[0] = &magnitude;
  BoundsContext on_magnitude{c.node, c.def, in, c.outputs};
  GRIST_TRY(bounds_monotone(on_magnitude, true));
  IntervalTensor& y = c.outputs[0];
  if (!y.shape_known || y.numel() == 0) return Status::ok();
  const int64_t n = terms_per_output(*x, y);
  const double g = gamma_f32(n + 2), flushed = 2 * static_cast<double>(n) * FLT_MIN;
  if (c.node.op_type == "ReduceL2") {
    // On the sum of squares: squares and sums that underflow (or flush) lose up to FLT_MIN each, and √
    // hides a sum beyond FLT_MAX (then inf).
    for (size_t i = 0; i < y.lo.size(); ++i) {
      const double lo2 = y.lo[i] * y.lo[i] * (1 - g) - flushed, hi2 = y.hi[i] * y.hi[i] * (1 + g) + flushed;
      y.lo[i] = lo2 > 0 ? round_down_f32(std::sqrt(lo2)) : 0.0;
      y.hi[i] = hi2 <= FLT_MAX ? round_up_f32(std::sqrt(hi2)) : kInf;
    }
    return Status::ok();
  }
  for (size_t i = 0; i < y.lo.size(); ++i) {
    y.lo[i] = std::max(0.0, round_down_f32(y.lo[i] * (1 - g) - flushed));
    y.hi[i] = round_up_f32(y.hi[i] * (1 + g) + flushed);
  }
  return Status::ok();
}

// log Σ exp(x) is non-decreasing in x. The kernel shifts by the maximum: each term exp(x − m) ≤ 1, so
// the rounding moves log Σ by at most γ_{n+4}, and adding m back by one rounding of the result.
Status logsumexp_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_monotone(c, true));
  const IntervalTensor* x = c.input(0);
  IntervalTensor& y = c.outputs[0];
  if (!x || !y.shape_known || y.numel() == 0) return Status::ok();
  const double g = gamma_f32(terms_per_output(*x, y) + 4);
  for (size_t i = 0; i < y.lo.size(); ++i) {
    y.lo[i] = round_down_f32(y.lo[i] - g * (1 + std::fabs(y.lo[i])));
    y.hi[i] = round_up_f32(y.hi[i] + g * (1 + std::fabs(y.hi[i])));
  }
  return Status::ok();
}

// log Σx: non-decreasing in x (NaN where the sum may be negative). The kernel at the bounds gives the
// exact sums' logarithms; the float32 sum is off by γ_n·Σ|x| ≤ γ_n·n·max|x| (not relative to a sum that
// cancels), so the sums are widened by that before the logarithm is taken again. A sum that may overflow
// (n·max|x| beyond FLT_MAX: ±inf, or NaN) leaves the output unbounded.
Status logsum_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_monotone(c, true));
  const IntervalTensor* x = c.input(0);
  IntervalTensor& y = c.outputs[0];
  if (!x || !y.shape_known || y.numel() == 0) return Status::ok();
  const int64_t n = terms_per_output(*x, y);
  const Interval h = x->hull();
  const double magnitude = static_cast<double>(n) * std::max(std::fabs(h.lo), std::fabs(h.hi));
  if (!(magnitude <= FLT_MAX)) {
    const Shape shape = y.shape;
    y = IntervalTensor::unbounded(x->dtype, shape);
    return Status::ok();
  }
  const double e = sum_error_f32(n + 1, magnitude);
  for (size_t i = 0; i < y.lo.size(); ++i) {
    const double sum_lo = std::exp(y.lo[i]) * (1 - 0x1.0p-50) - e, sum_hi = std::exp(y.hi[i]) * (1 + 0x1.0p-50) + e;
    if (sum_lo < 0) y.may_be_nan = true;
    y.lo[i] = sum_lo > 0 ? round_down_f32(std::log(sum_lo)) : -kInf;
    y.hi[i] = sum_hi > 0 ? round_up_f32(std::log(sum_hi)) : -kInf;
  }
  return Status::ok();
}

// Π x over n terms: non-decreasing for x ≥ 0 (the kernel at the bounds); otherwise |Π x| ≤ max|x|ⁿ. Each
// product rounds by u of itself, or by up to FLT_MIN once a partial product is subnormal or flushed, an
// error later factors (≤ H = max(max|x|, 1)) scale by at most Hⁿ; a partial product beyond FLT_MAX is inf,
// and inf·0 NaN.
Status prod_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known) return bounds_unbounded(c);
  const Interval h = x->hull();
  const bool non_negative = h.lo >= 0;
  IntervalTensor& y = c.outputs[0];
  GRIST_TRY(non_negative ? bounds_monotone(c, true) : bounds_unbounded(c));
  if (!y.shape_known || y.numel() == 0) return Status::ok();
  const int64_t n = terms_per_output(*x, y);
  const double g = gamma_f32(n + 1);
  const double top = std::pow(std::max({std::fabs(h.lo), std::fabs(h.hi), 1.0}), static_cast<double>(n));
  const double absolute = static_cast<double>(n) * FLT_MIN * top;
  if (!h.finite() || x->may_be_nan || !(top * (1 + g) + absolute <= FLT_MAX)) {
    const Shape shape = y.shape;
    y = IntervalTensor::unbounded(x->dtype, shape);
    return Status::ok();
  }
  if (non_negative) {
    for (size_t i = 0; i < y.lo.size(); ++i) {
      y.lo[i] = std::max(0.0, round_down_f32(y.lo[i] * (1 - g) - absolute));
      y.hi[i] = round_up_f32(y.hi[i] * (1 + g) + absolute);
    }
  } else {
    const double m = top * (1 + g) + absolute;
    const Shape shape = y.shape;
    y = IntervalTensor::filled(x->dtype, shape, {round_down_f32(-m), round_up_f32(m)});
  }
  y.may_be_nan = false;
  return Status::ok();
}

// CumSum: non-decreasing in x, so the kernel at the bounds; each output a float32 sum of up to n terms
// (n the axis length, or all of x where the axis is not known), widened by γ_n·(the cumsum of |x|).
// No shape rule: its single-interval shortcut would give the input's hull, not the sums'.
Status cumsum_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  const IntervalTensor* axis = c.input(1);
  if (!x || !x->shape_known) return bounds_unbounded(c);
  int64_t terms = std::max<int64_t>(1, x->numel());
  CumSumLayout l;
  if (axis && axis->exact && cumsum_layout(c.node, axis->exact.get(), x->shape, l)) terms = std::max<int64_t>(1, l.n);
  return bounds_sum_of_terms(c, terms, false);
}

}  // namespace


void register_reduction_ops(OpRegistry& r) {
  const uint32_t data_only = inputs_mask({0});
  r.add(OpDef{"ReduceSum", "", reduce_forward<SumReduce>, local_reduce_backward<SumGrad>, data_only, {}, bounds_monotone_sum,
              0, reduce_shape});
  r.add(OpDef{"ReduceMean", "", reduce_forward<MeanReduce>, local_reduce_backward<MeanGrad>, data_only, {},
              bounds_monotone_mean, 0, reduce_shape});
  r.add(OpDef{"ReduceSumSquare", "", reduce_forward<SumSquareReduce>, local_reduce_backward<SumSquareGrad>,
              data_only, {}, norm_bounds});
  r.add(OpDef{"ReduceL1", "", reduce_forward<L1Reduce>, local_reduce_backward<L1Grad>, data_only, {}, norm_bounds});
  r.add(OpDef{"ReduceL2", "", reduce_forward<L2Reduce>, local_reduce_backward<L2Grad>, data_only, {}, norm_bounds});
  r.add(OpDef{"ReduceLogSum", "", reduce_forward<LogSumReduce>, logsum_backward, data_only, {}, logsum_bounds});
  r.add(OpDef{"ReduceLogSumExp", "", logsumexp_forward, local_reduce_backward<LogSumExpGrad>, data_only, {},
              logsumexp_bounds});
  r.add(OpDef{"ReduceProd", "", reduce_forward<ProdReduce>, prod_backward, data_only, {}, prod_bounds});
  r.add(OpDef{"ReduceMax", "", reduce_forward<MaxReduce>, extremum_backward, data_only, {}, bounds_select, 0,
              reduce_shape});
  r.add(OpDef{"ReduceMin", "", reduce_forward<MinReduce>, extremum_backward, data_only, {}, bounds_select, 0,
              reduce_shape});
  r.add(OpDef{"CumSum", "", cumsum_forward, cumsum_backward, data_only, {}, cumsum_bounds});
  r.add(OpDef{"ArgMax", "", arg_extremum_forward<true>, nullptr, 0, {}, arg_extremum_bounds});
  r.add(OpDef{"ArgMin", "", arg_extremum_forward<false>, nullptr, 0, {}, arg_extremum_bounds});
}

}  // namespace grist
