#include "engine/grad_scaler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "tensor/half_tensor.h"

namespace grist {

GradScaler::GradScaler(GradScalerConfig config) : config_(config) {
  state_.scale = static_cast<float>(config_.init_scale);
}

void GradScaler::fill_seed(const Tensor& loss, Tensor& seed) {
  Tensor& scale = loss.dtype() == DType::Float32 ? seed : wide_;
  scale.resize(DType::Float32, loss.shape());
  for (float& v : scale.span<float>()) v = state_.scale;
  // A loss of another float type gets the scale converted to it, as the scaled loss's backward would (a float16
  // loss turns 65536 into inf, and the scaler backs off).
  if (loss.dtype() != DType::Float32) cast_tensor(scale, loss.dtype(), seed);
}

bool GradScaler::unscale(std::span<const Tensor* const> grads, std::vector<Tensor>& unscaled) {
  const float inv_scale = this->inv_scale();
  unscaled.resize(grads.size());
  bool finite = true;
  for (size_t k = 0; k < grads.size(); ++k) {
    const Tensor* g = grads[k];
    if (!g) continue;
    Tensor& u = unscaled[k];
    u.resize(g->dtype(), g->shape());
    if (g->dtype() == DType::Float32) {
      // Branch-free in sixteen lanes, so that -O2 vectorises it (as nonfinite.cpp's all_finite): the largest
      // |bit pattern| tells whether any value is inf/NaN (exponent all ones). The same products as before.
      const float* src = g->data<float>();
      float* dst = u.data<float>();
      const int64_t n = g->numel();
      constexpr int kLanes = 16;
      uint32_t lane[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k) {
          lane[k] = std::max(lane[k], std::bit_cast<uint32_t>(src[i + k]) & 0x7fffffffu);
          dst[i + k] = src[i + k] * inv_scale;
        }
      uint32_t worst = 0;
      for (; i < n; ++i) {
        worst = std::max(worst, std::bit_cast<uint32_t>(src[i]) & 0x7fffffffu);
        dst[i] = src[i] * inv_scale;
      }
      for (uint32_t l : lane) worst = std::max(worst, l);
      finite = finite && worst < 0x7f800000u;
    } else if (g->dtype() == DType::Float64) {
      const double* src = g->data<double>();
      double* dst = u.data<double>();
      for (int64_t i = 0; i < g->numel(); ++i) {
        finite = finite && std::isfinite(src[i]);
        dst[i] = src[i] * inv_scale;
      }
    } else {
      // A half gradient (a model exported in half): the product in float32, rounded once to its type.
      widen_half(*g, wide_);
      const float* src = wide_.data<float>();
      for (int64_t i = 0; i < wide_.numel(); ++i) finite = finite && std::isfinite(src[i]);
      for (float& v : wide_.span<float>()) v *= inv_scale;
      narrow_to_half(wide_, g->dtype(), u);
    }
  }
  return finite;
}

Result<bool> GradScaler::step(Optimizer& opt, Executor& ex) {
  grads_.clear();
  bool wide = true;  // every gradient float32 or float64
  for (ValueId id : opt.params()) {
    grads_.push_back(ex.grad(id));
    wide = wide && (!grads_.back() || grads_.back()->dtype() == DType::Float32 ||
                    grads_.back()->dtype() == DType::Float64);
  }
  if (wide) {
    // The inf check from the backward's own scan, and the unscaling inside the optimizer's update: the same
    // steps as unscale() then step() (tests/engine/grad_scaler_test.cpp), without two passes over the gradients.
    found_inf_ = false;
    for (ValueId id : opt.params()) found_inf_ = found_inf_ || !ex.grad_finite(id);
    if (found_inf_) return false;
    params_.clear();
    for (size_t k = 0; k < grads_.size(); ++k)
      params_.push_back(grads_[k] ? &ex.mutable_value(opt.params()[k]) : nullptr);
    GRIST_TRY(opt.step(params_, grads_, inv_scale()));
    return true;
  }
  found_inf_ = !unscale(grads_, unscaled_);
  if (found_inf_) return false;
  // The parameters by position, as Optimizer::step(Executor&) passes them; the executor notes them changed.
  params_.clear();
  unscaled_ptrs_.clear();
  for (size_t k = 0; k < grads_.size(); ++k) {
    params_.push_back(grads_[k] ? &ex.mutable_value(opt.params()[k]) : nullptr);
    unscaled_ptrs_.push_back(grads_[k] ? &unscaled_[k] : nullptr);
  }
  GRIST_TRY(opt.step(params_, unscaled_ptrs_));
  return true;
}

void GradScaler::update(bool found_inf) {
  // torch's _amp_update_scale_: the factors are doubles, the scale a float32 tensor.
  if (found_inf) {
    state_.scale = static_cast<float>(static_cast<double>(state_.scale) * config_.backoff_factor);
    state_.growth_tracker = 0;
    ++state_.skipped_steps;
    return;
  }
  const int64_t successful = state_.growth_tracker + 1;
  if (successful == config_.growth_interval) {
    const auto grown = static_cast<float>(static_cast<double>(state_.scale) * config_.growth_factor);
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  } else {
    state_.growth_tracker = successful;
  }
}

}  // namespace grist
