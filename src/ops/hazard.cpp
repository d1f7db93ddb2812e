#include "ops/hazard.h"

#include <cfloat>
#include <cmath>
#include <limits>

namespace grist {

namespace {

// The danger zones of DEBAR and RANUM (PEERS.md), which grist shares: an operand this close to the pole
// fails in the forward pass or in its derivative (sqrt′(0) = ∞, log′(v) = 1/v, a quotient by a denormal),
// and exp this close to its limit overflows as soon as a few such terms are summed.
constexpr double kTiny = 1e-37;
constexpr double kExpDanger = 87.5;  // ≈ ln(1e38); expf overflows above 88.72
// float16: 65504 = (2 − 2^-10)·2^15, its smallest subnormal 2^-24, and ln 65504 (exp overflows past it).
constexpr double kHalfMax = 65504;
constexpr double kHalfTiny = 5.9604644775390625e-08;
constexpr double kHalfExpDanger = 11.089866488461016;
constexpr double kBFloat16Max = 3.3895313892515355e38;  // (2 − 2^-7)·2^127

bool all_whole(const IntervalTensor& t) {
  if (!t.exact) return t.hull().lo == t.hull().hi && std::floor(t.hull().lo) == t.hull().lo;
  for (int64_t i = 0; i < t.exact->numel(); ++i) {
    double v = t.exact->get_as_double(i);
    if (v != std::floor(v)) return false;
  }
  return true;
}

bool near_zero_or_below(const DangerContext& c) { return c.operand.hull().lo <= format_limits(c.format).tiny; }
bool near_zero(const DangerContext& c) {
  const Interval h = c.operand.hull();
  const double tiny = format_limits(c.format).tiny;
  return h.lo <= tiny && h.hi >= -tiny;
}
bool near_exp_limit(const DangerContext& c) { return c.operand.hull().hi >= format_limits(c.format).exp_danger; }
// The operand (here the op's result) may pass the format's largest finite value: rounding makes it ±inf.
bool beyond_format_max(const DangerContext& c) {
  const Interval h = c.operand.hull();
  const double max = format_limits(c.format).max;
  return c.operand.may_be_nan || !(std::fabs(h.lo) <= max && std::fabs(h.hi) <= max);
}
// A zero base with an exponent that may be negative (Pow's input 1; none given: any exponent).
bool zero_to_negative(const DangerContext& c) {
  const IntervalTensor* e = c.input(1);
  return c.operand.hull().contains(0) && (!e || e->may_be_nan || e->hull().lo < 0);
}
bool negative_to_fraction(const DangerContext& c) {
  const IntervalTensor* e = c.input(1);
  return c.operand.hull().lo < 0 && (!e || e->may_be_nan || !all_whole(*e));
}
// The result itself leaves the float range (the operands alone cannot tell).
bool result_beyond_float(const DangerContext& c) {
  const IntervalTensor* y = c.output(0);
  if (!y) return true;
  const Interval yh = y->hull();
  return y->may_be_nan || !(std::fabs(yh.lo) <= FLT_MAX && std::fabs(yh.hi) <= FLT_MAX);
}
bool spread_beyond_float(const DangerContext& c) {
  const Interval h = c.operand.hull();
  return !(h.hi - h.lo < FLT_MAX);
}
bool result_may_be_nan(const DangerContext& c) { return !c.output(0) || c.output(0)->may_be_nan; }
bool contains_zero(const DangerContext& c) { return c.operand.hull().contains(0); }

constexpr FailureKind kFailures[] = {
    {Failure::LogOfNonPositive, "log-of-non-positive", "log of a non-positive value", "≤ 1e-37", near_zero_or_below},
    {Failure::DivisionByZero, "division-by-zero", "division by zero", "[-1e-37, 1e-37]", near_zero},
    {Failure::SqrtOfNegative, "sqrt-of-negative", "square root of a negative value",
     "≤ 1e-37 (< 0, or an infinite derivative at 0)", near_zero_or_below},
    {Failure::ExpOverflow, "exp-overflow", "exp overflow", "≥ 87.5", near_exp_limit},
    {Failure::PowZeroToNegative, "pow-zero-to-negative", "zero to a negative power", "∋ 0 with exponent < 0",
     zero_to_negative},
    {Failure::PowNegativeToFraction, "pow-negative-to-fraction", "negative base to a fractional power",
     "< 0 with a fractional exponent", negative_to_fraction},
    {Failure::PowOverflow, "pow-overflow", "power beyond the float range", "a power beyond FLT_MAX",
     result_beyond_float},
    {Failure::LogSoftmaxSpread, "log-softmax-spread", "log-softmax gap beyond the float range", "spread > FLT_MAX",
     spread_beyond_float},
    {Failure::LossZeroDenominator, "loss-zero-denominator", "loss mean over zero total weight", "total weight = 0",
     result_may_be_nan},
    {Failure::RangeZeroDelta, "range-zero-delta", "Range with a zero step", "∋ 0", contains_zero},
    {Failure::HalfOverflow, "half-overflow", "result beyond the 16-bit format's range",
     "|result| > the format's max (65504 in float16)", beyond_format_max},
    {Failure::HalfUnderflow, "half-underflow", "operand flushed to zero by the 16-bit format",
     "[-tiny, tiny] (2^-24 in float16)", near_zero},
};

// ---- objectives: each reduces over ALL elements of v and seeds dO/dv at the extremum ------------------

template <class T, class Key>
std::pair<double, int64_t> extremum(const Tensor& v, Key key, bool want_max) {
  const T* p = v.data<T>();
  double best = want_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  int64_t at = -1;
  for (int64_t i = 0; i < v.numel(); ++i) {
    const double k = key(static_cast<double>(p[i]));
    if (std::isnan(k)) continue;
    if (at < 0 || (want_max ? k > best : k < best)) {
      best = k;
      at = i;
    }
  }
  return {best, at};
}

double sign_of(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

// Runs f<T>(v, seed) for v's float type, with `seed` zeroed and shaped like v.
template <template <class> class F>
ObjectiveValue typed(const Tensor& v, Tensor& seed) {
  ObjectiveValue r;
  if (v.dtype() == DType::Float16 || v.dtype() == DType::BFloat16) {
    // A value the model stores in 16 bits: the objective on its float32 widening (exact), and the seed (0, ±1,
    // exact in the format) in the value's own type, as its backward expects.
    Tensor wide, wide_seed;
    cast_tensor(v, DType::Float32, wide);
    r = typed<F>(wide, wide_seed);
    cast_tensor(wide_seed, v.dtype(), seed);
    return r;
  }
  seed.resize_zero(v.dtype(), v.shape());
  dispatch_float(v.dtype(), [&](auto tag) { r = F<decltype(tag)>::run(v, seed.data<decltype(tag)>()); });
  return r;
}

template <class T>
struct MinAbs {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return std::fabs(x); }, false);
    if (at >= 0) s[at] = static_cast<T>(sign_of(static_cast<double>(v.data<T>()[at])));
    return {best, at};
  }
};
template <class T>
struct MinAbsOneMinus {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return std::fabs(1.0 - x); }, false);
    if (at >= 0) s[at] = static_cast<T>(-sign_of(1.0 - static_cast<double>(v.data<T>()[at])));
    return {best, at};
  }
};
template <class T>
struct NegMax {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return x; }, true);
    if (at >= 0) s[at] = T(-1);
    return {-best, at};
  }
};
template <class T>
struct Max {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return x; }, true);
    if (at >= 0) s[at] = T(1);
    return {best, at};
  }
};
template <class T>
struct Min {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return x; }, false);
    if (at >= 0) s[at] = T(1);
    return {best, at};
  }
};
template <class T>
struct NegSpread {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [hi, at_hi] = extremum<T>(v, [](double x) { return x; }, true);
    auto [lo, at_lo] = extremum<T>(v, [](double x) { return x; }, false);
    if (at_hi >= 0 && at_lo >= 0 && at_hi != at_lo) {
      s[at_hi] = T(-1);
      s[at_lo] = T(1);
    }
    return {-(hi - lo), at_hi};
  }
};
template <class T>
struct NegMaxAbs {
  static ObjectiveValue run(const Tensor& v, T* s) {
    auto [best, at] = extremum<T>(v, [](double x) { return std::fabs(x); }, true);
    if (at >= 0) s[at] = static_cast<T>(-sign_of(static_cast<double>(v.data<T>()[at])));
    return {-best, at};
  }
};
ObjectiveValue no_objective(const Tensor& v, Tensor& seed) {
  seed.resize_zero(v.dtype(), v.shape());
  return {};
}

