// The report of `grist hunt`, per hazard: triggered or not, when, where (the producer, the violated
// condition, the chain to the loss), how to fix it, and the witness saved.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "report/witness.h"
#include "search/hunt.h"

namespace grist {

struct HuntContext {
  std::string model;
  std::string loss;                               // empty: the chain goes to the first output
  std::map<int, WitnessFiles> witnesses;          // by outcome index
  double process_seconds = 0;
};

// The whole report at once (hazards, every outcome, the summary), as text and as one JSON document.
std::string to_text(const Graph& g, const HuntReport& r, const HuntContext& c);
nlohmann::json to_json(const Graph& g, const HuntReport& r, const HuntContext& c);

// Its parts, for a report printed as the hunt goes (`grist hunt` prints each outcome the moment it is final;
// --json writes them as JSON Lines): the hazard list, one outcome with its witness files (null: none), the
// summary.
std::string hazards_text(const Graph& g, const HuntReport& r, const HuntContext& c);
std::string outcome_text(const Graph& g, const HuntReport& r, const HazardOutcome& o, const HuntContext& c,
                         const WitnessFiles* w);
std::string summary_text(const HuntReport& r);
nlohmann::json hazards_json(const Graph& g, const HuntReport& r);
nlohmann::json outcome_json(const Graph& g, const HuntReport& r, const HazardOutcome& o, const HuntContext& c,
                            const WitnessFiles* w);
nlohmann::json summary_json(const HuntReport& r);

nlohmann::json to_json(const WeightMove& m);

// "Log input ≤ 0 at [17, 3] = 0" for a producer whose op has a hazard entry; otherwise the event itself.
std::string violated_condition(const HuntReport& r, const HazardOutcome& o);

}  // namespace grist
