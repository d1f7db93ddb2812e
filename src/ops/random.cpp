// Random generators: RandomNormal and RandomUniform (shape and dtype from attributes) and their *Like
// variants (the input's shape and, unless `dtype` is given, its element type).
// Every draw goes through ctx.rng, the run's one seeded generator, so a run's seed replays it exactly.
// A node's own `seed` attribute is deliberately ignored: ONNX Runtime's and PyTorch's streams cannot be
// reproduced bit-for-bit anyway, and one run-wide seed keeps all nodes' draws replayable together.
#include <fmt/format.h>

#include "ops/kernel_util.h"
#include "ops/registry.h"
#include "ops/shape_helpers.h"

namespace grist {
namespace {

enum class Distribution { Normal, Uniform };

// Uniform in [low, high) after rounding to T: a double just below `high` can round up to it in float32,
// and a value equal to `high` would let e.g. log(high - u) see an exact 0 the model never could.
template <class T>
T draw_uniform(Rng& rng, double low, double high) {
  for (;;) {
    const T v = static_cast<T>(rng.uniform(low, high));
    if (!(low < high) || v < static_cast<T>(high)) return v;
  }
}

// Resizes y to (dtype, shape) and fills it with draws in row-major order.
Status draw(const Node& n, Distribution dist, Rng& rng, int64_t dtype, const Shape& shape, Tensor& y) {
  const auto t = static_cast<DType>(dtype);
  if (!is_float(t)) return node_error(n, fmt::format("cannot generate element type {} ({})", dtype, dtype_name(t)));
  y.resize(t, shape);
  dispatch_float(t, [&](auto tag) {
    using T = decltype(tag);
    T* out = y.data<T>();
    if (dist == Distribution::Normal) {
      const double mean = n.attr_float("mean", 0.0), scale = n.attr_float("scale", 1.0);
      for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(rng.normal(mean, scale));
    } else {
      const double low = n.attr_float("low", 0.0), high = n.attr_float("high", 1.0);
      for (int64_t i = 0; i < y.numel(); ++i) out[i] = draw_uniform<T>(rng, low, high);
    }
  });
  return Status::ok();
}

template <Distribution D>
Status random_forward(ForwardContext& c) {
  GRIST_TRY(require_output(c, 0));
  const Attribute* shape = c.node.attr("shape");
  if (!shape) return node_error(c.node, "the shape attribute is required");
  if (shape->ints.size() > static_cast<size_t>(Shape::kMaxRank))
    return node_error(c.node, fmt::format("rank {} is above grist's maximum of {}", shape->ints.size(),
                                          Shape::kMaxRank));
  Shape out;
  for (int64_t d : shape->ints) {
    if (d < 0) return node_error(c.node, fmt::format("negative dimension {}", d));
    out.push_back(d);
  }
  const int64_t dtype = c.node.attr_int("dtype", static_cast<int64_t>(DType::Float32));
  return draw(c.node, D, c.rng, dtype, out, *c.output(0));
}

template <Distribution D>
Status random_like_forward(ForwardContext& c) {
  GRIST_TRY(require_input(c, 0));
  GRIST_TRY(require_output(c, 0));
  const Tensor& x = *c.input(0);
  const int64_t dtype = c.node.attr_int("dtype", static_cast<int64_t>(x.dtype()));
  return draw(c.node, D, c.rng, dtype, x.shape(), *c.output(0));
}

// Uniform draws lie in [low, high] (the float32 arithmetic may reach high itself); normal ones anywhere.
Status uniform_bounds(BoundsContext& c) {
  GRIST_TRY(bounds_unbounded(c));  // the output shape
  IntervalTensor& y = c.outputs[0];
  if (!y.shape_known) return Status::ok();
  const Shape shape = y.shape;
  const DType dtype = y.dtype;
  const double low = c.node.attr_float("low", 0.0), high = c.node.attr_float("high", 1.0);
  // low > high draws from (high, low]; float16 has no kernel, so the draws are float32 or float64.
  y = IntervalTensor::filled(dtype, shape, widen_f32({std::min(low, high), std::max(low, high)}));
  return Status::ok();
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  r.add(OpDef{"RandomNormal", "", random_forward<Distribution::Normal>, nullptr, 0, {}, nullptr, kDrawsRandom});
  r.add(OpDef{"RandomUniform", "", random_forward<Distribution::Uniform>, nullptr, 0, {}, uniform_bounds, kDrawsRandom});
  r.add(OpDef{"RandomNormalLike", "", random_like_forward<Distribution::Normal>, nullptr, 0, {}, nullptr,
              kDrawsRandom});
  r.add(OpDef{"RandomUniformLike", "", random_like_forward<Distribution::Uniform>, nullptr, 0, {}, uniform_bounds,
              kDrawsRandom});
}

}  // namespace grist
