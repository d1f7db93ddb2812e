#include "onnx/attribute_checks.h"

#include <array>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace grist {

namespace {

// Integer attributes that every op carrying them (Conv, ConvTranspose, the pools, DepthToSpace, ...) needs
// positive, and that libonnx's shape inference divides by or sizes loops with.
constexpr std::array<std::string_view, 5> kPositiveAttributes = {"strides", "dilations", "kernel_shape", "blocksize",
                                                                 "group"};

bool must_be_positive(const std::string& name) {
  for (auto n : kPositiveAttributes)
    if (n == name) return true;
  return false;
}

Status check_graph(const onnx::GraphProto& graph, const std::string& where) {
  int index = 0;
  for (const auto& node : graph.node()) {
    const std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
    ++index;
    for (const auto& a : node.attribute()) {
      if (must_be_positive(a.name())) {
        if (a.type() == onnx::AttributeProto::INT && a.i() <= 0)
          return make_error("{}: node '{}' ({}): attribute '{}' must be positive, not {}", where, name,
                            node.op_type(), a.name(), a.i());
        if (a.type() == onnx::AttributeProto::INTS)
          for (int64_t v : a.ints())
            if (v <= 0)
              return make_error("{}: node '{}' ({}): attribute '{}' must be positive everywhere, and holds {}",
                                where, name, node.op_type(), a.name(), v);
      }
      // Shape inference walks into the bodies of If, Loop and Scan too.
      const std::string inner = fmt::format("{}, in the body of node '{}'", where, name);
      if (a.has_g()) GRIST_TRY(check_graph(a.g(), inner));
      for (const auto& g : a.graphs()) GRIST_TRY(check_graph(g, inner));
    }
  }
  return Status::ok();
}

}  // namespace

Status check_attributes_before_shape_inference(const onnx::GraphProto& graph, const std::string& source) {
  return check_graph(graph, source);
}

}  // namespace grist
