// ONNX TensorProto ⇄ grist Tensor, with the size checks that keep a hostile file from exhausting memory.
#pragma once

#include <string>

#include "tensor/tensor.h"
#include "util/status.h"

namespace onnx {
class TensorProto;
}

namespace grist {

// Largest tensor grist will materialise from a file (bytes); bigger ones are refused with an error.
constexpr int64_t kMaxTensorBytes = int64_t{8} << 30;

// A tensor's bytes left in a file, its model file (onnx/model_file.h) or its external data file
// (onnx/external_data.h): read from there straight into the Tensor's buffer.
struct RawDataInFile {
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string path;  // absolute; for messages, and the location the checker is shown
};

// `in_file`: where the tensor's raw_data lie instead of in the proto (which then marks them external).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const RawDataInFile* in_file = nullptr);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& proto);

// Reads a serialized TensorProto file (.pb, as in ONNX's test data).
Result<Tensor> read_tensor_pb(const std::string& path, std::string* name = nullptr);

// Validates dims (non-negative, product fits) and returns the byte size.
Result<int64_t> checked_nbytes(const std::vector<int64_t>& dims, DType dtype, const std::string& what);

}  // namespace grist
