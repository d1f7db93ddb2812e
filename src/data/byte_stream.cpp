#include "data/byte_stream.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace grist {

Result<std::size_t> read_fully(const ByteStream& s, void* dst, std::size_t n) {
  auto* out = static_cast<std::byte*>(dst);
  std::size_t got = 0;
  while (got < n) {
    auto r = s.read(out + got, n - got);
    if (!r) return r.error();
    if (*r == 0) break;
    got += *r;
  }
  return got;
}

Result<bool> at_end(const ByteStream& s) {
  std::byte probe;
  auto r = read_fully(s, &probe, 1);
  if (!r) return r.error();
  return *r == 0;
}

ByteStream memory_stream(std::string_view bytes) {
  auto pos = std::make_shared<std::size_t>(0);
  ByteStream s;
  s.size = bytes.size();
  s.read = [bytes, pos](void* dst, std::size_t n) -> Result<std::size_t> {
    std::size_t k = std::min(n, bytes.size() - *pos);
    if (k) std::memcpy(dst, bytes.data() + *pos, k);
    *pos += k;
    return k;
  };
  return s;
}

}  // namespace grist
