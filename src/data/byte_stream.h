// A pull-style byte source, so one header parser serves plain files, zip entries, gzip streams and
// in-memory buffers alike, and array data can be read straight into a Tensor without a staging copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "util/status.h"

namespace grist {

struct ByteStream {
  // Copies up to n bytes into dst and returns how many; 0 means the end. Errors carry the cause only
  // (the caller prefixes the file name).
  std::function<Result<std::size_t>(void* dst, std::size_t n)> read;
  // Total size when known up front; lets a reader refuse a too-short file before allocating for it.
  std::optional<uint64_t> size;
};

// Reads until n bytes or the end; returns the count read (less than n only at the end).
Result<std::size_t> read_fully(const ByteStream& s, void* dst, std::size_t n);

// True when the stream has no byte left (consumes at most one byte to find out).
Result<bool> at_end(const ByteStream& s);

// A stream over bytes the caller keeps alive.
ByteStream memory_stream(std::string_view bytes);

}  // namespace grist
