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
  std::string step;            // the input step rule the hunt took (sign, adam, line; empty: not recorded)
  std::string message;         // one line for people
};

// Re-runs the recorded pass on the recorded data and compares the first producer.
Result<ReplayResult> replay_witness(const std::string& json_path);

// A witness as read back from its sidecar and arrays, to re-run on another model (a repaired one).
struct WitnessData {
  std::string model;                       // the model it was found on
  std::string producer;                    // the node that produced the first non-finite value
  int hazard_id = 0;
  std::string hazard_node;
  TriggerPass pass = TriggerPass::Monitored;
  std::string loss;
  bool dropout = false, ftz = false;
  std::string rng_state;
  std::vector<std::pair<std::string, Tensor>> inputs, weights;  // input:NAME and weight:NAME arrays
  Precision precision = Precision::Fp32;   // the run's numerics ("precision"; absent: float32)
  std::optional<float> loss_scale;         // amp-* training: the scale the backward was seeded with
};
Result<WitnessData> read_witness(const std::string& json_path);

// The recorded pass re-run on `g` with the witness's data (weights by name where `g` has them): the first
// non-finite producer it meets, or none.
Result<NonFiniteEvent> run_witness(const Graph& g, const WitnessData& w);

}  // namespace grist
