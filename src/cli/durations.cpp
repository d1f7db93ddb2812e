#include "cli/durations.h"

#include <cmath>
#include <stdexcept>

namespace grist::cli {

Result<double> parse_duration(const std::string& text, TimeUnit bare_unit, const std::string& flag) {
  const char* bare = bare_unit == TimeUnit::Minutes ? "minutes" : "seconds";
  auto bad = [&] {
    return make_error("{} {}: expected a positive time such as 90s, 1.5m or 2h (a bare number is {})", flag, text,
                      bare);
  };
  if (text.empty()) return bad();
  double scale = bare_unit == TimeUnit::Minutes ? 60 : 1;
  std::string number = text;
  switch (text.back()) {
    case 's': scale = 1, number.pop_back(); break;
    case 'm': scale = 60, number.pop_back(); break;
    case 'h': scale = 3600, number.pop_back(); break;
    default: break;
  }
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(number, &used);
    if (used != number.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (!std::isfinite(v) || !(v > 0)) return bad();
  return v * scale;
}

}  // namespace grist::cli
