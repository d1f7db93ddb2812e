#include "fix/catalogue.h"

#include <cmath>

#include <fmt/format.h>

namespace grist {

namespace {

// The constants, and whose they are (docs/FIX.md): where a framework has one for the same purpose it is used
// first; bigger ones follow only for a model whose values need them (a divisor's numerator so large that
// a / 1e-7 overflows), and the report says which one the proof took.
const std::vector<RepairEntry> kCatalogue = {
    {RepairKind::LogSoftmax,
     "log-softmax",
     "log(softmax(x)) → LogSoftmax(x)",
     "Log(Softmax(x, axis)) → LogSoftmax(x, axis)",
     "torch.log_softmax(x, dim) (F.log_softmax)",
     "tf.nn.log_softmax(x, axis)",
     "",
     {}},
    {RepairKind::SoftmaxCrossEntropy,
     "softmax-cross-entropy",
     "hand-written softmax cross-entropy −Σ y·log(softmax(z)) → its log-sum-exp form",
     "Log(Softmax(z, axis)) → LogSoftmax(z, axis) = z − log Σ exp(z), the Mul by the labels and the sum kept",
     "F.cross_entropy(z, target) (class indices or probabilities), or -(y * F.log_softmax(z, dim)).sum(dim)",
     "tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=z)",
     "",
     {}},
    {RepairKind::LogSumExpForm,
     "log-sum-exp-form",
     "log(exp(x) / Σexp(x)) → x − logsumexp(x)",
     "Log(Div(Exp(x), ReduceSum(Exp(x), axes))) → Sub(x, ReduceLogSumExp(x, axes, keepdims=1))",
     "x - torch.logsumexp(x, dim, keepdim=True) (F.log_softmax(x, dim))",
     "x - tf.reduce_logsumexp(x, axis, keepdims=True) (tf.nn.log_softmax)",
     "",
     {}},
    {RepairKind::LogSigmoid,
     "log-sigmoid",
     "log(sigmoid(x)) → −softplus(−x)",
     "Log(Sigmoid(x)) → Neg(Softplus(Neg(x)))",
     "F.logsigmoid(x), or F.binary_cross_entropy_with_logits(x, y) for the whole loss",
     "tf.math.log_sigmoid(x), or tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x)",
     "",
     {}},
    {RepairKind::LogOneMinusSigmoid,
     "log-one-minus-sigmoid",
     "log(1 − sigmoid(x)) → −softplus(x)",
     "Log(Sub(1, Sigmoid(x))) → Neg(Softplus(x))",
     "-F.softplus(x) (= F.logsigmoid(-x)), or F.binary_cross_entropy_with_logits(x, y) for the whole loss",
     "-tf.math.softplus(x) (= tf.math.log_sigmoid(-x)), or tf.nn.sigmoid_cross_entropy_with_logits",
     "",
     {}},
    {RepairKind::LogSumExp,
     "log-sum-exp",
     "log(Σexp(x)) → logsumexp(x)",
     "Log(ReduceSum(Exp(x), axes)) → ReduceLogSumExp(x, axes)",
     "torch.logsumexp(x, dim)",
     "tf.reduce_logsumexp(x, axis)",
     "",
     {}},
    {RepairKind::Softplus,
     "softplus",
     "log(1 + exp(x)) → softplus(x)",
     "Log(Add(1, Exp(x))) → Softplus(x)",
     "F.softplus(x)",
     "tf.math.softplus(x)",
     "",
     {}},
    {RepairKind::StableSoftmax,
     "stable-softmax",
     "exp(x) / Σexp(x) → softmax(x) (maximum subtracted first)",
     "Div(Exp(x), ReduceSum(Exp(x), [axis])) → Softmax(x, axis)",
     "torch.softmax(x, dim)",
     "tf.nn.softmax(x, axis)",
     "",
     {}},
    {RepairKind::SqrtOfExp,
     "sqrt-of-exp",
     "sqrt(exp(x)) → exp(x / 2)",
     "Sqrt(Exp(x)) → Exp(Mul(x, 0.5))",
     "torch.exp(0.5 * x)",
     "tf.exp(0.5 * x)",
     "",
     {}},
    {RepairKind::NormGuard,
     "norm-guard",
     "x / ‖x‖ → x / max(‖x‖, ε)",
     "Div(x, ReduceL2(x)) → Div(x, Max(ReduceL2(x), ε))",
     "F.normalize(x, p=2, dim=dim, eps=ε)",
     "tf.math.l2_normalize(x, axis) (its epsilon bounds the squared norm: ε² = 1e-24 for the same guard)",
     "ε = 1e-12, PyTorch's F.normalize default",
     {1e-12, 1e-7, 1e-5}},
    {RepairKind::DivisorGuard,
     "divisor-guard",
     "a / d → a / d kept at least ε away from 0 (sign preserved)",
     "Div(a, d) → Div(Mul(a, s), Max(Abs(d), ε)) with s = Where(GreaterOrEqual(d, 0), 1, −1) (a / d' for "
     "d' = s·max(|d|, ε)); Div(a, Max(d, ε)) when the scan proves d ≥ 0",
     "a * torch.where(d >= 0, 1.0, -1.0) / d.abs().clamp(min=eps) (a / d.clamp(min=eps) for d ≥ 0)",
     "a * tf.where(d >= 0, 1.0, -1.0) / tf.maximum(tf.abs(d), eps) (a / tf.maximum(d, eps) for d ≥ 0)",
     "ε = 1e-7, Keras' backend.epsilon() (then 1e-5, PyTorch's norm eps, and 1e-3, Keras' BatchNormalization "
     "epsilon, where a / 1e-7 could overflow)",
     {1e-7, 1e-5, 1e-3}},
    {RepairKind::LogClamp,
     "log-clamp",
     "log(x) → log(max(x, 1e-37))",
     "Log(x) → Log(Max(x, tiny))",
     "torch.log(x.clamp(min=1e-37))",
     "tf.math.log(tf.maximum(x, 1e-37))",
     "tiny = the float32 just above 1e-37, DEBAR's and RANUM's danger threshold (log(tiny) ≈ −85.2; PyTorch's "
     "BCELoss clamps its logs at −100 for the same reason)",
     {}},
    {RepairKind::SqrtClamp,
     "sqrt-clamp",
     "sqrt(x) → sqrt(max(x, 1e-37))",
     "Sqrt(x) → Sqrt(Max(x, tiny))",
     "torch.sqrt(x.clamp(min=1e-37))",
     "tf.sqrt(tf.maximum(x, 1e-37))",
     "tiny = the float32 just above 1e-37, DEBAR's and RANUM's threshold: sqrt′(tiny) = 0.5/√tiny ≈ 1.6e18 is "
     "finite, where sqrt′(0) is not",
     {}},
    {RepairKind::ExpClamp,
     "exp-clamp",
     "exp(x) → exp(min(x, limit))",
     "Exp(x) → Exp(Min(x, limit))",
     "torch.exp(x.clamp(max=limit))",
     "tf.exp(tf.minimum(x, limit))",
     "limit = 87, below DEBAR's and RANUM's 87.5 ≈ ln(1e38) (the clamp the study's own VAEs use); 80, 60, 40 "
     "or 20 where a sum of the results would overflow float32",
     {87, 80, 60, 40, 20}},
    {RepairKind::PowBaseGuard,
     "pow-base-guard",
     "pow(x, e) → pow(x kept away from 0, e)",
     "Pow(x, e) → Pow(Max(Abs(x), ε), e), times s = Where(GreaterOrEqual(x, 0), 1, −1) for an odd e; "
     "Pow(Max(x, ε), e) for a fractional e or x ≥ 0",
     "x.abs().clamp(min=eps) ** e * torch.where(x >= 0, 1.0, -1.0) (odd e); x.clamp(min=eps) ** e (fractional e)",
     "tf.maximum(tf.abs(x), eps) ** e * tf.where(x >= 0, 1.0, -1.0) (odd e); tf.maximum(x, eps) ** e (fractional e)",
     "ε = 1e-7, Keras' backend.epsilon() (then 1e-5 and 1e-3 where ε^e would overflow)",
     {1e-7, 1e-5, 1e-3}},
    {RepairKind::PowBaseBound,
     "pow-base-bound",
     "pow(x, e) → pow(clip(x, −c, c), e) with c^e < FLT_MAX",
     "Pow(x, e) → Pow(Clip(x, −c, c), e)",
     "torch.pow(x.clamp(-c, c), e)",
     "tf.pow(tf.clip_by_value(x, -c, c), e)",
     "c = (FLT_MAX / 2)^(1/e) for the model's constant exponent e",
     {}},
    {RepairKind::LogitsClamp,
     "logits-clamp",
     "log_softmax(x) → log_softmax(clip(x, −c, c))",
     "LogSoftmax(x) → LogSoftmax(Clip(x, −c, c))",
     "F.log_softmax(x.clamp(-c, c), dim)",
     "tf.nn.log_softmax(tf.clip_by_value(x, -c, c), axis)",
     "c = 1e38, so that the spread 2c stays below FLT_MAX (then 1e18 and 1e6 where a sum of the results overflows)",
     {1e38, 1e18, 1e6}},
    {RepairKind::KeepFloat32,
     "keep-in-float32",
     "compute the op in float32 in a half-precision run (autocast's custom_fwd, .float())",
     "Cast(x, to=FLOAT) → op … (the ops after it until the value is back in the format's range) → "
     "Cast(to=FLOAT), the op and the first Cast listed in the model's metadata_props grist.keep_float32 (onnxconverter-common's "
     "node_block_list); in float32 the Casts are identities",
     "with torch.autocast(device_type, enabled=False): y = f(x.float()); then y.half() (or "
     "@torch.cuda.amp.custom_fwd(cast_inputs=torch.float32) on the module's forward)",
     "y = tf.cast(f(tf.cast(x, tf.float32)), x.dtype) (a Keras layer: dtype='float32' under mixed_float16)",
     "",
     {1, 2, 3, 4}},
    {RepairKind::HalfEpsilon,
     "half-epsilon",
     "v + ε → v + 1e-5 where float16 flushes ε (1e-8 rounds to 0, 1e-7 to a subnormal)",
     "Add(v, ε) → Add(v, 1e-5)",
     "eps=1e-5 (torch.nn.LayerNorm's and BatchNorm's default) instead of 1e-8",
     "epsilon=1e-5 instead of 1e-8 (tf.keras.layers.LayerNormalization's default is 1e-3)",
     "ε = 1e-5, PyTorch's norm eps: float16's smallest subnormal is 6e-8, so 1e-8 rounds to 0, while 1e-5 is held "
     "to 0.14 % (a subnormal: its smallest normal is 6.1e-5); then 1e-3, Keras' BatchNormalization epsilon",
     {1e-5, 1e-3}},
    {RepairKind::LossWeights,
     "loss-weights",
     "a mean loss over zero total weight: no graph repair",
     "NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss (reduction mean): none that keeps the loss's meaning",
     "make sure every batch has a target that is not ignore_index and not weighted 0, or use reduction='sum'",
     "the same: tf.reduce_sum of the per-sample losses, or a batch with a target of non-zero weight",
     "",
     {},
     false},
    {RepairKind::RangeDelta,
     "range-delta",
     "Range with a zero step: no graph repair",
     "Range(start, limit, delta)",
     "check the step is non-zero before torch.arange",
     "check the step is non-zero before tf.range",
     "",
     {},
     false},
};

}  // namespace

std::vector<double> repair_values(RepairKind kind, DType format) {
  if (format == DType::Float16) {
    switch (kind) {
      case RepairKind::NormGuard:
      case RepairKind::DivisorGuard:
      case RepairKind::PowBaseGuard:
      case RepairKind::HalfEpsilon:
        return {1e-5, 1e-3};
      case RepairKind::LogClamp:
      case RepairKind::SqrtClamp:
        return {1e-5, 1e-4};
      case RepairKind::ExpClamp:
        return {11, 10, 8, 6};
      case RepairKind::LogitsClamp:
        return {3e4, 1e4, 1e3};
      default:
        break;
    }
  }
  return repair_entry(kind).values;
}

std::string_view repair_values_note(RepairKind kind, DType format) {
  if (format == DType::BFloat16) {
    if (kind == RepairKind::HalfEpsilon) return "bfloat16 has float32's exponent range: it flushes no ε above 1.2e-38";
    return "";
  }
  if (format != DType::Float16) return "";
  switch (kind) {
    case RepairKind::NormGuard:
    case RepairKind::DivisorGuard:
    case RepairKind::PowBaseGuard:
      return "float16: ε = 1e-5 (PyTorch's norm eps; a float16 subnormal, held to 0.14 %), then 1e-3: float32's "
             "1e-12 rounds to 0 in float16 and 1e-7 to two subnormal steps (1.2e-7), and a / 1e-7 passes 65504 once "
             "|a| > 0.0078; hardware that flushes float16 subnormals flushes 1e-5 too (smallest normal 6.1e-5)";
    case RepairKind::LogClamp:
    case RepairKind::SqrtClamp:
      return "float16: tiny = 1e-5, then 1e-4: 1e-37 rounds to 0 in float16";
    case RepairKind::ExpClamp:
      return "float16: limit 11 below ln 65504 ≈ 11.09, then 10, 8, 6 where a sum of the results would overflow";
    case RepairKind::LogitsClamp:
      return "float16: c = 3e4, so that the spread 2c stays below 65504 (then 1e4, 1e3)";
    default:
      return "";
  }
}

std::span<const RepairEntry> repair_catalogue() { return kCatalogue; }

const RepairEntry& repair_entry(RepairKind kind) { return kCatalogue[static_cast<size_t>(kind)]; }

std::string repair_hint(RepairKind kind) {
  const RepairEntry& e = repair_entry(kind);
  if (!e.graph_repair) return std::string(e.pytorch);
  return fmt::format("{}: PyTorch {}; TensorFlow {}", e.title, e.pytorch, e.tensorflow);
}

double clamp_tiny() {
  // The float32 nearest 1e-37 lies below it; the next one up is the first the scan's "≤ 1e-37" lets through.
  float t = static_cast<float>(kDangerTiny);
  while (static_cast<double>(t) <= kDangerTiny) t = std::nextafter(t, 1.0f);
  return static_cast<double>(t);
}

}  // namespace grist
