// What the non-finite scan found: the first node (in execution order) that turned finite inputs into a
// NaN or ±Inf — the producer, not a propagator — in the forward or the backward pass.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tensor/tensor.h"

namespace grist {

struct NonFiniteCounts {
  int64_t nan = 0;
  int64_t pos_inf = 0;
  int64_t neg_inf = 0;
  int64_t first_index = -1;  // flat index of the first non-finite element, -1 when all finite
  bool all_finite() const { return first_index < 0; }
};

// Counts NaN/+Inf/-Inf of a float tensor (integer and bool tensors are always finite).
NonFiniteCounts count_nonfinite(const Tensor& t);
// How many elements of a float tensor are exactly ±0 (the rounding to a 16-bit format may add some).
int64_t count_zeros(const Tensor& t);
// Cheap test used on the hot path; same answer as count_nonfinite(t).all_finite().
bool all_finite(const Tensor& t);

struct OperandAt {
  std::string name;       // the value's name in the graph
  Shape shape;
  DType dtype = DType::Undefined;
  bool has_value = false; // true when the operand's element at the offending index could be located
  double value = 0;       // that element (broadcasting applied)
  double min = 0, max = 0;  // over the whole operand (finite elements), for context
};

struct NonFiniteEvent {
  bool found = false;
  bool in_backward = false;   // the gradient of `node` produced it
  bool masked = false;        // backward: a later select, mask or zero product removed it before any wanted
                              // gradient (a weight's, the input's) became non-finite
  int32_t node = -1;          // index into Graph::nodes
  std::string node_name;
  std::string op_type;
  int output_index = 0;       // forward: which output; backward: which input's gradient
  std::string value_name;     // the tensor that became non-finite (for backward: the input whose gradient did)
  Shape shape;
  DType dtype = DType::Undefined;
  NonFiniteCounts counts;
  std::vector<int64_t> first_index;  // multi-index of the first offending element
  double first_value = 0;            // NaN, +inf or -inf
  std::vector<OperandAt> inputs;     // the node's inputs at that index (forward values)
  // Under a 16-bit precision (engine/precision.h), forward pass only:
  DType format = DType::Undefined;   // the format the producer's result was rounded to (Undefined: none)
  bool finite_in_float32 = false;    // that result was finite before the rounding: the format made the inf
  // An input that is 0 at the index because a rounding to the format flushed non-zero values to 0 upstream:
  // which input, and the node (or the weight / input, node_name empty) whose rounding did it.
  std::string zero_input;            // the input's name; empty when no input is such a zero
  std::string zero_by_node, zero_by_op, zero_by_value;

  // "Log produced -inf at [17, 3] of 'log_out' (1 NaN, 0 +Inf, 1 -Inf) from input x[17, 3] = 0"
  std::string describe() const;
  // "; finite in float32: the rounding of its result to float16 made it" (empty without a format).
  std::string rounding_note() const;
};

// Fills an event for node `n` whose tensor `bad` (output or input-gradient) is non-finite.
NonFiniteEvent make_nonfinite_event(const Graph& g, int32_t n, bool in_backward, int slot,
                                    const std::string& value_name, const Tensor& bad,
                                    const std::vector<const Tensor*>& forward_inputs);

}  // namespace grist
