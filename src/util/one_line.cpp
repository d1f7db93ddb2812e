#include "util/one_line.h"

#include <fmt/format.h>

namespace grist {

std::string one_line(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      s += c;
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\r') {
      s += "\\r";
    } else if (c == '\t') {
      s += "\\t";
    } else {
      s += fmt::format("\\x{:02x}", u);
    }
  }
  return s;
}

}  // namespace grist
