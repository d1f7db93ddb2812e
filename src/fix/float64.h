// The model evaluated in float64: every float32 value, weight, constant and cast widened, so that check (c) can
// tell a repair's own difference from the original's float32 rounding (a stable form is often the more exact one).
#pragma once

#include "graph/graph.h"
#include "util/status.h"

namespace grist {

// A copy of `g` computing in float64 wherever it computed in float32. Fails for what it cannot widen.
Result<Graph> widen_to_float64(const Graph& g);

}  // namespace grist
