// The hazard entry of an op's record: how the op can turn finite inputs into NaN/Inf, and the GRIST
// objective whose minimum is that failure (GRIST.md §2). Ops list their entries in their family file.
#pragma once

#include <string_view>

#include "graph/graph.h"

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
};

// The objective templates, each reduced over ALL elements of the operand v (batch and features).
enum class Objective {
  MinAbs,          // min |v|            (log, division, reciprocal: v → 0)
  MinAbsOneMinus,  // min |1 − v|        (log(1 − v): v → 1)
  NegMax,          // −max v             (exp overflow: v → +large)
  Max,             // max v              (softmax denominator Σexp(v) → 0: every v → −large)
  Min,             // min v              (sqrt of a negative: no abs)
  NegSpread,       // −(max v − min v)   (log_softmax's gap)
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

std::string_view failure_name(Failure f);  // "log of a non-positive value", for people
std::string_view failure_id(Failure f);    // "log-of-non-positive": stable, no spaces (SARIF rule ids)
std::string_view objective_name(Objective o);

}  // namespace grist
