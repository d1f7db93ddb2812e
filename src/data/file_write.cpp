#include "data/file_write.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace grist {

namespace {

Error exists_error(const std::string& path) { return make_error("{}: already exists; refusing to overwrite it", path); }

// Creates a fresh temporary file next to `path` (same filesystem, so it can be linked into place).
// Mode 0666 lets the umask decide the final permissions, as for any ordinary new file.
int create_temp(const std::string& path, std::string& temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

Status write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{std::strerror(errno)};
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) return Error{std::strerror(errno)};
  return Status::ok();
}

// Moves `temp` to `path` unless `path` exists; the check and the move are one atomic step.
Status publish(const std::string& temp, const std::string& path) {
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return Status::ok();
  if (errno == EEXIST) return exists_error(path);
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return make_error("{}: cannot create file: {}", path, std::strerror(errno));
  // The filesystem does not support RENAME_NOREPLACE: link() also fails rather than replace.
  if (::link(temp.c_str(), path.c_str()) == 0) {
    ::unlink(temp.c_str());
    return Status::ok();
  }
  if (errno == EEXIST) return exists_error(path);
  return make_error("{}: cannot create file: {}", path, std::strerror(errno));
}

}  // namespace

Status write_new_file(const std::string& path, std::string_view bytes) {
  struct stat st;
  // Early, friendly check; publish() repeats it atomically in case the file appears meanwhile.
  if (::lstat(path.c_str(), &st) == 0) return exists_error(path);
  std::string temp;
  int fd = create_temp(path, temp);
  if (fd < 0) return make_error("{}: cannot create file: {}", path, std::strerror(errno));
  Status wrote = write_all(fd, bytes);
  const bool closed = ::close(fd) == 0;
  if (!wrote || !closed) {
    std::string why = wrote ? std::strerror(errno) : wrote.message();  // before unlink() can change errno
    ::unlink(temp.c_str());
    return make_error("{}: write failed: {}", path, why);
  }
  Status published = publish(temp, path);
  if (!published) ::unlink(temp.c_str());
  return published;
}

}  // namespace grist
