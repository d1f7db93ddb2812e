// End-to-end on real models: torchvision's ResNet-18, MobileNet V2 and V3-small, SqueezeNet 1.1 and
// ShuffleNet V2 ×0.5, a Transformer encoder layer, LSTM and GRU classifiers, each exported by Debian's PyTorch
// at opsets 13 and 17, and 17's export upgraded to opset 18 as PyTorch 2 writes it (random weights, fixed seeds;
// tests/e2e/export_real_models.py, run by the build into
// <build>/e2e-models). grist's forward and its input and weight gradients are checked against PyTorch's, and
// its forward against an independent oracle, ONNX Runtime (tests/oracle/ort_run.js).
//
// Every comparison prints its measured worst difference ("[ e2e ] ..." lines) so docs/TESTING.md can quote them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/npy.h"
#include "data/npz.h"
#include "engine/executor.h"
#include "onnx/import.h"
#include "ops/registry.h"
#include "support/op_test_util.h"

using namespace grist;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = GRIST_E2E_MODELS;
const char* kHowToMake = "run `make test`, or `ninja -C build e2e_models` after `make oracle`";

struct RealModel {
  const char* name;
  // Ops grist does not implement yet, per opset 13 / 17 (18, 17's export upgraded, takes 17's): the model must be
  // refused naming exactly these.
  // When they land the test turns red: empty the list and the model is compared in full. (MobileNet V3
  // waited here for HardSigmoid at opset 13 and HardSwish at 17 until they landed on main.)
  std::vector<std::string> pending13, pending17;
  // Elementwise |grist − reference| <= atol + 1e-5·|reference| for the output, against PyTorch and against
  // ONNX Runtime; for the gradients against PyTorch's too unless `elementwise_grads` is false.
  double out_atol = 1e-6;
  bool elementwise_grads = true;
  const char* why = "";  // the reason for anything wider
};

// The deep convolutional networks: each output is a float32 sum of up to 4,608 products (3×3×512) per layer,
// 18 to 53 layers deep, and a weight gradient sums over every position of its layer. PyTorch and ONNX Runtime
// differ from each other by up to 5.5e-6 on outputs of order one (the "[ e2e ]" lines), and PyTorch's own
// weight gradients are up to 1.6e-5 of their largest element from float64's, so 1e-5 relative elementwise
// measures the order of summation, not correctness. Their gradients are held to float64 (kFloat64*) instead
// of to PyTorch's float32 elementwise, and the outputs of ResNet-18, MobileNet V2 and ShuffleNet to 1e-5
// absolute (SqueezeNet's and MobileNet V3's hold 1e-6).
constexpr const char* kDeepSums =
    "(float32 sums in a different order: PyTorch and ONNX Runtime differ by as much; held to float64 instead)";

std::vector<RealModel> models() {
  return {
      {"resnet18", {}, {}, 1e-5, false, kDeepSums},
      {"mobilenet_v2", {}, {}, 1e-5, false, kDeepSums},
      {"squeezenet1_1", {}, {}, 1e-6, false, kDeepSums},
      {"shufflenet_v2_x0_5", {}, {}, 1e-5, false, kDeepSums},
      {"mobilenet_v3_small", {}, {}, 1e-6, false, kDeepSums},
      {"transformer_encoder", {}, {}},
      {"lstm_classifier", {}, {}},
      {"gru_classifier", {}, {}},
      {"convnext_block", {}, {}},
  };
}

// Every model, every tensor (output, input gradient, each weight gradient) against PyTorch's float64 values:
// grist's largest error at most kFloat64Ratio times PyTorch's own float32 error (or kRoundingFloor of the
// tensor's largest element where PyTorch's is smaller), and at most kFloat64Normwise of that largest element.
// The floor is four float32 ulps at the largest element: a sum below that is rounding in any order, and a smaller
// error of PyTorch's is the luck of its kernel's order, which changes with the CPU it runs on. With a floor of
// 1e-7 (under one ulp) SqueezeNet's features.3.squeeze weight gradient failed on a re-export on another VM
// (2026-12-02): grist 6.3e-7 of its largest element (7 ulps), PyTorch 1.5e-7 (ratio 4.2), where an earlier
// machine's export had given 2.5. Measured with this floor: a worst ratio of 2.1 (ResNet-18), and a worst
// normwise error of 1.8e-5 (MobileNet V2).
constexpr double kFloat64Ratio = 4.0;
constexpr double kRoundingFloor = 4.0 * 0x1p-23;
constexpr double kFloat64Normwise = 5e-5;

