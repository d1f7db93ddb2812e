#include "data/streamed_rows.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "data/byte_order.h"
#include "data/idx.h"
#include "data/row_cache.h"

namespace grist {

namespace fs = std::filesystem;

namespace {

unsigned char idx_code(DType t) {
  switch (t) {
    case DType::UInt8: return 0x08;
    case DType::Int8: return 0x09;
    case DType::Int16: return 0x0B;
    case DType::Int32: return 0x0C;
    case DType::Float32: return 0x0D;
    default: return 0x0E;  // Float64: the only other type an IDX file holds
  }
}

// The IDX header of a file holding `r`'s data uncompressed.
std::string idx_header(const IdxReader& r) {
  std::string h = {'\0', '\0', static_cast<char>(idx_code(r.dtype())), static_cast<char>(r.shape().rank())};
  for (int64_t d : r.shape()) {
    const auto v = static_cast<uint32_t>(d);
    h += {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  }
  return h;
}

}  // namespace

Result<std::shared_ptr<StreamedRows>> StreamedRows::open_idx(const std::string& path, uint64_t min_bytes,
                                                             const std::string& cache_dir) {
  auto reader = IdxReader::open(path);
  if (!reader) return reader.error();
  std::shared_ptr<StreamedRows> s(new StreamedRows());
  const uint64_t bytes = reader->data_bytes();
  const int64_t rows = reader->shape().rank() > 0 ? reader->shape()[0] : 0;
  if (bytes < min_bytes || rows <= 0 || (reader->compressed() && bytes > kMaxStreamedBytes)) {
    auto t = read_idx(path);
    if (!t) return t.error();
    s->tensor_ = std::move(t).value();
    s->ready_bytes_ = bytes;
    s->done_ = true;
    return s;
  }
  std::string cache_file = reader->compressed() && !cache_dir.empty() ? row_cache_file_for(path, cache_dir) : "";
  if (!cache_file.empty()) {
    // A copy kept by an earlier run, if it still holds what the file's header declares.
    std::error_code ec;
    if (fs::exists(cache_file, ec)) {
      auto cached = IdxReader::open(cache_file);
      if (cached && !cached->compressed() && cached->dtype() == reader->dtype() &&
          cached->shape() == reader->shape()) {
        reader = std::move(cached);
        s->from_cache_ = true;
        touch_row_cache_file(cache_file);
        cache_file.clear();
      }
    }
  }
  s->tensor_ = Tensor(reader->dtype(), reader->shape());
  s->row_bytes_ = bytes / static_cast<uint64_t>(rows);
  auto owned = std::make_unique<IdxReader>(std::move(reader).value());
  s->caching_ = !cache_file.empty();
  s->thread_ = std::thread([raw = s.get(), r = std::move(owned), cache_file]() mutable {
    raw->read_all(std::move(r), cache_file);
  });
  return s;
}

// A copy for the cache is finished first (the read costs no more than the eager read it replaces, once);
// otherwise the rows nobody waited for are not read.
StreamedRows::~StreamedRows() {
  if (!caching_) stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void StreamedRows::read_all(std::unique_ptr<IdxReader> reader, std::string cache_file) {
  const uint64_t total = reader->data_bytes();
  const size_t elem = dtype_size(tensor_.dtype());
  // The copy for the cache goes to a file of this process's own, renamed into place once complete: runs in
  // parallel never read a half-written one. It is best effort: a cache that cannot be written is no error.
  std::string partial;
  std::ofstream copy;
  if (!cache_file.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(cache_file).parent_path(), ec);
    static std::atomic<uint64_t> copies{0};  // two readers of one file in one process write apart too
    partial = fmt::format("{}.partial-{}-{}", cache_file, static_cast<long>(getpid()), copies++);
    if (!ec) copy.open(partial, std::ios::binary | std::ios::trunc);
    const std::string header = idx_header(*reader);
    if (copy) copy.write(header.data(), static_cast<std::streamsize>(header.size()));
  }
  // 1 MiB a read, whole elements (swapped in place before they are published).
  const uint64_t chunk = (uint64_t{1} << 20) / elem * elem;
  Status st = Status::ok();
  uint64_t at = 0;
  while (at < total && !stop_) {
    const auto n = static_cast<size_t>(std::min(chunk, total - at));
    auto got = reader->read(tensor_.raw() + at, n);
    if (!got) {
      // A short file: the whole elements it did hold are rows like any others.
      st = got.error();
      const uint64_t held = (reader->bytes_read() - at) / elem * elem;
      swap_bytes_inplace(tensor_.raw() + at, held / elem, elem);
      at += held;
      std::lock_guard<std::mutex> lock(mutex_);
      ready_bytes_.store(at, std::memory_order_release);
      break;
    }
    if (copy) copy.write(reinterpret_cast<const char*>(tensor_.raw() + at), static_cast<std::streamsize>(n));
    swap_bytes_inplace(tensor_.raw() + at, n / elem, elem);
    at += n;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_bytes_.store(at, std::memory_order_release);
    }
    arrived_.notify_all();
  }
  if (st && !stop_) st = reader->check_end();
  if (copy.is_open()) {
    copy.close();
    std::error_code ec;
    if (st && !stop_ && copy) fs::rename(partial, cache_file, ec);
    if (!st || stop_ || !copy || ec) {
      fs::remove(partial, ec);
    } else {
      tidy_row_cache(cache_file, row_cache_limit_bytes());
    }
  } else if (!partial.empty()) {
    std::error_code ec;
    fs::remove(partial, ec);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = st;
  }
  arrived_.notify_all();
}

Status StreamedRows::wait_rows(int64_t n) {
  const bool all = n >= rows();
  const uint64_t need = all ? tensor_.nbytes() : static_cast<uint64_t>(std::max<int64_t>(n, 0)) * row_bytes_;
  if (!all && ready_bytes_.load(std::memory_order_acquire) >= need) return Status::ok();
  std::unique_lock<std::mutex> lock(mutex_);
  arrived_.wait(lock, [&] { return done_ || (!all && ready_bytes_.load(std::memory_order_relaxed) >= need); });
  if (!all && ready_bytes_.load(std::memory_order_relaxed) >= need) return Status::ok();
  return error_;
}

}  // namespace grist
