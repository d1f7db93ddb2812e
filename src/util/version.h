// grist's version, as `grist --version` prints it and as benchmark shards record it (shards of different
// versions do not merge).
#pragma once

#include <string_view>

namespace grist {

inline constexpr std::string_view kGristVersion = "0.1.0";

}  // namespace grist
