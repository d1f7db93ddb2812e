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
};

// Tensors stored outside the model (ONNX external data) are read from the model's folder, never from outside it.
Result<Graph> import_onnx_file(const std::string& path, ImportOptions options = {});
// A model from memory has no folder: external data is refused.
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name, ImportOptions options = {});

}  // namespace grist
