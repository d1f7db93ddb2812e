// Comparisons, boolean logic, NaN/Inf tests and Where. Only Where carries a gradient (to the branch each
// element was taken from); the others produce bool tensors, through which nothing flows.
#include <cmath>
#include <limits>

#include "ops/elementwise_broadcast.h"
#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {
namespace {

using elementwise::broadcast_all;
using elementwise::broadcast_two;
using elementwise::for_each_broadcast;
using elementwise::for_each_pair;
using elementwise::for_each_triple;
using elementwise::mismatched_dtypes;
using elementwise::unsupported_dtype;
using elementwise::write_operand_grad;

// Broadcasts inputs 0 and 1 (same dtype) into a bool output via test(a, b), with T from `dispatch`.
template <class Dispatch, class Test>
Status broadcast_predicate(ForwardContext& ctx, Dispatch dispatch, Test test) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype()) return mismatched_dtypes(ctx.node, a.dtype(), b.dtype());
  auto shape = broadcast_two(ctx.node, a.shape(), b.shape());
  if (!shape) return shape.error();
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  const bool supported = dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    y->resize(DType::Bool, *shape);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    bool* py = y->data<bool>();
    for_each_pair(a.shape(), b.shape(), *shape, [&](int64_t o, int64_t i, int64_t j) { py[o] = test(pa[i], pb[j]); });
  });
  return supported ? Status::ok() : Status(unsupported_dtype(ctx.node, a.dtype()));
}

// The dtype sets the comparison and logic ops accept.
struct AnyType {
  template <class F> bool operator()(DType t, F&& f) const { return dispatch_all(t, f); }
};
struct NumericType {
  template <class F> bool operator()(DType t, F&& f) const { return dispatch_numeric(t, f); }
};
struct FloatType {
  template <class F> bool operator()(DType t, F&& f) const { return dispatch_float(t, f); }
};

struct BoolType {
  template <class F>
  bool operator()(DType t, F&& f) const {
    if (t != DType::Bool) return false;
    f(bool{});
    return true;
  }
};

// Comparisons with NaN are false (Equal included), as IEEE and numpy have it.
Status equal_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, AnyType{}, [](auto a, auto b) { return a == b; });
}
Status less_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, NumericType{}, [](auto a, auto b) { return a < b; });
}
Status less_or_equal_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, NumericType{}, [](auto a, auto b) { return a <= b; });
}
Status greater_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, NumericType{}, [](auto a, auto b) { return a > b; });
}
Status greater_or_equal_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, NumericType{}, [](auto a, auto b) { return a >= b; });
}
Status and_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, BoolType{}, [](bool a, bool b) { return a && b; });
}
Status or_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, BoolType{}, [](bool a, bool b) { return a || b; });
}
Status xor_forward(ForwardContext& ctx) {
  return broadcast_predicate(ctx, BoolType{}, [](bool a, bool b) { return a != b; });
}

// Maps input 0 elementwise into a bool output via test(x), with T from `dispatch`.
template <class Dispatch, class Test>
Status map_predicate(ForwardContext& ctx, Dispatch dispatch, Test test) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  Tensor* y = ctx.output(0);
  if (y == nullptr) return Status::ok();
  const bool supported = dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    y->resize(DType::Bool, x.shape());
    const T* px = x.data<T>();
    bool* py = y->data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = test(px[i]);
  });
  return supported ? Status::ok() : Status(unsupported_dtype(ctx.node, x.dtype()));
}

Status not_forward(ForwardContext& ctx) {
  return map_predicate(ctx, BoolType{}, [](bool x) { return !x; });
}

Status is_nan_forward(ForwardContext& ctx) {
  return map_predicate(ctx, FloatType{}, [](auto x) { return std::isnan(x); });
}

Status is_inf_forward(ForwardContext& ctx) {
  const bool positive = ctx.node.attr_int("detect_positive", 1) != 0;
  const bool negative = ctx.node.attr_int("detect_negative", 1) != 0;
  return map_predicate(ctx, FloatType{}, [positive, negative](auto x) {
    return std::isinf(x) && (x > 0 ? positive : negative);
  });
}

// Where(cond, X, Y): X where cond holds, Y elsewhere, all three broadcast together.
Status where_forward(ForwardContext& ctx) {
  for (size_t i = 0; i < 3; ++i) GRIST_TRY(require_input(ctx, i));
  const Tensor& cond = *ctx.input(0);
  const Tensor& x = *ctx.input(1);
  const Tensor& y = *ctx.input(2);
  if (cond.dtype() != DType::Bool)
    return node_error(ctx.node, fmt::format("condition must be bool, got {}", dtype_name(cond.dtype())));
  if (x.dtype() != y.dtype()) return mismatched_dtypes(ctx.node, x.dtype(), y.dtype());
  const Shape* shapes[] = {&cond.shape(), &x.shape(), &y.shape()};
  auto shape = broadcast_all(ctx.node, shapes);
  if (!shape) return shape.error();
  Tensor* out = ctx.output(0);
  if (out == nullptr) return Status::ok();
  const bool supported = dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    out->resize(x.dtype(), *shape);
    const bool* pc = cond.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out->data<T>();
    for_each_triple(cond.shape(), x.shape(), y.shape(), *shape,
                    [&](int64_t o, int64_t c, int64_t i, int64_t j) { po[o] = pc[c] ? px[i] : py[j]; });
  });
  return supported ? Status::ok() : Status(unsupported_dtype(ctx.node, x.dtype()));
}

// X receives the output gradient where cond holds and Y where it does not, each reduced to its shape.
Status where_backward(BackwardContext& ctx) {
  const Tensor& cond = *ctx.input(0);
  const Tensor& out = *ctx.output(0);
  const Tensor* gy = ctx.grad_output(0);
  const bool supported = dispatch_float(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t k = 1; k <= 2; ++k) {
      Tensor* grad = ctx.grad_input(k);
      if (grad == nullptr) continue;
      const Shape& target = ctx.input(k)->shape();
      const bool taken_when = k == 1;
      write_operand_grad(*grad, out.dtype(), target, out.shape(), ctx.state.slot(0), [&](Tensor& dst) {
        const bool* pc = cond.data<bool>();
        const T* g = gy->data<T>();
        T* d = dst.data<T>();
        for_each_broadcast(cond.shape(), out.shape(),
                           [&](int64_t o, int64_t c) { d[o] = pc[c] == taken_when ? g[o] : T(0); });
      });
    }
  });
  if (!supported)
    return node_error(ctx.node, fmt::format("internal: gradient requested for {} data", dtype_name(out.dtype())));
  return Status::ok();
}

}  // namespace

namespace {
// Interval transfer of comparisons and logic (grist scan): a bool in [0, 1], of the kernel's shape.
Status boolean_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_unbounded(c));
  for (IntervalTensor& out : c.outputs) {
    out.dtype = DType::Bool;
    out.lo = {0};
    out.hi = {1};
    out.may_be_nan = false;
  }
  return Status::ok();
}
}  // namespace

void register_logic_ops(OpRegistry& r) {
  r.add(OpDef{"Equal", "", equal_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Less", "", less_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"LessOrEqual", "", less_or_equal_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Greater", "", greater_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"GreaterOrEqual", "", greater_or_equal_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"And", "", and_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Or", "", or_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Xor", "", xor_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Not", "", not_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"IsNaN", "", is_nan_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"IsInf", "", is_inf_forward, nullptr, 0, {}, boolean_bounds, kElementwise});
  r.add(OpDef{"Where", "", where_forward, where_backward, inputs_mask({1, 2}), {}, bounds_select_by_index, kElementwise});
}

}  // namespace grist
