// `grist scan`: each hazard site's verdict from the interval analysis — proved safe, may fail (with the
// operand's interval that meets the danger zone), or propagated only (its operand is already open because
// an upstream hazard may fail: producers are reported, not propagators).
#pragma once

#include <string>
#include <vector>

#include "analysis/hazards.h"
#include "analysis/intervals.h"

namespace grist {

enum class Verdict { ProvedSafe, MayFail, PropagatedOnly };
std::string_view verdict_name(Verdict v);  // "proved safe", "may fail", "propagated only"

struct HazardVerdict {
  HazardSite site;
  Verdict verdict = Verdict::MayFail;
  Interval operand;                 // hull of the operand's interval
  bool operand_may_be_nan = false;
  std::string danger;               // the danger zone checked, e.g. "≤ 0"
  std::vector<int> upstream;        // propagated only: ids of the may-fail sites it inherits from
};

struct ScanOptions {
  const Manifest* manifest = nullptr;  // input ranges, trained weights, batch size; null: RANUM's defaults
  int64_t batch = 0;
  std::map<std::string, IntervalTensor> given;  // explicit ranges by value name
  std::map<std::string, Interval> assumed;       // the user's ranges (IntervalOptions::assumed)
};

struct ScanReport {
  std::vector<HazardVerdict> verdicts;        // in execution order; `grist hunt` skips the proved-safe ones
  std::vector<RangeAssumption> assumptions;
  std::vector<std::string> unbounded_nodes;
  double seconds = 0;
  int count(Verdict v) const;
};

Result<ScanReport> scan(const Graph& g, const ScanOptions& options = {});

}  // namespace grist
