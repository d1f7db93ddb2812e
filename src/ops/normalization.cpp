// Normalization and regularisation layers: BatchNormalization (inference and training mode),
// InstanceNormalization, GroupNormalization, LayerNormalization and Dropout, forward and backward.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <span>
#include <string_view>

#include "ops/fused_tail.h"
#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "util/eigen.h"

namespace grist {
namespace {

// Statistics are accumulated in double whatever T is: a float32 running sum over a whole batch loses
// digits that the per-element float32 arithmetic then cannot recover.
using Acc = double;

Status require_float(const Node& node, const Tensor& t, std::string_view what) {
  if (!is_float(t.dtype()))
    return node_error(node, fmt::format("{} must be float32 or float64, got {}", what, dtype_name(t.dtype())));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// BatchNormalization. X is viewed as [batch, channels, inner]: with spatial=1 (the only form from opset
// 9 on) a channel is dimension 1 and inner the spatial size; spatial=0 (opset 7) normalises every
// (channel, position) separately.

struct BatchNormLayout {
  int64_t batch = 0, channels = 0, inner = 0;
  int64_t count() const { return batch * inner; }  // elements per channel statistic
};

// Training mode: opset 14+ says so with training_mode; before, asking for the statistics outputs does.
bool batch_norm_training(const Node& node) {
  if (node.opset >= 14) return node.attr_int("training_mode", 0) != 0;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue) return true;
  return false;
}

Status batch_norm_layout(const Node& node, std::span<const Tensor* const> in, BatchNormLayout& l) {
  for (size_t i = 0; i < 5; ++i)
    if (i >= in.size() || !in[i]) return node_error(node, fmt::format("required input {} is missing", i));
  const Tensor& x = *in[0];
  GRIST_TRY(require_float(node, x, "X"));
  if (x.rank() < 2) return node_error(node, fmt::format("X must have rank 2 or more, got {}", x.shape().str()));
  const bool spatial = node.attr_int("spatial", 1) != 0;
  l.batch = x.shape()[0];
  l.channels = spatial ? x.shape()[1] : x.shape().numel(1, x.rank());
  l.inner = spatial ? x.shape().numel(2, x.rank()) : 1;
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    if (in[i]->dtype() != x.dtype()) return node_error(node, fmt::format("{} must have the dtype of X", kNames[i]));
    if (in[i]->numel() != l.channels)
      return node_error(node,
                        fmt::format("{} must have {} elements, got {}", kNames[i], l.channels, in[i]->shape().str()));
  }
  return Status::ok();
}

template <class T>
struct BatchNormData {
  const T* x;
  const T *scale, *bias, *mean, *var;
};

template <class T>
BatchNormData<T> batch_norm_data(std::span<const Tensor* const> in) {
  return {in[0]->data<T>(), in[1]->data<T>(), in[2]->data<T>(), in[3]->data<T>(), in[4]->data<T>()};
}

// Calls f(flat_index) for every element of channel c.
template <class F>
void for_each_in_channel(const BatchNormLayout& l, int64_t c, F&& f) {
  for (int64_t n = 0; n < l.batch; ++n) {
    const int64_t base = (n * l.channels + c) * l.inner;
    for (int64_t i = 0; i < l.inner; ++i) f(base + i);
  }
}

// y = (x − mean[c])·(scale[c]·invstd[c]) + bias[c] over one channel, through Eigen's arrays so that it is
// vectorised (the same operations per element, in the same order).
template <class T>
void normalize_channel(const BatchNormLayout& l, int64_t c, const T* x, T mean, T a, T bias, T* y) {
  using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
  for (int64_t n = 0; n < l.batch; ++n) {
    const int64_t base = (n * l.channels + c) * l.inner;
    Eigen::Map<Row>(y + base, l.inner) = (Eigen::Map<const Row>(x + base, l.inner) - mean) * a + bias;
  }
}

// The same over channels [c0, c1) of every item, with I values a channel known to the compiler, which then
// vectorises across channels: a late layer's channels of 1 to 64 values (grids of 1×1 to 8×8) cost an Eigen
// expression's setup each above (mobilenet_v2's 960 channels at 2×2: 6 µs a node, 3 µs this way). Longer channels
// keep Eigen's loop, which measured 10 % faster than a plain one at 16×16 and 32×32.
template <class T, int I>
void normalize_fixed_width(const BatchNormLayout& l, int64_t c0, int64_t c1, const T* x, const T* mean, const T* a,
                           const T* bias, T* y) {
  for (int64_t n = 0; n < l.batch; ++n) {
    const int64_t item = n * l.channels * I;
    for (int64_t c = c0; c < c1; ++c)
      for (int i = 0; i < I; ++i) y[item + c * I + i] = (x[item + c * I + i] - mean[c]) * a[c] + bias[c];
  }
}

// normalize_channel for channels [c0, c1), with the factors a[c].
template <class T>
void normalize_channels(const BatchNormLayout& l, int64_t c0, int64_t c1, const T* x, const T* mean, const T* a,
                        const T* bias, T* y) {
  switch (l.inner) {
    case 1: return normalize_fixed_width<T, 1>(l, c0, c1, x, mean, a, bias, y);
    case 4: return normalize_fixed_width<T, 4>(l, c0, c1, x, mean, a, bias, y);
    case 16: return normalize_fixed_width<T, 16>(l, c0, c1, x, mean, a, bias, y);
    case 64: return normalize_fixed_width<T, 64>(l, c0, c1, x, mean, a, bias, y);
    default:
      for (int64_t c = c0; c < c1; ++c) normalize_channel(l, c, x, mean[c], a[c], bias[c], y);
  }
}

// a[c] = scale[c]·(1/√(var[c] + ε)) for every channel, in one loop the compiler vectorises: a packet's square roots
// and divisions round each lane as the scalar ones do (without errno, CMakeLists.txt), and channel after channel the
// root and the division were a latency chain each (mobilenet_v2's 960 channels of 4 values: 9.5 µs a node).
template <class T>
const T* channel_factors(const T* scale, const T* var, T eps, int64_t channels, Tensor& scratch) {
  scratch.resize(dtype_of<T>(), Shape{channels});
  T* a = scratch.data<T>();
  for (int64_t c = 0; c < channels; ++c) a[c] = scale[c] * (T(1) / std::sqrt(var[c] + eps));
  return a;
}

// Batch statistics (population variance, as ONNX and PyTorch normalise with) into mean/var.
template <class T>
void channel_statistics(const BatchNormLayout& l, int64_t c, const T* x, T& mean, T& var) {
  Acc sum = 0;
  for_each_in_channel(l, c, [&](int64_t i) { sum += x[i]; });
  const Acc mu = sum / static_cast<Acc>(l.count());
  Acc sq = 0;
  for_each_in_channel(l, c, [&](int64_t i) {
    const Acc d = x[i] - mu;
    sq += d * d;
  });
  mean = static_cast<T>(mu);
  var = static_cast<T>(sq / static_cast<Acc>(l.count()));
}

// Writes the optional statistics outputs: running_mean/var blended with momentum, and (opset < 14)
// the batch mean and variance themselves.
template <class T>
void write_batch_norm_statistics(const Node& node, std::span<Tensor* const> outputs, const Tensor& stats_shape,
                                 const T* in_mean, const T* in_var, const T* batch_mean, const T* batch_var,
                                 int64_t channels) {
  const T momentum = static_cast<T>(node.attr_float("momentum", 0.9));
  auto out = [&](size_t i) -> T* {
    if (i >= outputs.size() || !outputs[i]) return nullptr;
    outputs[i]->resize(stats_shape.dtype(), stats_shape.shape());
    return outputs[i]->data<T>();
  };
  T* running_mean = out(1);
  T* running_var = out(2);
  T* saved_mean = out(3);
  T* saved_var = out(4);
  for (int64_t c = 0; c < channels; ++c) {
    if (running_mean) running_mean[c] = in_mean[c] * momentum + batch_mean[c] * (T(1) - momentum);
    if (running_var) running_var[c] = in_var[c] * momentum + batch_var[c] * (T(1) - momentum);
    if (saved_mean) saved_mean[c] = batch_mean[c];
    if (saved_var) saved_var[c] = batch_var[c];
  }
}

Status batch_norm_forward(ForwardContext& ctx) {
  BatchNormLayout l;
  GRIST_TRY(batch_norm_layout(ctx.node, ctx.inputs, l));
  const Tensor& x = *ctx.input(0);
  const bool training = batch_norm_training(ctx.node);
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), x.shape());
  // The statistics the output was normalised with (batch or running), kept for the backward.
  Tensor& used_mean = ctx.state.slot(0);
  Tensor& used_var = ctx.state.slot(1);
  used_mean.resize(x.dtype(), ctx.input(3)->shape());
  used_var.resize(x.dtype(), ctx.input(4)->shape());
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const auto d = batch_norm_data<T>(ctx.inputs);
    const T eps = static_cast<T>(ctx.node.attr_float("epsilon", 1e-5));
    T* mean = used_mean.data<T>();
    T* var = used_var.data<T>();
    if (training) {
      for (int64_t c = 0; c < l.channels; ++c) channel_statistics(l, c, d.x, mean[c], var[c]);
    } else {
      std::copy_n(d.mean, l.channels, mean);
      std::copy_n(d.var, l.channels, var);
    }
    const T* a = channel_factors(d.scale, var, eps, l.channels, ctx.state.slot(2));
    normalize_channels(l, 0, l.channels, d.x, mean, a, d.bias, y.data<T>());
    if (training)
      write_batch_norm_statistics<T>(ctx.node, ctx.outputs, used_mean, d.mean, d.var, mean, var, l.channels);
  });
  return Status::ok();
}

