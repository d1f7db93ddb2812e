// Interval abstract interpretation of a graph: the ranges assumed for inputs and weights, propagated
// through every op's transfer (OpDef::bounds), with constants and shape arithmetic evaluated exactly.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/manifest.h"
#include "graph/graph.h"
#include "ops/bounds.h"
#include "util/status.h"

namespace grist {

// A range the analysis assumed rather than derived, named so the user can see and override it.
struct RangeAssumption {
  std::string name;    // the value (graph input or initializer)
  std::string kind;    // "input", "label", "weight", "dropout ratio"
  Interval range;
  std::string reason;  // "manifest range", "RANUM default for inputs", ...
};

struct IntervalOptions {
  const Manifest* manifest = nullptr;  // input ranges and which weights train; null: RANUM's defaults
  int64_t batch = 0;                   // size of symbolic dimensions; 0: the manifest's batch size, else 1
  std::map<std::string, IntervalTensor> given;  // ranges that override everything else (tests, callers)
  // The user's ranges for graph inputs and weights by name (`grist scan --assume NAME=LO,HI`): they replace
  // the manifest's and the defaults, and a weight so named is taken to move within that range. A name
  // that is neither an input nor an initializer is an error.
  std::map<std::string, Interval> assumed;
};

struct IntervalAnalysis {
  std::vector<IntervalTensor> values;        // by ValueId
  std::vector<RangeAssumption> assumptions;
  std::vector<std::string> unbounded_nodes;  // "name (Op)" of nodes whose op has no transfer
};

Result<IntervalAnalysis> analyze_intervals(const Graph& g, const IntervalOptions& options = {});

}  // namespace grist
