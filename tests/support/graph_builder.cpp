#include "support/graph_builder.h"

#include <gtest/gtest.h>

namespace grist::testing {

ValueId GraphBuilder::ensure(const std::string& name) {
  ValueId id = g_.find_value(name);
  if (id != kNoValue) return id;
  Value v;
  v.name = name;
  return g_.add_value(std::move(v));
}

GraphBuilder& GraphBuilder::input(const std::string& name, DType dtype, std::vector<int64_t> dims) {
  Value v;
  v.name = name;
  v.kind = ValueKind::Input;
  v.dtype = dtype;
  std::vector<Dim> shape;
  for (int64_t d : dims) shape.push_back(d < 0 ? Dim{-1, "batch"} : Dim{d, {}});
  v.shape = shape;
  g_.inputs.push_back(g_.add_value(std::move(v)));
  return *this;
}

GraphBuilder& GraphBuilder::constant(const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.kind = ValueKind::Initializer;
  v.dtype = t.dtype();
  v.initial = std::make_shared<const Tensor>(std::move(t));
  g_.initializers.push_back(g_.add_value(std::move(v)));
  return *this;
}

GraphBuilder& GraphBuilder::node(const std::string& op_type, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs,
                                 std::vector<std::pair<std::string, Attribute>> attributes) {
  Node n;
  n.op_type = op_type;
  n.name = op_type + "_" + std::to_string(g_.nodes.size());
  n.opset = static_cast<int>(g_.opsets[""]);
  n.attributes = std::move(attributes);
  for (const auto& in : inputs) n.inputs.push_back(in.empty() ? kNoValue : ensure(in));
  for (const auto& out : outputs) n.outputs.push_back(out.empty() ? kNoValue : ensure(out));
  g_.nodes.push_back(std::move(n));
  return *this;
}

GraphBuilder& GraphBuilder::output(const std::string& name) {
  g_.outputs.push_back(ensure(name));
  return *this;
}

Graph GraphBuilder::build() {
  auto st = g_.sort_topologically();
  EXPECT_TRUE(st.is_ok()) << st.message();
  return std::move(g_);
}

}  // namespace grist::testing
