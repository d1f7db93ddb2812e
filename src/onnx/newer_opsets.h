// Models of default-domain (ai.onnx) opsets 18 to 21 on a libonnx whose checker and shape inference know the
// operators up to opset 17 (Debian's ONNX 1.12). PyTorch 2's exporters write opset 18 and later.
//
// The libonnx calls see the model as of the newest opset they know: every node whose op ONNX revised after it is
// moved, for the call only, into a private domain, which the checker leaves unchecked and inference skips. So an op
// that is unchanged is checked against the schema it still has, and a revised one is left to grist's own kernel,
// which reads each revision's new inputs and attributes or refuses them by name:
// - 18: the Reduce* ops' axes as input 1; Pad's axes input; Split's num_outputs (uneven last piece);
//   ScatterElements' and ScatterND's max and min reductions; Resize's antialias, axes and keep_aspect_ratio_policy
//   (refused unless at their defaults);
// - 19: AveragePool's dilations; Pad's wrap mode and Resize's half_pixel_symmetric (refused); Cast's saturate
//   (float8 only);
// - 20: Gelu; ReduceMax/ReduceMin, IsInf, IsNaN, ConstantOfShape: new element types only;
// - 18 and 21: GroupNormalization, its scale and bias per group (18) or per channel (21);
// - 21: otherwise new element types only (int4, uint4, float8).
// Every other change in these opsets is to ops grist does not implement: a model with one is refused naming them,
// as unsupported ops are.
#pragma once

#include <cstdint>
#include <functional>

namespace onnx {
class ModelProto;
}

namespace grist {

// The newest default-domain opset grist imports.
constexpr int64_t kNewestOpset = 21;

// The newest default-domain opset this build's libonnx knows (17 for ONNX 1.12).
int64_t libonnx_opset();

// Runs `call` (onnx::checker::check_model, shape inference) on `model` as libonnx knows it: unchanged for a model
// of opset libonnx_opset() or older; for a newer one its opset shown as libonnx_opset() and the nodes of revised ops
// (in the graph and any subgraph) in a private domain. The model is restored afterwards, also when `call` throws,
// but for what the call itself added (inferred value_info: about unrevised nodes only).
void with_libonnx_opset(onnx::ModelProto& model, const std::function<void()>& call);

}  // namespace grist
