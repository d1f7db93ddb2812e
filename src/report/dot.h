// A picture of a finding for people who would rather look: Graphviz of the part of the model that matters —
// every node from the graph's inputs to the marked nodes (the producer of a NaN/Inf, or the hazards a scan
// flags), and the shortest path from each on to the loss — with the marked nodes in red and their condition
// written beside them. `dot -Tsvg FILE.dot` (Debian's graphviz) renders it.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace grist {

struct DotMark {
  int32_t node = -1;  // index into Graph::nodes
  std::string note;   // "Log input <= 0 at [0, 4] = 0"
};

// `loss`: where the path from each mark goes (kNoValue: the graph's first output).
std::string to_dot(const Graph& g, const std::vector<DotMark>& marks, ValueId loss);

}  // namespace grist
