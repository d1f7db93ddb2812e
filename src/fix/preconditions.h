// RANUM's kind of fix: the widest boxes on the data inputs (I), on the weights (W), or on both (W+I) under which
// the scan proves a hazard safe. Each variable gets one interval; the search starts from an anchor box that is
// proved safe (the data's own range for inputs, the initial weights' span for weights, or their midpoints) and
// grows every bound toward the range the manifest (or RANUM's defaults) assumed, by bisection, until widening
// any single bound further breaks the proof (a maximal box). Widths are reported relative to the assumed ranges,
// and an input box is checked against the manifest's real data.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analysis/hazards.h"
#include "analysis/scan.h"
#include "config/manifest.h"
#include "graph/graph.h"
#include "util/status.h"

namespace grist {

enum class BoxScope { Inputs, Weights, Both };
std::string_view box_scope_name(BoxScope s);  // "I", "W", "W+I"

struct VariableBox {
  std::string name;
  std::string kind;           // "input" or "weight"
  Interval assumed;           // the range the scan assumed for it
  Interval box;               // the precondition
  double relative_width = 1;  // width(box) / width(assumed)
  Interval data;              // inputs: the hull of the manifest's data; weights: of their initial values
  bool holds_data = true;     // that hull lies inside the box (an empty hull [inf, -inf] is unknown: true)
};

struct Precondition {
  BoxScope scope = BoxScope::Both;
  bool found = false;
  std::vector<VariableBox> boxes;   // the variables the scope allows to move, constrained or not
  double width = 0;                 // the smallest relative width over the boxes
  double mean_width = 0;            // their geometric mean: the box's size per variable, relative
  // The geometric mean over every variable of the model (inputs and trained weights, those outside the scope at
  // their full assumed range): I, W and W+I boxes compared in the same space (W+I is at least the larger of both).
  double size = 0;
  bool holds_data = true;           // every input box holds the manifest's data
  bool maximal = false;             // widening any bound by 1 % (the tolerance) of its box's width breaks it
  int probes = 0;                   // scans run
  std::string note;                 // why none was found, or what it excludes
  std::string pytorch, tensorflow;  // the clamps to paste
};

struct PreconditionSet {
  Precondition inputs, weights, both;
};

struct PreconditionOptions {
  const Manifest* manifest = nullptr;  // null: RANUM's defaults for every range, every weight trains
  int64_t batch = 1;
  std::map<std::string, Interval> assumed;  // the user's ranges (--assume), over the defaults
  std::map<std::string, Interval> data;     // the hull of each data input over the manifest's batches
  double tolerance = 1e-2;                  // of each bound's search, relative to the distance it moved
  int max_probes = 400;                     // scans per scope at most
  double seconds_budget = 1;                // for the three scopes together
  Precision precision = Precision::Fp32;    // the numerics the scan proves in
};

// The three preconditions for the hazard at node `node_name` (its failure `failure`).
Result<PreconditionSet> find_preconditions(const Graph& g, const std::string& node_name, Failure failure,
                                           const PreconditionOptions& o);

}  // namespace grist
