// The op registry: looks up an op's record by ONNX type and domain.
#pragma once

#include <string_view>
#include <vector>

#include "ops/op.h"

namespace grist {

class OpRegistry {
 public:
  // The registry with every op grist supports (built once, on first use).
  static const OpRegistry& global();

  const OpDef* find(std::string_view type, std::string_view domain = "") const;
  void add(const OpDef& def);
  const std::vector<OpDef>& all() const { return defs_; }

 private:
  std::vector<OpDef> defs_;
};

// OK when the registry has every op of the graph; otherwise one message listing every unsupported op with
// the name of every node that uses it.
Status check_ops_supported(const Graph& g);

// Whether some node of the graph draws random numbers (OpTrait kDrawsRandom: dropout masks, random ops).
bool draws_random(const Graph& g);

// Each family file defines one of these and adds its records; registry.cpp calls them all.
void register_elementwise_ops(OpRegistry& r);
void register_logic_ops(OpRegistry& r);
void register_reduction_ops(OpRegistry& r);
void register_softmax_and_loss_ops(OpRegistry& r);
void register_linalg_ops(OpRegistry& r);
void register_conv_pool_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_indexing_ops(OpRegistry& r);
void register_random_ops(OpRegistry& r);
void register_recurrent_ops(OpRegistry& r);

}  // namespace grist
