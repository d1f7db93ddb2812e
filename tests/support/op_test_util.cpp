#include "support/op_test_util.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "analysis/intervals.h"
#include "ops/registry.h"

namespace grist::testing {

Attribute attr_int(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::Int;
  a.i = v;
  return a;
}
Attribute attr_float(double v) {
  Attribute a;
  a.type = Attribute::Type::Float;
  a.f = v;
  return a;
}
Attribute attr_string(std::string v) {
  Attribute a;
  a.type = Attribute::Type::String;
  a.s = std::move(v);
  return a;
}
Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute attr_floats(std::vector<double> v) {
  Attribute a;
  a.type = Attribute::Type::Floats;
  a.floats = std::move(v);
  return a;
}
Attribute attr_tensor(Tensor t) {
  Attribute a;
  a.type = Attribute::Type::Tensor;
  a.t = std::make_shared<const Tensor>(std::move(t));
  return a;
}

Graph make_single_node_graph(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  Graph g;
  g.opsets[""] = spec.opset;
  Node n;
  n.op_type = spec.op_type;
  n.name = spec.op_type + "_0";
  n.opset = spec.opset;
  n.attributes = spec.attributes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back(kNoValue);
      continue;
    }
    Value v;
    v.name = fmt::format("in{}", i);
    v.dtype = inputs[i].dtype();
    bool constant = std::find(spec.constant_inputs.begin(), spec.constant_inputs.end(), static_cast<int>(i)) !=
                    spec.constant_inputs.end();
    v.kind = constant ? ValueKind::Initializer : ValueKind::Input;
    if (constant) v.initial = std::make_shared<const Tensor>(inputs[i]);
    ValueId id = g.add_value(std::move(v));
    (constant ? g.initializers : g.inputs).push_back(id);
    n.inputs.push_back(id);
  }
  for (int o = 0; o < spec.num_outputs; ++o) {
    Value v;
    v.name = fmt::format("out{}", o);
    ValueId id = g.add_value(std::move(v));
    n.outputs.push_back(id);
    g.outputs.push_back(id);
  }
  g.nodes.push_back(std::move(n));
  EXPECT_TRUE(g.sort_topologically().is_ok());
  return g;
}

NodeSpec node_spec(std::string op, std::vector<std::pair<std::string, Attribute>> attributes, int num_outputs,
                   int opset) {
  NodeSpec s;
  s.op_type = std::move(op);
  s.attributes = std::move(attributes);
  s.num_outputs = num_outputs;
  s.opset = opset;
  return s;
}

uint64_t allocations_after_first_pass(const NodeSpec& spec, const std::vector<Tensor>& inputs, BackwardFrom from,
                                      int extra_passes) {
  Graph g = make_single_node_graph(spec, inputs);
  auto ex = Executor::create(g);
  EXPECT_TRUE(ex.is_ok()) << ex.message();
  if (!ex) return 0;
  for (ValueId id : g.inputs) {
    const int i = std::stoi(g.value(id).name.substr(2));  // inputs are named in<i>
    EXPECT_TRUE(ex->set_input(id, inputs[static_cast<size_t>(i)]).is_ok());
  }
  std::vector<ValueId> outputs;
  std::vector<Tensor> seeds;
  auto pass = [&](bool first) {
    EXPECT_TRUE(ex->forward().is_ok());
    if (from == BackwardFrom::FirstOutput) {
      EXPECT_TRUE(ex->backward(g.outputs[0]).is_ok());
      return;
    }
    if (first)
      for (ValueId id : g.outputs)
        if (is_float(ex->value(id).dtype())) {
          outputs.push_back(id);
          seeds.push_back(ex->value(id));
        }
    std::vector<const Tensor*> seed_ptrs;
    for (const Tensor& t : seeds) seed_ptrs.push_back(&t);
    EXPECT_TRUE(ex->backward(outputs, seed_ptrs).is_ok());
  };
  pass(true);
  const uint64_t before = Tensor::allocation_count();
  for (int p = 0; p < extra_passes; ++p) pass(false);
  return Tensor::allocation_count() - before;
}

