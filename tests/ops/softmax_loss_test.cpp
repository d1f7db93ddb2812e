// Softmax, LogSoftmax, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: the exact float32 IEEE
// behaviour the product hunts for (underflow to 0, NaN rows, 0/0 loss means), the opset-dependent axis
// semantics, gradients against finite differences, and error paths.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include <gtest/gtest.h>

#include "support/onnx_reference.h"
#include "support/op_test_util.h"

namespace grist {
namespace {

using testing::allocations_after_first_pass;
using testing::BackwardFrom;
using testing::attr_int;
using testing::attr_string;
using testing::expect_gradient_matches;
using testing::GradCheckOptions;
using testing::node_spec;
using testing::NodeSpec;
using testing::random_tensor;
using testing::run_node;
using testing::tensors_close;
using testing::try_run_node;

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- Softmax / LogSoftmax ------------------------------------------------------------------

TEST(Softmax, Float32EntryUnderflowsToExactlyZeroBeyondTheDenormalRange) {
  // exp(-104) is below the smallest float32 denormal (~1.4e-45); exp(-100) ≈ 3.7e-44 is a kept denormal.
  auto y = run_node(node_spec("Softmax"), {Tensor::from<float>(Shape{2, 2}, {0, -104, 0, -100})});
  const float* p = y[0].data<float>();
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_GT(p[3], 0.0f);
  EXPECT_LT(p[3], std::numeric_limits<float>::min());
}

TEST(LogSoftmax, StaysFiniteWhereTheLogOfSoftmaxWouldBeMinusInf) {
  auto y = run_node(node_spec("LogSoftmax"), {Tensor::from<float>(Shape{2}, {0, -200})});
  EXPECT_EQ(y[0].data<float>()[0], 0.0f);
  EXPECT_EQ(y[0].data<float>()[1], -200.0f);
}

TEST(Softmax, SubtractsTheRowMaxSoLargeInputsDoNotOverflow) {
  auto y = run_node(node_spec("Softmax"), {Tensor::from<float>(Shape{2}, {1000, 1000})});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2}, {0.5f, 0.5f}), y[0]));
}

TEST(Softmax, RowOfMinusInfinityIsNaNAsInPyTorch) {
  auto y = run_node(node_spec("Softmax"), {Tensor::from<float>(Shape{2}, {-kInf, -kInf})});
  EXPECT_TRUE(std::isnan(y[0].data<float>()[0]));
  auto logy = run_node(node_spec("LogSoftmax"), {Tensor::from<float>(Shape{2}, {-kInf, 0})});
  EXPECT_EQ(logy[0].data<float>()[0], -kInf);
  EXPECT_EQ(logy[0].data<float>()[1], 0.0f);
}

TEST(Softmax, Opset13NormalisesAlongTheAxisOnly) {
  // axis 0 of a 2x2: each column sums to 1.
  auto y = run_node(node_spec("Softmax", {{"axis", attr_int(0)}}), {Tensor::from<float>(Shape{2, 2}, {0, 0, 0, 0})});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 2}, {0.5f, 0.5f, 0.5f, 0.5f}), y[0]));
}

TEST(Softmax, BeforeOpset13TheAxisFlattensTheInputTo2D) {
  // axis 0 coerces [2, 2] to [1, 4]: one softmax over all four entries.
  auto y = run_node(node_spec("Softmax", {{"axis", attr_int(0)}}, 1, 11), {Tensor::from<float>(Shape{2, 2}, {0, 0, 0, 0})});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2, 2}, {0.25f, 0.25f, 0.25f, 0.25f}), y[0]));
  // The default axis is 1 there: [2, 3, 2] → [2, 6].
  Tensor zeros;
  zeros.resize_zero(DType::Float32, Shape{2, 3, 2});
  auto z = run_node(node_spec("Softmax", {}, 1, 11), {zeros});
  for (int64_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(z[0].data<float>()[i], 1.0f / 6);
}

