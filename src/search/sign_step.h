// GRIST's input step: x ← clip(x − ε·sign(∂O/∂x), lo, hi), with per-row bookkeeping for data switching.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace grist {

struct RowStepStats {
  std::vector<double> updated;  // per row: fraction of its elements that moved
  std::vector<double> clipped;  // per row: fraction of its elements the clip held back
};

// Steps `x` (float) against `grad` (same shape). Zero and NaN gradients move nothing, so a NaN gradient
// never leaks into the input. Rows are slices along dimension 0.
RowStepStats sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip);
// The same, into `stats`, whose buffers are reused: the search loop steps every iteration.
void sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip,
               RowStepStats& stats);

}  // namespace grist
