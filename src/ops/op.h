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
  // nullptr: no gradient reaches that output (all zero). The executor calls a backward only when some output
  // has one, so the output of an op with a single float output always has it.
  std::span<const Tensor* const> grad_outputs;
  std::span<Tensor* const> grad_inputs;         // nullptr: not wanted. Kernels resize and overwrite.
  NodeState& state;

  const Tensor* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const Tensor* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  const Tensor* grad_output(size_t i) const { return i < grad_outputs.size() ? grad_outputs[i] : nullptr; }
  Tensor* grad_input(size_t i) const { return i < grad_inputs.size() ? grad_inputs[i] : nullptr; }
};

// What a shape rule sees: the node, each input's shape (nullptr where omitted) and the value of each input
// known exactly (shape operands, axes, pads; nullptr for data and for inputs known only by range). Like the
// kernel contexts it has `node` and `input(i)`, so one helper reads attributes and operands for both.
struct ShapeContext {
  const Node& node;
  std::span<const Shape* const> shapes;
  std::span<const Tensor* const> values;

  const Shape* shape(size_t i) const { return i < shapes.size() ? shapes[i] : nullptr; }
  const Tensor* input(size_t i) const { return i < values.size() ? values[i] : nullptr; }
};

using ForwardFn = Status (*)(ForwardContext&);
using BackwardFn = Status (*)(BackwardContext&);
// The output shapes (one per node output) from the input shapes and the known operand values alone, without
// running the kernel on data. An error where the rule needs what it was not given.
using ShapeFn = Status (*)(const ShapeContext&, std::vector<Shape>& outputs);
// Whether output 0 may be computed into input i's own buffer, for these inputs: the output then has that input's
// dtype and shape, and the kernel reads each element of it before writing the same element of the output, and
// no other element after (elementwise maps; BatchNormalization's channels). The executor asks only in
// forward-only runs, for an input no later node reads.
using InPlaceFn = bool (*)(std::span<const Tensor* const> inputs, size_t i);

// What analyses may assume about an op without knowing its name (OpDef::traits, bits).
enum OpTrait : uint32_t {
  // Output element i is a function of the inputs' elements broadcast to position i alone (Relu, Add, Clip):
  // the kernel run on per-block bounds gives per-block bounds.
  kElementwise = 1u << 0,
  // The output is the input with its dimensions reordered (Transpose): the kernel run on the grid of
  // per-block bounds reorders the blocks the same way.
  kPermutesDims = 1u << 1,
  // The output holds the input's elements in the same row-major order; only the shape changes (Reshape,
  // Flatten, Squeeze, Unsqueeze): blocks keep their order.
  kKeepsOrder = 1u << 2,
  // The output differs from run to run (random draws, dropout masks): never folded into a constant.
  kDrawsRandom = 1u << 3,
  // The kernel reads and writes float16/bfloat16 tensors itself (casts; constants copy their attribute's
  // bytes): the executor does not widen its half inputs to float32 around it.
  kHandlesHalf = 1u << 4,
};

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
  uint32_t traits = 0;  // OpTrait bits
  // The output shapes without the data (ops that select or reduce: the scan's shortcuts for large tensors
  // held as one interval); null: the scan runs the kernel to learn them.
  ShapeFn shape = nullptr;
  // Bit i set: input i is a probability (Dropout's ratio): a graph input left unstated there is taken in
  // RANUM's default [0.1, 0.9].
  uint32_t probability_inputs = 0;
  // Null: the output always gets a buffer of its own.
  InPlaceFn in_place = nullptr;

  bool has(OpTrait t) const { return (traits & t) != 0; }
};

constexpr uint32_t inputs_mask(std::initializer_list<int> idx) {
  uint32_t m = 0;
  for (int i : idx) m |= (1u << i);
  return m;
}
constexpr uint32_t kAllInputs = 0xffffffffu;

}  // namespace grist
