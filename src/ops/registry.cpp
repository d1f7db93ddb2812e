#include "ops/registry.h"

#include <map>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace grist {

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_logic_ops(r);
    register_reduction_ops(r);
    register_softmax_and_loss_ops(r);
    register_linalg_ops(r);
    register_conv_pool_ops(r);
    register_normalization_ops(r);
    register_shape_ops(r);
    register_indexing_ops(r);
    register_random_ops(r);
    register_recurrent_ops(r);
    return r;
  }();
  return registry;
}

const OpDef* OpRegistry::find(std::string_view type, std::string_view domain) const {
  if (domain == "ai.onnx") domain = "";
  for (const auto& d : defs_)
    if (d.type == type && d.domain == domain) return &d;
  return nullptr;
}

void OpRegistry::add(const OpDef& def) { defs_.push_back(def); }

bool draws_random(const Graph& g) {
  const OpRegistry& reg = OpRegistry::global();
  for (const Node& n : g.nodes)
    if (const OpDef* def = reg.find(n.op_type, n.domain); def && def->has(kDrawsRandom)) return true;
  return false;
}

Status check_ops_supported(const Graph& g) {
  std::map<std::string, std::vector<std::string>> unsupported;  // op -> node names
  const OpRegistry& reg = OpRegistry::global();
  for (const Node& n : g.nodes)
    if (!reg.find(n.op_type, n.domain)) unsupported[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type].push_back(n.name);
  if (unsupported.empty()) return Status::ok();
  std::string msg = unsupported.size() > 1 ? "unsupported ops: " : "unsupported op: ";
  bool first = true;
  for (const auto& [op, names] : unsupported) {
    msg += fmt::format("{}{} ({})", first ? "" : "; ", op, fmt::join(names, ", "));
    first = false;
  }
  return Error{msg};
}

}  // namespace grist
