// In-place byte swapping for big-endian file formats (IDX always, .npy when descr says '>').
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace grist {

static_assert(std::endian::native == std::endian::little, "grist's readers assume a little-endian host");

// Reverses the bytes of each of `count` elements of `elem_size` bytes (1 is a no-op).
inline void swap_bytes_inplace(std::byte* p, std::size_t count, std::size_t elem_size) {
  for (std::size_t i = 0; i < count; ++i, p += elem_size) {
    // memcpy rather than casts: the buffer need not be aligned for the element type.
    if (elem_size == 2) {
      uint16_t v;
      std::memcpy(&v, p, 2);
      v = __builtin_bswap16(v);
      std::memcpy(p, &v, 2);
    } else if (elem_size == 4) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      v = __builtin_bswap32(v);
      std::memcpy(p, &v, 4);
    } else if (elem_size == 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      v = __builtin_bswap64(v);
      std::memcpy(p, &v, 8);
    }
  }
}

// Reads a big-endian unsigned 32-bit integer.
inline uint32_t load_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace grist
