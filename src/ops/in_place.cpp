#include "ops/in_place.h"

#include <string_view>

#include "ops/kernel_util.h"

namespace grist {

namespace {

// unary_forward (elementwise.cpp): out[i] = op(in[i]), in the input's dtype and shape.
constexpr std::string_view kMaps[] = {"Neg",  "Abs",      "Sign",       "Relu",     "LeakyRelu", "Sqrt",
                                      "Exp",  "Log",      "Reciprocal", "Sigmoid",  "Tanh",      "Softplus",
                                      "Softsign", "Erf",  "HardSigmoid", "HardSwish", "Elu",     "Selu",
                                      "Celu", "ThresholdedRelu", "Mish", "Floor",   "Ceil",      "Round"};
// binary_forward (elementwise.cpp): py[o] = op(pa[i], pb[j]) through for_each_pair, which reads an operand of the
// output's own shape at the output's index.
constexpr std::string_view kBroadcasts[] = {"Add", "Sub", "Mul", "Div", "PRelu"};

bool listed(std::span<const std::string_view> names, std::string_view type) {
  for (std::string_view n : names)
    if (n == type) return true;
  return false;
}

// An operand already of the broadcast's shape and of every other operand's dtype.
bool full_operand(std::span<const Tensor* const> in, size_t i) {
  const Tensor* donor = in[i];
  for (size_t k = 0; k < in.size(); ++k) {
    if (k == i || in[k] == nullptr) continue;
    Shape joint;
    if (in[k]->dtype() != donor->dtype() || !broadcast_shapes(donor->shape(), in[k]->shape(), joint) ||
        joint != donor->shape())
      return false;
  }
  return true;
}

}  // namespace

bool may_compute_in_place(const Node& node, std::span<const Tensor* const> inputs, size_t i) {
  if (!node.domain.empty() || i >= inputs.size() || inputs[i] == nullptr) return false;
  const std::string_view type = node.op_type;
  // Clip (clip_forward) maps X alone, its limits being scalars. BatchNormalization (batch_norm_forward) reads a
  // channel of X (and its statistics, in training mode) before writing that channel of Y; channels are disjoint.
  if (type == "Clip" || type == "BatchNormalization" || listed(kMaps, type)) return i == 0;
  if (listed(kBroadcasts, type)) return full_operand(inputs, i);
  return false;
}

}  // namespace grist
