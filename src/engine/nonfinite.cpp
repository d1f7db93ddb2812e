#include "engine/nonfinite.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/kernel_util.h"
#include "tensor/half.h"

namespace grist {

namespace {

template <class T>
NonFiniteCounts count_typed(const T* p, int64_t n) {
  NonFiniteCounts c;
  for (int64_t i = 0; i < n; ++i) {
    T v = p[i];
    if (std::isfinite(v)) continue;
    if (std::isnan(v)) {
      ++c.nan;
    } else if (v > 0) {
      ++c.pos_inf;
    } else {
      ++c.neg_inf;
    }
    if (c.first_index < 0) c.first_index = i;
  }
  return c;
}

// A float is NaN or ±Inf exactly when its exponent bits are all ones: with the sign cleared, its bit
// pattern is at least that of +Inf. An integer max over the patterns vectorises (a float reduction would
// not, without fast-math), and this runs on every tensor of every pass.
template <class T>
bool all_finite_typed(const T* p, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kAbs = static_cast<Bits>(sizeof(T) == 4 ? 0x7fffffffull : 0x7fffffffffffffffull);
  constexpr Bits kInf = static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
  const Bits* b = reinterpret_cast<const Bits*>(p);
  // Sixteen independent lanes, so -O2's straight-line vectoriser turns the body into a few SIMD ops.
  constexpr int kLanes = 16;
  Bits lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] = std::max<Bits>(lane[k], b[i + k] & kAbs);
  Bits worst = 0;
  for (; i < n; ++i) worst = std::max<Bits>(worst, b[i] & kAbs);
  for (int k = 0; k < kLanes; ++k) worst = std::max(worst, lane[k]);
  return worst < kInf;
}

// The half types: NaN or ±Inf when the exponent bits (0x7c00 in float16, 0x7f80 in bfloat16) are all ones.
template <class H>
bool all_finite_half(const H* p, int64_t n, uint16_t inf) {
  uint16_t worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max<uint16_t>(worst, p[i].bits & 0x7fffu);
  return worst < inf;
}

template <class H>
NonFiniteCounts count_half(const H* p, int64_t n, uint16_t inf) {
  NonFiniteCounts c;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t a = p[i].bits & 0x7fffu;
    if (a < inf) continue;
    if (a > inf) ++c.nan;
    else if (p[i].bits & 0x8000u) ++c.neg_inf;
    else ++c.pos_inf;
    if (c.first_index < 0) c.first_index = i;
  }
  return c;
}

}  // namespace

NonFiniteCounts count_nonfinite(const Tensor& t) {
  if (t.dtype() == DType::Float16) return count_half(t.data<Half>(), t.numel(), 0x7c00u);
  if (t.dtype() == DType::BFloat16) return count_half(t.data<BFloat16>(), t.numel(), 0x7f80u);
  if (t.dtype() == DType::Float32) return count_typed(t.data<float>(), t.numel());
  if (t.dtype() == DType::Float64) return count_typed(t.data<double>(), t.numel());
  return {};
}

int64_t count_zeros(const Tensor& t) {
  int64_t n = 0;
  if (t.dtype() == DType::Float32) {
    // On the bit patterns in sixteen lanes, as all_finite_typed: it runs on every rounded tensor of a pass.
    const uint32_t* b = reinterpret_cast<const uint32_t*>(t.data<float>());
    constexpr int kLanes = 16;
    uint32_t lane[kLanes] = {};
    int64_t i = 0;
    // A lane counts one element in sixteen: it cannot wrap below 2^36 elements (256 GiB of float32).
    for (; i + kLanes <= t.numel(); i += kLanes)
      for (int k = 0; k < kLanes; ++k) lane[k] += (b[i + k] & 0x7fffffffu) == 0;
    for (int k = 0; k < kLanes; ++k) n += lane[k];
    for (; i < t.numel(); ++i) n += (b[i] & 0x7fffffffu) == 0;
  } else if (is_float(t.dtype())) {
    for (int64_t i = 0; i < t.numel(); ++i) n += t.get_as_double(i) == 0.0;
  }
  return n;
}

