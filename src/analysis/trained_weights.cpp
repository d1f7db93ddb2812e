#include "analysis/trained_weights.h"

#include <algorithm>

#include "ops/registry.h"

namespace grist {

std::vector<bool> reached_from(const Graph& g, const std::vector<bool>& from) {
  std::vector<bool> reached = from;
  for (const Node& n : g.nodes) {
    bool any = false;
    for (ValueId in : n.inputs) any = any || (in != kNoValue && reached[static_cast<size_t>(in)]);
    if (any)
      for (ValueId out : n.outputs)
        if (out != kNoValue) reached[static_cast<size_t>(out)] = true;
  }
  return reached;
}

std::vector<bool> trained_weights(const Graph& g, const Manifest* m) {
  std::vector<bool> trained(g.values.size(), false);
  if (m && !m->train.enabled) return trained;
  // The values a gradient from the loss (without a manifest: from any output) flows back to.
  std::vector<bool> to_loss(g.values.size(), false);
  if (m && !m->loss.empty()) {
    const ValueId loss = g.find_value(m->loss);
    if (loss == kNoValue) return trained;
    to_loss[static_cast<size_t>(loss)] = true;
  } else {
    for (ValueId out : g.outputs) to_loss[static_cast<size_t>(out)] = true;
  }
  const OpRegistry& reg = OpRegistry::global();
  for (size_t k = g.nodes.size(); k-- > 0;) {
    const Node& n = g.nodes[k];
    const OpDef* def = reg.find(n.op_type, n.domain);
    if (!def || !def->backward) continue;
    bool any = false;
    for (ValueId out : n.outputs) any = any || (out != kNoValue && to_loss[static_cast<size_t>(out)]);
    if (!any) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && (def->differentiable_inputs >> i & 1u)) to_loss[static_cast<size_t>(n.inputs[i])] = true;
  }
  for (ValueId id : g.initializers) {
    const Value& v = g.value(id);
    if (!is_float(v.dtype) || !to_loss[static_cast<size_t>(id)]) continue;
    // Without a manifest there is no training step to ask: multi-element tensors are taken for weights,
    // scalars for the constants exporters write as initializers (an ε, a scale).
    const bool listed = m ? m->train.all_params ||
                                std::find(m->train.params.begin(), m->train.params.end(), v.name) != m->train.params.end()
                          : v.initial && v.initial->numel() > 1;
    trained[static_cast<size_t>(id)] = listed;
  }
  return trained;
}

}  // namespace grist