TEST(Softmax, RejectsAnAxisOutOfRange) {
  EXPECT_FALSE(try_run_node(node_spec("Softmax", {{"axis", attr_int(2)}}), {Tensor(DType::Float32, Shape{2, 2})}).is_ok());
  EXPECT_FALSE(try_run_node(node_spec("LogSoftmax", {{"axis", attr_int(-3)}}), {Tensor(DType::Float32, Shape{2, 2})}).is_ok());
}

struct SoftmaxCase {
  int64_t axis;
  int opset;
};
const SoftmaxCase kSoftmaxCases[] = {{0, 13}, {1, 13}, {-1, 13}, {2, 13}, {0, 11}, {1, 11}, {2, 11}, {-1, 9}};

void check_softmax_gradients(const std::string& op) {
  Rng rng(21);
  for (const auto& c : kSoftmaxCases) {
    SCOPED_TRACE(::testing::Message() << op << " axis=" << c.axis << " opset=" << c.opset);
    expect_gradient_matches(node_spec(op, {{"axis", attr_int(c.axis)}}, 1, c.opset),
                            {random_tensor(rng, Shape{2, 3, 4}, -3, 3)});
  }
}

TEST(SoftmaxGradient, EveryAxisAndOpsetForm) { check_softmax_gradients("Softmax"); }
TEST(LogSoftmaxGradient, EveryAxisAndOpsetForm) { check_softmax_gradients("LogSoftmax"); }

// Rows along the last axis take their own loop (a row's max and sum in registers); along axis 0 of the transposed
// tensor the same rows are columns of the general kernel. Both must give the same bits, forward and backward, with
// rows holding -inf, +inf, NaN and a 100-wide spread (entries that underflow to 0).
template <class T>
void expect_last_axis_rows_match_the_general_kernel(const std::string& op) {
  constexpr int64_t rows = 7, n = 5;
  Rng rng(44);
  std::vector<T> x(rows * n);
  for (T& v : x) v = static_cast<T>(rng.uniform(-3, 3));
  x[1 * n + 2] = -std::numeric_limits<T>::infinity();
  x[2 * n + 0] = std::numeric_limits<T>::infinity();
  x[3 * n + 4] = std::numeric_limits<T>::quiet_NaN();
  x[4 * n + 1] = T(-100);
  for (int64_t k = 0; k < n; ++k) x[5 * n + k] = -std::numeric_limits<T>::infinity();
  std::vector<T> xt(rows * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) xt[k * rows + r] = x[r * n + k];
  const auto tensor = [](Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), shape);
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  };
  const Tensor by_rows = tensor(Shape{rows, n}, x), by_columns = tensor(Shape{n, rows}, xt);
  const NodeSpec last = node_spec(op), first = node_spec(op, {{"axis", attr_int(0)}});
  using testing::gradients_of;
  const std::vector<Tensor> pairs[][2] = {{run_node(last, {by_rows}), run_node(first, {by_columns})},
                                          {gradients_of(last, {by_rows}), gradients_of(first, {by_columns})}};
  for (const auto& pair : pairs) {
    ASSERT_EQ(pair[0].size(), 1u);
    ASSERT_EQ(pair[1].size(), 1u);
    const T* a = pair[0][0].template data<T>();
    const T* b = pair[1][0].template data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < n; ++k) {
        const T u = a[r * n + k], v = b[k * rows + r];
        EXPECT_TRUE((std::isnan(u) && std::isnan(v)) || std::memcmp(&u, &v, sizeof(T)) == 0)
            << op << " row " << r << " entry " << k << ": " << u << " against " << v;
      }
  }
}

TEST(Softmax, LastAxisRowsGiveTheGeneralKernelsBits) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    expect_last_axis_rows_match_the_general_kernel<float>(op);
    expect_last_axis_rows_match_the_general_kernel<double>(op);
  }
}

// ---- NegativeLogLikelihoodLoss -------------------------------------------------------------

