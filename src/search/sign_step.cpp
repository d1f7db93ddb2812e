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
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* gv = grad.data<T>();
    const T step = static_cast<T>(eps);
    step_rows<T>(x, clip, stats, [&](int64_t j, T xj) -> std::optional<T> {
      const T g = gv[j];
      if (!(g > T(0) || g < T(0))) return std::nullopt;  // zero or NaN: no step
      return xj - (g > T(0) ? step : -step);
    });
  });
}

}  // namespace grist
