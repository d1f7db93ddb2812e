// ONNX external data: tensors whose bytes lie in a file beside the model (data_location = EXTERNAL, with
// external_data entries location / offset / length), as exporters write for models over protobuf's 2 GiB
// limit. The bytes are read into raw_data, so the checker and the importer then see an ordinary model, or (the
// main graph's large initializers) left in their files for the importer to read straight into their Tensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx/tensor_proto.h"
#include "util/status.h"

namespace onnx {
class ModelProto;
}

namespace grist {

// The main graph's initializers whose external data load_external_data left in their files; keeps them open.
struct ExternalLeftInFiles {
  std::map<int, RawDataInFile> initializers;  // by index in the main graph's initializer list; paths canonical
  std::vector<int> fds;                       // closed with this
  ExternalLeftInFiles() = default;
  ExternalLeftInFiles(const ExternalLeftInFiles&) = delete;
  ExternalLeftInFiles& operator=(const ExternalLeftInFiles&) = delete;
  ~ExternalLeftInFiles();
};

// Loads every external tensor of the model (initializers, node attributes, subgraphs) from `model_dir`.
// A location must be relative and stay inside model_dir: absolute paths, ".." components and symlinks
// resolving outside are refused, as are missing or non-regular files and offset/length ranges beyond the
// file's end or not matching the tensor's shape. Without a model_dir (a model read from memory) any external
// tensor is refused. Errors start with `source` and name the tensor and the file.
// With `left`: the main graph's initializers of at least `min_bytes` are checked as above but not read, only
// recorded in `left`, so a large model's weights are never held twice (as raw_data and as a Tensor).
Status load_external_data(onnx::ModelProto& model, const std::optional<std::filesystem::path>& model_dir,
                          const std::string& source, ExternalLeftInFiles* left = nullptr, uint64_t min_bytes = 0);

}  // namespace grist
