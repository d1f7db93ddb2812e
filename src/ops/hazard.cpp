#include "ops/hazard.h"

namespace grist {

std::string_view failure_name(Failure f) {
  switch (f) {
    case Failure::LogOfNonPositive: return "log of a non-positive value";
    case Failure::DivisionByZero: return "division by zero";
    case Failure::SqrtOfNegative: return "square root of a negative value";
    case Failure::ExpOverflow: return "exp overflow";
    case Failure::PowZeroToNegative: return "zero to a negative power";
    case Failure::PowNegativeToFraction: return "negative base to a fractional power";
    case Failure::PowOverflow: return "power beyond the float range";
    case Failure::LogSoftmaxSpread: return "log-softmax gap beyond the float range";
    case Failure::LossZeroDenominator: return "loss mean over zero total weight";
    case Failure::RangeZeroDelta: return "Range with a zero step";
  }
  return "?";
}

std::string_view failure_id(Failure f) {
  switch (f) {
    case Failure::LogOfNonPositive: return "log-of-non-positive";
    case Failure::DivisionByZero: return "division-by-zero";
    case Failure::SqrtOfNegative: return "sqrt-of-negative";
    case Failure::ExpOverflow: return "exp-overflow";
    case Failure::PowZeroToNegative: return "pow-zero-to-negative";
    case Failure::PowNegativeToFraction: return "pow-negative-to-fraction";
    case Failure::PowOverflow: return "pow-overflow";
    case Failure::LogSoftmaxSpread: return "log-softmax-spread";
    case Failure::LossZeroDenominator: return "loss-zero-denominator";
    case Failure::RangeZeroDelta: return "range-zero-delta";
  }
  return "unknown";
}

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::MinAbs: return "min|v|";
    case Objective::MinAbsOneMinus: return "min|1 - v|";
    case Objective::NegMax: return "-max(v)";
    case Objective::Max: return "max(v)";
    case Objective::Min: return "min(v)";
    case Objective::NegSpread: return "-(max(v) - min(v))";
    case Objective::None: return "none";
  }
  return "?";
}

}  // namespace grist
