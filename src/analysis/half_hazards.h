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

// The float32 catalogue (find_hazards) plus, under a 16-bit precision, the half-precision hazards, in
// execution order and numbered from 1. Fp32: find_hazards(g) unchanged.
std::vector<HazardSite> find_hazards_in(const Graph& g, Precision p);

}  // namespace grist
