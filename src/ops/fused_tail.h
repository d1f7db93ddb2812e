// BatchNormalization followed by Relu or Clip (the tail of nearly every CNN's Conv) in one pass: the clamp is
// applied to runs of channels right after the normalisation writes them, while they are in cache, instead of a
// second node reading and writing the whole tensor again (and the scan reading both). An Add before a Relu gets
// the clamp right after its kernel, sparing the Relu node and the scans. The executor fuses only in forward-only runs, where no
// one reads the normalised values but the clamp (ExecutorOptions::release_dead_values).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "graph/graph.h"
#include "ops/op.h"
#include "tensor/tensor.h"

namespace grist {

// y = min(max(v, lo), hi), written as clip_forward writes it (a NaN stays NaN). Relu is {0, +Inf}: the same results
// bit for bit (x < 0 ? 0 : x; -0 stays -0).
struct Clamp {
  float lo, hi;
};

// The clamp a Relu or Clip node applies to float32 data, its input 0 being `x` and its limits read from `inputs`
// (1 and 2, as clip_forward reads them). Null when the node is neither, x is not float32, a limit is not a float32
// scalar, or clamping finite values could give a non-finite one (a lower limit of +Inf, an upper one of -Inf, a
// NaN limit): then the clamp's output is finite exactly when its input is.
std::optional<Clamp> clamp_of(const Node& node, const Tensor& x, std::span<const Tensor* const> inputs);

// The clamp over row[0, n) in place; whether every value was finite before it.
bool clamp_row(float* row, int64_t n, Clamp clamp);

// Whether node's output 0 may be clamped right after its own kernel wrote it (clamp_row over the whole output): an
// Add of float32 operands (resnet's residual Add before its Relu).
bool clampable_after(const Node& node, std::span<const Tensor* const> inputs);

// Whether batch_norm_clamped can run this BatchNormalization node: inference mode, output 0 alone, float32 X.
bool batch_norm_clampable(const Node& node, std::span<const Tensor* const> inputs);

// batch_norm_forward (inference) with the clamp applied to each channel row just written. `finite`: whether every
// normalised value was finite before the clamp (the scan's answer for the BatchNormalization's own output).
Status batch_norm_clamped(ForwardContext& ctx, Clamp clamp, bool& finite);

}  // namespace grist
