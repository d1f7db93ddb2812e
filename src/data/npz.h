// NumPy .npz archives: a zip of NAME.npy entries, stored (numpy.savez) or deflated (savez_compressed).
#pragma once

#include <string>
#include <string_view>
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

// An array name numpy.load reads back as written, for any name (an ONNX value name, say): '%', '/', '\\',
// control characters and bytes that are not UTF-8 become %XX (upper-case hex), everything else is kept.
// Python's urllib.parse.unquote() gives the original back. Distinct names stay distinct; "" stays "".
// Why: Python's zipfile cuts a name at NUL, rejects the whole archive over one name that is not UTF-8, and
// on Windows reads '\\' as '/'; write_npz refuses '/' so that no entry can be unpacked outside a folder.
std::string npz_array_name(std::string_view name);

}  // namespace grist
