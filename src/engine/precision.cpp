#include "engine/precision.h"

#include "tensor/half.h"

namespace grist {

Result<Precision> parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "fp16") return Precision::Fp16;
  if (name == "bf16") return Precision::Bf16;
  if (name == "amp-fp16") return Precision::AmpFp16;
  if (name == "amp-bf16") return Precision::AmpBf16;
  return make_error("precision '{}' is not one of fp32, fp16, bf16, amp-fp16, amp-bf16", name);
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::Fp16: return "fp16";
    case Precision::Bf16: return "bf16";
    case Precision::AmpFp16: return "amp-fp16";
    case Precision::AmpBf16: return "amp-bf16";
    default: return "fp32";
  }
}

DType precision_format(Precision p) {
  switch (p) {
    case Precision::Fp16: case Precision::AmpFp16: return DType::Float16;
    case Precision::Bf16: case Precision::AmpBf16: return DType::BFloat16;
    default: return DType::Undefined;
  }
}

bool is_autocast(Precision p) { return p == Precision::AmpFp16 || p == Precision::AmpBf16; }

void round_to_format(DType format, Tensor& t) {
  if (t.dtype() != DType::Float32) return;
  if (format == DType::Float16) round_to_half(t.span<float>());
  else if (format == DType::BFloat16) round_to_bfloat16(t.span<float>());
}

}  // namespace grist