// With x̂ = (x − μ)·invstd and g = dY: dB = Σg, dscale = Σ g·x̂, and
//   inference: dX = scale·invstd·g (μ, invstd constants)
//   training:  dX = scale·invstd·(g − Σg/m − x̂·Σ(g·x̂)/m) + gμ/m + gσ²·2(x − μ)/m,
// where gμ, gσ² collect the gradients reaching the mean and variance outputs.
template <class T>
void batch_norm_backward_typed(BackwardContext& ctx, const BatchNormLayout& l, bool training) {
  const auto d = batch_norm_data<T>(ctx.inputs);
  const T* dy = ctx.grad_output(0) ? ctx.grad_output(0)->data<T>() : nullptr;
  const T* mean = ctx.state.slot(0).data<T>();
  const T* var = ctx.state.slot(1).data<T>();
  const T eps = static_cast<T>(ctx.node.attr_float("epsilon", 1e-5));
  const T momentum = static_cast<T>(ctx.node.attr_float("momentum", 0.9));
  auto stat_grad = [&](size_t i, int64_t c) -> T {
    const Tensor* g = ctx.grad_output(i);
    return g ? g->data<T>()[c] : T(0);
  };
  T* dx = ctx.grad_input(0) ? ctx.grad_input(0)->data<T>() : nullptr;
  T* dscale = ctx.grad_input(1) ? ctx.grad_input(1)->data<T>() : nullptr;
  T* dbias = ctx.grad_input(2) ? ctx.grad_input(2)->data<T>() : nullptr;
  const T m = static_cast<T>(l.count());
  for (int64_t c = 0; c < l.channels; ++c) {
    const T invstd = T(1) / std::sqrt(var[c] + eps);
    const T mu = mean[c];
    Acc sum_g = 0, sum_g_xhat = 0;
    if (dy) {
      for_each_in_channel(l, c, [&](int64_t i) {
        sum_g += dy[i];
        sum_g_xhat += static_cast<Acc>(dy[i]) * ((d.x[i] - mu) * invstd);
      });
    }
    if (dscale) dscale[c] = static_cast<T>(sum_g_xhat);
    if (dbias) dbias[c] = static_cast<T>(sum_g);
    if (!dx) continue;
    const T a = d.scale[c] * invstd;
    if (!training) {
      for_each_in_channel(l, c, [&](int64_t i) { dx[i] = dy ? dy[i] * a : T(0); });
      continue;
    }
    const T mean_g = static_cast<T>(sum_g) / m;
    const T mean_g_xhat = static_cast<T>(sum_g_xhat) / m;
    const T g_mean = (T(1) - momentum) * stat_grad(1, c) + stat_grad(3, c);
    const T g_var = (T(1) - momentum) * stat_grad(2, c) + stat_grad(4, c);
    for_each_in_channel(l, c, [&](int64_t i) {
      const T centered = d.x[i] - mu;
      const T g = dy ? dy[i] : T(0);
      dx[i] = a * (g - mean_g - centered * invstd * mean_g_xhat) + g_mean / m + g_var * T(2) * centered / m;
    });
  }
}

