#include "util/input_file.h"

#include <filesystem>

namespace grist {

Status check_input_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  GRIST_CHECK(fs::exists(st), "{}: cannot open file: {}", path, ec ? ec.message() : "No such file or directory");
  GRIST_CHECK(!fs::is_directory(st), "{}: is a folder, not {}", path, what);
  GRIST_CHECK(fs::is_regular_file(st), "{}: not a regular file (a pipe or device cannot be read as {})", path, what);
  const uintmax_t size = fs::file_size(path, ec);
  GRIST_CHECK(!ec, "{}: cannot read its size: {}", path, ec.message());
  GRIST_CHECK(size <= max_bytes, "{}: {} bytes, more than {} can hold here ({} bytes at most)", path, size, what,
              max_bytes);
  return Status::ok();
}

}  // namespace grist
