// The weights race (SearchConfig::race_weights): beside the program's course (the inputs, its own training, crafted
// training, then the weights, as the clocks have it), a twin search steps the weights from the second iteration on a
// second thread. A weights-perturbed finding then comes as soon as the weights alone can reach the failure, not
// after the clocks (zoo 49b: 0.6 s against 32 s), while the course keeps its turn for the input- or training-reached
// finding that a weights-first search would take away from a model whose own training fails (zoo 40-42).
#pragma once

#include <atomic>
#include <cstdint>

#include "search/hunt.h"

namespace grist {

// What the course learns of the twin: timed runs share a flag set on the twin's thread when it triggers; under
// max_iterations the twin ran first and its trigger's iteration decides, so the outcome does not depend on the
// machine's speed.
struct WeightsRace {
  std::atomic<bool> found{false};
  int64_t found_at_iteration = 0;  // by_iterations: the twin's trigger (0: none)
  bool by_iterations = false;
  // The twin had triggered before the course's iteration `it`.
  bool found_by(int64_t it) const {
    return by_iterations ? found_at_iteration > 0 && it > found_at_iteration : found.load();
  }
};

// The one finding the hunt reports for the hazard: the course's when it is input- or training-reached (a better
// class, however late: the twin's earlier trigger is noted in race_seconds), else whichever triggered first
// (in iterations when by_iterations; a tie goes to the course). The twin's is marked weights_race.
HazardOutcome settle_weights_race(HazardOutcome course, HazardOutcome twin, bool by_iterations);

}  // namespace grist