Status batch_norm_backward(BackwardContext& ctx) {
  BatchNormLayout l;
  GRIST_TRY(batch_norm_layout(ctx.node, ctx.inputs, l));
  for (int i = 0; i < 3; ++i)
    if (Tensor* g = ctx.grad_input(i)) g->resize(ctx.input(i)->dtype(), ctx.input(i)->shape());
  const bool training = batch_norm_training(ctx.node);
  dispatch_float(ctx.input(0)->dtype(), [&](auto tag) { batch_norm_backward_typed<decltype(tag)>(ctx, l, training); });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// GroupNormalization (opsets 18 and 21) and InstanceNormalization: the channels of each sample in groups of C/G
// adjacent ones (InstanceNormalization: one each), each group normalised over its (C/G)·spatial values with
// BatchNormalization's training-mode arithmetic, then scaled and shifted per channel (InstanceNormalization,
// GroupNormalization-21) or per group (GroupNormalization-18, which ONNX deprecated for that). A group is
// contiguous in memory: BatchNormLayout {1, N·G, (C/G)·S} makes each group one "channel" of the statistics,
// {1, N·C, S} each channel one of the scale.
struct GroupNormLayout {
  BatchNormLayout groups, channels;
  int64_t per_group = 0;     // channels in a group
  int64_t num_channels = 0;  // C
  bool per_channel = false;  // scale and bias of C elements; else of G
  // The scale and bias index of channel row r of `channels` (n·C + c).
  int64_t param(int64_t r) const {
    const int64_t c = r % num_channels;
    return per_channel ? c : c / per_group;
  }
};

// `groups` of X's channels (0: one per channel), scale and bias per channel or per group.
Status grouped_layout(const Node& node, std::span<const Tensor* const> in, int64_t groups, bool per_channel,
                      const char* params_are, GroupNormLayout& l) {
  for (size_t i = 0; i < 3; ++i)
    if (i >= in.size() || !in[i]) return node_error(node, fmt::format("required input {} is missing", i));
  const Tensor& x = *in[0];
  GRIST_TRY(require_float(node, x, "input"));
  if (x.rank() < 2) return node_error(node, fmt::format("input must have rank 2 or more, got {}", x.shape().str()));
  const int64_t c = x.shape()[1];
  if (groups == 0) groups = c;
  if (groups <= 0 || c % groups != 0)
    return node_error(node, fmt::format("num_groups {} does not divide the {} channels", groups, c));
  l.per_channel = per_channel;
  l.num_channels = c;
  l.per_group = c / groups;
  const int64_t n = x.shape()[0], spatial = x.shape().numel(2, x.rank());
  l.groups = {1, n * groups, l.per_group * spatial};
  l.channels = {1, n * c, spatial};
  const int64_t params = per_channel ? c : groups;
  for (size_t i = 1; i < 3; ++i)
    if (in[i]->dtype() != x.dtype() || in[i]->numel() != params)
      return node_error(node, fmt::format("{} must have the input's dtype and {} elements ({}), got {}",
                                          i == 1 ? "scale" : "bias", params, params_are, in[i]->shape().str()));
  return Status::ok();
}

// stash_type (LayerNormalization, GroupNormalization-21): the type the statistics are computed in. grist computes
// them in the input's type widened to float32 at least, which is ONNX's default (1, FLOAT) for float32 and 16-bit
// inputs; statistics kept in another type would round, and overflow, differently, so it is refused by name.
Status require_float32_stash(const Node& node) {
  const int64_t stash = node.attr_int("stash_type", 1);
  if (stash == 1) return Status::ok();
  return node_error(node, fmt::format("stash_type {} is not supported: grist computes the mean and variance in "
                                      "float32 (stash_type 1)", stash));
}

Status instance_norm_layout(const Node& node, std::span<const Tensor* const> in, GroupNormLayout& l) {
  return grouped_layout(node, in, 0, true, "one per channel", l);
}

Status group_norm_layout(const Node& node, std::span<const Tensor* const> in, GroupNormLayout& l) {
  const bool per_channel = node.opset >= 21;
  const int64_t groups = node.attr_int("num_groups", 0);
  if (groups <= 0) return node_error(node, fmt::format("num_groups must be positive, not {}", groups));
  GRIST_TRY(require_float32_stash(node));
  return grouped_layout(node, in, groups, per_channel,
                        per_channel ? "one per channel at opset 21" : "one per group at opset 18", l);
}

using GroupNormLayoutFn = Status (*)(const Node&, std::span<const Tensor* const>, GroupNormLayout&);

// State slots 0 and 1: the mean and variance of every (sample, group), for the backward.
template <GroupNormLayoutFn Layout>
Status group_norm_forward(ForwardContext& ctx) {
  GroupNormLayout l;
  GRIST_TRY(Layout(ctx.node, ctx.inputs, l));
  const Tensor& x = *ctx.input(0);
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), x.shape());
  Tensor& mean_t = ctx.state.slot(0);
  Tensor& var_t = ctx.state.slot(1);
  mean_t.resize(x.dtype(), Shape{l.groups.channels});
  var_t.resize(x.dtype(), Shape{l.groups.channels});
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T eps = static_cast<T>(ctx.node.attr_float("epsilon", 1e-5));
    const T* scale = ctx.input(1)->data<T>();
    const T* bias = ctx.input(2)->data<T>();
    T* mean = mean_t.data<T>();
    T* var = var_t.data<T>();
    for (int64_t g = 0; g < l.groups.channels; ++g) channel_statistics(l.groups, g, x.data<T>(), mean[g], var[g]);
    for (int64_t r = 0; r < l.channels.channels; ++r) {
      const int64_t g = r / l.per_group, k = l.param(r);
      const T a = scale[k] * (T(1) / std::sqrt(var[g] + eps));
      normalize_channel(l.channels, r, x.data<T>(), mean[g], a, bias[k], y.data<T>());
    }
  });
  return Status::ok();
}

