#include "search/adam_step.h"

#include <algorithm>
#include <cmath>

namespace grist {

void AdamStep::step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip,
                    RowStepStats& stats) {
  if (step_widened(x, grad, [&](Tensor& wx, const Tensor& wg) { step(wx, wg, eps, clip, stats); })) return;
  const int64_t n = x.numel();
  if (static_cast<int64_t>(m_.size()) != n) {
    m_.assign(static_cast<size_t>(n), 0.0);
    v_.assign(static_cast<size_t>(n), 0.0);
    t_.assign(static_cast<size_t>(n), 0);
  }
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* gv = grad.data<T>();
    step_rows<T>(x, clip, stats, [&](int64_t j, T xj) -> std::optional<T> {
      const auto k = static_cast<size_t>(j);
      const double g = static_cast<double>(gv[j]);
      if (std::isfinite(g) && g != 0) {
        m_[k] = kBeta1 * m_[k] + (1 - kBeta1) * g;
        v_[k] = kBeta2 * v_[k] + (1 - kBeta2) * g * g;
        ++t_[k];
      }
      if (t_[k] == 0) return std::nullopt;  // no gradient yet: nothing to step by
      const double m_hat = m_[k] / correction(correction1_, kBeta1, t_[k]);
      const double v_hat = v_[k] / correction(correction2_, kBeta2, t_[k]);
      return static_cast<T>(static_cast<double>(xj) - eps * m_hat / (std::sqrt(v_hat) + kEpsilon));
    });
  });
}

double AdamStep::correction(std::vector<double>& table, double beta, int64_t t) {
  constexpr int64_t kExact = 1 << 16;  // β2^65536 < 1e-28: beyond it the correction is 1 in a double
  if (t >= kExact) return 1.0;
  while (static_cast<int64_t>(table.size()) <= t)
    table.push_back(1 - std::pow(beta, static_cast<double>(table.size())));
  return table[static_cast<size_t>(t)];
}

void AdamStep::reset_rows(const std::vector<int64_t>& rows, int64_t batch_rows) {
  if (m_.empty() || batch_rows <= 0) return;
  const size_t per_row = m_.size() / static_cast<size_t>(batch_rows);
  for (int64_t r : rows)
    for (size_t j = static_cast<size_t>(r) * per_row; j < static_cast<size_t>(r + 1) * per_row; ++j) {
      m_[j] = v_[j] = 0;
      t_[j] = 0;
    }
}

}  // namespace grist
