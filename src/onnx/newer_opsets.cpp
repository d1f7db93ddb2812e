#include "onnx/newer_opsets.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

namespace grist {

namespace {

// Every default-domain op ONNX revised or added in opsets 18 to 21 (docs/Changelog.md of the ONNX project), and
// whether the revision adds element types only: such an op keeps its opset-17 schema's inputs and attributes, so
// the checker may still check it against that schema, and inference infer it.
struct Revision {
  std::string_view op;
  int version;
  bool types_only;
};
constexpr Revision kRevisions[] = {
    {"BitwiseAnd", 18, false}, {"BitwiseNot", 18, false}, {"BitwiseOr", 18, false}, {"BitwiseXor", 18, false},
    {"CenterCropPad", 18, false}, {"Col2Im", 18, false}, {"GroupNormalization", 18, false}, {"LpPool", 18, false},
    {"Mish", 18, false}, {"OptionalGetElement", 18, false}, {"OptionalHasElement", 18, false}, {"Pad", 18, false},
    {"ReduceL1", 18, false}, {"ReduceL2", 18, false}, {"ReduceLogSum", 18, false}, {"ReduceLogSumExp", 18, false},
    {"ReduceMax", 18, false}, {"ReduceMean", 18, false}, {"ReduceMin", 18, false}, {"ReduceProd", 18, false},
    {"ReduceSumSquare", 18, false}, {"Resize", 18, false}, {"ScatterElements", 18, false}, {"ScatterND", 18, false},
    {"Split", 18, false},
    {"AveragePool", 19, false}, {"Cast", 19, false}, {"CastLike", 19, false}, {"Constant", 19, true},
    {"DeformConv", 19, false}, {"DequantizeLinear", 19, false}, {"Equal", 19, true}, {"Identity", 19, true},
    {"If", 19, false}, {"Loop", 19, false}, {"Pad", 19, false}, {"QuantizeLinear", 19, false}, {"Reshape", 19, true},
    {"Resize", 19, false}, {"Scan", 19, false}, {"Shape", 19, true}, {"Size", 19, true},
    {"AffineGrid", 20, false}, {"ConstantOfShape", 20, true}, {"DFT", 20, false}, {"Gelu", 20, false},
    {"GridSample", 20, false}, {"ImageDecoder", 20, false}, {"IsInf", 20, true}, {"IsNaN", 20, true},
    {"ReduceMax", 20, true}, {"ReduceMin", 20, true}, {"RegexFullMatch", 20, false}, {"StringConcat", 20, false},
    {"StringSplit", 20, false},
    {"Cast", 21, true}, {"CastLike", 21, true}, {"Constant", 21, true}, {"ConstantOfShape", 21, true},
    {"DequantizeLinear", 21, false}, {"Flatten", 21, true}, {"GroupNormalization", 21, false}, {"Identity", 21, true},
    {"If", 21, false}, {"Loop", 21, false}, {"Pad", 21, true}, {"QLinearMatMul", 21, false},
    {"QuantizeLinear", 21, false}, {"Reshape", 21, true}, {"Scan", 21, false}, {"Shape", 21, true}, {"Size", 21, true},
    {"Squeeze", 21, true}, {"Transpose", 21, true}, {"Unsqueeze", 21, true},
};

// The domain the revised nodes are shown in: one no schema is registered for, which the checker does not check.
constexpr const char* kRevisedDomain = "grist.revised-after-libonnx";

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Whether op's schema changed in (known, opset] beyond new element types.
bool revised(std::string_view op, int64_t known, int64_t opset) {
  for (const Revision& r : kRevisions)
    if (r.op == op && r.version > known && r.version <= opset && !r.types_only) return true;
  return false;
}

// Moves the revised nodes of `graph` and its subgraphs to kRevisedDomain, noting each node's own domain string.
void hide_revised(onnx::GraphProto& graph, int64_t known, int64_t opset,
                  std::vector<std::pair<onnx::NodeProto*, std::string>>& moved) {
  for (auto& node : *graph.mutable_node()) {
    if (is_default_domain(node.domain()) && revised(node.op_type(), known, opset)) {
      moved.emplace_back(&node, node.domain());
      node.set_domain(kRevisedDomain);
    }
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) hide_revised(*a.mutable_g(), known, opset, moved);
      for (auto& g : *a.mutable_graphs()) hide_revised(g, known, opset, moved);
    }
  }
}

}  // namespace

int64_t libonnx_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = map.find("");
  return it == map.end() ? 0 : it->second.second;
}

void with_libonnx_opset(onnx::ModelProto& model, const std::function<void()>& call) {
  const int64_t known = libonnx_opset();
  onnx::OperatorSetIdProto* opset = nullptr;
  for (auto& op : *model.mutable_opset_import())
    if (is_default_domain(op.domain())) opset = &op;
  if (!opset || opset->version() <= known || !model.has_graph()) return call();
  const int64_t version = opset->version();
  std::vector<std::pair<onnx::NodeProto*, std::string>> moved;
  hide_revised(*model.mutable_graph(), known, version, moved);
  opset->set_version(known);
  auto* own = model.add_opset_import();
  own->set_domain(kRevisedDomain);
  own->set_version(1);
  // Restores what was changed: the opset entry added last (the call adds none), the version, the nodes' domains.
  struct Restore {
    onnx::ModelProto& model;
    onnx::OperatorSetIdProto* opset;
    int64_t version;
    std::vector<std::pair<onnx::NodeProto*, std::string>>& moved;
    ~Restore() {
      model.mutable_opset_import()->RemoveLast();
      opset->set_version(version);
      for (auto& [node, domain] : moved) node->set_domain(domain);
    }
  } restore{model, opset, version, moved};
  call();
}

}  // namespace grist
