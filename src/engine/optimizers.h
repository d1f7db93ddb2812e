// Optimizers that update an executor's weights from its last gradients, with the update rules and
// defaults of both TensorFlow 1 and PyTorch (the study's programs used both, and they differ).
//
// Defaults (set by OptimizerConfig::defaults):
//   SGD      both: lr 0.01, momentum 0, nesterov off.  v ← μv + g; w ← w − lr·v (nesterov: w ← w − lr(g + μv)).
//   Adam     both: lr 0.001, β1 0.9, β2 0.999, ε 1e-8.
//            PyTorch: w ← w − lr·m̂/(√v̂ + ε) with bias-corrected m̂, v̂.
//            TensorFlow: w ← w − lr·√(1−β2ᵗ)/(1−β1ᵗ)·m/(√v + ε)  (ε not bias-corrected: "epsilon hat").
//   Adagrad  TensorFlow: lr 0.01, accumulator starts at 0.1, no ε: w ← w − lr·g/√acc.
//            PyTorch: lr 0.01, accumulator starts at 0, ε 1e-10: w ← w − lr·g/(√acc + ε).
//   RMSProp  TensorFlow: lr 0.001, decay ρ 0.9, momentum 0, ε 1e-10 inside the root, mean square starts at 1.
//            PyTorch: lr 0.01, α 0.99, momentum 0, ε 1e-8 outside the root, mean square starts at 0.
//            centered: subtract the squared running mean of g (both).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/optimizer_config.h"
#include "engine/executor.h"

namespace grist {

// What an optimizer carries between steps (by parameter position), so that a run can be resumed exactly:
// momentum / Adam m, Adam v / accumulators / mean squares, centered RMSProp's mean, and the step count.
// A slot is an undefined tensor until its parameter's first update.
struct OptimizerState {
  std::vector<Tensor> first, second, mean;
  int64_t steps = 0;
};

class Optimizer {
 public:
  Optimizer(OptimizerConfig config, std::vector<ValueId> params);
  const OptimizerConfig& config() const { return config_; }
  const std::vector<ValueId>& params() const { return params_; }

  // One update of every parameter that received a gradient in the executor's last backward().
  Status step(Executor& ex);
  // One update of tensors directly: grads[k] (nullptr = no gradient, skipped) for params[k], which must be
  // the same tensors, in the same order, on every call (their optimizer state is kept by position).
  // grad_factor ≠ 1: each float32/float64 gradient element is first multiplied by it, in its own type, as a
  // separate unscaling pass would have stored it (GradScaler's unscale_ inside the update, no second pass).
  Status step(std::span<Tensor* const> params, std::span<const Tensor* const> grads, float grad_factor = 1.0f);
  int64_t steps_taken() const { return t_; }
  OptimizerState state() const { return {first_, second_, mean_, t_}; }
  void set_state(OptimizerState s);

 private:
  template <class T>
  void update(Tensor& w, const Tensor& g, size_t slot, float grad_factor);
  template <class T, bool kScaled, bool kDecay>
  void update_rule(Tensor& w, const Tensor& g, size_t slot, T grad_factor);

  OptimizerConfig config_;
  std::vector<ValueId> params_;
  std::vector<Tensor> first_;   // momentum / Adam m / RMSProp momentum buffer
  std::vector<Tensor> second_;  // Adam v / accumulators / mean square
  std::vector<Tensor> mean_;    // centered RMSProp running mean of g
  int64_t t_ = 0;
};

}  // namespace grist
