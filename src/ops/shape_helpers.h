// Helpers shared by the shape and indexing kernels: short integer lists (axes, pads, shapes) read from
// attributes or operands without touching the heap, and copies between a contiguous tensor and a strided
// view of another (the one mechanism behind Transpose, Slice, Expand and Tile, forward and backward).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "ops/kernel_util.h"
#include "ops/transpose_block.h"

namespace grist {

// Up to 2·kMaxRank integers (enough for Pad's begin+end list), stored inline.
struct SmallInts {
  static constexpr int kCapacity = 2 * Shape::kMaxRank;
  std::array<int64_t, kCapacity> v{};
  int n = 0;
  int size() const { return n; }
  int64_t operator[](int i) const { return v[static_cast<size_t>(i)]; }
};

inline Status require_output(const ForwardContext& c, size_t i) {
  if (c.output(i) == nullptr) return node_error(c.node, fmt::format("required output {} is missing", i));
  return Status::ok();
}

inline Status read_ints(const Node& node, std::string_view what, const Attribute& a, SmallInts& out) {
  if (a.ints.size() > static_cast<size_t>(SmallInts::kCapacity))
    return node_error(node, fmt::format("'{}' has {} entries, more than grist supports", what, a.ints.size()));
  out.n = static_cast<int>(a.ints.size());
  for (int i = 0; i < out.n; ++i) out.v[static_cast<size_t>(i)] = a.ints[static_cast<size_t>(i)];
  return Status::ok();
}

inline Status read_ints(const Node& node, std::string_view what, const Tensor& t, SmallInts& out) {
  if (!is_integer(t.dtype()))
    return node_error(node, fmt::format("'{}' must be an integer tensor, got {}", what, dtype_name(t.dtype())));
  if (t.numel() > SmallInts::kCapacity)
    return node_error(node, fmt::format("'{}' has {} entries, more than grist supports", what, t.numel()));
  out.n = static_cast<int>(t.numel());
  for (int i = 0; i < out.n; ++i) out.v[static_cast<size_t>(i)] = t.get_as_int(i);
  return Status::ok();
}

// Several ops moved an integer list from an attribute (older opsets) to an optional input (newer ones).
// Reads whichever form the node uses; `found` is false when it gives neither.
template <class Ctx>
Status read_ints_attr_or_input(const Ctx& c, std::string_view name, size_t input, SmallInts& out, bool& found) {
  found = true;
  if (const Attribute* a = c.node.attr(name)) return read_ints(c.node, name, *a, out);
  if (const Tensor* t = c.input(input)) return read_ints(c.node, name, *t, out);
  found = false;
  out.n = 0;
  return Status::ok();
}

// Calls f(U{}) with U an unsigned type of `bytes` bytes: data movement only needs the element size.
template <class F>
void dispatch_bytes(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// Element o of a contiguous tensor (row-major over `dims`) corresponds to element
// `offset + Σ_d index_d · strides[d]` of another tensor. Twice kMaxRank dims so Tile can split each
// axis into (repeat, size).
struct StridedView {
  static constexpr int kMaxDims = 2 * Shape::kMaxRank;
  std::array<int64_t, kMaxDims> dims{};
  std::array<int64_t, kMaxDims> strides{};
  int rank = 0;
  int64_t offset = 0;

  void push(int64_t dim, int64_t stride) {
    dims[static_cast<size_t>(rank)] = dim;
    strides[static_cast<size_t>(rank)] = stride;
    ++rank;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= dims[static_cast<size_t>(d)];
    return n;
  }
  // Drops size-1 dims and merges neighbours that are contiguous with each other, so the innermost run
  // (a memcpy when its stride is 1) is as long as possible.
  void coalesce() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      const auto sd = static_cast<size_t>(d);
      if (dims[sd] == 1) continue;
      const auto prev = static_cast<size_t>(r - 1);
      if (r > 0 && strides[prev] == strides[sd] * dims[sd]) {
        dims[prev] *= dims[sd];
        strides[prev] = strides[sd];
      } else {
        dims[static_cast<size_t>(r)] = dims[sd];
        strides[static_cast<size_t>(r)] = strides[sd];
        ++r;
      }
    }
    rank = r;
  }
};

