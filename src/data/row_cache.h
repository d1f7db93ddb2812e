// The folder of uncompressed copies of compressed IDX files (data/streamed_rows.h reads them instead of
// inflating the file again): where it is, what a copy is called, and keeping it from growing without end.
#pragma once

#include <cstdint>
#include <string>

namespace grist {

// The copies live in a folder of their own under the cache folder, so that tidying never meets a user's files
// even when $GRIST_CACHE_DIR names a folder that holds other things.
inline constexpr const char* kRowCacheFolder = "idx-rows";

// $GRIST_CACHE_DIR (empty or "off": no cache), else $XDG_CACHE_HOME/grist, else $HOME/.cache/grist.
std::string default_row_cache_dir();

// The copy of `path` in `cache_dir`/idx-rows: "<file name>-<path hash>-<key hash>". The path hash names the source:
// the machine (its /etc/machine-id), the device and the path with symlinks resolved (a link and its file share one copy; another
// machine's file at the same path in a shared folder is another source). The key adds the inode, size,
// modification and status-change times, so that a changed or replaced file is read afresh — also one copied with
// its mtime kept (cp -p, rsync -a, tar x), whose inode or ctime (which no user can set) differs. Empty when the
// file cannot be stat'ed.
std::string row_cache_file_for(const std::string& path, const std::string& cache_dir);

// What the folder may hold: $GRIST_CACHE_MAX_MB megabytes, else 2048 (Fashion-MNIST's copies take 55 MB).
uint64_t row_cache_limit_bytes();

// Called once `kept` (a copy just renamed into place) is complete: removes the copies of the same source
// file under other keys (it was changed or replaced: they are never read again), partial copies of
// processes that no longer run, and then the least recently used copies until the folder fits `limit_bytes`
// (`kept` itself is never removed). Only names this cache writes are touched; errors are ignored (best effort).
void tidy_row_cache(const std::string& kept, uint64_t limit_bytes);

// Marks a copy as just used (its modification time), for tidy_row_cache's least-recently-used order.
void touch_row_cache_file(const std::string& copy);

}  // namespace grist
