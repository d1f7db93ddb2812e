// A training checkpoint (.npz) to resume a program from: the weights it had trained and its optimizer's state
// (momenta, Adam's moments, accumulators, the step count), so a hunt starts where the program was rather than
// restarting Adam at step 0.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <optional>

#include "config/optimizer_config.h"
#include "engine/grad_scaler.h"
#include "engine/optimizers.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

// Arrays by name: weight:NAME (a float initializer of the model), optimizer.first:NAME (momentum / Adam m),
// optimizer.second:NAME (Adam v / accumulator / mean square), optimizer.mean:NAME (centered RMSProp), and
// optimizer.steps (an integer scalar: the updates taken). The format of grist's witness archives. An amp-*
// program's loss scaler adds scaler.scale (a float32 scalar) and scaler.growth_tracker (an integer scalar: the
// good steps since the scale last changed), GradScaler.state_dict()'s "scale" and "_growth_tracker".
struct Checkpoint {
  std::string path;
  std::map<std::string, Tensor> weights;
  std::map<std::string, std::map<std::string, Tensor>> slots;  // "first", "second", "mean" → NAME → state
  int64_t steps = 0;
  // The loss scaler's state (its skipped_steps 0: a resumed run counts its own), when the file has one.
  std::optional<GradScalerState> scaler;
};

// Reads one; every array must be one of the kinds above.
Result<Checkpoint> read_checkpoint(const std::string& path);

// The model with the checkpoint's weights in place of its initializers (each named one must exist, with the
// same type and shape).
Result<Graph> with_checkpoint_weights(const Graph& g, const Checkpoint& c);

// `g` with the weights of the checkpoint at `path` (a manifest's train.checkpoint; empty: unchanged).
Status use_checkpoint_weights(const std::string& path, Graph& g);

// The optimizer's state for `params` (in the optimizer's order). After steps > 0 every slot the update rule
// reads must be there for every parameter (a missing one would silently restart at zero); no slot may be
// for a weight the optimizer does not train.
Result<OptimizerState> checkpoint_state(const Checkpoint& c, const Graph& g, const std::vector<ValueId>& params,
                                        const OptimizerConfig& config);

}  // namespace grist