// Calls row(contiguous_start, strided_start, count, strided_step) for each innermost run of the view.
template <class F>
void for_each_strided_row(const StridedView& v, F&& row) {
  const int64_t total = v.numel();
  if (total == 0) return;
  if (v.rank == 0) {
    row(int64_t{0}, v.offset, int64_t{1}, int64_t{1});
    return;
  }
  const auto last = static_cast<size_t>(v.rank - 1);
  const int64_t inner = v.dims[last];
  std::array<int64_t, StridedView::kMaxDims> counter{};
  int64_t base = v.offset;
  for (int64_t o = 0; o < total; o += inner) {
    row(o, base, inner, v.strides[last]);
    for (size_t d = last; d-- > 0;) {  // odometer over the outer dims
      base += v.strides[d];
      if (++counter[d] < v.dims[d]) break;
      base -= v.strides[d] * v.dims[d];
      counter[d] = 0;
    }
  }
}

// Moves whole elements between a contiguous tensor and a view of another. Elements are copied as
// bytes (std::memcpy of a fixed size compiles to a plain load/store), so every dtype shares one path.
enum class StridedDirection { ViewToContiguous, ContiguousToView };

// The view is a batch of transposed matrices when, coalesced, it reads [B, R, C] with strides [R·C, 1, R]: each
// contiguous [C, R] block of the strided side is the transpose of an [R, C] block of the contiguous one. Returns R
// and C (0, 0 otherwise). TensorFlow's models move NHWC to NCHW and back this way around every convolution.
inline std::pair<int64_t, int64_t> batched_transpose(const StridedView& v) {
  if (v.rank < 2 || v.rank > 3 || v.offset != 0) return {0, 0};
  const auto last = static_cast<size_t>(v.rank - 1);
  const int64_t r = v.dims[last - 1], c = v.dims[last];
  if (v.strides[last - 1] != 1 || v.strides[last] != r) return {0, 0};
  if (v.rank == 3 && v.strides[0] != r * c) return {0, 0};
  return {r, c};
}

inline void copy_strided(const StridedView& v, const Tensor& src, Tensor& dst, StridedDirection dir) {
  const size_t es = dtype_size(src.dtype());
  const bool gather = dir == StridedDirection::ViewToContiguous;
  const bool packets = src.dtype() == DType::Float32 || src.dtype() == DType::Float64;
  // Plain names, not a structured binding: the lambda below captures them (clang before 16 cannot capture one).
  const std::pair<int64_t, int64_t> matrix = batched_transpose(v);
  const int64_t r = matrix.first, c = matrix.second;
  if (r > 0 && packets) {
    dispatch_float(src.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* s = src.data<T>();
      T* d = dst.data<T>();
      const int64_t batch = v.rank == 3 ? v.dims[0] : 1;
      for (int64_t b = 0; b < batch; ++b) {
        if (gather) transpose_into(s + b * r * c, c, r, r, d + b * r * c, c);
        else transpose_into(s + b * r * c, r, c, c, d + b * r * c, r);
      }
    });
    return;
  }
  dispatch_bytes(es, [&](auto tag) {
    constexpr size_t kSize = sizeof(tag);
    const std::byte* s = src.raw();
    std::byte* d = dst.raw();
    for_each_strided_row(v, [&](int64_t o, int64_t j, int64_t n, int64_t step) {
      std::byte* contiguous_out = d + o * static_cast<int64_t>(kSize);
      if (step == 1) {
        const size_t bytes = static_cast<size_t>(n) * kSize;
        if (gather) std::memcpy(contiguous_out, s + j * static_cast<int64_t>(kSize), bytes);
        else std::memcpy(d + j * static_cast<int64_t>(kSize), s + o * static_cast<int64_t>(kSize), bytes);
        return;
      }
      for (int64_t k = 0; k < n; ++k) {
        const int64_t strided = (j + k * step) * static_cast<int64_t>(kSize);
        const int64_t flat = (o + k) * static_cast<int64_t>(kSize);
        if (gather) std::memcpy(d + flat, s + strided, kSize);
        else std::memcpy(d + strided, s + flat, kSize);
      }
    });
  });
}

// dst[view(o)] += src[o] for a float contiguous src (the backward of ops that read an element many times).
inline void scatter_add_strided(const StridedView& v, const Tensor& src, Tensor& dst) {
  dispatch_float(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* d = dst.data<T>();
    for_each_strided_row(v, [&](int64_t o, int64_t j, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) d[j + k * step] += s[o + k];
    });
  });
}

}  // namespace grist
