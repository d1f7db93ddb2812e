// PyTorch autocast's op lists, mapped to ONNX ops: which ops an amp-fp16/amp-bf16 run computes in the 16-bit
// format and which it keeps in float32 (the table and its source are in autocast.cpp).
#pragma once

#include <string_view>

namespace grist {

enum class AutocastRule {
  LowerPrecision,  // inputs cast to the 16-bit format, result in it (matmul, conv, linear, RNN cells, prelu)
  Float32,         // inputs cast to float32, result float32 (exp, log, softmax, sums, norms, losses, pow, ...)
  Promote,         // widest input type: float32 when any float input is, else the 16-bit format (cat, scatter)
  Follow,          // not autocast: the type its inputs have (PyTorch's type promotion for mixed inputs)
};

AutocastRule autocast_rule(std::string_view onnx_op);

}  // namespace grist