// Per group of m elements, with x̂ = (x − μ)·invstd and h = scale·dY (the scale of each element's channel or
// group): dX = invstd·(h − Σh/m − x̂·Σ(h·x̂)/m); dscale and dB sum dY·x̂ and dY over their elements.
template <class T>
void group_norm_backward_typed(BackwardContext& ctx, const GroupNormLayout& l) {
  const T* x = ctx.input(0)->data<T>();
  const T* scale = ctx.input(1)->data<T>();
  const T* dy = ctx.grad_output(0) ? ctx.grad_output(0)->data<T>() : nullptr;
  const T* mean = ctx.state.slot(0).data<T>();
  const T* var = ctx.state.slot(1).data<T>();
  const T eps = static_cast<T>(ctx.node.attr_float("epsilon", 1e-5));
  T* dx = ctx.grad_input(0) ? ctx.grad_input(0)->data<T>() : nullptr;
  T* dscale = ctx.grad_input(1) ? ctx.grad_input(1)->data<T>() : nullptr;
  T* dbias = ctx.grad_input(2) ? ctx.grad_input(2)->data<T>() : nullptr;
  if (dscale) std::fill_n(dscale, ctx.input(1)->numel(), T(0));
  if (dbias) std::fill_n(dbias, ctx.input(2)->numel(), T(0));
  const T m = static_cast<T>(l.groups.inner);
  const int64_t spatial = l.channels.inner;
  for (int64_t g = 0; g < l.groups.channels; ++g) {
    const T invstd = T(1) / std::sqrt(var[g] + eps);
    const T mu = mean[g];
    Acc sum_h = 0, sum_h_xhat = 0;
    for (int64_t r = g * l.per_group; r < (g + 1) * l.per_group; ++r) {
      const int64_t k = l.param(r);
      Acc sum_dy = 0, sum_dy_xhat = 0;
      if (dy)
        for (int64_t i = r * spatial; i < (r + 1) * spatial; ++i) {
          sum_dy += dy[i];
          sum_dy_xhat += static_cast<Acc>(dy[i]) * ((x[i] - mu) * invstd);
        }
      if (dscale) dscale[k] += static_cast<T>(sum_dy_xhat);
      if (dbias) dbias[k] += static_cast<T>(sum_dy);
      sum_h += static_cast<Acc>(scale[k]) * sum_dy;
      sum_h_xhat += static_cast<Acc>(scale[k]) * sum_dy_xhat;
    }
    if (!dx) continue;
    const T mean_h = static_cast<T>(sum_h) / m, mean_h_xhat = static_cast<T>(sum_h_xhat) / m;
    for (int64_t r = g * l.per_group; r < (g + 1) * l.per_group; ++r) {
      const T s = scale[l.param(r)];
      for (int64_t i = r * spatial; i < (r + 1) * spatial; ++i)
        dx[i] = invstd * (s * (dy ? dy[i] : T(0)) - mean_h - (x[i] - mu) * invstd * mean_h_xhat);
    }
  }
}

template <GroupNormLayoutFn Layout>
Status group_norm_backward(BackwardContext& ctx) {
  GroupNormLayout l;
  GRIST_TRY(Layout(ctx.node, ctx.inputs, l));
  for (int i = 0; i < 3; ++i)
    if (Tensor* g = ctx.grad_input(i)) g->resize(ctx.input(i)->dtype(), ctx.input(i)->shape());
  dispatch_float(ctx.input(0)->dtype(), [&](auto tag) { group_norm_backward_typed<decltype(tag)>(ctx, l); });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// LayerNormalization (opset 17): X viewed as [rows, cols] with cols = X.shape[axis:]; every row is
// normalised, then scaled and shifted by Scale and B broadcast to X.shape[axis:].

struct LayerNormLayout {
  int axis = 0;
  int64_t rows = 0, cols = 0;
  Shape normalized;  // X.shape[axis:]
  Shape stats;       // X.shape[:axis] + ones: the shape of Mean and InvStdDev
};

Status layer_norm_layout(const Node& node, std::span<const Tensor* const> in, LayerNormLayout& l) {
  for (size_t i = 0; i < 2; ++i)
    if (i >= in.size() || !in[i]) return node_error(node, fmt::format("required input {} is missing", i));
  const Tensor& x = *in[0];
  GRIST_TRY(require_float(node, x, "X"));
  GRIST_TRY(require_float32_stash(node));
  l.axis = normalize_axis(node.attr_int("axis", -1), x.rank());
  if (l.axis < 0) return node_error(node, fmt::format("axis is out of range for X {}", x.shape().str()));
  l.rows = x.shape().numel(0, l.axis);
  l.cols = x.shape().numel(l.axis, x.rank());
  l.normalized.assign(x.shape().begin() + l.axis, x.shape().end());
  l.stats = x.shape();
  for (int d = l.axis; d < x.rank(); ++d) l.stats[d] = 1;
  for (size_t i = 1; i < 3 && i < in.size(); ++i) {
    if (!in[i]) continue;
    Shape r;
    if (in[i]->dtype() != x.dtype() || !broadcast_shapes(in[i]->shape(), l.normalized, r) || r != l.normalized)
      return node_error(node, fmt::format("{} {} must have X's dtype and broadcast to {}", i == 1 ? "Scale" : "B",
                                          in[i]->shape().str(), l.normalized.str()));
  }
  return Status::ok();
}

// `param` (Scale or B) as a [cols] vector: the tensor itself, or its broadcast copy in `scratch`.
template <class T>
const T* expanded_param(const Tensor& param, const Shape& normalized, Tensor& scratch) {
  if (param.shape() == normalized) return param.data<T>();
  scratch.resize(param.dtype(), normalized);
  const T* src = param.data<T>();
  T* dst = scratch.data<T>();
  std::array<std::array<int64_t, Shape::kMaxRank>, 1> st{broadcast_strides(param.shape(), normalized)};
  broadcast_loop<1>(normalized, st, [&](int64_t i, const std::array<int64_t, 1>& j) { dst[i] = src[j[0]]; });
  return dst;
}

Status layer_norm_forward(ForwardContext& ctx) {
  LayerNormLayout l;
  GRIST_TRY(layer_norm_layout(ctx.node, ctx.inputs, l));
  const Tensor& x = *ctx.input(0);
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), x.shape());
  Tensor& mean_t = ctx.state.slot(0);
  Tensor& invstd_t = ctx.state.slot(1);
  mean_t.resize(x.dtype(), l.stats);
  invstd_t.resize(x.dtype(), l.stats);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T eps = static_cast<T>(ctx.node.attr_float("epsilon", 1e-5));
    const T* scale = expanded_param<T>(*ctx.input(1), l.normalized, ctx.state.slot(2));
    const T* bias = ctx.input(2) ? expanded_param<T>(*ctx.input(2), l.normalized, ctx.state.slot(3)) : nullptr;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t r = 0; r < l.rows; ++r) {
      const T* row = px + r * l.cols;
      Acc sum = 0, sq = 0;
      for (int64_t j = 0; j < l.cols; ++j) sum += row[j];
      const Acc mu = sum / static_cast<Acc>(l.cols);
      for (int64_t j = 0; j < l.cols; ++j) sq += (row[j] - mu) * (row[j] - mu);
      const T mean = static_cast<T>(mu);
      const T invstd = T(1) / std::sqrt(static_cast<T>(sq / static_cast<Acc>(l.cols)) + eps);
      mean_t.data<T>()[r] = mean;
      invstd_t.data<T>()[r] = invstd;
      T* out = py + r * l.cols;
      for (int64_t j = 0; j < l.cols; ++j) out[j] = (row[j] - mean) * invstd * scale[j] + (bias ? bias[j] : T(0));
    }
  });
  if (Tensor* m = ctx.output(1)) m->copy_from(mean_t);
  if (Tensor* s = ctx.output(2)) s->copy_from(invstd_t);
  return Status::ok();
}

