// A large IDX file's rows, read on a thread of their own while the hunt starts (its hazards, interval scan and
// executor need no data): a batch waits only for the rows it takes, so a data set read in order serves its
// first batch after a few kilobytes, and a shuffled one is read while the scan runs instead of before it.
// Fashion-MNIST's 47 MB of training images take ~0.35 s of zlib whichever way they are read, so a compressed
// file's rows are also kept, uncompressed, in a cache folder (the hunt's next run reads them in ~20 ms).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

class StreamedRows {
 public:
  // The header is read and checked now (errors start with the path); the data on a thread. Files whose data
  // is smaller than `min_bytes` are read at once (a thread is not worth it), and so are compressed files
  // declaring more than kMaxStreamedBytes: their memory follows the bytes that decompress (data/idx.h).
  // With a `cache_dir`, a compressed file's rows come from its uncompressed copy there when one was kept for
  // this file (data/row_cache.h), and are kept there once read to the end otherwise.
  static Result<std::shared_ptr<StreamedRows>> open_idx(const std::string& path, uint64_t min_bytes,
                                                        const std::string& cache_dir = "");
  static constexpr uint64_t kMaxStreamedBytes = uint64_t{1} << 30;
  bool from_cache() const { return from_cache_; }
  ~StreamedRows();
  StreamedRows(const StreamedRows&) = delete;
  StreamedRows& operator=(const StreamedRows&) = delete;

  // The rows as stored, [rows, ...]; only rows [0, n) are to be read, and only after wait_rows(n).
  const Tensor& tensor() const { return tensor_; }
  int64_t rows() const { return tensor_.rank() > 0 ? tensor_.shape()[0] : 0; }
  // Waits until rows [0, n) are in: the file's error when it ends before them. wait_rows(rows()) also
  // reports data after the declared end.
  Status wait_rows(int64_t n);

 private:
  StreamedRows() = default;
  void read_all(std::unique_ptr<class IdxReader> reader, std::string cache_file);

  Tensor tensor_;
  uint64_t row_bytes_ = 0;
  std::atomic<uint64_t> ready_bytes_{0};  // bytes of tensor_ in place (in host byte order)
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable arrived_;
  bool from_cache_ = false;
  bool caching_ = false;  // the thread writes the cache's copy
  bool done_ = false;  // under mutex_: the thread has finished (error_ says how)
  Status error_ = Status::ok();
  std::thread thread_;
};

}  // namespace grist
