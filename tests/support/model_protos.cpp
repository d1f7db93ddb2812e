#include "support/model_protos.h"

namespace grist::testing {

void set_float_info(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::ModelProto one_node_proto(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::vector<int64_t>& dims, int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  set_float_info(g->add_input(), "x", dims);
  set_float_info(g->add_output(), "y", dims);
  auto* n = g->add_node();
  n->set_op_type(op_type);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(std::string("y"));  // not the const char* overload: GCC 12 warns falsely there (-Wrestrict)
  return m;
}

onnx::TensorProto* add_float_initializer(onnx::ModelProto& m, const std::string& name,
                                         const std::vector<int64_t>& dims) {
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name(name);
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) w->add_dims(d);
  return w;
}

}  // namespace grist::testing
