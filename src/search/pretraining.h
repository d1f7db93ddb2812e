// The program's own training before the search (manifest train.pretrain_steps): its optimizer's steps on
// batches of the source in the program's order, from the model's weights (or a checkpoint's, with its
// optimizer state), so that the hunt starts where the program would be after them.
#pragma once

#include "config/manifest.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

// `steps` training steps on `g` (whose weights are already the checkpoint's, when `from` is one) as the
// manifest trains, on batches of a copy of `data` (as loaded, no batch drawn yet): what they reached as a
// checkpoint (every trained weight, the optimizer's state, and the rest of `from`'s weights), for the hunt to
// resume from like a train.checkpoint. A non-finite value in these steps is an error that names the step and the
// producer: the program fails before any search.
Result<Checkpoint> pretrain(const Graph& g, const Manifest& m, const Dataset& data, int64_t steps,
                            const Checkpoint* from);

}  // namespace grist
