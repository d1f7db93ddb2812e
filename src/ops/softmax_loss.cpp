// Softmax, LogSoftmax, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
//
// These are where models most often turn finite inputs into inf/NaN (log of an underflowed softmax,
// a loss mean over zero weight), so the arithmetic is kept exactly IEEE in the tensor's own type:
// softmax = exp(x − max) / Σ exp(x − max) in float32 for float32 (an entry more than ~103 below its row
// max underflows to exactly 0, denormals kept), log-softmax = (x − max) − log Σ exp(x − max), and a mean
// over zero total weight is 0/0 = NaN.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "ops/kernel_util.h"
#include "ops/registry.h"

namespace grist {
namespace {

// ---------------------------------------------------------------------------------------------
// Softmax along one axis of a tensor viewed as [outer, n, inner]: rows of n elements, `inner` apart.

struct SoftmaxLayout {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

// Opset >= 13 normalises along `axis` (default -1). Before, `axis` (default 1) flattened the input to
// [prod(dims < axis), prod(dims >= axis)] and normalised each row of that matrix.
Result<SoftmaxLayout> softmax_layout(const Node& node, const Shape& s) {
  const int rank = s.rank();
  const bool per_axis = node.opset >= 13;
  const int64_t requested = node.attr_int("axis", per_axis ? -1 : 1);
  // The flattening form also accepts axis == rank (a single column of ones).
  const int64_t limit = per_axis ? rank : rank + 1;
  const int64_t axis = requested < 0 ? requested + rank : requested;
  if (axis < 0 || axis >= limit)
    return node_error(node, fmt::format("axis {} is out of range for an input of rank {}", requested, rank));
  const int a = static_cast<int>(axis);
  if (per_axis) return SoftmaxLayout{s.numel(0, a), s[a], s.numel(a + 1, rank)};
  return SoftmaxLayout{s.numel(0, a), s.numel(a, rank), 1};
}

// The last axis (inner 1, as exported models and the zoo's classifiers have it): each row's max and sum in a
// register, where the general kernel below keeps one-element arrays in memory and runs loops of one element (zoo
// 40-42's rows of 3 classes: a fifth of their search's time). The same operations in the same order.
template <bool kLog, class T>
void softmax_forward_rows(const T* x, T* y, int64_t rows, int64_t n) {
  for (int64_t o = 0; o < rows; ++o, x += n, y += n) {
    T max = -std::numeric_limits<T>::infinity(), sum = 0;
    for (int64_t k = 0; k < n; ++k) max = std::max(max, x[k]);
    for (int64_t k = 0; k < n; ++k) {
      const T e = std::exp(x[k] - max);
      sum += e;
      if constexpr (!kLog) y[k] = e;
    }
    if constexpr (kLog) {
      sum = std::log(sum);
      for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - max) - sum;
    } else {
      for (int64_t k = 0; k < n; ++k) y[k] /= sum;
    }
  }
}

// Forward over every [n, inner] block; `col_max` and `col_sum` hold `inner` values each.
template <bool kLog, class T>
void softmax_forward_kernel(const T* x, T* y, const SoftmaxLayout& L, T* col_max, T* col_sum) {
  if (L.inner == 1) return softmax_forward_rows<kLog>(x, y, L.outer, L.n);
  const int64_t inner = L.inner;
  for (int64_t o = 0; o < L.outer; ++o) {
    const T* xb = x + o * L.n * inner;
    T* yb = y + o * L.n * inner;
    std::fill_n(col_max, inner, -std::numeric_limits<T>::infinity());
    std::fill_n(col_sum, inner, T(0));
    // A NaN is skipped by the max but still reaches every output of its row through the sum.
    for (int64_t k = 0; k < L.n; ++k)
      for (int64_t i = 0; i < inner; ++i) col_max[i] = std::max(col_max[i], xb[k * inner + i]);
    for (int64_t k = 0; k < L.n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        const T e = std::exp(xb[k * inner + i] - col_max[i]);
        col_sum[i] += e;
        if constexpr (!kLog) yb[k * inner + i] = e;
      }
    }
    if constexpr (kLog) {
      for (int64_t i = 0; i < inner; ++i) col_sum[i] = std::log(col_sum[i]);
      for (int64_t k = 0; k < L.n; ++k)
        for (int64_t i = 0; i < inner; ++i) yb[k * inner + i] = (xb[k * inner + i] - col_max[i]) - col_sum[i];
    } else {
      for (int64_t k = 0; k < L.n; ++k)
        for (int64_t i = 0; i < inner; ++i) yb[k * inner + i] /= col_sum[i];
    }
  }
}

// Backward from the forward output y: softmax dx = y·(dy − Σ dy·y); log-softmax dx = dy − exp(y)·Σ dy
// (PyTorch's formulas). dx may alias dy. `col_acc` holds `inner` values.
template <bool kLog, class T>
void softmax_backward_kernel(const T* y, const T* dy, T* dx, const SoftmaxLayout& L, T* col_acc) {
  if (L.inner == 1) {  // the last axis: each row's sum in a register (softmax_forward_rows)
    for (int64_t base = 0; base < L.outer * L.n; base += L.n) {
      T acc = 0;
      for (int64_t k = base; k < base + L.n; ++k) acc += kLog ? dy[k] : dy[k] * y[k];
      for (int64_t k = base; k < base + L.n; ++k) dx[k] = kLog ? dy[k] - std::exp(y[k]) * acc : y[k] * (dy[k] - acc);
    }
    return;
  }
  const int64_t inner = L.inner;
  for (int64_t o = 0; o < L.outer; ++o) {
    const int64_t base = o * L.n * inner;
    std::fill_n(col_acc, inner, T(0));
    for (int64_t k = 0; k < L.n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + k * inner + i;
        col_acc[i] += kLog ? dy[e] : dy[e] * y[e];
      }
    }
    for (int64_t k = 0; k < L.n; ++k) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + k * inner + i;
        dx[e] = kLog ? dy[e] - std::exp(y[e]) * col_acc[i] : y[e] * (dy[e] - col_acc[i]);
      }
    }
  }
}

