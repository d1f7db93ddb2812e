#include "analysis/intervals.h"

#include <algorithm>
#include <cfloat>

#include "analysis/trained_weights.h"
#include "analysis/format_rounding.h"
#include "analysis/half_hazards.h"
#include "analysis/training_bounds.h"
#include "engine/autocast.h"
#include "data/dataset.h"
#include "ops/registry.h"

namespace grist {

namespace {

// RANUM's defaults (PEERS.md).
constexpr Interval kDefaultInput{-50, 50};
constexpr Interval kDefaultInteger{0, 20};
constexpr Interval kDefaultProbability{0.1, 0.9};  // a dropout ratio

Interval tensor_hull(const Tensor& t) {
  Interval h{kInf, -kInf};
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_as_double(i);
    if (std::isnan(v)) continue;
    h = {std::min(h.lo, v), std::max(h.hi, v)};
  }
  return h;
}

// The range a manifest entry allows the hunt to put into the input, and why.
Result<std::pair<Interval, std::string>> manifest_range(const InputSpec& in) {
  if (in.range == ClipRange::Explicit) return std::pair{Interval{in.lo, in.hi}, std::string("manifest range")};
  auto source = source_range(in);
  if (!source) return source.error();
  if (!*source) return std::pair{kDefaultInput, std::string("normal source: RANUM default for inputs")};
  const Interval src{(*source)->lo, (*source)->hi};
  const std::string& why = (*source)->why;
  // Data the hunt may step freely (range "none") can leave the source's hull.
  if (in.role == InputRole::Data && in.range == ClipRange::None)
    return std::pair{Interval{std::min(src.lo, kDefaultInput.lo), std::max(src.hi, kDefaultInput.hi)},
                     why + " ∪ RANUM default (range = none: the hunt is unclipped)"};
  return std::pair{src, why};
}

Shape declared_shape(const Value& v, int64_t batch, bool& known) {
  known = v.shape.has_value();
  Shape s;
  if (!known) return s;
  for (const Dim& d : *v.shape) s.push_back(d.known() ? d.size : batch);
  return s;
}

// Whether the value feeds an input its op takes as a probability (OpDef::probability_inputs).
bool feeds_probability(const Graph& g, ValueId id) {
  const OpRegistry& reg = OpRegistry::global();
  for (int32_t n : g.value(id).consumers) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    const OpDef* def = reg.find(node.op_type, node.domain);
    for (size_t i = 0; def && i < node.inputs.size() && i < 32; ++i)
      if (node.inputs[i] == id && ((def->probability_inputs >> i) & 1u)) return true;
  }
  return false;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get_as_double(i)));
  return m;
}

// Every element of `init` widened by `radius` (elementwise while small, blocks beyond).
IntervalTensor around(const Tensor& init, double radius) {
  IntervalTensor t = IntervalTensor::filled(init.dtype(), init.shape(), {-kInf, kInf});
  const int64_t n = init.numel();
  t.lo.resize(static_cast<size_t>(n));
  t.hi.resize(static_cast<size_t>(n));
  t.blocks = Shape{};
  for (int64_t i = 0; i < n; ++i) {
    const double v = init.get_as_double(i);
    t.lo[static_cast<size_t>(i)] = v - radius;
    t.hi[static_cast<size_t>(i)] = v + radius;
  }
  if (n == 1) t.lo.resize(1), t.hi.resize(1);
  t.partition_if_large();
  return t;
}

}  // namespace

