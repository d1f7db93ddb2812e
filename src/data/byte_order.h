// In-place byte swapping for big-endian file formats (IDX always, .npy when descr says '>').
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace grist {

static_assert(std::endian::native == std::endian::little, "grist's readers assume a little-endian host");

namespace detail {
template <class U, U (*Swap)(U)>
void swap_each(std::byte* p, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i, p += sizeof(U)) {
    // memcpy rather than casts: the buffer need not be aligned for the element type.
    U v;
    std::memcpy(&v, p, sizeof(U));
    v = Swap(v);
    std::memcpy(p, &v, sizeof(U));
  }
}
inline uint16_t bswap16(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t bswap32(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t bswap64(uint64_t v) { return __builtin_bswap64(v); }
}  // namespace detail

// Reverses the bytes of each of `count` elements of `elem_size` bytes (1 is a no-op). The size is decided
// once, not per element: a loop testing it per byte cost a quarter of reading Fashion-MNIST's 47 MB of uint8
// images from the cache.
inline void swap_bytes_inplace(std::byte* p, std::size_t count, std::size_t elem_size) {
  switch (elem_size) {
    case 2: detail::swap_each<uint16_t, detail::bswap16>(p, count); break;
    case 4: detail::swap_each<uint32_t, detail::bswap32>(p, count); break;
    case 8: detail::swap_each<uint64_t, detail::bswap64>(p, count); break;
    default: break;
  }
}

// Reads a big-endian unsigned 32-bit integer.
inline uint32_t load_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace grist
