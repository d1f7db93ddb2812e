#include "ops/registry.h"

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

}  // namespace grist