struct Param {
  RealModel model;
  int opset;
  std::string case_name() const { return std::string(model.name) + "_op" + std::to_string(opset); }
  const std::vector<std::string>& pending() const { return opset == 13 ? model.pending13 : model.pending17; }
};
void PrintTo(const Param& p, std::ostream* os) { *os << p.case_name(); }

std::vector<Param> params() {
  std::vector<Param> out;
  for (const RealModel& m : models())
    for (int opset : {13, 17, 18}) out.push_back({m, opset});  // 18: 17's export upgraded (export_real_models.py)
  return out;
}

// The worst elementwise |a − e| / (atol + rtol·|e|) (≤ 1 passes), with the absolute difference there and the
// largest |e|, for the report lines.
struct Diff {
  double ratio = 0, max_abs = 0, max_ref = 0;
  void add(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
    for (int64_t i = 0; i < expected.numel() && i < actual.numel(); ++i) {
      double e = expected.get_as_double(i), a = actual.get_as_double(i), d = std::fabs(a - e);
      if (std::isnan(e) && std::isnan(a)) continue;
      max_abs = std::max(max_abs, d);
      max_ref = std::max(max_ref, std::fabs(e));
      ratio = std::max(ratio, d / (atol + rtol * std::fabs(e)));
    }
  }
};

const Tensor& entry(const NamedTensors& all, const std::string& key) {
  for (const auto& [k, t] : all)
    if (k == key) return t;
  static const Tensor none;
  ADD_FAILURE() << "no " << key << " in the reference";
  return none;
}

class RealModels : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kDir / "ort.json")) << kDir << " has no exported models: " << kHowToMake;
    graph_ = import_onnx_file((kDir / (GetParam().case_name() + ".onnx")).string());
    ASSERT_TRUE(graph_.is_ok()) << graph_.message();
  }

  // Fails unless the model is refused exactly for its pending ops; true when the caller should stop there.
  bool refused_for_pending_ops() {
    const auto& pending = GetParam().pending();
    Status st = check_ops_supported(*graph_);
    if (pending.empty()) {
      EXPECT_TRUE(st.is_ok()) << st.message();
      return !st.is_ok();
    }
    std::string names;
    for (const auto& p : pending) names += (names.empty() ? "" : ", ") + p;
    if (st.is_ok()) {
      ADD_FAILURE() << GetParam().case_name() << " now loads: " << names
                    << " landed; empty its pending ops in real_models_test.cpp so it is compared in full";
      return true;
    }
    // "unsupported op: HardSwish (nodes)" or "unsupported ops: HardSigmoid (...); HardSwish (...)": each
    // pending op named, and no other op.
    const std::string& msg = st.message();
    EXPECT_EQ(msg.rfind(pending.size() > 1 ? "unsupported ops: " : "unsupported op: ", 0), 0u) << msg;
    for (const auto& p : pending) EXPECT_NE(msg.find(p + " ("), std::string::npos) << msg;
    EXPECT_EQ(std::count(msg.begin(), msg.end(), ';'), static_cast<long>(pending.size()) - 1) << msg;
    std::printf("[ e2e ] %s: not yet supported, refused with \"%s...\"\n", GetParam().case_name().c_str(),
                msg.substr(0, msg.find(" (")).c_str());
    return true;
  }

  Result<Executor> run_forward(const NamedTensors& expected, bool release_dead_values = false) {
    ExecutorOptions opts;
    opts.dropout_training = false;  // PyTorch's reference ran in eval mode
    opts.release_dead_values = release_dead_values;
    auto ex = Executor::create(*graph_, opts);
    if (!ex.is_ok()) return ex;
    for (const auto& [key, t] : expected)
      if (key.rfind("input:", 0) == 0)
        if (Status st = ex->set_input(key.substr(6), t); !st.is_ok()) return Error{key + ": " + st.message()};
    if (Status st = ex->forward(); !st.is_ok()) return Error{st.message()};
    return ex;
  }

  Result<NamedTensors> expected() {
    return read_npz((kDir / (GetParam().case_name() + ".expected.npz")).string());
  }

  Result<Graph> graph_ = Error{"not imported"};
};