// input [2, 3] of log-probabilities; targets {2, 0}; weights {1, 2, 3}.
const Tensor kLogProb = Tensor::from<float>(Shape{2, 3}, {-1, -2, -3, -4, -5, -6});
const Tensor kTarget = Tensor::from<int64_t>(Shape{2}, {2, 0});
const Tensor kWeight = Tensor::from<float>(Shape{3}, {1, 2, 3});

NodeSpec nll(const std::string& reduction, std::vector<std::pair<std::string, Attribute>> extra = {}) {
  extra.push_back({"reduction", attr_string(reduction)});
  return node_spec("NegativeLogLikelihoodLoss", std::move(extra));
}

TEST(NegativeLogLikelihoodLoss, ReductionsWithoutWeights) {
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2}, {3, 4}), run_node(nll("none"), {kLogProb, kTarget})[0]));
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(7), run_node(nll("sum"), {kLogProb, kTarget})[0]));
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(3.5f), run_node(nll("mean"), {kLogProb, kTarget})[0]));
}

TEST(NegativeLogLikelihoodLoss, WeightedMeanDividesByTheTargetsTotalWeight) {
  // (3·3 + 1·4) / (3 + 1)
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(13.0f / 4), run_node(nll("mean"), {kLogProb, kTarget, kWeight})[0]));
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2}, {9, 4}), run_node(nll("none"), {kLogProb, kTarget, kWeight})[0]));
}

TEST(NegativeLogLikelihoodLoss, IgnoredTargetsCountNeitherInTheSumNorInTheMean) {
  auto spec = nll("mean", {{"ignore_index", attr_int(0)}});
  EXPECT_TRUE(tensors_close(Tensor::scalar<float>(3), run_node(spec, {kLogProb, kTarget})[0]));
  auto none = nll("none", {{"ignore_index", attr_int(0)}});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{2}, {3, 0}), run_node(none, {kLogProb, kTarget})[0]));
}

TEST(NegativeLogLikelihoodLoss, MeanOverZeroTotalWeightIsNaN) {
  const Tensor ignored = Tensor::from<int64_t>(Shape{2}, {-1, -1});
  auto all_ignored = run_node(nll("mean", {{"ignore_index", attr_int(-1)}}), {kLogProb, ignored});
  EXPECT_TRUE(std::isnan(all_ignored[0].data<float>()[0]));
  const Tensor zero_weight = Tensor::from<float>(Shape{3}, {0, 0, 0});
  auto weightless = run_node(nll("mean"), {kLogProb, kTarget, zero_weight});
  EXPECT_TRUE(std::isnan(weightless[0].data<float>()[0]));
}

TEST(NegativeLogLikelihoodLoss, HigherDimensionalInputAndInt32Targets) {
  // input [1, 2, 2]: classes along dim 1, two positions.
  const Tensor x = Tensor::from<float>(Shape{1, 2, 2}, {-1, -2, -3, -4});
  const Tensor t = Tensor::from<int32_t>(Shape{1, 2}, {1, 0});
  EXPECT_TRUE(tensors_close(Tensor::from<float>(Shape{1, 2}, {3, 2}), run_node(nll("none"), {x, t})[0]));
}

TEST(NegativeLogLikelihoodLoss, RejectsBadTargetsShapesAndAttributes) {
  EXPECT_FALSE(try_run_node(nll("mean"), {kLogProb, Tensor::from<int64_t>(Shape{2}, {3, 0})}).is_ok());
  EXPECT_FALSE(try_run_node(nll("mean"), {kLogProb, Tensor::from<int64_t>(Shape{2}, {-1, 0})}).is_ok());
  EXPECT_FALSE(try_run_node(nll("mean"), {kLogProb, Tensor::from<int64_t>(Shape{3}, {0, 0, 0})}).is_ok());
  EXPECT_FALSE(try_run_node(nll("mean"), {kLogProb, Tensor::from<float>(Shape{2}, {0, 0})}).is_ok());
  EXPECT_FALSE(try_run_node(nll("mean"), {kLogProb, kTarget, Tensor::from<float>(Shape{2}, {1, 1})}).is_ok());
  EXPECT_FALSE(try_run_node(nll("average"), {kLogProb, kTarget}).is_ok());
}

