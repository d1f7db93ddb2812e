// Time limits on the command line: a number with an explicit unit (90s, 1.5m, 2h) or a bare number in the
// subcommand's own unit (minutes for hunt, as GRIST's experiments.conf; seconds for bench). Refuses what
// would never end or never start: zero, negative, NaN and infinite limits.
#pragma once

#include <string>

#include "util/status.h"

namespace grist::cli {

enum class TimeUnit { Seconds, Minutes };

// The limit in seconds; errors name the flag.
Result<double> parse_duration(const std::string& text, TimeUnit bare_unit, const std::string& flag);

}  // namespace grist::cli
