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

}  // namespace grist
