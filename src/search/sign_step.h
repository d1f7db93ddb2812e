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

// An input the model stores in 16 bits is stepped in float32 and rounded back to its type, as the run reads it:
// `step(wide_x, wide_grad)` on float32 copies. False, and nothing done, for a float32 or float64 input.
template <class Step>
bool step_widened(Tensor& x, const Tensor& grad, Step&& step) {
  if (x.dtype() != DType::Float16 && x.dtype() != DType::BFloat16) return false;
  Tensor wide, wide_grad;
  cast_tensor(x, DType::Float32, wide);
  cast_tensor(grad, DType::Float32, wide_grad);
  step(wide, wide_grad);
  cast_tensor(wide, x.dtype(), x);
  return true;
}

}  // namespace grist
