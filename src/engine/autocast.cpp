#include "engine/autocast.h"

#include <array>
#include <utility>

namespace grist {

namespace {

// Source: PyTorch's "Autocast Op Reference" (docs/source/amp.rst, https://pytorch.org/docs/stable/amp.html
// #autocast-op-reference), the CUDA lists for float16 — "Ops that can autocast to float16", "... to float32" and
// "Ops that promote to the widest input type" — which autocast applies to bfloat16 too. Each ONNX op is listed
// under the PyTorch op(s) it exports from; PyTorch ops with no ONNX counterpart (addr, cdist, erfinv, expm1,
// kl_div, mse_loss, ...) and ONNX ops autocast does not name (Add, Div, Relu, ReduceMean, Sqrt, ...) follow
// their inputs' type.
//
//   rule            PyTorch ops                                        ONNX ops
//   LowerPrecision  matmul mm bmm addmm baddbmm linear                 MatMul Gemm
//                   conv1d/2d/3d conv_transpose1d/2d/3d                Conv ConvTranspose
//                   LSTMCell GRUCell RNNCell                           LSTM GRU RNN
//                   prelu                                              PRelu
//   Float32         exp log softmax log_softmax softplus               Exp Log Softmax LogSoftmax Softplus
//                   acos asin cosh sinh tan reciprocal pow             Acos Asin Cosh Sinh Tan Reciprocal Pow
//                   sum prod cumsum cumprod                            ReduceSum ReduceProd CumSum
//                   norm normalize (sum of squares: pow then sum)      ReduceL1 ReduceL2 ReduceSumSquare
//                                                                      LpNormalization
//                   layer_norm group_norm                              LayerNormalization GroupNormalization
//                   nll_loss cross_entropy                             NegativeLogLikelihoodLoss
//                                                                      SoftmaxCrossEntropyLoss
//   Promote         cat stack scatter_add index_put                    Concat ScatterElements ScatterND
constexpr std::array<std::pair<std::string_view, AutocastRule>, 34> kRules{{
    {"MatMul", AutocastRule::LowerPrecision},
    {"Gemm", AutocastRule::LowerPrecision},
    {"Conv", AutocastRule::LowerPrecision},
    {"ConvTranspose", AutocastRule::LowerPrecision},
    {"LSTM", AutocastRule::LowerPrecision},
    {"GRU", AutocastRule::LowerPrecision},
    {"RNN", AutocastRule::LowerPrecision},
    {"PRelu", AutocastRule::LowerPrecision},
    {"Exp", AutocastRule::Float32},
    {"Log", AutocastRule::Float32},
    {"Softmax", AutocastRule::Float32},
    {"LogSoftmax", AutocastRule::Float32},
    {"Softplus", AutocastRule::Float32},
    {"Acos", AutocastRule::Float32},
    {"Asin", AutocastRule::Float32},
    {"Cosh", AutocastRule::Float32},
    {"Sinh", AutocastRule::Float32},
    {"Tan", AutocastRule::Float32},
    {"Reciprocal", AutocastRule::Float32},
    {"Pow", AutocastRule::Float32},
    {"ReduceSum", AutocastRule::Float32},
    {"ReduceProd", AutocastRule::Float32},
    {"CumSum", AutocastRule::Float32},
    {"ReduceL1", AutocastRule::Float32},
    {"ReduceL2", AutocastRule::Float32},
    {"ReduceSumSquare", AutocastRule::Float32},
    {"LpNormalization", AutocastRule::Float32},
    {"LayerNormalization", AutocastRule::Float32},
    {"GroupNormalization", AutocastRule::Float32},
    {"NegativeLogLikelihoodLoss", AutocastRule::Float32},
    {"SoftmaxCrossEntropyLoss", AutocastRule::Float32},
    {"Concat", AutocastRule::Promote},
    {"ScatterElements", AutocastRule::Promote},
    {"ScatterND", AutocastRule::Promote},
}};

}  // namespace

AutocastRule autocast_rule(std::string_view onnx_op) {
  for (const auto& [op, rule] : kRules)
    if (op == onnx_op) return rule;
  return AutocastRule::Follow;
}

}  // namespace grist
