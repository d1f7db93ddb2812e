// Witness files: the inputs (and weights, when training changed them) that made a model produce NaN/Inf,
// as a .npz numpy and PyTorch can load, with a JSON sidecar saying how to reproduce it; and the replay that
// checks a witness still produces the same first non-finite producer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "config/manifest.h"
#include "search/hunt.h"
#include "util/status.h"

namespace grist {

struct WitnessFiles {
  std::string npz;   // input:NAME and weight:NAME arrays
  std::string json;  // the sidecar
};

// Creates OUT_DIR if needed and checks that witnesses can be written there (a folder, writable): run it
// before a search, so a bad --out is an error at once rather than after the whole budget.
Status prepare_witness_folder(const std::string& out_dir);

// Writes OUT_DIR/witness-<model>-h<id>.{npz,json}; a name already taken gets -2, -3, ...: nothing existing is
// ever overwritten, and neither file is ever seen half-written.
Result<WitnessFiles> write_witness(const std::string& out_dir, const std::string& model_path,
                                   const Manifest& manifest, const HazardOutcome& outcome);

struct ReplayResult {
  bool reproduced = false;
  std::string expected_node;   // the producer the witness recorded
  NonFiniteEvent event;        // what the replay found
  int64_t training_steps = 0;  // crafted training steps replayed first (training-reached findings)
  std::string message;         // one line for people
};

// Re-runs the recorded pass on the recorded data and compares the first producer.
Result<ReplayResult> replay_witness(const std::string& json_path);

}  // namespace grist