Status unsupported_type(const Node& node, DType t) {
  return node_error(node, fmt::format("unsupported element type {}", dtype_name(t)));
}

template <bool kLog>
Status softmax_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  auto layout = softmax_layout(ctx.node, x.shape());
  if (!layout) return layout.error();
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), x.shape());
  Tensor& scratch = ctx.state.slot(0);
  scratch.resize(x.dtype(), Shape{2, layout->inner});
  const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* s = scratch.data<T>();
    softmax_forward_kernel<kLog>(x.data<T>(), y.data<T>(), *layout, s, s + layout->inner);
  });
  return ok ? Status::ok() : unsupported_type(ctx.node, x.dtype());
}

template <bool kLog>
Status softmax_backward(BackwardContext& ctx) {
  Tensor* dx = ctx.grad_input(0);
  if (!dx) return Status::ok();
  const Tensor& y = *ctx.output(0);
  dx->resize(y.dtype(), y.shape());
  const Tensor* dy = ctx.grad_output(0);
  auto layout = softmax_layout(ctx.node, y.shape());
  if (!layout) return layout.error();
  Tensor& scratch = ctx.state.slot(0);
  scratch.resize(y.dtype(), Shape{layout->inner});
  dispatch_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<kLog>(y.data<T>(), dy->data<T>(), dx->data<T>(), *layout, scratch.data<T>());
  });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Negative log-likelihood over log-probabilities viewed as [N, C, D] with targets [N, D].

enum class Reduction { None, Sum, Mean };

