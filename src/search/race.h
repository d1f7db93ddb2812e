// The races (SearchConfig::race_weights, race_training): beside the program's course (the inputs, its own
// training, crafted training, then the weights, as the clocks have it), twin searches on a second thread take the
// later stages from the second iteration: the weights twin steps the weights, then the training twin crafts
// training batches. A weights-perturbed finding then comes as soon as the weights alone can reach the failure,
// not after the clocks (zoo 49b: 0.6 s against 32 s), a training-reached one as soon as crafted training does
// (zoo 14: ~5 s against 10 s), while the course keeps its turn for the input-reached finding that a search going
// beyond the inputs first would take away from a model whose own training fails (zoo 40-42).
#pragma once

#include <atomic>
#include <cstdint>

#include "search/hunt.h"

namespace grist {

// What the course learns of a twin: timed runs share a flag set on the twin's thread when it triggers; under
// max_iterations the twins ran first and the trigger's iteration decides, so the outcome does not depend on the
// machine's speed.
struct RaceSignal {
  std::atomic<bool> found{false};
  int64_t found_at_iteration = 0;  // by_iterations: the twin's trigger (0: none)
  bool by_iterations = false;
  // The twin had triggered before the course's iteration `it`.
  bool found_by(int64_t it) const {
    return by_iterations ? found_at_iteration > 0 && it > found_at_iteration : found.load();
  }
};

// The one finding the hunt reports for the hazard, of the course's and the weights twin's: the course's when it
// is input- or training-reached (a better class, however late: the twin's earlier trigger is noted in
// race_seconds), else whichever triggered first (in iterations when by_iterations; a tie goes to the course).
// The twin's is marked weights_race.
HazardOutcome settle_weights_race(HazardOutcome course, HazardOutcome twin, bool by_iterations);

// The same between the course and the training twin: the course's when it is input-reached (however late), or
// training-reached and first; else the twin's (training-reached, or input-reached once its crafted attempts were
// undone), over the course's weights-perturbed one or none. The twin's is marked training_race.
HazardOutcome settle_training_race(HazardOutcome course, HazardOutcome twin, bool by_iterations);

}  // namespace grist
