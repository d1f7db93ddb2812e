// Parses an ONNX model file without holding its large weights twice. Protobuf's parser copies every initializer's
// raw_data into a string that the importer then copies into a Tensor: for a moment the largest weight is held
// twice (vgg11's first classifier layer, 411 MB of its 531). This walk of the file's wire format (ModelProto
// field 7 graph → GraphProto field 5 initializer → TensorProto field 9 raw_data) leaves large raw_data in the
// file and records where they lie, so the importer reads them straight into the Tensor's own buffer; every other
// field is parsed by protobuf as before (a message's serialized fields may be merged one at a time).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace onnx {
class ModelProto;
}

namespace grist {

// The raw_data bytes of one initializer, where they lie in the model file.
struct InFileBytes {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Reads `length` bytes at `offset` of file `fd` into `into`; false when the file ends early (read_errno 0) or a
// read fails (read_errno set).
bool read_file_bytes(int fd, uint64_t offset, uint64_t length, void* into, int& read_errno);

// Initializers of the main graph (by index in GraphProto's initializer list) whose raw_data lie in the file.
using InFileInitializers = std::map<int, InFileBytes>;

// Reads the model in file `fd` (`size` bytes) into `model`, as model.ParseFromZeroCopyStream would, except that the
// raw_data of each main-graph initializer of at least `min_bytes` is left out (the tensor has no data field) and
// recorded in `in_file`. Only a tensor the ONNX checker and the importer accept as it is gets that treatment:
// raw_data alone (no typed data, no external data), an element type grist computes on and exactly the bytes its
// shape needs; any other keeps its raw_data, so every check and message stays as protobuf's parse gives it.
// Returns false for data that is malformed or ends early; sets `read_errno` when reading the file failed.
bool parse_model_file(int fd, uint64_t size, uint64_t min_bytes, onnx::ModelProto& model, InFileInitializers& in_file,
                      int& read_errno);

}  // namespace grist
