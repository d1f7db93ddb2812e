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

// Bytes per element of an ONNX data type with fixed-size elements; 0 for string and unknown types, which
// ParseData refuses to read from raw_data.
int64_t element_bytes(int32_t data_type) {
  using TP = onnx::TensorProto;
  switch (data_type) {
    case TP::UINT8: case TP::INT8: case TP::BOOL: return 1;
    case TP::UINT16: case TP::INT16: case TP::FLOAT16: case TP::BFLOAT16: return 2;
    case TP::FLOAT: case TP::INT32: case TP::UINT32: return 4;
    case TP::INT64: case TP::UINT64: case TP::DOUBLE: case TP::COMPLEX64: return 8;
    case TP::COMPLEX128: return 16;
    default: return 0;
  }
}

bool raw_data_fits(const onnx::TensorProto& t) {
  if (!t.has_raw_data()) return true;
  const int64_t size = element_bytes(t.data_type());
  if (size == 0) return true;
  const auto bytes = static_cast<int64_t>(t.raw_data().size());
  if (bytes % size != 0) return false;
  int64_t elements = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && elements > bytes / size / d)) return false;  // more than the bytes hold, or negative
    elements *= d;
  }
  return elements * size == bytes;
}

bool graph_raw_data_fits(const onnx::GraphProto& graph) {
  for (const auto& t : graph.initializer())
    if (!raw_data_fits(t)) return false;
  for (const auto& s : graph.sparse_initializer())
    if (!raw_data_fits(s.values()) || !raw_data_fits(s.indices())) return false;
  for (const auto& node : graph.node())
    for (const auto& a : node.attribute()) {
      if (a.has_t() && !raw_data_fits(a.t())) return false;
      for (const auto& t : a.tensors())
        if (!raw_data_fits(t)) return false;
      if (a.has_sparse_tensor() && (!raw_data_fits(a.sparse_tensor().values()) ||
                                    !raw_data_fits(a.sparse_tensor().indices())))
        return false;
      for (const auto& s : a.sparse_tensors())
        if (!raw_data_fits(s.values()) || !raw_data_fits(s.indices())) return false;
      if (a.has_g() && !graph_raw_data_fits(a.g())) return false;
      for (const auto& g : a.graphs())
        if (!graph_raw_data_fits(g)) return false;
    }
  return true;
}

}  // namespace

bool raw_data_sizes_fit(const onnx::GraphProto& graph) { return graph_raw_data_fits(graph); }

Status check_attributes_before_shape_inference(const onnx::GraphProto& graph, const std::string& source) {
  return check_graph(graph, source);
}

}  // namespace grist
