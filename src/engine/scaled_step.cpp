#include "engine/scaled_step.h"

namespace grist {

Status training_backward(Executor& ex, ValueId loss, std::span<const ValueId> wrt, GradScaler* scaler, Tensor& seed) {
  if (!scaler) return ex.backward(loss, wrt);
  scaler->fill_seed(ex.value(loss), seed);
  const Tensor* seeds = &seed;
  return ex.backward(std::span(&loss, 1), std::span(&seeds, 1), wrt);
}

Result<bool> training_update(Executor& ex, Optimizer& opt, GradScaler* scaler) {
  if (!scaler) {
    GRIST_TRY(opt.step(ex));
    return true;
  }
  auto stepped = scaler->step(opt, ex);
  if (!stepped) return stepped.error();
  scaler->update();
  return *stepped;
}

}  // namespace grist