// With x̂ = (x − μ)·invstd, ĝ = dY·scale, per row of n = cols elements:
//   dX = invstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) + dMean/n − dInvStd·invstd³·(x − μ)/n,
//   dScale = Σ_rows dY·x̂, dB = Σ_rows dY (then summed down to the parameters' own shapes).
template <class T>
void layer_norm_backward_typed(BackwardContext& ctx, const LayerNormLayout& l) {
  const T* px = ctx.input(0)->data<T>();
  const T* dy = ctx.grad_output(0) ? ctx.grad_output(0)->data<T>() : nullptr;
  const T* dmean = ctx.grad_output(1) ? ctx.grad_output(1)->data<T>() : nullptr;
  const T* dinvstd = ctx.grad_output(2) ? ctx.grad_output(2)->data<T>() : nullptr;
  const T* mean = ctx.state.slot(0).data<T>();
  const T* invstd = ctx.state.slot(1).data<T>();
  const T* scale = expanded_param<T>(*ctx.input(1), l.normalized, ctx.state.slot(2));
  Tensor* dx_t = ctx.grad_input(0);
  Tensor* dscale_t = ctx.grad_input(1);
  Tensor* dbias_t = ctx.input(2) ? ctx.grad_input(2) : nullptr;
  // Parameter gradients accumulate at the normalized shape, then reduce to the parameter's shape.
  Tensor& dscale_full = ctx.state.slot(4);
  Tensor& dbias_full = ctx.state.slot(5);
  dscale_full.resize_zero(ctx.input(0)->dtype(), l.normalized);
  dbias_full.resize_zero(ctx.input(0)->dtype(), l.normalized);
  T* dscale = dscale_full.data<T>();
  T* dbias = dbias_full.data<T>();
  const T n = static_cast<T>(l.cols);
  for (int64_t r = 0; r < l.rows; ++r) {
    const T* row = px + r * l.cols;
    const T* g = dy ? dy + r * l.cols : nullptr;
    const T mu = mean[r], is = invstd[r];
    Acc sum_gh = 0, sum_gh_xhat = 0;
    for (int64_t j = 0; j < l.cols; ++j) {
      const T gj = g ? g[j] : T(0);
      const T xhat = (row[j] - mu) * is;
      const T gh = gj * scale[j];
      sum_gh += gh;
      sum_gh_xhat += static_cast<Acc>(gh) * xhat;
      dscale[j] += gj * xhat;
      dbias[j] += gj;
    }
    if (!dx_t) continue;
    T* dx = dx_t->data<T>() + r * l.cols;
    const T mean_gh = static_cast<T>(sum_gh) / n;
    const T mean_gh_xhat = static_cast<T>(sum_gh_xhat) / n;
    const T via_mean = dmean ? dmean[r] / n : T(0);
    const T via_invstd = dinvstd ? -dinvstd[r] * is * is * is / n : T(0);
    for (int64_t j = 0; j < l.cols; ++j) {
      const T centered = row[j] - mu;
      const T gh = (g ? g[j] : T(0)) * scale[j];
      dx[j] = is * (gh - mean_gh - centered * is * mean_gh_xhat) + via_mean + via_invstd * centered;
    }
  }
  if (dscale_t) sum_to_shape(dscale_full, ctx.input(1)->shape(), *dscale_t);
  if (dbias_t) sum_to_shape(dbias_full, ctx.input(2)->shape(), *dbias_t);
}

Status layer_norm_backward(BackwardContext& ctx) {
  LayerNormLayout l;
  GRIST_TRY(layer_norm_layout(ctx.node, ctx.inputs, l));
  if (Tensor* dx = ctx.grad_input(0)) dx->resize(ctx.input(0)->dtype(), ctx.input(0)->shape());
  dispatch_float(ctx.input(0)->dtype(), [&](auto tag) { layer_norm_backward_typed<decltype(tag)>(ctx, l); });
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------------
// Dropout. Opset < 12: ratio attribute, inference unless an old is_test=0 says otherwise; opset 12+:
// optional ratio and training_mode inputs. ForwardContext::dropout_training overrides either. Training
// keeps an element when a uniform draw is below 1 − ratio and scales it by 1/(1 − ratio); y = x·multiplier
// (so a dropped inf gives NaN, as PyTorch's x·mask does).

struct DropoutMode {
  bool training = false;
  double ratio = 0.5;
};

Status dropout_mode(const ForwardContext& ctx, DropoutMode& mode) {
  const Node& node = ctx.node;
  if (node.opset < 12) {
    mode.ratio = node.attr_float("ratio", 0.5);
    mode.training = node.has_attr("is_test") && node.attr_int("is_test", 1) == 0;
  } else {
    if (const Tensor* r = ctx.input(1)) {
      if (!is_float(r->dtype()) || r->numel() != 1) return node_error(node, "ratio must be a float scalar");
      mode.ratio = r->get_as_double(0);
    }
    if (const Tensor* t = ctx.input(2)) {
      if (t->numel() != 1) return node_error(node, "training_mode must be a scalar");
      mode.training = t->get_as_double(0) != 0;
    }
  }
  if (ctx.dropout_training) mode.training = *ctx.dropout_training;
  if (!(mode.ratio >= 0 && mode.ratio <= 1))
    return node_error(node, fmt::format("ratio {} is not in [0, 1]", mode.ratio));
  return Status::ok();
}

// The factor kept elements are scaled by (inf for ratio 1, where nothing is kept).
template <class T>
T dropout_scale(double ratio) {
  return T(1) / (T(1) - static_cast<T>(ratio));
}

// Sets every element of `t` to one (true for bool).
void fill_ones(Tensor& t) {
  dispatch_all(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(t.data<T>(), t.numel(), static_cast<T>(1));
  });
}

