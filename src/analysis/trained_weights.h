// Which weights a model's training step updates: the float initializers its manifest trains (all, or the
// listed ones) that the loss reaches through differentiable edges, whatever their size — a scalar bias or
// gain trains like a matrix. Without a manifest there is no training step to ask: every float initializer
// of more than one element that reaches an output is taken to train (RANUM's view that weights move), and
// scalars are read as the constants exporters store as initializers.
#pragma once

#include <vector>

#include "config/manifest.h"
#include "graph/graph.h"

namespace grist {

// Per ValueId: true for an initializer the training step updates.
std::vector<bool> trained_weights(const Graph& g, const Manifest* manifest);

// Per ValueId: true for a value that depends on some value marked in `from` (forward along the nodes).
std::vector<bool> reached_from(const Graph& g, const std::vector<bool>& from);

}  // namespace grist
