#include "search/search_choices.h"

#include "ops/hazard.h"

namespace grist {

ExecutorOptions program_executor_options(const Manifest& m) {
  ExecutorOptions eo;
  eo.flush_denormals = m.ftz;
  eo.precision = m.precision;
  eo.seed = m.search.seed;
  return eo;
}

Result<std::vector<ValueId>> trained_params(const Graph& g, const Manifest& m) {
  std::vector<ValueId> params;
  if (m.train.all_params) {
    for (ValueId id : g.initializers)
      if (is_float(g.value(id).dtype)) params.push_back(id);
    return params;
  }
  for (const auto& name : m.train.params) {
    ValueId id = g.find_value(name);
    GRIST_CHECK(id != kNoValue && g.value(id).kind == ValueKind::Initializer,
                "{}: train.params names '{}', which is not a weight (initializer) of the model", m.path, name);
    params.push_back(id);
  }
  return params;
}

Result<std::vector<ValueId>> search_variable_ids(const Graph& g, const Manifest& m) {
  std::vector<ValueId> ids;
  for (const auto& name : m.search_variables) {
    ValueId id = g.find_value(name);
    GRIST_CHECK(id != kNoValue && g.value(id).kind == ValueKind::Initializer && is_float(g.value(id).dtype),
                "{}: search.variables names '{}', which is not a float initializer of the model", m.path, name);
    ids.push_back(id);
  }
  return ids;
}

Status choose_objective(const Graph& g, const Manifest& m, std::vector<HazardSite>& hazards) {
  if (m.objective.empty() && m.objective_value.empty()) return Status::ok();
  HazardSite* site = nullptr;
  for (auto& s : hazards)
    if (s.node_name == m.target || std::to_string(s.id) == m.target) site = &s;
  GRIST_CHECK(site, "{}: search.objective is for hazard '{}', which the model does not have", m.path, m.target);
  if (!m.objective.empty()) {
    // The manifest's names (config/manifest.h) for the objectives of ops/hazard.h.
    static const std::pair<const char*, Objective> names[] = {
        {"min-abs", Objective::MinAbs}, {"min-abs-one-minus", Objective::MinAbsOneMinus},
        {"neg-max", Objective::NegMax}, {"max", Objective::Max}, {"min", Objective::Min},
        {"neg-spread", Objective::NegSpread}};
    bool known = false;
    for (auto [name, o] : names)
      if (m.objective == name) {
        site->objective = o;
        known = true;
      }
    GRIST_CHECK(known, "{}: search.objective '{}' is not an objective grist knows", m.path, m.objective);
  }
  if (!m.objective_value.empty()) {
    ValueId id = g.find_value(m.objective_value);
    GRIST_CHECK(id != kNoValue, "{}: search.objective_value '{}' is not a value of the model", m.path,
                m.objective_value);
    GRIST_CHECK(is_float(g.value(id).dtype), "{}: search.objective_value '{}' is not a float value", m.path,
                m.objective_value);
    site->objective_value = id;
  }
  // A hazard the automatic choice could not reach by data is reachable by the chosen objective.
  if (site->objective == Objective::None) site->objective = Objective::MinAbs;
  return Status::ok();
}

}  // namespace grist