struct NllSpec {
  int64_t N = 0, C = 0, D = 1;
  Reduction reduction = Reduction::Mean;
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

// Checks input [N, C, d1..], target [N, d1..] (int32/int64), weight [C] of the input's type, and the
// attributes; the same for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
Result<NllSpec> plan_nll(const Node& node, const Tensor& input, const Tensor& target, const Tensor* weight) {
  const Shape& s = input.shape();
  if (s.rank() < 2) return node_error(node, fmt::format("input must be [N, C, ...], got {}", s.str()));
  bool target_ok = target.rank() == s.rank() - 1 && target.shape()[0] == s[0];
  for (int d = 1; target_ok && d < target.rank(); ++d) target_ok = target.shape()[d] == s[d + 1];
  if (!target_ok)
    return node_error(node, fmt::format("target shape {} does not match input shape {}", target.shape().str(), s.str()));
  if (target.dtype() != DType::Int32 && target.dtype() != DType::Int64)
    return node_error(node, fmt::format("target must be int32 or int64, got {}", dtype_name(target.dtype())));
  if (!is_float(input.dtype())) return unsupported_type(node, input.dtype()).error();
  if (weight && (weight->dtype() != input.dtype() || weight->rank() != 1 || weight->shape()[0] != s[1]))
    return node_error(node, fmt::format("weight must be a {} vector of {} classes, got {} {}",
                                        dtype_name(input.dtype()), s[1], dtype_name(weight->dtype()),
                                        weight->shape().str()));
  NllSpec spec;
  spec.N = s[0];
  spec.C = s[1];
  spec.D = s.numel(2, s.rank());
  const std::string reduction = node.attr_string("reduction", "mean");
  if (reduction == "none") {
    spec.reduction = Reduction::None;
  } else if (reduction == "sum") {
    spec.reduction = Reduction::Sum;
  } else if (reduction == "mean") {
    spec.reduction = Reduction::Mean;
  } else {
    return node_error(node, fmt::format("unknown reduction '{}'", reduction));
  }
  spec.has_ignore = node.has_attr("ignore_index");
  spec.ignore_index = node.attr_int("ignore_index", 0);
  return spec;
}

Shape nll_output_shape(const NllSpec& spec, const Tensor& target) {
  return spec.reduction == Reduction::None ? target.shape() : Shape{};
}

template <class F>
bool dispatch_index(DType t, F&& f) {
  switch (t) {
    case DType::Int32: f(int32_t{}); return true;
    case DType::Int64: f(int64_t{}); return true;
    default: return false;
  }
}

// Calls f(p, e, c) for every target position p = n·D + d that is not ignored, with c its class and
// e = (n·C + c)·D + d the matching log-probability. Fails on a class outside [0, C).
template <class I, class F>
Status for_each_counted_target(const Node& node, const NllSpec& spec, const I* target, F&& f) {
  for (int64_t n = 0; n < spec.N; ++n) {
    for (int64_t d = 0; d < spec.D; ++d) {
      const int64_t p = n * spec.D + d;
      const int64_t c = static_cast<int64_t>(target[p]);
      if (spec.has_ignore && c == spec.ignore_index) continue;
      if (c < 0 || c >= spec.C)
        return node_error(node, fmt::format("target {} at position {} is outside [0, {})", c, p, spec.C));
      f(p, (n * spec.C + c) * spec.D + d, c);
    }
  }
  return Status::ok();
}

// The mean's denominator: Σ weight[target] over counted targets (their count without weights).
template <class T, class I>
Result<T> nll_mean_denominator(const Node& node, const NllSpec& spec, const I* target, const T* weight) {
  T total = T(0);
  GRIST_TRY(for_each_counted_target(node, spec, target,
                                    [&](int64_t, int64_t, int64_t c) { total += weight ? weight[c] : T(1); }));
  return total;
}

// loss_p = −weight[c]·logp[n, c, d] (0 where ignored), then reduced. Mean divides by the total weight
// even when it is 0 (NaN, as PyTorch and the ONNX reference give).
template <class T, class I>
Status nll_forward_kernel(const Node& node, const NllSpec& spec, const T* logp, const I* target, const T* weight,
                          T* out) {
  if (spec.reduction == Reduction::None) {
    std::fill_n(out, spec.N * spec.D, T(0));
    return for_each_counted_target(node, spec, target, [&](int64_t p, int64_t e, int64_t c) {
      out[p] = weight ? weight[c] * -logp[e] : -logp[e];
    });
  }
  T total = T(0);
  GRIST_TRY(for_each_counted_target(node, spec, target, [&](int64_t, int64_t e, int64_t c) {
    total += weight ? weight[c] * -logp[e] : -logp[e];
  }));
  if (spec.reduction == Reduction::Mean) {
    auto denominator = nll_mean_denominator(node, spec, target, weight);
    if (!denominator) return denominator.error();
    total /= *denominator;
  }
  out[0] = total;
  return Status::ok();
}

// Adds d loss / d logp into `dlogp` (which the caller has zeroed or filled): −weight[c]·dy at each
// counted target, dy divided by the total weight for the mean (PyTorch's order of operations).
template <class T, class I>
Status nll_backward_kernel(const Node& node, const NllSpec& spec, const I* target, const T* weight, const T* dy,
                           T* dlogp) {
  T mean_scale = T(1);
  if (spec.reduction == Reduction::Mean) {
    auto denominator = nll_mean_denominator(node, spec, target, weight);
    if (!denominator) return denominator.error();
    mean_scale = *denominator;
  }
  return for_each_counted_target(node, spec, target, [&](int64_t p, int64_t e, int64_t c) {
    const T g = spec.reduction == Reduction::None ? -dy[p]
                : spec.reduction == Reduction::Sum ? -dy[0]
                                                   : -(dy[0] / mean_scale);
    dlogp[e] += weight ? weight[c] * g : g;
  });
}

// Runs f(T{}, I{}) for the input's float type and the target's index type (both checked by plan_nll).
template <class F>
void dispatch_nll(const Tensor& input, const Tensor& target, F&& f) {
  dispatch_float(input.dtype(), [&](auto t) { dispatch_index(target.dtype(), [&](auto i) { f(t, i); }); });
}

template <class T>
const T* optional_data(const Tensor* t) {
  return t ? t->data<T>() : nullptr;
}

Status nll_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& input = *ctx.input(0);
  const Tensor& target = *ctx.input(1);
  const Tensor* weight = ctx.input(2);
  auto spec = plan_nll(ctx.node, input, target, weight);
  if (!spec) return spec.error();
  Tensor& loss = *ctx.output(0);
  loss.resize(input.dtype(), nll_output_shape(*spec, target));
  Status st;
  dispatch_nll(input, target, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    st = nll_forward_kernel<T, I>(ctx.node, *spec, input.data<T>(), target.data<I>(), optional_data<T>(weight),
                                  loss.data<T>());
  });
  return st;
}

