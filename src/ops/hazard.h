// The hazard entry of an op's record: how the op can turn finite inputs into NaN/Inf, and the GRIST
// objective whose minimum is that failure (GRIST.md §2). Ops list their entries in their family file.
// Each failure kind carries its danger test (the interval condition `grist scan` checks) and each objective
// its evaluation (what `grist hunt` descends), in the two tables of hazard.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "ops/interval_tensor.h"
#include "tensor/tensor.h"

namespace grist {

enum class Failure {
  LogOfNonPositive,     // log(v), v ≤ 0: −inf at 0, NaN below
  DivisionByZero,       // a / v, v = 0: ±inf or NaN
  SqrtOfNegative,       // sqrt(v), v < 0: NaN (its gradient at 0 is +inf)
  ExpOverflow,          // exp(v), v > 88.72 in float32: +inf
  PowZeroToNegative,    // pow(0, e < 0): inf
  PowNegativeToFraction,// pow(v < 0, non-integer e): NaN
  PowOverflow,          // pow(v, e > 1) beyond FLT_MAX: inf
  LogSoftmaxSpread,     // log_softmax with a gap beyond the float range: −inf
  LossZeroDenominator,  // NLL / cross-entropy mean over zero total weight: 0/0
  RangeZeroDelta,       // Range with delta 0: an endless sequence
  // Under a 16-bit precision (engine/precision.h), besides the float32 kinds above:
  HalfOverflow,         // the result, rounded to the format, passes its largest finite value: ±inf
  HalfUnderflow,        // a divisor / log / sqrt operand, rounded to the format, flushes to 0
};

// The objective templates, each reduced over ALL elements of the operand v (batch and features).
enum class Objective {
  MinAbs,          // min |v|            (log, division, reciprocal: v → 0)
  MinAbsOneMinus,  // min |1 − v|        (log(1 − v): v → 1)
  NegMax,          // −max v             (exp overflow: v → +large)
  Max,             // max v              (softmax denominator Σexp(v) → 0: every v → −large)
  Min,             // min v              (sqrt of a negative: no abs)
  NegSpread,       // −(max v − min v)   (log_softmax's gap)
  NegMaxAbs,       // −max |v|           (a result overflowing a 16-bit format: |v| → its max)
  None,            // not reachable by stepping data (labels, weights, constants only)
};

struct HazardSpec {
  int operand = 0;             // the input the condition is on
  Failure failure = Failure::LogOfNonPositive;
  Objective objective = Objective::MinAbs;
  std::string_view condition;  // for reports, e.g. "input ≤ 0"
  std::string_view fix_hint;   // the generic fix; patterns in analysis/hazards refine it
  // Whether the hazard can happen at this node at all (e.g. Pow with a constant positive whole exponent
  // cannot divide by zero); null: always.
  bool (*applies)(const Graph&, const Node&) = nullptr;
};

// What a danger test sees: the hazard's operand and the node's other inputs and outputs as intervals
// (nullptr where omitted).
struct DangerContext {
  const Node& node;
  const IntervalTensor& operand;
  std::span<const IntervalTensor* const> inputs;
  std::span<const IntervalTensor* const> outputs;

  // The 16-bit format the values are rounded to (Float16, BFloat16), Undefined for float32: the danger zones
  // are the format's own (fp16's exp overflows above ln 65504 ≈ 11.09, its values flush below 2^-24).
  DType format = DType::Undefined;

  const IntervalTensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const IntervalTensor* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
};

struct FailureKind {
  Failure failure;
  std::string_view id;      // "log-of-non-positive": stable, no spaces (SARIF rule ids)
  std::string_view name;    // "log of a non-positive value", for people
  std::string_view danger;  // the danger zone the scan checks, for reports: "≤ 1e-37"
  // Whether the intervals meet the danger zone (an operand that may be NaN always does).
  bool (*meets_danger)(const DangerContext&);
};
const FailureKind& failure_kind(Failure f);

// The danger thresholds of a format (Undefined: float32's, those of DEBAR): the largest finite value, the
// magnitude below which an operand is "near zero" (float32 1e-37, float16 its smallest subnormal 2^-24), and
// the exp argument beyond which a few summed terms overflow (float32 87.5, float16 ln 65504 ≈ 11.09).
struct FormatLimits {
  double max = 0;
  double tiny = 0;
  double exp_danger = 0;
};
FormatLimits format_limits(DType format);
// The danger zone of a failure kind in a format, for reports: "≥ 11.09 = ln 65504 (float16)".
std::string danger_in_format(Failure f, DType format);

std::string_view failure_name(Failure f);
std::string_view failure_id(Failure f);

struct ObjectiveValue {
  double value = 0;
  int64_t index = -1;  // the element holding the extremum, -1 when v has no finite element
};

struct ObjectiveKind {
  Objective objective;
  std::string_view name;  // "min|v|"
  // The objective's value on v and its gradient dO/dv written into `seed`, shaped like v (one-hot at the
  // extremum, sign included). Float tensors only.
  ObjectiveValue (*evaluate)(const Tensor& v, Tensor& seed);
};
const ObjectiveKind& objective_kind(Objective o);

std::string_view objective_name(Objective o);
inline ObjectiveValue evaluate_objective(Objective o, const Tensor& v, Tensor& seed) {
  return objective_kind(o).evaluate(v, seed);
}

}  // namespace grist
