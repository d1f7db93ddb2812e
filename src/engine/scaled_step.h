// One training step of a program, as PyTorch's amp recipe writes it — scaler.scale(loss).backward();
// scaler.step(optimizer); scaler.update() — or, without a loss scaler, loss.backward(); optimizer.step().
// The hunt's training step, pre-training and the witness replay all train through these two calls, so the
// three cannot drift apart (a hunt checks its findings between them: the backward's, the weights before).
#pragma once

#include <span>

#include "engine/executor.h"
#include "engine/grad_scaler.h"
#include "engine/optimizers.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// The backward of `loss` towards `wrt`: seeded with the scale under a scaler (nullptr: with ones, unscaled).
// `seed` is the caller's scratch for the scaled seed, reused across steps.
Status training_backward(Executor& ex, ValueId loss, std::span<const ValueId> wrt, GradScaler* scaler, Tensor& seed);

// The optimizer's step from the last training_backward: without a scaler, taken; with one, the gradients
// unscaled first, the step skipped when one held an inf/NaN, and the scale updated after (backed off or
// counted towards growth). True when the step was taken.
Result<bool> training_update(Executor& ex, Optimizer& opt, GradScaler* scaler);

}  // namespace grist