// State slots: 0 holds {training, ratio} as float64 for the backward; 1 the keep mask of a training pass
// when the node's own (bool) mask output does not hold it.
Status dropout_forward(ForwardContext& ctx) {
  GRIST_TRY(require_input(ctx, 0));
  const Tensor& x = *ctx.input(0);
  GRIST_TRY(require_float(ctx.node, x, "data"));
  DropoutMode mode;
  GRIST_TRY(dropout_mode(ctx, mode));
  Tensor& saved = ctx.state.slot(0);
  saved.resize(DType::Float64, Shape{2});
  saved.data<double>()[0] = mode.training ? 1.0 : 0.0;
  saved.data<double>()[1] = mode.ratio;
  Tensor& y = *ctx.output(0);
  Tensor* mask_out = ctx.output(1);
  // Opset < 10 typed the mask like the data; since then it is bool.
  const DType mask_type = ctx.node.opset < 10 ? x.dtype() : DType::Bool;
  if (!mode.training) {
    y.copy_from(x);
    if (mask_out) {
      mask_out->resize(mask_type, x.shape());
      fill_ones(*mask_out);
    }
    return Status::ok();
  }
  y.resize(x.dtype(), x.shape());
  Tensor& keep = (mask_out && mask_type == DType::Bool) ? *mask_out : ctx.state.slot(1);
  keep.resize(DType::Bool, x.shape());
  bool* k = keep.data<bool>();
  const double keep_probability = 1.0 - mode.ratio;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    // x · (0 or scale), the factor looked up rather than branched on: the draw is a coin toss at ratio 0.5, and
    // a branch on it a misprediction every other element (a third of the U-Net's dropout, zoo 17). Not
    // x · (scale · kept): at ratio 1 the scale is inf, and inf · 0 would make every output NaN.
    const T factor[2] = {T(0), dropout_scale<T>(mode.ratio)};
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool kept = ctx.rng.uniform() < keep_probability;
      k[i] = kept;
      py[i] = px[i] * factor[kept];
    }
  });
  if (mask_out && mask_type != DType::Bool) cast_tensor(keep, mask_type, *mask_out);
  return Status::ok();
}

Status dropout_backward(BackwardContext& ctx) {
  Tensor* dx = ctx.grad_input(0);
  if (!dx) return Status::ok();
  const Tensor& x = *ctx.input(0);
  dx->resize(x.dtype(), x.shape());
  const Tensor* dy = ctx.grad_output(0);
  const Tensor& saved = ctx.state.slot(0);
  if (saved.numel() != 2) return node_error(ctx.node, "backward without a matching forward");
  const bool training = saved.data<double>()[0] != 0;
  const Tensor* mask_out = ctx.output(1);
  const Tensor& keep = (mask_out && mask_out->dtype() == DType::Bool) ? *mask_out : ctx.state.slot(1);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = dy->data<T>();
    T* out = dx->data<T>();
    if (!training) {
      std::copy(g, g + dy->numel(), out);
      return;
    }
    const T factor[2] = {T(0), dropout_scale<T>(saved.data<double>()[1])};  // as the forward: no branch
    const bool* k = keep.data<bool>();
    for (int64_t i = 0; i < dy->numel(); ++i) out[i] = g[i] * factor[k[i]];
  });
  return Status::ok();
}

}  // namespace

// ops/fused_tail.h.
bool batch_norm_clampable(const Node& node, std::span<const Tensor* const> inputs) {
  if (!node.domain.empty() || node.op_type != "BatchNormalization" || batch_norm_training(node)) return false;
  for (size_t o = 1; o < node.outputs.size(); ++o)
    if (node.outputs[o] != kNoValue) return false;
  return !inputs.empty() && inputs[0] != nullptr && inputs[0]->dtype() == DType::Float32;
}

// batch_norm_forward's inference arithmetic (the same normalize_channels), then clip_forward's clamp on the rows
// just written. No statistics are kept: a forward-only run has no backward to read them.
Status batch_norm_clamped(ForwardContext& ctx, Clamp clamp, bool& finite) {
  BatchNormLayout l;
  GRIST_TRY(batch_norm_layout(ctx.node, ctx.inputs, l));
  const Tensor& x = *ctx.input(0);
  Tensor& y = *ctx.output(0);
  y.resize(x.dtype(), x.shape());
  const auto d = batch_norm_data<float>(ctx.inputs);
  const float eps = static_cast<float>(ctx.node.attr_float("epsilon", 1e-5));
  // Batch 1 clamps runs of whole channels (contiguous there) of about kRun values: a late layer's channel is a few
  // values, far below the clamp's per-call cost, an early one's the run alone, still in cache. Batches clamp the
  // whole tensor after.
  constexpr int64_t kRun = 4096;
  float* out = y.data<float>();
  const float* a = channel_factors(d.scale, d.var, eps, l.channels, ctx.state.slot(2));
  if (l.batch != 1) {
    normalize_channels(l, 0, l.channels, d.x, d.mean, a, d.bias, out);
    finite = clamp_row(out, y.numel(), clamp);
    return Status::ok();
  }
  finite = true;
  const int64_t run = std::max<int64_t>(1, (kRun + l.inner - 1) / std::max<int64_t>(1, l.inner));  // channels
  for (int64_t c0 = 0; c0 < l.channels; c0 += run) {
    const int64_t c1 = std::min(l.channels, c0 + run);
    normalize_channels(l, c0, c1, d.x, d.mean, a, d.bias, out);
    finite &= clamp_row(out + c0 * l.inner, (c1 - c0) * l.inner, clamp);
  }
  return Status::ok();
}

