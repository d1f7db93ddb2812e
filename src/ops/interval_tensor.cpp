#include "ops/interval_tensor.h"

#include <algorithm>
#include <array>
#include <cfloat>

namespace grist {

// A positive result below FLT_MIN may be flushed to zero (FTZ, as TensorFlow runs): zero is its bound.
// Rounding to nearest never changes a sign and 0 is a float: a bound of exactly 0 stays 0, so a
// non-negative quantity (a product of non-negatives, exp's lower bound) is not made to look negative.
double round_down_f32(double v) {
  if (std::isnan(v)) return -kInf;
  if (v == -kInf) return -kInf;
  if (v >= 0 && v < FLT_MIN) return 0.0;
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafterf(f, -INFINITY);
  f = std::nextafterf(f, -INFINITY);  // the one-ulp margin of the rule
  return static_cast<double>(f);
}

double round_up_f32(double v) {
  if (std::isnan(v)) return kInf;
  if (v == kInf) return kInf;
  if (v <= 0 && v > -FLT_MIN) return 0.0;
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafterf(f, INFINITY);
  f = std::nextafterf(f, INFINITY);
  return static_cast<double>(f);
}

double sum_error_f32(int64_t n, double magnitude) {
  return gamma_f32(n) * magnitude + 2 * static_cast<double>(std::max<int64_t>(n, 1)) * FLT_MIN;
}

double gamma_f32(int64_t n) {
  const double nu = static_cast<double>(std::max<int64_t>(n, 1)) * 0x1.0p-24;
  return nu >= 1 ? kInf : nu / (1 - nu);
}

Interval IntervalTensor::hull() const {
  Interval h{kInf, -kInf};
  for (double v : lo) h.lo = std::min(h.lo, v);
  for (double v : hi) h.hi = std::max(h.hi, v);
  return h;
}

bool IntervalTensor::bounded() const {
  if (may_be_nan) return false;
  Interval h = hull();
  return lo.empty() || h.finite();
}

IntervalTensor IntervalTensor::unknown(DType dtype) {
  IntervalTensor t;
  t.dtype = dtype;
  t.lo = {-kInf};
  t.hi = {kInf};
  t.may_be_nan = is_float(dtype) || dtype == DType::Undefined;
  return t;
}

IntervalTensor IntervalTensor::unbounded(DType dtype, const Shape& shape) {
  IntervalTensor t = unknown(dtype);
  t.shape = shape;
  t.shape_known = true;
  return t;
}

IntervalTensor IntervalTensor::filled(DType dtype, const Shape& shape, Interval range) {
  IntervalTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.shape_known = true;
  t.lo = {range.lo};
  t.hi = {range.hi};
  return t;
}

IntervalTensor IntervalTensor::of_exact(Tensor value) {
  IntervalTensor t;
  t.dtype = value.dtype();
  t.shape = value.shape();
  t.shape_known = true;
  const int64_t n = value.numel();
  if (n <= kElementwiseLimit) {
    t.lo.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      double v = value.get_as_double(i);
      if (std::isnan(v)) {
        t.may_be_nan = true;
        t.lo[static_cast<size_t>(i)] = kInf;  // a NaN element has no value bounds; [inf, -inf] is empty
      } else {
        t.lo[static_cast<size_t>(i)] = v;
      }
    }
    t.hi = t.lo;
    for (int64_t i = 0; i < n; ++i)
      if (std::isnan(value.get_as_double(i))) t.hi[static_cast<size_t>(i)] = -kInf;
  } else {
    Interval h{kInf, -kInf};
    for (int64_t i = 0; i < n; ++i) {
      double v = value.get_as_double(i);
      if (std::isnan(v)) {
        t.may_be_nan = true;
        continue;
      }
      h.lo = std::min(h.lo, v);
      h.hi = std::max(h.hi, v);
    }
    t.lo = {h.lo};
    t.hi = {h.hi};
  }
  t.exact = std::make_shared<const Tensor>(std::move(value));
  return t;
}

size_t IntervalTensor::block_of(int64_t i) const {
  size_t block = 0, stride = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int64_t n = shape[d], index = i % n;
    i /= n;
    if (blocks[d] != 1) {
      block += static_cast<size_t>(index) * stride;
      stride *= static_cast<size_t>(blocks[d]);
    }
  }
  return block;
}

Shape IntervalTensor::grid() const {
  if (lo.size() == 1) {
    Shape ones;
    for (int d = 0; d < shape.rank(); ++d) ones.push_back(1);
    return ones;
  }
  return blocks.rank() > 0 ? blocks : shape;
}

