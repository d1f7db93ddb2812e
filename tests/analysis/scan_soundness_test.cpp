// The interval analysis end to end, on whole models: every intermediate value of a forward pass at points
// drawn from the assumed box lies inside the scan's interval for it (the per-op properties in
// intervals_test check each transfer alone); and along the model's own training, the weights after k steps
// stay within the optimizer's step bound, and the values within the analysis at k steps.
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "analysis/half_hazards.h"
#include "analysis/intervals.h"
#include "config/manifest.h"
#include "engine/executor.h"
#include "engine/optimizers.h"
#include "onnx/import.h"
#include "util/rng.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

struct Subject {
  std::string name;
  Graph graph;
  std::optional<Manifest> manifest;
  std::map<std::string, IntervalTensor> given;  // ranges a model without a manifest needs (its labels)
};

// The test models and every exported zoo subject, with their manifests where they have one.
std::vector<Subject> subjects() {
  std::vector<Subject> out;
  const fs::path root(GRIST_SOURCE_DIR);
  for (const char* name : {"mlp", "cnn", "classifier_loss", "vae_head"}) {
    auto g = import_onnx_file((root / "tests/models" / (std::string(name) + ".onnx")).string());
    EXPECT_TRUE(g.is_ok()) << g.message();
    if (g) out.push_back({name, std::move(g).value(), std::nullopt, {}});
  }
  out[2].given["y"] = IntervalTensor::filled(DType::Int64, {1}, {0, 3});  // classifier_loss has 4 classes
  std::vector<fs::path> manifests;
  for (const char* name : {"logreg_toy", "crafted_training_toy", "free_logits"})
    manifests.push_back(root / "tests/models" / (std::string(name) + ".toml"));
  for (const auto& e : fs::directory_iterator(root / "zoo"))
    if (fs::exists(e.path() / "model.onnx") && fs::exists(e.path() / "manifest.toml"))
      manifests.push_back(e.path() / "manifest.toml");
  for (const auto& path : manifests) {
    auto m = read_manifest(path.string());
    EXPECT_TRUE(m.is_ok()) << m.message();
    if (!m) continue;
    auto g = import_onnx_file(m->model);
    EXPECT_TRUE(g.is_ok()) << g.message();
    if (g) out.push_back({path.parent_path().filename().string() + "/" + path.stem().string(), std::move(g).value(),
                          std::move(m).value(), {}});
  }
  return out;
}

// A point of the analysis's box for every graph input (finite bounds; whole numbers for integer inputs).
std::map<ValueId, Tensor> draw_inputs(const Graph& g, const IntervalAnalysis& a, Rng& rng) {
  std::map<ValueId, Tensor> out;
  for (ValueId id : g.inputs) {
    const IntervalTensor& box = a.values[static_cast<size_t>(id)];
    Tensor t(box.dtype, box.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const Interval r = box.at(i);
      const double lo = std::isfinite(r.lo) ? r.lo : -50, hi = std::isfinite(r.hi) ? r.hi : 50;
      double v = rng.uniform(lo, hi);
      if (!is_float(box.dtype)) v = std::floor(rng.uniform(lo, hi + 1)), v = std::min(v, hi);
      dispatch_all(t.dtype(), [&](auto tag) { t.data<decltype(tag)>()[i] = static_cast<decltype(tag)>(v); });
    }
    out[id] = std::move(t);
  }
  return out;
}

struct Checked {
  int64_t elements = 0, outside = 0;
  std::string first;  // the first value found outside its interval
};

