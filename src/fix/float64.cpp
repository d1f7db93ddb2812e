#include "fix/float64.h"

namespace grist {

namespace {

std::shared_ptr<const Tensor> widened(const std::shared_ptr<const Tensor>& t) {
  if (!t || t->dtype() != DType::Float32) return t;
  Tensor d;
  cast_tensor(*t, DType::Float64, d);
  return std::make_shared<const Tensor>(std::move(d));
}

}  // namespace

Result<Graph> widen_to_float64(const Graph& g) {
  Graph w = g;
  for (Value& v : w.values) {
    if (v.dtype == DType::Float32) v.dtype = DType::Float64;
    v.initial = widened(v.initial);
  }
  const auto f32 = static_cast<int64_t>(DType::Float32), f64 = static_cast<int64_t>(DType::Float64);
  for (Node& n : w.nodes) {
    for (auto& [key, a] : n.attributes) {
      if (a.type == Attribute::Type::Tensor) a.t = widened(a.t);
      // Casts to float32 and the float32 outputs of generators become float64.
      const bool type_key = (n.op_type == "Cast" && key == "to") ||
                            (n.op_type.rfind("Random", 0) == 0 && key == "dtype") ||
                            (n.op_type == "EyeLike" && key == "dtype");
      if (type_key && a.type == Attribute::Type::Int && a.i == f32) a.i = f64;
    }
    if (n.op_type == "Constant" && (n.has_attr("value_float") || n.has_attr("value_floats"))) {
      const Attribute* a = n.attr("value_float") ? n.attr("value_float") : n.attr("value_floats");
      Tensor t = a->type == Attribute::Type::Float
                     ? Tensor::scalar<double>(a->f)
                     : Tensor(DType::Float64, Shape{static_cast<int64_t>(a->floats.size())});
      if (a->type == Attribute::Type::Floats)
        for (size_t i = 0; i < a->floats.size(); ++i) t.data<double>()[i] = a->floats[i];
      Attribute value;
      value.type = Attribute::Type::Tensor;
      value.t = std::make_shared<const Tensor>(std::move(t));
      n.attributes = {{"value", value}};
    }
    // Generators whose float32 output is implied (no dtype attribute) are not widened: say so.
    if ((n.op_type == "RandomNormal" || n.op_type == "RandomUniform") && !n.has_attr("dtype")) {
      Attribute d;
      d.type = Attribute::Type::Int;
      d.i = f64;
      n.attributes.emplace_back("dtype", d);
    }
  }
  return w;
}

}  // namespace grist