namespace {
// Interval transfer (grist scan). Training may be on whatever the node says (the hunt trains with it), so
// y = x·m/(1 − ratio), m ∈ {0, 1}: y lies between 0 and x/(1 − ratio_hi). An unknown ratio input has the
// range the scan assumed for it (RANUM's [0.1, 0.9] by default).
Status dropout_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  if (!x || !x->shape_known) return bounds_unbounded(c);
  double ratio_hi = c.node.opset < 12 ? c.node.attr_float("ratio", 0.5) : 0.5;
  if (const IntervalTensor* r = c.input(1)) ratio_hi = r->hull().hi;
  // The kernel's scale, 1/(1 − ratio) in float32, rounded up: a ratio within 2⁻²⁵ of 1 makes it inf.
  const float scale_f = 1.0f / (1.0f - static_cast<float>(std::min(ratio_hi, 1.0)));
  const double scale = std::isfinite(scale_f) ? static_cast<double>(std::nextafter(scale_f, INFINITY)) : kInf;
  IntervalTensor& y = c.outputs[0];
  y = *x;
  y.exact.reset();
  for (auto& v : y.lo) v = round_down_f32(std::min(0.0, v * scale));
  for (auto& v : y.hi) v = round_up_f32(std::max(0.0, v * scale));
  // A dropped infinite element is inf·0 = NaN in training, as in PyTorch's x·mask/(1 − p); so is a zero
  // element scaled by an infinite scale.
  y.may_be_nan = x->may_be_nan || !x->hull().finite() || !std::isfinite(scale);
  if (c.outputs.size() > 1) c.outputs[1] = IntervalTensor::filled(DType::Bool, x->shape, {0, 1});
  return Status::ok();
}
}  // namespace

namespace {
// Normalised with the statistics of the values themselves (batch statistics, layer norm), |x − μ|·invstd
// is at most √n over n values, and at most the values' spread over √eps. Float32 moves μ by ~u·max|x|:
// both bounds grow by that over √eps, and by a relative 1e-5 for the rest of the rounding.
double normalized_bound(Interval x, int64_t n, float eps) {
  const double drift = 4 * 0x1.0p-24 * std::max(std::fabs(x.lo), std::fabs(x.hi)) / std::sqrt(double(eps));
  const double by_count = std::sqrt(static_cast<double>(n)) + drift;
  const double by_spread = (x.hi - x.lo) / std::sqrt(double(eps)) + drift;
  return std::min(by_count, by_spread) * (1 + 1e-5);
}

// scale·(x − μ)·invstd + B where μ and invstd are the statistics of `count` values within `x`: the
// normalised value bounded by normalized_bound, unless scale·invstd may overflow (invstd reaches 1/√eps,
// and the kernel forms a = scale·invstd first: inf·0) or x − μ may (the variance is then inf: inf·0).
Interval normalized_affine(Interval x, int64_t count, float eps, Interval scale, Interval bias, bool& nan) {
  const double b = x.finite() && (x.hi - x.lo) * (1 + 0x1.0p-23) <= FLT_MAX ? normalized_bound(x, count, eps) : kInf;
  const double scale_mag = std::max(std::fabs(scale.lo), std::fabs(scale.hi));
  if (!std::isfinite(b) || !(scale_mag / std::sqrt(double(eps)) * (1 + 1e-5) <= FLT_MAX)) {
    nan = true;
    return {-kInf, kInf};
  }
  return interval_add(interval_mul({-b, b}, scale, nan), bias, nan);
}

// The output of a normalisation over dimension 1 of x, one interval per channel from `channel`(ch, nan).
template <class F>
Status per_channel_bounds(BoundsContext& c, const IntervalTensor& x, bool nan, F&& channel) {
  const int64_t channels = x.shape[1];
  std::vector<double> lo(static_cast<size_t>(channels)), hi(lo.size());
  for (int64_t ch = 0; ch < channels; ++ch) {
    const Interval y = channel(ch, nan);
    lo[static_cast<size_t>(ch)] = y.lo;
    hi[static_cast<size_t>(ch)] = y.hi;
  }
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(x.dtype, x.shape, {});
  if (channels == 0 || x.numel() == 0) return Status::ok();
  out.lo = std::move(lo);
  out.hi = std::move(hi);
  Shape grid{1, channels};
  for (int d = 2; d < x.shape.rank(); ++d) grid.push_back(1);
  out.set_grid(grid);
  out.may_be_nan = nan;
  return Status::ok();
}

// BatchNormalization, per channel: inference evaluates the kernel's own steps in interval arithmetic
// (a = scale·(1/√(var + eps)), y = (x − mean)·a + B, each rounded outward); training bounds the normalised
// value (normalized_affine). The output keeps one interval per channel.
Status batch_norm_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.partitioned(0);
  if (!x || !x->shape_known || x->shape.rank() < 2 || c.node.attr_int("spatial", 1) == 0 || c.outputs.empty())
    return bounds_unbounded(c);
  const int64_t channels = x->shape[1];
  for (size_t i = 1; i < 5; ++i)
    if (!c.input(i) || !c.input(i)->shape_known || c.input(i)->numel() != channels) return bounds_unbounded(c);
  const bool training = batch_norm_training(c.node);
  const float eps = static_cast<float>(c.node.attr_float("epsilon", 1e-5));
  const std::vector<Interval> xc = hulls_along(*x, 1);
  const int64_t count = channels > 0 ? x->numel() / channels : 0;
  bool nan = x->may_be_nan;
  for (size_t i = 1; i < 5; ++i) nan |= c.input(i)->may_be_nan;
  return per_channel_bounds(c, *x, nan, [&](int64_t ch, bool& may_be_nan) {
    const Interval scale = c.input(1)->at(ch), bias = c.input(2)->at(ch);
    const Interval xi = xc[static_cast<size_t>(ch)];
    if (training) return normalized_affine(xi, count, eps, scale, bias, may_be_nan);
    const Interval var = c.input(4)->at(ch);
    const Interval s = interval_add(var, {eps, eps}, may_be_nan);
    if (s.lo < 0) may_be_nan = true;  // sqrt of a negative variance
    const Interval root = widen_f32({std::sqrt(std::max(s.lo, 0.0)), std::sqrt(std::max(s.hi, 0.0))});
    const Interval a = interval_mul(scale, interval_div({1, 1}, root, may_be_nan), may_be_nan);
    const Interval d = interval_sub(xi, c.input(3)->at(ch), may_be_nan);
    return interval_add(interval_mul(d, a, may_be_nan), bias, may_be_nan);
  });
}