// Every float value the forward computed against its interval: every element of a small tensor, 4,096
// spread over a large one.
void check_values(const Graph& g, const Executor& ex, const IntervalAnalysis& a, Checked& c) {
  for (size_t id = 0; id < g.values.size(); ++id) {
    const IntervalTensor& iv = a.values[id];
    const Tensor& t = ex.value(static_cast<ValueId>(id));
    if (!t.defined() || !is_float(t.dtype()) || iv.lo.empty() || iv.numel() != t.numel()) continue;
    const int64_t stride = std::max<int64_t>(1, t.numel() / 4096);
    for (int64_t i = 0; i < t.numel(); i += stride) {
      const double v = t.get_as_double(i);
      const Interval r = iv.at(i);
      const bool inside = std::isnan(v) ? iv.may_be_nan : (r.lo <= v && v <= r.hi);
      ++c.elements;
      if (!inside && c.outside++ == 0)
        c.first = fmt::format("'{}'[{}] = {} outside [{}, {}]{}", g.values[id].name, i, v, r.lo, r.hi,
                              iv.may_be_nan ? " or NaN" : "");
    }
  }
}

Status run_at(Executor& ex, const std::map<ValueId, Tensor>& inputs) {
  for (const auto& [id, t] : inputs) GRIST_TRY(ex.set_input(id, t));
  return ex.forward();
}

// Models whose values hold more than this many elements in all take seconds a pass: left to the zoo runs.
constexpr int64_t kMaxElements = int64_t{4} << 20;

bool small_enough(const IntervalAnalysis& a) {
  int64_t n = 0;
  for (const IntervalTensor& t : a.values) n += t.shape_known ? t.numel() : 0;
  return n <= kMaxElements;
}

}  // namespace

TEST(ScanSoundness, EveryValueAtPointsOfTheBoxLiesInsideItsInterval) {
  int models = 0;
  int64_t elements = 0;
  Rng rng(20261201);
  for (Subject& s : subjects()) {
    IntervalOptions io;
    io.manifest = s.manifest ? &*s.manifest : nullptr;
    io.trained = TrainedWeights::Initial;  // the weights as they are: the box is the inputs'
    io.given = s.given;
    auto a = analyze_intervals(s.graph, io);
    ASSERT_TRUE(a.is_ok()) << s.name << ": " << a.message();
    if (!small_enough(*a)) continue;
    ExecutorOptions eo;
    eo.dropout_training = false;
    eo.flush_denormals = s.manifest && s.manifest->ftz;
    auto ex = Executor::create(s.graph, eo);
    ASSERT_TRUE(ex.is_ok()) << s.name << ": " << ex.message();
    Checked c;
    int points = 0;
    for (int k = 0; k < 3; ++k) {
      if (!run_at(*ex, draw_inputs(s.graph, *a, rng))) continue;  // e.g. labels the kernels refuse
      ++points;
      check_values(s.graph, *ex, *a, c);
    }
    EXPECT_GT(points, 0) << s.name << ": no point of the box could be run";
    EXPECT_EQ(c.outside, 0) << s.name << ": " << c.outside << " of " << c.elements << " elements; first " << c.first;
    elements += c.elements;
    ++models;
  }
  std::printf("checked %lld elements of %d models\n", static_cast<long long>(elements), models);
  EXPECT_GE(models, 7);  // the test models at least; every exported zoo subject besides
}

