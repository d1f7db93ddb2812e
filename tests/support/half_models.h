// Small float32 models whose float32 run is finite and whose float16 run is not (issue 16): a norm's sum of
// squares past 65504, a hand-written softmax's exp past ln 65504 ≈ 11.09, an attention score product, a
// variance flushed to 0 under a sqrt. Built by hand, for the half-precision hunt and scan tests.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "support/graph_builder.h"
#include "tensor/tensor.h"

namespace grist::testing::half_models {

inline Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.type = Attribute::Type::Ints;
  a.ints = std::move(v);
  return a;
}
inline Attribute int_attr(int64_t v) {
  Attribute a;
  a.type = Attribute::Type::Int;
  a.i = v;
  return a;
}
inline Tensor axes(std::vector<int64_t> v) {
  Tensor t(DType::Int64, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// x / sqrt(Σx² + 1e-4), x in [-100, 100]^16: Σx² reaches 160000, past float16's 65504; float32 holds it.
inline Graph norm_model() {
  GraphBuilder b(17);
  b.input("x", DType::Float32, {1, 16}).constant("eps", Tensor::scalar<float>(1e-4f));
  b.node("ReduceSumSquare", {"x"}, {"ss"}, {{"axes", ints({1})}, {"keepdims", int_attr(1)}});
  b.node("Add", {"ss", "eps"}, {"sse"}).node("Sqrt", {"sse"}, {"norm"}).node("Div", {"x", "norm"}, {"y"});
  return b.output("y").build();
}

// exp(z) / Σexp(z), z in [-15, 15]^8: exp passes 65504 above 11.09; in float32 exp(15) = 3.3e6.
inline Graph softmax_model() {
  GraphBuilder b(17);
  b.input("z", DType::Float32, {1, 8}).constant("axes", axes({1}));
  b.node("Exp", {"z"}, {"e"}).node("ReduceSum", {"e", "axes"}, {"s"}, {{"keepdims", int_attr(1)}});
  b.node("Div", {"e", "s"}, {"p"});
  return b.output("p").build();
}

// softmax(q·kᵀ), q and k in [-100, 100]^(4×8): a score reaches 80000.
inline Graph attention_model() {
  GraphBuilder b(17);
  b.input("q", DType::Float32, {1, 4, 8}).input("k", DType::Float32, {1, 4, 8});
  b.node("Transpose", {"k"}, {"kt"}, {{"perm", ints({0, 2, 1})}});
  b.node("MatMul", {"q", "kt"}, {"scores"}).node("Softmax", {"scores"}, {"attn"}, {{"axis", int_attr(-1)}});
  return b.output("attn").build();
}

// (x − mean) / sqrt(var + 1e-8), x in [-1e-3, 1e-3]^8: float16 flushes a variance below 2^-25 (and ε) to 0.
inline Graph variance_model() {
  GraphBuilder b(17);
  b.input("x", DType::Float32, {1, 8}).constant("eps", Tensor::scalar<float>(1e-8f));
  b.constant("two", Tensor::scalar<float>(2.0f));
  b.node("ReduceMean", {"x"}, {"mean"}, {{"axes", ints({1})}, {"keepdims", int_attr(1)}});
  b.node("Sub", {"x", "mean"}, {"xc"}).node("Pow", {"xc", "two"}, {"sq"});
  b.node("ReduceMean", {"sq"}, {"var"}, {{"axes", ints({1})}, {"keepdims", int_attr(1)}});
  b.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"}).node("Div", {"xc", "sd"}, {"y"});
  return b.output("y").build();
}

// The model as a `.half()` export stores it: every float32 value and weight in `t` (Float16 or BFloat16).
inline Graph stored_in(Graph g, DType t) {
  for (Value& v : g.values)
    if (v.dtype == DType::Float32) v.dtype = t;
  for (ValueId id : g.initializers) {
    Value& v = g.values[static_cast<size_t>(id)];
    if (!v.initial || v.initial->dtype() != DType::Float32) continue;
    Tensor h;
    cast_tensor(*v.initial, t, h);
    v.initial = std::make_shared<const Tensor>(std::move(h));
  }
  return g;
}

}  // namespace grist::testing::half_models
