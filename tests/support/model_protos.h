// ONNX ModelProtos built by hand, for the import tests that need a model no exporter writes (a refused
// attribute, a spelt-out domain, hand-made initializers, external data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace grist::testing {

// Sets `v` to a float32 tensor of `dims` named `name`.
void set_float_info(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims);

// y = op_type(inputs...) at `opset`: float32 graph input "x" and output "y" of `dims`, the node unnamed. Callers
// add the node's attributes (node(0)) and the initializers its other inputs name.
onnx::ModelProto one_node_proto(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::vector<int64_t>& dims, int64_t opset);

// A float32 initializer `name` of `dims`, with no data yet, added to m's graph.
onnx::TensorProto* add_float_initializer(onnx::ModelProto& m, const std::string& name,
                                         const std::vector<int64_t>& dims);

}  // namespace grist::testing
