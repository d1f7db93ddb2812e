// Which weights a model's training step updates: the float initializers its manifest trains (all, or the
// listed ones) that the loss reaches through differentiable edges, whatever their size — a scalar bias or
// gain trains like a matrix. Without a manifest there is no training step to ask: every float initializer
// of more than one element that reaches an output is taken to train (RANUM's view that weights move), and
// scalars are read as the constants exporters store as initializers.
#pragma once

#include <string>
#include <vector>

#include "ops/bounds.h"
#include "config/manifest.h"
#include "graph/graph.h"

namespace grist {

// Per ValueId: true for an initializer the training step updates.
std::vector<bool> trained_weights(const Graph& g, const Manifest* manifest);

// The same weights by name, in initializer order.
std::vector<std::string> trained_weight_names(const Graph& g, const Manifest* manifest);

// RANUM's default range for a trained weight: the span of its initial values widened by 100 %, [−10, 10]
// when zero-initialised (a constant c: [c − |c|, c + |c|]). A statement for comparison with RANUM, not a proof.
struct RanumRange {
  Interval range;
  const char* why;
};
RanumRange ranum_default_range(const Tensor& initial);

// Per ValueId: true for a value that depends on some value marked in `from` (forward along the nodes).
std::vector<bool> reached_from(const Graph& g, const std::vector<bool>& from);

}  // namespace grist
