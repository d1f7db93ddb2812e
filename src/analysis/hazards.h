// Hazard sites: every place in a graph where an op can turn finite values into NaN/Inf, found from the
// ops' hazard entries and refined by the patterns around them (log of a softmax, log(1 − v), a softmax
// denominator), each with the GRIST objective that drives it to failure.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/hazard.h"
#include "tensor/tensor.h"

namespace grist {

struct HazardSite {
  int id = 0;                  // 1-based, in execution order
  int32_t node = -1;           // index into Graph::nodes
  std::string node_name;
  std::string op_type;
  int operand = 0;             // which input of the node the condition is on
  ValueId operand_value = kNoValue;
  Failure failure = Failure::LogOfNonPositive;
  Objective objective = Objective::MinAbs;
  ValueId objective_value = kNoValue;  // what the objective reads (a pattern may move it upstream)
  std::string pattern;         // "log(softmax)", "log(1 − v)", "softmax denominator", ... or ""
  std::string condition;       // "Log input ≤ 0"
  std::string fix_hint;
  std::string label() const;   // "#3 Log '/Log' (input ≤ 0)"
};

std::vector<HazardSite> find_hazards(const Graph& g);

}  // namespace grist
