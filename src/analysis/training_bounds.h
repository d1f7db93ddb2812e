// How far an optimizer can carry a weight in N training steps, whatever the gradients: the bound that lets
// `grist scan` say "safe for the first N steps of this optimizer" (the proofs are in docs/SCAN.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/optimizers.h"

namespace grist {

// The largest |w_N − w_0| of any weight element after `steps` updates from a fresh optimizer state, for every
// gradient sequence (float32 rounding of the update not included: see weight_radius). nullopt where no such
// bound exists: SGD moves lr·|g|, and grist does not bound gradients; centered RMSProp divides by a variance
// that may vanish.
std::optional<double> max_weight_move(const OptimizerConfig& c, int64_t steps);

// `move` (max_weight_move's answer) plus the float32 rounding of each of the `steps` updates of a weight whose
// initial magnitude is at most `magnitude`.
double rounded_radius(double move, int64_t steps, double magnitude);

// The rule max_weight_move applies, for reports: "Adam: |Δw| ≤ lr·C_t, C_t = ...".
std::string step_bound_rule(const OptimizerConfig& c);

}  // namespace grist