TEST(ScanSoundness, TrainingStaysInsideTheStepBoundAndItsAnalysis) {
  int models = 0;
  Rng rng(7);
  for (Subject& s : subjects()) {
    if (!s.manifest || !s.manifest->train.enabled || s.manifest->loss.empty()) continue;
    const OptimizerConfig& oc = s.manifest->train.optimizer;
    if (oc.kind == OptimizerKind::SGD || (oc.kind == OptimizerKind::RMSProp && oc.centered)) continue;
    IntervalOptions io;
    io.manifest = &*s.manifest;
    io.trained = TrainedWeights::Initial;
    auto box = analyze_intervals(s.graph, io);
    ASSERT_TRUE(box.is_ok()) << s.name << ": " << box.message();
    if (!small_enough(*box)) continue;
    std::vector<ValueId> params;
    for (ValueId id : s.graph.initializers)
      if (box->trained[static_cast<size_t>(id)]) params.push_back(id);
    if (params.empty()) continue;
    ExecutorOptions eo;
    eo.dropout_training = false;
    eo.flush_denormals = s.manifest->ftz;
    auto ex = Executor::create(s.graph, eo);
    ASSERT_TRUE(ex.is_ok()) << s.name << ": " << ex.message();
    Optimizer opt(oc, params);
    const ValueId loss = s.graph.find_value(s.manifest->loss);
    Checked c;
    for (int64_t step = 1; step <= 3; ++step) {
      if (!run_at(*ex, draw_inputs(s.graph, *box, rng))) break;
      ASSERT_TRUE(ex->backward(loss, params).is_ok()) << s.name;
      // The bound is for finite gradients; a point of the box where the training step itself fails is a
      // finding of the hunt's, not a step to follow.
      if (ex->forward_event().found || ex->backward_event().found) break;
      ASSERT_TRUE(opt.step(*ex).is_ok()) << s.name;
      io.trained = TrainedWeights::Steps;
      io.steps = step;
      auto a = analyze_intervals(s.graph, io);
      ASSERT_TRUE(a.is_ok()) << s.name << ": " << a.message();
      // The weights themselves, then a forward at a fresh point of the box with them.
      for (ValueId id : params) {
        const Tensor& w = ex->value(id);
        const IntervalTensor& iv = a->values[static_cast<size_t>(id)];
        for (int64_t i = 0; i < w.numel(); ++i) {
          const Interval r = iv.at(i);
          EXPECT_TRUE(r.lo <= w.get_as_double(i) && w.get_as_double(i) <= r.hi)
              << s.name << ": weight '" << s.graph.value(id).name << "'[" << i << "] = " << w.get_as_double(i)
              << " after " << step << " steps, outside [" << r.lo << ", " << r.hi << "]";
        }
      }
      if (!run_at(*ex, draw_inputs(s.graph, *box, rng))) break;
      check_values(s.graph, *ex, *a, c);
    }
    EXPECT_EQ(c.outside, 0) << s.name << ": " << c.outside << " of " << c.elements << " elements; first " << c.first;
    ++models;
  }
  std::printf("trained %d models 3 steps each\n", models);
  EXPECT_GE(models, 1);
}

// Under a 16-bit precision the intervals are rounded as the run rounds (analysis/format_rounding.h): every
// value of an fp16, bf16 or amp-fp16 run at points of the box lies inside them, infinities included.
TEST(ScanSoundness, InHalfPrecisionEveryValueLiesInsideItsRoundedInterval) {
  int runs = 0;
  Rng rng(20261202);
  for (Subject& s : subjects()) {
    for (Precision p : {Precision::Fp16, Precision::Bf16, Precision::AmpFp16}) {
      IntervalOptions io;
      io.manifest = s.manifest ? &*s.manifest : nullptr;
      io.trained = TrainedWeights::Initial;
      io.given = s.given;
      io.format = precision_format(p);
      io.in_format = values_in_format(s.graph, p);
      io.autocast = is_autocast(p);
      auto a = analyze_intervals(s.graph, io);
      ASSERT_TRUE(a.is_ok()) << s.name << ": " << a.message();
      if (!small_enough(*a)) continue;
      ExecutorOptions eo;
      eo.dropout_training = false;
      eo.flush_denormals = s.manifest && s.manifest->ftz;
      eo.precision = p;
      auto ex = Executor::create(s.graph, eo);
      ASSERT_TRUE(ex.is_ok()) << s.name << ": " << ex.message();
      Checked c;
      for (int k = 0; k < 2; ++k)
        if (run_at(*ex, draw_inputs(s.graph, *a, rng))) check_values(s.graph, *ex, *a, c);
      EXPECT_EQ(c.outside, 0) << s.name << " " << precision_name(p) << ": " << c.outside << " of " << c.elements
                              << " elements; first " << c.first;
      runs += c.elements > 0;
    }
  }
  EXPECT_GE(runs, 12);  // the four test models in three precisions at least
}
