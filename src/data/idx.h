// IDX files, the format of MNIST and Fashion-MNIST: big-endian, magic 0x0000TTNN (TT element type,
// NN rank), NN big-endian uint32 dims, then the data. Read plain or gzip-compressed alike.
#pragma once

#include <memory>
#include <string>

#include "tensor/tensor.h"
#include "util/status.h"

struct gzFile_s;

namespace grist {

// An IDX file with its header read and checked, its data still to come: read_idx reads it at once, a
// streamed data set (data/streamed_rows.h) chunk by chunk while the hunt starts. Errors start with the path.
class IdxReader {
 public:
  static Result<IdxReader> open(const std::string& path);
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  uint64_t data_bytes() const { return data_bytes_; }  // as the header declares them
  bool compressed() const { return compressed_; }
  // Up to n bytes of the data (in the file's big-endian order), fewer only at the end: the error when the
  // file holds fewer than data_bytes() in all.
  Result<std::size_t> read(void* dst, std::size_t n);
  uint64_t bytes_read() const { return read_bytes_; }  // of the data, a short read's included
  // After all data_bytes(): the error when more data follows.
  Status check_end();

 private:
  struct GzClose {
    void operator()(gzFile_s* f) const;
  };
  std::string path_;
  std::unique_ptr<gzFile_s, GzClose> file_;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  uint64_t data_bytes_ = 0, read_bytes_ = 0;
  bool compressed_ = false;
};

// Element types by IDX code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
// MNIST images (magic 0x00000803) come out as uint8 [N, 28, 28], labels (0x00000801) as uint8 [N].
// Errors start with the path.
Result<Tensor> read_idx(const std::string& path);

}  // namespace grist
