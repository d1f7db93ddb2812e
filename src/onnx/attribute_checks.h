#pragma once

#include <string>

#include "util/status.h"

namespace onnx {
class GraphProto;
}

namespace grist {

// libonnx's shape inference divides by some attributes without checking them (a Conv with strides [0, 0]
// kills the process with SIGFPE), so grist refuses such nodes, naming them, before it runs the inference.
Status check_attributes_before_shape_inference(const onnx::GraphProto& graph, const std::string& source);

// Whether every tensor in the graph (initializers, tensor attributes such as a Constant's value, and the bodies of
// If/Loop/Scan) holds as many raw_data bytes as its dims say. libonnx 1.12's ParseData copies all of a tensor's
// raw_data into a vector sized to the whole elements in it, so a byte count that is not a multiple of the element
// size overflows it (5 bytes for an int64 Reshape shape: a memcpy into null, SIGSEGV; found by the model-file
// fuzzer). Where this is false the importer skips the inference, which only gives shape hints; the tensor is then
// refused by name when grist reads it.
bool raw_data_sizes_fit(const onnx::GraphProto& graph);

}  // namespace grist
