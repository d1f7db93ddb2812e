#include "search/sign_step.h"

#include <algorithm>

namespace grist {

RowStepStats sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip) {
  RowStepStats stats;
  sign_step(x, grad, eps, clip, stats);
  return stats;
}

void sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip,
               RowStepStats& stats) {
  if (step_widened(x, grad, [&](Tensor& wx, const Tensor& wg) { sign_step(wx, wg, eps, clip, stats); })) return;
  const int64_t rows = x.rank() > 0 ? x.shape()[0] : 1;
  const int64_t per_row = rows > 0 ? x.numel() / rows : 0;
  stats.updated.assign(static_cast<size_t>(rows), 0.0);
  stats.clipped.assign(static_cast<size_t>(rows), 0.0);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* xv = x.data<T>();
    const T* gv = grad.data<T>();
    const T step = static_cast<T>(eps);
    const T lo = clip ? static_cast<T>(clip->first) : T(0), hi = clip ? static_cast<T>(clip->second) : T(0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t moved = 0, held = 0;
      for (int64_t j = r * per_row; j < (r + 1) * per_row; ++j) {
        const T g = gv[j];
        if (!(g > T(0) || g < T(0))) continue;  // zero or NaN: no step
        T next = xv[j] - (g > T(0) ? step : -step);
        if (clip) {
          T c = std::min(std::max(next, lo), hi);
          if (c != next) ++held;
          next = c;
        }
        if (next != xv[j]) ++moved;
        xv[j] = next;
      }
      if (per_row > 0) {
        stats.updated[static_cast<size_t>(r)] = static_cast<double>(moved) / static_cast<double>(per_row);
        stats.clipped[static_cast<size_t>(r)] = static_cast<double>(held) / static_cast<double>(per_row);
      }
    }
  });
}

}  // namespace grist
