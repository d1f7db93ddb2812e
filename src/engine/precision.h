// Simulated reduced precision for float32 models (`grist run --precision`): fp16/bf16 round every float32 tensor
// to that format after every op, as `.half()` would; amp-fp16/amp-bf16 follow PyTorch autocast's op lists
// (engine/autocast.h). Values stay stored as float32; only their values are those of the 16-bit format.
#pragma once

#include <string_view>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

enum class Precision { Fp32, Fp16, Bf16, AmpFp16, AmpBf16 };

// "fp32", "fp16", "bf16", "amp-fp16" or "amp-bf16".
Result<Precision> parse_precision(std::string_view name);
std::string_view precision_name(Precision p);
// The 16-bit format values are rounded to (Float16 or bfloat16); Undefined for Fp32.
DType precision_format(Precision p);
bool is_autocast(Precision p);
// Rounds a float32 tensor in place to the values `format` (Float16 or bfloat16) holds: round to nearest even,
// overflow to ±inf, the format's subnormals. Other tensors, and format Undefined, are left as they are.
void round_to_format(DType format, Tensor& t);

}  // namespace grist
