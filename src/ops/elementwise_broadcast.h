// Broadcast iteration shared by the elementwise and logic families. Each kernel writes its per-element
// math once as a lambda over flat indices; the helpers here pick the cheapest index pattern for the
// layouts real graphs use (same shapes, a scalar operand, a bias row) and fall back to the general
// odometer of broadcast_loop otherwise. Private to src/ops/elementwise.cpp and src/ops/logic.cpp.
#pragma once

#include <cstdint>
#include <span>

#include "ops/kernel_util.h"

namespace grist::elementwise {

// How an operand of shape `in` sits inside the broadcast shape `out`.
enum class Layout {
  Full,    // same element count as out: indexes like out
  Scalar,  // one element, repeated everywhere
  Row,     // equal to a trailing block of out: repeats every in.numel() elements
  General,
};

inline Layout layout_of(const Shape& in, const Shape& out) {
  const int64_t n = in.numel();
  if (n == out.numel()) return Layout::Full;  // broadcasting never reorders, so equal counts mean equal layout
  if (n == 1) return Layout::Scalar;
  // Row: dropping in's leading 1s leaves exactly out's trailing dims.
  int first = 0;
  while (first < in.rank() && in[first] == 1) ++first;
  const int kept = in.rank() - first;
  if (kept > out.rank()) return Layout::General;
  for (int d = 0; d < kept; ++d)
    if (in[first + d] != out[out.rank() - kept + d]) return Layout::General;
  return Layout::Row;
}

// Calls f(o, ia, ib) for every flat index o of `out`, with ia and ib the matching flat indices into the
// operands of shapes a and b (both broadcastable to out).
template <class F>
void for_each_pair(const Shape& a, const Shape& b, const Shape& out, F&& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Layout la = layout_of(a, out), lb = layout_of(b, out);
  if (la == Layout::Full && lb == Layout::Full) {
    for (int64_t i = 0; i < n; ++i) f(i, i, i);
  } else if (la == Layout::Full && lb == Layout::Scalar) {
    for (int64_t i = 0; i < n; ++i) f(i, i, int64_t{0});
  } else if (la == Layout::Scalar && lb == Layout::Full) {
    for (int64_t i = 0; i < n; ++i) f(i, int64_t{0}, i);
  } else if (la == Layout::Full && lb == Layout::Row) {
    const int64_t m = b.numel();
    for (int64_t r = 0; r < n; r += m)
      for (int64_t j = 0; j < m; ++j) f(r + j, r + j, j);
  } else if (la == Layout::Row && lb == Layout::Full) {
    const int64_t m = a.numel();
    for (int64_t r = 0; r < n; r += m)
      for (int64_t j = 0; j < m; ++j) f(r + j, j, r + j);
  } else {
    const std::array<std::array<int64_t, Shape::kMaxRank>, 2> strides{broadcast_strides(a, out),
                                                                      broadcast_strides(b, out)};
    broadcast_loop<2>(out, strides, [&](int64_t o, const std::array<int64_t, 2>& j) { f(o, j[0], j[1]); });
  }
}

// Calls f(o, i) for every flat index o of `out`, with i the matching index into an operand of shape `in`.
template <class F>
void for_each_broadcast(const Shape& in, const Shape& out, F&& f) {
  for_each_pair(in, out, out, [&](int64_t o, int64_t i, int64_t) { f(o, i); });
}

// Calls f(o, ia, ib, ic) over the broadcast of three operands (Where).
template <class F>
void for_each_triple(const Shape& a, const Shape& b, const Shape& c, const Shape& out, F&& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (a.numel() == n && b.numel() == n && c.numel() == n) {
    for (int64_t i = 0; i < n; ++i) f(i, i, i, i);
    return;
  }
  const std::array<std::array<int64_t, Shape::kMaxRank>, 3> strides{
      broadcast_strides(a, out), broadcast_strides(b, out), broadcast_strides(c, out)};
  broadcast_loop<3>(out, strides, [&](int64_t o, const std::array<int64_t, 3>& j) { f(o, j[0], j[1], j[2]); });
}

// The numpy broadcast of every shape in `shapes`, or an error naming the node.
inline Result<Shape> broadcast_all(const Node& node, std::span<const Shape* const> shapes) {
  Shape out;
  for (const Shape* s : shapes) {
    if (!broadcast_shapes(out, *s, out))
      return node_error(node, fmt::format("cannot broadcast shapes {} and {}", out.str(), s->str()));
  }
  return out;
}

inline Result<Shape> broadcast_two(const Node& node, const Shape& a, const Shape& b) {
  const Shape* shapes[] = {&a, &b};
  return broadcast_all(node, shapes);
}

// Writes into `grad_in` (shaped `target`) the gradient an operand receives when `fill(dst)` writes its
// per-output-element contribution into a tensor shaped like the output: straight into grad_in when no
// broadcasting happened, else through `scratch` and a reduction with sum_to_shape.
template <class Fill>
void write_operand_grad(Tensor& grad_in, DType dtype, const Shape& target, const Shape& out, Tensor& scratch,
                        Fill&& fill) {
  if (target == out) {
    grad_in.resize(dtype, out);
    fill(grad_in);
    return;
  }
  scratch.resize(dtype, out);
  fill(scratch);
  sum_to_shape(scratch, target, grad_in);
}

inline Error unsupported_dtype(const Node& node, DType t) {
  return node_error(node, fmt::format("does not support {} tensors", dtype_name(t)));
}

inline Error mismatched_dtypes(const Node& node, DType a, DType b) {
  return node_error(node, fmt::format("inputs must share one type, got {} and {}", dtype_name(a), dtype_name(b)));
}

}  // namespace grist::elementwise
