// The op record: everything grist knows about one ONNX op type lives in one OpDef, registered from the
// file of its family (elementwise, reductions, linalg, shape, random, losses, ...).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "ops/bounds.h"
#include "ops/hazard.h"
#include "tensor/tensor.h"
#include "util/rng.h"
#include "util/status.h"

namespace grist {

// Per-node storage that lives as long as the executor: a kernel may keep what its backward needs
// (a dropout mask, argmax indices) or scratch buffers, reused every iteration.
struct NodeState {
  std::deque<Tensor> saved;  // a deque: taking a higher slot never moves the slots already handed out
  Tensor& slot(size_t i) {
    if (saved.size() <= i) saved.resize(i + 1);
    return saved[i];
  }
};

struct ForwardContext {
  const Node& node;
  std::span<const Tensor* const> inputs;  // nullptr where the optional input is omitted
  std::span<Tensor* const> outputs;       // nullptr where the optional output is not wanted
  NodeState& state;
  Rng& rng;
  // When set, overrides a Dropout node's own training mode (the GRIST monitor runs with dropout off).
  std::optional<bool> dropout_training;

  const Tensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Tensor* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
};

struct BackwardContext {
  const Node& node;
  std::span<const Tensor* const> inputs;        // the forward inputs (nullptr where omitted)
  std::span<const Tensor* const> outputs;       // the forward outputs
  std::span<const Tensor* const> grad_outputs;  // nullptr: no gradient reaches that output (all zero)
  std::span<Tensor* const> grad_inputs;         // nullptr: not wanted. Kernels resize and overwrite.
  NodeState& state;

  const Tensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const Tensor* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  const Tensor* grad_output(size_t i) const { return i < grad_outputs.size() ? grad_outputs[i] : nullptr; }
  Tensor* grad_input(size_t i) const { return i < grad_inputs.size() ? grad_inputs[i] : nullptr; }
};

using ForwardFn = Status (*)(ForwardContext&);
using BackwardFn = Status (*)(BackwardContext&);

struct OpDef {
  std::string_view type;    // ONNX op type, e.g. "Conv"
  std::string_view domain;  // "" for ai.onnx
  ForwardFn forward = nullptr;
  // Null when no input can receive a gradient (comparisons, Shape, ArgMax, random ops, ...).
  BackwardFn backward = nullptr;
  // Bit i set: input i can receive a gradient (only float tensors ever do).
  uint32_t differentiable_inputs = 0;
  // How the op can turn finite inputs into NaN/Inf, with the GRIST objective for each way (ops/hazard.h).
  std::span<const HazardSpec> hazards = {};
  // The interval transfer (ops/bounds.h) `grist scan` propagates ranges with; null: outputs unbounded.
  BoundsFn bounds = nullptr;
};

constexpr uint32_t inputs_mask(std::initializer_list<int> idx) {
  uint32_t m = 0;
  for (int i : idx) m |= (1u << i);
  return m;
}
constexpr uint32_t kAllInputs = 0xffffffffu;

}  // namespace grist
