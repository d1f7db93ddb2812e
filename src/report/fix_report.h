// The report of `grist fix`, per hazard: the original op and its chain, the repair in ONNX terms and in the
// PyTorch and TensorFlow calls to write instead, the preconditions, and the verdict of every check. Text for
// people, JSON for machines, SARIF 2.1.0 with `fixes` on the scan's results for code-scanning CI.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fix/fixer.h"

namespace grist {

struct FixContext {
  std::string model;         // the model file
  std::string fixed_path;    // where the repaired model was written, empty when nothing was
  uint64_t model_bytes = 0;  // the model file's size (SARIF replaces all of it)
};

std::string to_text(const FixResult& r, const FixContext& c);
nlohmann::json to_json(const FixResult& r, const FixContext& c);
// The scan's SARIF with a `fixes` entry on every result whose hazard was fixed (the repaired model as the
// replacement of the model file, base64, when it is at most `max_embedded_bytes`).
nlohmann::json to_sarif(const FixResult& r, const FixContext& c, size_t max_embedded_bytes = size_t{8} << 20);

// The clamps of a precondition, pasteable: "x = x.clamp(0.0, 1.0)" / "x = tf.clip_by_value(x, 0.0, 1.0)".
std::string precondition_code(const Precondition& p, bool tensorflow);

}  // namespace grist