bool all_finite(const Tensor& t) {
  if (t.dtype() == DType::Float16) return all_finite_half(t.data<Half>(), t.numel(), 0x7c00u);
  if (t.dtype() == DType::BFloat16) return all_finite_half(t.data<BFloat16>(), t.numel(), 0x7f80u);
  if (t.dtype() == DType::Float32) return all_finite_typed(t.data<float>(), t.numel());
  if (t.dtype() == DType::Float64) return all_finite_typed(t.data<double>(), t.numel());
  return true;
}

NonFiniteEvent make_nonfinite_event(const Graph& g, int32_t n, bool in_backward, int slot,
                                    const std::string& value_name, const Tensor& bad,
                                    const std::vector<const Tensor*>& forward_inputs) {
  const Node& node = g.nodes[static_cast<size_t>(n)];
  NonFiniteEvent e;
  e.found = true;
  e.in_backward = in_backward;
  e.node = n;
  e.node_name = node.name;
  e.op_type = node.op_type;
  e.output_index = slot;
  e.value_name = value_name;
  e.shape = bad.shape();
  e.dtype = bad.dtype();
  e.counts = count_nonfinite(bad);
  auto idx = unravel(e.counts.first_index, bad.shape());
  e.first_index.assign(idx.begin(), idx.begin() + bad.rank());
  e.first_value = bad.get_as_double(e.counts.first_index);

  for (size_t i = 0; i < forward_inputs.size(); ++i) {
    const Tensor* in = forward_inputs[i];
    if (!in || !node.has_input(i)) continue;
    OperandAt op;
    op.name = g.value(node.inputs[i]).name;
    op.shape = in->shape();
    op.dtype = in->dtype();
    // Locate the operand's element when it broadcasts to the offending tensor's shape (elementwise ops).
    Shape joint;
    if (in->numel() > 0 && broadcast_shapes(in->shape(), bad.shape(), joint) && joint == bad.shape()) {
      auto st = broadcast_strides(in->shape(), bad.shape());
      int64_t off = 0;
      for (int d = 0; d < bad.rank(); ++d) off += idx[d] * st[d];
      op.has_value = true;
      op.value = in->get_as_double(off);
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t k = 0; k < in->numel(); ++k) {
      double v = in->get_as_double(k);
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    op.min = lo;
    op.max = hi;
    e.inputs.push_back(op);
  }
  return e;
}

std::string NonFiniteEvent::rounding_note() const {
  if (format == DType::Undefined) return "";
  const std::string_view f = format == DType::Float16 ? "float16" : "bfloat16";
  std::string s;
  if (finite_in_float32) s += fmt::format("; finite in float32: the rounding of its result to {} made it", f);
  if (!zero_input.empty()) {
    const std::string by = zero_by_node.empty() ? fmt::format("'{}'", zero_by_value)
                                                : fmt::format("{} '{}'", zero_by_op, zero_by_node);
    s += fmt::format("; input '{}' is 0 there because rounding {} to {} flushed it (non-zero in float32)",
                     zero_input, by, f);
  }
  return s;
}

std::string NonFiniteEvent::describe() const {
  if (!found) return "all values finite";
  std::string s = fmt::format("{}{} '{}' {}produced {} at [{}] of '{}' {} ({} NaN, {} +Inf, {} -Inf)", op_type,
                              in_backward ? " gradient" : "", node_name, masked ? "(masked later) " : "",
                              first_value, fmt::join(first_index, ", "), value_name, shape.str(), counts.nan, counts.pos_inf, counts.neg_inf);
  for (const auto& in : inputs) {
    if (in.has_value) {
      s += fmt::format("; input '{}' there = {}", in.name, in.value);
    } else {
      s += fmt::format("; input '{}' {} in [{}, {}]", in.name, in.shape.str(), in.min, in.max);
    }
  }
  s += rounding_note();
  return s;
}

}  // namespace grist
