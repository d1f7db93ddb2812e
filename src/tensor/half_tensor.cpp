#include "tensor/half_tensor.h"

#include <cassert>

namespace grist {

void widen_half(const Tensor& src, Tensor& dst) {
  assert(is_half(src.dtype()));
  dst.resize(DType::Float32, src.shape());
  if (src.dtype() == DType::Float16) widen(src.span<Half>(), dst.data<float>());
  else widen(src.span<BFloat16>(), dst.data<float>());
}

void narrow_to_half(Tensor& wide, DType to, Tensor& dst) {
  assert(wide.dtype() == DType::Float32 && is_half(to) && &wide != &dst);
  dst.resize(to, wide.shape());
  // Two whole-buffer passes (vectorised where the CPU converts float16 itself): round, then widen back.
  if (to == DType::Float16) {
    narrow(wide.span<float>(), dst.data<Half>());
    widen(dst.span<Half>(), wide.data<float>());
  } else {
    narrow(wide.span<float>(), dst.data<BFloat16>());
    widen(dst.span<BFloat16>(), wide.data<float>());
  }
}

void add_in_half(const Tensor& g, Tensor& acc) {
  assert(g.dtype() == acc.dtype() && g.numel() == acc.numel());
  const int64_t n = acc.numel();
  if (acc.dtype() == DType::Float16) {
    Half* a = acc.data<Half>();
    const Half* b = g.data<Half>();
    for (int64_t i = 0; i < n; ++i) a[i] = to_half(to_float(a[i]) + to_float(b[i]));
  } else {
    BFloat16* a = acc.data<BFloat16>();
    const BFloat16* b = g.data<BFloat16>();
    for (int64_t i = 0; i < n; ++i) a[i] = to_bfloat16(to_float(a[i]) + to_float(b[i]));
  }
}

}  // namespace grist
