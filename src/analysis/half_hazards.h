// The hazards a 16-bit precision adds to the float32 catalogue (issue 16): every op whose result is rounded to
// the format and can pass its largest value (matmul, conv, sums, Mul, Pow, Exp), and every divisor, log or
// sqrt operand rounded to it that can flush to 0 — each with its GRIST objective.
#pragma once

#include <vector>

#include "analysis/hazards.h"
#include "engine/precision.h"

namespace grist {

// Per value: whether a run in precision `p` holds the format's values there — every float value in fp16/bf16;
// in amp-* those autocast computes in the format (a static mirror of the executor's rules, engine/autocast.h).
std::vector<bool> values_in_format(const Graph& g, Precision p);

// Per value: the 16-bit type the model stores it in (Float16, BFloat16; Undefined otherwise) — its declared
// type, or for a result without one (no shape inference), its Cast's `to`, else the type of its node's float
// inputs when they all agree on one.
std::vector<DType> stored_formats(const Graph& g);

// Per value: the 16-bit format a run in precision `p` holds it in (Undefined: float32, or not a float) — the
// precision's where values_in_format says so, and a value the model stores as float16 or bfloat16 (a `.half()`
// export) its own, at any precision: the engine rounds such results to their type.
std::vector<DType> value_formats(const Graph& g, Precision p);

// The float32 catalogue (find_hazards) plus, where a value is in a 16-bit format (value_formats: under a 16-bit
// precision, or stored so), the half-precision hazards, in execution order and numbered from 1. Fp32 on a
// model with no float16/bfloat16 value: find_hazards(g) unchanged.
std::vector<HazardSite> find_hazards_in(const Graph& g, Precision p);

}  // namespace grist