// Per tensor: the largest |grist − float64| and |PyTorch float32 − float64|, relative to max |float64|.
struct Float64Errors {
  double grist = 0, torch = 0, worst_ratio = 0;
  std::string worst;
  void add(const std::string& key, const Tensor& exact, const Tensor& torch32, const Tensor& ours) {
    double scale = 0, eg = 0, et = 0;
    for (int64_t i = 0; i < exact.numel(); ++i) scale = std::max(scale, std::fabs(exact.get_as_double(i)));
    for (int64_t i = 0; i < exact.numel() && i < ours.numel(); ++i) {
      eg = std::max(eg, std::fabs(ours.get_as_double(i) - exact.get_as_double(i)));
      et = std::max(et, std::fabs(torch32.get_as_double(i) - exact.get_as_double(i)));
    }
    if (scale == 0) return;
    EXPECT_LE(eg, kFloat64Ratio * std::max(et, kRoundingFloor * scale))
        << key << ": grist is " << eg << " from float64, PyTorch's float32 " << et << " (largest |value| " << scale << ")";
    EXPECT_LE(eg, kFloat64Normwise * scale) << key << ": grist is " << eg << " from float64, largest |value| " << scale;
    grist = std::max(grist, eg / scale);
    torch = std::max(torch, et / scale);
    double r = eg / std::max(et, kRoundingFloor * scale);
    if (r > worst_ratio) worst_ratio = r, worst = key;
  }
};

TEST_P(RealModels, OutputsAndGradientsMatchPyTorch) {
  const Param& p = GetParam();
  if (refused_for_pending_ops()) return;
  auto exp = expected();
  ASSERT_TRUE(exp.is_ok()) << exp.message();
  auto ex = run_forward(*exp);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  EXPECT_FALSE(ex->forward_event().found) << ex->forward_event().describe();

  ValueId y = graph_->find_value("y");
  ASSERT_NE(y, kNoValue);
  const Tensor& want = entry(*exp, "output:y");
  EXPECT_TRUE(grist::testing::tensors_close(want, ex->value(y), 1e-5, p.model.out_atol))
      << p.case_name() << " output y " << p.model.why;
  Diff out;
  out.add(want, ex->value(y), 1e-5, p.model.out_atol);
  Float64Errors f64_out, f64_grads;
  f64_out.add("output:y", entry(*exp, "f64:output:y"), want, ex->value(y));

  ASSERT_TRUE(ex->backward(y).is_ok());
  Diff input_grad, weight_grad;
  int grads = 0;
  for (const auto& [key, t] : *exp) {
    if (key.rfind("grad:", 0) != 0) continue;
    ValueId id = graph_->find_value(key.substr(5));
    ASSERT_NE(id, kNoValue) << p.case_name() << ": PyTorch's parameter " << key << " is not in the graph";
    const Tensor* grad = ex->grad(id);
    ASSERT_NE(grad, nullptr) << p.case_name() << ": no gradient reached " << key;
    if (p.model.elementwise_grads) {
      EXPECT_TRUE(grist::testing::tensors_close(t, *grad, 1e-5, 1e-6)) << p.case_name() << " " << key;
    }
    (key == "grad:x" ? input_grad : weight_grad).add(t, *grad, 1e-5, 1e-6);
    f64_grads.add(key, entry(*exp, "f64:" + key), t, *grad);
    ++grads;
  }
  EXPECT_GT(grads, 1);
  std::printf("[ e2e ] %s vs PyTorch: output max|d| %.2e (max|y| %.2f, %.2f of tolerance); d/dx max|d| %.2e "
              "(%.2f of 1e-5/1e-6); %d weight gradients max|d| %.2e (%.2f of 1e-5/1e-6)\n",
              p.case_name().c_str(), out.max_abs, out.max_ref, out.ratio, input_grad.max_abs, input_grad.ratio,
              grads - 1, weight_grad.max_abs, weight_grad.ratio);
  std::printf("[ e2e ] %s vs float64, relative to each tensor's max: output grist %.2e PyTorch %.2e; gradients "
              "grist %.2e PyTorch %.2e; worst grist/PyTorch %.2f (%s)\n",
              p.case_name().c_str(), f64_out.grist, f64_out.torch, f64_grads.grist, f64_grads.torch,
              std::max(f64_out.worst_ratio, f64_grads.worst_ratio),
              (f64_grads.worst_ratio > f64_out.worst_ratio ? f64_grads.worst : f64_out.worst).c_str());
}