constexpr ObjectiveKind kObjectives[] = {
    {Objective::MinAbs, "min|v|", typed<MinAbs>},
    {Objective::MinAbsOneMinus, "min|1 - v|", typed<MinAbsOneMinus>},
    {Objective::NegMax, "-max(v)", typed<NegMax>},
    {Objective::Max, "max(v)", typed<Max>},
    {Objective::Min, "min(v)", typed<Min>},
    {Objective::NegSpread, "-(max(v) - min(v))", typed<NegSpread>},
    {Objective::NegMaxAbs, "-max|v|", typed<NegMaxAbs>},
    {Objective::None, "none", no_objective},
};

}  // namespace

const FailureKind& failure_kind(Failure f) {
  for (const FailureKind& k : kFailures)
    if (k.failure == f) return k;
  return kFailures[0];  // unreachable: the table lists every Failure (tests/ops/hazard_test.cpp)
}

FormatLimits format_limits(DType format) {
  if (format == DType::Float16) return {kHalfMax, kHalfTiny, kHalfExpDanger};
  if (format == DType::BFloat16) return {kBFloat16Max, kTiny, kExpDanger};
  return {FLT_MAX, kTiny, kExpDanger};
}

std::string danger_in_format(Failure f, DType format) {
  const std::string_view generic = failure_kind(f).danger;
  if (format != DType::Float16 && format != DType::BFloat16) return std::string(generic);
  const bool half = format == DType::Float16;
  switch (f) {
    case Failure::LogOfNonPositive: return half ? "≤ 2^-24 (float16)" : "≤ 1e-37 (bfloat16)";
    case Failure::DivisionByZero:
    case Failure::HalfUnderflow: return half ? "[-2^-24, 2^-24] (float16)" : "[-1e-37, 1e-37] (bfloat16)";
    case Failure::SqrtOfNegative: return half ? "≤ 2^-24 (float16)" : "≤ 1e-37 (bfloat16)";
    case Failure::ExpOverflow: return half ? "≥ 11.09 = ln 65504 (float16)" : "≥ 87.5 (bfloat16)";
    case Failure::HalfOverflow: return half ? "|result| > 65504 (float16)" : "|result| > 3.39e38 (bfloat16)";
    default: return std::string(generic);
  }
}

std::string_view failure_name(Failure f) { return failure_kind(f).name; }
std::string_view failure_id(Failure f) { return failure_kind(f).id; }

const ObjectiveKind& objective_kind(Objective o) {
  for (const ObjectiveKind& k : kObjectives)
    if (k.objective == o) return k;
  return kObjectives[0];  // unreachable: the table lists every Objective (tests/ops/hazard_test.cpp)
}

std::string_view objective_name(Objective o) { return objective_kind(o).name; }

}  // namespace grist
