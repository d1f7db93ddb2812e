// `grist hunt --all` on one run: the hazards take turns on the same model, each turn continuing from the weights,
// optimizer state, batch and data order the program's own training had reached in the turns before.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/grad_scaler.h"
#include "engine/optimizers.h"
#include "search/hunt.h"
#include "util/rng.h"

namespace grist {

// A hazard to hunt and its weight in sharing the time limit.
struct PlannedHazard {
  const HazardSite* site;
  double share;
};

// What one turn hands to the next: the program's state before any search moved weights or crafted a training
// batch (what the model's own training on the searched batch produced). Empty: start from the initial model.
struct CarriedState {
  bool valid = false;
  std::map<std::string, Tensor> weights;    // the trained weights, by name
  std::optional<OptimizerState> optimizer;
  std::vector<OptimizerState> phase_optimizers;  // [[train.phases]]: each phase's optimizer, in order
  std::optional<GradScalerState> scaler;         // amp-* training's loss scale
  int64_t phase_iterations = 0;                  // [[train.phases]]: iterations that ran every phase
  // Where each hazard's own search left the inputs, by hazard site id: a hazard's later turn goes on from its
  // own batch, and its first from the program's next batch, never from inputs another objective moved.
  std::map<int, Batch> searched_batches;
  std::optional<Dataset> data;              // the data order
  std::optional<Rng> rng;                   // the engine's generator (dropout masks)
};

// One turn: hunt `hazard` (an index into the plan) for budget_s seconds (and max_iterations iterations when
// non-zero), starting from `carried` and leaving in it the state the next turn continues from.
struct Turn {
  size_t hazard = 0;
  double budget_s = 0;
  int64_t max_iterations = 0;
  bool beyond_inputs = false;  // the hazard's inputs-only search had its turn: begin with what comes after
};
using RunTurn = std::function<Result<HazardOutcome>(const Turn& turn, CarriedState& carried)>;

// Two rounds over the hazards not yet triggered, in plan order: the first shares half of the time (and of each
// hazard's iterations), the second what is left and begins each search beyond the inputs (crafted training, then
// the weights); a hazard alone in its round gets all of it. A trigger counts
// for the hazard whose node produced it, whichever hazard's objective was being followed; one at a node already
// found is not a finding, and the next turn starts again from the initial model. Outcomes are added to `report`
// the moment they are final (on_outcome called), the hazards never triggered last, in plan order.
Status hunt_interleaved(const std::vector<PlannedHazard>& plan, const HuntOptions& o,
                        std::chrono::steady_clock::time_point start, const RunTurn& run_turn, HuntReport& report);

}  // namespace grist
