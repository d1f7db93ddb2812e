// Shared machinery for kernels: numpy broadcasting, reducing a broadcast gradient back to an operand's
// shape, and checks that turn malformed nodes into errors naming the node.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ops/op.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// numpy-style multidirectional broadcast of a and b into out; false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

// Strides of `in` viewed at the rank of `out` (right-aligned), 0 on broadcast dimensions.
std::array<int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out);

// broadcast_loop's in_index for one element `out_index` of `out`, computed directly: for loops that start
// anywhere, such as a chunk of a parallel_for.
template <int N>
std::array<int64_t, N> broadcast_index(const Shape& out,
                                       const std::array<std::array<int64_t, Shape::kMaxRank>, N>& strides,
                                       int64_t out_index) {
  std::array<int64_t, N> idx{};
  for (int d = out.rank() - 1; d >= 0; --d) {
    const int64_t at = out_index % out[d];
    out_index /= out[d];
    for (int k = 0; k < N; ++k) idx[k] += at * strides[k][d];
  }
  return idx;
}

// Calls g(std::integral_constant<unsigned, mask>) for the runtime `mask` < 2^N: code specialised to each mask.
template <int N, class G>
void with_constant_mask(unsigned mask, G&& g) {
  [&]<unsigned... M>(std::integer_sequence<unsigned, M...>) {
    (void)((mask == M ? (g(std::integral_constant<unsigned, M>{}), true) : false) || ...);
  }(std::make_integer_sequence<unsigned, 1u << N>{});
}

// Calls f(out_index, in_index[0..N)) for every element of `out`, in order, where operand k has `strides[k]` from
// broadcast_strides. Dimensions every operand steps through as one are merged first (a [1, C, 1, 1] bias over
// [N, C, H, W] loops over [N, C, H·W]), and the innermost one runs as a plain loop: where each operand steps by 0 or
// 1 along it (the common case), with those steps known at compile time, so that simple kernels vectorise (a
// per-channel bias add, a reduction's gradient; zoo 15's value-iteration network spent a third of its time in
// these loops' index bookkeeping).
template <int N, class F>
void broadcast_loop(const Shape& out, const std::array<std::array<int64_t, Shape::kMaxRank>, N>& strides, F&& f) {
  static_assert(N >= 1 && N <= 3, "specialised for up to three operands");
  if (out.numel() == 0) return;
  std::array<int64_t, Shape::kMaxRank> dims{};
  std::array<std::array<int64_t, Shape::kMaxRank>, N> st{};
  int rank = 0;
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    bool joins = rank > 0;
    for (int k = 0; k < N && joins; ++k) joins = st[k][rank - 1] == strides[k][d] * out[d];
    if (joins) {
      dims[rank - 1] *= out[d];
      for (int k = 0; k < N; ++k) st[k][rank - 1] = strides[k][d];
    } else {
      dims[rank] = out[d];
      for (int k = 0; k < N; ++k) st[k][rank] = strides[k][d];
      ++rank;
    }
  }
  if (rank == 0) {
    std::array<int64_t, N> idx{};
    f(int64_t{0}, idx);
    return;
  }
  const int64_t inner = dims[rank - 1], total = out.numel();
  std::array<int64_t, N> inner_stride;
  unsigned unit = 0;  // operands stepping by 1 along the inner dimension
  bool zero_or_one = true;
  for (int k = 0; k < N; ++k) {
    inner_stride[k] = st[k][rank - 1];
    if (inner_stride[k] == 1) unit |= 1u << k;
    zero_or_one &= inner_stride[k] == 0 || inner_stride[k] == 1;
  }
  std::array<int64_t, Shape::kMaxRank> counter{};
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    if (zero_or_one) {
      with_constant_mask<N>(unit, [&](auto mask) {
        constexpr unsigned kUnit = decltype(mask)::value;
        for (int64_t j = 0; j < inner; ++j) {
          std::array<int64_t, N> idx;
          for (int k = 0; k < N; ++k) idx[k] = base[k] + (((kUnit >> k) & 1u) ? j : 0);
          f(o + j, idx);
        }
      });
    } else {
      std::array<int64_t, N> idx = base;
      for (int64_t j = 0; j < inner; ++j) {
        f(o + j, idx);
        for (int k = 0; k < N; ++k) idx[k] += inner_stride[k];
      }
    }
    // Advance the outer counter (dims 0..rank-2) like an odometer.
    for (int d = rank - 2; d >= 0; --d) {
      ++counter[d];
      for (int k = 0; k < N; ++k) base[k] += st[k][d];
      if (counter[d] < dims[d]) break;
      for (int k = 0; k < N; ++k) base[k] -= st[k][d] * dims[d];
      counter[d] = 0;
    }
  }
}

// Sums `grad` (shaped like a broadcast result) down to `target`, the shape of the operand that was
// broadcast. Same dtype as grad. Used by every broadcasting op's backward.
void sum_to_shape(const Tensor& grad, const Shape& target, Tensor& out);

// Multi-index of flat offset i in shape s (for reports and gather-like kernels).
std::array<int64_t, Shape::kMaxRank> unravel(int64_t i, const Shape& s);

// Fails naming the node unless input i is present.
inline Status require_input(const ForwardContext& c, size_t i) {
  if (c.input(i) == nullptr)
    return make_error("node '{}' ({}): required input {} is missing", c.node.name, c.node.op_type, i);
  return Status::ok();
}

inline Error node_error(const Node& n, std::string_view what) {
  return make_error("node '{}' ({}): {}", n.name, n.op_type, what);
}

}  // namespace grist
