// A program that trains several losses in turn (manifest [[train.phases]]: a GAN's discriminator, then its
// generator): each phase's loss, weights and optimizer, the optimizer's state kept across iterations.
#pragma once

#include <vector>

#include "config/manifest.h"
#include "engine/optimizers.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

struct TrainingPhase {
  ValueId loss = kNoValue;
  std::vector<ValueId> params;
  Optimizer optimizer;
  int64_t steps = 1;  // its steps in each iteration's turn
};

// The manifest's phases resolved on `g`: every loss a float value of the model, every weight a float
// initializer (errors name the phase).
Result<std::vector<TrainingPhase>> training_phases(const Graph& g, const Manifest& m);

}  // namespace grist
