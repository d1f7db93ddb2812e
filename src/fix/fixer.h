// grist fix: for each hazard the scan says may fail (or a witness triggers), the most specific repair of the
// catalogue whose proof (check a) holds, applied to one repaired model; then the checks on that model — (b) the
// hunt, (c) the data, (d) the training, the witness — and RANUM's preconditions on the original.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/manifest.h"
#include "fix/patterns.h"
#include "fix/preconditions.h"
#include "fix/rewrite.h"
#include "fix/verify.h"
#include "graph/graph.h"
#include "report/witness.h"
#include "search/hunt.h"

namespace grist {

struct FixOptions {
  Manifest manifest;          // inputs, data, training; for a bare model the defaults `grist hunt` uses
  bool has_manifest = false;  // false: the scan assumes RANUM's defaults (every weight trains)
  int64_t batch = 1;
  std::string hazard;  // only this hazard (id or node name); empty: all
  std::optional<WitnessData> witness;
  std::map<std::string, Interval> assumed;  // the user's ranges (--assume)
  double hunt_seconds = 5;                  // (b)'s budget, shared by the fixed model's hazards
  int64_t hunt_iterations = 0;              // (b)'s iterations per hazard at most (0: the time alone)
  int data_batches = 4;                     // (c)
  int64_t train_steps = 50;                 // (d)
  double train_seconds = 1;      // (d)'s time cap per model (at least one step runs)
  bool preconditions = true;
  int precondition_probes = 400;  // scans per scope at most
  // For every hazard's three scopes together; below 0: what is left of `target_seconds` (0.5 s to 5 s).
  double precondition_seconds = -1;
  double target_seconds = 9.5;
};

struct RepairAttempt {
  RepairKind kind;
  double constant = 0;
  std::string outcome;  // "accepted" or why (a) failed
};

struct HazardFix {
  HazardSite site;  // in the original model
  Verdict verdict = Verdict::MayFail;
  Interval operand;
  std::string danger;
  std::string reason;  // why it is repaired: the scan, the witness, or an upstream repair
  std::string chain;   // the original's path from the hazard to the loss
  bool repaired = false;
  int repaired_with = 0;  // another hazard's repair removed this node: that hazard's id
  bool repairer_fixed = false;  // with repaired_with: whether that hazard's repair passed its checks
  bool made_safe = false;       // with repaired_with: its node stays, proved safe (or no longer a site) after it
  RepairMatch match;
  DType format = DType::Undefined;  // the 16-bit format the hazard's op meets (its constants'), Undefined: float32
  AppliedRepair applied;
  std::vector<RepairAttempt> attempts;
  CheckResult scan, hunt, data, training, witness;  // (a), (b), (c), (d) and the witness replay
  LocalProof local;
  PreconditionSet preconditions;
  bool has_preconditions = false;
  bool fixed() const;  // repaired, every check passed or not applicable
};

struct FixResult {
  Precision precision = Precision::Fp32;  // the numerics every check ran in (the manifest's, --precision)
  std::vector<HazardFix> hazards;
  bool changed = false;     // some repair was applied
  std::string fixed_bytes;  // the repaired model as ONNX (checked)
  Graph fixed;              // the same, as read back
  ScanReport original_scan, fixed_scan;  // under the stated ranges (the proofs')
  ScanReport program_scan;               // as `grist scan` makes it: trained weights unbounded; what to repair
  HuntReport hunt;  // (b) on the fixed model
  bool hunted = false;
  DataComparison data;            // (c) original against fixed, initial weights
  TrainingRun training;           // (d) of the fixed model
  TrainingRun original_training;  // and of the original, for comparison
  std::string witness_on_original, witness_on_fixed;
  double seconds = 0, hunt_seconds = 0, precondition_seconds = 0;
  double repair_seconds = 0, data_seconds = 0, training_seconds = 0;  // choosing and proving the repairs, (c), (d)
};

Result<FixResult> fix_model(const Graph& g, const FixOptions& o);

}  // namespace grist
