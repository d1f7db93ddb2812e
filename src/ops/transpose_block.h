// A matrix transposed in square blocks of one SIMD packet a side: the one transpose kernel the ops share.
#pragma once

#include <cstdint>
#include <type_traits>

#include "util/eigen.h"

namespace grist {

// dst[c·dst_stride + r] = src[r·src_stride + c] for r < rows, c < cols: the small-grid kernels' blocks of 16 planes
// to position-major and their sums back, and Transpose's batched matrices (copy_strided). Float and double go in
// square blocks of one packet a side (Eigen's ptranspose: 8×8 floats with AVX2), the edges and other types one value
// at a time: element by element, the transposes of mobilenet_v2's 8×8 depthwise layers cost more than their
// multiply-adds. (PacketBlock<__m256, 8> drops the vector type's alignment attribute as a template argument, as
// Eigen's own uses do: GCC's -Wignored-attributes is silenced for this function alone.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
template <class T>
void transpose_into(const T* src, int64_t rows, int64_t cols, int64_t src_stride, T* dst, int64_t dst_stride) {
  int64_t r = 0;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    namespace ei = Eigen::internal;
    using P = typename ei::packet_traits<T>::type;
    constexpr int64_t L = ei::packet_traits<T>::size;
    if constexpr (L > 1) {
      for (; r + L <= rows; r += L) {
        int64_t c = 0;
        for (; c + L <= cols; c += L) {
          ei::PacketBlock<P, L> block;
          for (int64_t i = 0; i < L; ++i) block.packet[i] = ei::ploadu<P>(src + (r + i) * src_stride + c);
          ei::ptranspose(block);
          for (int64_t i = 0; i < L; ++i) ei::pstoreu(dst + (c + i) * dst_stride + r, block.packet[i]);
        }
        for (; c < cols; ++c)
          for (int64_t i = 0; i < L; ++i) dst[c * dst_stride + r + i] = src[(r + i) * src_stride + c];
      }
    }
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}
#pragma GCC diagnostic pop

}  // namespace grist
