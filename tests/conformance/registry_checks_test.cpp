// Checks that run over the whole op registry, not over a hand-kept list: every op with a backward has its
// gradient compared with finite differences, and every op with an interval transfer has its bounds checked
// to enclose what its kernel computes, on the inputs of the ONNX project's own conformance cases for it
// (Debian's libonnx-testdata). An op the conformance data does not cover must be named in the list below,
// with its reason, and the lists must stay true: an op listed there that the data does cover fails the test.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/intervals.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "onnx/tensor_proto.h"
#include "ops/registry.h"
#include "support/onnx_reference.h"
#include "support/op_test_util.h"
#include "util/rng.h"

namespace fs = std::filesystem;

namespace grist {
namespace {

// Ops that no single-node conformance case exercises, and why; their own test files check them by hand.
const std::map<std::string, std::string> kGradientNotCovered = {
    {"Gelu", "opset 20: Debian's conformance data (ONNX 1.12) has no case; UnaryGradient.MatchesFiniteDifferences/Gelu"},
    {"Mish", "opset 18: Debian's conformance data has no case; UnaryGradient.MatchesFiniteDifferences/Mish"},
    {"GroupNormalization", "opsets 18 and 21: Debian's conformance data has no case; GroupNormalizationGradient.*"},
    {"Trilu", "its conformance cases are all int64, which has no gradient; Trilu.GradientIsTheMask checks floats"},
};
const std::map<std::string, std::string> kTransferNotCovered = {
    {"Gelu", "opset 20: Debian's conformance data (ONNX 1.12) has no case; INTERVAL_PROPERTY(Gelu)"},
    {"Mish", "opset 18: Debian's conformance data has no case; Activations.IntervalTransfersEncloseTheKernel"},
    {"GroupNormalization", "opsets 18 and 21: Debian's conformance data has no case; GroupNormalizationBounds.*"},
    {"Equal", "its conformance cases compare integers, which stay exact here; INTERVAL_PROPERTY(Equal) ranges floats"},
    {"RandomUniform", "ONNX has no conformance case for random ops; INTERVAL_PROPERTY(RandomUniform) checks draws"},
    {"RandomUniformLike", "ONNX has no conformance case for random ops; INTERVAL_PROPERTY(RandomUniformLike) checks draws"},
    {"Trilu", "its conformance cases are all int64, which stay exact here; Trilu.BoundsJoinZeroWhereElementsAreZeroed ranges floats"},
};

// Every op of the registry with `has` is in `checked` or in `uncovered`, never both.
void expect_covered(const std::set<std::string>& checked, const std::map<std::string, std::string>& uncovered,
                    bool (*has)(const OpDef&), std::string_view what) {
  for (const OpDef& def : OpRegistry::global().all()) {
    if (!has(def)) continue;
    const std::string op(def.type);
    const bool listed = uncovered.count(op) > 0;
    if (checked.count(op) && listed) ADD_FAILURE() << op << "'s " << what << " is checked now: remove it from the list";
    if (!checked.count(op) && !listed)
      ADD_FAILURE() << op << " has " << what << " that no conformance case checks: test it by hand and list it, "
                    << "with the reason";
  }
}

struct Case {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;  // test_data_set_0, one per graph input
  const OpDef* def = nullptr;
};

// The single-node conformance cases of registered ops (expanded and multi-node cases left out), with the
// inputs of their first data set.
const std::vector<Case>& single_node_cases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> r;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(testing::onnx_node_test_dir()))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      auto g = import_onnx_file((dir / "model.onnx").string());
      if (!g || g->nodes.size() != 1 || !g->initializers.empty()) continue;
      const OpDef* def = OpRegistry::global().find(g->nodes[0].op_type, g->nodes[0].domain);
      if (!def) continue;
      Case c{dir.filename().string(), std::move(*g), {}, def};
      bool ok = true;
      for (size_t i = 0; i < c.graph.inputs.size() && ok; ++i) {
        auto t = read_tensor_pb((dir / "test_data_set_0" / fmt::format("input_{}.pb", i)).string());
        ok = t.is_ok();
        if (ok) c.inputs.push_back(std::move(*t));
      }
      if (ok) r.push_back(std::move(c));
    }
    return r;
  }();
  return cases;
}

bool is_single_or_double(DType t) { return t == DType::Float32 || t == DType::Float64; }

// ---- gradients -----------------------------------------------------------------------------------------