TEST_P(RealModels, ForwardMatchesOnnxRuntime) {
  const Param& p = GetParam();
  if (refused_for_pending_ops()) return;
  auto exp = expected();
  ASSERT_TRUE(exp.is_ok()) << exp.message();
  auto ort = read_npy((kDir / (p.case_name() + ".ort.y.npy")).string());
  ASSERT_TRUE(ort.is_ok()) << ort.message() << " (" << kHowToMake << ")";
  auto ex = run_forward(*exp);
  ASSERT_TRUE(ex.is_ok()) << ex.message();
  ValueId y = graph_->find_value("y");
  ASSERT_NE(y, kNoValue);
  EXPECT_TRUE(grist::testing::tensors_close(*ort, ex->value(y), 1e-5, p.model.out_atol))
      << p.case_name() << " output y against ONNX Runtime " << p.model.why;
  Diff d, torch_vs_ort;
  d.add(*ort, ex->value(y), 1e-5, p.model.out_atol);
  torch_vs_ort.add(*ort, entry(*exp, "output:y"), 1e-5, p.model.out_atol);
  std::printf("[ e2e ] %s vs ONNX Runtime: max|d| %.2e (%.2f of tolerance); PyTorch vs ONNX Runtime %.2e\n",
              p.case_name().c_str(), d.max_abs, d.ratio, torch_vs_ort.max_abs);
}

// grist run's forward-only pass frees each activation after its last use: the same output, bit for bit, with
// only the graph outputs still held (and what constant folding keeps).
TEST_P(RealModels, FreeingDeadActivationsKeepsTheOutput) {
  const Param& p = GetParam();
  if (refused_for_pending_ops()) return;
  auto exp = expected();
  ASSERT_TRUE(exp.is_ok()) << exp.message();
  auto full = run_forward(*exp);
  ASSERT_TRUE(full.is_ok()) << full.message();
  auto freed = run_forward(*exp, true);
  ASSERT_TRUE(freed.is_ok()) << freed.message();
  ValueId y = graph_->find_value("y");
  ASSERT_NE(y, kNoValue);
  const Tensor& a = full->value(y);
  const Tensor& b = freed->value(y);
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.get_as_double(i), b.get_as_double(i)) << p.case_name() << " at " << i;
  // Held: the float values but the Constants' (constant folding keeps those and the small shape values).
  int64_t held = 0, intermediates = 0;
  for (ValueId id = 0; id < static_cast<ValueId>(graph_->values.size()); ++id) {
    const Value& v = graph_->value(id);
    if (v.kind != ValueKind::Intermediate) continue;
    ++intermediates;
    const Tensor& t = freed->value(id);
    const bool foldable =
        !is_float(t.dtype()) || graph_->nodes[static_cast<size_t>(v.producer)].op_type == "Constant";
    held += t.defined() && !foldable;
  }
  EXPECT_EQ(held, static_cast<int64_t>(graph_->outputs.size())) << p.case_name() << ": of " << intermediates;
  EXPECT_FALSE(freed->backward(y).is_ok());
}

