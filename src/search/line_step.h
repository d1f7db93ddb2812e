// A backtracking line search on the objective along −sign(∂O/∂x) (opt-in, `[search] step = "line"`): where a
// fixed ε hops over a narrow minimum for ever, a shorter step lands in it; where ε crawls down a long slope, the
// accepted step doubles each iteration. Costs up to kTrials extra forward passes an iteration.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "search/sign_step.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

class LineStep {
 public:
  static constexpr int kTrials = 7;           // α, α/2, …, α/64
  static constexpr double kMaxGrowth = 256;   // α never exceeds 256·ε

  struct Input {
    Tensor* x;
    const Tensor* grad;  // null: the objective does not depend on this input (it stays)
    std::optional<std::pair<double, double>> clip;
  };

  // Tries x − α·sign(g) on every input at once, α from min(2·last accepted, 256·ε) (ε at first) halving, and
  // keeps the first trial whose objective (`evaluate`, after the trial is written into the inputs) is below
  // `objective`; a pass that failed counts as −∞. When none is, it takes the plain sign step of ε (the search
  // goes on where GRIST's would) and α restarts from ε. `stats[i]` is input i's row bookkeeping for switching.
  Status step(std::vector<Input>& inputs, double eps, double objective, const std::function<Result<double>()>& evaluate,
              std::vector<RowStepStats>& stats);

  int64_t trials() const { return trials_; }  // objective evaluations so far
  double last_alpha() const { return alpha_; }  // the last accepted step (0 before the first)

 private:
  double alpha_ = 0;
  int64_t trials_ = 0;
  std::vector<Tensor> saved_;
};

}  // namespace grist