struct GradientOutcome {
  int compared = 0, kinks = 0;
  bool refused = false;  // the backward returned an error for these attributes
};

// L = Σ_k Σ r_k ⊙ y_k over the float outputs, with its analytic gradient against central differences in
// float64, on at most 16 elements of each differentiable input. Where the one-sided differences disagree, or
// the central one changes with the step, the function has a kink or a jump there (Relu at 0, a tie of Max,
// a Clip boundary, Sign at 0): such elements are skipped.
GradientOutcome check_gradient(const Case& c) {
  GradientOutcome outcome;
  const Node& node = c.graph.nodes[0];
  const OpDef& def = *c.def;
  testing::NodeSpec spec = testing::node_spec(node.op_type, {}, 0, node.opset);
  for (const auto& [name, a] : node.attributes) spec.attributes.emplace_back(name, a);
  spec.num_outputs = static_cast<int>(node.outputs.size());
  std::vector<Tensor> inputs;
  std::vector<int> wrt;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == kNoValue) {
      inputs.emplace_back();
      continue;
    }
    const size_t graph_input =
        static_cast<size_t>(std::find(c.graph.inputs.begin(), c.graph.inputs.end(), node.inputs[i]) - c.graph.inputs.begin());
    Tensor t = c.inputs.at(graph_input);
    if (is_float(t.dtype())) {  // every float operand in float64, so the kernel sees one float type
      if (!is_single_or_double(t.dtype())) return outcome;
      Tensor wide;
      cast_tensor(t, DType::Float64, wide);
      t = std::move(wide);
    }
    const bool differentiable = i < 32 && ((def.differentiable_inputs >> i) & 1u) && is_float(t.dtype());
    if (differentiable && t.numel() > 0) {
      wrt.push_back(static_cast<int>(i));
    } else {
      spec.constant_inputs.push_back(static_cast<int>(i));
    }
    inputs.push_back(std::move(t));
  }
  if (wrt.empty()) return outcome;
  Graph g = testing::make_single_node_graph(spec, inputs);
  auto made = Executor::create(g);
  if (!made) return outcome;
  Executor& ex = *made;
  for (int i : wrt) EXPECT_TRUE(ex.set_input(g.find_value(fmt::format("in{}", i)), inputs[static_cast<size_t>(i)]).is_ok());
  if (!ex.forward()) return outcome;  // a kernel without float64 support: covered by its own tests
  Rng rng(11);
  std::vector<Tensor> weights;
  std::vector<ValueId> float_outs;
  std::vector<const Tensor*> seeds;
  for (ValueId id : g.outputs) {
    const Tensor& y = ex.value(id);
    // A float32 output (Cast to float) is too coarse for differences in float64 steps.
    if (is_float(y.dtype()) && y.dtype() != DType::Float64) return outcome;
    weights.push_back(is_float(y.dtype()) ? testing::random_tensor(rng, y.shape(), -1, 1, y.dtype()) : Tensor());
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (weights[k].defined()) {
      float_outs.push_back(g.outputs[k]);
      seeds.push_back(&weights[k]);
    }
  if (float_outs.empty()) return outcome;
  // A backward that refuses some attributes says so (ScatterND's multiply): an error, not a wrong gradient.
  if (const Status back = ex.backward(float_outs, seeds); !back) {
    outcome.refused = true;
    return outcome;
  }
  auto loss = [&] {
    double s = 0;
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Tensor& y = ex.value(g.outputs[k]);
      if (weights[k].defined())
        for (int64_t e = 0; e < y.numel(); ++e) s += weights[k].get_as_double(e) * y.get_as_double(e);
    }
    return s;
  };
  const double base = loss();
  for (int i : wrt) {
    const ValueId id = g.find_value(fmt::format("in{}", i));
    const Tensor* analytic_t = ex.grad(id);
    if (!analytic_t) {
      ADD_FAILURE() << c.name << ": no gradient reached input " << i;
      continue;
    }
    const Tensor analytic = *analytic_t;  // copied: the differences below run the executor again
    Tensor x = inputs[static_cast<size_t>(i)];
    const int64_t n = x.numel(), stride = std::max<int64_t>(1, n / 16);
    for (int64_t e = 0; e < n; e += stride) {
      const double orig = x.data<double>()[e], h = 1e-6 * std::max(1.0, std::fabs(orig));
      auto at = [&](double v) {
        x.data<double>()[e] = v;
        EXPECT_TRUE(ex.set_input(id, x).is_ok());
        EXPECT_TRUE(ex.forward().is_ok());
        return loss();
      };
      const double up = at(orig + h), down = at(orig - h);
      const double near_up = at(orig + h / 4), near_down = at(orig - h / 4);
      at(orig);
      const double forward = (up - base) / h, backward = (base - down) / h, central = (up - down) / (2 * h);
      const double near_central = (near_up - near_down) / (h / 2);
      auto differ = [](double a, double b) { return std::fabs(a - b) > 1e-3 * std::max({1.0, std::fabs(a), std::fabs(b)}); };
      if (!std::isfinite(central) || differ(forward, backward) || differ(central, near_central)) {
        ++outcome.kinks;
        continue;
      }
      const double got = analytic.get_as_double(e);
      ++outcome.compared;
      EXPECT_LE(std::fabs(got - central), 1e-6 * (1 + std::fabs(base)) + 1e-4 * std::fabs(central))
          << c.name << ": d/d input " << i << " at flat index " << e << ": analytic " << got << ", finite difference "
          << central;
    }
  }
  return outcome;
}

