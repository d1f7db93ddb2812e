// `--assume NAME=LO,HI`, shared by `grist scan` and `grist fix`: the user's range for an input or a weight.
#pragma once

#include <string>
#include <utility>

#include "ops/bounds.h"
#include "util/status.h"

namespace grist::cli {

// "NAME=LO,HI" (the name may itself hold '='; LO and HI may be -inf/inf).
Result<std::pair<std::string, Interval>> parse_assumption(const std::string& text);

}  // namespace grist::cli
