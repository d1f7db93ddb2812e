// Loss scaling for mixed-precision training (amp-* precisions), with the rules of PyTorch's
// torch.cuda.amp.GradScaler: the loss's gradient is seeded with the scale, the weights' gradients are unscaled
// before the optimizer step, a step whose gradients hold an inf/NaN is skipped and the scale backed off.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/executor.h"
#include "engine/optimizers.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// GradScaler's constructor defaults (torch/cuda/amp/grad_scaler.py).
struct GradScalerConfig {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// What a resumed run needs to continue exactly: GradScaler.state_dict()'s scale and growth tracker, plus the
// steps it skipped (a count for the report; PyTorch keeps none).
struct GradScalerState {
  float scale = 65536.0f;
  int64_t growth_tracker = 0;
  int64_t skipped_steps = 0;
};

class GradScaler {
 public:
  // Below this scale the gradients overflow although the loss is no longer scaled up: the NaN/Inf is the
  // model's, not the scaler's, and backing off further only hides it (each further step is skipped).
  static constexpr float kCollapseFloor = 1.0f;

  explicit GradScaler(GradScalerConfig config = {});
  const GradScalerConfig& config() const { return config_; }
  float scale() const { return state_.scale; }
  int64_t growth_tracker() const { return state_.growth_tracker; }
  int64_t skipped_steps() const { return state_.skipped_steps; }
  GradScalerState state() const { return state_; }
  void set_state(GradScalerState s) { state_ = s; }

  // The backward seed of scaler.scale(loss).backward(): a tensor shaped and typed like the loss, every element
  // the scale. Reuses `seed`'s storage.
  void fill_seed(const Tensor& loss, Tensor& seed);
  // unscale_(): unscaled[k] ← grads[k]·(1/scale) (the reciprocal taken in double, rounded to float32, as
  // PyTorch does), nullptr gradients left undefined; true when every scaled gradient was finite. Reuses the
  // storage of `unscaled` (resized to grads.size()).
  bool unscale(std::span<const Tensor* const> grads, std::vector<Tensor>& unscaled);
  // scaler.step(optimizer): the gradients of the optimizer's parameters from the executor's last (scaled)
  // backward unscaled, and the optimizer's step taken with them unless one held an inf/NaN. True: stepped.
  Result<bool> step(Optimizer& opt, Executor& ex);
  // update() after step(): backs off when that step was skipped, counts a good one otherwise.
  void update() { update(found_inf_); }
  // update(): after a step whose gradients held an inf/NaN (skipped), the scale times backoff_factor and the
  // tracker reset; after a good one the tracker counts up, and on reaching growth_interval the scale grows by
  // growth_factor (unless that overflows float32) and the tracker resets.
  void update(bool found_inf);
  // The scale has backed off below kCollapseFloor (or to 0).
  bool collapsed() const { return !(state_.scale >= kCollapseFloor); }
  // torch: inv_scale = self._scale.double().reciprocal().float(); unscale_ multiplies every element by it.
  float inv_scale() const { return static_cast<float>(1.0 / static_cast<double>(state_.scale)); }

 private:
  GradScalerConfig config_;
  GradScalerState state_;
  Tensor wide_;  // a half gradient widened to float32
  bool found_inf_ = false;  // in the last step()
  std::vector<Tensor> unscaled_;
  std::vector<Tensor*> params_;
  std::vector<const Tensor*> grads_, unscaled_ptrs_;
};

}  // namespace grist
