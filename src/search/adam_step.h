// An adaptive input step (opt-in, `[search] step = "adam"`): Adam's per-element moments of ∂O/∂x instead of the
// sign alone. Where the objective's gradient flips sign from one iteration to the next (x hopping over a narrow
// minimum), the first moment cancels and the step shrinks, so x settles into it; where it keeps its sign, the step
// is ε, as the sign step's.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "search/sign_step.h"
#include "tensor/tensor.h"

namespace grist {

class AdamStep {
 public:
  // Adam's defaults (β1 0.9, β2 0.999, 1e-8); the learning rate is the search's ε.
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-8;

  // x ← clip(x − ε·m̂/(√v̂ + 1e-8), lo, hi). A zero or NaN gradient element keeps its moments (a NaN never
  // reaches the input) and moves by its momentum only; the stats count, per row, what moved and what the clip held.
  void step(Tensor& x, const Tensor& grad, double eps, std::optional<std::pair<double, double>> clip,
            RowStepStats& stats);
  // Rows replaced by data switching start without moments.
  void reset_rows(const std::vector<int64_t>& rows, int64_t batch_rows);

 private:
  std::vector<double> m_, v_;
  std::vector<int64_t> t_;  // per element: the steps its moments have seen (bias correction restarts with a row)
  std::vector<double> correction1_, correction2_;  // 1 − β^t by t, so an iteration takes no pow per element
  double correction(std::vector<double>& table, double beta, int64_t t);
};

}  // namespace grist
