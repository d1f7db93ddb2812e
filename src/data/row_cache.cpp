#include "data/row_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include <fmt/format.h>

namespace grist {

namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// A complete copy, "<name>-<8 hex>-<16 hex>", and a partial one: "<copy>.partial-<pid>-<n>". (Session 9's
// single-hash copies lie in the folder above idx-rows/, which tidying never reads.)
const std::regex& copy_name() {
  static const std::regex re(R"(.+-[0-9a-f]{8}-[0-9a-f]{16})");
  return re;
}
const std::regex& partial_name() {
  static const std::regex re(R"(.+-[0-9a-f]{8}-[0-9a-f]{16}\.partial-([0-9]+)-[0-9]+)");
  return re;
}

// The machine's systemd/D-Bus id, stable across reboots and hostname changes (a container's hostname changes with
// every `docker run`, and a cache folder kept between runs would never be reused); empty where there is none.
const std::string& machine_id() {
  static const std::string id = [] {
    for (const char* path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
      std::ifstream f(path);
      std::string line;
      if (f && std::getline(f, line) && !line.empty()) return line;
    }
    return std::string();
  }();
  return id;
}

bool process_runs(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

std::string default_row_cache_dir() {
  if (const char* dir = std::getenv("GRIST_CACHE_DIR"))
    return std::string(dir) == "off" ? std::string() : std::string(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "grist").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "grist").string();
  return "";
}

std::string row_cache_file_for(const std::string& path, const std::string& cache_dir) {
  // The file itself, not the name it was reached by: two links to one file share a copy instead of each
  // tidying away the other's as a stale version of "the same source".
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  struct stat st {};
  if (ec || ::stat(real.c_str(), &st) != 0) return "";
  // "The same source" is this path on this machine's device: a cache folder shared over NFS may hold another
  // machine's copy of another file at the same path, and replacing one must not remove the other.
  const std::string source =
      fmt::format("{}\n{}\n{}", machine_id(), static_cast<unsigned long long>(st.st_dev), real.string());
  const std::string key =
      fmt::format("{}\n{}\n{}\n{}.{}\n{}.{}", source, static_cast<unsigned long long>(st.st_ino),
                  static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                  static_cast<long>(st.st_mtim.tv_nsec), static_cast<long long>(st.st_ctim.tv_sec),
                  static_cast<long>(st.st_ctim.tv_nsec));
  const auto path_hash = static_cast<uint32_t>(fnv1a(source));
  const std::string name = fmt::format("{}-{:08x}-{:016x}", real.filename().string(), path_hash, fnv1a(key));
  return (fs::path(cache_dir) / kRowCacheFolder / name).string();
}

uint64_t row_cache_limit_bytes() {
  if (const char* mb = std::getenv("GRIST_CACHE_MAX_MB"); mb && *mb) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(mb, &end, 10);
    if (end && *end == '\0') return static_cast<uint64_t>(v) << 20;
  }
  return uint64_t{2048} << 20;
}

namespace {

void tidy(const std::string& kept, uint64_t limit_bytes) {
  std::error_code ec;
  const fs::path kept_path(kept);
  const std::string kept_name = kept_path.filename().string();
  // "<name>-<8 hex>-": the same source file under any key.
  const std::string same_source = kept_name.substr(0, kept_name.size() - 16);
  struct Copy {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Copy> copies;
  uint64_t total = 0;
  // Its own error code: a failed stat or remove of one entry below must not end the walk.
  std::error_code walk;
  fs::directory_iterator it(kept_path.parent_path(), walk), end;
  for (; !walk && it != end; it.increment(walk)) {
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || name == kept_name) continue;
    std::smatch m;
    if (std::regex_match(name, m, partial_name())) {
      // Its writer's pid may belong to another machine or PID namespace sharing the folder: an hour's age too.
      const auto age = fs::file_time_type::clock::now() - entry.last_write_time(ec);
      if (!ec && age > std::chrono::hours(1) && !process_runs(std::strtol(m[1].str().c_str(), nullptr, 10)))
        fs::remove(entry.path(), ec);
      continue;
    }
    if (!std::regex_match(name, copy_name())) continue;
    if (name.size() == kept_name.size() && name.compare(0, same_source.size(), same_source) == 0) {
      fs::remove(entry.path(), ec);
      continue;
    }
    const uint64_t bytes = entry.file_size(ec);
    if (ec) continue;
    copies.push_back({entry.path(), bytes, entry.last_write_time(ec)});
    total += bytes;
  }
  total += fs::file_size(kept_path, ec);
  std::sort(copies.begin(), copies.end(), [](const Copy& a, const Copy& b) { return a.used < b.used; });
  for (const Copy& c : copies) {
    if (total <= limit_bytes) break;
    if (fs::remove(c.path, ec)) total -= c.bytes;
  }
}

}  // namespace

// Housekeeping runs on the reader's thread: nothing it meets (an unreadable entry on a network file system) may
// escape as an exception and end the process.
void tidy_row_cache(const std::string& kept, uint64_t limit_bytes) {
  try {
    tidy(kept, limit_bytes);
  } catch (...) {
  }
}

void touch_row_cache_file(const std::string& copy) { ::utimensat(AT_FDCWD, copy.c_str(), nullptr, 0); }

}  // namespace grist
