// grist's Graph → an ONNX ModelProto (serialized), checked by ONNX's own checker: how `grist fix` writes the
// repaired model where the user's tools (PyTorch, ONNX Runtime, Netron) can read it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "util/status.h"

namespace grist {

struct ExportOptions {
  std::string producer_name = "grist";
  std::string doc_string;  // the model's doc_string (what was changed, for people)
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
  int64_t ir_version = 8;  // the IR of ONNX 1.12, which reads and checks opsets up to 17
};

// The serialized ModelProto of `g`, after onnx::checker::check_model accepted it. Fails naming the node for
// what the graph cannot say in ONNX (a subgraph attribute the importer did not keep, an input without type).
Result<std::string> export_onnx_bytes(const Graph& g, const ExportOptions& options = {});

// Writes the exported model to `path`, created exclusively: an existing file is never replaced.
Status export_onnx_file(const Graph& g, const std::string& path, const ExportOptions& options = {});

}  // namespace grist
