#include "search/sign_step.h"

#include <algorithm>

namespace grist {

RowStepStats sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip) {
  RowStepStats stats;
  sign_step(x, grad, eps, clip, stats);
  return stats;
}

namespace {

// step_rows' loop for the sign step, without a branch on the gradient's sign: the sign of a gradient over an input
// batch is as good as random, and the mispredicted branches made the step a quarter to a third of a hunt on MNIST
// MLPs (zoo 19, 25, 48b, 50: the data input is batch × 784 values, the model a few small GEMMs). Each element takes
// the same operations as step_rows' (x − ±ε, then the clip), selected instead of branched to, so that GCC can
// vectorise the row (the file is built with the dynamic cost model, CMakeLists.txt).
// The counts are 32-bit within chunks of 2^30 values: 64-bit ones made the vector loop widen every comparison's mask,
// half of its time.
template <class T, bool Clip>
void sign_step_row(T* x, const T* g, int64_t n, T step, T lo, T hi, int64_t& moved, int64_t& held) {
  constexpr int64_t kChunk = int64_t{1} << 30;
  moved = held = 0;
  for (int64_t from = 0; from < n; from += kChunk) {
    const int64_t to_index = std::min(n, from + kChunk);
    int32_t m = 0, h = 0;
    for (int64_t j = from; j < to_index; ++j) {
      const T gj = g[j], xj = x[j];
      const bool active = (gj > T(0)) | (gj < T(0));  // zero or NaN: no step
      const T to = xj - (gj > T(0) ? step : -step);
      T c = to;
      if constexpr (Clip) {
        c = std::min(std::max(to, lo), hi);
        h += active & (c != to);
      }
      m += active & (c != xj);
      x[j] = active ? c : xj;
    }
    moved += m;
    held += h;
  }
}

template <class T>
void sign_step_typed(Tensor& x, const Tensor& grad, T step, std::optional<std::pair<double, double>> clip,
                     RowStepStats& stats) {
  T* xv = x.data<T>();
  const T* gv = grad.data<T>();
  const T lo = clip ? static_cast<T>(clip->first) : T(0), hi = clip ? static_cast<T>(clip->second) : T(0);
  for_each_step_row(x, stats, [&](int64_t first, int64_t count, int64_t& moved, int64_t& held) {
    if (clip) {
      sign_step_row<T, true>(xv + first, gv + first, count, step, lo, hi, moved, held);
    } else {
      sign_step_row<T, false>(xv + first, gv + first, count, step, lo, hi, moved, held);
    }
  });
}

}  // namespace

void sign_step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip,
               RowStepStats& stats) {
  if (step_widened(x, grad, [&](Tensor& wx, const Tensor& wg) { sign_step(wx, wg, eps, clip, stats); })) return;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    sign_step_typed<T>(x, grad, static_cast<T>(eps), clip, stats);
  });
}

}  // namespace grist
