// How a program's optimizer is configured (the manifest's [train] section): its kind, its framework's
// flavour and hyperparameters. The update rules themselves are the engine's (engine/optimizers.h); the
// configuration sits here so the manifest does not depend on the engine.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace grist {

enum class OptimizerKind { SGD, Adam, Adagrad, RMSProp };
enum class Framework { PyTorch, TensorFlow };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  Framework flavor = Framework::PyTorch;
  double lr = 0.01;
  double momentum = 0.0;        // SGD, RMSProp
  bool nesterov = false;        // SGD
  double beta1 = 0.9;           // Adam
  double beta2 = 0.999;         // Adam
  double epsilon = 1e-8;        // Adam, Adagrad, RMSProp
  double decay = 0.9;           // RMSProp ρ (TensorFlow) / α (PyTorch)
  bool centered = false;        // RMSProp
  double initial_accumulator = 0.0;  // Adagrad accumulator / RMSProp mean-square start
  double weight_decay = 0.0;    // L2 added to the gradient (PyTorch style)

  // The framework's documented defaults for `kind` (the table in engine/optimizers.h).
  static OptimizerConfig defaults(OptimizerKind kind, Framework flavor);
};

Result<OptimizerKind> parse_optimizer_kind(const std::string& name);  // "sgd", "adam", "adagrad", "rmsprop"
std::string_view optimizer_kind_name(OptimizerKind k);                // "SGD", "Adam", "Adagrad", "RMSProp"

}  // namespace grist
