// The interval domain `grist scan` computes in: an interval per element, per block or per tensor, the
// float32 rounding rule that keeps it sound, and interval arithmetic. The op-level transfers built on it
// are in ops/bounds.h.
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
#include <vector>

#include "tensor/tensor.h"

namespace grist {

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

// Interval arithmetic (results rounded outward per the rule above); `nan` is set where a result may be NaN.
Interval interval_add(Interval a, Interval b, bool& nan);
Interval interval_sub(Interval a, Interval b, bool& nan);
Interval interval_mul(Interval a, Interval b, bool& nan);
Interval interval_div(Interval a, Interval b, bool& nan);

}  // namespace grist