void IntervalTensor::set_grid(const Shape& g) {
  Shape aligned;
  for (int d = g.rank(); d < shape.rank(); ++d) aligned.push_back(1);
  for (int64_t v : g) aligned.push_back(v);
  blocks = aligned.numel() <= 1 || aligned == shape || shape.numel() == 0 ? Shape{} : aligned;
}

IntervalTensor IntervalTensor::without_blocks() const {
  IntervalTensor t = *this;
  t.blocks = Shape{};
  if (!blocked()) return t;
  const int64_t n = numel();
  if (n > kExpandLimit) {
    const Interval h = hull();
    t.lo = {h.lo};
    t.hi = {h.hi};
    return t;
  }
  t.lo.resize(static_cast<size_t>(n));
  t.hi.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = slot(i);
    t.lo[static_cast<size_t>(i)] = lo[k];
    t.hi[static_cast<size_t>(i)] = hi[k];
  }
  return t;
}

void IntervalTensor::partition_if_large() {
  const int64_t n = numel();
  if (lo.size() <= 1 || blocks.rank() > 0 || n <= kElementwiseLimit) return;
  const int rank = shape.rank();
  std::array<int64_t, Shape::kMaxRank> stride{}, index{};
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    stride[d] = s;
    s *= shape[d];
  }
  // The dimensions along which some element's bounds differ from its predecessor's: smashing any other
  // loses nothing.
  std::array<bool, Shape::kMaxRank> varies{};
  for (int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < rank; ++d) {
      if (varies[d] || index[d] == 0) continue;
      const size_t j = static_cast<size_t>(i - stride[d]);
      if (lo[static_cast<size_t>(i)] != lo[j] || hi[static_cast<size_t>(i)] != hi[j]) varies[d] = true;
    }
    for (int d = rank - 1; d >= 0 && ++index[d] == shape[d]; --d) index[d] = 0;
  }
  Shape g;
  for (int d = 0; d < rank; ++d) g.push_back(varies[d] ? shape[d] : 1);
  while (g.numel() > kElementwiseLimit) {  // drop the largest kept dimension (the earliest of equals)
    int widest = 0;
    for (int d = 1; d < rank; ++d)
      if (g[d] > g[widest]) widest = d;
    g[widest] = 1;
  }
  std::vector<double> block_lo(static_cast<size_t>(g.numel()), kInf), block_hi(block_lo.size(), -kInf);
  blocks = g;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = block_of(i);
    block_lo[k] = std::min(block_lo[k], lo[static_cast<size_t>(i)]);
    block_hi[k] = std::max(block_hi[k], hi[static_cast<size_t>(i)]);
  }
  lo = std::move(block_lo);
  hi = std::move(block_hi);
  if (lo.size() == 1) blocks = Shape{};
}

void IntervalTensor::snap_to_dtype() {
  if (dtype == DType::Bool) {
    for (auto& v : lo) v = std::max(v, 0.0);
    for (auto& v : hi) v = std::min(v, 1.0);
  }
  if (!is_integer(dtype) && dtype != DType::Bool) return;
  for (auto& v : lo) v = std::ceil(v);
  for (auto& v : hi) v = std::floor(v);
  may_be_nan = false;
}

// ---- interval arithmetic ----------------------------------------------------------------------------

namespace {
Interval corners(double p, double q, double r, double s, bool& nan) {
  if (std::isnan(p) || std::isnan(q) || std::isnan(r) || std::isnan(s)) {
    nan = true;
    return {};
  }
  return widen_f32({std::min({p, q, r, s}), std::max({p, q, r, s})});
}
}  // namespace

Interval interval_add(Interval a, Interval b, bool& nan) {
  const double lo = a.lo + b.lo, hi = a.hi + b.hi;
  if (std::isnan(lo) || std::isnan(hi) || (std::isinf(a.lo) && std::isinf(b.hi) && a.lo != b.hi) ||
      (std::isinf(a.hi) && std::isinf(b.lo) && a.hi != b.lo)) {
    nan = true;
    return {};
  }
  return widen_f32({lo, hi});
}

Interval interval_sub(Interval a, Interval b, bool& nan) { return interval_add(a, {-b.hi, -b.lo}, nan); }

Interval interval_mul(Interval a, Interval b, bool& nan) {
  // 0·inf: a zero inside one operand meets an infinite bound of the other (corners miss interior zeros).
  if ((a.contains(0) && !b.finite()) || (b.contains(0) && !a.finite())) nan = true;
  return corners(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi, nan);
}

Interval interval_div(Interval a, Interval b, bool& nan) {
  if (b.contains(0)) {
    if (a.contains(0) || (b.lo == 0 && b.hi == 0) || (!a.finite() && !b.finite())) nan = true;  // 0/0, inf/inf
    return {};
  }
  return corners(a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi, nan);
}

}  // namespace grist
