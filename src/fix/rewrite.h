// Applying a catalogue repair to a graph: the stable form's nodes are added, the ops that sat between it and the
// replaced value are applied again, the replaced value is handed to the new nodes (its name and consumers kept,
// so the model's outputs keep theirs), and the nodes nothing reads any more are removed.
#pragma once

#include <string>
#include <vector>

#include "fix/patterns.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

struct AppliedRepair {
  std::string prefix;  // every added node's name starts with it: "<hazard node>/grist_fix"
  std::vector<std::string> added_nodes;
  std::vector<std::string> removed_nodes;  // the nodes of the old expression nothing reads any more
  double constant = 0;                     // the ε or limit used (0 where the form needs none)
  std::vector<std::string> kept_float32;   // KeepFloat32: the model's nodes now computed in float32
};

// Rewrites `g` in place (its node order and ids change; `m` must have been matched on it). `constant` is the
// catalogue constant to use (ignored by forms that need none).
Result<AppliedRepair> apply_repair(Graph& g, const RepairMatch& m, double constant);

// The constant a repair uses when none is chosen: the catalogue's first candidate (tiny for the clamps) in
// `format` (Undefined: float32).
double default_constant(const RepairMatch& m, DType format = DType::Undefined);

// Whether a repair of this kind takes a constant the verification may choose among candidates.
bool takes_constant(RepairKind kind);

}  // namespace grist