Status nll_backward(BackwardContext& ctx) {
  Tensor* dinput = ctx.grad_input(0);
  if (!dinput) return Status::ok();
  const Tensor& input = *ctx.input(0);
  const Tensor& target = *ctx.input(1);
  const Tensor* weight = ctx.input(2);
  dinput->resize_zero(input.dtype(), input.shape());
  const Tensor* dy = ctx.grad_output(0);
  auto spec = plan_nll(ctx.node, input, target, weight);
  if (!spec) return spec.error();
  Status st;
  dispatch_nll(input, target, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    st = nll_backward_kernel<T, I>(ctx.node, *spec, target.data<I>(), optional_data<T>(weight), dy->data<T>(),
                                   dinput->data<T>());
  });
  return st;
}

// ---------------------------------------------------------------------------------------------
// SoftmaxCrossEntropyLoss = NLL of log-softmax over the class axis (1). The log-probabilities live in
// the optional second output when the model asks for it, else in node state, for the backward.

SoftmaxLayout class_axis_layout(const NllSpec& spec) { return SoftmaxLayout{spec.N, spec.C, spec.D}; }

Status sce_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  GRIST_TRY(require_input(ctx, 1));
  const Tensor& scores = *ctx.input(0);
  const Tensor& labels = *ctx.input(1);
  const Tensor* weight = ctx.input(2);
  auto spec = plan_nll(ctx.node, scores, labels, weight);
  if (!spec) return spec.error();
  Tensor& scratch = ctx.state.slot(1);
  scratch.resize(scores.dtype(), Shape{2, spec->D});
  Tensor& logp = ctx.output(1) ? *ctx.output(1) : ctx.state.slot(0);
  logp.resize(scores.dtype(), scores.shape());
  Tensor& loss = *ctx.output(0);
  loss.resize(scores.dtype(), nll_output_shape(*spec, labels));
  Status st;
  dispatch_nll(scores, labels, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    T* s = scratch.data<T>();
    softmax_forward_kernel<true>(scores.data<T>(), logp.data<T>(), class_axis_layout(*spec), s, s + spec->D);
    st = nll_forward_kernel<T, I>(ctx.node, *spec, logp.data<T>(), labels.data<I>(), optional_data<T>(weight),
                                  loss.data<T>());
  });
  return st;
}

