#include "analysis/training_bounds.h"

#include <cmath>

#include <fmt/format.h>

namespace grist {

namespace {

// Adam's step t moves a weight by lr·|m̂_t|/(√v̂_t + ε) ≤ lr·C_t, where by Cauchy–Schwarz over the gradient
// history (m_t = (1−β1)Σβ1^(t−i)g_i, v_t = (1−β2)Σβ2^(t−i)g_i²)
//   |m_t|/√v_t ≤ (1−β1)·√(S_t/(1−β2)),  S_t = Σ_{k<t} (β1²/β2)^k,
// and the bias corrections multiply that by √(1−β2^t)/(1−β1^t). C_1 = 1; C_t grows to
// (1−β1)/√((1−β2)(1−β1²/β2)) (7.27 for the defaults). TensorFlow's form folds the corrections into its
// learning rate: the same bound.
// Step t's factor, given S_{t−1} in `s` (updated to S_t) and β1^(t−1), β2^(t−1) in `p1`, `p2` (updated).
double adam_step_factor(double beta1, double beta2, double& s, double& p1, double& p2) {
  s = s * (beta1 * beta1 / beta2) + 1.0;
  p1 *= beta1;
  p2 *= beta2;
  return (1 - beta1) * std::sqrt(s / (1 - beta2)) * std::sqrt(1 - p2) / (1 - p1);
}

}  // namespace

std::optional<double> max_weight_move(const OptimizerConfig& c, int64_t steps) {
  if (steps <= 0) return 0.0;
  const double lr = std::fabs(c.lr), n = static_cast<double>(steps);
  switch (c.kind) {
    case OptimizerKind::SGD:
      return std::nullopt;
    case OptimizerKind::Adagrad:
      // lr·g/(√acc + ε) with acc ≥ g² (the accumulator holds this step's g² already): at most lr.
      return lr * n;
    case OptimizerKind::RMSProp: {
      if (c.centered) return std::nullopt;
      // ms_t ≥ (1−ρ)·g_t² whenever it starts ≥ 0, so |g|/√ms ≤ 1/√(1−ρ); momentum μ sums such steps
      // geometrically, at most 1/(1−μ) of one.
      const double one = lr / std::sqrt(1 - c.decay);
      if (c.momentum == 0) return one * n;
      const double mu = std::fabs(c.momentum);
      if (mu >= 1) return std::nullopt;
      // |mom_t| ≤ one·(1 − μ^t)/(1 − μ); summed over t = 1..N.
      return one / (1 - mu) * (n - mu * (1 - std::pow(mu, n)) / (1 - mu));
    }
    case OptimizerKind::Adam: {
      double s = 0, p1 = 1, p2 = 1, total = 0;
      for (int64_t t = 1; t <= steps; ++t) {
        const double ct = adam_step_factor(c.beta1, c.beta2, s, p1, p2);
        if (!std::isfinite(ct)) return std::nullopt;
        total += lr * ct;
        // C_t only grows towards its limit (or, when β1² ≥ β2, without bound): past a million steps the
        // rest is bounded by the limit when there is one.
        if (t == 1000000 && steps > t) {
          const double r = c.beta1 * c.beta1 / c.beta2;
          if (r >= 1) return std::nullopt;
          const double limit = (1 - c.beta1) / std::sqrt((1 - c.beta2) * (1 - r));
          return total + lr * limit * static_cast<double>(steps - t);
        }
      }
      return total;
    }
  }
  return std::nullopt;
}

double rounded_radius(double move, int64_t steps, double magnitude) {
  // Each float32 update rounds the new weight (half an ulp of at most magnitude + move: 2⁻²³ of it covers
  // that), and computes its step with a dozen roundings (the moments, the root, the quotient, the bias
  // corrections: measured up to 2⁻¹⁹ of the step at step 2 of TensorFlow's Adam): 2⁻¹⁴ of the move covers
  // those with room.
  const double per_step = std::ldexp(magnitude + move, -23);
  return move * (1 + std::ldexp(1.0, -14)) + per_step * static_cast<double>(steps);
}

std::string step_bound_rule(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerKind::SGD:
      return "SGD moves a weight by lr·|gradient|, which grist does not bound: no step bound";
    case OptimizerKind::Adagrad:
      return fmt::format("Adagrad: |Δw| ≤ lr = {} per step", c.lr);
    case OptimizerKind::RMSProp:
      if (c.centered) return "centered RMSProp divides by a variance that may vanish: no step bound";
      return fmt::format("RMSProp: |Δw| ≤ lr/√(1−ρ) = {:.4g} per step{}", c.lr / std::sqrt(1 - c.decay),
                         c.momentum != 0 ? fmt::format(", momentum {} summing at most 1/(1−μ) of it", c.momentum) : "");
    case OptimizerKind::Adam:
      return fmt::format("Adam: |Δw| ≤ lr·C_t per step, C_t = (1−β1)·√(Σ_(k<t)(β1²/β2)^k/(1−β2))·√(1−β2^t)/(1−β1^t) "
                         "(C_1 = 1), lr = {}, β1 = {}, β2 = {}", c.lr, c.beta1, c.beta2);
  }
  return "";
}

}  // namespace grist
