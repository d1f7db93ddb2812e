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

// How the analysis bounds the weights the model's training updates (analysis/trained_weights.h). A range
// the user states (`assumed`, a manifest's [scan] trained_weights) replaces each of these.
enum class TrainedWeights {
  Unbounded,  // any value: what a proof for every run of the program must allow
  Initial,    // their initial values: the program before its first training step
  Steps,      // within what `steps` updates of the manifest's optimizer can reach (analysis/training_bounds.h)
  // RANUM's default, for comparison with it: the span of their initial values widened by 100 % ([−10, 10]
  // when zero-initialised). A statement the user chooses (`grist scan --ranum-weights`), not a proof.
  RanumDefault,
};

struct IntervalOptions {
  const Manifest* manifest = nullptr;  // input ranges and which weights train; null: RANUM's defaults
  int64_t batch = 0;                   // size of symbolic dimensions; 0: the manifest's batch size, else 1
  std::map<std::string, IntervalTensor> given;  // ranges that override everything else (tests, callers)
  // The user's ranges for graph inputs and weights by name (`grist scan --assume NAME=LO,HI`): they replace
  // the manifest's and the defaults, and a weight so named is taken to move within that range. A name
  // that is neither an input nor an initializer is an error.
  std::map<std::string, Interval> assumed;
  TrainedWeights trained = TrainedWeights::Unbounded;
  int64_t steps = 0;  // with TrainedWeights::Steps
  // A 16-bit precision's format (Float16, BFloat16; Undefined: float32) and, per value, whether the run rounds
  // it to the format (analysis/half_hazards.h): those intervals are rounded as the run rounds the values.
  DType format = DType::Undefined;
  std::vector<bool> in_format = {};
  bool autocast = false;  // amp-*: the ops autocast runs in the format also read their inputs rounded to it
  // Values the model stores as float16/bfloat16 are rounded to their type, as the engine rounds them; false:
  // bounded as float32 would hold them (the scan's "safe in float32" comparison).
  bool round_stored = true;
};

struct IntervalAnalysis {
  std::vector<IntervalTensor> values;        // by ValueId
  std::vector<bool> trained;                 // by ValueId: the weights the training step updates
  std::vector<bool> stated;                  // by ValueId: trained weights whose range the user stated
  std::vector<RangeAssumption> assumptions;
  std::vector<std::string> unbounded_nodes;  // "name (Op)" of nodes whose op has no transfer
};

Result<IntervalAnalysis> analyze_intervals(const Graph& g, const IntervalOptions& options = {});

}  // namespace grist
