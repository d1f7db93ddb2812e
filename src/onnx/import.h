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

Result<Graph> import_onnx_file(const std::string& path, ImportOptions options = {});
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name, ImportOptions options = {});

}  // namespace grist