namespace {
Status feed(Executor& ex, const Graph& g, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    ValueId id = g.find_value(fmt::format("in{}", i));
    if (g.value(id).kind == ValueKind::Input) GRIST_TRY(ex.set_input(id, inputs[i]));
  }
  return Status::ok();
}
}  // namespace

Result<std::vector<Tensor>> try_run_node(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                                         ExecutorOptions opts) {
  Graph g = make_single_node_graph(spec, inputs);
  auto ex = Executor::create(g, opts);
  if (!ex) return ex.error();
  GRIST_TRY(feed(*ex, g, inputs));
  GRIST_TRY(ex->forward());
  std::vector<Tensor> outs;
  for (ValueId id : g.outputs) outs.push_back(ex->value(id));
  return outs;
}

std::vector<Tensor> run_node(const NodeSpec& spec, const std::vector<Tensor>& inputs, ExecutorOptions opts) {
  auto r = try_run_node(spec, inputs, opts);
  if (!r) {
    ADD_FAILURE() << spec.op_type << ": " << r.message();
    return {};
  }
  return std::move(r).value();
}

Tensor random_tensor(Rng& rng, const Shape& shape, double lo, double hi, DType dtype) {
  Tensor t(dtype, shape);
  dispatch_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(rng.uniform(lo, hi));
  });
  return t;
}

namespace {
// L = Σ_k Σ r_k ⊙ y_k for the current inputs.
double weighted_sum(Executor& ex, const Graph& g, const std::vector<Tensor>& weights) {
  double s = 0;
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Tensor& y = ex.value(g.outputs[k]);
    if (!is_float(y.dtype())) continue;
    for (int64_t i = 0; i < y.numel(); ++i) s += weights[k].get_as_double(i) * y.get_as_double(i);
  }
  return s;
}
}  // namespace

void expect_gradient_matches(const NodeSpec& spec, const std::vector<Tensor>& inputs, GradCheckOptions opts) {
  Graph g = make_single_node_graph(spec, inputs);
  auto exr = Executor::create(g);
  ASSERT_TRUE(exr.is_ok()) << exr.message();
  Executor& ex = *exr;
  ASSERT_TRUE(feed(ex, g, inputs).is_ok());
  auto st = ex.forward();
  ASSERT_TRUE(st.is_ok()) << st.message();

  Rng rng(opts.seed);
  std::vector<Tensor> weights;
  std::vector<ValueId> float_outs;
  std::vector<const Tensor*> seeds;
  for (ValueId id : g.outputs) {
    const Tensor& y = ex.value(id);
    weights.push_back(is_float(y.dtype()) ? random_tensor(rng, y.shape(), -1, 1, y.dtype()) : Tensor());
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (weights[k].defined()) {
      float_outs.push_back(g.outputs[k]);
      seeds.push_back(&weights[k]);
    }
  ASSERT_FALSE(float_outs.empty()) << spec.op_type << " has no float output";
  st = ex.backward(float_outs, seeds);
  ASSERT_TRUE(st.is_ok()) << st.message();

  std::vector<int> wrt = opts.wrt;
  if (wrt.empty())
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && is_float(inputs[i].dtype())) wrt.push_back(static_cast<int>(i));

  for (int i : wrt) {
    ValueId id = g.find_value(fmt::format("in{}", i));
    ASSERT_NE(id, kNoValue);
    const Tensor* analytic = ex.grad(id);
    ASSERT_NE(analytic, nullptr) << spec.op_type << ": no gradient reached input " << i;
    Tensor x = inputs[static_cast<size_t>(i)];
    int failures = 0;
    for (int64_t e = 0; e < x.numel() && failures < 5; ++e) {
      double orig = x.get_as_double(e);
      auto set = [&](double v) {
        dispatch_float(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          x.data<T>()[e] = static_cast<T>(v);
        });
        ASSERT_TRUE(ex.set_input(id, x).is_ok());
        ASSERT_TRUE(ex.forward().is_ok());
      };
      set(orig + opts.step);
      double up = weighted_sum(ex, g, weights);
      set(orig - opts.step);
      double down = weighted_sum(ex, g, weights);
      set(orig);
      double numeric = (up - down) / (2 * opts.step);
      double got = analytic->get_as_double(e);
      if (!(std::fabs(numeric - got) <= opts.abs_tol + opts.rel_tol * std::fabs(numeric))) {
        ++failures;
        ADD_FAILURE() << spec.op_type << ": d/d input " << i << " at flat index " << e << ": analytic " << got
                      << ", finite difference " << numeric;
      }
    }
  }
}

