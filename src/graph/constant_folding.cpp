#include "graph/constant_folding.h"

namespace grist {

bool reads_only_shape(const Node& node, size_t input) {
  return input == 0 && node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size");
}

std::vector<uint8_t> fold_candidates(const Graph& g, const std::function<bool(const Node&)>& deterministic) {
  // A dtype the model leaves undeclared may still be an integer: the executor checks the tensor.
  auto may_be_float = [](DType t) { return t != DType::Undefined && is_float(t); };
  std::vector<uint8_t> constant(g.values.size(), 0), candidate(g.nodes.size(), 0);
  for (ValueId id : g.initializers)
    if (!may_be_float(g.value(id).dtype)) constant[static_cast<size_t>(id)] = 1;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    bool ok = deterministic(node);
    for (const auto& [key, a] : node.attributes) ok = ok && a.type != Attribute::Type::Graph;
    for (size_t i = 0; ok && i < node.inputs.size(); ++i) {
      const ValueId in = node.inputs[i];
      if (in == kNoValue || reads_only_shape(node, i)) continue;
      ok = constant[static_cast<size_t>(in)] && !may_be_float(g.value(in).dtype);
    }
    const bool constant_op = node.domain.empty() && node.op_type == "Constant";
    for (ValueId out : node.outputs)
      if (ok && out != kNoValue && !constant_op) ok = !may_be_float(g.value(out).dtype);
    if (!ok) continue;
    candidate[n] = 1;
    for (ValueId out : node.outputs)
      if (out != kNoValue) constant[static_cast<size_t>(out)] = 1;
  }
  return candidate;
}

}  // namespace grist
