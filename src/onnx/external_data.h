// ONNX external data: tensors whose bytes lie in a file beside the model (data_location = EXTERNAL, with
// external_data entries location / offset / length), as exporters write for models over protobuf's 2 GiB
// limit. The bytes are read into raw_data, so the checker and the importer then see an ordinary model.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "util/status.h"

namespace onnx {
class ModelProto;
}

namespace grist {

// Loads every external tensor of the model (initializers, node attributes, subgraphs) from `model_dir`.
// A location must be relative and stay inside model_dir: absolute paths, ".." components and symlinks
// resolving outside are refused, as are missing or non-regular files and offset/length ranges beyond the
// file's end or not matching the tensor's shape. Without a model_dir (a model read from memory) any external
// tensor is refused. Errors start with `source` and name the tensor and the file.
Status load_external_data(onnx::ModelProto& model, const std::optional<std::filesystem::path>& model_dir,
                          const std::string& source);

}  // namespace grist
