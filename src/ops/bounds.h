// The interval transfer an op record carries (OpDef::bounds), so `grist scan` can prove hazardous ops safe,
// and the reusable transfers, named by the property of the op they rely on. They live in ops/, not in
// analysis/, because every op family writes its transfer next to its kernel and ops must not depend on the
// analyses built on top of them. Transfers reach what they need to know about an op (its shape rule, its
// traits) through its record, never by its name.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "ops/interval_tensor.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

struct OpDef;

// What a transfer sees: the node, its op record, the input intervals (nullptr where an optional input
// is omitted) and the outputs it fills (shape, dtype, bounds; an output may be left blocked).
struct BoundsContext {
  const Node& node;
  const OpDef& def;
  std::span<const IntervalTensor* const> inputs;
  std::span<IntervalTensor> outputs;

  // Input i without blocks (IntervalTensor::without_blocks), for transfers written for element-wise and
  // smashed bounds. Transfers that handle blocks read `partitioned(i)`.
  const IntervalTensor* input(size_t i) const;
  const IntervalTensor* partitioned(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }

  mutable std::vector<std::unique_ptr<IntervalTensor>> unblocked_ = {};  // input()'s conversions
};

using BoundsFn = Status (*)(BoundsContext&);

// Reusable transfers, named by the property of the op they rely on.

// Ops non-decreasing in every data input (the op's differentiable inputs; the others must be exact, or
// any value of their shape gives the output's shape): the op's own kernel run at the lower and at the
// upper bounds gives the output bounds. Covers selections (Reshape, Gather, Concat, Slice, Pad, ...),
// Max/Min/Relu/Clip/MaxPool and monotone functions. `exact`: the op only selects or compares, no
// rounding to widen for.
// `data_inputs`: a mask overriding the differentiable inputs. `ranged_indices`: a non-exact non-data
// operand only picks elements (Gather indices, Where's condition), so the output lies in the data's hull;
// otherwise (a shape, axes, pads) it must be exact or the output is unbounded.
Status bounds_monotone(BoundsContext& c, bool exact, uint32_t data_inputs = 0, bool ranged_indices = false);
// Same for ops non-increasing in their data inputs (Neg).
Status bounds_antitone(BoundsContext& c, bool exact);
// Exact monotone selections; and inexact monotone functions (exp, log, tanh, ...).
inline Status bounds_select(BoundsContext& c) { return bounds_monotone(c, true); }
inline Status bounds_select_by_index(BoundsContext& c) { return bounds_monotone(c, true, 0, true); }
inline Status bounds_monotone_rounded(BoundsContext& c) { return bounds_monotone(c, false); }
// The same for a function whose float32 kernel never leaves `range` (sigmoid in [0, 1], tanh in [−1, 1]):
// the outward rounding is cut back to it, so 1 − sigmoid(x) is not made to look negative.
Status bounds_monotone_within(BoundsContext& c, Interval range);
// Monotone sums and means (ReduceSum, ReduceMean): the kernel at the bounds, widened by γ_n·(the kernel on
// |x|); with a shape rule, a single-interval input is summed without running the kernel.
Status bounds_monotone_sum(BoundsContext& c);
Status bounds_monotone_mean(BoundsContext& c);
// The same for any monotone sum: `terms` the most terms one output adds (0: input size / output size),
// `averaged` when the kernel divides the sum by its count (AveragePool, ReduceMean). A sum whose terms
// may overflow float32 may be ±inf or NaN.
Status bounds_sum_of_terms(BoundsContext& c, int64_t terms, bool averaged);
// A per-element function of two broadcast operands, given as an interval function that may flag NaN.
using IntervalBinaryFn = Interval (*)(Interval a, Interval b, bool& may_be_nan);
Status bounds_binary(BoundsContext& c, IntervalBinaryFn f);
// Variadic ops that fold their inputs left to right with f (Sum), on the inputs' grids.
Status bounds_fold(BoundsContext& c, IntervalBinaryFn f);
using IntervalUnaryFn = Interval (*)(Interval a, bool& may_be_nan);
Status bounds_unary(BoundsContext& c, IntervalUnaryFn f);
// Bilinear ops (MatMul, Gemm, Conv, ConvTranspose): inputs 0 and 1 multiplied, optional input 2 added.
// Two enclosures evaluated with the op's own kernel, intersected: the sign-split product (each bound split
// into positive and negative parts, eight products of non-negative tensors; exact unless both factors of
// a term straddle 0) and midpoint-radius (mid = op(a_m, b_m, c_m), radius = op(|a_m|, b_r, c_r) +
// op(a_r, |b_m| + b_r, 0); tighter when both do). Then γ_n·op(|a|, |b|, |c|) for the float32 sums, where
// n = `terms` (the longest dot product). Needs non-negative alpha/beta (checked by the caller).
Status bounds_bilinear(BoundsContext& c, int64_t terms);
// Inputs missing or unbounded: every output unbounded (shape from the kernel run at the bounds when it can).
Status bounds_unbounded(BoundsContext& c);

// For each index along dimension `dim` of x, the hull of the bounds of the elements there (a channel's
// interval from per-channel blocks, or from the whole tensor when it holds one interval).
std::vector<Interval> hulls_along(const IntervalTensor& x, int dim);

// Runs the op's forward kernel on concrete tensors (nullptr: omitted) into `outputs` (one per node output).
Status run_kernel(const Node& node, const OpDef& def, std::span<const Tensor* const> inputs,
                  std::vector<Tensor>& outputs);
// A float64 (or, for integer and bool data, the tensor's own type) tensor holding the lower / upper bounds.
Tensor lower_tensor(const IntervalTensor& t);
Tensor upper_tensor(const IntervalTensor& t);

}  // namespace grist