TEST(RegistryGradients, EveryOpWithABackwardMatchesFiniteDifferencesOnItsConformanceCases) {
  ASSERT_TRUE(fs::is_directory(testing::onnx_node_test_dir())) << "install libonnx-testdata";
  std::set<std::string> checked;
  int cases = 0, elements = 0, kinks = 0, refused = 0;
  for (const Case& c : single_node_cases()) {
    if (!c.def->backward || c.def->has(kDrawsRandom)) continue;  // random masks differ from run to run
    const GradientOutcome o = check_gradient(c);
    refused += o.refused;
    if (o.compared == 0) continue;
    ++cases;
    elements += o.compared;
    kinks += o.kinks;
    checked.insert(std::string(c.def->type));
  }
  std::printf("gradients: %d conformance cases of %zu ops, %d elements compared, %d kinks skipped, %d backward "
              "refusals\n", cases, checked.size(), elements, kinks, refused);
  expect_covered(checked, kGradientNotCovered,
                 [](const OpDef& d) { return d.backward != nullptr && !d.has(kDrawsRandom); }, "a backward");
}

// ---- interval transfers ---------------------------------------------------------------------------------

// Bounds around each element of a float input (element-wise, or one interval for all with `single`), and
// a sampler of values inside them. Other inputs are exact.
struct InputBox {
  IntervalTensor bounds;
  Tensor centre;
  bool ranged = false;

  Tensor sample(Rng& rng, int which) const {
    if (!ranged) return centre;
    Tensor t = centre;
    if (t.dtype() == DType::Bool) {
      for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = which == 2 ? centre.data<bool>()[i] : rng.uniform(0, 1) < 0.5;
      return t;
    }
    for (int64_t i = 0; i < t.numel(); ++i) {
      const Interval b = bounds.at(i);
      const double v = which == 0 ? b.lo : which == 1 ? b.hi : which == 2 ? centre.get_as_double(i) : rng.uniform(b.lo, b.hi);
      dispatch_float(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T cast = static_cast<T>(v);
        // Stay inside the bounds after rounding to the input's type.
        if (static_cast<double>(cast) < b.lo) cast = std::nextafter(cast, std::numeric_limits<T>::infinity());
        if (static_cast<double>(cast) > b.hi) cast = std::nextafter(cast, -std::numeric_limits<T>::infinity());
        t.data<T>()[i] = cast;
      });
    }
    return t;
  }
};

InputBox box_around(const Tensor& x, bool single) {
  InputBox b;
  b.centre = x;
  if (x.dtype() == DType::Bool && x.numel() > 0) {  // any truth value
    b.ranged = true;
    b.bounds = IntervalTensor::filled(DType::Bool, x.shape(), {0, 1});
    return b;
  }
  if (!is_single_or_double(x.dtype()) || x.numel() == 0) {
    b.bounds = IntervalTensor::of_exact(x);
    return b;
  }
  b.ranged = true;
  const int64_t n = x.numel();
  std::vector<double> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.get_as_double(i);
    const double r = std::isfinite(v) ? 0.05 * std::fabs(v) + 0.01 : 0;
    const float l = static_cast<float>(v - r), u = static_cast<float>(v + r);
    lo[static_cast<size_t>(i)] = std::isnan(v) ? -kInf : std::min(static_cast<double>(l), v);
    hi[static_cast<size_t>(i)] = std::isnan(v) ? kInf : std::max(static_cast<double>(u), v);
  }
  b.bounds = IntervalTensor::filled(x.dtype(), x.shape(), {});
  if (single || n > kElementwiseLimit) {
    b.bounds.lo = {*std::min_element(lo.begin(), lo.end())};
    b.bounds.hi = {*std::max_element(hi.begin(), hi.end())};
  } else {
    b.bounds.lo = lo;
    b.bounds.hi = hi;
  }
  for (int64_t i = 0; i < n; ++i) b.bounds.may_be_nan |= std::isnan(x.get_as_double(i));
  return b;
}

