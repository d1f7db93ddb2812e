// Executor: runs a Graph forward and in reverse mode, over tensors it owns and reuses every iteration,
// and scans every node output (and every gradient) for the first NaN/Inf producer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/nonfinite.h"
#include "engine/precision.h"
#include "graph/graph.h"
#include "ops/op.h"
#include "util/rng.h"
#include "util/status.h"

namespace grist {

struct ExecutorOptions {
  // Treat denormal inputs and results as zero (x86 FTZ+DAZ), as TensorFlow's CPU kernels do.
  bool flush_denormals = false;
  // Look for the first node producing a non-finite value in every pass.
  bool scan_nonfinite = true;
  uint64_t seed = 0;
  // When set, overrides every Dropout node's training mode (false: identity; true: seeded mask).
  std::optional<bool> dropout_training;
  // Simulated 16-bit numerics for float32 models (engine/precision.h): fp16/bf16 round every float32 input,
  // weight, node output and gradient to the format; amp-* round those autocast computes in it.
  Precision precision = Precision::Fp32;
  // Frees each intermediate value, and each node's scratch (but up to 1 MiB of small scratch kept for the next pass:
  // Executor::kept_scratch_bytes), once its last consumer has run: a one-shot forward-only run (grist run without
  // --dump or --backward) then holds the weights and the live activations, not every activation. value() of a freed id
  // is an undefined tensor; graph outputs are kept; backward() refuses to run. A later forward() recomputes everything
  // (and allocates its values again). Such a pass (float32) also computes elementwise tails in place and a
  // BatchNormalization or Add with its Relu/Clip in one pass (OpDef::in_place, ops/fused_tail.h), with the same values
  // and the same first-producer report.
  bool release_dead_values = false;
  // Runs constant shape arithmetic once and skips it while its inputs stay (graph/constant_folding.h); a pass with
  // release_dead_values frees none of what it keeps.
  bool fold_constants = true;
};

class Executor {
 public:
  // Resolves every node's op; fails listing every unsupported op (with node names) at once.
  static Result<Executor> create(const Graph& graph, ExecutorOptions options = {});

  const Graph& graph() const { return *graph_; }
  ExecutorOptions& options() { return options_; }
  Rng& rng() { return rng_; }
  const Rng& rng() const { return rng_; }

  // Copies data into a graph input (or overrides an initializer). Checks dtype and declared rank/dims.
  Status set_input(ValueId id, const Tensor& t);
  Status set_input(const std::string& name, const Tensor& t);
  // Same, taking the tensor's buffer instead of copying it (a large weight is then never held twice).
  Status set_input(ValueId id, Tensor&& t);

  // Runs every node in order. With scanning on, forward_event() names the first non-finite producer.
  Status forward();
  // Reverse mode from `loss` (seeded with ones, i.e. the gradient of its sum) to the float inputs and
  // initializers in `wrt` (empty: all of them) that it depends on. Needs a forward() first. Only the
  // nodes between the two are visited: asking for the data input alone skips every weight gradient.
  Status backward(ValueId loss, std::span<const ValueId> wrt = {});
  // Reverse mode seeded with given gradients of several outputs (each seed shaped like its output).
  Status backward(std::span<const ValueId> outputs, std::span<const Tensor* const> seeds,
                  std::span<const ValueId> wrt = {});

  const Tensor& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  // Writable access to a stored tensor (weights for an optimizer); marks it for re-scanning.
  Tensor& mutable_value(ValueId id);
  // The gradient from the last backward(), or nullptr where none flowed.
  const Tensor* grad(ValueId id) const;
  // Whether that gradient holds no NaN/Inf: what the last backward's scan saw where it saw the whole gradient
  // (a value read by one node), else a pass over it. GradScaler's inf check, without a pass of its own.
  bool grad_finite(ValueId id) const;

  // The kernels the last forward() ran: every node but those it folded.
  size_t nodes_run() const { return nodes_run_; }

  const NonFiniteEvent& forward_event() const { return forward_event_; }
  // The node scratch a forward-only pass (release_dead_values) kept for the next.
  size_t kept_scratch_bytes() const { return kept_scratch_total_; }
  // The first gradient node that turned finite gradients into non-finite ones whose NaN/Inf reached a
  // wanted gradient (a `wrt` source of the last backward): a failure of the program's backward pass.
  const NonFiniteEvent& backward_event() const { return backward_event_; }
  // When no non-finite gradient reached a wanted one: the first producer whose NaN/Inf a later select,
  // mask or zero product removed (Clip's backward after sqrt′(0) = ∞, say). Useful to know, never a failure.
  const NonFiniteEvent& masked_backward_event() const { return masked_backward_event_; }

 private:
  Executor() = default;
  template <class T>
  Status store_input(ValueId id, T&& t);
  Status run_node_backward(size_t n);
  void note_forward_nonfinite(size_t n);
  void release_dead_values(size_t n);
  void release_scratch(size_t n);
  struct BackwardPlan {
    std::vector<ValueId> outputs, wrt;
    std::vector<uint8_t> needs_grad;  // per value
  };
  const BackwardPlan& plan_for(std::span<const ValueId> outputs, std::span<const ValueId> wrt);
  void settle_backward_events(const BackwardPlan& plan);
  // amp-* precisions (engine/autocast.h): the inputs an op computing in the 16-bit format reads, and whether
  // its results are in that format.
  void cast_autocast_inputs(size_t n, DType format);
  bool autocast_output_in_format(size_t n) const;
  void round_to_format_noting(ValueId id, Tensor& t, std::span<const ValueId> inputs, DType format);
  void note_rounding(NonFiniteEvent& e, ValueId out) const;
  bool finite_known(ValueId id);
  bool fold_holds(size_t n) const;
  void remember_fold(size_t n);

