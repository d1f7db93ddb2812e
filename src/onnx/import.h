// Reads an ONNX model (ModelProto) into a grist Graph: checked by ONNX's own checker, shapes inferred by
// ONNX's shape inference, nodes in topological order. Every failure is one line naming file and node.
#pragma once

#include <string>

#include "graph/graph.h"
#include "util/status.h"

namespace grist {

struct ImportOptions {
  bool run_checker = true;       // onnx::checker::check_model
  bool infer_shapes = true;      // onnx::shape_inference::InferShapes
  // import_onnx_file: initializers' raw_data of at least this many bytes are read from the file straight into
  // their Tensors (onnx/model_file.h), never held twice. Small ones (shape operands, which shape inference reads)
  // are parsed by protobuf; tests lower it to send every tensor through the file path. 0: protobuf parses the
  // whole file (the reference the tests compare the file path with).
  uint64_t in_file_min_bytes = uint64_t{64} << 10;
};

// Tensors stored outside the model (ONNX external data) are read from the model's folder, never from outside it.
Result<Graph> import_onnx_file(const std::string& path, ImportOptions options = {});
// A model from memory has no folder: external data is refused.
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name, ImportOptions options = {});

}  // namespace grist
