#include "cli/assume.h"

#include <cmath>
#include <stdexcept>

namespace grist::cli {

Result<std::pair<std::string, Interval>> parse_assumption(const std::string& text) {
  const size_t eq = text.rfind('=');
  const size_t comma = text.find(',', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || comma == std::string::npos)
    return make_error("--assume {}: expected NAME=LO,HI, e.g. x=0,1", text);
  auto number = [](const std::string& s, double& v) {
    try {
      size_t used = 0;
      v = std::stod(s, &used);
      return used == s.size() && !std::isnan(v);
    } catch (const std::exception&) {
      return false;
    }
  };
  double lo = 0, hi = 0;
  if (!number(text.substr(eq + 1, comma - eq - 1), lo) || !number(text.substr(comma + 1), hi))
    return make_error("--assume {}: LO and HI must be numbers (inf allowed)", text);
  return std::pair{text.substr(0, eq), Interval{lo, hi}};
}

}  // namespace grist::cli
