// The files grist reads — models, data, manifests, configs, witnesses — must be regular files of a size such
// a file really has: a FIFO would block the read, a device (/dev/zero) would be read without end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace grist {

constexpr uint64_t kMaxModelBytes = uint64_t{1} << 31;  // protobuf's limit for one ONNX file
constexpr uint64_t kMaxDataBytes = uint64_t{64} << 30;  // .npy, .npz, .pb, IDX
constexpr uint64_t kMaxTextBytes = uint64_t{64} << 20;  // manifests, experiments.conf, witness sidecars

// OK when `path` is a regular file of at most `max_bytes`; otherwise one line naming the file and what is
// wrong ("is a folder, not an ONNX model", "not a regular file", "N bytes, more than ...").
Status check_input_file(const std::string& path, uint64_t max_bytes, std::string_view what);

}  // namespace grist