Result<IntervalAnalysis> analyze_intervals(const Graph& g, const IntervalOptions& o) {
  for (const auto& [name, range] : o.assumed) {
    const ValueId id = g.find_value(name);
    const bool known = id != kNoValue && (std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end() ||
                                          std::find(g.initializers.begin(), g.initializers.end(), id) !=
                                              g.initializers.end());
    if (!known) {
      std::string names;
      for (ValueId in : g.inputs) names += (names.empty() ? "" : ", ") + g.value(in).name;
      return make_error("--assume {}: the model has no input or weight of that name (its inputs: {})", name, names);
    }
    if (!(range.lo <= range.hi)) return make_error("--assume {}: the range [{}, {}] is empty", name, range.lo, range.hi);
  }
  IntervalAnalysis a;
  a.values.assign(g.values.size(), IntervalTensor::unknown(DType::Undefined));
  a.trained = trained_weights(g, o.manifest);
  // The optimizer's reach in o.steps steps, once for every weight (it sums a bound per step).
  const std::optional<double> step_move = o.trained == TrainedWeights::Steps && o.manifest
                                              ? max_weight_move(o.manifest->train.optimizer, o.steps)
                                              : std::nullopt;
  a.stated.assign(g.values.size(), false);
  const std::string trained_why =
      o.manifest ? fmt::format("trained by {}: any value, unless you state a range", 
                               optimizer_kind_name(o.manifest->train.optimizer.kind))
                 : "no manifest: taken to train (any value) unless you state a range";
  const int64_t batch = o.batch > 0 ? o.batch : (o.manifest && o.manifest->batch_size > 0 ? o.manifest->batch_size : 1);

  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (auto it = o.given.find(v.name); it != o.given.end()) {
      a.values[static_cast<size_t>(id)] = it->second;
      continue;
    }
    bool known = false;
    Shape shape = declared_shape(v, batch, known);
    Interval range = is_float(v.dtype) ? kDefaultInput : kDefaultInteger;
    std::string kind = "input", why = is_float(v.dtype) ? "RANUM default for inputs" : "RANUM default for integers";
    if (v.dtype == DType::Bool) range = {0, 1}, why = "bool";
    if (feeds_probability(g, id)) range = kDefaultProbability, kind = "dropout ratio", why = "RANUM default";
    if (o.manifest) {
      if (auto it = o.manifest->inputs.find(v.name); it != o.manifest->inputs.end()) {
        auto r = manifest_range(it->second);
        if (!r) return r.error();
        range = r->first;
        why = r->second;
        if (it->second.role == InputRole::Label) kind = "label";
      }
    }
    if (auto it = o.assumed.find(v.name); it != o.assumed.end()) range = it->second, why = "your statement: --assume";
    IntervalTensor t = known ? IntervalTensor::filled(v.dtype, shape, range) : IntervalTensor::unknown(v.dtype);
    t.lo = {range.lo};
    t.hi = {range.hi};
    t.may_be_nan = false;
    t.snap_to_dtype();
    a.values[static_cast<size_t>(id)] = std::move(t);
    a.assumptions.push_back({v.name, kind, range, why});
  }

  for (ValueId id : g.initializers) {
    const Value& v = g.value(id);
    if (auto it = o.given.find(v.name); it != o.given.end()) {
      a.values[static_cast<size_t>(id)] = it->second;
      continue;
    }
    if (!v.initial) continue;
    const Tensor& init = *v.initial;
    if (auto it = o.assumed.find(v.name); it != o.assumed.end()) {
      a.values[static_cast<size_t>(id)] = IntervalTensor::filled(init.dtype(), init.shape(), it->second);
      a.values[static_cast<size_t>(id)].snap_to_dtype();
      a.stated[static_cast<size_t>(id)] = a.trained[static_cast<size_t>(id)];
      a.assumptions.push_back({v.name, "weight", it->second, "your statement: --assume"});
      continue;
    }
    // Integers (shapes, indices), constants and weights that never train are exact.
    if (!is_float(init.dtype()) || !a.trained[static_cast<size_t>(id)]) {
      a.values[static_cast<size_t>(id)] = IntervalTensor::of_exact(init);
      continue;
    }
    const Interval h = tensor_hull(init);
    if (o.manifest && o.manifest->scan_trained_weights) {
      const Interval range{o.manifest->scan_trained_weights->first, o.manifest->scan_trained_weights->second};
      a.values[static_cast<size_t>(id)] = IntervalTensor::filled(init.dtype(), init.shape(), range);
      a.stated[static_cast<size_t>(id)] = true;
      a.assumptions.push_back({v.name, "trained weight", range, "your statement: manifest [scan] trained_weights"});
      continue;
    }
    switch (o.trained) {
      case TrainedWeights::Unbounded:
        a.values[static_cast<size_t>(id)] = IntervalTensor::unbounded(init.dtype(), init.shape());
        a.assumptions.push_back({v.name, "trained weight", {-kInf, kInf}, trained_why});
        break;
      case TrainedWeights::Initial:
        a.values[static_cast<size_t>(id)] = IntervalTensor::of_exact(init);
        a.assumptions.push_back({v.name, "trained weight", h, "its initial value"});
        break;
      case TrainedWeights::RanumDefault: {
        const RanumRange r = ranum_default_range(init);
        a.values[static_cast<size_t>(id)] = IntervalTensor::filled(init.dtype(), init.shape(), r.range);
        a.stated[static_cast<size_t>(id)] = true;
        a.assumptions.push_back({v.name, "trained weight", r.range, fmt::format("--ranum-weights: {}", r.why)});
        break;
      }
      case TrainedWeights::Steps: {
        if (!step_move) return make_error("internal: no step bound for the training of '{}'", v.name);
        const double r = rounded_radius(*step_move, o.steps, max_abs(init));
        a.values[static_cast<size_t>(id)] = around(init, r);
        a.assumptions.push_back({v.name, "trained weight", {h.lo - r, h.hi + r},
                                 fmt::format("initial value ± {:.4g}: {} training steps", r, o.steps)});
        break;
      }
    }
  }

  // Under a 16-bit precision the run rounds inputs and weights to the format before the first op.
  auto in_format = [&](ValueId id) {
    return o.format != DType::Undefined && static_cast<size_t>(id) < o.in_format.size() &&
           o.in_format[static_cast<size_t>(id)];
  };
  // A value the model stores as float16/bfloat16 holds its type's values at any precision.
  const std::vector<DType> stored = o.round_stored ? stored_formats(g) : std::vector<DType>(g.values.size());
  auto round_as_run = [&](ValueId id, IntervalTensor& t) {
    if (stored[static_cast<size_t>(id)] != DType::Undefined) round_to_format(t, stored[static_cast<size_t>(id)]);
    else if (in_format(id)) round_to_format(t, o.format);
  };
  for (const auto* ids : {&g.inputs, &g.initializers})
    for (ValueId id : *ids) round_as_run(id, a.values[static_cast<size_t>(id)]);

  const OpRegistry& reg = OpRegistry::global();
  for (const Node& node : g.nodes) {
    const OpDef* def = reg.find(node.op_type, node.domain);
    std::vector<const IntervalTensor*> in(node.inputs.size(), nullptr);
    bool all_exact = def && def->forward && !def->has(kDrawsRandom);
    // amp-*: an op autocast runs in the format reads its float32 inputs rounded to it (Executor's casts).
    const bool casts_inputs = o.format != DType::Undefined && o.autocast && node.domain.empty() &&
                              !node.keep_float32 && autocast_rule(node.op_type) == AutocastRule::LowerPrecision;
    std::vector<IntervalTensor> cast(casts_inputs ? node.inputs.size() : 0);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == kNoValue) continue;
      in[i] = &a.values[static_cast<size_t>(node.inputs[i])];
      if (casts_inputs && !in_format(node.inputs[i]) && in[i]->dtype == DType::Float32) {
        cast[i] = *in[i];
        round_to_format(cast[i], o.format);
        in[i] = &cast[i];
      }
      all_exact = all_exact && in[i]->exact;
    }
    std::vector<IntervalTensor> out(node.outputs.size(), IntervalTensor::unknown(DType::Undefined));
    bool done = false;
    if (all_exact) {
      // Constants and shape arithmetic: the kernel itself, so Reshape targets and indices stay exact.
      std::vector<const Tensor*> tensors(in.size(), nullptr);
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i]) tensors[i] = in[i]->exact.get();
      std::vector<Tensor> results;
      if (run_kernel(node, *def, tensors, results)) {
        for (size_t k = 0; k < results.size(); ++k)
          if (results[k].defined()) out[k] = IntervalTensor::of_exact(std::move(results[k]));
        done = true;
      }
    }
    if (!done && def) {
      BoundsContext ctx{node, *def, in, out};
      if (def->bounds) {
        if (auto st = def->bounds(ctx); !st) return make_error("{} ({}): {}", node.name, node.op_type, st.message());
      } else {
        GRIST_TRY(bounds_unbounded(ctx));
        a.unbounded_nodes.push_back(fmt::format("{} ({})", node.name, node.op_type));
      }
    } else if (!done) {
      a.unbounded_nodes.push_back(fmt::format("{} ({})", node.name, node.op_type));
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k] == kNoValue) continue;
      IntervalTensor& t = out[k];
      const DType declared = g.value(node.outputs[k]).dtype;
      if (declared != DType::Undefined) t.dtype = declared;
      if (t.lo.empty() && t.numel() != 0) t.lo = {-kInf}, t.hi = {kInf};
      t.snap_to_dtype();
      if (t.dtype == DType::Float32) {
        // Beyond FLT_MAX a float32 result is ±inf.
        for (auto& v : t.lo)
          if (v < -FLT_MAX) v = -kInf;
        for (auto& v : t.hi)
          if (v > FLT_MAX) v = kInf;
      }
      if (t.lo.size() == 1) t.blocks = Shape{};
      if (t.blocks.rank() > 0 && (t.blocks.rank() != t.shape.rank() || t.blocks.numel() != int64_t(t.lo.size())))
        return make_error("{} ({}): bounds on blocks {} do not fit shape {}", node.name, node.op_type,
                          t.blocks.str(), t.shape.str());
      t.partition_if_large();
      round_as_run(node.outputs[k], t);
      a.values[static_cast<size_t>(node.outputs[k])] = std::move(t);
    }
  }
  return a;
}

}  // namespace grist
