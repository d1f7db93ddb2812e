// What a manifest chooses for the search beyond the data: the weights its training updates, the initializers it
// searches as variables (a gain the study's program searched), and a hazard's objective where the automatic
// choice is not the program's.
#pragma once

#include <vector>

#include "analysis/hazards.h"
#include "config/manifest.h"
#include "engine/executor.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

// The program's numerics as the manifest states them (ftz, precision) and the search's seed: what every pass
// of the hunt runs under.
ExecutorOptions program_executor_options(const Manifest& m);

// train.params: every float initializer ("all"), or the named ones (each must be an initializer).
Result<std::vector<ValueId>> trained_params(const Graph& g, const Manifest& m);

// search.variables: each must be a float initializer of the model.
Result<std::vector<ValueId>> search_variable_ids(const Graph& g, const Manifest& m);

// search.objective / search.objective_value applied to the hazard search.target names (docs/MANIFEST.md,
// "What the search moves"); nothing to do without them.
Status choose_objective(const Graph& g, const Manifest& m, std::vector<HazardSite>& hazards);

}  // namespace grist
