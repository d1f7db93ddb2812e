// One entry point for every tensor file format grist reads, chosen by the file name.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// .npy → one tensor named after the file stem; .npz → all its arrays, in archive order; .pb → an ONNX
// TensorProto, named by its name field or else the stem; IDX (*-idx3-ubyte, *.idx, either with .gz) →
// one tensor named after the file without .gz/.idx. Extensions are matched case-insensitively.
// Errors start with the path; an unknown extension is one.
Result<std::vector<std::pair<std::string, Tensor>>> load_tensors(const std::string& path);

}  // namespace grist
