// NumPy .npz archives: a zip of NAME.npy entries, stored (numpy.savez) or deflated (savez_compressed).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// Tensors with their names, in file order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Reads every array, named by its entry without ".npy", in archive order. Entries that are not .npy
// arrays are an error rather than silently skipped. Errors start with the path.
Result<NamedTensors> read_npz(const std::string& path);

// Writes the tensors as stored NAME.npy entries, like numpy.savez. The archive is built in memory and
// published atomically; an existing `path` is never overwritten. Names must be non-empty, unique and
// contain no '/' or NUL.
Status write_npz(const std::string& path, const NamedTensors& tensors);

}  // namespace grist
