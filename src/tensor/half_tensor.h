// Tensor-wide passes between the half types and float32: the executor's widening of half operands and
// rounding of float32 results (tensor/half.h has the element conversions).
#pragma once

#include "tensor/half.h"
#include "tensor/tensor.h"

namespace grist {

// A float16/bfloat16 tensor's values as float32, exactly.
void widen_half(const Tensor& src, Tensor& dst);
// Rounds float32 `wide` to the half type `to` into `dst`, and `wide` in place to the same values, so both
// hold what the half format holds (round to nearest even, overflow to ±inf).
void narrow_to_half(Tensor& wide, DType to, Tensor& dst);
// acc += g, both of one half type, each sum computed in float32 and rounded once (a gradient accumulation).
void add_in_half(const Tensor& g, Tensor& acc);

}  // namespace grist