struct LossCase {
  std::string reduction;
  bool weighted;
  bool ignore;
};
const LossCase kLossCases[] = {{"none", false, false}, {"sum", false, false}, {"mean", false, false},
                               {"none", true, false},  {"sum", true, true},   {"mean", true, false},
                               {"mean", true, true},   {"mean", false, true}};

// Gradients w.r.t. the scores for input [3, 4, 2, 2] (classes on dim 1) with targets that include the
// ignored class 1 when `ignore` is set.
void check_loss_gradients(const std::string& op, int num_outputs) {
  Rng rng(31);
  Tensor target(DType::Int64, Shape{3, 2, 2});
  for (int64_t i = 0; i < target.numel(); ++i) target.data<int64_t>()[i] = i % 4;
  const Tensor weight = random_tensor(rng, Shape{4}, 0.5, 2);
  for (const auto& c : kLossCases) {
    SCOPED_TRACE(::testing::Message() << op << " " << c.reduction << " weighted=" << c.weighted
                                      << " ignore=" << c.ignore);
    std::vector<std::pair<std::string, Attribute>> attrs{{"reduction", attr_string(c.reduction)}};
    if (c.ignore) attrs.push_back({"ignore_index", attr_int(1)});
    NodeSpec spec = node_spec(op, attrs);
    spec.num_outputs = num_outputs;
    std::vector<Tensor> inputs{random_tensor(rng, Shape{3, 4, 2, 2}, -3, 3), target};
    if (c.weighted) inputs.push_back(weight);
    GradCheckOptions opts;
    opts.wrt = {0};
    expect_gradient_matches(spec, inputs, opts);
  }
}

TEST(NegativeLogLikelihoodLossGradient, EveryReductionWithWeightsAndIgnoreIndex) {
  check_loss_gradients("NegativeLogLikelihoodLoss", 1);
}

TEST(NegativeLogLikelihoodLossGradient, ZeroTotalWeightGivesNaNLikePyTorch) {
  // Weight 0 on every target: the mean is 0/0 and its gradient 0·(−dy/0) = NaN at each target.
  const Tensor x = Tensor::from<double>(Shape{1, 2}, {-1, -2});
  const Tensor t = Tensor::from<int64_t>(Shape{1}, {0});
  const Tensor w = Tensor::from<double>(Shape{2}, {0, 1});
  const std::vector<Tensor> grads = testing::gradients_of(nll("mean"), {x, t, w});
  ASSERT_FALSE(grads.empty());
  ASSERT_TRUE(grads[0].defined());
  EXPECT_TRUE(std::isnan(grads[0].data<double>()[0]));
  EXPECT_EQ(grads[0].data<double>()[1], 0.0);
}

// ---- SoftmaxCrossEntropyLoss ---------------------------------------------------------------

TEST(SoftmaxCrossEntropyLoss, EqualsNllOfLogSoftmaxAndReturnsLogProb) {
  const Tensor scores = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 0, -1, 5});
  const Tensor labels = Tensor::from<int64_t>(Shape{2}, {0, 2});
  NodeSpec spec = node_spec("SoftmaxCrossEntropyLoss", {{"reduction", attr_string("sum")}});
  spec.num_outputs = 2;
  auto out = run_node(spec, {scores, labels, kWeight});
  auto logp = run_node(node_spec("LogSoftmax", {{"axis", attr_int(1)}}), {scores});
  EXPECT_TRUE(tensors_close(logp[0], out[1]));
  auto loss = run_node(nll("sum"), {logp[0], labels, kWeight});
  EXPECT_TRUE(tensors_close(loss[0], out[0]));
}

