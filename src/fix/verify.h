// The checks a repair of `grist fix` must pass before it is called a fix, each returning its evidence:
// (a) the scan proves the repaired ops safe and flags nothing new (and, locally, for which operands the repaired
// expression is safe whatever the weights); (b) is the hunt itself (search/hunt.h), attributed by the fixer;
// (c) on the manifest's data, where the original is finite, outputs, loss and gradients agree; (d) the model's own
// training stays finite for N steps.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/scan.h"
#include "config/manifest.h"
#include "data/dataset.h"
#include "graph/graph.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

enum class CheckState { NotRun, Passed, Failed, NotApplicable };
std::string_view check_state_name(CheckState s);  // "not run", "passed", "FAILED", "n/a"

struct CheckResult {
  CheckState state = CheckState::NotRun;
  std::string detail;  // one line for people: what was checked and what was found
  bool passed() const { return state == CheckState::Passed; }
};

// What the scan says about a graph, and the intervals behind it, for comparing a repaired graph with it.
struct ScanBaseline {
  ScanReport report;
  IntervalAnalysis analysis;
};
Result<ScanBaseline> scan_baseline(const Graph& g, const ScanOptions& o);

// (a) on `after`, the graph with one more repair (its added nodes named `prefix`...) than `before`: every hazard
// site among the added nodes is proved safe; no site may fail that is not one of `pending` (original hazards
// still to repair); and no node in the repair's forward cone turns bounded inputs into an unbounded output
// (a sum of clamped exps overflowing) unless it already did so in `before`.
struct ScanEvidence {
  CheckResult result;
  std::vector<std::string> repaired;       // the added hazard sites with their verdicts and operands
  std::vector<std::string> new_may_fail;   // labels
  std::vector<std::string> new_overflows;  // "ReduceSum '/ReduceSum': [..] → [.., inf]"
  std::vector<std::string> elsewhere;      // overflows in the cone that the model's other operands cause
  ScanBaseline after;
};
Result<ScanEvidence> check_scan(const Graph& before, const ScanBaseline& base, const Graph& after, const ScanOptions& o,
                                const std::string& prefix, const std::set<std::string>& pending);

// The repaired expression alone: its added nodes scanned with every operand they read from the rest of the
// model given as any value in [−R, R] (constants stay exact). `bound` is the largest R (FLT_MAX: any finite
// operand) for which every added hazard site is proved safe, found by bisection on log10 R; 0 when none is.
// Such a proof holds whatever the weights are, as long as the operands are finite and within the bound.
struct LocalProof {
  bool any_finite = false;
  double bound = 0;
  std::vector<std::string> operands;  // the values the expression reads from the rest of the model
  std::string text;
};
Result<LocalProof> prove_locally(const Graph& after, const IntervalAnalysis& analysis, const std::string& prefix,
                                 Precision precision = Precision::Fp32);

// (c) the two models on the same batches of the manifest's data (dropout off), compared element-wise where the
// original is finite: every graph output, and the gradients of the loss (of the first output's sum when there is
// no loss) with respect to the trained weights and the data inputs. The difference of a tensor is
// max |a − b| / max(|a|, |b|) over its elements (relative to its scale). A batch on which the original is not
// finite anywhere is not compared (only counted, with whether the repaired model is finite on it). Above the
// tolerance, both models are evaluated again in float64: agreeing there, the float32 difference is rounding.
struct DataCheckOptions {
  const Manifest* manifest = nullptr;
  const Dataset* data = nullptr;  // the manifest's data as loaded (copied, so every check sees the same)
  int64_t batch = 1;
  int batches = 4;
  uint64_t seed = 1;
  double tolerance = 1e-5;
  double seconds_cap = 1;   // no further batch once this much time has gone (at least one batch is compared)
  std::map<std::string, Tensor> weights;  // weights to load into both (trained ones), empty: the initial ones
  std::optional<Precision> precision;     // the numerics both run in; empty: the manifest's
};
struct TensorDifference {
  std::string name;  // "output y", "loss cost", "d cost / d W"
  double relative = 0;
  int64_t compared = 0;          // elements where the original is finite
  int64_t skipped = 0;           // elements where it is not (and the fixed model's value is not compared)
  int64_t repaired = 0;          // of those, finite in the fixed model
  int64_t broken = 0;            // finite in the original, not in the fixed model
  double float64_relative = -1;  // the same difference with both models evaluated in float64 (-1: not run)
  bool within = true;            // within the tolerance in float32, or (the difference being rounding) in float64
  // In float64 both models' values are below 1e-12 of the largest value compared: the tensor is 0 in exact
  // arithmetic (a shared bias's gradient under softmax, Σ(p − y) = 0) and both are rounding noise.
  bool zero_in_exact = false;
};
struct DataComparison {
  CheckResult result;
  double worst = 0;
  std::string worst_tensor;
  int batches = 0;           // compared (the original finite on them)
  int repaired_batches = 0;  // of those where the original is not finite, the ones the repaired model runs finite
  int broken_batches = 0;    // where the original is finite and the repaired model is not
  std::vector<TensorDifference> tensors;
};
Result<DataComparison> compare_on_data(const Graph& original, const Graph& fixed, const DataCheckOptions& o);

// (d) `steps` steps of the manifest's training (its optimizer, data, dropout) on `g` from its initial weights,
// every pass scanned, in the manifest's precision (amp-*: with GradScaler's loss scaling); stops at the first
// non-finite value or after `seconds_cap`.
struct TrainingRun {
  CheckResult result;
  int64_t steps = 0;
  std::string failure;                    // the first non-finite producer, empty when all stayed finite
  std::map<std::string, Tensor> weights;  // the trained weights at the end
  int64_t skipped_steps = 0;              // amp-*: steps GradScaler skipped (inf/NaN gradients), not failures
  double loss_scale = 0;                  // amp-*: the scale at the end
};
Result<TrainingRun> run_training(const Graph& g, const Manifest& m, const Dataset& data, int64_t batch, int64_t steps,
                                 uint64_t seed, double seconds_cap);

}  // namespace grist
