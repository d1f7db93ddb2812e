// The scan under a 16-bit precision: an op's float32 interval rounded to the format as the run rounds its
// result (round to nearest even, monotone, so rounding both bounds keeps every rounded value inside).
#pragma once

#include "ops/interval_tensor.h"

namespace grist {

// The bounds of a float32 value x in [lo, hi] once rounded to `format` (Float16 or BFloat16): every rounded
// value lies in the result. Beyond the format's max (65520 and above in float16) a bound becomes ±inf.
Interval round_interval_to_format(Interval i, DType format);
// Every bound of `t`, and its exact value if any, rounded to `format`; other than float ones are left as
// they are (the caller picks the values the run rounds), but those stored in `format` itself are rounded too.
void round_to_format(IntervalTensor& t, DType format);

}  // namespace grist
