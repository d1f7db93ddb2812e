// For fuzz targets whose reader takes a path: the input's bytes written to one scratch file per process.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace grist::fuzz {

// Writes the bytes to /tmp/grist-fuzz-<pid><suffix> (replacing the previous input) and returns the path.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = "/tmp/grist-fuzz-" + std::to_string(getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

// A failure must be one line that starts with the path (then ": ", or ":LINE:" for a syntax error): the
// contract of every reader.
inline void check_error(const std::string& message, const std::string& path) {
  if (message.rfind(path + ":", 0) != 0 || message.find('\n') != std::string::npos) __builtin_trap();
}

}  // namespace grist::fuzz
