#include "analysis/format_rounding.h"

#include <cmath>
#include <memory>

#include "engine/precision.h"
#include "tensor/half.h"

namespace grist {

namespace {

// The run rounds a float32 result: the float32 values nearest the double bound on its outer side, rounded to
// the format. Rounding to nearest is monotone, so the outer float32 neighbours bound every rounded value.
float float_at_or_below(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafterf(f, -INFINITY);
  return f;
}
float float_at_or_above(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafterf(f, INFINITY);
  return f;
}
double rounded(float f, DType format) {
  return format == DType::Float16 ? half_bits_to_float(float_to_half_bits(f))
                                  : bfloat16_bits_to_float(float_to_bfloat16_bits(f));
}

}  // namespace

Interval round_interval_to_format(Interval i, DType format) {
  if (format != DType::Float16 && format != DType::BFloat16) return i;
  Interval r = i;
  if (!std::isnan(i.lo) && i.lo != -kInf) r.lo = rounded(float_at_or_below(i.lo), format);
  if (!std::isnan(i.hi) && i.hi != kInf) r.hi = rounded(float_at_or_above(i.hi), format);
  return r;
}

void round_to_format(IntervalTensor& t, DType format) {
  // A value the graph declares no type for may be bounded as float64 or Undefined: the caller (values_in_format)
  // picks float32 and undeclared values only, and those the run computes in float32.
  // A value stored in the format (a float16 model's) is rounded to it as the engine rounds its results.
  if ((t.dtype != DType::Float32 && t.dtype != DType::Float64 && t.dtype != DType::Undefined && t.dtype != format) ||
      (format != DType::Float16 && format != DType::BFloat16))
    return;
  for (size_t k = 0; k < t.lo.size(); ++k) {
    const Interval r = round_interval_to_format({t.lo[k], t.hi[k]}, format);
    t.lo[k] = r.lo;
    t.hi[k] = r.hi;
  }
  if (t.exact && t.exact->dtype() == DType::Float32) {
    Tensor copy;
    copy.copy_from(*t.exact);
    round_to_format(format, copy);
    t.exact = std::make_shared<const Tensor>(std::move(copy));
  }
}

}  // namespace grist
