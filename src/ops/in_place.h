// Which kernels may compute their output 0 into the buffer of one of their own inputs: the executor's forward-only
// runs (ExecutorOptions::release_dead_values) then let an elementwise tail (BatchNormalization, Clip, Relu, Add
// after a Conv) rewrite data still in cache instead of filling fresh pages.
#pragma once

#include <cstddef>
#include <span>

#include "graph/graph.h"
#include "tensor/tensor.h"

namespace grist {

// Whether node's kernel, run on `inputs` with its output 0 being inputs[i] itself, computes what it computes into
// a buffer of its own: the output has that input's dtype and shape, and the kernel reads each element of it
// before it writes the same element of the output, and no element after. The executor asks only for an input no
// later node reads.
bool may_compute_in_place(const Node& node, std::span<const Tensor* const> inputs, size_t i);

}  // namespace grist
