// `grist scan`: each hazard site's verdict from the interval analysis — proved safe, may fail (with the
// operand's interval that meets the danger zone), or propagated only (its operand is already open because
// an upstream hazard may fail: producers are reported, not propagators).
#pragma once

#include <string>
#include <vector>

#include "analysis/hazards.h"
#include "analysis/intervals.h"
#include "engine/precision.h"

namespace grist {

enum class Verdict { ProvedSafe, MayFail, PropagatedOnly };
std::string_view verdict_name(Verdict v);  // "proved safe", "may fail", "propagated only"

// What a proof covers, beside the inputs' assumed ranges. A model that trains moves its weights, so a proof
// at fixed weights is no proof for the program: each proof says how far it holds.
enum class Scope {
  EveryRun,        // whatever values the trained weights take (or no trained weight reaches the operand)
  StatedWeights,   // for the trained weights within the ranges the user stated (--assume, [scan] trained_weights)
  Steps,           // for the first `safe_steps` steps of the manifest's optimizer (its per-step bound)
  InitialWeights,  // at the initial weights only: one training step may already break it
};
std::string_view scope_name(Scope s);  // "every run", "stated weight ranges", "first N steps", "initial weights"

struct HazardVerdict {
  HazardSite site;
  Verdict verdict = Verdict::MayFail;
  Scope scope = Scope::EveryRun;    // proved safe: how far the proof holds
  int64_t safe_steps = 0;           // Scope::Steps: the proof covers this many training steps
  bool steps_capped = false;        // ... and the search stopped there (it may hold for more)
  bool trained_operand = false;     // some trained weight reaches the operand
  bool fails_initially = false;     // may fail: already at the initial weights (known when scopes were computed)
  Interval operand;                 // hull of the operand's interval
  bool operand_may_be_nan = false;
  std::string danger;               // the danger zone checked, e.g. "≤ 0"
  std::vector<int> upstream;        // propagated only: ids of the may-fail sites it inherits from
  // Under a 16-bit precision: the float32 analysis (same ranges, no rounding to the format) proves the same
  // condition safe, with float32's danger zone — "safe in float32, may fail in float16" when it may fail.
  bool safe_in_float32 = false;
};

struct ScanOptions {
  const Manifest* manifest = nullptr;  // input ranges, trained weights, batch size; null: RANUM's defaults
  int64_t batch = 0;
  std::map<std::string, IntervalTensor> given;  // explicit ranges by value name
  std::map<std::string, Interval> assumed;       // the user's ranges (IntervalOptions::assumed)
  // For hazards not proved for every run: check them at the initial weights too, and (where the optimizer's
  // step is bounded) find for how many training steps the proof holds. `grist hunt` needs the first only.
  bool initial_weights = true;
  bool ranum_weights = false;                    // trained weights in RANUM's default ranges, as a statement
  bool step_bounds = true;
  int64_t max_steps = int64_t{1} << 18;          // the step search stops there (262,144 steps)
  // The run's numerics: under fp16/bf16/amp-* the intervals are rounded to the format where the run rounds,
  // the danger zones are the format's own, and the half-precision hazards are checked too.
  Precision precision = Precision::Fp32;
};

struct ScanReport {
  Precision precision = Precision::Fp32;
  // At a precision without a format: the 16-bit type the model stores values in (a `.half()` export), else
  // Undefined — the format its half hazards and "safe in float32" verdicts are about.
  DType stored_format = DType::Undefined;
  std::vector<HazardVerdict> verdicts;        // in execution order; `grist hunt` skips the every-run proofs
  int trained_weights = 0;                    // how many weights the model's training updates
  std::string training;                       // how they were bounded, for the report ("" when none train)
  std::vector<RangeAssumption> assumptions;
  std::vector<std::string> unbounded_nodes;
  double seconds = 0;
  int count(Verdict v) const;
  int count(Verdict v, Scope s) const;
};

Result<ScanReport> scan(const Graph& g, const ScanOptions& options = {});

}  // namespace grist
