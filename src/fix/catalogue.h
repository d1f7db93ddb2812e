// The catalogue of graph repairs: for every way an op can fail, the numerically stable form frameworks already
// offer (or a guard), in ONNX terms and in the PyTorch and TensorFlow calls to write instead, with the constant
// it uses and where that constant comes from. `grist fix` applies these; `grist hunt` and `grist scan` print
// their hints, so the three never disagree.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace grist {

enum class RepairKind {
  LogSoftmax,           // log(softmax(x)) → LogSoftmax(x)
  SoftmaxCrossEntropy,  // −Σ y·log(softmax(z)) → −Σ y·LogSoftmax(z) (the loss's log-sum-exp form)
  LogSumExpForm,        // log(exp(x) / Σexp(x)) → x − ReduceLogSumExp(x)
  LogSigmoid,           // log(sigmoid(x)) → −Softplus(−x)
  LogOneMinusSigmoid,   // log(1 − sigmoid(x)) → −Softplus(x)
  LogSumExp,            // log(Σexp(x)) → ReduceLogSumExp(x)
  Softplus,             // log(1 + exp(x)) → Softplus(x)
  StableSoftmax,        // exp(x) / Σexp(x) → Softmax(x), which subtracts the maximum first
  SqrtOfExp,            // sqrt(exp(x)) → exp(x / 2)
  NormGuard,            // x / ‖x‖ → x / max(‖x‖, ε)
  DivisorGuard,         // a / d → a / (d kept at least ε away from 0, sign preserved)
  LogClamp,             // log(x) → log(max(x, tiny))
  SqrtClamp,            // sqrt(x) → sqrt(max(x, tiny))
  ExpClamp,             // exp(x) → exp(min(x, limit))
  PowBaseGuard,         // pow(x, e) → pow(x kept away from 0 (and from negatives for a fractional e), e)
  PowBaseBound,         // pow(x, e) → pow(clip(x, −c, c), e) for a power that overflows
  LogitsClamp,          // LogSoftmax(x) → LogSoftmax(clip(x, −c, c)) when the spread leaves the float range
  KeepFloat32,          // half precision: the op (and the ops after it until the value is back in range) in float32
  HalfEpsilon,          // half precision: v + ε with an ε the format flushes → v + 1e-5
  LossWeights,          // a mean loss over zero total weight: no graph repair, the data must change
  RangeDelta,           // Range with a zero step: no graph repair
};

struct RepairEntry {
  RepairKind kind;
  std::string_view id;          // "log-softmax": stable across versions, used in JSON and SARIF
  std::string_view title;       // "log(softmax(x)) → LogSoftmax(x)"
  std::string_view onnx;        // the rewrite in ONNX terms
  std::string_view pytorch;     // what to write instead in PyTorch
  std::string_view tensorflow;  // ... and in TensorFlow
  std::string_view constant;    // the ε or limit and whose it is; empty when the form needs none
  std::vector<double> values;   // the constant's candidates, preferred (closest to the original) first
  bool graph_repair = true;     // false: advice only (no rewrite keeps the model's meaning)
};

// The constant's candidates in a 16-bit format (Float16, BFloat16; Undefined: float32's, `values`), preferred
// first, and why they differ from float32's (empty when they do not).
std::vector<double> repair_values(RepairKind kind, DType format);
std::string_view repair_values_note(RepairKind kind, DType format);

// Every entry, in RepairKind order.
std::span<const RepairEntry> repair_catalogue();
const RepairEntry& repair_entry(RepairKind kind);

// The one-line hint `grist hunt` and `grist scan` print for a repair: what to use instead, in both frameworks.
std::string repair_hint(RepairKind kind);

// DEBAR's and RANUM's danger threshold for Log and Sqrt operands and divisors, and the clamp value above it: the
// smallest float32 above 1e-37 (a clamp exactly at 1e-37 would still meet the scan's "≤ 1e-37").
constexpr double kDangerTiny = 1e-37;
double clamp_tiny();

}  // namespace grist