// GroupNormalization and InstanceNormalization: every (sample, group) normalised over values that lie in the hull
// of its channels over all samples (normalized_affine over the group's size); one interval per channel, with its
// own scale and bias or its group's. `groups` 0: one per channel.
Status grouped_norm_bounds(BoundsContext& c, int64_t groups, bool per_channel) {
  const IntervalTensor* x = c.partitioned(0);
  if (!x || !x->shape_known || x->shape.rank() < 2 || c.outputs.empty()) return bounds_unbounded(c);
  const int64_t channels = x->shape[1];
  if (groups == 0) groups = channels;
  if (groups <= 0 || channels % groups != 0) return bounds_unbounded(c);
  const int64_t per_group = channels / groups;
  for (size_t i = 1; i < 3; ++i)
    if (!c.input(i) || !c.input(i)->shape_known || c.input(i)->numel() != (per_channel ? channels : groups))
      return bounds_unbounded(c);
  const float eps = static_cast<float>(c.node.attr_float("epsilon", 1e-5));
  const std::vector<Interval> xc = hulls_along(*x, 1);
  std::vector<Interval> xg(static_cast<size_t>(groups));
  for (int64_t ch = 0; ch < channels; ++ch) {
    Interval& h = xg[static_cast<size_t>(ch / per_group)];
    const Interval v = xc[static_cast<size_t>(ch)];
    h = ch % per_group == 0 ? v : Interval{std::min(h.lo, v.lo), std::max(h.hi, v.hi)};
  }
  const int64_t count = per_group * x->shape.numel(2, x->shape.rank());
  const bool nan = x->may_be_nan || c.input(1)->may_be_nan || c.input(2)->may_be_nan;
  return per_channel_bounds(c, *x, nan, [&](int64_t ch, bool& may_be_nan) {
    const int64_t k = per_channel ? ch : ch / per_group;
    return normalized_affine(xg[static_cast<size_t>(ch / per_group)], count, eps, c.input(1)->at(k),
                             c.input(2)->at(k), may_be_nan);
  });
}

Status instance_norm_bounds(BoundsContext& c) { return grouped_norm_bounds(c, 0, true); }

Status group_norm_bounds(BoundsContext& c) {
  const int64_t groups = c.node.attr_int("num_groups", 0);  // none or ≤ 0: the kernel refuses it; unbounded here
  return grouped_norm_bounds(c, groups > 0 ? groups : -1, c.node.opset >= 21);
}

// LayerNormalization: every row normalised (normalized_bound over its cols), then Scale and B per
// position of X.shape[axis:]; the output keeps one interval per such position (up to kElementwiseLimit).
Status layer_norm_bounds(BoundsContext& c) {
  const IntervalTensor* x = c.input(0);
  const IntervalTensor* scale = c.input(1);
  const IntervalTensor* bias = c.input(2);
  if (!x || !x->shape_known || !scale || !scale->shape_known || (bias && !bias->shape_known) || c.outputs.empty())
    return bounds_unbounded(c);
  const int axis = normalize_axis(c.node.attr_int("axis", -1), x->shape.rank());
  if (axis < 0) return bounds_unbounded(c);
  Shape normalized;
  for (int d = axis; d < x->shape.rank(); ++d) normalized.push_back(x->shape[d]);
  Shape joined;
  if (!broadcast_shapes(scale->shape, normalized, joined) || joined != normalized ||
      (bias && (!broadcast_shapes(bias->shape, normalized, joined) || joined != normalized)))
    return bounds_unbounded(c);
  const float eps = static_cast<float>(c.node.attr_float("epsilon", 1e-5));
  const Interval xh = x->hull();
  bool nan = x->may_be_nan || scale->may_be_nan || (bias && bias->may_be_nan);
  // x − mean beyond FLT_MAX is ±inf, and the variance then inf: inf·0.
  const double b = xh.finite() && (xh.hi - xh.lo) * (1 + 0x1.0p-23) <= FLT_MAX
                       ? normalized_bound(xh, normalized.numel(), eps)
                       : kInf;
  nan |= !std::isfinite(b);
  const Interval q{-b, b};
  IntervalTensor& out = c.outputs[0];
  out = IntervalTensor::filled(x->dtype, x->shape, {});
  out.may_be_nan = nan;
  const int64_t cols = normalized.numel();
  if (x->numel() == 0) return Status::ok();
  if (cols > kElementwiseLimit) {
    const Interval y = interval_add(interval_mul(q, scale->hull(), out.may_be_nan),
                                    bias ? bias->hull() : Interval{0, 0}, out.may_be_nan);
    out.lo = {y.lo};
    out.hi = {y.hi};
    return Status::ok();
  }
  out.lo.resize(static_cast<size_t>(cols));
  out.hi.resize(static_cast<size_t>(cols));
  const std::array<std::array<int64_t, Shape::kMaxRank>, 2> strides{
      broadcast_strides(scale->shape, normalized), broadcast_strides(bias ? bias->shape : normalized, normalized)};
  broadcast_loop<2>(normalized, strides, [&](int64_t j, const std::array<int64_t, 2>& k) {
    const Interval y = interval_add(interval_mul(q, scale->at(k[0]), out.may_be_nan),
                                    bias ? bias->at(k[1]) : Interval{0, 0}, out.may_be_nan);
    out.lo[static_cast<size_t>(j)] = y.lo;
    out.hi[static_cast<size_t>(j)] = y.hi;
  });
  out.set_grid(normalized);
  return Status::ok();
}

// OpDef::in_place: Y has X's shape and dtype, and batch_norm_forward reads a channel of X (its statistics too, in
// training mode) before it writes that channel of Y, channels being disjoint.
bool batch_norm_in_place(std::span<const Tensor* const> in, size_t i) { return i == 0 && in[0] != nullptr; }
}  // namespace

void register_normalization_ops(OpRegistry& r) {
  OpDef batch_norm{"BatchNormalization", "", batch_norm_forward, batch_norm_backward, inputs_mask({0, 1, 2}), {},
                   batch_norm_bounds};
  batch_norm.in_place = batch_norm_in_place;
  r.add(batch_norm);
  r.add(OpDef{"InstanceNormalization", "", group_norm_forward<instance_norm_layout>,
              group_norm_backward<instance_norm_layout>, inputs_mask({0, 1, 2}), {},
              instance_norm_bounds});
  r.add(OpDef{"LayerNormalization", "", layer_norm_forward, layer_norm_backward, inputs_mask({0, 1, 2}), {},
              layer_norm_bounds});
  r.add(OpDef{"GroupNormalization", "", group_norm_forward<group_norm_layout>, group_norm_backward<group_norm_layout>,
              inputs_mask({0, 1, 2}), {}, group_norm_bounds});
  // Input 1 is the drop ratio (opset 12+).
  r.add(OpDef{"Dropout", "", dropout_forward, dropout_backward, inputs_mask({0}), {}, dropout_bounds, kDrawsRandom,
              nullptr, inputs_mask({1})});
}

}  // namespace grist
