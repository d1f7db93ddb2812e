// Interval bounds of tensors, and the interval transfer an op record carries (OpDef::bounds), so `grist scan`
// can prove hazardous ops safe. The domain lives here, not in analysis/, because every op family writes
// its transfer next to its kernel and ops must not depend on the analyses built on top of them.
//
// Soundness rule for float32 (docs/SCAN.md): bounds are doubles; a transfer whose result is not exact
// (arithmetic, transcendental functions) rounds its bounds outward to float32 and then one float32 ulp
// further, which covers the double computation and float32 rounding (libm functions two ulps more: glibc's
// float functions are off by up to two); sums add
// the classic accumulation bound γ_n·Σ|terms| (γ_n = n·u/(1 − n·u), u = 2⁻²⁴) before that. Bounds beyond
// the float32 range become ±inf. Selections and comparisons are exact and are not widened.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

struct OpDef;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Tensors up to this many elements keep one interval per element; larger ones are partitioned into at most
// this many blocks along their dimensions (DEBAR's and RANUM's tensor partitioning), or one interval.
constexpr int64_t kElementwiseLimit = 4096;
// A transfer that does not handle blocks sees a partitioned input expanded per element up to this size,
// as its hull beyond it (BoundsContext::input).
constexpr int64_t kExpandLimit = int64_t{1} << 15;

struct Interval {
  double lo = -kInf, hi = kInf;
  bool contains(double v) const { return lo <= v && v <= hi; }
  bool finite() const { return std::isfinite(lo) && std::isfinite(hi); }
};

// Outward rounding to float32 plus one ulp (see the rule above).
double round_down_f32(double v);
double round_up_f32(double v);
inline Interval widen_f32(Interval i) { return {round_down_f32(i.lo), round_up_f32(i.hi)}; }
// The float32 accumulation bound γ_n for a sum of n terms.
double gamma_f32(int64_t n);
// The error of a float32 sum of n terms of total magnitude Σ|terms|: γ_n·Σ|terms|, plus FLT_MIN per
// operation for results flushed to zero (FTZ) or products that underflow, which γ_n does not cover.
double sum_error_f32(int64_t n, double magnitude);

struct IntervalTensor {
  DType dtype = DType::Undefined;
  Shape shape;
  bool shape_known = false;
  // One entry per element; a single one for every element ("smashed"); or, when `blocks` is set, one per
  // block of the grid `blocks` (row-major): a shape of the tensor's rank whose every dimension is either 1
  // (all indices along it share a block) or the tensor's own size there (a block per index). A batch of
  // feature maps keeps one interval per channel as [1, C, 1, 1]; a batch of rows one per column as [1, N].
  std::vector<double> lo, hi;
  Shape blocks;
  bool may_be_nan = false;     // some element may be NaN (bounds then describe the non-NaN elements)
  std::shared_ptr<const Tensor> exact;  // the concrete value, when every input it depends on is known

  int64_t numel() const { return shape.numel(); }
  bool smashed() const { return lo.size() == 1 && numel() != 1; }
  bool blocked() const { return blocks.rank() > 0 && lo.size() > 1; }
  // The grid the bounds are stored on: `blocks`, the shape itself, or all ones (smashed); the tensor's rank.
  Shape grid() const;
  // Where element i's bounds are stored.
  size_t slot(int64_t i) const {
    if (lo.size() == 1) return 0;
    return blocks.rank() > 0 ? block_of(i) : static_cast<size_t>(i);
  }
  // Element i's bounds. A large exact tensor (a weight that does not train) stores only its hull, but
  // its elements are known: they are read from `exact` (a NaN element has the empty bounds [inf, −inf]).
  double lo_at(int64_t i) const { return at(i).lo; }
  double hi_at(int64_t i) const { return at(i).hi; }
  Interval at(int64_t i) const {
    if (exact && lo.size() == 1 && lo.size() != static_cast<size_t>(exact->numel())) {
      const double v = exact->get_as_double(i);
      return v == v ? Interval{v, v} : Interval{kInf, -kInf};
    }
    const size_t k = slot(i);
    return {lo[k], hi[k]};
  }
  Interval hull() const;  // over every element; [+inf, −inf] for an empty tensor
  bool bounded() const;   // finite bounds and no NaN

  static IntervalTensor unknown(DType dtype);  // shape and values unknown
  static IntervalTensor unbounded(DType dtype, const Shape& shape);
  static IntervalTensor filled(DType dtype, const Shape& shape, Interval range);
  static IntervalTensor of_exact(Tensor t);

 private:
  size_t block_of(int64_t i) const;

 public:
  // Element-wise bounds of a tensor larger than kElementwiseLimit become blocks: the dimensions along which
  // the bounds vary are kept, the largest dropped until at most kElementwiseLimit blocks remain.
  void partition_if_large();
  // Bounds given on `g` (dimensions 1 or the shape's, leading ones may be omitted): stored element-wise,
  // smashed or blocked, whichever `g` amounts to.
  void set_grid(const Shape& g);
  // Element-wise bounds (at most kExpandLimit elements) or the hull: a tensor without blocks.
  IntervalTensor without_blocks() const;
  // Integer and bool tensors hold whole values: bounds move inward to them.
  void snap_to_dtype();
};

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
// Monotone sums (ReduceSum, ReduceMean): the kernel at the bounds, widened by γ_n·(the kernel on |x|).
Status bounds_monotone_sum(BoundsContext& c);
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

// The output shape of MaxPool/AveragePool (kernel_shape, strides, dilations, pads, ceil_mode; auto_pad
// NOTSET or VALID) or of their global forms, from the input's shape alone; false where no rule applies.
bool pooled_shape(const Node& node, const Shape& x, bool global, Shape& out);

// Interval arithmetic used by several families (results rounded outward per the rule above).
Interval interval_add(Interval a, Interval b, bool& nan);
Interval interval_sub(Interval a, Interval b, bool& nan);
Interval interval_mul(Interval a, Interval b, bool& nan);
Interval interval_div(Interval a, Interval b, bool& nan);

// Runs the op's forward kernel on concrete tensors (nullptr: omitted) into `outputs` (one per node output).
Status run_kernel(const Node& node, const OpDef& def, std::span<const Tensor* const> inputs,
                  std::vector<Tensor>& outputs);
// A float64 (or, for integer and bool data, the tensor's own type) tensor holding the lower / upper bounds.
Tensor lower_tensor(const IntervalTensor& t);
Tensor upper_tensor(const IntervalTensor& t);

}  // namespace grist
