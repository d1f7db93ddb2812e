// Creating output files safely: a reader never sees a half-written file, and an existing file is never
// replaced (grist writes inputs it found; clobbering a user's data would be worse than failing).
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace grist {

// Writes `bytes` to a temporary file beside `path`, flushes it, then links it into place only if `path`
// does not exist yet (renameat2 RENAME_NOREPLACE, or link() where the filesystem lacks it). Fails with
// "<path>: already exists; refusing to overwrite it" otherwise.
Status write_new_file(const std::string& path, std::string_view bytes);

}  // namespace grist