TEST(SoftmaxCrossEntropyLoss, HugeLogitGapGivesAFiniteLoss) {
  // log(softmax) would be log(0) = -inf; the fused log-softmax keeps the loss at exactly 200.
  const Tensor scores = Tensor::from<float>(Shape{1, 2}, {200, 0});
  auto out = run_node(node_spec("SoftmaxCrossEntropyLoss"), {scores, Tensor::from<int64_t>(Shape{1}, {1})});
  EXPECT_EQ(out[0].data<float>()[0], 200.0f);
}

TEST(SoftmaxCrossEntropyLoss, RejectsLabelsOutOfRange) {
  const Tensor scores = Tensor::from<float>(Shape{1, 2}, {0, 0});
  EXPECT_FALSE(try_run_node(node_spec("SoftmaxCrossEntropyLoss"), {scores, Tensor::from<int64_t>(Shape{1}, {2})}).is_ok());
}

// Every case of the ONNX project's own reference data for the fused op (not the _expanded forms, which
// rebuild it from other ops): means with class weights and ignore_index, 1-D to 5-D spatial targets, the
// optional log_prob output. 34 cases in Debian 12's libonnx-testdata, all of which must run and pass; the
// same for NegativeLogLikelihoodLoss's 18.
void expect_every_reference_case_passes(const std::string& prefix, int cases) {
  namespace fs = std::filesystem;
  const fs::path dir = testing::onnx_node_test_dir();
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " missing: install libonnx-testdata";
  int passed = 0, outputs = 0;
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find("_expanded") == std::string::npos) found.push_back(e.path());
  }
  for (const fs::path& p : found) {
    const testing::ReferenceCase c = testing::run_reference_case(p);
    EXPECT_EQ(c.outcome, testing::ReferenceCase::Outcome::Passed) << p.filename().string() << ": " << c.message;
    if (c.outcome == testing::ReferenceCase::Outcome::Passed) ++passed, outputs += c.outputs;
  }
  std::printf("%s*: %d of %zu ONNX reference cases pass (%d outputs compared)\n", prefix.c_str(), passed,
              found.size(), outputs);
  EXPECT_EQ(static_cast<int>(found.size()), cases);
}

TEST(SoftmaxCrossEntropyLoss, MatchesEveryOnnxReferenceCase) { expect_every_reference_case_passes("test_sce_", 34); }

TEST(NegativeLogLikelihoodLoss, MatchesEveryOnnxReferenceCase) {
  expect_every_reference_case_passes("test_nllloss_", 18);
}

TEST(SoftmaxCrossEntropyLossGradient, LossOutputOnly) { check_loss_gradients("SoftmaxCrossEntropyLoss", 1); }

TEST(SoftmaxCrossEntropyLossGradient, LossAndLogProbOutputs) { check_loss_gradients("SoftmaxCrossEntropyLoss", 2); }

// ---- Steady state ---------------------------------------------------------------------------

TEST(SoftmaxAndLosses, RepeatedPassesAllocateNoTensorBuffers) {
  Rng rng(41);
  const Tensor scores = random_tensor(rng, Shape{3, 4, 5}, -2, 2);
  Tensor target(DType::Int64, Shape{3, 5});
  for (int64_t i = 0; i < target.numel(); ++i) target.data<int64_t>()[i] = i % 4;
  struct Case {
    NodeSpec spec;
    std::vector<Tensor> inputs;
  };
  NodeSpec sce_both = node_spec("SoftmaxCrossEntropyLoss");
  sce_both.num_outputs = 2;
  const Case cases[] = {{node_spec("Softmax", {{"axis", attr_int(1)}}), {scores}},
                        {node_spec("LogSoftmax"), {scores}},
                        {nll("mean"), {scores, target}},
                        {node_spec("SoftmaxCrossEntropyLoss"), {scores, target}},
                        {sce_both, {scores, target}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec.op_type);
    EXPECT_EQ(0u, allocations_after_first_pass(c.spec, c.inputs, BackwardFrom::FirstOutput, /*extra_passes=*/2));
  }
}

}  // namespace
}  // namespace grist
