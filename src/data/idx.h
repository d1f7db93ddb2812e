// IDX files, the format of MNIST and Fashion-MNIST: big-endian, magic 0x0000TTNN (TT element type,
// NN rank), NN big-endian uint32 dims, then the data. Read plain or gzip-compressed alike.
#pragma once

#include <string>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// Element types by IDX code: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64.
// MNIST images (magic 0x00000803) come out as uint8 [N, 28, 28], labels (0x00000801) as uint8 [N].
// Errors start with the path.
Result<Tensor> read_idx(const std::string& path);

}  // namespace grist