INSTANTIATE_TEST_SUITE_P(E2e, RealModels, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) { return info.param.case_name(); });

// The whole set ran through the oracle: a model ONNX Runtime skipped cannot read as a pass.
TEST(RealModelsOracle, OnnxRuntimeRanEveryCase) {
  for (const Param& p : params())
    EXPECT_TRUE(fs::exists(kDir / (p.case_name() + ".ort.y.npy"))) << p.case_name() << ": " << kHowToMake;
}

}  // namespace

// Constant folding (graph/constant_folding.h): a second pass runs only what depends on the data, with outputs and
// every gradient bit for bit those of the unfolded graph. Prints the nodes each pass runs for docs/PERFORMANCE.md.
TEST_P(RealModels, FoldedShapeArithmeticKeepsOutputsAndGradientsBitForBit) {
  const Param& p = GetParam();
  if (refused_for_pending_ops()) return;
  auto exp = expected();
  ASSERT_TRUE(exp.is_ok()) << exp.message();
  ValueId y = graph_->find_value("y");
  ASSERT_NE(y, kNoValue);
  std::vector<Executor> runs;
  runs.reserve(2);
  for (bool fold : {true, false}) {
    ExecutorOptions opts;
    opts.dropout_training = false;
    opts.fold_constants = fold;
    auto ex = Executor::create(*graph_, opts);
    ASSERT_TRUE(ex.is_ok()) << ex.message();
    // The second pass gets other float inputs, so that a value kept from the first pass where it should have
    // been recomputed shows in the outputs and gradients.
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& [key, t] : *exp)
        if (key.rfind("input:", 0) == 0) {
          Tensor x = t;
          if (pass == 1 && x.dtype() == DType::Float32)
            for (float& v : x.span<float>()) v *= -0.75f;
          ASSERT_TRUE(ex->set_input(key.substr(6), x).is_ok()) << key;
        }
      ASSERT_TRUE(ex->forward().is_ok());
      ASSERT_TRUE(ex->backward(y).is_ok());
    }
    runs.push_back(std::move(ex).value());
  }
  const Executor &folded = runs[0], &plain = runs[1];
  auto same = [&](const Tensor& a, const Tensor& b, const std::string& what) {
    ASSERT_EQ(a.shape(), b.shape()) << what;
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.get_as_double(i), b.get_as_double(i)) << what << " at " << i;
  };
  same(plain.value(y), folded.value(y), "output y");
  int grads = 0;
  for (ValueId id : graph_->initializers)
    if (plain.grad(id)) {
      ASSERT_NE(folded.grad(id), nullptr) << graph_->value(id).name;
      same(*plain.grad(id), *folded.grad(id), "gradient of " + graph_->value(id).name);
      ++grads;
    }
  for (ValueId id : graph_->inputs) {
    if (!is_float(plain.value(id).dtype())) continue;  // token ids have no gradient
    ASSERT_NE(plain.grad(id), nullptr) << graph_->value(id).name;
    ASSERT_NE(folded.grad(id), nullptr) << graph_->value(id).name;
    same(*plain.grad(id), *folded.grad(id), "gradient of " + graph_->value(id).name);
  }
  EXPECT_GT(grads, 0);
  const bool has_shape_arithmetic = std::any_of(graph_->nodes.begin(), graph_->nodes.end(),
                                                [](const Node& n) { return n.op_type == "Shape"; });
  EXPECT_EQ(plain.nodes_run(), graph_->nodes.size());
  if (has_shape_arithmetic) {
    EXPECT_LT(folded.nodes_run(), graph_->nodes.size()) << p.case_name();
  }
  std::printf("[ e2e ] %s: %zu nodes, %zu run in a pass after the first with folding\n", p.case_name().c_str(),
              graph_->nodes.size(), folded.nodes_run());
}
