#include "search/training_phases.h"

namespace grist {

Result<std::vector<TrainingPhase>> training_phases(const Graph& g, const Manifest& m) {
  std::vector<TrainingPhase> phases;
  for (size_t i = 0; i < m.train.phases.size(); ++i) {
    const TrainPhase& spec = m.train.phases[i];
    const ValueId loss = g.find_value(spec.loss);
    GRIST_CHECK(loss != kNoValue, "{}: train.phases[{}].loss '{}' is not a value of the model", m.path, i, spec.loss);
    std::vector<ValueId> params;
    for (const auto& name : spec.params) {
      const ValueId id = g.find_value(name);
      GRIST_CHECK(id != kNoValue && g.value(id).kind == ValueKind::Initializer && is_float(g.value(id).dtype),
                  "{}: train.phases[{}].params names '{}', which is not a float weight (initializer) of the model",
                  m.path, i, name);
      params.push_back(id);
    }
    phases.push_back(TrainingPhase{loss, params, Optimizer(spec.optimizer, params), spec.steps});
  }
  return phases;
}

}  // namespace grist