// d/dscores: the loss's gradient and the log_prob output's gradient both land on log_prob first, then go
// through the log-softmax backward (in place).
Status sce_backward(BackwardContext& ctx) {
  Tensor* dscores = ctx.grad_input(0);
  if (!dscores) return Status::ok();
  const Tensor& scores = *ctx.input(0);
  const Tensor& labels = *ctx.input(1);
  const Tensor* weight = ctx.input(2);
  auto spec = plan_nll(ctx.node, scores, labels, weight);
  if (!spec) return spec.error();
  Tensor& scratch = ctx.state.slot(1);
  scratch.resize(scores.dtype(), Shape{spec->D});
  const Tensor& logp = ctx.output(1) ? *ctx.output(1) : ctx.state.slot(0);  // as the forward left it
  const Tensor* dloss = ctx.grad_output(0);
  const Tensor* dlogp_out = ctx.grad_output(1);
  if (dlogp_out) {
    dscores->copy_from(*dlogp_out);
  } else {
    dscores->resize_zero(scores.dtype(), scores.shape());
  }
  Status st;
  dispatch_nll(scores, labels, [&](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    T* d = dscores->data<T>();
    if (dloss) {
      st = nll_backward_kernel<T, I>(ctx.node, *spec, labels.data<I>(), optional_data<T>(weight),
                                     dloss->data<T>(), d);
      if (!st) return;
    }
    softmax_backward_kernel<true>(logp.data<T>(), d, d, class_axis_layout(*spec), scratch.data<T>());
  });
  return st;
}

}  // namespace

namespace {

// How these ops fail (GRIST.md §2). A stable LogSoftmax fails only when the gap to the row maximum leaves the
// float range; the losses' mean divides by the total weight of the targets, which labels alone decide.
bool mean_reduction(const Graph&, const Node& n) { return n.attr_string("reduction", "mean") == "mean"; }
constexpr HazardSpec kLogSoftmaxHazards[] = {
    {0, Failure::LogSoftmaxSpread, Objective::NegSpread, "input spread beyond the float range",
     "bound the logits (e.g. clamp or normalise them) before the log-softmax"}};
constexpr HazardSpec kLossHazards[] = {
    {1, Failure::LossZeroDenominator, Objective::None, "total weight of the targets = 0",
     "make sure every batch has a target that is neither ignore_index nor weighted 0, or use reduction=sum",
     mean_reduction}};

}  // namespace