  const Graph* graph_ = nullptr;
  ExecutorOptions options_;
  Rng rng_;
  std::vector<const OpDef*> ops_;
  std::vector<Tensor> values_;
  std::vector<uint8_t> finite_;      // per value: finite in this pass (scan on)
  std::vector<uint8_t> dirty_;       // per value: input/initializer changed since its last scan
  std::vector<uint8_t> is_set_;      // per value: holds data (inputs, initializers, produced)
  std::vector<uint8_t> in_format_;   // per value: a float32 value holding the precision's 16-bit values
  std::vector<uint64_t> version_;    // per value: bumped whenever it is written (input, weight update, node output)
  std::vector<uint8_t> finite_before_rounding_;  // per value: finite before its rounding to the format (scan on)
  // Per value: finite after the rounding just done (1/0, counted in its pass), -1 once used or not known.
  std::vector<int8_t> finite_after_rounding_;
  std::vector<ValueId> zero_origin_;  // per value: the value whose rounding flushed its zeros, or kNoValue
  std::vector<NodeState> states_;
  std::vector<size_t> kept_scratch_;  // bytes of each node's scratch a forward-only pass keeps (release_scratch)
  size_t kept_scratch_total_ = 0;
  std::vector<int64_t> last_use_;    // per value: the last node reading it (-1: none); graph outputs: never freed
  // What release_dead_values may free after node n: release_list_[release_begin_[n], release_begin_[n + 1]), the
  // intermediates it reads or writes that no later node reads, each with its producer (whose fold may keep it).
  // One contiguous list: walking each node's value ids and the graph's Value records missed the cache on every
  // node (4 % of ShuffleNet's 784-node forward).
  std::vector<uint32_t> release_begin_;
  std::vector<std::pair<int32_t, int32_t>> release_list_;
  // Per-node argument arrays, built once so the hot loop only fills pointers.
  struct NodeArgs {
    std::vector<const Tensor*> in;
    std::vector<Tensor*> out;
    std::vector<const Tensor*> out_const;
    std::vector<const Tensor*> grad_out;
    std::vector<Tensor*> grad_in;
    std::vector<Tensor> edge_grad;  // per input: gradient scratch when the value has several consumers
    // A node run on half inputs: float32 copies of its inputs, outputs and their gradients, kept across passes.
    std::vector<Tensor> wide_in, wide_grad_in, wide_out, wide_grad_out;
    // amp-*: per input, the version of the value (and the format) wide_in holds a rounded copy of; 0: none. A
    // weight is cast once per update, not once per pass, and the backward reuses the forward's casts.
    std::vector<uint64_t> cast_version;
    std::vector<DType> cast_format;
  };
  std::vector<NodeArgs> args_;
  // Constant folding, per node: what a foldable node's kept outputs were computed from.
  struct FoldMemo {
    bool candidate = false;          // graph/constant_folding.h's rule, until a pass finds a float or large tensor
    bool holds = false;              // the outputs are those of the inputs recorded below
    std::vector<uint64_t> versions;  // per input read for its values: the version it ran on
    std::vector<Shape> shapes;       // per input read only for its shape: the shape it ran on
    std::vector<uint8_t> shape_only; // per input: graph/constant_folding.h's reads_only_shape
  };
  std::vector<FoldMemo> folds_;
  Precision fold_precision_ = Precision::Fp32;  // the precision the kept outputs were rounded under
  size_t nodes_run_ = 0;
  // Backward plans, one per (outputs, wrt) asked for; a hunt alternates between two or three.
  std::vector<BackwardPlan> plans_;
  const std::vector<uint8_t>* needs_grad_ = nullptr;  // the plan of the pass running
  bool backward_scanned_ = false;    // the last backward ran with scan_nonfinite
  Tensor loss_seed_;                 // ones shaped like the loss
  std::vector<Tensor> grads_;
  std::vector<uint8_t> has_grad_;    // per value, this pass
  std::vector<uint8_t> grad_finite_; // per value, this pass
  // Per value, this pass: which backward producer its gradient's NaN/Inf comes from (index into
  // backward_producers_), -1 while finite. A propagator passes its gradient outputs' origin on.
  std::vector<int32_t> grad_origin_;
  std::vector<NonFiniteEvent> backward_producers_;
  NonFiniteEvent forward_event_;
  NonFiniteEvent backward_event_;
  NonFiniteEvent masked_backward_event_;
};

// Sets x86 FTZ/DAZ for its lifetime when asked, restoring the previous mode after.
class FlushDenormalsScope {
 public:
  explicit FlushDenormalsScope(bool enable);
  ~FlushDenormalsScope();
  FlushDenormalsScope(const FlushDenormalsScope&) = delete;
  FlushDenormalsScope& operator=(const FlushDenormalsScope&) = delete;

 private:
  bool active_ = false;
  unsigned saved_ = 0;
};

}  // namespace grist
