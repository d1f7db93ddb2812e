// Test helpers: run one op on given tensors, and compare its gradient with central finite differences.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/executor.h"
#include "graph/graph.h"
#include "ops/interval_tensor.h"
#include "tensor/tensor.h"
#include "util/rng.h"

namespace grist::testing {

// Attribute builders for single-node graphs.
Attribute attr_int(int64_t v);
Attribute attr_float(double v);
Attribute attr_string(std::string v);
Attribute attr_ints(std::vector<int64_t> v);
Attribute attr_floats(std::vector<double> v);
Attribute attr_tensor(Tensor t);

struct NodeSpec {
  std::string op_type;
  std::vector<std::pair<std::string, Attribute>> attributes = {};
  int num_outputs = 1;
  int opset = 17;
  // Inputs given as constants (initializers) rather than graph inputs, by index; e.g. shape operands.
  std::vector<int> constant_inputs = {};
};

// A NodeSpec with every field named (aggregate initialisation would leave some implicit and warn).
NodeSpec node_spec(std::string op, std::vector<std::pair<std::string, Attribute>> attributes = {},
                   int num_outputs = 1, int opset = 17);

// Chainable NodeSpec builder, e.g. Spec("TopK").outputs(2).constants({1}); converts to NodeSpec where one is expected.
struct Spec {
  NodeSpec s;
  explicit Spec(std::string op) { s.op_type = std::move(op); }
  Spec& attr(std::string name, Attribute a) {
    s.attributes.emplace_back(std::move(name), std::move(a));
    return *this;
  }
  Spec& outputs(int n) {
    s.num_outputs = n;
    return *this;
  }
  Spec& opset(int v) {
    s.opset = v;
    return *this;
  }
  Spec& constants(std::vector<int> inputs) {
    s.constant_inputs = std::move(inputs);
    return *this;
  }
  operator const NodeSpec&() const { return s; }  // NOLINT: used wherever a NodeSpec is expected
};

// A graph holding one node whose inputs are `inputs` (an undefined Tensor = omitted optional input).
Graph make_single_node_graph(const NodeSpec& spec, const std::vector<Tensor>& inputs);

// Runs the node forward; fails the test (and returns {}) on error.
std::vector<Tensor> run_node(const NodeSpec& spec, const std::vector<Tensor>& inputs, ExecutorOptions opts = {});
// Same, but returns the status so error paths can be tested.
Result<std::vector<Tensor>> try_run_node(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                                         ExecutorOptions opts = {});

// Random float64 tensor with values uniform in [lo, hi).
Tensor random_tensor(Rng& rng, const Shape& shape, double lo = -1.0, double hi = 1.0, DType dtype = DType::Float64);

struct GradCheckOptions {
  double step = 1e-6;       // central difference step
  double rel_tol = 1e-5;
  double abs_tol = 1e-7;
  std::vector<int> wrt;     // inputs to check; empty = every float input
  uint64_t seed = 7;
};

// Checks the analytic gradient of L = Σ_k Σ r_k ⊙ y_k (r_k random, fixed) against central differences,
// for float64 inputs. Adds a gtest failure naming op, input and element on mismatch.
void expect_gradient_matches(const NodeSpec& spec, const std::vector<Tensor>& inputs, GradCheckOptions opts = {});

// What each backward pass of allocations_after_first_pass starts from.
enum class BackwardFrom {
  FirstOutput,      // output 0, seeded with ones (Executor::backward(ValueId))
  FloatOutputsSeededWithValues,  // every float output, each seeded with its own first-pass value
};

// Tensor buffers allocated by `extra_passes` forward+backward passes of a single-node graph run after a first
// pass has sized everything (0 = steady state allocates nothing). Adds gtest failures if any step fails.
uint64_t allocations_after_first_pass(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                                      BackwardFrom from = BackwardFrom::FirstOutput, int extra_passes = 1);

// Every output at 40 points drawn from the boxes (float32 inputs, as models run; box k for float input k,
// corners often, infinite ends included) lies in the interval analysis' bounds, whose shapes are the kernel's.
// Non-float inputs of `shapes` are constants with their values; float ones give only their shape. Returns the
// bounds of the outputs for the caller's precision checks.
// `layout`: each box given as one interval for the whole input, or as the same interval per element (the
// analysis then takes its element-wise paths).
enum class BoxLayout { OneInterval, PerElement };
std::vector<IntervalTensor> expect_bounds_sound(const NodeSpec& spec, const std::vector<Tensor>& shapes,
                                                const std::vector<Interval>& boxes, uint64_t seed,
                                                BoxLayout layout = BoxLayout::OneInterval);

// Elementwise comparison with numpy.allclose semantics (NaNs equal each other).
::testing::AssertionResult tensors_close(const Tensor& expected, const Tensor& actual, double rtol = 1e-5,
                                         double atol = 1e-7);

}  // namespace grist::testing