namespace {
// ---- interval transfers (grist scan) ----
// Softmax over a group: y_k = 1/(1 + Σ_{j≠k} exp(x_j − x_k)), smallest with x_k at its lower bound and the
// others at their upper ones; log-softmax is minus the log of the same denominator. Float32 errors: the
// kernel's x_j − max carries a relative error u, i.e. exp(spread·u) on y, plus u per term of the sum;
// results under FLT_MIN may flush to 0 (round_down_f32).
Interval softmax_of(const std::vector<Interval>& g, size_t k, bool log_form, double n) {
  double lse_lo = 0, lse_hi = 0;  // log(1 + Σ exp(...)) for the upper and lower bound of y_k
  auto lse = [&](bool worst) {
    double m = 0;
    for (size_t j = 0; j < g.size(); ++j)
      if (j != k) m = std::max(m, worst ? g[j].hi - g[k].lo : g[j].lo - g[k].hi);
    double s = std::exp(-m);
    for (size_t j = 0; j < g.size(); ++j)
      if (j != k) s += std::exp((worst ? g[j].hi - g[k].lo : g[j].lo - g[k].hi) - m);
    return m + std::log(s);
  };
  lse_hi = lse(true);
  lse_lo = lse(false);
  double spread = 0;
  for (const Interval& i : g) spread = std::max(spread, i.hi);
  double low = kInf;
  for (const Interval& i : g) low = std::min(low, i.lo);
  spread -= low;
  if (log_form) {
    const double err = 0x1.0p-20 * (spread + std::log(n) + 2);
    return widen_f32({-lse_hi - err, -lse_lo + err});
  }
  const double rel = 0x1.0p-22 * (n + 4 + spread);
  return {round_down_f32(std::exp(-lse_hi) * (1 - rel)), std::min(1.0, round_up_f32(std::exp(-lse_lo) * (1 + rel)))};
}

template <bool kLog>
Status softmax_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known) return bounds_unbounded(c);
  IntervalTensor& y = c.outputs[0];
  const int rank = x->shape.rank();
  if (!x->bounded() || rank == 0) {
    y = IntervalTensor::unbounded(x->dtype, x->shape);
    if (!kLog && x->bounded()) y.lo = {1}, y.hi = {1}, y.may_be_nan = false;
    else if (!kLog) y.lo = {0}, y.hi = {1};
    return Status::ok();
  }
  const int axis = normalize_axis(c.node.attr_int("axis", c.node.opset >= 13 ? -1 : 1), rank);
  GRIST_CHECK(axis >= 0, "{}: axis out of range", c.node.name);
  // Opset < 13 flattens to 2-D at axis; 13+ works along one axis.
  const int64_t outer = x->shape.numel(0, axis);
  const int64_t len = c.node.opset >= 13 ? x->shape[axis] : x->shape.numel(axis, rank);
  const int64_t inner = c.node.opset >= 13 ? x->shape.numel(axis + 1, rank) : 1;
  y = IntervalTensor::filled(x->dtype, x->shape, {});
  if (x->smashed() || len > 256) {
    std::vector<Interval> g(static_cast<size_t>(std::min<int64_t>(len, 2)), x->hull());
    if (len > 2) {
      // n equal groups: the (len − 1) others all sit at the same bound, so scale one representative.
      Interval h = x->hull();
      const double others = std::log(static_cast<double>(len - 1));
      g = {h, {h.lo + others, h.hi + others}};
    }
    Interval r = softmax_of(g, 0, kLog, static_cast<double>(len));
    y.lo = {r.lo};
    y.hi = {r.hi};
    return Status::ok();
  }
  y.lo.assign(static_cast<size_t>(x->numel()), 0);
  y.hi.assign(static_cast<size_t>(x->numel()), 0);
  std::vector<Interval> g(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      for (int64_t k = 0; k < len; ++k) g[static_cast<size_t>(k)] = x->at(at(k));
      for (int64_t k = 0; k < len; ++k) {
        Interval r = softmax_of(g, static_cast<size_t>(k), kLog, static_cast<double>(len));
        y.lo[static_cast<size_t>(at(k))] = r.lo;
        y.hi[static_cast<size_t>(at(k))] = r.hi;
      }
    }
  return Status::ok();
}