// Runs the case's graph on `inputs`; false where the kernel refuses them (a perturbed value it rejects).
bool run_graph(const Graph& g, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto ex = Executor::create(g);
  if (!ex) return false;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (!ex->set_input(g.inputs[i], inputs[i])) return false;
  if (!ex->forward()) return false;
  outputs.clear();
  for (ValueId id : g.outputs) outputs.push_back(ex->value(id));
  return true;
}

// Whether every sample's outputs lie in the analysis's bounds; the number of samples run.
int check_enclosure(const Case& c, bool single) {
  std::vector<InputBox> boxes;
  IntervalOptions options;
  bool any_ranged = false;
  for (size_t i = 0; i < c.graph.inputs.size(); ++i) {
    boxes.push_back(box_around(c.inputs[i], single));
    any_ranged |= boxes.back().ranged;
    options.given[c.graph.value(c.graph.inputs[i]).name] = boxes.back().bounds;
  }
  if (!any_ranged) return 0;  // every input exact: the kernel itself runs, nothing to check
  auto analysis = analyze_intervals(c.graph, options);
  EXPECT_TRUE(analysis.is_ok()) << c.name << ": " << analysis.message();
  if (!analysis) return 0;
  Rng rng(5);
  int samples = 0;
  for (int s = 0; s < 8; ++s) {
    std::vector<Tensor> in, out;
    for (const InputBox& b : boxes) in.push_back(b.sample(rng, s));
    if (!run_graph(c.graph, in, out)) continue;
    ++samples;
    for (size_t k = 0; k < out.size(); ++k) {
      const IntervalTensor& t = analysis->values[static_cast<size_t>(c.graph.outputs[k])];
      const Tensor& y = out[k];
      const bool shaped = t.shape_known && t.numel() == y.numel();
      if (t.shape_known && t.shape != y.shape()) {
        ADD_FAILURE() << c.name << " (" << (single ? "one interval" : "element-wise") << "): output " << k
                      << " has shape " << y.shape().str() << ", the analysis says " << t.shape.str();
        continue;
      }
      const Interval hull = t.hull();
      for (int64_t e = 0; e < y.numel(); ++e) {
        const double v = y.get_as_double(e);
        const Interval b = shaped ? t.at(e) : hull;
        const bool inside = std::isnan(v) ? t.may_be_nan : (b.lo <= v && v <= b.hi);
        if (!inside) {
          ADD_FAILURE() << c.name << " (" << (single ? "one interval" : "element-wise") << ", sample " << s
                        << "): output " << k << " element " << e << " is " << v << ", outside [" << b.lo << ", "
                        << b.hi << "]" << (t.may_be_nan ? " (may be NaN)" : "");
          break;
        }
      }
    }
  }
  return samples;
}

TEST(RegistryIntervals, EveryTransferEnclosesItsKernelOnItsConformanceCases) {
  ASSERT_TRUE(fs::is_directory(testing::onnx_node_test_dir())) << "install libonnx-testdata";
  std::set<std::string> checked;
  int cases = 0, samples = 0;
  for (const Case& c : single_node_cases()) {
    if (!c.def->bounds) continue;
    const int n = check_enclosure(c, false) + check_enclosure(c, true);
    if (n == 0) continue;
    ++cases;
    samples += n;
    checked.insert(std::string(c.def->type));
  }
  std::printf("interval transfers: %d conformance cases of %zu ops, %d samples\n", cases, checked.size(), samples);
  expect_covered(checked, kTransferNotCovered, [](const OpDef& d) { return d.bounds != nullptr; },
                 "an interval transfer");
}

}  // namespace
}  // namespace grist
