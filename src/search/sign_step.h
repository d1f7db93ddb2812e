// GRIST's input step: x ← clip(x − ε·sign(∂O/∂x), lo, hi), with per-row bookkeeping for data switching.
#pragma once

#include <algorithm>
#include <cstdint>
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

// The rows every input step walks (slices along dimension 0): `step(first, count, moved, held)` steps elements
// [first, first + count) and counts those that moved and those the clip held back; `stats` gets each row's fractions.
template <class StepRow>
void for_each_step_row(const Tensor& x, RowStepStats& stats, StepRow&& step) {
  const int64_t rows = x.rank() > 0 ? x.shape()[0] : 1;
  const int64_t per_row = rows > 0 ? x.numel() / rows : 0;
  stats.updated.assign(static_cast<size_t>(rows), 0.0);
  stats.clipped.assign(static_cast<size_t>(rows), 0.0);
  // A row's fraction is mostly none or all of it, which need no division (the same value: 0/n and n/n are exact).
  // On rows of a few values (zoo 40-42's 2 features) two divisions a row were most of the step's time.
  const auto fraction = [per_row](int64_t count) {
    return count == 0 ? 0.0 : count == per_row ? 1.0 : static_cast<double>(count) / static_cast<double>(per_row);
  };
  for (int64_t r = 0; r < rows; ++r) {
    int64_t moved = 0, held = 0;
    step(r * per_row, per_row, moved, held);
    if (per_row > 0) {
      stats.updated[static_cast<size_t>(r)] = fraction(moved);
      stats.clipped[static_cast<size_t>(r)] = fraction(held);
    }
  }
}

// The per-element rule on those rows: `next(j, x_j)` is element j's stepped value (nullopt: no step), clipped to
// [lo, hi].
template <class T, class Next>
void step_rows(Tensor& x, std::optional<std::pair<double, double>> clip, RowStepStats& stats, Next&& next) {
  T* xv = x.data<T>();
  const T lo = clip ? static_cast<T>(clip->first) : T(0), hi = clip ? static_cast<T>(clip->second) : T(0);
  for_each_step_row(x, stats, [&](int64_t first, int64_t count, int64_t& moved, int64_t& held) {
    for (int64_t j = first; j < first + count; ++j) {
      const std::optional<T> stepped = next(j, xv[j]);
      if (!stepped) continue;
      T to = *stepped;
      if (clip) {
        const T c = std::min(std::max(to, lo), hi);
        if (c != to) ++held;
        to = c;
      }
      if (to != xv[j]) ++moved;
      xv[j] = to;
    }
  });
}

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