// NLL-style losses from the bounds of −log p[target] (`neg_logp`): −log p·w[target] per element; the mean
// divides the sum by the total weight, so with positive weights it is a weighted average of the −log p
// themselves (not of the products); zero, negative or subnormal weights, or all targets ignorable, leave it
// open.
Status weighted_loss_bounds(BoundsContext& c, Interval nx, bool nan) {
  const IntervalTensor* x = c.input(0);
  const IntervalTensor* t = c.input(1);
  const IntervalTensor* w = c.input(2);
  const std::string reduction = c.node.attr_string("reduction", "mean");
  Interval wh = w ? w->hull() : Interval{1, 1};
  nan |= w && w->may_be_nan;
  Interval term = interval_mul(nx, wh, nan);
  const bool ignorable = c.node.has_attr("ignore_index") && t->hull().contains(double(c.node.attr_int("ignore_index", 0)));
  if (ignorable || reduction != "mean") term = {std::min(term.lo, 0.0), std::max(term.hi, 0.0)};
  const double count = static_cast<double>(t->numel());
  Interval r = term;
  if (reduction == "sum") {
    r = {term.lo * count, term.hi * count};
  } else if (reduction == "mean" && (wh.lo < FLT_MIN || ignorable)) {
    // A total weight that may be 0, or subnormal weights whose sum a flush-to-zero mode makes 0.
    r = {};
    nan = true;
  } else if (reduction == "mean") {
    // A convex combination of the −log p, unless a product, the float32 sum of the products or the total
    // weight overflows (±inf, inf − inf = NaN, x/inf = 0); both sums' rounding errors count in the quotient.
    if (std::max(std::fabs(term.lo), std::fabs(term.hi)) * count <= FLT_MAX && wh.hi * count <= FLT_MAX) {
      r = nx;
    } else {
      r = {-kInf, kInf};
      nan = true;
    }
  }
  const int64_t terms = reduction == "mean" ? 2 * t->numel() + 4 : t->numel() + 2;
  double err = sum_error_f32(terms, std::max(std::fabs(r.lo), std::fabs(r.hi)));
  // The mean divides the products' underflow (FLT_MIN each at most) by a total weight ≥ count·w_lo.
  if (reduction == "mean" && wh.lo > 0) err += 2 * FLT_MIN / wh.lo * (1 + 1e-6);
  IntervalTensor& y = c.outputs[0];
  y = IntervalTensor::filled(x->dtype, reduction == "none" ? t->shape : Shape{}, widen_f32({r.lo - err, r.hi + err}));
  y.may_be_nan = nan || !std::isfinite(r.lo) || !std::isfinite(r.hi);
  return Status::ok();
}

// NegativeLogLikelihoodLoss: −log p is −x[target].
Status nll_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  const IntervalTensor* t = c.input(1);
  if (!x || !t || !t->shape_known || c.outputs.empty()) return bounds_unbounded(c);
  const Interval h = x->hull();
  return weighted_loss_bounds(c, {-h.hi, -h.lo}, x->may_be_nan);
}

// SoftmaxCrossEntropyLoss: −log p = logsumexp(x) − x[target] ∈ [0, spread(x) + log C] over C classes; the
// kernel's shifted log-sum-exp is off by γ_{C+4}·(1 + |result|) (as ReduceLogSumExp). Its optional
// log_prob output is the negation.
Status sce_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  const IntervalTensor* t = c.input(1);
  if (!x || !t || !t->shape_known || !x->shape_known || x->shape.rank() < 2 || c.outputs.empty())
    return bounds_unbounded(c);
  const Interval h = x->hull();
  const double classes = static_cast<double>(x->shape[1]);
  const double top = (h.hi - h.lo) + std::log(classes);
  const bool open = !h.finite() || x->may_be_nan;
  const double e = gamma_f32(x->shape[1] + 4) * (1 + top);
  const Interval nx = open ? Interval{-kInf, kInf} : widen_f32({-e, top + e});
  if (c.outputs.size() > 1) {
    c.outputs[1] = IntervalTensor::filled(x->dtype, x->shape, {-nx.hi, -nx.lo});
    c.outputs[1].may_be_nan = open;
  }
  return weighted_loss_bounds(c, nx, open);
}
}  // namespace

void register_softmax_and_loss_ops(OpRegistry& r) {
  r.add(OpDef{"Softmax", "", softmax_forward<false>, softmax_backward<false>, inputs_mask({0}), {}, softmax_bounds<false>});
  r.add(OpDef{"LogSoftmax", "", softmax_forward<true>, softmax_backward<true>, inputs_mask({0}), kLogSoftmaxHazards, softmax_bounds<true>});
  r.add(OpDef{"NegativeLogLikelihoodLoss", "", nll_forward, nll_backward, inputs_mask({0}), kLossHazards, nll_bounds});
  r.add(OpDef{"SoftmaxCrossEntropyLoss", "", sce_forward, sce_backward, inputs_mask({0}), kLossHazards, sce_bounds});
}

}  // namespace grist