std::vector<IntervalTensor> expect_bounds_sound(const NodeSpec& spec, const std::vector<Tensor>& shapes,
                                                const std::vector<Interval>& boxes, uint64_t seed, BoxLayout layout) {
  std::vector<Tensor> probe(shapes.size());
  NodeSpec with_constants = spec;
  IntervalOptions opts;
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!shapes[k].defined()) continue;
    if (!is_float(shapes[k].dtype())) {  // sequence_lens: a known constant
      probe[k] = shapes[k];
      with_constants.constant_inputs.push_back(static_cast<int>(k));
      continue;
    }
    probe[k] = Tensor(DType::Float32, shapes[k].shape());
    IntervalTensor box = IntervalTensor::filled(DType::Float32, shapes[k].shape(), boxes[k]);
    if (layout == BoxLayout::PerElement) {
      box.lo.assign(static_cast<size_t>(box.numel()), boxes[k].lo);
      box.hi.assign(static_cast<size_t>(box.numel()), boxes[k].hi);
    }
    opts.given[fmt::format("in{}", k)] = std::move(box);
  }
  Graph g = make_single_node_graph(with_constants, probe);
  auto a = analyze_intervals(g, opts);
  EXPECT_TRUE(a.is_ok()) << a.message();
  if (!a) return {};
  std::vector<IntervalTensor> bounds;
  for (ValueId id : g.outputs) bounds.push_back(a->values[static_cast<size_t>(id)]);
  Rng rng(seed);
  for (int point = 0; point < 40; ++point) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      if (!probe[k].defined() || !is_float(probe[k].dtype())) continue;
      for (float& v : probe[k].span<float>()) {
        const double u = rng.uniform();
        // Corners often: that is where saturation and the largest states are. Inside an infinite box, large values.
        const double lo = std::max(boxes[k].lo, -1e30), hi = std::min(boxes[k].hi, 1e30);
        v = static_cast<float>(u < 0.2 ? boxes[k].lo : u > 0.8 ? boxes[k].hi : rng.uniform(lo, hi));
      }
    }
    auto out = run_node(with_constants, probe);
    EXPECT_EQ(out.size(), bounds.size());
    for (size_t o = 0; o < out.size() && o < bounds.size(); ++o) {
      const IntervalTensor& b = bounds[o];
      EXPECT_TRUE(b.shape_known);
      EXPECT_EQ(b.shape, out[o].shape()) << "output " << o;
      if (b.shape != out[o].shape()) return bounds;
      for (int64_t i = 0; i < out[o].numel(); ++i) {
        const double v = out[o].get_as_double(i);
        if (std::isnan(v)) {
          EXPECT_TRUE(b.may_be_nan) << spec.op_type << " output " << o << "[" << i << "] is NaN";
          continue;
        }
        EXPECT_TRUE(b.lo_at(i) <= v && v <= b.hi_at(i)) << spec.op_type << " output " << o << "[" << i << "] = " << v
                                                        << " outside [" << b.lo_at(i) << ", " << b.hi_at(i) << "]";
      }
    }
  }
  return bounds;
}

::testing::AssertionResult tensors_close(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
  if (expected.dtype() != actual.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected "
                                         << dtype_name(expected.dtype());
  if (expected.shape() != actual.shape())
    return ::testing::AssertionFailure() << "shape " << actual.shape().str() << ", expected " << expected.shape().str();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.get_as_double(i), a = actual.get_as_double(i);
    if (std::isnan(e) && std::isnan(a)) continue;
    if (e == a) continue;  // includes equal infinities
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)))
      return ::testing::AssertionFailure() << "element " << i << ": " << a << ", expected " << e;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace grist::testing
